"""The record-store contract: the system of record of a store (DESIGN §3 "Storage").

A record store keeps everything a store knows, each kind of fact in rows of its own:

* **memories** — the immutable part of a :class:`~mars_core.model.MemoryNode` (content,
  payload, provenance, type, weight, creation), its mutable metadata (status,
  sensitivity, pin, expiry, user metadata, signals) and its embedding;
* **statistics** — a memory's access count, last access and recency counter, a small
  row of its own, so that recording an access never rewrites the memory;
* **edges**, **audit events** (one hash chain per namespace), the **namespace records**
  (interaction counter, recency counter, audit head, policy state, privacy preferences),
  the **manifest** and the store-wide memory counter;
* **changes** — a numbered log of the memories whose vector-index entry changed (insert,
  status or sensitivity change, new vector, delete): a vector index remembers the last
  change it applied and catches up from here (:mod:`mars_core.index`). It names ids,
  never text.

Every public call of a store is one transaction (:meth:`RecordStore.write`): it commits
whole or not at all. Reads go through :meth:`RecordStore.read`, a committed snapshot.
The writes of memories, edges and audit events are values (:class:`InsertMemory`,
:class:`UpdateMemory`, :class:`UpdateStats`, :class:`DeleteMemory`, :class:`SetVector`,
:class:`AddEdges`, :class:`AppendAudit`) that :meth:`RecordTxn.apply` writes in order;
the change log and the positions of the indexes that follow it are a protocol of their
own (:class:`ChangeLog`).
Vectors live here too (the index is derived from them): a lost or lagging index is
rebuilt without running the embedder again, and a reopened store reads back the exact
float32 vectors it wrote, so scores never drift across a reopen.

What differs between stores is declared in :class:`RecordCapabilities`, never probed.

Examples:
    >>> from mars_core.storage import SQLiteRecordStore
    >>> records = SQLiteRecordStore()          # in RAM
    >>> records.capabilities.durable
    False
    >>> with records.write() as tx:
    ...     tx.put_namespace(NamespaceRecord("maya", step=3))
    >>> with records.read() as tx:
    ...     tx.namespace("maya").step
    3
    >>> import numpy as np
    >>> from mars_core.model import MemoryNode
    >>> node = MemoryNode(id="m1", type="semantic", content="Ana likes tea", weight=4,
    ...                   namespace="maya", payload={"kind": "semantic"})
    >>> with records.write() as tx:
    ...     tx.apply([InsertMemory(node, np.ones(4, np.float32))])
    >>> with records.read() as tx:
    ...     tx.memory("m1").content, [c.memory_id for c in tx.changes(0)]
    ('Ana likes tea', ['m1'])
    >>> records.close()
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from mars_core.audit import GENESIS, AuditEvent
from mars_core.errors import ValidationError
from mars_core.model import Edge, IndexRow, MemoryNode, MemoryStatus, MemoryType

__all__ = [
    "MAX_TIMEOUT",
    "AddEdges",
    "AppendAudit",
    "Change",
    "ChangeLog",
    "ChangeLogStore",
    "DeleteMemory",
    "IndexRow",
    "InsertMemory",
    "MemoryOp",
    "NamespaceRecord",
    "NamespaceTotals",
    "RecordCapabilities",
    "RecordOp",
    "RecordStore",
    "RecordTxn",
    "SensitiveRow",
    "SetVector",
    "TermHits",
    "TermQuery",
    "UpdateMemory",
    "UpdateStats",
    "Vector",
    "check_timeout",
    "index_fields",
]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class RecordCapabilities:
    """What a record store guarantees (declared by each implementation).

    Attributes:
        durable: a committed transaction survives the process (a file or a server).
        multi_process: other processes may open the same store at once; each read is a
            committed snapshot.
        exclusive_writer: at most one process writes at a time (a second writer waits,
            then gets :class:`~mars_core.errors.ConflictError`), so the writer's cached
            views are never stale. Without it several processes write at once: a store
            checks a namespace's version on every call, numbers new memories with
            :meth:`RecordStore.next_counter`, and commits only when the namespaces it
            read are unchanged (:meth:`RecordTxn.lock_namespaces`).
        purges_on_erase: after :meth:`RecordStore.purge`, no erased byte survives in
            the store's files (SQLite: ``secure_delete`` plus a truncating WAL checkpoint).
    """

    durable: bool
    multi_process: bool
    exclusive_writer: bool
    purges_on_erase: bool


@dataclass(frozen=True, slots=True)
class NamespaceRecord:
    """The persisted state of one namespace.

    Attributes:
        name: the namespace.
        version: how many committed transactions changed it (caches compare it).
        step: the interaction counter Δn (seed 004 §6).
        touch: the recency counter: every insert, restore and access takes the next
            value (the LRU and FIFO orders).
        audit_count: events in the namespace's audit chain.
        audit_head: hash of the chain's newest event.
        state: JSON of what cannot be rebuilt from the memories: the policy's learned
            state, the differential-privacy accountant, the privacy preferences.
    """

    name: str
    version: int = 0
    step: int = 0
    touch: int = 0
    audit_count: int = 0
    audit_head: str = GENESIS
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NamespaceTotals:
    """Counts and tokens of one namespace, by status (and active tokens by type)."""

    active: int = 0
    archived: int = 0
    tokens: int = 0
    tokens_by_type: Mapping[MemoryType, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SensitiveRow:
    """A memory at least some sensitivity, as the output check compares it: its id,
    creation ``seq`` and stored vector (:meth:`RecordTxn.sensitive`)."""

    id: str
    seq: int
    vector: Vector


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of the change log: the index entry of ``memory_id`` changed."""

    seq: int
    namespace: str
    memory_id: str


@dataclass(frozen=True, slots=True)
class TermQuery:
    """A full-text query on one namespace's memories: Okapi BM25 over the terms the
    store indexed (:func:`mars_core.reading.analysis.terms` of each memory's
    :attr:`~mars_core.model.MemoryNode.search_text`).

    The statistics — how many memories, their mean length in terms, how many hold a
    term — are those of the memories of ``namespace`` with one of ``statuses``, never
    another namespace's: a tenant's vocabulary does not move another's ranking.

    Attributes:
        namespace: the namespace searched.
        terms: the query's analysed terms (repeats count once).
        statuses: the partitions searched (their statistics are pooled).
        k: how many memories to return at most.
        since: ``created_ts`` lower bound (inclusive), or ``None``: only memories created
            in the window are returned; the statistics stay the partitions' own.
        until: ``created_ts`` upper bound (inclusive), or ``None``.
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation.
    """

    namespace: str
    terms: tuple[str, ...]
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
    k: int = 10
    since: float | None = None
    until: float | None = None
    k1: float = 0.9
    b: float = 0.4


@dataclass(frozen=True, slots=True)
class TermHits:
    """The answer to a :class:`TermQuery`.

    Attributes:
        hits: ``(memory id, BM25 score)``, best first, ties by id; scores > 0.
        best: the best score of any memory of the partitions, window or not (what
            retrieval normalises by, so a window leaves hits out and never rescales).
    """

    hits: list[tuple[str, float]]
    best: float


MAX_TIMEOUT = 2_147_483.0
"""The longest wait a record store takes (seconds): SQLite's ``busy_timeout`` and
PostgreSQL's ``lock_timeout`` are 32-bit counts of milliseconds (about 24.8 days)."""


def check_timeout(value: object, what: str) -> float:
    """A wait in seconds: a finite number from 0 to :data:`MAX_TIMEOUT` (not a bool).

    Raises:
        ValidationError: anything else (``float("inf")`` too: no wait is endless).

    Examples:
        >>> check_timeout(5, "lock_timeout")
        5.0
    """
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 <= value <= MAX_TIMEOUT:
        shown = repr(value) if isinstance(value, float) or (
            isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**20) \
            else type(value).__name__
        raise ValidationError(f"{what} must be a number of seconds from 0 to "
                              f"{MAX_TIMEOUT:,.0f} (about 24.8 days), not {shown}")
    return float(value)


def index_fields(node: MemoryNode) -> dict[str, str | int | float | bool]:
    """The filter fields a vector index keeps of a memory (no text).

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> n = MemoryNode(id="m1", type="semantic", content="x", weight=1,
        ...                payload={"kind": "semantic"})
        >>> sorted(index_fields(n))
        ['conversation', 'created_ts', 'sensitivity', 'type']
    """
    return {"type": node.type.value, "sensitivity": float(node.sensitivity),
            "created_ts": node.created_at.timestamp(),
            "conversation": node.provenance.conversation_id or ""}


# --- the writes of a transaction, as values (RecordTxn.apply) -------------------------------


@dataclass(frozen=True, slots=True)
class InsertMemory:
    """Store a new memory with its embedding and its outgoing edges (logs a change).

    New memories one after the other in :meth:`RecordTxn.apply` are stored in as few
    statements as the database allows (a bulk ingest writes thousands), then their edges,
    in the order they came.

    Raises:
        ConflictError: the id exists, or comes twice in the run (nothing is written).
    """

    node: MemoryNode
    vector: Vector
    edges: tuple[Edge, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateMemory:
    """Rewrite a memory's mutable metadata (status, sensitivity, pin, expiry, user
    metadata, signals) and its access statistics (a restore also moves its recency), and
    store new edges of its own; ``reindex`` logs a change (status or sensitivity
    changed)."""

    node: MemoryNode
    reindex: bool
    edges: tuple[Edge, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateStats:
    """Rewrite a memory's access statistics (count, last access, recency)."""

    node: MemoryNode


@dataclass(frozen=True, slots=True)
class DeleteMemory:
    """Erase a memory: its row, statistics and edges (logs a change; a memory no longer
    stored is a no-op). ``node`` is the memory as it was read (its id names the rows)."""

    node: MemoryNode


@dataclass(frozen=True, slots=True)
class SetVector:
    """Replace a memory's embedding (re-embedding; logs a change)."""

    memory_id: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class AddEdges:
    """Store edges of a namespace (an edge already there is kept as it is)."""

    namespace: str
    edges: tuple[Edge, ...]


@dataclass(frozen=True, slots=True)
class AppendAudit:
    """Append audit events (each already chained to its namespace's head)."""

    events: tuple[AuditEvent, ...]


MemoryOp = InsertMemory | UpdateMemory | UpdateStats | DeleteMemory
"""A write of one memory, as a unit of work stages it (:mod:`mars_core.engine.unit`)."""

RecordOp = MemoryOp | SetVector | AddEdges | AppendAudit
"""A write :meth:`RecordTxn.apply` takes."""


class ChangeLog(Protocol):
    """The change log of a record store and the positions of the vector indexes that
    follow it: what the index follower (:mod:`mars_core.engine.indexing`) reads and
    writes in a transaction — the changes, the index rows they name (and how many there
    are, for a rebuild's progress), and each registered index's position, stamp and
    lock."""

    def changes(self, after: int) -> list[Change]:
        """Change-log entries after ``after``, oldest first."""
        ...

    def last_change(self) -> int:
        """Number of the newest change-log entry (0: none yet)."""
        ...

    def first_change(self) -> int:
        """Number of the oldest change-log entry still kept (0: none)."""
        ...

    def prune_changes(self, through: int) -> None:
        """Drop change-log entries up to ``through`` (an index has applied them)."""
        ...

    def index_rows(self, namespace: str | None = None, ids: Sequence[str] | None = None
                   ) -> Iterator[IndexRow]:
        """What a vector index holds: of one namespace, of some ids, or of everything."""
        ...

    def totals(self, namespace: str | None = None) -> dict[str, NamespaceTotals]:
        """Counts and tokens of one namespace, or of every namespace with memories."""
        ...

    def index_positions(self) -> dict[str, int]:
        """The registered vector indexes that follow this store's change log, each
        with the last change it holds: ``{index key: change number}``
        (:mod:`mars_core.engine.indexing`)."""
        ...

    def index_stamps(self) -> dict[str, str]:
        """The stamp recorded beside each registered index's position: what the index
        said it was (its identity and the epoch of its last emptying,
        :attr:`~mars_core.index.base.VectorIndex.stamp`) when the position was set;
        ``""`` when none was given."""
        ...

    def set_index_position(self, key: str, applied: int, stamp: str | None = None) -> None:
        """Register the index ``key`` as holding every change up to ``applied``;
        ``stamp``: the index's stamp (``None`` keeps the one recorded)."""
        ...

    def drop_index_position(self, key: str) -> None:
        """Forget the index ``key`` (no longer follows the change log here; a missing
        key is a no-op)."""
        ...

    def lock_index(self, key: str, *, shared: bool = False) -> None:
        """Hold the index ``key`` until the transaction ends: one process at a time
        applies the change log to a shared index (a store with one writer holds it
        already). ``shared``: hold it beside other shared holders (queries), waiting
        only for an exclusive one (a read transaction may ask for that).

        Raises:
            ConflictError: an exclusive hold in a read transaction, or the wait
                outlasted the lock timeout.
        """
        ...


class ChangeLogStore(Protocol):
    """What the index follower needs of a record store: what it guarantees, and its
    transactions as a :class:`ChangeLog`."""

    capabilities: RecordCapabilities
    """What the store guarantees (several writers share an index without
    ``exclusive_writer``)."""

    def read(self) -> AbstractContextManager[ChangeLog]:
        """A committed snapshot (see :meth:`RecordStore.read`)."""
        ...

    def write(self) -> AbstractContextManager[ChangeLog]:
        """One transaction (see :meth:`RecordStore.write`)."""
        ...


@runtime_checkable
class RecordTxn(ChangeLog, Protocol):
    """One transaction on a record store: a committed snapshot to read, and (opened by
    :meth:`RecordStore.write`) the writes of one public call: the writes of memories,
    edges and audit events as values (:meth:`apply`), the manifest, counter and namespace
    records by their own methods, and the change log (:class:`ChangeLog`)."""

    # --- reading ---------------------------------------------------------------------

    def manifest(self) -> dict[str, Any] | None:
        """The store's manifest, or ``None`` for a store never written."""
        ...

    def counter(self) -> int:
        """The store-wide memory counter: at least the last ``seq`` given out (by
        :meth:`set_counter` or :meth:`RecordStore.next_counter`)."""
        ...

    def namespace(self, name: str) -> NamespaceRecord | None:
        """A namespace's record, or ``None``."""
        ...

    def namespace_names(self) -> list[str]:
        """Every namespace with a record or a memory, sorted."""
        ...

    def memories(self, namespace: str, status: MemoryStatus | None = None) -> list[MemoryNode]:
        """The memories of a namespace (of one status, or all), by ``seq``."""
        ...

    def scan(self, namespace: str) -> Iterator[list[MemoryNode]]:
        """Every memory of a namespace (active and archived), by ``seq``, a batch at a
        time, so a pass over a large namespace (an erasure's plan, a verification) never
        holds all of its memories at once."""
        ...

    def memory(self, memory_id: str) -> MemoryNode | None:
        """One memory by id (any namespace), or ``None``."""
        ...

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` name a stored memory (any namespace)."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored embeddings by id (missing ids are left out)."""
        ...

    def sensitive(self, namespace: str, at_least: float) -> list[SensitiveRow]:
        """The memories of a namespace (active or archived) whose sensitivity is at least
        ``at_least``, with their vectors, by ``seq``: the protected facts the output
        check compares what it is about to show against, read without the rest of the
        namespace."""
        ...

    def memories_by_id(self, namespace: str, ids: Sequence[str]) -> list[MemoryNode]:
        """The memories of ``namespace`` among ``ids`` (others are left out), by ``seq``."""
        ...

    def ids_in_window(self, namespace: str, status: MemoryStatus, since: float | None,
                      until: float | None) -> list[str]:
        """Ids of the memories of one partition created in ``[since, until]``
        (``created_ts``; ``None``: open), by ``seq``."""
        ...

    def latest_episode(self, namespace: str, conversation: str | None) -> str | None:
        """The newest episodic memory of a conversation (``None``: of no conversation),
        or ``None``."""
        ...

    def newest_ids(self, namespace: str, n: int, *, status: MemoryStatus | None = None,
                   mtype: MemoryType | None = None) -> list[str]:
        """The ids of the ``n`` newest memories of a namespace (of ``status`` and type
        ``mtype`` when given; any otherwise), oldest first."""
        ...

    def search_terms(self, query: TermQuery) -> TermHits:
        """Full-text search of one namespace (see :class:`TermQuery`)."""
        ...

    def edges(self, namespace: str) -> list[Edge]:
        """Every edge of a namespace."""
        ...

    def scan_edges(self, namespace: str) -> Iterator[list[Edge]]:
        """Every edge of a namespace, by :attr:`~mars_core.model.Edge.key` (code point
        order), a batch at a time (an export never holds them all)."""
        ...

    def edges_of(self, namespace: str, ids: Sequence[str]) -> list[Edge]:
        """The edges of ``namespace`` that leave or enter one of ``ids``."""
        ...

    def audit(self, namespace: str | None = None) -> list[AuditEvent]:
        """Audit events of one namespace (chain order) or of all (commit order)."""
        ...

    def audit_for(self, memory_id: str) -> list[AuditEvent]:
        """Audit events naming a memory, in commit order."""
        ...

    def audit_size(self) -> int:
        """How many audit events the store holds."""
        ...

    def audit_heads(self, upto: int | None = None) -> tuple[int, dict[str, tuple[int, str]]]:
        """Each namespace's chain head at a commit position: ``(position, {namespace:
        (events up to it, hash of the last)})``. The position grows with every appended
        event and is never reused; ``None``: now (the latest position)."""
        ...

    # --- writing (a write transaction only) -----------------------------------------------

    def put_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Write the manifest."""
        ...

    def set_counter(self, value: int) -> None:
        """Set the store-wide memory counter (a single writer numbering its memories,
        or an import moving it past the numbers it brought)."""
        ...

    def lock_namespaces(self, names: Sequence[str]) -> dict[str, int]:
        """Hold these namespaces until the transaction ends; returns their committed
        versions (0: no record), read once they are held.

        A second writer asking for one of them waits until this transaction commits or
        rolls back; writers of other namespaces do not wait. A store with one writer
        (``exclusive_writer``) holds them all already. Ask for every namespace at once,
        first in the transaction (the order then never deadlocks).

        Raises:
            ConflictError: a read transaction, or the wait outlasted the store's lock
                timeout (nothing was written).
        """
        ...

    def put_namespace(self, record: NamespaceRecord) -> None:
        """Insert or replace a namespace's record."""
        ...

    def rename_namespace(self, old: str, new: str, events: Sequence[AuditEvent]) -> None:
        """Give an emptied namespace another name in every row that names it: its record,
        its change-log entries and its audit chain, whose events are replaced by
        ``events`` — the chain's events, in order, renamed by the caller (who holds the
        audit key, and hashes them). An erased namespace leaves its name nowhere this way
        (:func:`~mars_core.audit.erased_name`).

        Raises:
            ConflictError: the namespace still holds memories or edges, ``new`` is taken,
                or ``events`` is not one event per event of the chain (nothing is
                changed).
        """
        ...

    def apply(self, ops: Sequence[RecordOp]) -> None:
        """Write ``ops`` in order (see each op: :class:`InsertMemory`,
        :class:`UpdateMemory`, :class:`UpdateStats`, :class:`DeleteMemory`,
        :class:`SetVector`, :class:`AddEdges`, :class:`AppendAudit`).

        Raises:
            ValidationError: an op of another type (checked before anything is written).
            ConflictError: a read transaction, or a new memory's id is taken.
        """
        ...


class RecordStore(Protocol):
    """The system of record: transactions over the rows above.

    Every method raises only :class:`~mars_core.errors.MarsError` subclasses.
    """

    name: str
    """Short name recorded in the manifest and shown by ``stats()`` (``sqlite``, ...)."""

    capabilities: RecordCapabilities
    """What this store guarantees."""

    location: str
    """Where the records are (a path, ``memory``, a server)."""

    def read(self) -> AbstractContextManager[RecordTxn]:
        """A committed snapshot to read (inside a write transaction: that transaction)."""
        ...

    def write(self, *, durable: bool = True) -> AbstractContextManager[RecordTxn]:
        """One transaction: committed when the block ends, rolled back if it raises.

        ``durable=False``: the commit does not wait for the disk (SQLite's
        ``synchronous=NORMAL``, PostgreSQL's ``synchronous_commit=off``, for this
        transaction only). It is as atomic as any other and survives a crash of the
        process; a power cut (or a crash of the database server) may roll back the last
        such commits, never one made before a durable commit returned. The store uses
        it for what a read records (:mod:`mars_core.engine.reader`). Inside an open
        transaction, that transaction's durability applies.

        Raises:
            ConflictError: another writer holds the store past the wait allowed.
            StoreClosedError: the store was closed.
        """
        ...

    def next_counter(self) -> int:
        """A new value of the store-wide memory counter: above every value given out or
        set before, and never given out again, even to another process at the same
        moment (a transaction that fails does not take it back; the gap is harmless).
        A store that is not ``exclusive_writer`` numbers its new memories with it.

        Raises:
            ConflictError: the store is read-only.
            StoreClosedError: the store was closed.
        """
        ...

    def purge(self) -> str:
        """After an erasure: make deleted bytes unrecoverable from the files; returns
        what was done (for the erasure receipt)."""
        ...

    def close(self) -> None:
        """Release the store (idempotent)."""
        ...
