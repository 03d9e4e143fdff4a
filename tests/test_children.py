"""The fork server's children (:mod:`children`) behave as ``python`` run by
:mod:`subprocess` does, where the crash, kill and lock tests look: the same probe,
started both ways, reports the same arguments, paths, directory, environment, streams
and exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import children
import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent("""
    import atexit, json, os, sys, threading
    atexit.register(lambda: print("atexit", flush=True))
    line = sys.stdin.readline()
    done = threading.Event()  # set once the report is out: the thread prints after it
    worker = threading.Thread(target=lambda: (done.wait(), print("thread", flush=True)))
    worker.start()  # not a daemon: the interpreter waits for it before atexit
    print(json.dumps({"name": __name__, "argv": sys.argv, "path": sys.path,
                      "cwd": os.getcwd(), "probe": os.environ.get("PROBE"),
                      "stdin": line, "ttys": [os.isatty(fd) for fd in (0, 1, 2)],
                      "imports_mars": "mars_core" in sys.modules or None}), flush=True)
    print("to stderr", file=sys.stderr)
    done.set()
    code = sys.argv[-1]
    if code == "raise":
        raise ValueError("raised")
    sys.exit(code if not code.isdigit() else int(code))
""")


def _both(args: list[str], cwd: Path, stdin: str = "hello\n") -> list[tuple[Any, ...]]:
    env = {**os.environ, "PROBE": "yes", "PYTHONPATH": str(ROOT)}
    out = []
    for start in (subprocess.run, children.run):
        done = start(args, input=stdin, capture_output=True, text=True, env=env, cwd=cwd,
                     timeout=120)
        out.append((done.returncode, done.stdout, done.stderr))
    return out


def _report(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout.splitlines()[0])
    doc.pop("imports_mars")  # the one intended difference: the fork server preloaded it
    return dict(doc)


@pytest.mark.parametrize("ending", ["0", "3", "a message", "raise"])
def test_a_script_sees_and_ends_as_under_a_fresh_interpreter(tmp_path: Path, ending: str) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    fresh, forked = _both([sys.executable, "probe.py", "x", ending], tmp_path)
    assert forked[0] == fresh[0] == {"0": 0, "3": 3, "a message": 1, "raise": 1}[ending]
    assert _report(forked[1]) == _report(fresh[1])
    assert _report(fresh[1])["path"][:2] == [str(tmp_path), str(ROOT)]
    assert forked[1].splitlines()[1:] == fresh[1].splitlines()[1:] == ["thread", "atexit"]
    assert forked[2].startswith("to stderr\n") and fresh[2].startswith("to stderr\n")
    if ending == "raise":
        assert forked[2].rstrip().endswith("ValueError: raised")
        assert fresh[2].rstrip().endswith("ValueError: raised")
    if ending == "a message":
        assert forked[2].endswith("a message\n") and fresh[2].endswith("a message\n")


def test_c_and_m_run_as_main_with_their_own_path(tmp_path: Path) -> None:
    (tmp_path / "probe_mod.py").write_text(PROBE, encoding="utf-8")
    fresh, forked = _both([sys.executable, "-c", PROBE, "x", "0"], tmp_path)
    assert forked[0] == fresh[0] == 0
    assert _report(forked[1]) == _report(fresh[1])
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for start in (subprocess.run, children.run):
        done = start([sys.executable, "-m", "probe_mod", "0"], input="", capture_output=True,
                     text=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[0])
        assert report["name"] == "__main__" and report["path"][0] == str(tmp_path)
        assert report["argv"] == [str(tmp_path / "probe_mod.py"), "0"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_child_alone_and_shows_in_its_returncode(sig: int) -> None:
    # Python leaves SIGINT ignored when it starts with it ignored (as pytest-xdist's
    # workers pass it on): the probe sets the interpreter's usual handler itself
    wait = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "print('up', flush=True); signal.pause()")
    ends = []
    for start in (subprocess.Popen, children.popen):
        proc = start([sys.executable, "-c", wait], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        assert proc.pid != os.getpid()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        ends.append((proc.returncode, "KeyboardInterrupt" in err))
    assert ends[0] == ends[1] == (-sig, sig == signal.SIGINT)


def test_streams_go_where_they_are_asked(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr)"
    merged = children.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    assert sorted(merged.stdout.split()) == ["err", "out"] and merged.stderr is None
    with open(tmp_path / "log", "wb") as log:
        done = children.run([sys.executable, "-c", code], stdout=log,
                            stderr=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 0 and (tmp_path / "log").read_text() == "out\n"
    raw = children.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert (raw.stdout, raw.stderr) == (b"out\n", b"err\n")


def test_what_is_not_a_python_command_is_refused() -> None:
    for args in (["ls"], [sys.executable], [sys.executable, "-X", "dev", "x.py"]):
        with pytest.raises(ValueError, match="not a python"):
            children.popen(args)


def test_a_hash_seed_the_fork_server_does_not_have_is_refused() -> None:
    other = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    with pytest.raises(ValueError, match="hash seed"):
        children.popen([sys.executable, "-c", "pass"],
                       env={**os.environ, "PYTHONHASHSEED": other})
