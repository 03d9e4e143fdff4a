"""Processes that start work at one signal: what the multi-process benchmarks measure.

Each process prints ``ready`` once it is set up, waits for a line on its standard input,
does its work and prints one line of result. :func:`together` starts them all, waits until
every one is ready, gives the signal to all at once and collects each one's result line.

Examples:
    >>> import sys
    >>> code = "print('ready', flush=True); input(); print('done', flush=True)"
    >>> start, lines = together([[sys.executable, "-c", code]] * 2)
    >>> lines
    ['done', 'done']
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence

__all__ = ["together"]


def together(commands: Sequence[Sequence[str]], env: Mapping[str, str] | None = None
             ) -> tuple[float, list[str]]:
    """Run ``commands`` as above: ``(when the signal was given, each one's result line)``.

    Raises:
        RuntimeError: a process ended before it was ready.
    """
    procs = [subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=dict(env) if env is not None else dict(os.environ))
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
