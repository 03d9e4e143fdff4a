"""The unit of work of one public call: staged writes, committed in one transaction.

An operation stages everything it changes in a :class:`Unit` — new memories with their
vectors and edges, changed metadata, access statistics, erasures, audit events (one hash
chain per namespace), the namespaces' counters and state — and :meth:`Unit.write` hands
the whole unit to one record-store transaction. The in-memory views follow each staged
change as it is made (so a later step of the same call, or the next turn of a bulk
ingest, sees the earlier ones); if anything fails before the transaction committed, the
store drops the views of every namespace the unit touched and reads them again from the
records, which the failed call never changed. A rejected input or a failed write
therefore changes nothing, and a call that returned is durable.

Examples:
    >>> from mars_core.audit import AuditChain
    >>> unit = Unit(counter=0, chain=AuditChain(b"k" * 32))
    >>> unit.counter
    0
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mars_core.audit import (
    GENESIS,
    AuditChain,
    AuditEvent,
    AuditOp,
    AuditTxn,
    erased_name,
    erased_token,
)
from mars_core.engine.trail import enlist, row_state, sealed
from mars_core.errors import ConcurrentWriteError
from mars_core.model import Edge, MemoryNode
from mars_core.storage.base import (
    AppendAudit,
    DeleteMemory,
    InsertMemory,
    MemoryOp,
    NamespaceRecord,
    RecordTxn,
    UpdateMemory,
    UpdateStats,
    Vector,
)

__all__ = ["Draft", "Unit"]

log = logging.getLogger(__name__)


@dataclass
class Draft:
    """A namespace's counters and state as the unit will leave them."""

    record: NamespaceRecord
    step: int
    touch: int
    audit: AuditTxn
    state: dict[str, Any]


@dataclass
class Unit:
    """The staged writes of one operation.

    Attributes:
        counter: the store-wide memory counter as the unit leaves it.
        chain: builds each namespace's audit events.
        drafts: per namespace: counters, audit events and state to write.
        ops: memory writes, in the order they were staged (what the record store
            applies: :meth:`~mars_core.storage.base.RecordTxn.apply`).
        compact: namespaces whose index partitions must be rewritten once the unit is
            committed (an erasure): recorded in the manifest with the unit, so a crash
            before the rewrite finished is completed by the next open.
        learned: per namespace, what its policy had learned and not saved when the unit
            first touched it (restored if the unit fails).
        allocate: gives new memory numbers (a record store several processes write:
            :meth:`~mars_core.storage.base.RecordStore.next_counter`); ``None``: the
            unit counts on from ``counter`` (one writer).
        allocated: the largest number ``allocate`` gave this unit.
        unused: ids of memories to come by their numbers, found unused in the records
            in one read (:meth:`~mars_core.engine.writer.Writer.reserve`): a bulk call
            neither asks nor derives an id twice.
        retire: namespaces erased whole: once written, each leaves its name in no row —
            its record and audit chain are renamed ``erased//<token>//<n>``
            (:func:`~mars_core.audit.erased_name`).
        retired: what :meth:`write` renamed them to.
    """

    counter: int
    chain: AuditChain
    drafts: dict[str, Draft] = field(default_factory=dict)
    ops: list[MemoryOp] = field(default_factory=list)
    compact: set[str] = field(default_factory=set)
    learned: dict[str, dict[str, Any]] = field(default_factory=dict)
    allocate: Callable[[], int] | None = None
    allocated: int = 0
    unused: dict[int, str] = field(default_factory=dict)
    retire: set[str] = field(default_factory=set)
    retired: dict[str, str] = field(default_factory=dict)

    def next_seq(self) -> int:
        """The number of a new memory (its ``seq``, from which its id derives)."""
        if self.allocate is None:
            self.counter += 1
        else:
            self.allocated = self.allocate()
            self.counter = max(self.counter, self.allocated)
        return self.counter

    # --- namespaces --------------------------------------------------------------------

    def draft(self, record: NamespaceRecord, state: Mapping[str, Any]) -> Draft:
        """The namespace's draft (made from its record on first use)."""
        d = self.drafts.get(record.name)
        if d is None:
            d = Draft(record, record.step, record.touch,
                      self.chain.begin(record.name, record.audit_count, record.audit_head,
                                       deferred=True),  # chained with its rows, at write
                      dict(state))
            self.drafts[record.name] = d
        return d

    def event(self, namespace: str, *, op: AuditOp | str, node_ids: Iterable[str] = (),
              rationale: str, step: int, at: datetime | None, policy: str | None = None,
              params: Mapping[str, Any] | None = None,
              features: Mapping[str, Mapping[str, float]] | None = None,
              score: float | None = None,
              contents: Mapping[str, str] | None = None) -> AuditEvent:
        """Append an audit event to a namespace's chain (its draft must exist)."""
        return self.drafts[namespace].audit.add(
            op=op, namespace=namespace, node_ids=node_ids, rationale=rationale, step=step,
            at=at, policy=policy, params=params, features=features, score=score,
            contents=contents)

    @property
    def events(self) -> list[AuditEvent]:
        """Every staged audit event."""
        return [e for d in self.drafts.values() for e in d.audit.events]

    # --- memories ----------------------------------------------------------------------

    def insert(self, node: MemoryNode, vector: Vector, edges: Sequence[Edge] = ()) -> None:
        """Stage a new memory with its vector and outgoing edges."""
        self.ops.append(InsertMemory(node, vector, tuple(edges)))

    def update(self, node: MemoryNode, *, reindex: bool, edges: Sequence[Edge] = ()) -> None:
        """Stage new metadata of a memory (``reindex``: status or sensitivity changed),
        with new edges of its own."""
        self.ops.append(UpdateMemory(node, reindex, tuple(edges)))

    def stats(self, node: MemoryNode) -> None:
        """Stage new access statistics of a memory."""
        self.ops.append(UpdateStats(node))

    def delete(self, node: MemoryNode) -> None:
        """Stage an erasure."""
        self.ops.append(DeleteMemory(node))

    def _latest(self) -> dict[str, MemoryNode | None]:
        """The newest staged version of each memory (``None``: erased)."""
        out: dict[str, MemoryNode | None] = {}
        for op in self.ops:
            out[op.node.id] = None if isinstance(op, DeleteMemory) else op.node
        return out

    def inserted(self) -> list[tuple[MemoryNode, Vector]]:
        """The new memories (as the unit leaves them) and their vectors."""
        latest = self._latest()
        return [(node, op.vector) for op in self.ops if isinstance(op, InsertMemory)
                and (node := latest[op.node.id]) is not None]

    def reindexed(self) -> list[MemoryNode]:
        """Memories whose index entry changes without being new (moves, sensitivity)."""
        new = {op.node.id for op in self.ops if isinstance(op, InsertMemory)}
        latest = self._latest()
        ids = dict.fromkeys(op.node.id for op in self.ops if isinstance(op, UpdateMemory)
                            and op.reindex and op.node.id not in new)
        return [node for i in ids if (node := latest[i]) is not None]

    def deleted(self) -> list[MemoryNode]:
        """The erased memories."""
        return [op.node for op in self.ops if isinstance(op, DeleteMemory)]

    def namespaces(self) -> list[str]:
        """Every namespace the unit touched."""
        return list(dict.fromkeys([*self.drafts, *(op.node.namespace for op in self.ops)]))

    def __bool__(self) -> bool:
        return bool(self.ops or self.events
                    or any(d.step != d.record.step or d.state != dict(d.record.state)
                           for d in self.drafts.values()))

    # --- committing ----------------------------------------------------------------------

    def write(self, tx: RecordTxn, *, counter_before: int) -> dict[str, NamespaceRecord]:
        """Write the unit in ``tx``; returns the namespaces' new records.

        First it holds every namespace the unit touched (another writer of one of them
        waits until this transaction ends) and checks that each is still at the version
        its views were read at: the plan was made on the committed state, so no write of
        another process is lost and every budget holds at this commit.

        Raises:
            ConcurrentWriteError: another process committed to one of the namespaces
                since its views were read (nothing is written; the call can be repeated).
        """
        versions = tx.lock_namespaces(sorted(self.namespaces()))
        moved = sorted(name for name, d in self.drafts.items()
                       if versions.get(name, 0) != d.record.version)
        if moved:
            raise ConcurrentWriteError(
                f"namespace {moved[0]!r} was changed by another process while this call "
                "ran; nothing was written: repeat the call (it reads the namespace again)")
        tx.apply(self.ops)
        if self.counter > max(counter_before, self.allocated):  # numbered here, or imported
            tx.set_counter(self.counter)
        self._record_rows()
        records = {}
        for name, d in self.drafts.items():
            tx.apply([AppendAudit(tuple(d.audit.events))])
            records[name] = sealed(self.chain, NamespaceRecord(
                name, d.record.version + 1, d.step, d.touch, d.audit.next_seq, d.audit.head,
                d.state))
            tx.put_namespace(records[name])
        added = [name for name in self.drafts if versions.get(name, 0) == 0]
        removed = sorted(self.retire)
        added += [self._retire(tx, name, records.pop(name)) for name in removed]
        if self.compact or added or removed:
            manifest = enlist(self.chain, tx.manifest() or {}, added, removed)
            if self.compact:
                pending = set(manifest.get("compact_pending") or []) | {
                    self.retired.get(n, n) for n in self.compact}
                manifest["compact_pending"] = sorted(pending)
            tx.put_manifest(manifest)
        return records

    def _record_rows(self) -> None:
        """Record, on the last event of each namespace, the memory rows the unit wrote
        there as it leaves them (keyed digests; ``""``: deleted): what
        :class:`~mars_core.engine.trail.AuditTrail` checks the rows against; then chain
        each namespace's events (deferred until now)."""
        latest: dict[str, tuple[str, MemoryNode | None]] = {}
        for op in self.ops:
            if not isinstance(op, UpdateStats):
                latest[op.node.id] = (op.node.namespace,
                                      None if isinstance(op, DeleteMemory) else op.node)
        rows: dict[str, dict[str, str]] = {}
        for memory_id, (ns, node) in latest.items():
            rows.setdefault(ns, {})[memory_id] = "" if node is None else \
                self.chain.row_digest(row_state(node))
        for ns, d in self.drafts.items():
            written = rows.get(ns, {})
            if written and not d.audit.events:  # every change has its event; should one
                log.warning("memory rows of a namespace were written without an event; "
                            "the audit records them in one of its own")
                d.audit.add(op=AuditOp.RECORD, namespace=ns, step=d.step, at=None,
                            rationale=f"recorded the state of {len(written)} memories "
                                      "written by a change that named no event")
            d.audit.finish(written)

    def _retire(self, tx: RecordTxn, name: str, record: NamespaceRecord) -> str:
        """Rename an erased namespace's record and chain (its memories are gone) to
        ``erased//<token>//<n>``, ``n`` counting the namespaces of that name erased
        before; returns the new name."""
        token = self.chain.namespace_token(name)
        generation = sum(1 for n in tx.namespace_names() if erased_token(n) == token)
        new = erased_name(token, generation)
        events = self.chain.renamed(tx.audit(name), new)
        tx.rename_namespace(name, new, events)
        tx.put_namespace(sealed(self.chain, NamespaceRecord(
            new, record.version, record.step, record.touch, len(events),
            events[-1].hash if events else GENESIS)))
        self.retired[name] = new
        return new
