"""What the record-store conformance tests share: a store opened and closed per test,
memories with every field set, a store holding one of everything, and its snapshot
(:class:`RecordStoreHarness`; the tests: :mod:`mars_core.testing.records`)."""

from __future__ import annotations

import abc
import contextlib
import pathlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar

import numpy as np

from mars_core.audit import GENESIS, AuditChain, AuditEvent
from mars_core.model import (
    Consent,
    Edge,
    MemoryNode,
    Predicate,
    Provenance,
)
from mars_core.storage.base import (
    AddEdges,
    AppendAudit,
    InsertMemory,
    NamespaceRecord,
    RecordStore,
)
from mars_core.testing._common import (
    _AUDIT_KEY,
    _T0,
    _TYPES,
    ARCHIVED,
    Vector,
    _payload,
    _skip,
    _uid,
)

__all__ = ["RecordStoreHarness"]


class RecordStoreHarness(abc.ABC):
    """How the conformance tests make, fill and compare record stores (see
    :class:`~mars_core.testing.records.RecordStoreConformance`, which subclasses it)."""

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
            tx.apply([InsertMemory(node, self.vector(node.seq - 1)) for node in nodes])

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
            tx.apply([*(InsertMemory(node, self.vector(node.seq - 1)) for node in nodes),
                      AddEdges("ns-a", (Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM,
                                             target=_uid(1), weight=0.5, step=2),)),
                      AppendAudit((*a, *b))])
        return nodes

    def snapshot(self, records: RecordStore) -> dict[str, Any]:
        """Everything a store holds, comparable with ``==`` (vectors as bytes)."""
        with records.read() as tx:
            names = tx.namespace_names()
            ids = [n.id for ns in names for n in tx.memories(ns)]
            return {
                "manifest": tx.manifest(), "counter": tx.counter(), "names": names,
                "namespaces": [tx.namespace(ns) for ns in names],
                "memories": [tx.memories(ns) for ns in names],
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
