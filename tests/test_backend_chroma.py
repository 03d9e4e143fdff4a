"""ChromaBackend: the filter translator, the conformance suite (ephemeral, persistent and a
real ``chroma run`` server), the write-ahead intents, and whole stores on Chroma."""

from __future__ import annotations

import importlib.util
import math
import pathlib
import uuid
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from backend_crash import intents_begun, sigkill_loop, writer_script
from backend_roundtrip import store_round
from chroma_server import prefix_for
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
from mars_core.backends.chroma import NUMERIC_FLAG, ChromaBackend, to_chroma_where
from mars_core.backends.memory import InMemoryBackend
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    MarsBackendError,
    StoreClosedError,
    ValidationError,
)
from mars_core.testing import VectorBackendConformance

if TYPE_CHECKING:
    from chroma_server import ChromaServer

needs_chroma = pytest.mark.skipif(
    importlib.util.find_spec("chromadb") is None,
    reason="chromadb is not installed (pip install 'mars-memory[chroma]')",
)


def uid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def vec(*head: float, dim: int = 4) -> np.ndarray:
    return np.array([*head, *([0.0] * (dim - len(head)))], dtype=np.float32)


# --- a reference evaluator of Chroma's where language -----------------------------------
# It encodes what Chroma 1.5 does (checked against the real thing below): booleans never
# equal numbers, ints and floats compare numerically, $ne/$nin/$not_contains hold when the
# key is missing, range operators see only numbers. It also rejects shapes Chroma refuses.


def _same(stored: Any, value: Any) -> bool:
    if isinstance(stored, bool) or isinstance(value, bool):
        return isinstance(stored, bool) and isinstance(value, bool) and stored == value
    if isinstance(stored, str) or isinstance(value, str):
        return isinstance(stored, str) and isinstance(value, str) and stored == value
    return bool(stored == value)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def chroma_eval(where: dict[str, Any], meta: dict[str, Any]) -> bool:
    assert len(where) == 1, where
    ((key, cond),) = where.items()
    if key in ("$and", "$or"):
        assert isinstance(cond, list) and len(cond) >= 2, where
        results = [chroma_eval(c, meta) for c in cond]
        return all(results) if key == "$and" else any(results)
    assert not key.startswith("$")
    if not isinstance(cond, dict):
        cond = {"$eq": cond}
    assert len(cond) == 1, cond
    ((op, value),) = cond.items()
    present, stored = key in meta, meta.get(key)
    if op in ("$in", "$nin"):
        assert value and len({type(v) for v in value}) == 1, value
        assert all(not isinstance(v, float) or v.is_integer() for v in value), value
        hit = present and any(_same(stored, v) for v in value)
        return hit if op == "$in" else not hit
    if op in ("$contains", "$not_contains"):
        hit = present and isinstance(stored, list) and any(_same(s, value) for s in stored)
        return hit if op == "$contains" else not hit
    if op in ("$eq", "$ne"):
        assert not isinstance(value, float) or value.is_integer(), cond  # truncated for ints
        hit = present and not isinstance(stored, list) and _same(stored, value)
        return hit if op == "$eq" else not hit
    assert _is_number(value), cond
    if not present or not _is_number(stored):
        return False
    if isinstance(stored, int):  # Chroma 1.5.9 truncates a fractional operand for ints
        value = math.trunc(value)
    return bool({"$gt": stored > value, "$gte": stored >= value,
                 "$lt": stored < value, "$lte": stored <= value}[op])


def stored_form(meta: dict[str, MetaValue]) -> dict[str, Any]:
    """Metadata as the backend stores it (with the hidden numeric flags)."""
    return {**meta, **{NUMERIC_FLAG + k: True for k, v in meta.items() if _is_number(v)}}


def where_matches(flt: Filter, meta: dict[str, MetaValue]) -> bool:
    where = to_chroma_where(flt)
    return True if where is None else chroma_eval(where, stored_form(meta))


KEYS = ("namespace", "type", "n", "flag", "a.b")
scalars = st.one_of(
    st.sampled_from(["a", "b", "1", "True", ""]),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 0.5, -1.5, 2.0]),
    st.booleans(),
)
bound = st.one_of(st.none(), st.sampled_from([-1.0, 0.0, 0.5, 1, 2.0, math.inf, -math.inf]))
metadata, filters = filter_strategies(KEYS, scalars, bound, max_in=4, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(flt=filters, metas=st.lists(metadata, min_size=1, max_size=12))
def test_translation_agrees_with_matches(flt: Filter, metas: list[dict[str, MetaValue]]) -> None:
    for meta in metas:
        assert where_matches(flt, meta) == matches(flt, meta), (flt, meta, to_chroma_where(flt))


def test_translation_examples() -> None:
    assert to_chroma_where(None) is None
    assert to_chroma_where(And(())) is None
    assert to_chroma_where(Eq("ns", "u1")) == {"ns": {"$eq": "u1"}}
    assert to_chroma_where(Eq("n", 2)) == {"n": {"$eq": 2}}
    assert to_chroma_where(Eq("n", 1)) == {"$or": [{"n": {"$eq": True}}, {"n": {"$eq": 1}}]}
    assert to_chroma_where(In("t", ("a", "b", "a"))) == {"t": {"$in": ["a", "b"]}}
    assert to_chroma_where(Not(In("t", ("a", "b", 2)))) == {
        "$and": [{"t": {"$nin": ["a", "b"]}}, {"t": {"$ne": 2}}]}
    assert to_chroma_where(Range("s", gte=-2, lt=3.0)) == {
        "$and": [{"s": {"$gte": -2}}, {"s": {"$lt": 3.0}}]}
    assert to_chroma_where(Range("s", lte=0.5)) == {"s": {"$lte": 0.5}}
    assert to_chroma_where(Range("s", gte=0.5)) == {  # repairs Chroma's truncation for ints
        "$and": [{"s": {"$gte": 0.5}}, {"s": {"$gt": 0}}]}
    assert to_chroma_where(Not(Range("s", gt=1))) == {
        "$or": [{NUMERIC_FLAG + "s": {"$ne": True}}, {"s": {"$lte": 1}}]}
    nothing = to_chroma_where(Or(()))
    assert nothing is not None and not chroma_eval(nothing, stored_form({"s": 1}))
    assert to_chroma_where(Not(Eq("#k", 1))) is None  # no record can hold "#k"
    with pytest.raises(ValidationError):
        to_chroma_where("namespace = 'u1'")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        to_chroma_where(Eq("n", [1, 2]))  # type: ignore[arg-type]


@needs_chroma
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(flts=st.lists(filters, min_size=1, max_size=6),
       metas=st.lists(metadata, min_size=1, max_size=15))
def test_translation_agrees_with_real_chroma(
    flts: list[Filter], metas: list[dict[str, MetaValue]]
) -> None:
    with ChromaBackend() as b:
        b.ensure_collection("props", 2)
        b.upsert("props", [Record(uid(i), vec(1.0, i, dim=2), "", m) for i, m in enumerate(metas)])
        for flt in flts:
            expected = {uid(i) for i, m in enumerate(metas) if matches(flt, m)}
            assert {r.id for r in b.get("props", where=flt)} == expected, flt
            hits = b.query("props", vec(1.0, dim=2), k=len(metas), where=flt)
            assert {h.record.id for h in hits} == expected, flt


# --- the conformance suite ----------------------------------------------------------------


@needs_chroma
class TestChromaEphemeral(VectorBackendConformance):
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return ChromaBackend()


@needs_chroma
class TestChromaPersistent(VectorBackendConformance):
    persistent = True
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return ChromaBackend(path=path)


@needs_chroma
class TestChromaHTTP(VectorBackendConformance):
    persistent = True  # the server keeps the data; each test path gets its own prefix
    atomic_apply = True
    server: ChromaServer

    @pytest.fixture(autouse=True)
    def _server(self, chroma_server: ChromaServer) -> None:
        self.server = chroma_server

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return ChromaBackend(host=self.server.host, port=self.server.port,
                             collection_prefix=prefix_for(path))


# --- Chroma specifics ---------------------------------------------------------------------


@needs_chroma
def test_ephemeral_backends_are_isolated() -> None:
    with ChromaBackend() as a, ChromaBackend() as b:
        a.ensure_collection("mem", 4)
        a.upsert("mem", [Record(uid(1), vec(1.0), "only in a", {})])
        b.ensure_collection("mem", 4)
        assert b.get("mem") == []
        assert [r.document for r in a.get("mem")] == ["only in a"]


@needs_chroma
def test_persistent_directory_is_locked(tmp_path: pathlib.Path) -> None:
    first = ChromaBackend(path=tmp_path)
    with pytest.raises(ConflictError, match="close it first"):
        ChromaBackend(path=tmp_path)
    first.close()
    with ChromaBackend(path=tmp_path) as again:
        again.ensure_collection("mem", 4)


@needs_chroma
def test_names_keys_and_integers_chroma_cannot_hold() -> None:
    with ChromaBackend() as b:
        for bad in ("_wal", "a b", "x-"):
            with pytest.raises(ValidationError):
                b.ensure_collection(bad, 4)
        b.ensure_collection("mem", 4)
        for meta in ({"#k": 1}, {NUMERIC_FLAG + "x": True}, {"_mars_never": True},
                     {"chroma:document": "x"}, {"big": 2**70}):
            with pytest.raises(ValidationError):
                b.upsert("mem", [Record(uid(1), vec(1.0), "", meta)])  # type: ignore[arg-type]
        assert b.get("mem") == []


@needs_chroma
def test_dimension_is_recorded_in_collection_metadata(tmp_path: pathlib.Path) -> None:
    with ChromaBackend(path=tmp_path) as b:
        b.ensure_collection("mem", 4)
    with ChromaBackend(path=tmp_path) as b:
        with pytest.raises(EmbeddingMismatchError, match="reembed"):
            b.ensure_collection("mem", 5)
        b.ensure_collection("mem", 4)


@needs_chroma
def test_client_errors_are_wrapped() -> None:
    with pytest.raises(MarsBackendError, match="chroma run"):
        ChromaBackend(host="127.0.0.1", port=9)  # nothing listens on the discard port


@needs_chroma
def test_passed_client_is_not_closed() -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with ChromaBackend(client, collection_prefix="mine_") as b:
        b.ensure_collection("mem", 4)
    names = [c.name for c in client.list_collections()]
    assert "mine_mem" in names and "mine__wal" not in names  # made by the first intent
    with pytest.raises(StoreClosedError):
        b.get("mem")
    client.delete_collection("mine_mem")


# --- the record layout and the write requests ------------------------------------------------


def _raw(client: Any, name: str, rid: str) -> tuple[str, dict[str, Any], list[float]]:
    """Chroma's own document field, metadata and vector of one record."""
    res = client.get_collection(name).get(ids=[rid], include=["documents", "metadatas",
                                                              "embeddings"])
    return res["documents"][0], res["metadatas"][0], list(res["embeddings"][0])


@needs_chroma
def test_text_lives_in_metadata_and_older_records_are_moved_over() -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with ChromaBackend(client, collection_prefix="lay_") as b:
        b.ensure_collection("mem", 4)
        b.upsert("mem", [Record(uid(1), vec(1.0), "new text", {"k": 1})])
        field, meta, _ = _raw(client, "lay_mem", uid(1))
        assert field == "" and meta["_mars_doc"] == "new text"
        # a record as written before the text moved into metadata
        client.get_collection("lay_mem").upsert(
            ids=[uid(2)], embeddings=[vec(0.0, 1.0).tolist()], documents=["old secret"],
            metadatas=[{"k": 2, NUMERIC_FLAG + "k": True}])
        assert [r.document for r in b.get("mem", [uid(2)])] == ["old secret"]
        assert b.query("mem", vec(0.0, 1.0), 1)[0].record.document == "old secret"
        before = _raw(client, "lay_mem", uid(2))[2]
        b.upsert("mem", [Record(uid(2), None, "redacted", {"k": 3})])
        field, meta, after = _raw(client, "lay_mem", uid(2))
        assert field == "" and meta["_mars_doc"] == "redacted" and meta["k"] == 3
        assert after == before  # the stored vector was kept
        assert [(r.document, r.metadata) for r in b.get("mem", [uid(2)])] == \
            [("redacted", {"k": 3})]


@needs_chroma
def test_a_kept_vector_is_not_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.api.models.Collection import Collection

    with ChromaBackend() as b:
        b.ensure_collection("mem", 4)
        b.upsert("mem", [Record(uid(i), vec(1.0, i), f"d{i}", {"i": i}) for i in range(5)])
        calls: list[tuple[str, int, bool]] = []
        for verb in ("upsert", "update"):
            real = getattr(Collection, verb)

            def spy(self: Any, *a: Any, _real: Any = real, _verb: str = verb,
                    **kw: Any) -> Any:
                if self.name.endswith("mem"):
                    calls.append((_verb, len(kw["ids"]), kw.get("embeddings") is not None))
                return _real(self, *a, **kw)
            monkeypatch.setattr(Collection, verb, spy)
        # one batch of five single-record operations, as a store records accesses
        batch = WriteBatch()
        for i in range(5):
            batch.upsert("mem", [Record(uid(i), None, f"seen {i}", {"i": i, "n": 1})])
        b.apply(batch)
        assert calls == [("update", 5, False)]
        assert {r.id: r.document for r in b.get("mem")} == {uid(i): f"seen {i}" for i in range(5)}
        assert b.query("mem", vec(1.0, 4), 1)[0].record.id == uid(4)


@needs_chroma
def test_an_upsert_mixing_new_and_kept_vectors_goes_through_an_intent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with ChromaBackend() as b:
        b.ensure_collection("mem", 4)
        b.upsert("mem", [Record(uid(1), vec(1.0), "a", {})])
        begun = intents_begun(b, monkeypatch)
        b.upsert("mem", [Record(uid(2), vec(0.0, 1.0), "b", {})])  # one request
        assert begun == []
        # a kept vector may take an upsert (a record in the older layout) and a metadata
        # update: counted as two requests, so all-or-nothing through an intent
        b.upsert("mem", [Record(uid(1), None, "a2", {})])
        assert begun == [1]
        b.upsert("mem", [Record(uid(3), vec(0.0, 0.0, 1.0), "c", {}),
                         Record(uid(2), None, "b2", {})])
        assert begun == [1, 1]
        assert {r.id: r.document for r in b.get("mem")} == {uid(1): "a2", uid(2): "b2",
                                                          uid(3): "c"}


@needs_chroma
def test_vectorless_collections_flush_their_index_often() -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with ChromaBackend(client, collection_prefix="cfg_") as b:
        b.ensure_collection("audit", 0)
        b.ensure_collection("mem", 4)
        b.apply(WriteBatch().upsert("mem", [Record(uid(1), vec(1.0), "a", {})])
                .upsert("audit", [Record(uid(2), None, "b", {})]))  # an intent: makes _wal
    sync = {c.name: c.configuration_json["hnsw"]["sync_threshold"]
            for c in client.list_collections()}
    assert sync["cfg_audit"] == sync["cfg__wal"] == 10
    assert sync["cfg_mem"] == 1000  # Chroma's default where vectors are indexed
    # a collection made with Chroma's default interval gets the short one when opened
    with warnings.catch_warnings():  # Chroma warns about its own legacy config
        warnings.simplefilter("ignore", DeprecationWarning)
        client.get_collection("cfg_audit").modify(
            configuration={"hnsw": {"sync_threshold": 1000}})
    with ChromaBackend(client, collection_prefix="cfg_") as b:
        b.ensure_collection("audit", 0)
    assert client.get_collection("cfg_audit").configuration_json["hnsw"]["sync_threshold"] == 10


# --- write-ahead intents ------------------------------------------------------------------


def _two_collections(b: ChromaBackend) -> None:
    b.ensure_collection("mem", 4)
    b.ensure_collection("log", 0)


@needs_chroma
@pytest.mark.parametrize("intents", ["file", "collection"])
def test_leftover_intent_is_replayed_on_open(tmp_path: pathlib.Path, intents: Any) -> None:
    with ChromaBackend(path=tmp_path, intents=intents) as b:
        _two_collections(b)
        b.upsert("mem", [Record(uid(1), vec(1.0), "old", {"k": 1}),
                         Record(uid(2), vec(0.0, 1.0), "doomed", {})])
        ops = [UpsertOp("mem", (Record(uid(3), vec(0.0, 0.0, 1.0), "new", {"k": 3}),)),
               UpsertOp("mem", (Record(uid(1), None, "edited", {"k": 2}),)),
               DeleteOp("mem", (uid(2),)),
               UpsertOp("log", (Record(uid(9), None, "entry", {"op": "x"}),))]
        b._wal.begin(ops)  # the process "dies" before applying anything
        assert len(b.get("mem")) == 2 and b.get("log") == []
    with ChromaBackend(path=tmp_path, intents=intents) as b:
        docs = {r.id: (r.document, dict(r.metadata)) for r in b.get("mem")}
        assert docs == {uid(1): ("edited", {"k": 2}), uid(3): ("new", {"k": 3})}
        (kept,) = b.get("mem", [uid(1)], with_vectors=True)
        np.testing.assert_allclose(kept.vector, vec(1.0), atol=1e-6)  # type: ignore[arg-type]
        assert [r.document for r in b.get("log")] == ["entry"]
        assert b._wal.pending() == []


@needs_chroma
def test_replay_after_a_partial_apply_converges(tmp_path: pathlib.Path) -> None:
    """Replaying from any prefix gives the state of one clean apply (ops are idempotent)."""
    ops = [UpsertOp("mem", (Record(uid(1), None, "kept vector", {"v": 1}),)),
           DeleteOp("mem", (uid(1),)),
           UpsertOp("mem", (Record(uid(1), vec(0.0, 1.0), "re-created", {"v": 2}),)),
           UpsertOp("mem", (Record(uid(1), None, "edited again", {"v": 3}),))]
    expected = None
    for prefix in range(len(ops) + 1):
        path = tmp_path / f"p{prefix}"
        with ChromaBackend(path=path) as b:
            _two_collections(b)
            b.upsert("mem", [Record(uid(1), vec(1.0), "original", {"v": 0})])
            b._wal.begin(ops)
            b._apply(ops[:prefix], replay=False)  # crash after `prefix` operations
        with ChromaBackend(path=path) as b:
            state = [(r.id, r.document, dict(r.metadata), np.round(r.vector, 5).tolist())
                     for r in b.get("mem", with_vectors=True)]
        expected = expected or state
        assert state == expected, prefix
    assert expected is not None and expected[0][1] == "edited again"


@needs_chroma
@pytest.mark.parametrize("intents", ["file", "collection"])
def test_incomplete_intent_is_discarded(tmp_path: pathlib.Path, intents: Any) -> None:
    with ChromaBackend(path=tmp_path, intents=intents) as b:
        _two_collections(b)
        b._wal._part_chars = 50  # split intents into several parts
        intent = b._wal.begin([UpsertOp("mem", (Record(uid(1), vec(1.0), "x" * 200, {}),))])
        assert len(intent.record_ids) > 2
        b._wal._store.delete_intents(intent.record_ids[-1:])  # the last part never landed
    with ChromaBackend(path=tmp_path, intents=intents) as b:
        assert b.get("mem") == []
        assert b._wal._store.read_intents() == []


@needs_chroma
def test_failure_mid_batch_is_completed_by_the_next_write(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ChromaBackend(path=tmp_path) as b:
        _two_collections(b)
        log = b._lookup("log")
        assert log is not None
        calls = {"n": 0}
        real = log.handle.upsert

        def flaky(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            raise RuntimeError("connection reset")

        monkeypatch.setattr(log.handle, "upsert", flaky)
        batch = (WriteBatch().upsert("mem", [Record(uid(1), vec(1.0), "a", {})])
                 .upsert("log", [Record(uid(2), None, "b", {})]))
        with pytest.raises(MarsBackendError, match="next write"):
            b.apply(batch)
        assert [r.id for r in b.get("mem")] == [uid(1)] and b.get("log") == []
        monkeypatch.setattr(log.handle, "upsert", real)
        b.upsert("mem", [Record(uid(3), vec(0.0, 1.0), "c", {})])  # completes the batch first
        assert [r.document for r in b.get("log")] == ["b"]
        assert calls["n"] == 1 and b._wal.pending() == []


@needs_chroma
def test_large_upserts_are_chunked_through_an_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    with ChromaBackend() as b:
        b._max_batch = 3
        b.ensure_collection("mem", 4)
        records = [Record(uid(i), vec(1.0, i), f"d{i}", {"i": i}) for i in range(10)]
        begun = intents_begun(b, monkeypatch)
        b.upsert("mem", records)
        b.upsert("mem", [Record(r.id, None, "edited", {"i": -1}) for r in records])
        assert len(begun) == 2
        got = b.get("mem", [uid(9), uid(0)], with_vectors=True)
        assert [r.id for r in got] == [uid(9), uid(0)]
        assert {r.document for r in b.get("mem")} == {"edited"}
        assert b.get("mem", where=Eq("i", -1)) and not b.get("mem", where=Range("i", gte=0))


@needs_chroma
def test_intent_on_a_server_is_replayed_by_the_next_client(chroma_server: ChromaServer,
                                                          tmp_path: pathlib.Path) -> None:
    def connect() -> ChromaBackend:
        return ChromaBackend(host=chroma_server.host, port=chroma_server.port,
                             collection_prefix=prefix_for(tmp_path))

    with connect() as b:
        _two_collections(b)
        b._wal.begin([UpsertOp("mem", (Record(uid(1), vec(1.0), "a", {}),)),
                      UpsertOp("log", (Record(uid(2), None, "b", {}),))])
    with connect() as b:  # a shared client leaves it to the writer (it may be in flight)
        assert b.pending_batches() == 1 and b.get("mem") == []
        assert b.recover() == 1  # the store that takes the writer lease does this
        assert [r.document for r in b.get("mem")] == ["a"]
        assert [r.document for r in b.get("log")] == ["b"]
        assert b.pending_batches() == 0
    with connect() as b:
        b._wal.begin([UpsertOp("log", (Record(uid(3), None, "c", {}),))])
    with connect() as b:  # ... not even before its own first write: only when asked
        b.upsert("log", [Record(uid(4), None, "d", {})])
        assert sorted(r.document for r in b.get("log")) == ["b", "d"]
        assert b.pending_batches() == 1
    with ChromaBackend(host=chroma_server.host, port=chroma_server.port, recover=True,
                       collection_prefix=prefix_for(tmp_path)) as b:
        b._wal.begin([UpsertOp("log", (Record(uid(5), None, "e", {}),))])
    with ChromaBackend(host=chroma_server.host, port=chroma_server.port, recover=True,
                       collection_prefix=prefix_for(tmp_path)) as b:  # asked to: at open
        assert b.pending_batches() == 0 and len(b.get("log")) == 4


@needs_chroma
def test_intents_option_is_checked() -> None:
    with pytest.raises(ValidationError, match="intents"):
        ChromaBackend(intents="file")
    with pytest.raises(ValidationError, match="intents"):
        ChromaBackend(intents="disk")  # type: ignore[arg-type]


def test_file_intents_are_durable_and_tidy(tmp_path: pathlib.Path) -> None:
    from mars_core.backends.wal import FileIntentStore

    store = FileIntentStore(tmp_path)
    store.write_intent([Record("a", None, "é ✓", {"intent": "i", "part": 0, "parts": 1})])
    (tmp_path / "b.intent.json.tmp").write_text("half written")
    (got,) = store.read_intents()
    assert (got.id, got.document, dict(got.metadata)) == (
        "a", "é ✓", {"intent": "i", "part": 0, "parts": 1})
    assert not (tmp_path / "b.intent.json.tmp").exists()
    (tmp_path / "c.intent.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match=r"c\.intent\.json"):
        store.read_intents()


def test_unreadable_intent_is_a_corrupt_store_error() -> None:
    from mars_core.backends.wal import decode_ops, encode_ops

    ops = [UpsertOp("mem", (Record(uid(1), vec(0.5, 0.25), "d", {"k": 1.0, "b": True}),)),
           DeleteOp("mem", (uid(2),))]
    (up, down) = decode_ops(encode_ops(ops))
    assert isinstance(up, UpsertOp) and isinstance(down, DeleteOp)
    assert up.records[0].vector.tobytes() == vec(0.5, 0.25).tobytes()  # type: ignore[union-attr]
    assert dict(up.records[0].metadata) == {"k": 1.0, "b": True}
    assert type(up.records[0].metadata["k"]) is float
    for garbage in ("{", '{"format": "other"}', encode_ops(ops).replace('"r":', '"x":')):
        with pytest.raises(CorruptStoreError, match="_wal"):
            decode_ops(garbage)


# --- whole stores ---------------------------------------------------------------------------


@needs_chroma
def test_store_round_matches_in_memory(tmp_path: pathlib.Path) -> None:
    expected = store_round(lambda: InMemoryBackend(tmp_path / "memory"))
    got = store_round(lambda: ChromaBackend(path=tmp_path / "chroma"))
    assert expected["archived"] and expected["verified"]
    assert got == expected


@needs_chroma
def test_store_round_on_a_server_matches_in_memory(
    tmp_path: pathlib.Path, chroma_server: ChromaServer
) -> None:
    expected = store_round(lambda: InMemoryBackend(tmp_path / "memory"))
    got = store_round(lambda: ChromaBackend(host=chroma_server.host, port=chroma_server.port,
                                            collection_prefix=prefix_for(tmp_path)))
    assert got == expected


# --- crash loop: SIGKILL a writer at random, reopen, check every batch is whole -------------

WRITER = writer_script("from mars_core.backends.chroma import ChromaBackend", "ChromaBackend")


@needs_chroma
@pytest.mark.slow
def test_sigkill_writer_loop_reopens_consistently(tmp_path: pathlib.Path) -> None:
    sigkill_loop(tmp_path, WRITER, lambda p: ChromaBackend(path=p), seed=7, max_sleep=0.6,
                 vectors=True)
