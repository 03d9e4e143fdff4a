"""Keeping the vector index in step with the record store.

The record store commits first; the index follows (:meth:`IndexSync.after_commit`). The
record store numbers every change of an index entry (its change log) and keeps, for each
persistent index, the number of the last one the index applied (its *position*, keyed
``"<index name>@<location>"``, written every :data:`MARK_EVERY` changes, at close and
after an erasure, always *after* the index write it covers) beside the index's stamp
(:attr:`~mars_core.index.base.VectorIndex.stamp`: its identity and the epoch of its last
emptying). An open hands the recorded positions to the index, which trusts the one
recorded under its own stamp and reads nothing else: opening a Chroma store touches only
the collection a query asks. An index emptied, replaced or taken by another store since
has another stamp and is caught up from 0 (rebuilt); a store moved to another directory
finds its index's position under the old key by the stamp and moves it. So:

* an index that loads on demand (numpy, in the process) is updated at once;
* a persistent index (Chroma, Qdrant) is written behind: a commit's entries wait in a
  buffer until :data:`FLUSH_AT` of them, a mark, an erasure or close, and then go in one
  batched write — a bulk of single adds, or an agent's turn after turn, costs the index
  what one batch does. A query sees them without a write (:meth:`IndexSync.query`): the
  index answers for what it holds, asked for as many more entries as the buffer holds of
  the namespace, an entry the buffer changed or deleted is left out of its answer, and
  the buffered entries of the partition are scored in the process and merged in. The
  buffer is only a cache: the commits are in the records;
* a crash with entries still in the buffer, or between a commit and its index write,
  loses nothing: the next open replays the changes after the mark (idempotent upserts
  and deletes, vectors from the records);
* an index write that fails (a server away) leaves the store usable: the commit stands,
  the index is caught up from the change log before the next query;
* an index that is empty, belongs to another store or embedder, was emptied or replaced
  since its position was recorded (another stamp), or is older than the kept log is
  rebuilt from the records. Records restored from a backup vouch for the index as it was
  then: a restore rebuilds the index (``mars reindex``), as the deployment guide says.

The change log is pruned up to the position (for an index that loads on demand: every
:data:`MARK_EVERY` changes). Nothing here decides what a memory is; it copies.

**Several writing processes with a persistent index** (a server; a record store
without ``exclusive_writer``) share it: nothing is buffered per process. The records keep
the index's position (:meth:`~mars_core.storage.base.RecordTxn.index_positions`, keyed
``"<index name>@<location>"``); before a query a process reads it and, when the index
is behind, holds the index (:meth:`~mars_core.storage.base.RecordTxn.lock_index`) and
applies the change log from that position, whoever committed the changes, then moves
it. A process that dies leaves nothing out; the log is pruned only below the lowest
position of every registered index; a bind starts from the lower of the index's own
mark and the recorded position.

Examples:
    >>> MARK_EVERY, FLUSH_AT
    (1000, 256)
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import TypeVar

import numpy as np

from mars_core.errors import ConflictError, MarsBackendError
from mars_core.index.base import (
    Filter,
    IndexCapabilities,
    VectorIndex,
    VectorQuery,
    as_vector,
    matches,
    unit,
)
from mars_core.model import MemoryNode, MemoryStatus
from mars_core.progress import ProgressFn, report
from mars_core.storage.base import ChangeLog, ChangeLogStore, IndexRow, Vector, index_fields

__all__ = ["FLUSH_AT", "MARK_EVERY", "IndexSync"]

MARK_EVERY = 1000
"""Changes between two marks of a persistent index (a crash replays at most this many)."""

FLUSH_AT = 256
"""Buffered entries that make a persistent index flush before any query asks it to."""

_T = TypeVar("_T")
_BATCH = 500
"""Rows read from the records per index write when catching up or rebuilding (a bound
on what is held at once, and the step of a rebuild's progress)."""
log = logging.getLogger(__name__)


class IndexSync:
    """The index's follower of the record store (see the module).

    Args:
        records: the system of record.
        index: the vector index.
        writer: whether this store writes (a reader only queries, and leaves a lagging
            index to its writer).
    """

    def __init__(self, records: ChangeLogStore, index: VectorIndex, *, writer: bool) -> None:
        self.records, self.index, self.writer = records, index, writer
        self.applied = 0   # the last change the index holds
        self.marked = 0    # the last change its mark says it holds
        self.pruned = 0    # the last change pruned from the log
        self.behind = False
        self.rebuilt = False
        self.ahead: tuple[int, int] | None = None
        """``(the index's position, the records' last change)`` when an open found the
        index ahead of the records (they lost committed writes) and rebuilt it."""
        self._rows: dict[str, IndexRow] = {}  # written behind: the newest row of each id
        self._new: set[str] = set()  # ids of _rows the index has never held
        self._gone: dict[str, str] = {}  # ids to delete, with their namespace
        self._last = 0  # the change number the buffer reaches
        self._retry_at = 0  # a shared index that was away: the change to try again at
        # several processes write the records and share a persistent index (a server):
        # the index's position is in the records, and one of them at a time applies
        # the change log from there (see the module)
        self.shared = (not records.capabilities.exclusive_writer
                       and index.capabilities.persistent)
        self.key = f"{index.name}@{index.location}"

    # --- binding and catching up ----------------------------------------------------------

    def bind(self, identity: str, dim: int) -> None:
        """Attach the index; catch it up or rebuild it, and record its position (a
        writer)."""
        self._clear_buffer()  # what it held is in the records, which the index follows
        with self.records.read() as tx:
            last, first = tx.last_change(), tx.first_change()
            positions, stamps = tx.index_positions(), tx.index_stamps()
        recorded: dict[str, int] = {}
        for key, stamp in stamps.items():  # the lower, should two keys share a stamp
            if stamp and key in positions:
                recorded[stamp] = min(positions[key], recorded.get(stamp, positions[key]))
        applied = self.index.bind(identity, dim, self._rows_of, recorded)
        self.applied = self.marked = self.pruned = last
        caps = self.index.capabilities
        if caps.loads_on_demand or not self.writer:
            return
        if applied > last:
            self.ahead = (applied, last)
            log.warning("the vector index at %s holds changes up to %d but the records end "
                        "at %d: the record store lost committed writes (its write-ahead log "
                        "deleted, or an older copy put back); the index is rebuilt from the "
                        "records", self.index.location, applied, last)
        self.applied = self.marked = applied
        if self.shared:
            self._bind_shared(applied)
            return
        if applied != last:
            if applied == 0 or applied > last or (first and first > applied + 1) or \
                    not first:
                self.rebuild()
            else:
                self.catch_up()
        if caps.persistent:
            self._register(positions, stamps)

    def _register(self, positions: dict[str, int], stamps: dict[str, str]) -> None:
        """Record the bound index's position and stamp under its key, unless the
        records say so already (an open of a current index writes nothing); the same
        stamp under another key (the store was moved: the index's location changed) is
        dropped."""
        stamp = self.index.stamp
        moved = [k for k, s in stamps.items() if stamp and s == stamp and k != self.key]
        if not moved and stamps.get(self.key) == stamp and \
                positions.get(self.key) == self.applied == self.marked:
            return
        with self.records.write() as tx:
            for key in moved:
                tx.drop_index_position(key)
            tx.set_index_position(self.key, self.applied, stamp)
        self.marked = self.applied

    def rebuild(self, progress: ProgressFn | None = None) -> int:
        """Empty the index and write every memory again from the records; returns how
        many entries were written (``progress``: stage ``index``, per batch)."""
        if self.shared:
            with self.records.write() as tx:
                tx.lock_index(self.key)
                count = self._rebuild_in(tx, tx.last_change(), progress)
                tx.set_index_position(self.key, self.applied, self.index.stamp)
            self.flush()
            return count
        with self.records.read() as tx:
            count = self._rebuild_in(tx, tx.last_change(), progress)
        self.flush()
        return count

    def catch_up(self) -> int:
        """Apply the changes after :attr:`applied`; returns how many memories changed."""
        if self.shared:
            return self.sync_shared()
        with self.records.read() as tx:
            count = self._apply(tx)
        if count:  # its position is written after the read (a write cannot nest in it)
            self.index.mark(self.applied)
            self._maybe_mark()
        return count

    def _apply(self, tx: ChangeLog) -> int:
        """Apply the changes after :attr:`applied` that ``tx`` sees."""
        changes = tx.changes(self.applied)
        if not changes:
            self.behind = False
            return 0
        last = changes[-1].seq
        latest = {c.memory_id: c.namespace for c in changes}
        rows = {r.id: r for r in tx.index_rows(ids=list(latest))}
        gone: dict[str, list[str]] = {}
        for memory_id, ns in latest.items():
            if memory_id not in rows:
                gone.setdefault(ns, []).append(memory_id)
        for chunk in _chunks(iter(rows.values())):
            self.index.upsert(chunk)
        for ns, ids in gone.items():
            self.index.delete(ns, ids)
        self.applied, self.behind = last, False
        return len(latest)

    # --- a shared index (several writing processes) -------------------------------------------

    def _bind_shared(self, marked: int) -> None:
        """Bind a shared index: start from the lower of its own mark and the position
        the records keep for it (a restored or emptied index, or one whose process died
        between its index write and its commit, replays from there), or rebuild."""
        try:
            self._bind_locked(marked)
        except ConflictError:  # held past lock_timeout: another process is at work on
            # it; this one's queries catch up from the recorded position like any other
            with self.records.read() as tx:
                known = tx.index_positions().get(self.key, 0)
            self.applied = self.marked = self.pruned = known

    def _bind_locked(self, marked: int) -> None:
        with self.records.write() as tx:
            tx.lock_index(self.key)
            last, first = tx.last_change(), tx.first_change()
            known = tx.index_positions().get(self.key)
            start = marked if known is None else min(known, marked)
            if start == 0 or start > last or (first and first > start + 1) or \
                    (not first and start != last):
                self._rebuild_in(tx, last)
            else:
                self.applied = start
                self._apply(tx)
                self.applied = max(self.applied, last)
            tx.set_index_position(self.key, self.applied, self.index.stamp)
        self.index.mark(self.applied)
        self.marked = self.pruned = self.applied

    def _rebuild_in(self, tx: ChangeLog, last: int,
                    progress: ProgressFn | None = None) -> int:
        self._clear_buffer()
        self.index.clear()
        count = 0
        total = sum(t.active + t.archived for t in tx.totals().values())
        report(progress, "index", 0, total)
        for chunk in _chunks(tx.index_rows()):
            self.index.upsert(chunk, new=True)
            count += len(chunk)
            report(progress, "index", min(count, total), total)
        if count != total:
            report(progress, "index", count, count)
        self.applied, self.behind, self.rebuilt = last, False, True
        self.index.mark(last)
        return count

    def sync_shared(self) -> int:
        """Bring a shared index up to the last commit of any process: a cheap read of
        its position; when behind, hold the index (one process at a time), apply the
        change log from the position the records keep, and move it. Returns how many
        memories changed. A failed index write changes nothing (the position stays)."""
        with self.records.read() as tx:
            known = tx.index_positions().get(self.key, 0)
            if known >= tx.last_change():
                self.applied, self.behind = max(self.applied, known), False
                return 0
        try:
            with self.records.write() as tx:
                tx.lock_index(self.key)
                self.applied = tx.index_positions().get(self.key, 0)
                count = self._apply(tx)
                if count:  # the index's own mark stays with the position (_bind_shared)
                    self.index.mark(self.applied)
                    self.marked = self.applied
                tx.set_index_position(self.key, self.applied)
        except ConflictError:  # held past lock_timeout: another process is applying it
            log.info("the shared index is being caught up by another process")
            return 0
        return count

    def _sync_after_commit(self) -> bool:
        """Apply the change log to a shared index after commits (or at a close): a
        failure is logged, not raised, since the commits stand (as for a private index,
        :meth:`_flush_buffer`); the next query catches the index up, or raises while it
        is still away. Whether the index is current."""
        try:
            self.sync_shared()
        except MarsBackendError as exc:
            self.behind = True
            log.warning("the shared vector index could not follow committed writes (%s); "
                        "it is caught up from the records before the next query", exc)
            return False
        return True

    def compact(self, namespaces: Sequence[str]) -> str:
        """Rewrite the namespaces' partitions without deleted vectors (after an
        erasure); a shared index does it holding the index, so no other process
        applies the log to those partitions meanwhile.

        Raises:
            ConflictError: another process held the index past ``lock_timeout`` (nothing
                was compacted; the namespaces stay pending).
        """
        if not self.shared:
            return self.index.compact(list(namespaces))
        with self.records.write() as tx:
            tx.lock_index(self.key)
            tx.lock_index(self.key + "#queries")  # no query runs while partitions go
            return self.index.compact(list(namespaces))

    @contextlib.contextmanager
    def querying(self) -> Iterator[None]:
        """Around a query of a shared index: beside other queries, never during another
        process's compaction (which drops and rewrites partitions)."""
        if not self.shared:
            yield
            return
        with self.records.read() as tx:
            tx.lock_index(self.key + "#queries", shared=True)
            yield

    @property
    def capabilities(self) -> IndexCapabilities:
        """The index's capabilities."""
        return self.index.capabilities

    def query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
              where: Filter | None = None, *,
              within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """:meth:`~mars_core.index.base.VectorIndex.query` of the index as the last
        commit left it (after :meth:`prepare`): the index, with what is written behind
        merged in without a write (see the module). It writes nothing, so it can run
        inside a read transaction of the records."""
        with self.querying():
            return self._merged(namespace, VectorQuery(status, vector, k, where, within))

    def search(self, namespace: str, queries: Sequence[VectorQuery],
               beside: Callable[[], _T]) -> tuple[list[list[tuple[str, float]]], _T]:
        """The answers of :meth:`query` to ``queries`` of one namespace, and what
        ``beside`` returns. For an index with ``concurrent_queries`` (its queries run
        outside the interpreter: Chroma's graph walks, a server's round trips) the
        queries run on a second thread while ``beside`` (a read of the records) runs on
        the caller's, so the two searches overlap. The index first loads the namespace
        on the caller's thread (:meth:`~mars_core.index.base.VectorIndex.load`: whatever
        reads the records or repairs files), and a shared index is held for queries by
        the caller's transaction, so the second thread touches the index alone. The
        answers are those of :meth:`query` one after the other, whichever thread ran
        them; an error of either side is raised once both have ended. Other indexes
        (numpy, Qdrant's local mode: Python throughout) answer first, then ``beside``
        runs."""
        if not queries:
            return [], beside()
        if not self.index.capabilities.concurrent_queries:
            with self.querying():
                answers = [self._merged(namespace, q) for q in queries]
            return answers, beside()
        self.index.load(namespace)
        found: Future[list[list[tuple[str, float]]]] = Future()

        def ask() -> None:
            try:
                found.set_result([self._merged(namespace, q) for q in queries])
            except BaseException as exc:  # raised on the caller's thread below
                found.set_exception(exc)

        with self.querying():
            worker = threading.Thread(target=ask, name="mars-index-query")
            worker.start()
            try:
                done = beside()
            finally:
                worker.join()
            return found.result(), done

    def _merged(self, namespace: str, q: VectorQuery) -> list[tuple[str, float]]:
        """One query: the index's answer with the buffer merged in (see :meth:`query`)."""
        status, vector, k, where, within = q.status, q.vector, q.k, q.where, q.within
        mine = [r for r in self._rows.values() if r.namespace == namespace]
        gone = {i for i, ns in self._gone.items() if ns == namespace}
        found = self.index.query(namespace, status, vector, k + len(mine) + len(gone),
                                 where, within=within)
        if not mine and not gone:
            return found[:k]
        stale = gone | {r.id for r in mine}
        allowed = None if within is None else set(within)
        qv = unit(as_vector(vector))  # checked by the index's query above
        fresh = [(r.id, float(np.dot(unit(r.vector), qv))) for r in mine
                 if r.status is status and matches(where, r.fields)
                 and (allowed is None or r.id in allowed)]
        merged = [h for h in found if h[0] not in stale] + fresh
        merged.sort(key=lambda h: (-h[1], h[0]))
        return merged[:k]

    def prepare(self) -> None:
        """Before queries: catch up after a failed write, or follow a shared index to the
        last commit of any process (this may write the records: call it outside a read
        transaction)."""
        if not self.writer:
            return
        if self.shared:
            self.sync_shared()
        elif self.behind:
            self._clear_buffer()
            self.catch_up()

    def ensure_current(self) -> None:
        """Bring the index up to the last commit: flush what is written behind, or catch
        up after an index write that failed (before a query, an erasure's compaction,
        a close)."""
        if not self.writer:
            return
        if self.shared:
            self.sync_shared()
            return
        if self.behind:
            self._clear_buffer()
            self.catch_up()
        elif self._rows or self._gone:
            self._flush_buffer()

    # --- following commits ------------------------------------------------------------------

    def after_commit(self, inserted: Sequence[tuple[MemoryNode, Vector]],
                     changed: Sequence[IndexRow], deleted: Sequence[MemoryNode],
                     last: int) -> None:
        """Take a committed unit's index changes (``last``: its newest change number):
        at once for an index that loads on demand, into the write-behind buffer for a
        persistent one."""
        if self.index.capabilities.loads_on_demand:
            self._push(inserted, changed, deleted)
            self.applied = last
            if last - self.pruned >= MARK_EVERY:
                self._prune(last)
            return
        if self.shared:  # the change log has it: applied before the next query
            if last - self.applied >= FLUSH_AT and last >= self._retry_at and \
                    not self._sync_after_commit():  # away: try again FLUSH_AT changes on
                self._retry_at = last + FLUSH_AT
            return
        if self.behind:  # a failed write: the change log has it all
            return
        for node, vector in inserted:
            self._rows[node.id] = IndexRow(node.id, node.namespace, node.status, vector,
                                           index_fields(node))
            self._new.add(node.id)
            self._gone.pop(node.id, None)
        for row in changed:
            self._rows[row.id] = row
        for node in deleted:
            self._rows.pop(node.id, None)
            if node.id in self._new:  # never reached the index: nothing to delete there
                self._new.discard(node.id)
            else:
                self._gone[node.id] = node.namespace
        self._last = last
        if len(self._rows) + len(self._gone) >= FLUSH_AT:
            self._flush_buffer()

    def _flush_buffer(self) -> None:
        """Write the buffer in batches. A failure is logged, not raised: the commits
        stand, and the index is caught up from the change log before the next query."""
        rows, new, gone, last = self._rows, self._new, self._gone, self._last
        self._clear_buffer()
        try:
            # one call each: the index splits a batch as its client requires (Chroma's
            # max batch size, Qdrant's request size), and each call of a persistent
            # index costs a save of what it changed, so fewer calls cost less
            fresh = [r for r in rows.values() if r.id in new]
            moved = [r for r in rows.values() if r.id not in new]
            if fresh:
                self.index.upsert(fresh, new=True)
            if moved:
                self.index.upsert(moved)
            by_ns: dict[str, list[str]] = {}
            for memory_id, ns in gone.items():
                by_ns.setdefault(ns, []).append(memory_id)
            for ns, ids in by_ns.items():
                self.index.delete(ns, ids)
        except MarsBackendError as exc:
            self.behind = True
            log.warning("the vector index could not follow committed writes (%s); it is "
                        "caught up from the records before the next query", exc)
            return
        self.applied = last
        self.index.mark(last)  # the index's own witness of what it holds
        self._maybe_mark()

    def _clear_buffer(self) -> None:
        self._rows, self._new, self._gone = {}, set(), {}

    def _push(self, inserted: Sequence[tuple[MemoryNode, Vector]],
              changed: Sequence[IndexRow], deleted: Sequence[MemoryNode]) -> None:
        if inserted:
            self.index.upsert([IndexRow(n.id, n.namespace, n.status, v, index_fields(n))
                               for n, v in inserted], new=True)
        if changed:
            self.index.upsert(changed)
        by_ns: dict[str, list[str]] = {}
        for node in deleted:
            by_ns.setdefault(node.namespace, []).append(node.id)
        for ns, ids in by_ns.items():
            self.index.delete(ns, ids)

    # --- marks ------------------------------------------------------------------------------

    def _maybe_mark(self) -> None:
        if self.applied - self.marked >= MARK_EVERY:
            self.flush()

    def flush(self) -> None:
        """Flush the buffer, write the index's mark and prune the log behind it (a writer
        with a persistent index; at close, after an erasure, every :data:`MARK_EVERY`
        changes)."""
        if not self.writer:
            return
        if self.shared:
            if self._sync_after_commit():
                self.index.mark(self.applied)
                self.marked = self.applied
                self._prune(self.applied)
            return
        if self._rows or self._gone:
            self._flush_buffer()
        if self.behind:
            return
        if self.index.capabilities.persistent and self.applied != self.marked:
            self.index.mark(self.applied)
            self._record()
        elif self.applied > self.pruned:
            self._prune(self.applied)

    def _record(self) -> None:
        """Record that the index holds every change up to :attr:`applied` — after the
        index writes that got it there returned, so a crash in between leaves a lower
        position, which the next open replays from — and prune the log behind it, in
        one transaction."""
        with self.records.write() as tx:
            tx.set_index_position(self.key, self.applied, self.index.stamp)
            if self.applied > self.pruned:
                tx.prune_changes(self.applied)  # one writer: no other position to wait for
        self.marked, self.pruned = self.applied, max(self.pruned, self.applied)

    def _prune(self, through: int) -> None:
        if not self.writer:
            return
        with self.records.write() as tx:
            if not self.records.capabilities.exclusive_writer:
                # never past an index another process has not applied yet
                through = min([through, *tx.index_positions().values()])
            tx.prune_changes(through)
        self.pruned = through

    def _rows_of(self, namespace: str) -> list[IndexRow]:
        with self.records.read() as tx:
            return list(tx.index_rows(namespace=namespace))


def _chunks(rows: Iterator[IndexRow]) -> Iterator[list[IndexRow]]:
    chunk: list[IndexRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == _BATCH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
