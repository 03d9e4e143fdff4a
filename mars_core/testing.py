"""Test helpers for mars-memory and for people who extend it: one conformance suite per
storage interface.

A conformance suite is a reusable test class (in the manner of LangChain's standard
tests): subclass it in a ``test_*.py`` file, name the subclass ``Test...``, implement its
one factory method, and pytest runs every ``test_*`` method against your implementation,
through the protocol only.

* :class:`RecordStoreConformance` — a :class:`~mars_core.storage.base.RecordStore` (the
  system of record): implement ``make_records``.
* :class:`VectorIndexConformance` — a :class:`~mars_core.index.base.VectorIndex` (a
  derived, rebuildable index): implement ``make_index``.

And :class:`CountingEmbedder`, an embedder that records how it was called (to check
that many texts arriving at once are embedded in one call).

pytest is a *test* dependency (``pip install 'mars-memory[dev]'``): this module imports it
lazily, inside the tests, so importing ``mars_core.testing`` needs only mars-memory's own
dependencies, and running the suites needs pytest.

Example (in ``tests/test_my_records.py``):
    >>> import pathlib
    >>> from mars_core.storage import SQLiteRecordStore
    >>> from mars_core.testing import RecordStoreConformance
    >>> class TestMyRecords(RecordStoreConformance):
    ...     durable = True
    ...     def make_records(self, path: pathlib.Path) -> SQLiteRecordStore:
    ...         return SQLiteRecordStore(path / "mars.sqlite3")
    >>> "test_failed_write_rolls_back_everything" in dir(TestMyRecords)
    True
"""

from __future__ import annotations

import abc
import contextlib
import itertools
import math
import pathlib
import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, NoReturn

import numpy as np
import numpy.typing as npt

from mars_core.analysis import terms as analysed_terms
from mars_core.audit import GENESIS, AuditChain, AuditEvent
from mars_core.errors import (
    ConflictError,
    EmbeddingMismatchError,
    StoreClosedError,
    ValidationError,
)
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexCapabilities,
    MetaValue,
    Not,
    Or,
    Range,
    VectorIndex,
    exact_cosines,
    matches,
)
from mars_core.model import (
    Consent,
    Edge,
    EpisodicPayload,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
    TaskStatus,
    default_payload,
)
from mars_core.storage.base import (
    Change,
    IndexRow,
    NamespaceRecord,
    NamespaceTotals,
    RecordCapabilities,
    RecordStore,
    RecordTxn,
    TermQuery,
    index_fields,
)

__all__ = ["CountingEmbedder", "CountingRecords", "RecordStoreConformance",
           "VectorIndexConformance"]

Vector = npt.NDArray[np.float32]

ACTIVE, ARCHIVED = MemoryStatus.ACTIVE, MemoryStatus.ARCHIVED
_T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
_TYPES = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.SOCIAL, MemoryType.TASK)
_AUDIT_KEY = b"conformance-audit-key-0123456789"


_COUNTED = frozenset({"memories", "memories_by_id", "memory"})
"""The reads of a record store that return memories (what :class:`CountingRecords`
counts)."""


class _CountingTxn:
    """A transaction that hands every call to another one, counting the memories its
    reads return."""

    def __init__(self, inner: RecordTxn, owner: CountingRecords) -> None:
        self._inner, self._owner = inner, owner

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in _COUNTED:
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = found(*args, **kwargs)
            self._owner.memories_read += 0 if out is None else 1 if isinstance(
                out, MemoryNode) else len(out)
            return out
        return counted


class CountingRecords:
    """A record store that hands everything to another one and counts the memories its
    reads return: how much of a namespace's history a call read.

    Args:
        inner: the record store that keeps the rows (default: SQLite in RAM).

    Attributes:
        memories_read: memories returned by reads so far (set it to 0 to start again).

    Examples:
        >>> from mars_core import MemoryStore
        >>> records = CountingRecords()
        >>> with MemoryStore(records=records) as store:
        ...     _ = store.add("Ana likes tea")
        ...     records.memories_read = 0
        ...     _ = store.retrieve("tea", read_only=True)
        >>> records.memories_read
        0
    """

    def __init__(self, inner: RecordStore | None = None) -> None:
        from mars_core.storage import SQLiteRecordStore

        self.inner = inner if inner is not None else SQLiteRecordStore()
        self.name, self.location = self.inner.name, self.inner.location
        self.capabilities = self.inner.capabilities
        self.memories_read = 0

    @contextlib.contextmanager
    def _counting(self, opened: contextlib.AbstractContextManager[RecordTxn]
                  ) -> Iterator[RecordTxn]:
        with opened as tx:
            yield _CountingTxn(tx, self)

    def read(self) -> contextlib.AbstractContextManager[RecordTxn]:
        """The inner store's snapshot, counted."""
        return self._counting(self.inner.read())

    def write(self, *, durable: bool = True) -> contextlib.AbstractContextManager[RecordTxn]:
        """The inner store's transaction, counted."""
        return self._counting(self.inner.write(durable=durable))

    def next_counter(self) -> int:
        """The inner store's counter."""
        return self.inner.next_counter()

    def purge(self) -> str:
        """The inner store's purge."""
        return self.inner.purge()

    def close(self) -> None:
        """Close the inner store."""
        self.inner.close()


class CountingEmbedder:
    """An embedder that hands the work to another one and records each call's batch.

    Args:
        inner: the embedder that computes the vectors (default: the hashing embedder);
            its ``name`` and ``dim`` are this one's, so a store sees no difference.

    Attributes:
        batches: the number of texts of each ``embed`` call, in order.

    Examples:
        >>> from mars_core import MemoryStore
        >>> counting = CountingEmbedder()
        >>> with MemoryStore(budget=500, embedder=counting) as store:
        ...     _ = store.add_many(["Ana likes tea", "Bo plays jazz", "Cy runs"])
        >>> counting.batches
        [3]
    """

    def __init__(self, inner: Any = None) -> None:
        from mars_core.embeddings import HashingEmbedder

        self.inner = inner if inner is not None else HashingEmbedder()
        self.name: str = self.inner.name
        self.dim: int = self.inner.dim
        self.batches: list[int] = []

    @property
    def calls(self) -> int:
        """How many times ``embed`` was called."""
        return len(self.batches)

    def embed(self, texts: Sequence[str]) -> Vector:
        """The inner embedder's vectors (the call is recorded first)."""
        self.batches.append(len(texts))
        out: Vector = np.asarray(self.inner.embed(texts), dtype=np.float32)
        return out


def _raises(*exc: type[BaseException], match: str | None = None) -> Any:
    """``pytest.raises(exc, match=match)`` (pytest imported only when a test runs)."""
    import pytest

    return pytest.raises(exc, match=match)


def _skip(reason: str) -> NoReturn:
    import pytest

    pytest.skip(reason)


def _uid(n: int) -> str:
    """A deterministic canonical UUID string; their order is the order of ``n``."""
    return str(uuid.UUID(int=n + 1))


def _payload(mtype: MemoryType) -> EpisodicPayload | SemanticPayload | SocialPayload | TaskPayload:
    if mtype is MemoryType.EPISODIC:
        return EpisodicPayload(event="met Ana", context="café ☕", participants=("Ana", "Bo"),
                               emotional_valence=-0.25)
    if mtype is MemoryType.SEMANTIC:
        return SemanticPayload(concept="Ana", relations=(("worksAt", "Acme"),), confidence=0.75,
                               generality=0.125)
    if mtype is MemoryType.SOCIAL:
        return SocialPayload(entity="Ana", relationship_type="sister",
                             attributes={"city": "Zürich"}, interaction_history=(_uid(90),))
    return TaskPayload(goal="ship it", status=TaskStatus.ACTIVE, dependencies=(_uid(91),),
                       priority=0.875, deadline=_T0 + timedelta(days=3))


# =====================================================================================
# Record store conformance suite
# =====================================================================================


class RecordStoreConformance(abc.ABC):
    """Protocol tests every :class:`~mars_core.storage.base.RecordStore` must pass.

    Subclass it in a test module, name the subclass ``Test...`` and implement
    :meth:`make_records`. Each test opens its own store under pytest's ``tmp_path`` and
    closes it at the end.

    Attributes:
        durable: reopening the same path keeps the data; enables the reopen tests
            (write, close, :meth:`reopen`, compare) and, when :meth:`reopen` supports
            it, the ``read_only`` ones.
        dim: dimension of the test vectors.

    Examples:
        >>> import pathlib
        >>> from mars_core.storage import SQLiteRecordStore
        >>> class TestInRAM(RecordStoreConformance):
        ...     def make_records(self, path: pathlib.Path) -> SQLiteRecordStore:
        ...         return SQLiteRecordStore()
        >>> records = TestInRAM().make_records(pathlib.Path("unused"))
        >>> records.capabilities.durable == TestInRAM.durable
        True
        >>> records.close()
    """

    durable: ClassVar[bool] = False
    dim: ClassVar[int] = 8

    @abc.abstractmethod
    def make_records(self, path: pathlib.Path) -> RecordStore:
        """A new record store; a durable one keeps its data under ``path`` (a directory
        that may not exist yet)."""

    def reopen(self, path: pathlib.Path, *, read_only: bool = False) -> RecordStore:
        """The store at ``path`` again (durable stores); ``read_only=True`` opens it only
        to read. The default reopens with :meth:`make_records` and skips ``read_only``."""
        if read_only:
            _skip("override reopen(path, read_only=True) to test read-only opens")
        return self.make_records(path)

    # --- helpers ------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_records(self, path: pathlib.Path, *, again: bool = False,
                     read_only: bool = False) -> Iterator[RecordStore]:
        """:meth:`make_records` (or :meth:`reopen`) as a context manager that closes it."""
        records = self.reopen(path, read_only=read_only) if again or read_only \
            else self.make_records(path)
        try:
            yield records
        finally:
            records.close()

    def vector(self, n: int) -> Vector:
        """A float32 vector with awkward values (-0.0, a subnormal, the largest float32)."""
        vec = np.random.default_rng(n).standard_normal(self.dim).astype(np.float32)
        vec[0], vec[1], vec[2] = -0.0, np.float32(1e-40), np.finfo(np.float32).max
        return vec

    def node(self, n: int, namespace: str = "ns-a", **update: Any) -> MemoryNode:
        """A memory with every field set (id ``_uid(n)``, ``seq`` n + 1), then ``update``."""
        mtype = update.pop("type", _TYPES[n % 4])
        odd = n % 2 == 1
        node = MemoryNode(
            id=_uid(n), type=mtype, payload=_payload(mtype), namespace=namespace,
            content=f"memory {n}: Ana said “hi” ✓\nsecond line",
            created_at=_T0 + timedelta(minutes=n, microseconds=n), step=n, seq=n + 1,
            sensitivity=(n % 5) / 8, weight=n + 1,
            provenance=Provenance(source="user", conversation_id=f"c{n % 2}" if n % 3 else None,
                                  session_id="s1", turn=n, reliability=0.5,
                                  consent=Consent.GRANTED, jurisdiction="EU",
                                  derived_from=(_uid(n + 100),), external_id=f"ext-{n}"),
            access_count=n, last_access_at=_T0 + timedelta(hours=n) if odd else None,
            last_access_step=n if odd else None, activated_seq=n, touch_seq=n + 10,
            depth=n % 3, pinned=not odd, expires_at=_T0 + timedelta(days=30) if odd else None,
            signals={"omega": 0.1 * n, "third": 1 / 3},
            metadata={"tags": ["a", "é"], "nested": {"x": 1, "y": [True, None, 2.5]}, "n": n})
        return node.model_copy(update=update) if update else node

    def insert(self, records: RecordStore, *nodes: MemoryNode) -> None:
        """Insert memories (vector :meth:`vector` of their ``seq - 1``) in one write."""
        with records.write() as tx:
            for node in nodes:
                tx.insert_memory(node, self.vector(node.seq - 1))

    def audit_events(self) -> tuple[list[AuditEvent], list[AuditEvent]]:
        """Three events of ``ns-a``'s chain and two of ``ns-b``'s (the second event of
        ``ns-a`` names memory 1 twice)."""
        chain = AuditChain(_AUDIT_KEY)
        out: list[list[AuditEvent]] = []
        for ns, count in (("ns-a", 3), ("ns-b", 2)):
            txn = chain.begin(ns, 0, GENESIS)
            for i in range(count):
                txn.add(op="insert" if i == 0 else "access", namespace=ns,
                        node_ids=(_uid(i), _uid(1)) if i else (_uid(i),),
                        rationale=f"event {i} ✓", step=i, at=_T0 + timedelta(seconds=i),
                        policy="lru", params={"k": i, "name": "x"},
                        features={_uid(i): {"score": 0.5 + i}}, score=0.25 * i,
                        contents={_uid(i): f"text {i}"})
            out.append(txn.events)
        return out[0], out[1]

    def populate(self, records: RecordStore) -> list[MemoryNode]:
        """A store holding one of everything; returns the memories."""
        nodes = [self.node(0), self.node(1), self.node(2, status=ARCHIVED),
                 self.node(3, "ns-b")]
        a, b = self.audit_events()
        with records.write() as tx:
            tx.put_manifest({"format": 1, "embedder": {"name": "hash", "dim": self.dim}})
            tx.set_counter(4)
            tx.put_namespace(NamespaceRecord("ns-a", 2, 3, 4, 3, a[-1].hash, {"p": [1, 2]}))
            tx.put_namespace(NamespaceRecord("ns-b", 1, 1, 1, 2, b[-1].hash))
            for node in nodes:
                tx.insert_memory(node, self.vector(node.seq - 1))
            tx.add_edges("ns-a", [Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM,
                                       target=_uid(1), weight=0.5, step=2)])
            tx.append_audit([*a, *b])
        return nodes

    def snapshot(self, records: RecordStore) -> dict[str, Any]:
        """Everything a store holds, comparable with ``==`` (vectors as bytes)."""
        with records.read() as tx:
            names = tx.namespace_names()
            ids = [ref.id for ns in names for ref in tx.refs(ns)]
            return {
                "manifest": tx.manifest(), "counter": tx.counter(), "names": names,
                "namespaces": [tx.namespace(ns) for ns in names],
                "memories": [tx.memories(ns) for ns in names],
                "refs": [tx.refs(ns) for ns in names],
                "edges": [sorted(tx.edges(ns), key=lambda e: e.key) for ns in names],
                "vectors": {i: v.tobytes() for i, v in tx.vectors(ids).items()},
                "rows": [(r.id, r.namespace, r.status, r.vector.tobytes(), dict(r.fields))
                         for r in tx.index_rows()],
                "audit": tx.audit(), "audit_size": tx.audit_size(),
                "changes": tx.changes(0), "last_change": tx.last_change(),
                "first_change": tx.first_change(), "totals": tx.totals(),
            }

    def assert_vector(self, got: Vector | None, expected: Vector) -> None:
        """``got`` is ``expected``, bit for bit, as float32."""
        assert got is not None, "vector missing"
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert got.tobytes() == expected.astype(np.float32).tobytes()

    # --- the store ----------------------------------------------------------------------

    def test_satisfies_protocol(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            assert isinstance(records.name, str) and records.name
            assert isinstance(records.location, str) and records.location
            assert isinstance(records.capabilities, RecordCapabilities)
            assert records.capabilities.durable is self.durable
            with records.read() as tx:
                assert isinstance(tx, RecordTxn)

    def test_fresh_store_is_empty(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records, records.read() as tx:
            assert (tx.manifest(), tx.counter(), tx.namespace_names(), tx.totals()) == \
                (None, 0, [], {})
            assert (tx.audit(), tx.audit_size(), tx.changes(0)) == ([], 0, [])
            assert (tx.last_change(), tx.first_change(), tx.memory(_uid(0))) == (0, 0, None)

    def test_manifest_and_counter_round_trip(self, tmp_path: pathlib.Path) -> None:
        manifest = {"format": 3, "embedder": {"name": "x", "dim": 8},
                    "ü": [1, 2.5, None, True, "✓"]}
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_manifest(manifest)
                tx.set_counter(41)
            with records.write() as tx:
                tx.set_counter(42)
            with records.read() as tx:
                assert (tx.manifest(), tx.counter()) == (manifest, 42)

    def test_namespace_records_round_trip(self, tmp_path: pathlib.Path) -> None:
        first = NamespaceRecord("maya", 1, 2, 3, 4, "f" * 64, {"policy": {"w": [0.5, 1]}})
        second = NamespaceRecord("maya", 2, 5, 6, 7, "e" * 64, {})
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(first)
                tx.put_namespace(NamespaceRecord("gone"))
            with records.read() as tx:
                assert (tx.namespace("maya"), tx.namespace("nobody")) == (first, None)
            with records.write() as tx:
                tx.put_namespace(second)
                tx.delete_namespace("gone")
            with records.read() as tx:
                assert (tx.namespace("maya"), tx.namespace("gone")) == (second, None)

    def test_lock_namespaces_returns_committed_versions(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(NamespaceRecord("ns-a", version=3))
                tx.put_namespace(NamespaceRecord("ns-c", version=1))
            with records.write() as tx:
                assert tx.lock_namespaces(["ns-b", "ns-a"]) == {"ns-a": 3, "ns-b": 0}
                tx.put_namespace(NamespaceRecord("ns-a", version=4))
                assert tx.lock_namespaces([]) == {}
            with records.write() as tx:
                assert tx.lock_namespaces(["ns-a", "ns-c"]) == {"ns-a": 4, "ns-c": 1}

    def test_index_positions_round_trip(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.read() as tx:
                assert tx.index_positions() == {}
            with records.write() as tx:
                tx.lock_index("chroma@http://a:1")
                tx.set_index_position("chroma@http://a:1", 4)
                tx.set_index_position("qdrant@http://b:2", 2)
                tx.put_manifest({"format": 2})  # another meta row is no index
            with records.write() as tx:
                tx.lock_index("chroma@http://a:1")
                tx.set_index_position("chroma@http://a:1", 7)
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@http://a:1": 7,
                                                "qdrant@http://b:2": 2}
                assert tx.index_stamps() == {"chroma@http://a:1": "",
                                             "qdrant@http://b:2": ""}

    def test_index_stamps_stay_beside_their_positions(self, tmp_path: pathlib.Path) -> None:
        """A stamp (which may hold spaces) is kept until another is given; a dropped
        index is gone; a read transaction writes none of it."""
        stamp = "store-1:model name:8:0#4f2a"
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.set_index_position("chroma@/a", 3, stamp)
                tx.set_index_position("chroma@/b", 1, "")
            with records.write() as tx:
                tx.set_index_position("chroma@/a", 9)  # None: keeps the recorded stamp
                tx.set_index_position("chroma@/b", 2, "store-1:m:8:1#77")
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@/a": 9, "chroma@/b": 2}
                assert tx.index_stamps() == {"chroma@/a": stamp, "chroma@/b": "store-1:m:8:1#77"}
                writes: list[Callable[[], None]] = [
                    lambda: tx.set_index_position("chroma@/a", 10, "x"),
                    lambda: tx.drop_index_position("chroma@/a")]
                for call in writes:
                    with _raises(ConflictError):
                        call()
            with records.write() as tx:
                tx.drop_index_position("chroma@/a")
                tx.drop_index_position("never-registered")
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@/b": 2}
                assert tx.index_stamps() == {"chroma@/b": "store-1:m:8:1#77"}

    def test_next_counter_gives_fresh_numbers(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "records"
        with self.open_records(path) as records:
            with records.write() as tx:
                tx.set_counter(10)
            taken = [records.next_counter() for _ in range(3)]
            assert taken == sorted(set(taken)) and taken[0] > 10
            with records.read() as tx:
                assert tx.counter() >= taken[-1]
            with records.write() as tx:  # an import moves the counter past its numbers
                tx.set_counter(50)
            taken.append(records.next_counter())
            assert taken[-1] > 50
        if self.durable:
            with self.open_records(path, again=True) as records:
                assert records.next_counter() > taken[-1]

    # --- full-text search ---------------------------------------------------------------

    _TEXTS = ("Ana lives in Porto with her dog", "Bo likes jazz and lives alone",
              "Ana's sister moved to Lisbon", "the dog likes long walks",
              "jazz jazz jazz every night", "nothing in common here")

    def texts(self, namespace: str = "ns-a", first: int = 0,
              texts: Sequence[str] = _TEXTS, **update: Any) -> list[MemoryNode]:
        """Episodic memories of ``texts`` (no speaker), ids from ``first`` on."""
        return [self.node(first + i, namespace, type=MemoryType.EPISODIC, content=t,
                          payload=default_payload(MemoryType.EPISODIC), **update)
                for i, t in enumerate(texts)]

    @staticmethod
    def bm25_reference(nodes: Sequence[MemoryNode], query: str, k1: float = 0.9,
                       b: float = 0.4) -> dict[str, float]:
        """Okapi BM25 of ``query`` over exactly ``nodes`` (the specification)."""
        docs = {n.id: analysed_terms(n.search_text) for n in nodes}
        avgdl = sum(map(len, docs.values())) / len(docs) or 1.0
        out: dict[str, float] = {}
        for i, words in docs.items():
            total = []
            for term in sorted(set(analysed_terms(query))):
                df = sum(term in d for d in docs.values())
                tf = words.count(term)
                if tf:
                    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                    total.append(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(words)
                                                                    / avgdl)))
            if total:
                out[i] = math.fsum(total)
        return out

    def search(self, records: RecordStore, query: str, namespace: str = "ns-a",
               statuses: tuple[MemoryStatus, ...] = (ACTIVE,), k: int = 10,
               **window: float) -> tuple[list[tuple[str, float]], float]:
        with records.read() as tx:
            found = tx.search_terms(TermQuery(namespace, tuple(analysed_terms(query)),
                                              statuses, k, **window))
        return found.hits, found.best

    def test_search_terms_is_bm25_of_the_namespace(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            for query in ("Where does Ana live?", "jazz dogs", "likes", "Lisbon"):
                hits, best = self.search(records, query)
                want = self.bm25_reference(mine, query)
                assert [i for i, _ in hits] == sorted(want, key=lambda i: (-want[i], i))
                for i, score in hits:
                    assert score == want[i], (query, i)  # exactly: scored in Python
                assert best == max(want.values())
            assert self.search(records, "Where does Ana live?", k=1)[0][0][0] == mine[0].id
            assert self.search(records, "where is the") == ([], 0.0)  # stop words only
            # another tenant's vocabulary moves nothing here, nor does it match
            before = self.search(records, "jazz Ana")
            self.insert(records, *self.texts("ns-b", 20, ["jazz"] * 9 + ["Ana"]))
            assert self.search(records, "jazz Ana") == before
            assert {i for i, _ in self.search(records, "jazz", "ns-b")[0]} == \
                {_uid(20 + i) for i in range(9)}

    def test_search_terms_follows_statuses_and_erasure(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            moved = mine[4].model_copy(update={"status": ARCHIVED})
            with records.write() as tx:
                tx.update_memory(moved, reindex=True)
            active = [n for n in mine if n.id != moved.id]
            both = (ACTIVE, ARCHIVED)
            assert self.search(records, "jazz")[0] == [(mine[1].id, self.bm25_reference(
                active, "jazz")[mine[1].id])]
            assert self.search(records, "jazz", statuses=(ARCHIVED,))[0] == [
                (moved.id, self.bm25_reference([moved], "jazz")[moved.id])]
            pooled = self.bm25_reference([*active, moved], "jazz")
            assert self.search(records, "jazz", statuses=both)[0] == sorted(
                pooled.items(), key=lambda kv: (-kv[1], kv[0]))
            with records.write() as tx:
                tx.delete_memory(mine[1].id)
            rest = [n for n in active if n.id != mine[1].id]
            assert self.search(records, "lives", statuses=both)[0] == sorted(
                self.bm25_reference([*rest, moved], "lives").items(),
                key=lambda kv: (-kv[1], kv[0]))
            with records.read() as tx:
                assert tx.totals("ns-a")["ns-a"].active == len(rest)

    def test_search_terms_in_a_window(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            mine = self.texts()
            self.insert(records, *mine)
            stamps = [n.created_at.timestamp() for n in mine]
            full, best = self.search(records, "likes jazz")
            hits, windowed_best = self.search(records, "likes jazz", since=stamps[2],
                                              until=stamps[4])
            assert windowed_best == best  # a window leaves out; it never rescales
            assert hits == [(i, s) for i, s in full if i in {n.id for n in mine[2:5]}]

    def test_history_reads_without_loading_a_namespace(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            extra = [self.node(n, type=MemoryType.EPISODIC,
                               payload=default_payload(MemoryType.EPISODIC),
                               provenance=Provenance(conversation_id=conv))
                     for n, conv in ((4, "c9"), (5, None), (6, "c9"))]
            self.insert(records, *extra)
            with records.read() as tx:
                assert [n.id for n in tx.memories_by_id("ns-a", [_uid(6), _uid(3), _uid(0),
                                                                 _uid(77)])] == \
                    [_uid(0), _uid(6)]  # by seq; ns-b's memory 3 is not ns-a's
                assert tx.latest_episode("ns-a", "c9") == _uid(6)
                assert tx.latest_episode("ns-a", None) == _uid(5)
                assert tx.latest_episode("ns-a", "none such") is None
                assert tx.newest_ids("ns-a", 3) == [_uid(4), _uid(5), _uid(6)]
                stamps = [n.created_at.timestamp() for n in nodes]
                assert tx.ids_in_window("ns-a", ACTIVE, stamps[1], None) == \
                    [_uid(1), _uid(4), _uid(5), _uid(6)]
                assert tx.ids_in_window("ns-a", ARCHIVED, None, stamps[2]) == [_uid(2)]
                assert tx.ids_in_window("ns-a", ACTIVE, None, stamps[0]) == [_uid(0)]
                edges = tx.edges_of("ns-a", [_uid(1)])
                assert [(e.source, e.target) for e in edges] == [(_uid(0), _uid(1))]
                assert tx.edges_of("ns-b", [_uid(1)]) == []

    # --- memories -----------------------------------------------------------------------

    def test_memories_round_trip_exactly(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.read() as tx:
                for node in nodes:
                    assert tx.memory(node.id) == node
                assert tx.memories("ns-a") == nodes[:3]
                assert tx.memories("ns-a", ACTIVE) == nodes[:2]
                assert tx.memories("ns-a", ARCHIVED) == nodes[2:3]
                assert tx.memories("ns-b") == nodes[3:]
                assert [(r.id, r.status, r.type, r.conversation, r.seq)
                        for r in tx.refs("ns-a")] == [
                    (n.id, n.status, n.type, n.provenance.conversation_id, n.seq)
                    for n in nodes[:3]]
                assert tx.existing([_uid(0), _uid(3), _uid(77), _uid(0)]) == {_uid(0), _uid(3)}
                vectors = tx.vectors([n.id for n in nodes] + [_uid(77)])
                assert sorted(vectors) == sorted(n.id for n in nodes)
                for node in nodes:
                    self.assert_vector(vectors[node.id], self.vector(node.seq - 1))

    def test_scan_reads_a_namespace_in_batches(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            many = [self.node(n, "ns-c", status=ARCHIVED if n % 3 else ACTIVE)
                    for n in range(10, 10 + 600)]
            with records.write() as tx:
                tx.insert_memories([(n, self.vector(n.seq)) for n in many])
            with records.read() as tx:
                assert [n for batch in tx.scan("ns-a") for n in batch] == nodes[:3]
                batches = list(tx.scan("ns-c"))
                assert [n for batch in batches for n in batch] == many
                assert len(batches) > 1 and all(len(b) <= 500 for b in batches)
                assert list(tx.scan("ns-z")) == []

    def test_rename_namespace_moves_every_row_that_names_it(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.write() as tx:
                tx.delete_memory(nodes[3].id)  # ns-b emptied, its deletion in the log
            with records.read() as tx:
                events = tx.audit("ns-b")
                record = tx.namespace("ns-b")
                others = (tx.audit("ns-a"), tx.namespace("ns-a"), tx.memories("ns-a"))
            assert record is not None
            renamed = [e.model_copy(update={"namespace": "gone//b"}) for e in events]
            with records.write() as tx:
                with _raises(ConflictError):  # memories left
                    tx.rename_namespace("ns-a", "gone//a", [])
                with _raises(ConflictError):  # not the chain's events
                    tx.rename_namespace("ns-b", "gone//b", renamed[:1])
                with _raises(ConflictError):  # taken
                    tx.rename_namespace("ns-b", "ns-a", [e.model_copy(
                        update={"namespace": "ns-a"}) for e in events])
                tx.rename_namespace("ns-b", "gone//b", renamed)
            with records.read() as tx:
                assert tx.namespace("ns-b") is None and tx.audit("ns-b") == []
                assert tx.namespace("gone//b") == replace(record, name="gone//b")
                assert tx.audit("gone//b") == renamed
                assert {c.namespace for c in tx.changes(0)} == {"ns-a", "gone//b"}
                assert "ns-b" not in tx.namespace_names()
                assert tx.audit_heads()[1]["gone//b"] == (len(events), events[-1].hash)
                assert (tx.audit("ns-a"), tx.namespace("ns-a"), tx.memories("ns-a")) == \
                    others

    def test_index_rows_round_trip(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.read() as tx:
                everything = list(tx.index_rows())
                assert [r.id for r in tx.index_rows("ns-a")] == [n.id for n in nodes[:3]]
                assert {r.id for r in tx.index_rows(ids=[_uid(3), _uid(1), _uid(9)])} == \
                    {_uid(3), _uid(1)}
            assert sorted(r.id for r in everything) == sorted(n.id for n in nodes)
            by_id = {n.id: n for n in nodes}
            for row in everything:
                node = by_id[row.id]
                assert (row.namespace, row.status) == (node.namespace, node.status)
                assert dict(row.fields) == index_fields(node)
                self.assert_vector(row.vector, self.vector(node.seq - 1))

    def test_sensitive_reads_one_namespace_by_sensitivity(self, tmp_path: pathlib.Path
                                                          ) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)  # sensitivities 0, 1/8, 2/8 (archived); ns-b 3/8
            with records.read() as tx:
                rows = tx.sensitive("ns-a", 0.125)
                assert [(r.id, r.seq) for r in rows] == [(n.id, n.seq) for n in nodes[1:3]]
                for row, node in zip(rows, nodes[1:3], strict=True):
                    self.assert_vector(row.vector, self.vector(node.seq - 1))
                assert tx.sensitive("ns-a", 0.3) == []
                assert [r.id for r in tx.sensitive("ns-b", 0.375)] == [nodes[3].id]
                assert tx.sensitive("ns-c", 0.0) == []
            with records.write() as tx:  # a change of sensitivity is what the query sees
                tx.update_memory(nodes[0].model_copy(update={"sensitivity": 0.9}),
                                 reindex=True)
                tx.delete_memory(nodes[1].id)
            with records.read() as tx:
                assert [r.id for r in tx.sensitive("ns-a", 0.125)] == [nodes[0].id, nodes[2].id]

    def test_many_ids_at_once(self, tmp_path: pathlib.Path) -> None:
        nodes = [MemoryNode(id=_uid(n), type=MemoryType.EPISODIC, content=f"m{n}", weight=1,
                            seq=n + 1, created_at=_T0) for n in range(1200)]
        ids = [_uid(5000), *(n.id for n in nodes)]
        chain = [Edge(source=a.id, predicate=Predicate.TEMPORAL_NEXT, target=b.id, step=a.seq)
                 for a, b in itertools.pairwise(nodes)]
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                for node in nodes:
                    tx.insert_memory(node, self.vector(7))
                tx.add_edges("default", chain)
            with records.read() as tx:
                assert tx.existing(ids) == set(ids[1:])
                assert sorted(tx.vectors(ids)) == sorted(ids[1:])
                assert sorted(r.id for r in tx.index_rows(ids=ids)) == sorted(ids[1:])
                # whole and in order, however many rows a dialect reads at a time
                assert [r.id for r in tx.refs("default")] == ids[1:]
                assert tx.memories("default") == nodes
                assert sorted(tx.edges("default"), key=lambda e: e.key) == chain

    def test_insert_of_an_existing_id_conflicts_and_changes_nothing(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            with _raises(ConflictError), records.write() as tx:
                tx.insert_memory(self.node(50, "ns-b"), self.vector(50))
                tx.set_counter(99)
                tx.insert_memory(nodes[0].model_copy(update={"namespace": "ns-c"}),
                                 self.vector(0))
            assert self.snapshot(records) == before

    def test_insert_memories_is_insert_memory_in_order(self, tmp_path: pathlib.Path) -> None:
        nodes = [self.node(n, "ns-b" if n % 3 == 0 else "ns-a") for n in range(7)]

        def logged(records: RecordStore) -> list[tuple[str, str]]:
            with records.read() as tx:
                return [(c.namespace, c.memory_id) for c in tx.changes(0)]

        with self.open_records(tmp_path / "one") as one, \
                self.open_records(tmp_path / "batch") as batch:
            with one.write() as tx:
                for node in nodes:
                    tx.insert_memory(node, self.vector(node.seq))
            with batch.write() as tx:
                tx.insert_memories([(node, self.vector(node.seq)) for node in nodes])
                tx.insert_memories([])
            assert self.snapshot(batch) == self.snapshot(one)
            assert logged(batch) == logged(one) == [(n.namespace, n.id) for n in nodes]

    def test_insert_memories_with_a_taken_or_repeated_id_writes_none(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            fresh = self.node(60, "ns-b")
            for batch in ([(fresh, self.vector(60)), (nodes[1], self.vector(1))],
                          [(fresh, self.vector(60)), (self.node(61), self.vector(61)),
                           (fresh, self.vector(60))]):
                with _raises(ConflictError), records.write() as tx:
                    tx.insert_memories(batch)
                assert self.snapshot(records) == before

    def test_a_write_that_need_not_be_durable_commits_all_or_nothing(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.write(durable=False) as tx:
                tx.update_stats(nodes[0].model_copy(update={"access_count": 41}))
            with _raises(ConflictError), records.write(durable=False) as tx:
                tx.update_stats(nodes[1].model_copy(update={"access_count": 42}))
                tx.insert_memory(nodes[3], self.vector(3))  # taken: the whole write fails
            with records.write() as tx:  # the next durable write is as usual
                tx.set_counter(9)
                with records.write(durable=False) as inner:  # nested: the open one serves
                    assert inner is tx
            with records.read() as tx:
                counts = [n.access_count for n in tx.memories("ns-a")]
                assert (counts[:2], tx.counter()) == ([41, nodes[1].access_count], 9)
        if self.durable:
            with self.open_records(tmp_path / "records", again=True) as records, \
                    records.read() as tx:
                assert tx.memory(nodes[0].id) == nodes[0].model_copy(
                    update={"access_count": 41})

    def test_update_memory(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[0]
            changed = node.model_copy(update={
                "status": ARCHIVED, "sensitivity": 0.875, "metadata": {"new": [1, "é"]},
                "pinned": not node.pinned, "expires_at": _T0, "signals": {"omega": 2.5},
                "activated_seq": 99})
            with records.read() as tx:
                last = tx.last_change()
            with records.write() as tx:
                tx.update_memory(changed, reindex=True)
            with records.read() as tx:
                assert tx.memory(node.id) == changed
                assert [n.id for n in tx.memories("ns-a", ARCHIVED)] == [node.id, _uid(2)]
                (row,) = tx.index_rows(ids=[node.id])
                assert (row.status, row.fields["sensitivity"]) == (ARCHIVED, 0.875)
                assert tx.changes(last) == [Change(last + 1, "ns-a", node.id)]
            quiet = changed.model_copy(update={"metadata": {"quiet": True}})
            with records.write() as tx:
                tx.update_memory(quiet, reindex=False)
            with records.read() as tx:
                assert tx.memory(node.id) == quiet
                assert tx.last_change() == last + 1

    def test_update_stats(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[1]
            seen = node.model_copy(update={"access_count": 9, "last_access_step": 12,
                                           "last_access_at": _T0 + timedelta(days=1),
                                           "touch_seq": 77})
            before = self.snapshot(records)["changes"]
            with records.write() as tx:
                tx.update_stats(seen)
            with records.read() as tx:
                assert tx.memory(node.id) == seen
                assert tx.changes(0) == before

    def test_set_vector_logs_a_change(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[3]
            with records.read() as tx:
                last = tx.last_change()
            with records.write() as tx:
                tx.set_vector(node.id, self.vector(60))
            with records.read() as tx:
                self.assert_vector(tx.vectors([node.id]).get(node.id), self.vector(60))
                (row,) = tx.index_rows(ids=[node.id])
                self.assert_vector(row.vector, self.vector(60))
                assert tx.changes(last) == [Change(last + 1, "ns-b", node.id)]

    def test_delete_memory(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            a, b, c, _ = self.populate(records)
            keep = Edge(source=_uid(0), predicate=Predicate.IS_A, target=_uid(2))
            with records.write() as tx:
                tx.add_edges("ns-a", [keep, Edge(source=_uid(2), predicate=Predicate.REQUIRES,
                                                 target=_uid(1))])
            with records.read() as tx:
                last = tx.last_change()
            with records.write() as tx:
                tx.delete_memory(b.id)
                tx.delete_memory(_uid(77))  # missing: a no-op
            with records.read() as tx:
                assert (tx.memory(b.id), tx.vectors([b.id]), tx.existing([b.id])) == \
                    (None, {}, set())
                assert [r.id for r in tx.refs("ns-a")] == [a.id, c.id]
                assert tx.edges("ns-a") == [keep]
                assert tx.changes(last) == [Change(last + 1, "ns-a", b.id)]
            self.insert(records, b)  # its statistics went with it
            with records.read() as tx:
                assert tx.memory(b.id) == b

    # --- edges, audit, change log, totals -------------------------------------------------

    def test_edges(self, tmp_path: pathlib.Path) -> None:
        e1 = Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM, target=_uid(1), weight=0.5,
                  step=3)
        e2 = Edge(source=_uid(1), predicate=Predicate.TEMPORAL_NEXT, target=_uid(2))
        e3 = Edge(source=_uid(5), predicate=Predicate.FRIEND_OF, target=_uid(6))
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.add_edges("ns-a", [e1, e2, e1])
                tx.add_edges("ns-b", [e3])
            with records.write() as tx:
                tx.add_edges("ns-a", [e1.model_copy(update={"weight": 2.0})])
            with records.read() as tx:
                assert sorted(tx.edges("ns-a"), key=lambda e: e.key) == [e1, e2]
                assert (tx.edges("ns-b"), tx.edges("ns-c")) == ([e3], [])
            with records.write() as tx:
                tx.remove_edges([e1.key, ("x", "isA", "y")])
            with records.read() as tx:
                assert (tx.edges("ns-a"), tx.edges("ns-b")) == ([e2], [e3])

    def test_audit(self, tmp_path: pathlib.Path) -> None:
        a, b = self.audit_events()
        with self.open_records(tmp_path / "records") as records:
            for batch in (a[:2], b[:1], [a[2], b[1]]):
                with records.write() as tx:
                    tx.append_audit(batch)
            with records.read() as tx:
                assert (tx.audit("ns-a"), tx.audit("ns-b"), tx.audit("ns-c")) == (a, b, [])
                assert tx.audit() == [a[0], a[1], b[0], a[2], b[1]]
                assert tx.audit_for(_uid(1)) == [a[1], a[2], b[1]]  # each once
                assert tx.audit_for(_uid(77)) == []
                assert tx.audit_size() == 5
                assert AuditChain(_AUDIT_KEY).verify(tx.audit("ns-a"), (3, a[-1].hash)).ok

    def test_audit_heads_at_commit_positions(self, tmp_path: pathlib.Path) -> None:
        a, b = self.audit_events()
        marks = []
        with self.open_records(tmp_path / "records") as records:
            with records.read() as tx:
                marks.append(tx.audit_heads())
            for batch in (a[:2], b[:1], [a[2], b[1]]):
                with records.write() as tx:
                    tx.append_audit(batch)
                with records.read() as tx:
                    marks.append(tx.audit_heads())
            with records.read() as tx:
                positions = [m[0] for m in marks]
                assert positions == sorted(set(positions))  # grows with every commit
                assert marks[0][1] == {}
                assert marks[1][1] == {"ns-a": (2, a[1].hash)}
                assert marks[2][1] == {"ns-a": (2, a[1].hash), "ns-b": (1, b[0].hash)}
                assert marks[3][1] == {"ns-a": (3, a[2].hash), "ns-b": (2, b[1].hash)}
                assert [tx.audit_heads(p) for p in positions] == marks  # the past, again

    def test_change_log(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0), self.node(1, "ns-b"), self.node(2))
            with records.read() as tx:
                log = tx.changes(0)
                assert [(c.namespace, c.memory_id) for c in log] == [
                    ("ns-a", _uid(0)), ("ns-b", _uid(1)), ("ns-a", _uid(2))]
                assert [c.seq for c in log] == sorted({c.seq for c in log})
                assert (tx.first_change(), tx.last_change()) == (log[0].seq, log[-1].seq)
                assert tx.changes(log[0].seq) == log[1:]
            with records.write() as tx:
                tx.prune_changes(log[1].seq)
            with records.read() as tx:
                assert (tx.changes(0), tx.first_change()) == (log[2:], log[2].seq)
            with records.write() as tx:
                tx.prune_changes(log[2].seq)
            with records.read() as tx:
                assert (tx.changes(0), tx.first_change(), tx.last_change()) == \
                    ([], 0, log[2].seq)
            self.insert(records, self.node(3))
            with records.read() as tx:
                assert [c.seq for c in tx.changes(0)] == [tx.last_change()]
                assert tx.last_change() > log[2].seq

    def test_totals(self, tmp_path: pathlib.Path) -> None:
        sem, epi, soc = MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.SOCIAL
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0, type=sem, weight=10),
                        self.node(1, type=sem, weight=5), self.node(2, type=epi, weight=3),
                        self.node(3, type=soc, weight=7, status=ARCHIVED),
                        self.node(4, "ns-b", type=MemoryType.TASK, weight=2))
            with records.read() as tx:
                expected_a = NamespaceTotals(3, 1, 18, {sem: 15, epi: 3})
                assert tx.totals() == {"ns-a": expected_a,
                                       "ns-b": NamespaceTotals(1, 0, 2, {MemoryType.TASK: 2})}
                assert tx.totals("ns-a") == {"ns-a": expected_a}
                assert tx.totals("ns-c") == {}

    def test_namespace_names(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(NamespaceRecord("zeta"))
                tx.put_namespace(NamespaceRecord("mid"))
            self.insert(records, self.node(0, "mid"), self.node(1, "alpha"))
            with records.read() as tx:
                assert tx.namespace_names() == ["alpha", "mid", "zeta"]

    # --- transactions -------------------------------------------------------------------

    def test_failed_write_rolls_back_everything(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            a, _ = self.audit_events()

            def change_everything_then_fail(tx: RecordTxn) -> None:
                tx.put_manifest({"format": 99})
                tx.set_counter(100)
                tx.put_namespace(NamespaceRecord("ns-z", step=5))
                tx.delete_namespace("ns-b")
                tx.insert_memory(self.node(20, "ns-z"), self.vector(20))
                tx.update_memory(nodes[0].model_copy(update={"status": ARCHIVED}), reindex=True)
                tx.update_stats(nodes[1].model_copy(update={"access_count": 50}))
                tx.set_vector(nodes[3].id, self.vector(21))
                tx.delete_memory(nodes[2].id)
                tx.add_edges("ns-z", [Edge(source=_uid(20), predicate=Predicate.IS_A,
                                           target=_uid(0))])
                tx.remove_edges([(_uid(0), "derivesFrom", _uid(1))])
                tx.append_audit([a[0].model_copy(update={"namespace": "ns-z"})])
                tx.prune_changes(tx.last_change())
                raise RuntimeError("boom")

            with _raises(RuntimeError, match="boom"), records.write() as tx:
                change_everything_then_fail(tx)
            assert self.snapshot(records) == before

    def test_read_inside_a_write_sees_its_changes(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.node(0)
            with records.write() as tx:
                tx.insert_memory(node, self.vector(0))
                tx.set_counter(7)
                with records.read() as inner:
                    assert (inner.memory(node.id), inner.counter()) == (node, 7)
                    assert inner.namespace_names() == ["ns-a"]

    def test_a_read_transaction_refuses_writes(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            a, _ = self.audit_events()
            edge = Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM, target=_uid(1))
            writes: list[Callable[[RecordTxn], object]] = [
                lambda tx: tx.put_manifest({"format": 2}),
                lambda tx: tx.set_counter(9),
                lambda tx: tx.put_namespace(NamespaceRecord("ns-z")),
                lambda tx: tx.delete_namespace("ns-a"),
                lambda tx: tx.rename_namespace("ns-b", "gone//b", []),
                lambda tx: tx.insert_memory(self.node(9), self.vector(9)),
                lambda tx: tx.update_memory(nodes[0], reindex=True),
                lambda tx: tx.update_stats(nodes[0]),
                lambda tx: tx.set_vector(nodes[0].id, self.vector(9)),
                lambda tx: tx.delete_memory(nodes[0].id),
                lambda tx: tx.add_edges("ns-a", [edge]),
                lambda tx: tx.remove_edges([edge.key]),
                lambda tx: tx.append_audit(a[:1]),
                lambda tx: tx.prune_changes(tx.last_change()),
                lambda tx: tx.lock_namespaces(["ns-a"]),
                lambda tx: tx.lock_index("numpy@memory"),
                lambda tx: tx.set_index_position("numpy@memory", 1),
            ]
            with records.read() as tx:
                for write in writes:
                    with _raises(ConflictError):
                        write(tx)
                with _raises(ConflictError), records.write():
                    pass
            assert self.snapshot(records) == before

    def test_closed_store_refuses(self, tmp_path: pathlib.Path) -> None:
        records = self.make_records(tmp_path / "records")
        self.insert(records, self.node(0))
        records.close()
        records.close()  # idempotent
        with _raises(StoreClosedError), records.read():
            pass
        with _raises(StoreClosedError), records.write():
            pass

    def test_purge_returns_what_it_did(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0))
            with records.write() as tx:
                tx.delete_memory(_uid(0))
            done = records.purge()
            assert isinstance(done, str) and done

    # --- durability ---------------------------------------------------------------------

    def test_data_survives_reopen(self, tmp_path: pathlib.Path) -> None:
        if not self.durable:
            _skip("the store is not durable (set durable = True)")
        path = tmp_path / "records"
        with self.open_records(path) as records:
            self.populate(records)
            before = self.snapshot(records)
        with self.open_records(path, again=True) as records:
            assert self.snapshot(records) == before
            with records.write() as tx:
                tx.prune_changes(tx.last_change())
        with self.open_records(path, again=True) as records:
            with records.read() as tx:  # the change log never numbers backwards
                assert (tx.changes(0), tx.last_change()) == ([], before["last_change"])
            self.insert(records, self.node(9))
            with records.read() as tx:
                assert tx.last_change() > before["last_change"]

    def test_read_only_reopen_reads_and_refuses_writes(self, tmp_path: pathlib.Path) -> None:
        if not self.durable:
            _skip("the store is not durable (set durable = True)")
        path = tmp_path / "records"
        with self.open_records(path) as records:
            self.populate(records)
            before = self.snapshot(records)
        with self.open_records(path, read_only=True) as records:
            assert self.snapshot(records) == before
            with _raises(ConflictError), records.write() as tx:
                tx.set_counter(1)
        with self.open_records(path, again=True) as records:
            assert self.snapshot(records) == before


# =====================================================================================
# Vector index conformance suite
# =====================================================================================


class _Source:
    """Stands in for the record store: the rows an index reads on demand, and who asked."""

    def __init__(self) -> None:
        self.rows: dict[str, IndexRow] = {}
        self.calls: list[str] = []

    def __call__(self, namespace: str) -> list[IndexRow]:
        self.calls.append(namespace)
        return [r for r in self.rows.values() if r.namespace == namespace]


_CONVERSATIONS = ("c1", "c2", "")
_KINDS = ("semantic", "episodic", "social")
_LEVELS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)


def _random_fields(rng: random.Random) -> dict[str, MetaValue]:
    """Fields with one type per key; some keys missing on purpose."""
    fields: dict[str, MetaValue] = {}
    if rng.random() < 0.8:
        fields["type"] = rng.choice(_KINDS)
    if rng.random() < 0.8:
        fields["conversation"] = rng.choice(_CONVERSATIONS)
    if rng.random() < 0.8:
        fields["sensitivity"] = rng.choice(_LEVELS) if rng.random() < 0.5 \
            else round(rng.random(), 2)
    if rng.random() < 0.7:
        fields["count"] = rng.randint(0, 5)
    if rng.random() < 0.7:
        fields["pinned"] = rng.random() < 0.5
    return fields


def _random_leaf(rng: random.Random) -> Filter:
    choice = rng.randrange(9)
    if choice == 0:
        return Eq("conversation", rng.choice((*_CONVERSATIONS, "c-missing")))
    if choice == 1:
        return In("type", tuple(rng.sample((*_KINDS, "unknown"), rng.randint(1, 3))))
    if choice == 2:
        return Eq("pinned", rng.choice((True, False, 1, 0)))  # Python: True == 1
    if choice == 3:
        return In("count", tuple(rng.sample(range(7), rng.randint(1, 3))))
    if choice == 4:
        return Eq("count", float(rng.randint(0, 5)))  # Python: 2 == 2.0
    if choice == 5:
        return In("sensitivity", tuple(rng.sample(_LEVELS, rng.randint(1, 3))))
    lo = round(rng.random() * 0.6, 2)
    if choice == 6:
        return Range("sensitivity", gte=lo, lt=lo + 0.3)
    if choice == 7:
        return Range("count", gt=rng.choice((-1, 0.5, 1.5, 2)), lte=rng.choice((2, 3.5, 6)))
    return Range(rng.choice(("count", "sensitivity", "type")))  # "holds a number"


def _random_filter(rng: random.Random, depth: int = 0) -> Filter:
    if depth >= 2 or rng.random() < 0.45:
        return _random_leaf(rng)
    kind = rng.randrange(3)
    if kind == 2:
        return Not(_random_filter(rng, depth + 1))
    clauses = tuple(_random_filter(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    return And(clauses) if kind == 0 else Or(clauses)


_HANDWRITTEN_FILTERS: tuple[Filter, ...] = (
    Eq("conversation", "c1"),
    Eq("conversation", ""),
    Eq("pinned", True),
    Eq("count", 3),
    Eq("sensitivity", 0.25),
    In("type", ("semantic", "social")),
    Range("sensitivity", gt=0.25),
    Range("sensitivity", gte=0.5),
    Range("count", lt=2),
    Range("count", lte=2),
    Range("count", gte=1.5),
    Range("sensitivity", gte=0.2, lte=0.6),
    And((Eq("conversation", "c2"), Eq("type", "episodic"))),
    Or((Eq("conversation", "c1"), Range("count", gte=4))),
    Not(Eq("conversation", "c1")),
    Not(Eq("pinned", True)),  # also matches entries without "pinned"
    Not(Range("count", gte=2)),  # ... and entries without a number under "count"
    And((Eq("conversation", "c1"), Not(In("type", ("semantic",))))),
    Or((And((Eq("pinned", False), Range("sensitivity", lt=0.5))), Not(Range("count", gte=1)))),
    And(()),
    Or(()),
)


class VectorIndexConformance(abc.ABC):
    """Protocol tests every :class:`~mars_core.index.base.VectorIndex` must pass.

    Subclass it in a test module, name the subclass ``Test...`` and implement
    :meth:`make_index`. Each test makes its own index on pytest's ``tmp_path``, binds it
    to a stand-in for the record store (the rows the test wrote, which an index that
    loads on demand reads back) and closes it at the end. Entry ids are canonical UUID
    strings (Qdrant accepts nothing else).

    What the index is comes from its :attr:`~mars_core.index.base.VectorIndex.capabilities`:
    ``persistent`` enables the reopen tests (write, close, ``make_index(same path)``,
    bind), ``exact`` the exhaustive-ranking test and tight score tolerances, and
    ``loads_on_demand`` the test of reading a namespace from the record store. The
    filter test keeps fewer than 100 entries per partition, so an approximate index
    such as Chroma's still searches them exhaustively.

    Attributes:
        dim: vector dimension used by the tests.

    Examples:
        >>> import pathlib
        >>> from mars_core.index import NumpyIndex
        >>> class TestNumpy(VectorIndexConformance):
        ...     def make_index(self, path: pathlib.Path) -> NumpyIndex:
        ...         return NumpyIndex()
        >>> index = TestNumpy().make_index(pathlib.Path("unused"))
        >>> index.capabilities.loads_on_demand, index.capabilities.exact
        (True, True)
        >>> index.close()
    """

    dim: ClassVar[int] = 8
    identity: ClassVar[str] = "conformance-store:v1"

    @abc.abstractmethod
    def make_index(self, path: pathlib.Path) -> VectorIndex:
        """A new index; a persistent one keeps its entries under ``path`` (a directory
        that may not exist yet, or any key that tells one test's entries from another's)."""

    # --- helpers ------------------------------------------------------------------------

    @property
    def recorded(self) -> dict[str, int]:
        """The positions this test's "record store" keeps, by stamp (see :meth:`mark`)."""
        if "_recorded" not in self.__dict__:
            self._recorded: dict[str, int] = {}
        return self._recorded

    @contextlib.contextmanager
    def open_index(self, path: pathlib.Path, source: _Source | None = None,
                   identity: str | None = None) -> Iterator[tuple[VectorIndex, _Source]]:
        """:meth:`make_index`, bound to ``source`` (a fresh one by default) and the
        positions :meth:`mark` recorded, then closed; what the bind returned is in
        ``self.applied``."""
        source = source if source is not None else _Source()
        index = self.make_index(path)
        try:
            self.applied = index.bind(identity or self.identity, self.dim, source,
                                      self.recorded)
            yield index, source
        finally:
            index.close()

    def mark(self, index: VectorIndex, applied: int) -> None:
        """What a store does once the index holds every change up to ``applied``: tell
        the index, then record the position beside the index's stamp."""
        index.mark(applied)
        self.recorded[index.stamp] = applied

    def vector(self, *head: float) -> Vector:
        """A unit vector of the test dimension starting with ``head`` (zeros after)."""
        values = np.array([*head, *([0.0] * (self.dim - len(head)))], dtype=np.float64)
        return (values / np.linalg.norm(values)).astype(np.float32)

    def random_vector(self, rng: random.Random) -> Vector:
        """A random unit vector of the test dimension."""
        return self.vector(*(rng.gauss(0.0, 1.0) for _ in range(self.dim)))

    def row(self, n: int, namespace: str = "ns-a", status: MemoryStatus = ACTIVE,
            vector: Vector | None = None, **fields: MetaValue) -> IndexRow:
        """An entry with id ``_uid(n)`` (its vector: a random one seeded by ``n``)."""
        vec = vector if vector is not None else self.random_vector(random.Random(n))
        return IndexRow(_uid(n), namespace, status, vec, fields)

    def write(self, index: VectorIndex, source: _Source, rows: Sequence[IndexRow],
              *, new: bool = False) -> None:
        """What a store does: the records first, then the index."""
        source.rows.update((r.id, r) for r in rows)
        index.upsert(rows, new=new)

    def erase(self, index: VectorIndex, source: _Source, namespace: str,
              ids: Sequence[str]) -> None:
        """Delete from the records, then from the index."""
        for i in ids:
            if i in source.rows and source.rows[i].namespace == namespace:
                del source.rows[i]
        index.delete(namespace, ids)

    def warm(self, index: VectorIndex, *namespaces: str) -> None:
        """Query every partition once, so an index that loads on demand has them loaded
        (its writes then go through its own update path, not a fresh load)."""
        for ns in namespaces:
            for status in MemoryStatus:
                index.query(ns, status, self.vector(1.0), 1)

    def found(self, index: VectorIndex, namespace: str, status: MemoryStatus = ACTIVE,
              where: Filter | None = None, k: int = 500) -> list[str]:
        """Sorted ids of an exhaustive query of one partition."""
        return sorted(i for i, _ in index.query(namespace, status, self.vector(1.0), k, where))

    def tolerance(self, index: VectorIndex) -> float:
        """How close a score must be to the exact cosine."""
        return 1e-5 if index.capabilities.exact else 1e-3

    # --- binding and validation ---------------------------------------------------------

    def test_satisfies_protocol(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        try:
            assert isinstance(index, VectorIndex)
            assert isinstance(index.name, str) and index.name
            assert isinstance(index.location, str) and index.location
            assert isinstance(index.capabilities, IndexCapabilities)
            assert index.bind(self.identity, self.dim, _Source()) == 0  # a fresh index
        finally:
            index.close()

    def test_unbound_index_refuses(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        try:
            calls: list[Callable[[], object]] = [
                lambda: index.upsert([self.row(0)]),
                lambda: index.query("ns-a", ACTIVE, self.vector(1.0), 1),
                lambda: index.delete("ns-a", [_uid(0)]),
                lambda: index.mark(1),
                index.clear,
                lambda: index.compact(["ns-a"]),
                lambda: index.bind("", self.dim, _Source()),
                lambda: index.bind(self.identity, 0, _Source()),
            ]
            for call in calls:
                with _raises(ValidationError):
                    call()
        finally:
            index.close()

    def test_bad_vectors_and_k_are_refused(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [self.row(0)])
            nan = self.vector(1.0)
            nan[1] = np.nan
            with _raises(EmbeddingMismatchError):
                index.upsert([self.row(1, vector=np.ones(self.dim + 1, np.float32))])
            with _raises(EmbeddingMismatchError):
                index.query("ns-a", ACTIVE, np.ones(self.dim - 1, np.float32), 1)
            with _raises(ValidationError):
                index.upsert([self.row(2), self.row(1, vector=nan)])  # the batch, whole
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, nan, 1)
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, self.vector(1.0), -1)
            with _raises(ValidationError):
                index.upsert([self.row(3, bad=math.inf)])
            assert self.found(index, "ns-a") == [_uid(0)]

    # --- upsert and query ---------------------------------------------------------------

    def test_round_trip_stays_in_its_partition(self, tmp_path: pathlib.Path) -> None:
        same = self.vector(1.0, 1.0)
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [
                self.row(0, vector=same), self.row(1, vector=same),
                self.row(2, status=ARCHIVED, vector=same),
                self.row(3, "ns-b", vector=same), self.row(4, "ns-b", ARCHIVED, vector=same)])
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                    index.forget("ns-b")
                assert self.found(index, "ns-a") == [_uid(0), _uid(1)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(2)]
                assert self.found(index, "ns-b") == [_uid(3)]
                assert self.found(index, "ns-b", ARCHIVED) == [_uid(4)]
                assert self.found(index, "ns-c") == []
                for _, score in index.query("ns-a", ACTIVE, same, 5):
                    assert math.isclose(score, 1.0, abs_tol=self.tolerance(index))

    def test_query_orders_by_cosine_then_id(self, tmp_path: pathlib.Path) -> None:
        cosines = {1: 0.0, 2: 1.0, 3: -0.5, 4: 0.9, 5: 0.5, 9: 0.3, 7: 0.3, 8: 0.3}
        rows = [self.row(n, vector=self.vector(c, math.sqrt(1.0 - c * c)))
                for n, c in cosines.items()]
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, rows)
            hits = index.query("ns-a", ACTIVE, self.vector(1.0), k=len(rows))
            assert [i for i, _ in hits] == [_uid(n) for n in (2, 4, 5, 7, 8, 9, 1, 3)]
            for (_, score), cos in zip(hits, sorted(cosines.values(), reverse=True),
                                       strict=True):
                assert math.isclose(score, cos, abs_tol=self.tolerance(index)), (score, cos)
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 2)] == \
                [_uid(2), _uid(4)]

    def test_query_within_restricts_the_candidates(self, tmp_path: pathlib.Path) -> None:
        """``within`` (the ids a time window holds) keeps only those entries, with ``where``
        still applied; ids of no entry, of another partition or of none are harmless."""
        cosines = {1: 1.0, 2: 0.9, 3: 0.5, 4: 0.3, 5: -0.2}
        rows = [self.row(n, vector=self.vector(c, math.sqrt(1.0 - c * c)),
                         type="odd" if n % 2 else "even") for n, c in cosines.items()]
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [*rows, self.row(6, namespace="ns-b")])
            window = (_uid(3), _uid(5), _uid(2), _uid(6), _uid(99))
            hits = index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=window)
            assert [i for i, _ in hits] == [_uid(2), _uid(3), _uid(5)]
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 1,
                                              within=window)] == [_uid(2)]
            assert [i for i, _ in index.query("ns-a", ACTIVE, self.vector(1.0), 10,
                                              Eq("type", "odd"), within=window)] == [
                _uid(3), _uid(5)]
            assert index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=()) == []
            assert index.query("ns-a", ARCHIVED, self.vector(1.0), 10, within=window) == []
            with _raises(ValidationError):
                index.query("ns-a", ACTIVE, self.vector(1.0), 10, within=_uid(2))

    def test_ties_at_the_boundary_are_broken_by_id(self, tmp_path: pathlib.Path) -> None:
        same = self.vector(0.3, 1.0)
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.exact:
                _skip("an approximate index may return any of the tied entries")
            self.write(index, source, [self.row(n, vector=same) for n in (6, 3, 5, 4)])
            assert [i for i, _ in index.query("ns-a", ACTIVE, same, 2)] == [_uid(3), _uid(4)]

    def test_k_larger_than_the_count_and_k_zero(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [self.row(n) for n in range(5)])
            for k in (6, 100, 10_000):
                hits = index.query("ns-a", ACTIVE, self.vector(1.0), k)
                assert sorted(i for i, _ in hits) == [_uid(n) for n in range(5)]
                assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
            assert index.query("ns-a", ACTIVE, self.vector(1.0), 0) == []

    def test_exhaustive_when_exact(self, tmp_path: pathlib.Path) -> None:
        rng = random.Random(5)
        rows = [self.row(n, vector=self.random_vector(rng)) for n in range(300)]
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.exact:
                _skip("the index is approximate")
            self.write(index, source, rows, new=True)
            for _ in range(3):
                q = self.random_vector(rng)
                cos = exact_cosines([r.vector for r in rows], q)
                best = sorted(range(len(rows)), key=lambda i: (-cos[i], rows[i].id))[:10]
                hits = index.query("ns-a", ACTIVE, q, 10)
                assert [i for i, _ in hits] == [rows[i].id for i in best]
                for (_, score), i in zip(hits, best, strict=True):
                    assert math.isclose(score, cos[i], abs_tol=1e-5)

    def test_upsert_replaces_the_vector_and_fields(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, [self.row(0, vector=self.vector(1.0), type="a", gone=1),
                                       self.row(1, vector=self.vector(0.0, 1.0), type="b")])
            self.write(index, source, [self.row(0, vector=self.vector(0.0, 1.0), type="b")])
            for where in (Eq("type", "a"), Range("gone"), Eq("gone", 1)):
                assert self.found(index, "ns-a", where=where) == [], where
            assert self.found(index, "ns-a", where=Eq("type", "b")) == [_uid(0), _uid(1)]
            assert self.found(index, "ns-a", where=Not(Eq("gone", 1))) == [_uid(0), _uid(1)]
            ((_, score), _) = index.query("ns-a", ACTIVE, self.vector(0.0, 1.0), 2)
            assert math.isclose(score, 1.0, abs_tol=self.tolerance(index))
            index.upsert([self.row(2, vector=self.vector(1.0)),
                          self.row(2, vector=self.vector(0.0, 0.0, 1.0))])  # the last wins
            assert index.query("ns-a", ACTIVE, self.vector(0.0, 0.0, 1.0), 1)[0][0] == _uid(2)

    def test_new_upserts(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED),
                                       self.row(2, "ns-b")], new=True)
            self.write(index, source, [self.row(3, count=1)], new=True)
            assert self.found(index, "ns-a") == [_uid(0), _uid(3)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
            assert self.found(index, "ns-b") == [_uid(2)]
            assert self.found(index, "ns-a", where=Eq("count", 1)) == [_uid(3)]

    def test_status_change_moves_the_entry(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED)])
            self.write(index, source, [self.row(0, status=ARCHIVED)])
            assert self.found(index, "ns-a") == [_uid(1)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(0), _uid(2)]
            self.write(index, source, [self.row(2), self.row(1, status=ARCHIVED)])
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                assert self.found(index, "ns-a") == [_uid(2)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(0), _uid(1)]

    def test_delete(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED),
                                       self.row(3, status=ARCHIVED), self.row(4, "ns-b")])
            self.erase(index, source, "ns-a", [_uid(0), _uid(2), _uid(77)])
            self.erase(index, source, "ns-a", [_uid(0)])
            self.erase(index, source, "ns-a", [])
            self.erase(index, source, "ns-b", [_uid(1)])  # not ns-b's: left alone
            for forgotten in (False, True):
                if forgotten:
                    index.forget("ns-a")
                assert self.found(index, "ns-a") == [_uid(1)]
                assert self.found(index, "ns-a", ARCHIVED) == [_uid(3)]
                assert self.found(index, "ns-b") == [_uid(4)]

    def test_filters_agree_with_matches(self, tmp_path: pathlib.Path) -> None:
        rng = random.Random(20240531)
        rows = [replace(self.row(n, vector=self.random_vector(rng)), fields=_random_fields(rng))
                for n in range(60)]
        others = [replace(self.row(100, status=ARCHIVED), fields=_random_fields(rng)),
                  replace(self.row(101, "ns-b"), fields=_random_fields(rng))]
        with self.open_index(tmp_path / "index") as (index, source):
            self.write(index, source, [*rows, *others])
            filters = [*_HANDWRITTEN_FILTERS, *(_random_filter(rng) for _ in range(60))]
            sizes = set()
            for flt in filters:
                expected = sorted(r.id for r in rows if matches(flt, r.fields))
                sizes.add(len(expected))
                assert self.found(index, "ns-a", where=flt, k=len(rows)) == expected, flt
            assert 0 in sizes and len(rows) in sizes and len(sizes) > 10  # not all trivial

    # --- mark, clear, compact -------------------------------------------------------------

    def test_mark_survives_reopen_for_the_same_identity(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED)])
            self.mark(index, 7)
            self.mark(index, 12)
        with self.open_index(path) as (index, source):
            assert self.applied == 12
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
        with self.open_index(path, identity="conformance-store:v2") as (index, _):
            assert self.applied == 0  # the store's next version (embedder, generation)
            assert self.found(index, "ns-a") == self.found(index, "ns-a", ARCHIVED) == []
        with self.open_index(path) as (index, _):
            assert self.applied == 0
            assert self.found(index, "ns-a") == []

    def test_only_the_position_recorded_under_its_stamp_is_trusted(
            self, tmp_path: pathlib.Path) -> None:
        """The records keep the position beside the index's stamp (its identity and an
        epoch); emptying the index draws a new epoch, so a position recorded before
        never claims what the index no longer holds."""
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            first = index.stamp
            assert first.startswith(self.identity + "#"), first
            self.write(index, source, [self.row(0)])
            self.mark(index, 4)
        self.recorded["conformance-store:v1#another-index"] = 9  # not this index's
        with self.open_index(path) as (index, _):
            assert (self.applied, index.stamp) == (4, first)
            index.clear()
            assert index.stamp not in ("", first)
        with self.open_index(path) as (index, _):
            assert self.applied == 0  # 4 was recorded for what the index held before
            assert self.found(index, "ns-a") == []
        index = self.make_index(path)
        try:
            for bad in ({first: -1}, {first: True}, {1: 2}):
                with _raises(ValidationError):
                    index.bind(self.identity, self.dim, _Source(), bad)  # type: ignore[arg-type]
        finally:
            index.close()

    def test_another_stores_entries_are_refused_or_replaced(
            self, tmp_path: pathlib.Path) -> None:
        """A shared index (a server) refuses to wipe another store's entries; a private
        one replaces them (the directory is this store's)."""
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            if not index.capabilities.persistent:
                _skip("the index is not persistent")
            self.write(index, source, [self.row(0)])
            self.mark(index, 3)
            shared = index.capabilities.shared
        other = self.make_index(path)
        try:
            if shared:
                with _raises(ConflictError):
                    other.bind("another-store:v1", self.dim, _Source())
            else:
                assert other.bind("another-store:v1", self.dim, _Source()) == 0
                assert self.found(other, "ns-a") == []
        finally:
            other.close()
        with self.open_index(path) as (index, _):
            assert (self.applied, self.found(index, "ns-a")) == \
                ((3, [_uid(0)]) if shared else (0, []))

    def test_clear_empties(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "index"
        with self.open_index(path) as (index, source):
            self.write(index, source, [self.row(0), self.row(1, status=ARCHIVED),
                                       self.row(2, "ns-b")])
            assert self.found(index, "ns-b") == [_uid(2)]
            self.mark(index, 5)
            source.rows.clear()  # a rebuild would follow from the (now empty) records
            index.clear()
            for ns in ("ns-a", "ns-b"):
                assert self.found(index, ns) == self.found(index, ns, ARCHIVED) == []
            persistent = index.capabilities.persistent
        if persistent:
            with self.open_index(path):
                assert self.applied == 0

    def test_compact_keeps_the_entries(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            self.warm(index, "ns-a", "ns-b")
            self.write(index, source, [self.row(0), self.row(1), self.row(2, status=ARCHIVED),
                                       self.row(3, "ns-b")])
            self.erase(index, source, "ns-a", [_uid(1)])
            done = index.compact(["ns-a", "ns-b", "ns-never"])
            assert isinstance(done, str) and done
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(2)]
            assert self.found(index, "ns-b") == [_uid(3)]
            hits = index.query("ns-a", ACTIVE, self.row(0).vector, 1)
            assert math.isclose(hits[0][1], 1.0, abs_tol=self.tolerance(index))

    def test_loads_on_demand_from_the_source(self, tmp_path: pathlib.Path) -> None:
        with self.open_index(tmp_path / "index") as (index, source):
            if not index.capabilities.loads_on_demand:
                _skip("the index does not load on demand")
            source.rows = {r.id: r for r in (self.row(0), self.row(1, status=ARCHIVED),
                                              self.row(2, "ns-b"))}  # never upserted
            assert self.found(index, "ns-a") == [_uid(0)]
            assert self.found(index, "ns-a", ARCHIVED) == [_uid(1)]
            assert source.calls == ["ns-a"]  # one namespace, read once
            source.rows[_uid(3)] = self.row(3)
            index.forget("ns-a")
            assert self.found(index, "ns-a") == [_uid(0), _uid(3)]
            assert source.calls == ["ns-a", "ns-a"]

    def test_closed_index_refuses(self, tmp_path: pathlib.Path) -> None:
        index = self.make_index(tmp_path / "index")
        index.bind(self.identity, self.dim, _Source())
        index.upsert([self.row(0)])
        index.close()
        index.close()  # idempotent
        calls: list[Callable[[], object]] = [
            lambda: index.bind(self.identity, self.dim, _Source()),
            lambda: index.upsert([self.row(1)]),
            lambda: index.query("ns-a", ACTIVE, self.vector(1.0), 1),
            lambda: index.delete("ns-a", [_uid(0)]),
            lambda: index.mark(1),
            index.clear,
            lambda: index.compact(["ns-a"]),
        ]
        for call in calls:
            with _raises(StoreClosedError):
                call()
