"""ChromaIndex: the filter translator, the vector-index conformance suite (ephemeral, on
disk, and a real ``chroma run`` server), and what only Chroma needs."""

from __future__ import annotations

import math
import pathlib
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from chroma_server import prefix_for, server_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_strategies import assert_filters_agree, filter_strategies

from mars_core.errors import ConflictError, ValidationError
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

pytest.importorskip("chromadb", reason="chromadb is not installed (pip install "
                    "'mars-memory[chroma]')")

from mars_core.index.chroma import NUMERIC_FLAG, ChromaIndex, to_chroma_where

if TYPE_CHECKING:
    from chroma_server import ChromaServer

ACTIVE = MemoryStatus.ACTIVE


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
    """Fields as the index stores them (with the hidden numeric flags)."""
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(flts=st.lists(filters, min_size=1, max_size=6),
       metas=st.lists(metadata, min_size=1, max_size=15))
def test_translation_agrees_with_real_chroma(
    flts: list[Filter], metas: list[dict[str, MetaValue]]
) -> None:
    with ChromaIndex() as index:
        assert_filters_agree(index, flts, metas)


# --- the conformance suite ----------------------------------------------------------------


class TestChromaEphemeral(VectorIndexConformance):
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return ChromaIndex()


class TestChromaPersistent(VectorIndexConformance):
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return ChromaIndex(path=path)


class TestChromaPersistentReopening(VectorIndexConformance):
    """On disk with a client reopened before nearly every call (one loaded collection)."""

    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return ChromaIndex(path=path, max_loaded_collections=1)


class TestChromaHTTP(VectorIndexConformance):
    """Against the session's ``chroma run`` server; each test path gets its own prefix."""

    server: ChromaServer

    @pytest.fixture(autouse=True)
    def _server(self, chroma_server: ChromaServer) -> None:
        self.server = chroma_server

    def make_index(self, path: pathlib.Path) -> VectorIndex:
        return server_index("chroma-http", self.server, prefix_for(path))


# --- Chroma specifics ---------------------------------------------------------------------


def test_ephemeral_indexes_are_isolated() -> None:
    with ChromaIndex() as a, ChromaIndex() as b:
        a.bind("s", 4, lambda ns: [])
        b.bind("s", 4, lambda ns: [])
        a.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})])
        assert b.query("u1", ACTIVE, vec(1.0), 3) == []
        assert [i for i, _ in a.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]


def test_loaded_collections_are_freed_by_reopening_the_client(
        tmp_path: pathlib.Path) -> None:
    """A writer touching many namespaces reopens its client every few collections;
    every entry stays where it was written, moved or deleted."""
    rows = [IndexRow(uid(n), f"user-{n % 12}", ACTIVE, vec(1.0, n), {}) for n in range(48)]
    with ChromaIndex(path=tmp_path, max_loaded_collections=4) as index:
        index.bind("s:v1", 4, lambda ns: [])
        for row in rows:
            index.upsert([row], new=True)
        moved = [IndexRow(r.id, r.namespace, MemoryStatus.ARCHIVED, r.vector, {})
                 for r in rows[:12]]
        index.upsert(moved)
        index.delete("user-1", [uid(13)])
        assert index.reopens >= 5
        for ns in range(12):
            expected = {r.id for r in rows if r.namespace == f"user-{ns}"} - {uid(13)}
            active = {i for i, _ in index.query(f"user-{ns}", ACTIVE, vec(1.0), 10)}
            archived = {i for i, _ in index.query(f"user-{ns}", MemoryStatus.ARCHIVED,
                                                  vec(1.0), 10)}
            assert active | archived == expected and active.isdisjoint(archived)
            assert archived == {uid(ns)}
    with pytest.raises(ValidationError):
        ChromaIndex(max_loaded_collections=0)


def test_a_directory_is_used_by_one_index_at_a_time(tmp_path: pathlib.Path) -> None:
    first = ChromaIndex(path=tmp_path)
    with pytest.raises(ConflictError, match="one process at a time"):
        ChromaIndex(path=tmp_path)
    first.close()
    with ChromaIndex(path=tmp_path) as again:
        assert again.bind("s", 4, lambda ns: []) == 0


def test_field_names_chroma_cannot_hold_are_refused_before_writing() -> None:
    with ChromaIndex() as index:
        index.bind("s", 4, lambda ns: [])
        good = IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {"k": 1})
        for key in ("#k", "chroma:document"):
            bad = IndexRow(uid(2), "u2", ACTIVE, vec(1.0), {key: 1})
            with pytest.raises(ValidationError, match="Chroma"):
                index.upsert([good, bad])
        assert index.query("u1", ACTIVE, vec(1.0), 3) == []


def test_prefixes_keep_stores_apart_on_one_client() -> None:
    with ChromaIndex() as owner:  # its private database, shared by the two below
        shared = owner._client
        with ChromaIndex(shared, prefix="one_") as one, ChromaIndex(shared, prefix="two_") as two:
            one.bind("s", 4, lambda ns: [])
            two.bind("s", 4, lambda ns: [])
            one.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})])
            two.upsert([IndexRow(uid(2), "u1", ACTIVE, vec(1.0), {})])
            two.clear()
            assert [i for i, _ in one.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]
            assert two.query("u1", ACTIVE, vec(1.0), 3) == []


# --- stamps, and the state an index kept before the records kept its position ---------------


def write_old_state(path: pathlib.Path, identity: str, applied: int,
                    prefix: str = "mars_") -> None:
    """The state collection as releases before stamps wrote it: an empty-metadata
    collection holding one record with the index's identity and mark (raw chromadb)."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path),
                                       settings=Settings(anonymized_telemetry=False))
    try:
        client.delete_collection(prefix + "state")
        col = client.create_collection(prefix + "state", metadata={"mars_dim": 4},
                                       configuration={"hnsw": {"space": "cosine"}},
                                       embedding_function=None)
        col.upsert(ids=["state"], embeddings=[[1.0]],
                   metadatas=[{"identity": identity, "applied": applied}])
    finally:
        client.close()


def test_the_stamp_is_catalogue_metadata_and_a_mark_writes_nothing(
        tmp_path: pathlib.Path) -> None:
    """The state collection holds no record: the stamp is its metadata, which Chroma
    reads from its catalogue without loading the collection."""
    with ChromaIndex(path=tmp_path) as index:
        index.bind("s:v1", 4, lambda ns: [])
        index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})], new=True)
        index.mark(5)
        state = index._client.get_collection("mars_state", embedding_function=None)
        assert state.metadata["mars_stamp"] == index.stamp and state.count() == 0


@pytest.mark.parametrize("identity", ["s:v1", "s:v2"], ids=["same", "another-version"])
def test_an_index_written_before_stamps_is_emptied_and_stamped(
        tmp_path: pathlib.Path, identity: str) -> None:
    """The mark such an index kept is not read: it starts empty under a fresh stamp (the
    store rebuilds it from the records), and its position is the records' from then on."""
    rows = [IndexRow(uid(n), "u1", ACTIVE, vec(1.0, n), {}) for n in range(3)]
    with ChromaIndex(path=tmp_path) as index:
        index.bind("s:v1", 4, lambda ns: [])
        index.upsert(rows, new=True)
    write_old_state(tmp_path, "s:v1", 7)
    with ChromaIndex(path=tmp_path) as index:
        assert index.bind(identity, 4, lambda ns: [], {}) == 0
        stamp = index.stamp
        assert stamp.startswith(identity + "#")
        assert index.query("u1", ACTIVE, vec(1.0), 5) == []
        index.upsert(rows, new=True)
    with ChromaIndex(path=tmp_path) as index:
        assert index.bind(identity, 4, lambda ns: [], {stamp: 9}) == 9
        assert index.stamp == stamp
        assert len(index.query("u1", ACTIVE, vec(1.0), 5)) == 3


def test_sync_threshold_is_checked_and_given_to_new_collections(
        tmp_path: pathlib.Path) -> None:
    for bad in (1, 0, True, 2.5):
        with pytest.raises(ValidationError, match="sync_threshold"):
            ChromaIndex(sync_threshold=bad)  # type: ignore[arg-type]
    with ChromaIndex(path=tmp_path, sync_threshold=5) as index:
        index.bind("s:v1", 4, lambda ns: [])
        index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})], new=True)
        (name,) = index._ours()
        hnsw = index._client.get_collection(name).configuration_json["hnsw"]
        assert hnsw["sync_threshold"] == 5


def test_loaded_vectors_are_bounded_by_reopening_the_client(tmp_path: pathlib.Path) -> None:
    """Collections of more than ``max_loaded_vectors`` vectors together are freed by a
    reopen when another namespace is used; one namespace larger than the bound, used
    alone, is not reopened again and again."""
    rows = [IndexRow(uid(n), f"user-{n % 4}", ACTIVE, vec(1.0, n), {}) for n in range(16)]
    big = [IndexRow(uid(100 + n), "big", ACTIVE, vec(1.0, n), {}) for n in range(12)]
    with ChromaIndex(path=tmp_path, max_loaded_vectors=6) as index:
        index.bind("s:v1", 4, lambda ns: [])
        index.upsert(rows + big, new=True)
    with ChromaIndex(path=tmp_path, max_loaded_vectors=6) as index:
        index.bind("s:v1", 4, lambda ns: [])
        for ns in range(4):  # 4 vectors each: a reopen every second namespace
            found = {i for i, _ in index.query(f"user-{ns}", ACTIVE, vec(1.0), 10)}
            assert found == {r.id for r in rows if r.namespace == f"user-{ns}"}
        assert index.reopens == 1
        for _ in range(3):  # 12 vectors alone: loaded once, kept
            assert len(index.query("big", ACTIVE, vec(1.0), 20)) == 12
        assert index.reopens == 2
    with pytest.raises(ValidationError):
        ChromaIndex(max_loaded_vectors=0)


# --- an active partition that churns -----------------------------------------------------


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=8).astype(np.float32)
    return v / np.linalg.norm(v)


def _active_slots(directory: pathlib.Path, namespace: str) -> int:
    """The HNSW slots of a namespace's active partition, from its header on disk."""
    import sqlite3

    from mars_core.index._hnsw import element_count
    from mars_core.index.chroma import partition_name

    name = partition_name("mars_", namespace, ACTIVE)
    conn = sqlite3.connect(directory / "chroma.sqlite3")
    ids = [r[0] for r in conn.execute(
        "SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection "
        "WHERE c.name = ? AND s.scope = 'VECTOR'", (name,))]
    conn.close()
    return sum(element_count(directory / i) for i in ids)


def test_an_active_partition_that_churns_is_rebuilt_without_its_dead_slots(
        tmp_path: pathlib.Path) -> None:
    """A full budget archives one memory for each it gains: Chroma keeps every dropped
    vector's slot, so without a rebuild the active graph grows with the history."""
    rng = np.random.default_rng(3)
    live: dict[str, np.ndarray] = {}
    archived: dict[str, np.ndarray] = {}
    with ChromaIndex(path=tmp_path) as index:
        index.bind("churn", 8, lambda ns: [])
        for n in range(20):  # 256 in, the oldest 256 out, each round: 4,608 moved
            new = {uid(n * 256 + i): _unit(rng) for i in range(256)}
            index.upsert([IndexRow(k, "m", ACTIVE, v, {"type": "episodic"})
                          for k, v in new.items()], new=True)
            live.update(new)
            if len(live) > 512:
                out = list(live)[:256]
                index.upsert([IndexRow(k, "m", MemoryStatus.ARCHIVED, live[k],
                                       {"type": "episodic", "n": 1}) for k in out], new=False)
                archived.update((k, live.pop(k)) for k in out)
        probe = _unit(rng)
        found = index.query("m", ACTIVE, probe, k=1000)
        assert sorted(i for i, _ in found) == sorted(live)
        assert sorted(i for i, _ in index.query("m", MemoryStatus.ARCHIVED, probe, k=10_000)
                      ) == sorted(archived)
        best = max(live, key=lambda k: float(live[k] @ probe))
        assert found[0][0] == best
    assert len(archived) == 4_608
    assert _active_slots(tmp_path, "m") <= len(live) + 2_048 + 512  # not ~4,600


def test_an_open_after_a_rebuild_cut_short_rebuilds_the_namespace_from_the_records(
        tmp_path: pathlib.Path) -> None:
    """What a crash between dropping a partition and writing it again leaves (the
    collection gone, ``mars-rebuilding`` naming it): the next use rebuilds the namespace
    from the records, and says it repaired it."""
    import chromadb
    from chromadb.config import Settings

    from mars_core.index.chroma import partition_name

    rng = np.random.default_rng(4)
    rows = [IndexRow(uid(i), "m", ACTIVE if i < 10 else MemoryStatus.ARCHIVED, _unit(rng),
                     {"type": "episodic"}) for i in range(15)]
    with ChromaIndex(path=tmp_path) as index:
        index.bind("cut", 8, lambda ns: [])
        index.upsert(rows, new=True)
    name = partition_name("mars_", "m", ACTIVE)
    client = chromadb.PersistentClient(path=str(tmp_path), settings=Settings(
        anonymized_telemetry=False))
    client.delete_collection(name)
    client.close()
    (tmp_path / "mars-rebuilding").write_text(name)
    (tmp_path / "mars-closed").unlink()
    with ChromaIndex(path=tmp_path) as index:
        index.bind("cut", 8, lambda ns: rows if ns == "m" else [])
        found = index.query("m", ACTIVE, rows[0].vector, k=50)
        assert sorted(i for i, _ in found) == sorted(r.id for r in rows[:10])
        assert index.repaired == ["m"]
        assert not (tmp_path / "mars-rebuilding").exists()


def test_a_rebuild_removes_the_dropped_files_at_once(tmp_path: pathlib.Path) -> None:
    """A long-running process rebuilds many times between closes: each rebuild's dropped
    segment directory goes with it, not at the close."""
    rng = np.random.default_rng(5)
    rows = [IndexRow(uid(i), "m", ACTIVE, _unit(rng), {"type": "episodic"}) for i in range(40)]
    with ChromaIndex(path=tmp_path) as index:
        index.bind("drop", 8, lambda ns: rows if ns == "m" else [])
        index.upsert(rows, new=True)
        before = {p.name for p in tmp_path.iterdir() if p.is_dir()}
        index.compact(["m"])
        after = {p.name for p in tmp_path.iterdir() if p.is_dir()}
        assert len(after) == len(before) and after != before  # one new in place of one old
        assert sorted(i for i, _ in index.query("m", ACTIVE, rows[0].vector, k=50)) == sorted(
            r.id for r in rows)


def test_an_index_on_a_server_loads_no_certificates_to_speak_plain_http(
        chroma_server: ChromaServer, tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chroma server is reached over plain HTTP, where no certificate is checked: the
    client builds no verifying TLS context (loading the machine's CA bundle cost ~65 ms
    to ~130 ms a context, two a client, at every open of a store on a server)."""
    import ssl

    made: list[object] = []
    real = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    with server_index("chroma-http", chroma_server, prefix_for(tmp_path)) as index:
        index.bind("s", 4, lambda ns: [])
        index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})])
        assert [i for i, _ in index.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]
    assert made == []


def test_an_open_reads_chromas_settings_from_the_environment_once_per_process(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's ``Settings()`` reads every ``CHROMA_*`` variable through pydantic-settings
    (~7 ms): the index builds them once a process and hands each client its own copy
    (a client writes into the settings it is given)."""
    from chromadb.config import Settings

    ChromaIndex(path=tmp_path / "first").close()  # the process's first open may build them
    built: list[dict[str, Any]] = []
    real = Settings.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Settings, "__init__", counted)
    with ChromaIndex(path=tmp_path / "disk") as on_disk, ChromaIndex() as ephemeral:
        for index in (on_disk, ephemeral):
            index.bind("s", 4, lambda ns: [])
            index.upsert([IndexRow(uid(1), "u1", ACTIVE, vec(1.0), {})])
            assert [i for i, _ in index.query("u1", ACTIVE, vec(1.0), 3)] == [uid(1)]
    assert built == []
