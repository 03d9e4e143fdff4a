"""The processes the benchmarks start, and processes that start work at one signal.

A benchmark that measures a fresh process (a first open, a worker of a multi-process
load) starts it with :func:`popen` or :func:`run_python`: :class:`subprocess.Popen`
unless a caller chose otherwise for a block (:func:`starting_with`) — the test suite's
smoke runs fork their probes from an interpreter that imported ``mars_core`` already,
where what they check is that each section runs and reports, not how long an import takes.

For the multi-process rows each process prints ``ready`` once it is set up, waits for a
line on its standard input, does its work and prints one line of result. :func:`together`
starts them all, waits until every one is ready, gives the signal to all at once and
collects each one's result line.

Examples:
    >>> import sys
    >>> code = "print('ready', flush=True); input(); print('done', flush=True)"
    >>> start, lines = together([[sys.executable, "-c", code]] * 2)
    >>> lines
    ['done', 'done']
    >>> run_python(["-c", "print(6 * 7)"], env={})
    '42\\n'
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any, Protocol

__all__ = ["Process", "popen", "run_python", "starting_with", "together"]


class Process(Protocol):
    """What the benchmarks use of a started process (a :class:`subprocess.Popen`)."""

    stdin: IO[Any] | None
    stdout: IO[Any] | None
    returncode: int | None

    def communicate(self, input: Any = None, timeout: float | None = None
                    ) -> tuple[Any, Any]: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


Start = Callable[..., Process]
"""Starts a process: :class:`subprocess.Popen`'s arguments (``args``, ``stdin``,
``stdout``, ``stderr``, ``text``, ``env``)."""

_START: list[Start] = [subprocess.Popen]


@contextmanager
def starting_with(start: Start) -> Iterator[None]:
    """Start the benchmarks' processes with ``start`` inside the block (not thread-safe:
    a benchmark starts its processes from one thread)."""
    _START.append(start)
    try:
        yield
    finally:
        _START.pop()


def popen(args: Sequence[str], **kwargs: Any) -> Process:
    """Start ``args`` as the block's :func:`starting_with` says (else ``subprocess.Popen``)."""
    return _START[-1](list(args), **kwargs)


def run_python(args: Sequence[str], env: Mapping[str, str], timeout: float = 3600) -> str:
    """Run ``python *args`` to its end; its standard output.

    Raises:
        RuntimeError: it failed (the end of its standard error says why).
    """
    proc = popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True, env=dict(env))
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"the probe failed: {str(err)[-2000:]}")
    return str(out)


def together(commands: Sequence[Sequence[str]], env: Mapping[str, str] | None = None
             ) -> tuple[float, list[str]]:
    """Run ``commands`` as above: ``(when the signal was given, each one's result line)``.

    Raises:
        RuntimeError: a process ended before it was ready.
    """
    procs = [popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                   env=dict(env) if env is not None else dict(os.environ))
             for cmd in commands]
    try:
        for p in procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a benchmark process did not start")
        start = time.time()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        lines = []
        for p in procs:
            assert p.stdout is not None
            lines.append(p.stdout.readline().strip())
            p.wait()
        return start, lines
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
