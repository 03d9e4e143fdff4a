"""A module fixture's costly result made once per test run, not once per worker.

Under ``pytest -n 2 --dist worksteal`` the tests of one module can run on both workers,
and a module-scoped fixture then runs on each (the policies benchmark's ran two or three
times a run). :func:`once_per_run` runs the work in the first worker that asks, under a
file lock in the run's shared temporary directory; the others wait and read its result.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

__all__ = ["once_per_run"]

T = TypeVar("T")


def once_per_run(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(directory)``'s result, made once per run of the suite and shared by its workers.

    Args:
        factory: pytest's ``tmp_path_factory``.
        name: what the result is (a file name: one result per name and run).
        make: the work; it may write into ``directory`` (which lives as long as the run's
            temporary files) and returns a picklable result.

    Returns:
        The result (a failed ``make`` leaves nothing: the next worker that asks tries again).
    """
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    directory, done = root / f"once-{name}", root / f"once-{name}.pickle"
    with open(root / f"once-{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            result: T = pickle.loads(done.read_bytes())
            return result
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        result = make(directory)
        done.write_bytes(pickle.dumps(result))
        return result
