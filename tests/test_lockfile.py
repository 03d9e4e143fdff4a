"""The writer lock (:mod:`mars_core._lockfile`): exclusive across descriptors and
processes, names its holder, and never outlives a killed holder."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import children
import pytest

from mars_core._lockfile import LockFile, LockHeld

HOLD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from mars_core._lockfile import LockFile
    LockFile.take(Path(sys.argv[1]), timeout=0)
    print("HELD", flush=True)
    sys.stdin.read()  # held until killed
""")


def test_a_second_take_waits_then_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    held = LockFile.take(path, timeout=0)
    with pytest.raises(LockHeld) as info:
        LockFile.take(path, timeout=0.1)
    assert info.value.holder.startswith("pid ") and " on " in info.value.holder
    held.release()
    held.release()  # idempotent
    assert not held.held
    again = LockFile.take(path, timeout=0)  # free once released
    again.release()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    script = tmp_path / "hold.py"
    script.write_text(HOLD, encoding="utf-8")
    proc = children.popen([sys.executable, str(script), str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "HELD"
        with pytest.raises(LockHeld) as info:
            LockFile.take(path, timeout=0)
        assert f"pid {proc.pid} " in info.value.holder
    finally:
        proc.kill()
        proc.wait(timeout=30)
    LockFile.take(path, timeout=5).release()  # the kernel dropped it with the process


def test_the_lock_is_the_one_filelock_takes(tmp_path: Path) -> None:
    """A process that locks through filelock (as earlier versions did) and this one
    exclude each other, both ways."""
    import os

    from filelock import lock_descriptor, unlock_descriptor

    path = tmp_path / "w.lock"
    held = LockFile.take(path, timeout=0)
    fd = os.open(path, os.O_RDWR)
    try:
        assert not lock_descriptor(fd, blocking=False)
        held.release()
        assert lock_descriptor(fd, blocking=False)
        with pytest.raises(LockHeld):
            LockFile.take(path, timeout=0)
        unlock_descriptor(fd)
        LockFile.take(path, timeout=0).release()
    finally:
        os.close(fd)
