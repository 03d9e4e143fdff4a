"""NumpyIndex: the vector-index conformance suite (exact, in-process, loaded on demand)."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_strategies import filter_strategies

from mars_core.index import NumpyIndex, VectorIndex
from mars_core.index.base import And, Eq, Filter, MetaValue, Not, Range, matches
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


# --- filters as array expressions (the time column is the temporal range index) ----------

_KEYS = ("a", "b", "created_ts")
_SCALARS = st.one_of(st.sampled_from(["x", "y", "1", ""]), st.integers(-2, 2),
                     st.sampled_from([0.0, 1.0, 0.5, -1.5, 2**60, -(2**60) - 1]), st.booleans())
_BOUND = st.one_of(st.none(), st.sampled_from([-1.0, 0.0, 0.5, 1, 2.0, math.inf, -math.inf,
                                               math.nan, 2.0**60]))
_FIELDS, _FILTERS = filter_strategies(_KEYS, _SCALARS, _BOUND, max_in=3, max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flts=st.lists(_FILTERS, min_size=1, max_size=6),
       metas=st.lists(_FIELDS, min_size=1, max_size=12))
def test_filters_agree_with_the_reference_semantics(flts: list[Filter],
                                                   metas: list[dict[str, MetaValue]]) -> None:
    """The array expressions admit exactly what :func:`matches` admits (huge integers,
    which float64 cannot hold exactly, are filtered row by row)."""
    ids = [f"m{i}" for i in range(len(metas))]
    rows = [IndexRow(ids[i], "p", MemoryStatus.ACTIVE, np.array([1.0, float(i)], np.float32), m)
            for i, m in enumerate(metas)]
    index = NumpyIndex()
    index.bind("props", 2, lambda ns: rows)  # the partition is read from these rows
    probe = np.array([1.0, 0.0], dtype=np.float32)
    for flt in flts:
        expected = {ids[i] for i, m in enumerate(metas) if matches(flt, m)}
        hits = index.query("p", MemoryStatus.ACTIVE, probe, k=len(metas), where=flt)
        assert {i for i, _ in hits} == expected, flt


def test_columns_follow_swap_deletes_and_updates() -> None:
    index = NumpyIndex()
    index.bind("s", 2, lambda ns: [])
    index.query("u", MemoryStatus.ACTIVE, np.array([1.0, 0.0], np.float32), 1)  # loaded
    rows = [IndexRow(f"m{i}", "u", MemoryStatus.ACTIVE, np.array([1.0, i], np.float32),
                     {"created_ts": float(i), **({"type": "semantic"} if i % 2 else {})})
            for i in range(20)]
    index.upsert(rows, new=True)
    index.delete("u", ["m0", "m7"])  # m19 then m18 fill the holes
    index.upsert([IndexRow("m3", "u", MemoryStatus.ACTIVE, np.array([1.0, 3], np.float32),
                           {"created_ts": 100.0})], new=False)
    window = Range("created_ts", gte=2.0, lte=9.0)
    probe = np.array([1.0, 0.0], np.float32)
    got = {i for i, _ in index.query("u", MemoryStatus.ACTIVE, probe, 50, window)}
    assert got == {"m2", "m4", "m5", "m6", "m8", "m9"}
    odd = And((window, Eq("type", "semantic")))
    assert {i for i, _ in index.query("u", MemoryStatus.ACTIVE, probe, 50, odd)} == {"m5", "m9"}
    assert {i for i, _ in index.query("u", MemoryStatus.ACTIVE, probe, 50,
                                      Not(Eq("type", "semantic")))} == {
        "m3", *(f"m{i}" for i in range(2, 20, 2))}  # m3's update holds no type any more
    top = index.query("u", MemoryStatus.ACTIVE, np.array([0.0, 1.0], np.float32), 2, window)
    assert [i for i, _ in top] in (["m9", "m8"], ["m8", "m9"])  # the window's best two
