"""``mars import`` as a process: killed part-way it leaves the store as it was (or, killed
after its commit, whole), a re-run then holds exactly the full set; on a terminal it
draws a progress bar, elsewhere it stays quiet (issue 21, item 4).

The kill is deterministic: the child runs the real command line through
``mars_core.cli.main(argv, progress=...)``, whose callback, at the chosen stage and
count, tells the parent on a pipe and then blocks reading its standard input; the
parent then sends SIGKILL. No timer decides where the kill lands.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
from pathlib import Path

import children
import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app

ROOT = Path(__file__).resolve().parents[1]
N = 600  # more than two embedding batches (EMBED_BATCH = 256)

CHILD = """
import signal
import sys
from mars_core.cli import main

# a terminal's Ctrl-C reaches a process with Python's handler; a runner started in the
# background (a shell's `&`) passes SIGINT on ignored, which the child would inherit
signal.signal(signal.SIGINT, signal.default_int_handler)

stage, at = sys.argv[1], int(sys.argv[2])


def pause(s, done, total):
    if (s, done) == (stage, at):
        print(f"paused at {s} {done}/{total}", flush=True)
        sys.stdin.read()  # blocks here until the parent kills this process


sys.exit(main(sys.argv[3:], progress=pause))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _dump(path: Path, n: int) -> Path:
    path.write_text(json.dumps({"results": [
        {"id": f"mem-{i:04d}", "memory": f"fact {i}: the blue door of house {i}",
         "user_id": f"user-{i % 10}"} for i in range(n)]}), encoding="utf-8")
    return path


def _imported(store: MemoryStore) -> list[str]:
    """External ids of the imported memories, sorted (duplicates kept)."""
    return sorted(n.provenance.external_id or "" for ns in store.namespaces()
                  for n in store.list(ns, status=None) if n.provenance.source == "import")


def _kill_during_import(dump: Path, store: Path, stage: str, at: int) -> str:
    """Run ``mars import`` in a child until its progress reaches ``(stage, at)``, then
    SIGKILL it; returns the line the child printed when it paused."""
    proc = children.popen(
        [sys.executable, "-c", CHILD, stage, str(at), "import", str(dump), "--from", "mem0",
         "--path", str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(), cwd=store.parent)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("paused"):
            proc.kill()
            _, err = proc.communicate(timeout=60)
            pytest.fail(f"the import did not pause at {stage} {at}: {line!r} {err[-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert proc.returncode == -signal.SIGKILL
    return line


@pytest.mark.parametrize(("stage", "at", "committed"), [
    ("embed", 256, False),     # between two embedding batches
    ("store", 300, False),     # half of the records staged
    ("write", 0, False),       # everything staged, the commit not begun
    ("write", N, True),        # just after the commit
])
def test_killed_import_leaves_all_or_nothing_and_a_rerun_holds_the_full_set_once(
        tmp_path: Path, stage: str, at: int, committed: bool) -> None:
    path = tmp_path / "store"
    with MemoryStore.open(path, budget=100_000) as store:  # Chroma index, on disk
        store.add_many(["Ana likes green tea", "Bo plays the cello"], namespace="user-1")
        before = (store.export_jsonld(), store.stats()["audit_events"])
    dump = _dump(tmp_path / "mem0.json", N)

    line = _kill_during_import(dump, path, stage, at)
    assert line.strip() == f"paused at {stage} {at}/{N}"

    expected = sorted(f"mem-{i:04d}" for i in range(N))
    with MemoryStore.open(path) as store:  # opens cleanly after the kill
        assert store.verify().ok
        if committed:  # all of it, findable through the index
            assert _imported(store) == expected
            hit = store.retrieve("the blue door of house 17", namespace="user-7", k=1)
            assert hit[0].node.provenance.external_id == "mem-0017"
        else:  # none of it: the store is exactly as it was
            assert (store.export_jsonld(), store.stats()["audit_events"]) == before

    runner = CliRunner()
    rerun = runner.invoke(app, ["import", str(dump), "--from", "mem0", "--path", str(path)],
                          catch_exceptions=False)
    assert rerun.exit_code == 0, rerun.output
    assert f"imported {0 if committed else N} memories" in rerun.output
    if not committed:  # and once more: nothing is imported twice
        again = runner.invoke(app, ["import", str(dump), "--from", "mem0", "--path",
                                    str(path)], catch_exceptions=False)
        assert "imported 0 memories" in again.output
        assert f"{N} records already there (imported before) were skipped" in again.output
    with MemoryStore.open(path) as store:
        assert _imported(store) == expected  # exactly the full set, each record once
        assert len(store.list("user-1")) == N // 10 + 2
        assert store.verify().ok


@pytest.mark.parametrize("records", [
    pytest.param(300, id="smoke"), pytest.param(1500, marks=pytest.mark.heavy, id="full")])
def test_an_import_draws_a_bar_on_a_terminal_and_nothing_elsewhere(
        tmp_path: Path, records: int) -> None:
    """``mars import`` of ``records`` records (make test: 300; the full run: 1,500)."""
    dump = _dump(tmp_path / "mem0.json", records)
    argv = [sys.executable, "-m", "mars_core.cli", "import", str(dump), "--from", "mem0"]
    env = {**_env(), "TERM": "xterm-256color", "COLUMNS": "120"}

    master, slave = pty.openpty()  # standard error is a terminal
    screen = bytearray()

    def read_screen() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            screen.extend(chunk)

    reader = threading.Thread(target=read_screen, daemon=True)
    reader.start()
    done = children.run([*argv, "--path", str(tmp_path / "tty")], stdout=subprocess.PIPE,
                        stderr=slave, env=env, cwd=tmp_path, timeout=600, check=False)
    os.close(slave)
    reader.join(timeout=60)
    os.close(master)
    drawn = screen.decode("utf-8", "replace")
    assert done.returncode == 0, drawn[-2000:]
    assert f"imported {records} memories".encode() in done.stdout
    for label in ("import: embedding", "import: storing", "import: committing"):
        assert label in drawn
    assert f"{records}/{records}" in drawn

    piped = children.run([*argv, "--path", str(tmp_path / "pipe")], capture_output=True,
                         env=env, cwd=tmp_path, timeout=600, check=False)
    assert piped.returncode == 0 and f"imported {records} memories".encode() in piped.stdout
    assert b"storing" not in piped.stderr and f"{records}/{records}".encode() not in piped.stderr


def test_ctrl_c_during_an_import_imports_nothing_and_removes_the_store_it_created(
        tmp_path: Path) -> None:
    """SIGINT while the records are staged: Python's KeyboardInterrupt unwinds the one
    transaction, and the command says so and removes the store it had created."""
    dump = _dump(tmp_path / "mem0.json", N)
    path = tmp_path / "new" / "store"
    proc = children.popen(
        [sys.executable, "-c", CHILD, "store", "300", "import", str(dump), "--from", "mem0",
         "--path", str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("paused at store 300/")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]  # interrupted (128 + SIGINT)
    assert "error: interrupted; nothing was imported, so the new store at" in err
    assert not (tmp_path / "new").exists()
