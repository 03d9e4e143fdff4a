"""The LangChain examples run offline as subprocesses and print what they show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_example() -> None:
    out = _run("langchain_quickstart.py")
    assert "retriever: 'Ana lives in Lisbon' type=semantic" in out
    thread_b = out.split("[thread-b] user:")[1]
    assert "The user is allergic to peanuts" in thread_b  # recalled from thread A
    assert "[thread-b] agent: Skip the satay" in out
    assert "'The user is allergic to peanuts'" in out.splitlines()[-1]


def test_history_example() -> None:
    out = _run("langchain_history.py")
    assert "history s2: ['human: Hello again', 'ai: Hi!']" in out
    assert "facts learned: ['The user lives in Porto']" in out
    assert "after clearing s1: {'s1': 0, 's2': 2}" in out
