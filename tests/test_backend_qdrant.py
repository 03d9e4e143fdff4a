"""QdrantBackend: the filter translator, the conformance suite (``:memory:``, a directory,
and a server when ``QDRANT_URL`` is set), write-ahead intents, and whole stores on Qdrant."""

from __future__ import annotations

import math
import os
import pathlib
import uuid
from typing import Any

import numpy as np
import pytest
from backend_crash import intents_begun, sigkill_loop, writer_script
from backend_roundtrip import store_round
from filter_strategies import filter_strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mars_core.backends.base import (
    And,
    DeleteOp,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    Record,
    UpsertOp,
    VectorBackend,
    WriteBatch,
    matches,
)
from mars_core.backends.memory import InMemoryBackend
from mars_core.errors import (
    ConflictError,
    EmbeddingMismatchError,
    MarsBackendError,
    ValidationError,
)
from mars_core.testing import VectorBackendConformance

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (mars-memory[qdrant])")

from qdrant_client import models
from qdrant_client.local.payload_filters import check_filter

from mars_core.backends.qdrant import DOC_KEY, QdrantBackend, to_qdrant_filter


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
    return bool(check_filter(translated, {**meta, DOC_KEY: ""}, uid(0), has_vector={}))


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
    with pytest.raises(ValidationError):
        to_qdrant_filter({"namespace": "u1"})  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(flts=st.lists(filters, min_size=1, max_size=6),
       metas=st.lists(metadata, min_size=1, max_size=15))
def test_translation_agrees_with_local_qdrant(
    flts: list[Filter], metas: list[dict[str, MetaValue]]
) -> None:
    with QdrantBackend() as b:
        b.ensure_collection("props", 2)
        b.upsert("props", [Record(uid(i), vec(1.0, i, dim=2), "", m) for i, m in enumerate(metas)])
        for flt in flts:
            expected = {uid(i) for i, m in enumerate(metas) if matches(flt, m)}
            assert {r.id for r in b.get("props", where=flt)} == expected, flt
            hits = b.query("props", vec(1.0, dim=2), k=len(metas), where=flt)
            assert {h.record.id for h in hits} == expected, flt


# --- the conformance suite ----------------------------------------------------------------


class TestQdrantMemory(VectorBackendConformance):
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return QdrantBackend()


class TestQdrantPath(VectorBackendConformance):
    persistent = True
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return QdrantBackend(path=path)


@pytest.mark.skipif(not os.environ.get("QDRANT_URL"),
                    reason="set QDRANT_URL (and QDRANT_API_KEY) to run against a Qdrant server")
class TestQdrantURL(VectorBackendConformance):
    persistent = True  # the server keeps the data; each test path gets its own prefix
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        prefix = "t" + uuid.uuid5(uuid.NAMESPACE_URL, str(path)).hex[:12] + "_"
        return QdrantBackend(url=os.environ["QDRANT_URL"],
                             api_key=os.environ.get("QDRANT_API_KEY"), collection_prefix=prefix)


# --- Qdrant specifics ---------------------------------------------------------------------


def test_ids_must_be_canonical_uuids() -> None:
    with QdrantBackend() as b:
        b.ensure_collection("mem", 4)
        for bad in ("a", uid(0xABC).upper(), uid(1).replace("-", ""), "{" + uid(1) + "}"):
            with pytest.raises(ValidationError, match="UUID"):
                b.upsert("mem", [Record(bad, vec(1.0), "", {})])
            with pytest.raises(ValidationError):
                b.get("mem", [bad])
        with pytest.raises(ValidationError, match="reserved"):
            b.upsert("mem", [Record(uid(1), vec(1.0), "", {DOC_KEY: "x"})])
        assert b.get("mem") == []


def test_path_is_locked_and_dimension_is_kept(tmp_path: pathlib.Path) -> None:
    first = QdrantBackend(path=tmp_path)
    first.ensure_collection("mem", 4)
    first.ensure_collection("log", 0)
    with pytest.raises(ConflictError, match="close it first"):
        QdrantBackend(path=tmp_path)
    first.close()
    with QdrantBackend(path=tmp_path) as b:
        with pytest.raises(EmbeddingMismatchError, match="reembed"):
            b.ensure_collection("mem", 8)
        with pytest.raises(EmbeddingMismatchError):
            b.ensure_collection("log", 4)
        assert b._indexes == ()  # local mode: no payload indexes


def test_local_mode_keeps_vectors_and_scores_exactly(tmp_path: pathlib.Path) -> None:
    """Searching and reopening change neither the stored vectors nor the scores (with
    ``Cosine``, qdrant-client's local mode renormalised the stored float32 vectors in
    place on every search; this fails on such a collection)."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((60, 384)).astype(np.float32)
    records = [Record(uid(i), v, f"d{i}", {}) for i, v in enumerate(vectors)]
    queries = rng.standard_normal((5, 384)).astype(np.float32)

    def scores(b: QdrantBackend) -> list[list[tuple[str, float]]]:
        return [[(h.record.id, h.score) for h in b.query("mem", q, 10)] for q in queries]

    with QdrantBackend(path=tmp_path) as b:
        b.ensure_collection("mem", 384)
        b.upsert("mem", records)
        sent = {r.id: r.vector for r in b.get("mem", with_vectors=True)}
        first = scores(b)
        assert scores(b) == first
        after = {r.id: r.vector for r in b.get("mem", with_vectors=True)}
        assert all(np.array_equal(after[i], sent[i]) for i in sent)
    with QdrantBackend(path=tmp_path) as b:
        assert scores(b) == first
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries[0] / np.linalg.norm(queries[0])
    assert first[0][0][1] == pytest.approx(float(np.max(unit @ q)), abs=1e-6)


def test_client_errors_are_wrapped() -> None:
    class Unreachable:
        def collection_exists(self, name: str) -> bool:
            raise ConnectionRefusedError("[Errno 111] Connection refused")

    backend = QdrantBackend(Unreachable())  # a passed client: nothing asked of it yet
    with pytest.raises(MarsBackendError, match="Qdrant could not open collection") as info:
        backend.ensure_collection("mem", 4)
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
    with QdrantBackend(client, collection_options=opts) as b:
        b.ensure_collection("mem", 4)
        b.ensure_collection("log", 0)
        b.apply(WriteBatch().upsert("mem", [Record(uid(1), vec(1.0), "kept", {})])
                .upsert("log", [Record(uid(2), None, "noted", {})]))  # two requests: an intent
        assert [r.document for r in b.get("mem")] == ["kept"]
    assert [c["name"] for c in calls] == ["mars_mem", "mars_log", "mars__wal"]
    assert all({k: c[k] for k in opts} == opts for c in calls)
    with pytest.raises(ValidationError, match="unknown collection_options"):
        QdrantBackend(client, collection_options={"shards": 6})


def test_write_ordering_reaches_every_write(monkeypatch: pytest.MonkeyPatch) -> None:
    from qdrant_client import QdrantClient
    from qdrant_client import models as m

    client = QdrantClient(":memory:")
    seen: list[Any] = []
    for name in ("batch_update_points", "delete", "upsert"):
        real = getattr(client, name)

        def spy(*args: Any, _real: Any = real, **kw: Any) -> Any:
            seen.append(kw.get("ordering"))
            return _real(*args, **kw)

        monkeypatch.setattr(client, name, spy)
    with QdrantBackend(client, write_ordering="strong") as b:
        b.ensure_collection("mem", 4)
        b.upsert("mem", [Record(uid(1), vec(1.0), "a", {}), Record(uid(2), vec(0.0, 1.0), "b", {})])
        b.delete("mem", [uid(2)])
        assert [r.document for r in b.get("mem")] == ["a"]
    assert seen and all(o is m.WriteOrdering.STRONG for o in seen)
    with pytest.raises(ValidationError, match="write_ordering"):
        QdrantBackend(client, write_ordering="eventual")  # type: ignore[arg-type]


def test_leftover_intent_is_replayed_on_open(tmp_path: pathlib.Path) -> None:
    with QdrantBackend(path=tmp_path) as b:
        b.ensure_collection("mem", 4)
        b.ensure_collection("log", 0)
        b.upsert("mem", [Record(uid(1), vec(1.0), "old", {"k": 1}),
                         Record(uid(2), vec(0.0, 1.0), "doomed", {})])
        b._wal.begin([UpsertOp("mem", (Record(uid(1), None, "edited", {"k": 2}),)),
                      DeleteOp("mem", (uid(2),)),
                      UpsertOp("log", (Record(uid(9), None, "entry", {}),))])
    with QdrantBackend(path=tmp_path) as b:
        (kept,) = b.get("mem", with_vectors=True)
        assert (kept.id, kept.document, dict(kept.metadata)) == (uid(1), "edited", {"k": 2})
        np.testing.assert_allclose(kept.vector, vec(1.0), atol=1e-6)  # type: ignore[arg-type]
        assert [r.document for r in b.get("log")] == ["entry"]
        assert b._wal.pending() == []


def test_large_upserts_go_through_an_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    from mars_core.backends import qdrant

    monkeypatch.setattr(qdrant, "_CHUNK", 3)
    with QdrantBackend() as b:
        b.ensure_collection("mem", 4)
        begun = intents_begun(b, monkeypatch)
        b.upsert("mem", [Record(uid(i), vec(1.0, i), f"d{i}", {"i": i}) for i in range(10)])
        b.upsert("mem", [Record(uid(i), None, "edited", {"i": -i}) for i in range(10)])
        assert len(begun) == 2
        assert {r.document for r in b.get("mem")} == {"edited"}
        assert [r.id for r in b.get("mem", [uid(7), uid(2)])] == [uid(7), uid(2)]


# --- whole stores ---------------------------------------------------------------------------


def test_store_round_matches_in_memory(tmp_path: pathlib.Path) -> None:
    expected = store_round(lambda: InMemoryBackend(tmp_path / "memory"))
    assert store_round(lambda: QdrantBackend(path=tmp_path / "qdrant")) == expected


# --- crash loop: SIGKILL a writer at random, reopen, check every batch is whole -------------

WRITER = writer_script("from mars_core.backends.qdrant import QdrantBackend", "QdrantBackend")


@pytest.mark.slow
def test_sigkill_writer_loop_reopens_consistently(tmp_path: pathlib.Path) -> None:
    sigkill_loop(tmp_path, WRITER, lambda p: QdrantBackend(path=p), seed=5, max_sleep=0.5,
                 vectors=False)


# --- payload indexes ------------------------------------------------------------------------


class IndexRecorder:
    """A thin recording wrapper around a REAL local ``QdrantClient``.

    Qdrant's local mode accepts ``create_payload_index`` but keeps no index (its
    ``get_collection(...).payload_schema`` is always empty), so the only way to see in
    local mode which indexes the backend asks for is to record the calls; every call,
    this one included, goes on to the real client. Against a server the schema itself is
    read (``test_payload_indexes_on_a_server``).
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.indexes: list[tuple[str, str, Any]] = []

    def create_payload_index(self, collection_name: str, field_name: str, **kw: Any) -> Any:
        self.indexes.append((collection_name, field_name, kw.get("field_schema")))
        return self.client.create_payload_index(collection_name, field_name=field_name, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
def test_payload_indexes_are_keyword_indexes_on_data_collections_only(
        tmp_path: pathlib.Path) -> None:
    """``payload_indexes=`` asks for one KEYWORD index per field on every collection the
    backend creates (a dotted or spaced key quoted as a path), none on ``_wal``, and none
    again on collections that already exist."""
    from qdrant_client import QdrantClient

    fields = ("namespace", "type", "status", "conversation id")
    recorder = IndexRecorder(QdrantClient(path=str(tmp_path)))
    with QdrantBackend(recorder, payload_indexes=fields, collection_prefix="p_") as b:
        b.ensure_collection("mem", 4)
        b.ensure_collection("log", 0)
        b.upsert("mem", [Record(uid(1), vec(1.0), "kept", {"namespace": "a"})])
        assert [r.document for r in b.get("mem", where=Eq("namespace", "a"))] == ["kept"]
    paths = ("namespace", "type", "status", '"conversation id"')
    assert recorder.indexes == [(f"p_{c}", p, models.PayloadSchemaType.KEYWORD)
                                for c in ("mem", "log") for p in paths]
    with QdrantBackend(recorder, payload_indexes=fields, collection_prefix="p_") as b:
        b.ensure_collection("mem", 4)  # exists: its indexes are not asked for again
        b.ensure_collection("new", 4)
    assert recorder.indexes[8:] == [("p_new", p, models.PayloadSchemaType.KEYWORD)
                                    for p in paths]
    recorder.client.close()


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
def test_payload_indexes_default_to_none_in_local_mode() -> None:
    """Local mode ignores payload indexes, so by default none are asked for; a whole
    store opened with ``payload_indexes=`` gets them on each of its data collections."""
    from qdrant_client import QdrantClient

    from mars_core import FakeClock, MemoryStore, codec

    quiet = IndexRecorder(QdrantClient(":memory:"))
    with QdrantBackend(quiet) as b:
        b.ensure_collection("mem", 4)
    assert quiet.indexes == []
    recorder = IndexRecorder(QdrantClient(":memory:"))
    with MemoryStore(QdrantBackend(recorder, payload_indexes=("namespace", "status")),
                     clock=FakeClock(), audit_key=bytes(range(32))) as store:
        store.add("Ana likes tea", namespace="ana")
        assert [n.content for n in store.list("ana")] == ["Ana likes tea"]
    indexed = {c for c, _, _ in recorder.indexes}
    assert {"mars_" + c for c in (codec.MEMORIES, codec.ARCHIVE, codec.AUDIT, codec.META)} \
        <= indexed
    assert "mars__wal" not in indexed
    assert sorted(recorder.indexes) == sorted((c, f, models.PayloadSchemaType.KEYWORD)
                                              for c in indexed for f in ("namespace", "status"))
    quiet.client.close()
    recorder.client.close()


@pytest.mark.skipif(not os.environ.get("QDRANT_URL"),
                    reason="set QDRANT_URL (and QDRANT_API_KEY) to run against a Qdrant server")
def test_payload_indexes_on_a_server() -> None:
    """Against a server the default indexes (``namespace``, ``type``, ``status``) and
    those asked for exist as KEYWORD entries of the collection's ``payload_schema``; the
    write-ahead collection has none."""
    from qdrant_client import QdrantClient

    url, key = os.environ["QDRANT_URL"], os.environ.get("QDRANT_API_KEY")
    prefix = f"t{uuid.uuid4().hex[:12]}_"
    client = QdrantClient(url=url, api_key=key)
    try:
        with QdrantBackend(url=url, api_key=key, collection_prefix=prefix) as b:
            b.ensure_collection("mem", 4)
        with QdrantBackend(url=url, api_key=key, collection_prefix=prefix + "x_",
                           payload_indexes=("conversation_id",)) as b:
            b.ensure_collection("log", 0)

        def schema(name: str) -> dict[str, Any]:
            found = client.get_collection(name).payload_schema
            return {k: v.data_type for k, v in found.items()}

        keyword = models.PayloadSchemaType.KEYWORD
        assert schema(prefix + "mem") == dict.fromkeys(("namespace", "type", "status"), keyword)
        assert schema(prefix + "x_log") == {"conversation_id": keyword}
        assert schema(prefix + "_wal") == {} and schema(prefix + "x__wal") == {}
    finally:
        for c in client.get_collections().collections:
            if c.name.startswith(prefix):
                client.delete_collection(c.name)
        client.close()
