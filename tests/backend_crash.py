"""The SIGKILL crash loop shared by the server-backed backends' tests, and a counter of
the write-ahead intents a backend begins.

A writer process applies batches (upsert a record, delete the one three before, bump a
counter record) in a loop; the test kills it at a random moment, reopens the directory and
checks every batch is whole and no acknowledged batch is lost.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["intents_begun", "sigkill_loop", "writer_script"]


def intents_begun(backend: Any, monkeypatch: Any) -> list[int]:
    """A list that gains one item each time ``backend`` begins a write-ahead intent."""
    begun: list[int] = []
    real_begin = backend._wal.begin

    def begin(ops: Any) -> Any:
        begun.append(1)
        return real_begin(ops)

    monkeypatch.setattr(backend._wal, "begin", begin)
    return begun


def writer_script(import_line: str, constructor: str) -> str:
    """The writer's source for a backend (``constructor`` receives ``sys.argv[1]``)."""
    return textwrap.dedent(
        f"""
        import sys, uuid
        import numpy as np
        from mars_core.backends.base import Record, WriteBatch
        {import_line}

        def rid(i):
            return str(uuid.UUID(int=i + 10))

        b = {constructor}(path=sys.argv[1])
        b.ensure_collection("v", 4)
        b.ensure_collection("meta", 0)
        got = b.get("meta", [rid(0)])
        n = int(got[0].metadata["n"]) if got else 0
        print("ready", flush=True)
        while True:
            n += 1
            batch = WriteBatch()
            batch.upsert("v", [Record(rid(n), np.array([1.0, n, 0, 1]), "x" * (n % 50),
                                      {{"n": n}})])
            batch.delete("v", [rid(n - 3)])
            batch.upsert("meta", [Record(rid(0), None, "", {{"n": n}})])
            b.apply(batch)
        """
    )


def _wid(i: int) -> str:
    return str(uuid.UUID(int=i + 10))


def _check_consistent(b: Any, vectors: bool) -> int:
    b.ensure_collection("v", 4)
    b.ensure_collection("meta", 0)
    got = b.get("meta", [_wid(0)])
    n = int(got[0].metadata["n"]) if got else 0
    recs = {r.id: r for r in b.get("v", with_vectors=vectors)}
    assert sorted(recs) == sorted(_wid(i) for i in range(max(1, n - 2), n + 1)), n
    for i in range(max(1, n - 2), n + 1):
        rec = recs[_wid(i)]
        assert rec.metadata == {"n": i} and rec.document == "x" * (i % 50)
        if vectors:
            expected = np.array([1.0, i, 0, 1]) / np.linalg.norm([1.0, i, 0, 1])
            np.testing.assert_allclose(rec.vector, expected, atol=1e-6)
    assert b._wal.pending() == []
    return n


def sigkill_loop(tmp_path: pathlib.Path, writer: str,
                 open_backend: Callable[[pathlib.Path], Any], *, seed: int,
                 max_sleep: float, vectors: bool, rounds: int = 4) -> None:
    """Kill the writer ``rounds`` times; after each, every batch is whole and none is lost."""
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}
    last = 0
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", writer, str(tmp_path)], env=env,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, max_sleep))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        with open_backend(tmp_path) as b:
            n = _check_consistent(b, vectors)
        assert n >= last  # acknowledged batches are never lost
        last = n
    assert last > 0
