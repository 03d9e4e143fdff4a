"""NumpyIndex: the vector-index conformance suite (exact, in-process, loaded on demand)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from mars_core.index import NumpyIndex, VectorIndex
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow
from mars_core.testing import VectorIndexConformance


class TestNumpyIndex(VectorIndexConformance):
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return NumpyIndex()


def test_writes_to_a_namespace_not_loaded_are_read_from_the_records_later() -> None:
    rows: list[IndexRow] = []
    with NumpyIndex() as index:
        index.bind("s", 2, lambda ns: [r for r in rows if r.namespace == ns])
        row = IndexRow("a", "u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0], np.float32), {})
        index.upsert([row])  # u1 not loaded: nothing kept
        assert index.loaded() == []
        rows.append(row)
        assert [i for i, _ in index.query("u1", MemoryStatus.ACTIVE, row.vector, 3)] == ["a"]
        assert index.loaded() == ["u1"]


def _loaded(dim: int) -> NumpyIndex:
    index = NumpyIndex()
    index.bind("s", dim, lambda ns: [])
    index.query("u1", MemoryStatus.ACTIVE, np.ones(dim, np.float32), 1)  # writes now land
    return index


def test_matrix_growth_and_swap_delete_keep_vectors_right() -> None:
    rng = np.random.default_rng(0)
    vectors = {f"r{i}": rng.normal(size=8).astype(np.float32) for i in range(100)}
    with _loaded(8) as index:
        index.upsert([IndexRow(k, "u1", MemoryStatus.ACTIVE, v, {"i": n})
                      for n, (k, v) in enumerate(vectors.items())])
        gone = list(vectors)[::3]
        index.delete("u1", gone)  # each hole is filled by the last row
        for k in gone:
            del vectors[k]
        for k, v in vectors.items():
            ((hit, score),) = index.query("u1", MemoryStatus.ACTIVE, v, 1)
            assert hit == k and score == pytest.approx(1.0, abs=1e-6)
        n = len(vectors)
        assert len(index.query("u1", MemoryStatus.ACTIVE, np.ones(8, np.float32), 500)) == n


def test_zero_vectors_score_zero() -> None:
    with _loaded(4) as index:
        zero, one = np.zeros(4, np.float32), np.array([1.0, 0, 0, 0], np.float32)
        index.upsert([IndexRow("z", "u1", MemoryStatus.ACTIVE, zero, {}),
                      IndexRow("a", "u1", MemoryStatus.ACTIVE, one, {})])
        assert index.query("u1", MemoryStatus.ACTIVE, one, 2) == [("a", 1.0), ("z", 0.0)]
        assert index.query("u1", MemoryStatus.ACTIVE, zero, 2) == []  # matches nothing
