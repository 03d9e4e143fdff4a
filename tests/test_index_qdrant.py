"""QdrantIndex: the filter translator, the vector-index conformance suite (``:memory:``, a
directory, and a server when ``QDRANT_URL`` is set), and what only Qdrant needs."""

from __future__ import annotations

import math
import os
import pathlib
import uuid
from typing import Any

import numpy as np
import pytest
from chroma_server import prefix_for, server_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_strategies import assert_filters_agree, filter_strategies

from mars_core.errors import ConflictError, MarsBackendError, ValidationError
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    VectorIndex,
    matches,
)
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow
from mars_core.testing import VectorIndexConformance

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (mars-memory[qdrant])")

from qdrant_client import models
from qdrant_client.local.payload_filters import check_filter

from mars_core.index.qdrant import QdrantIndex, to_qdrant_filter

ACTIVE = MemoryStatus.ACTIVE


def uid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def vec(*head: float, dim: int = 4) -> np.ndarray:
    return np.array([*head, *([0.0] * (dim - len(head)))], dtype=np.float32)


# --- the translator, checked with the client's own evaluator of server semantics ------------

KEYS = ("namespace", "type", "n", "flag", "a.b", "é k[0]")
scalars = st.one_of(
    st.sampled_from(["a", "b", "1", "True", ""]),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 0.5, -1.5, 2.0]),
    st.booleans(),
)
bound = st.one_of(st.none(), st.sampled_from([-1.0, 0.0, 0.5, 1, 2.0, math.inf, -math.inf]))
metadata, filters = filter_strategies(KEYS, scalars, bound, max_in=4, max_leaves=8)


def qdrant_matches(flt: Filter, meta: dict[str, MetaValue]) -> bool:
    translated = to_qdrant_filter(flt)
    if translated is None:
        return True
    payload = {**meta, "_ns": "u1", "_st": "active"}  # as the index stores a point
    return bool(check_filter(translated, payload, uid(0), has_vector={}))


@settings(max_examples=300, deadline=None)
@given(flt=filters, metas=st.lists(metadata, min_size=1, max_size=12))
def test_translation_agrees_with_matches(flt: Filter, metas: list[dict[str, MetaValue]]) -> None:
    for meta in metas:
        assert qdrant_matches(flt, meta) == matches(flt, meta), (flt, meta)


def test_translation_examples() -> None:
    assert to_qdrant_filter(None) is None
    assert to_qdrant_filter(Or((Eq("a", 1), And(())))) is None
    f = to_qdrant_filter(Eq("namespace", "u1"))
    assert f == models.Filter(must=[models.FieldCondition(
        key="namespace", match=models.MatchValue(value="u1"))])
    f = to_qdrant_filter(In("type", ("a", "b")))
    assert f.must[0].match == models.MatchAny(any=["a", "b"])
    f = to_qdrant_filter(Eq("a.b", 0.5))
    assert f.must[0].key == '"a.b"' and f.must[0].range == models.Range(gte=0.5, lte=0.5)
    f = to_qdrant_filter(Not(Range("n", gte=1)))
    assert f.must_not[0].range == models.Range(gte=1)
    nothing = to_qdrant_filter(In("n", ()))
    assert not check_filter(nothing, {"n": 1}, uid(0), has_vector={})
    assert to_qdrant_filter(Not(Eq("_ns", "u2"))) is None  # the index's own keys: never
    with pytest.raises(ValidationError):
        to_qdrant_filter({"namespace": "u1"})  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(flts=st.lists(filters, min_size=1, max_size=6),
       metas=st.lists(metadata, min_size=1, max_size=15))
def test_translation_agrees_with_local_qdrant(
    flts: list[Filter], metas: list[dict[str, MetaValue]]
) -> None:
    with QdrantIndex() as index:
        assert_filters_agree(index, flts, metas)


# --- the conformance suite ----------------------------------------------------------------


class TestQdrantMemory(VectorIndexConformance):
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return QdrantIndex()


class TestQdrantPath(VectorIndexConformance):
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return QdrantIndex(path=path)


@pytest.mark.skipif(not os.environ.get("QDRANT_URL"),
                    reason="set QDRANT_URL (and QDRANT_API_KEY) to run against a Qdrant server")
class TestQdrantURL(VectorIndexConformance):
    """Against the server at ``QDRANT_URL``; each test path gets its own prefix."""

    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return server_index("qdrant-url", None, prefix_for(path))


# --- Qdrant specifics ---------------------------------------------------------------------


def test_ids_must_be_canonical_uuids() -> None:
    with QdrantIndex() as index:
        index.bind("s", 4, lambda ns: [])
        for bad in ("a", uid(0xABC).upper(), uid(1).replace("-", ""), "{" + uid(1) + "}"):
            with pytest.raises(ValidationError, match="UUID"):
                index.upsert([IndexRow(bad, "u1", ACTIVE, vec(1.0), {})])
            with pytest.raises(ValidationError, match="UUID"):
                index.delete("u1", [bad])
        assert index.query("u1", ACTIVE, vec(1.0), 3) == []


def test_a_directory_is_used_by_one_client_at_a_time(tmp_path: pathlib.Path) -> None:
    first = QdrantIndex(path=tmp_path)
    first.bind("s", 4, lambda ns: [])
    with pytest.raises(ConflictError, match="another Qdrant client"):
        QdrantIndex(path=tmp_path)
    first.close()
    with QdrantIndex(path=tmp_path) as again:
        assert again.bind("s", 4, lambda ns: []) == 0


def test_local_mode_keeps_vectors_and_scores_exactly(tmp_path: pathlib.Path) -> None:
    """Searching and reopening change neither the stored vectors nor the scores (with
    ``Cosine``, qdrant-client's local mode renormalised the stored float32 vectors in
    place on every search)."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((60, 384)).astype(np.float32)
    rows = [IndexRow(uid(i), "u1", ACTIVE, v, {}) for i, v in enumerate(vectors)]
    queries = rng.standard_normal((5, 384)).astype(np.float32)

    def scores(index: QdrantIndex) -> list[list[tuple[str, float]]]:
        return [index.query("u1", ACTIVE, q, 10) for q in queries]

    with QdrantIndex(path=tmp_path) as index:
        index.bind("s", 384, lambda ns: [])
        index.upsert(rows, new=True)
        index.mark(1)
        stamp = index.stamp  # the record store keeps position 1 beside it
        first = scores(index)
        assert scores(index) == first
    with QdrantIndex(path=tmp_path) as index:
        assert index.bind("s", 384, lambda ns: [], {stamp: 1}) == 1
        assert scores(index) == first
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries[0] / np.linalg.norm(queries[0])
    assert first[0][0][1] == pytest.approx(float(np.max(unit @ q)), abs=1e-6)


def test_client_errors_are_wrapped() -> None:
    class Unreachable:
        def collection_exists(self, name: str) -> bool:
            raise ConnectionRefusedError("[Errno 111] Connection refused")

    index = QdrantIndex(Unreachable())  # a passed client: nothing asked of it yet
    with pytest.raises(MarsBackendError, match="Qdrant could not create collection") as info:
        index.bind("s", 4, lambda ns: [])
    assert isinstance(info.value.__cause__, ConnectionRefusedError)


def test_collection_options_reach_create_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cluster settings pass through to ``create_collection`` (a real local client, whose
    calls are recorded; local mode itself ignores sharding and replication)."""
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    calls: list[dict[str, Any]] = []
    real = client.create_collection

    def record(name: str, **kw: Any) -> bool:
        calls.append({"name": name, **kw})
        return bool(real(name, **kw))

    monkeypatch.setattr(client, "create_collection", record)
    opts = {"shard_number": 6, "replication_factor": 2, "write_consistency_factor": 2,
            "on_disk_payload": True}
    with QdrantIndex(client, collection_options=opts) as index:
        index.bind("s", 4, lambda ns: [])
        index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})])
        assert [i for i, _ in index.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]
    assert {c["name"] for c in calls} == {"mars_state", "mars_entries"}
    assert all({k: c[k] for k in opts} == opts for c in calls)
    with pytest.raises(ValidationError, match="unknown collection_options"):
        QdrantIndex(client, collection_options={"shards": 6})
    client.close()


def test_write_ordering_reaches_every_write(monkeypatch: pytest.MonkeyPatch) -> None:
    from qdrant_client import QdrantClient
    from qdrant_client import models as m

    client = QdrantClient(":memory:")
    seen: list[Any] = []
    for name in ("delete", "upsert"):
        real = getattr(client, name)

        def spy(*args: Any, _real: Any = real, **kw: Any) -> Any:
            seen.append(kw.get("ordering"))
            return _real(*args, **kw)

        monkeypatch.setattr(client, name, spy)
    with QdrantIndex(client, write_ordering="strong") as index:
        index.bind("s", 4, lambda ns: [])
        index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {}),
                      IndexRow(uid(2), "u1", ACTIVE, vec(0.0, 1.0), {})])
        index.delete("u1", [uid(2)])
        index.mark(3)
        assert [i for i, _ in index.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]
    # the state point (stamped by the bind), the entries, the delete; a mark writes nothing
    assert len(seen) >= 3 and all(o is m.WriteOrdering.STRONG for o in seen)
    with pytest.raises(ValidationError, match="write_ordering"):
        QdrantIndex(client, write_ordering="eventual")  # type: ignore[arg-type]
    client.close()
