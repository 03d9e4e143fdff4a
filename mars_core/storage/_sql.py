"""The queries the SQL record stores share (SQLite, PostgreSQL), and the row encodings.

Both stores keep the same tables with the same meaning (:mod:`mars_core.storage.base`
lists the rows); :class:`SqlTxn` is a
:class:`~mars_core.storage.base.RecordTxn` written once over them, with ``?``
placeholders. A dialect gives the few things that differ, each a small method:

* how a statement runs and how its driver's errors become ours (:meth:`SqlTxn._cursor`,
  :meth:`SqlTxn._guard`, :meth:`SqlTxn._exec_many`; :meth:`SqlTxn._rows`,
  :meth:`SqlTxn._batches` and :meth:`SqlTxn._exec` are written once over them);
* how a list of ids goes into a query (:meth:`SqlTxn._id_chunks`: SQLite binds at most
  a few hundred ``?``, PostgreSQL takes one array);
* how the change log and the audit events are numbered (:meth:`SqlTxn._log`,
  :meth:`SqlTxn._append_audit`, :meth:`SqlTxn.last_change`): SQLite has one writer and
  numbers them as they come; PostgreSQL numbers them in commit order;
* what holds a namespace (:meth:`SqlTxn.lock_namespaces`) and what orders text
  (:attr:`SqlTxn.TEXT_ORDER`) and edges (:attr:`SqlTxn.EDGE_ORDER`);
* how a full-text search is written for the planner (:meth:`SqlTxn._ranked`,
  :meth:`SqlTxn._postings_of`): the same postings and sums, in the form each planner
  serves best.

Examples:
    >>> import numpy as np
    >>> vector_of(blob_of(np.array([1.5, -0.0], dtype=np.float32))).tolist()
    [1.5, -0.0]
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np
import pydantic
from pydantic_core import from_json

from mars_core.audit import AuditEvent, canonical_json
from mars_core.errors import ConflictError, CorruptStoreError, ValidationError
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType, search_text
from mars_core.reading.analysis import terms as analysed_terms
from mars_core.storage.base import (
    AddEdges,
    AppendAudit,
    Change,
    DeleteMemory,
    IndexRow,
    InsertMemory,
    NamespaceRecord,
    NamespaceTotals,
    RecordOp,
    SensitiveRow,
    SetVector,
    TermHits,
    TermQuery,
    UpdateMemory,
    UpdateStats,
    Vector,
)

__all__ = [
    "BATCH_ROWS",
    "BM25_SQL",
    "BODY",
    "COLUMNS",
    "META",
    "SqlTxn",
    "blob_of",
    "bm25",
    "idf_pairs",
    "stats_row",
    "term_rows",
    "vector_of",
]

BODY = ("payload", "provenance", "created_at", "step", "depth")
"""The immutable fields of a memory kept in its ``body`` JSON (the rest are columns)."""
META = ("pinned", "expires_at", "metadata", "signals", "activated_seq", "archive_reason")
"""The mutable fields kept in its ``meta`` JSON."""
COLUMNS = ("id, namespace, seq, status, type, weight, conversation, created_ts, "
           "sensitivity, content, body, meta")
"""The columns of ``memories`` but its vector, in the order of :meth:`SqlTxn._node`."""
_JOINED = (f"SELECT {', '.join('m.' + c for c in COLUMNS.split(', '))}, s.access_count, "
           "s.last_access_at, s.last_access_step, s.touch_seq "
           "FROM memories m JOIN stats s ON s.id = m.id")


def _checked(column: str) -> str:
    """``column = ?`` as a check on the rows an id's index found, never as an index to
    search by: given ``id IN (…) AND namespace = ?`` and no statistics, SQLite's planner
    takes an index on the namespace and scans the namespace's whole history (1.9 ms
    against 0.03 ms for 12 ids among 2,200 memories, and growing with the history).
    ``|| ''`` keeps the condition and hides the column from the planner, in SQLite and
    PostgreSQL alike."""
    return f"{column} || '' = ?"


BATCH_ROWS = 256
"""Rows a dialect fetches at a time where it reads a batch at a time
(:meth:`SqlTxn._batches`)."""

_INDEX = "index:"
"""The prefix of the ``meta`` keys of the registered indexes' positions."""


def blob_of(vector: Vector) -> bytes:
    """A vector as stored: little-endian float32 bytes."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def vector_of(blob: bytes) -> Vector:
    """A stored vector read back, bit for bit."""
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def stats_row(node: MemoryNode) -> tuple[str, int, str | None, int | None, int]:
    """A memory's ``stats`` row: id, access count, last access (ISO), step, recency."""
    last = node.last_access_at.isoformat() if node.last_access_at is not None else None
    return (node.id, node.access_count, last, node.last_access_step, node.touch_seq)


_MARGIN = 8
"""Memories a full-text query ranks in SQL beyond the ``k`` it returns: the SQL sums its
scores in the database's order, and the exact scores (:func:`bm25`, in Python) decide."""


def term_rows(namespace: str, status: str, memory_id: str, created_ts: float,
              text: str) -> tuple[list[tuple[Any, ...]], int]:
    """A memory's rows of the ``terms`` table (namespace, status, term, id, term
    frequency, length, creation) from its :func:`~mars_core.model.search_text`, and its
    length in terms."""
    counts = Counter(analysed_terms(text))
    return [(namespace, status, term, memory_id, tf, sum(counts.values()), created_ts)
            for term, tf in sorted(counts.items())], sum(counts.values())


def _speaker(mtype: str, body: str) -> str | None:
    """An episode's speaker from its stored ``body`` (its first participant)."""
    if mtype != MemoryType.EPISODIC.value:
        return None
    payload = json.loads(body).get("payload") or {}
    parts = payload.get("participants") or ()
    return str(parts[0]) if parts else None


def bm25(tf: int, length: int, idf: float, avgdl: float, *, k1: float, b: float) -> float:
    """One term's Okapi BM25 weight in one memory.

    Examples:
        >>> round(bm25(1, 4, 1.0, 4.0, k1=0.9, b=0.4), 6)
        1.0
    """
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))


BM25_SQL = "t.tf * ? / (t.tf + ? * (1 - ? + ? * t.length / ?))"
"""A posting's BM25 weight before its idf (arguments: k1 + 1, k1, b, b, the average
length), the same in every dialect's ranking (:meth:`SqlTxn._ranked`)."""


def idf_pairs(idf: Mapping[str, float]) -> list[Any]:
    """``term, idf`` of each term, in the terms' order: a ranking's weights."""
    return [x for t in sorted(idf) for x in (t, idf[t])]


def _memory_row(node: MemoryNode, vector: Vector) -> tuple[Any, ...]:
    """A memory's ``memories`` row (:data:`COLUMNS`, then its vector)."""
    doc = node.model_dump(mode="json")
    return (node.id, node.namespace, node.seq, node.status.value, node.type.value,
            node.weight, node.provenance.conversation_id, node.created_at.timestamp(),
            node.sensitivity, node.content, canonical_json({k: doc[k] for k in BODY}),
            canonical_json({k: doc[k] for k in META}), blob_of(vector))


class SqlTxn:
    """A :class:`~mars_core.storage.base.RecordTxn` over one SQL connection (see the
    module); a dialect subclasses it.

    Args:
        location: where the records are (for messages).
        writable: a write transaction (a read one refuses every write).
    """

    TEXT_ORDER: ClassVar[str] = ""
    """Appended to ``ORDER BY`` of text: byte order, whatever the database's locale."""
    EDGE_ORDER: ClassVar[str] = "rowid"
    """The column that orders edges as they were added."""

    def __init__(self, location: str, writable: bool) -> None:
        self._where = location
        self.writable = writable

    # --- the dialect ---------------------------------------------------------------------

    def _guard(self) -> AbstractContextManager[None]:
        """A context that turns the driver's errors into the store's (conflict, corrupt,
        unavailable)."""
        raise NotImplementedError

    def _cursor(self, sql: str, args: Sequence[Any]) -> Any:
        """Run a query (``?`` placeholders); a DB-API cursor on its result."""
        raise NotImplementedError

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Run a query (``?`` placeholders); its rows."""
        with self._guard():
            rows: list[Any] = self._cursor(sql, args).fetchall()
            return rows

    def _batches(self, sql: str, args: Sequence[Any] = ()) -> Iterator[list[Any]]:
        """Run a query; its rows, :data:`BATCH_ROWS` at a time, so a namespace's raw rows
        are never all held at once (10,000 memories' hold ~15 MB)."""
        with self._guard():
            cursor = self._cursor(sql, args)
        try:
            while True:
                with self._guard():
                    batch: list[Any] = cursor.fetchmany(BATCH_ROWS)
                if not batch:
                    return
                yield batch
        finally:
            cursor.close()

    def _exec(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run a statement that writes (the transaction is writable)."""
        with self._guard():
            self._cursor(sql, args)

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement that writes once per row."""
        raise NotImplementedError

    def _id_chunks(self, ids: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
        """``(condition on a column, its arguments)`` covering ``ids`` (deduplicated),
        as few as the driver allows; the condition follows the column name."""
        wanted = list(dict.fromkeys(ids))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            yield f"IN ({', '.join('?' * len(chunk))})", chunk

    def _log(self, namespace: str, memory_id: str) -> None:
        """Add a change-log entry."""
        raise NotImplementedError

    def _append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Append audit events (each already chained to its namespace's head)."""
        raise NotImplementedError

    def last_change(self) -> int:
        """Number of the newest change-log entry (0: none yet)."""
        raise NotImplementedError

    # --- helpers ---------------------------------------------------------------------------

    def _writes(self) -> None:
        if not self.writable:
            raise ConflictError("a read transaction cannot write")

    def _run(self, sql: str, args: Sequence[Any] = ()) -> None:
        self._writes()
        self._exec(sql, args)

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._writes()
        if rows:
            self._exec_many(sql, rows)

    def _meta(self, key: str) -> str | None:
        found = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return str(found[0][0]) if found else None

    def _put_meta(self, key: str, value: str) -> None:
        self._run("INSERT INTO meta (key, value) VALUES (?, ?) "
                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def _node(self, row: Sequence[Any]) -> MemoryNode:
        # pydantic-core parses the JSON (a third of json.loads' time); it keeps the names
        # it has seen, never the values: what a memory said is not held by a
        # process-wide cache after the memory is erased
        (mid, ns, seq, status, mtype, weight, _conv, _ts, sens, content, body, meta,
         count, last_at, last_step, touch) = row
        try:
            return MemoryNode.model_validate({
                "id": mid, "namespace": ns, "seq": seq, "status": status, "type": mtype,
                "weight": weight, "sensitivity": sens, "content": content,
                **from_json(body, cache_strings="keys"),
                **from_json(meta, cache_strings="keys"), "access_count": count,
                "last_access_at": last_at, "last_access_step": last_step, "touch_seq": touch})
        except (ValueError, TypeError, pydantic.ValidationError) as exc:  # TypeError: a
            # body or meta that is JSON but not an object
            raise CorruptStoreError(f"memory {mid} in {self._where} is unreadable") from exc

    def _event(self, body: str) -> AuditEvent:
        try:
            return AuditEvent.model_validate_json(body)
        except ValueError as exc:
            raise CorruptStoreError(f"an audit event in {self._where} is unreadable") from exc

    def _manifest_text(self) -> str | None:
        """The manifest's row (a dialect may lock it for a read-modify-write)."""
        return self._meta("manifest")

    # --- reading -----------------------------------------------------------------------

    def manifest(self) -> dict[str, Any] | None:
        raw = self._manifest_text()
        if raw is None:
            return None
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise CorruptStoreError(f"the manifest in {self._where} is malformed")
        return doc

    def counter(self) -> int:
        return int(self._meta("counter") or 0)

    def namespace(self, name: str) -> NamespaceRecord | None:
        found = self._rows("SELECT name, version, step, touch, audit_count, audit_head, state "
                           "FROM namespaces WHERE name = ?", (name,))
        if not found:
            return None
        n, version, step, touch, count, head, state = found[0]
        return NamespaceRecord(n, int(version), int(step), int(touch), int(count), head,
                               json.loads(state))

    def namespace_names(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT name FROM (SELECT name FROM namespaces UNION SELECT namespace AS name "
            f"FROM memories) AS n ORDER BY name{self.TEXT_ORDER}")]

    def totals(self, namespace: str | None = None) -> dict[str, NamespaceTotals]:
        # two reads: the active memories' tokens by type (their rows), and the others
        # counted on the (namespace, status) index alone — a long history's rows are
        # never read (100,000 archived: 17 ms instead of 350 on SQLite)
        where, args = ("namespace = ? AND", (namespace,)) if namespace is not None else ("", ())
        active = MemoryStatus.ACTIVE.value
        parts: dict[str, dict[str, Any]] = {}

        def part(ns: str) -> dict[str, Any]:
            return parts.setdefault(ns, {"active": 0, "archived": 0, "tokens": 0, "by": {}})

        for ns, mtype, count, tokens in self._rows(
                "SELECT namespace, type, count(*), sum(weight) FROM memories WHERE "
                f"{where} status = ? GROUP BY namespace, type", [*args, active]):
            part(ns)["active"] += int(count)
            part(ns)["tokens"] += int(tokens)
            part(ns)["by"][MemoryType(mtype)] = int(tokens)
        for ns, status, count in self._rows(
                "SELECT namespace, status, count(*) FROM memories WHERE "
                f"{where} status <> ? GROUP BY namespace, status", [*args, active]):
            part(ns)[status] += int(count)
        return {ns: NamespaceTotals(p["active"], p["archived"], p["tokens"], p["by"])
                for ns, p in sorted(parts.items())}

    def memories(self, namespace: str, status: MemoryStatus | None = None) -> list[MemoryNode]:
        where, args = "m.namespace = ?", [namespace]
        if status is not None:
            where, args = where + " AND m.status = ?", [*args, MemoryStatus(status).value]
        return [self._node(r) for rows in self._batches(
            f"{_JOINED} WHERE {where} ORDER BY m.seq", args) for r in rows]

    def scan(self, namespace: str) -> Iterator[list[MemoryNode]]:
        for rows in self._batches(f"{_JOINED} WHERE m.namespace = ? ORDER BY m.seq",
                                  (namespace,)):
            yield [self._node(r) for r in rows]

    def memory(self, memory_id: str) -> MemoryNode | None:
        found = self._rows(f"{_JOINED} WHERE m.id = ?", (memory_id,))
        return self._node(found[0]) if found else None

    def memories_by_id(self, namespace: str, ids: Sequence[str]) -> list[MemoryNode]:
        out: list[MemoryNode] = []
        for cond, args in self._id_chunks(ids):
            out += [self._node(r) for rows in self._batches(
                f"{_JOINED} WHERE m.id {cond} AND {_checked('m.namespace')}", [*args, namespace])
                for r in rows]
        return sorted(out, key=lambda n: n.seq)

    def ids_in_window(self, namespace: str, status: MemoryStatus, since: float | None,
                      until: float | None) -> list[str]:
        where, args = self._window("created_ts", since, until)
        return [r[0] for rows in self._batches(
            f"SELECT id FROM memories WHERE namespace = ? AND status = ?{where} ORDER BY seq",
            [namespace, MemoryStatus(status).value, *args]) for r in rows]

    def latest_episode(self, namespace: str, conversation: str | None) -> str | None:
        conv, args = ("IS NULL", [namespace]) if not conversation else \
            ("= ?", [namespace, conversation])
        found = self._rows(f"SELECT id FROM memories WHERE namespace = ? AND conversation "
                           f"{conv} AND type = 'episodic' ORDER BY seq DESC LIMIT 1", args)
        return str(found[0][0]) if found else None

    def newest_ids(self, namespace: str, n: int, *, status: MemoryStatus | None = None,
                   mtype: MemoryType | None = None) -> list[str]:
        where, args = "namespace = ?", [namespace]
        if status is not None:
            where, args = where + " AND status = ?", [*args, MemoryStatus(status).value]
        if mtype is not None:
            where, args = where + " AND type = ?", [*args, MemoryType(mtype).value]
        found = self._rows(f"SELECT id FROM memories WHERE {where} ORDER BY seq DESC LIMIT ?",
                           [*args, max(0, int(n))])
        return [str(r[0]) for r in reversed(found)]

    @staticmethod
    def _window(column: str, since: float | None, until: float | None
                ) -> tuple[str, list[float]]:
        """`` AND`` conditions of a time window on ``column``, and their arguments."""
        where, args = "", list[float]()
        if since is not None:
            where, args = f"{where} AND {column} >= ?", [*args, float(since)]
        if until is not None:
            where, args = f"{where} AND {column} <= ?", [*args, float(until)]
        return where, args

    # --- full-text search ------------------------------------------------------------------

    def search_terms(self, query: TermQuery) -> TermHits:
        wanted = sorted(set(query.terms))
        statuses = sorted({MemoryStatus(s).value for s in query.statuses})
        if not wanted or not statuses or query.k <= 0:
            return TermHits([], 0.0)
        marks = ", ".join("?" * len(statuses))
        docs, length = self._rows(
            "SELECT coalesce(sum(docs), 0), coalesce(sum(length), 0) FROM term_totals WHERE "
            f"namespace = ? AND status IN ({marks})", [query.namespace, *statuses])[0]
        docs, length = int(docs), int(length)  # PostgreSQL sums to numeric
        if not docs:
            return TermHits([], 0.0)
        found = self._rows(
            f"SELECT term, count(*) FROM terms WHERE namespace = ? AND status IN ({marks}) "
            f"AND term IN ({', '.join('?' * len(wanted))}) GROUP BY term",
            [query.namespace, *statuses, *wanted])
        idf = {str(t): math.log(1.0 + (docs - int(n) + 0.5) / (int(n) + 0.5)) for t, n in found}
        if not idf:
            return TermHits([], 0.0)
        avgdl = length / docs if length else 1.0
        hits = self._bm25(query, statuses, idf, avgdl, query.k, windowed=True)
        if query.since is None and query.until is None:
            return TermHits(hits, hits[0][1] if hits else 0.0)
        top = self._bm25(query, statuses, idf, avgdl, 1, windowed=False)
        return TermHits(hits, top[0][1] if top else 0.0)

    def _bm25(self, query: TermQuery, statuses: list[str], idf: dict[str, float],
              avgdl: float, k: int, *, windowed: bool) -> list[tuple[str, float]]:
        """The ``k`` best memories by BM25: ranked in SQL, then scored exactly."""
        k1, b = float(query.k1), float(query.b)
        where, wargs = self._window("t.created_ts", query.since, query.until) if windowed \
            else ("", [])
        sql, args = self._ranked(statuses, idf, (k1 + 1, k1, b, b, avgdl), query.namespace)
        rows = self._rows(f"{sql}{where} GROUP BY t.memory_id ORDER BY score DESC, "
                          f"t.memory_id{self.TEXT_ORDER} LIMIT ?", [*args, *wargs, k + _MARGIN])
        ids = [str(r[0]) for r in rows]
        scored = sorted(self._exact(query, statuses, idf, avgdl, ids).items(),
                        key=lambda kv: (-kv[1], kv[0]))
        return [(i, s) for i, s in scored[:k] if s > 0]

    def _exact(self, query: TermQuery, statuses: list[str], idf: dict[str, float],
               avgdl: float, ids: list[str]) -> dict[str, float]:
        """The BM25 of the memories ``ids`` (``math.fsum`` of their postings' terms: the
        same whatever order the database summed them in)."""
        terms, k1, b = sorted(idf), float(query.k1), float(query.b)
        parts: dict[str, list[float]] = {i: [] for i in ids}
        keyed, kargs = self._postings_of(query.namespace, statuses)
        for cond, args in self._id_chunks(ids):
            for mid, term, tf, length in self._rows(
                    f"SELECT memory_id, term, tf, length FROM terms WHERE {keyed}memory_id "
                    f"{cond} AND term IN ({', '.join('?' * len(terms))}) "
                    f"ORDER BY term{self.TEXT_ORDER}", [*kargs, *args, *terms]):
                parts[str(mid)].append(bm25(int(tf), int(length), idf[str(term)], avgdl,
                                            k1=k1, b=b))
        return {i: math.fsum(p) for i, p in parts.items()}

    def _postings_of(self, namespace: str, statuses: list[str]) -> tuple[str, list[Any]]:
        """What a read of some memories' postings by id says first (a condition and its
        ``AND``, and its arguments). The ids are unique and a memory's postings are of its
        one status, so this only steers the planner: SQLite then searches
        ``terms_by_memory`` by id, namespace, status and term at once (by id alone it
        would read each memory's every posting)."""
        return (f"namespace = ? AND status IN ({', '.join('?' * len(statuses))}) AND ",
                [namespace, *statuses])

    def _ranked(self, statuses: list[str], idf: dict[str, float],
                params: tuple[float, ...], namespace: str) -> tuple[str, list[Any]]:
        """The BM25 sum of a namespace's postings of the terms of ``idf``, each weighed by
        its idf, up to its ``WHERE``'s last condition: a ``VALUES`` list of the terms
        joined to the postings (SQLite probes the primary key once per term)."""
        values = ", ".join("(?, ?)" for _ in idf)
        return (f"WITH q (term, idf) AS (VALUES {values}) SELECT t.memory_id, "
                f"sum(q.idf * {BM25_SQL}) AS score FROM q CROSS JOIN terms t "
                f"WHERE t.namespace = ? AND t.term = q.term AND t.status IN "
                f"({', '.join('?' * len(statuses))})",
                [*idf_pairs(idf), *params, namespace, *statuses])

    def existing(self, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        for cond, args in self._id_chunks(ids):
            out.update(r[0] for r in self._rows(f"SELECT id FROM memories WHERE id {cond}",
                                                args))
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        for cond, args in self._id_chunks(ids):
            for mid, blob in self._rows(f"SELECT id, vector FROM memories WHERE id {cond}",
                                        args):
                out[mid] = vector_of(blob)
        return out

    def sensitive(self, namespace: str, at_least: float) -> list[SensitiveRow]:
        return [SensitiveRow(sys.intern(i), int(q), vector_of(blob))
                for rows in self._batches(
                    "SELECT id, seq, vector FROM memories WHERE namespace = ? AND "
                    "sensitivity >= ? ORDER BY seq", (namespace, float(at_least)))
                for i, q, blob in rows]

    def index_rows(self, namespace: str | None = None, ids: Sequence[str] | None = None
                   ) -> Iterator[IndexRow]:
        sql = ("SELECT id, namespace, status, type, sensitivity, created_ts, conversation, "
               "vector FROM memories")
        if ids is not None:
            for cond, args in self._id_chunks(ids):
                yield from self._index_rows(f"{sql} WHERE id {cond} ORDER BY seq", args)
            return
        where, wargs = ("WHERE namespace = ?", (namespace,)) if namespace is not None \
            else ("", ())
        yield from self._index_rows(f"{sql} {where} ORDER BY seq", wargs)

    def _index_rows(self, sql: str, args: Sequence[Any]) -> Iterator[IndexRow]:
        # a batch at a time: a rebuild of a million memories streams their vectors
        for rows in self._batches(sql, args):
            for mid, ns, status, mtype, sens, ts, conv, blob in rows:
                yield IndexRow(mid, ns, MemoryStatus(status), vector_of(blob),
                               {"type": mtype, "sensitivity": float(sens),
                                "created_ts": float(ts), "conversation": conv or ""})

    def edges(self, namespace: str) -> list[Edge]:
        return [self._edge(r) for rows in self._batches(
            "SELECT source, predicate, target, weight, step FROM edges WHERE namespace = ? "
            f"ORDER BY {self.EDGE_ORDER}", (namespace,)) for r in rows]

    def scan_edges(self, namespace: str) -> Iterator[list[Edge]]:
        t = self.TEXT_ORDER
        for rows in self._batches("SELECT source, predicate, target, weight, step FROM edges "
                                  f"WHERE namespace = ? ORDER BY source{t}, predicate{t}, "
                                  f"target{t}", (namespace,)):
            yield [self._edge(r) for r in rows]

    def edges_of(self, namespace: str, ids: Sequence[str]) -> list[Edge]:
        rows: dict[tuple[str, str, str], Any] = {}
        for column in ("source", "target"):
            for cond, args in self._id_chunks(ids):
                for batch in self._batches(
                        f"SELECT source, predicate, target, weight, step, {self.EDGE_ORDER} "
                        f"FROM edges WHERE {column} {cond} AND {_checked('namespace')}",
                        [*args, namespace]):
                    rows.update(((r[0], r[1], r[2]), r) for r in batch)
        return [self._edge(r[:5]) for r in sorted(rows.values(), key=lambda r: r[5])]

    def _edge(self, row: Sequence[Any]) -> Edge:
        src, pred, tgt, weight, step = row
        try:
            return Edge(source=src, predicate=pred, target=tgt, weight=weight, step=step)
        except pydantic.ValidationError as exc:
            raise CorruptStoreError(f"an edge in {self._where} is unreadable") from exc

    def audit(self, namespace: str | None = None) -> list[AuditEvent]:
        if namespace is None:
            rows = self._rows("SELECT body FROM audit ORDER BY ordinal")
        else:
            rows = self._rows("SELECT body FROM audit WHERE namespace = ? ORDER BY seq",
                              (namespace,))
        return [self._event(r[0]) for r in rows]

    def audit_for(self, memory_id: str) -> list[AuditEvent]:
        return [self._event(r[0]) for r in self._rows(
            "SELECT a.body FROM audit_refs r JOIN audit a ON a.ordinal = r.ordinal "
            "WHERE r.memory_id = ? ORDER BY r.ordinal", (memory_id,))]

    def audit_size(self) -> int:
        return int(self._rows("SELECT count(*) FROM audit")[0][0])

    def audit_heads(self, upto: int | None = None) -> tuple[int, dict[str, tuple[int, str]]]:
        at = int(self._rows("SELECT coalesce(max(ordinal), 0) FROM audit")[0][0]) \
            if upto is None else upto
        rows = self._rows("SELECT a.namespace, a.seq, a.body FROM audit a JOIN (SELECT "
                          "max(ordinal) AS o FROM audit WHERE ordinal <= ? GROUP BY namespace) "
                          "m ON a.ordinal = m.o", (at,))
        return at, {ns: (int(seq) + 1, self._event(body).hash) for ns, seq, body in rows}

    def changes(self, after: int) -> list[Change]:
        return [Change(int(s), n, m) for s, n, m in self._rows(
            "SELECT seq, namespace, memory_id FROM changes WHERE seq > ? ORDER BY seq", (after,))]

    def first_change(self) -> int:
        return int(self._rows("SELECT coalesce(min(seq), 0) FROM changes")[0][0])

    def _index_marks(self) -> dict[str, tuple[int, str]]:
        """``{key: (position, stamp)}``; a row holds ``"<position>"`` or
        ``"<position> <stamp>"``."""
        out: dict[str, tuple[int, str]] = {}
        for k, v in self._rows("SELECT key, value FROM meta WHERE key LIKE ?", (_INDEX + "%",)):
            applied, _, stamp = str(v).partition(" ")
            out[str(k)[len(_INDEX):]] = (int(applied), stamp)
        return out

    def index_positions(self) -> dict[str, int]:
        return {k: applied for k, (applied, _) in self._index_marks().items()}

    def index_stamps(self) -> dict[str, str]:
        return {k: stamp for k, (_, stamp) in self._index_marks().items()}

    # --- writing -----------------------------------------------------------------------

    def set_index_position(self, key: str, applied: int, stamp: str | None = None) -> None:
        if stamp is None:
            stamp = self._index_marks().get(key, (0, ""))[1]
        self._put_meta(_INDEX + key, f"{int(applied)} {stamp}" if stamp else str(int(applied)))

    def drop_index_position(self, key: str) -> None:
        self._run("DELETE FROM meta WHERE key = ?", (_INDEX + key,))

    def lock_index(self, key: str, *, shared: bool = False) -> None:
        """One writer holds the index already."""
        if not shared:
            self._writes()

    def lock_namespaces(self, names: Sequence[str]) -> dict[str, int]:
        """One writer holds every namespace already: their versions."""
        self._writes()
        return self._versions(names)

    def _versions(self, names: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(names, 0)
        for cond, args in self._id_chunks(list(names)):
            for name, version in self._rows(
                    f"SELECT name, version FROM namespaces WHERE name {cond}", args):
                out[name] = int(version)
        return out

    def put_manifest(self, manifest: Mapping[str, Any]) -> None:
        self._put_meta("manifest", canonical_json(dict(manifest)))

    def set_counter(self, value: int) -> None:
        self._put_meta("counter", str(int(value)))

    def put_namespace(self, record: NamespaceRecord) -> None:
        self._run("INSERT INTO namespaces (name, version, step, touch, audit_count, audit_head, "
                  "state) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                  "version = excluded.version, step = excluded.step, touch = excluded.touch, "
                  "audit_count = excluded.audit_count, audit_head = excluded.audit_head, "
                  "state = excluded.state",
                  (record.name, record.version, record.step, record.touch, record.audit_count,
                   record.audit_head, canonical_json(dict(record.state))))

    def rename_namespace(self, old: str, new: str, events: Sequence[AuditEvent]) -> None:
        self._writes()
        held = self._rows("SELECT (SELECT count(*) FROM memories WHERE namespace = ?), "
                          "(SELECT count(*) FROM edges WHERE namespace = ?), "
                          "(SELECT count(*) FROM audit WHERE namespace = ?), "
                          "(SELECT count(*) FROM namespaces WHERE name = ?) + "
                          "(SELECT count(*) FROM audit WHERE namespace = ?)",
                          (old, old, old, new, new))[0]
        if int(held[0]) or int(held[1]):
            raise ConflictError(f"namespace {old!r} still holds memories; it cannot be renamed")
        if int(held[3]):
            raise ConflictError(f"namespace {new!r} exists already")
        if int(held[2]) != len(events) or [e.seq for e in events] != list(range(len(events))) \
                or any(e.namespace != new for e in events):
            raise ConflictError(f"the events given are not the {int(held[2])} events of "
                                f"namespace {old!r}'s chain, renamed to {new!r}")
        self._many("UPDATE audit SET namespace = ?, body = ? WHERE namespace = ? AND seq = ?",
                   [(new, canonical_json(e.model_dump(mode="json")), old, e.seq)
                    for e in events])
        self._run("UPDATE namespaces SET name = ? WHERE name = ?", (new, old))
        self._run("UPDATE changes SET namespace = ? WHERE namespace = ?", (new, old))
        self._run("DELETE FROM term_totals WHERE namespace = ?", (old,))  # counts of nothing

    def _log_many(self, entries: Sequence[tuple[str, str]]) -> None:
        """Add change-log entries ``(namespace, memory id)``, in order."""
        for namespace, memory_id in entries:
            self._log(namespace, memory_id)

    def apply(self, ops: Sequence[RecordOp]) -> None:
        self._writes()
        ops = list(ops)  # read once, whatever iterable was given
        for op in ops:  # every op checked before any is written
            if not isinstance(op, RecordOp):
                raise ValidationError(f"a record store applies record writes (InsertMemory, "
                                      f"UpdateMemory, ...), not {type(op).__name__}")
        for kind, group in itertools.groupby(ops, key=type):  # a run of one kind together
            if kind is InsertMemory:
                self._insert([op for op in group if isinstance(op, InsertMemory)])
            elif kind is UpdateStats:  # one executemany: one round trip on a server
                self._update_stats(*(op.node for op in group if isinstance(op, UpdateStats)))
            else:
                for op in group:
                    self._apply_one(op)

    def _apply_one(self, op: RecordOp) -> None:
        """Write one op that is neither an insert nor a statistics update."""
        match op:
            case UpdateMemory():  # a restore also moves its recency
                self._update_memory(op.node, reindex=op.reindex)
                self._update_stats(op.node)
                self._add_edges(op.node.namespace, op.edges)
            case DeleteMemory():
                self._delete_memory(op.node.id)
            case SetVector():
                self._set_vector(op.memory_id, op.vector)
            case AddEdges():
                self._add_edges(op.namespace, op.edges)
            case AppendAudit():
                self._append_audit(op.events)

    def _insert(self, run: Sequence[InsertMemory]) -> None:
        """New memories one after the other: one batch of rows, then their edges in the
        order they came."""
        if not run:
            return
        self._insert_memories([(op.node, op.vector) for op in run])
        edges: dict[str, list[Edge]] = {}
        for op in run:
            edges.setdefault(op.node.namespace, []).extend(op.edges)
        for ns, owned in edges.items():
            self._add_edges(ns, owned)

    def _insert_memories(self, items: Sequence[tuple[MemoryNode, Vector]]) -> None:
        ids = [node.id for node, _ in items]
        taken = self.existing(ids)
        if taken or len(set(ids)) != len(ids):
            twice = next(i for n, i in enumerate(ids) if i in taken or i in ids[:n])
            raise ConflictError(f"a memory with id {twice!r} already exists")
        self._many(f"INSERT INTO memories ({COLUMNS}, vector) VALUES "
                   "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [_memory_row(node, vector) for node, vector in items])
        self._many("INSERT INTO stats (id, access_count, last_access_at, last_access_step, "
                   "touch_seq) VALUES (?, ?, ?, ?, ?)", [stats_row(node) for node, _ in items])
        self._index_terms([node for node, _ in items])
        self._log_many([(node.namespace, node.id) for node, _ in items])

    def _index_terms(self, nodes: Sequence[MemoryNode]) -> None:
        """Add memories to the full-text index: their terms and their partitions' totals."""
        rows: list[tuple[Any, ...]] = []
        totals: Counter[tuple[str, str]] = Counter()
        docs: Counter[tuple[str, str]] = Counter()
        for node in nodes:
            key = (node.namespace, node.status.value)
            found, length = term_rows(*key, node.id, node.created_at.timestamp(),
                                      node.search_text)
            rows += found
            docs[key] += 1
            totals[key] += length
        self._many("INSERT INTO terms (namespace, status, term, memory_id, tf, length, "
                   "created_ts) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        for (ns, status), n in sorted(docs.items()):
            self._add_totals(ns, status, n, totals[ns, status])

    def _add_totals(self, namespace: str, status: str, docs: int, length: int) -> None:
        """Move a partition's full-text totals (a partition left empty loses its row)."""
        self._run("INSERT INTO term_totals (namespace, status, docs, length) VALUES "
                  "(?, ?, ?, ?) ON CONFLICT (namespace, status) DO UPDATE SET docs = "
                  "term_totals.docs + excluded.docs, length = term_totals.length + "
                  "excluded.length", (namespace, status, docs, length))
        if docs < 0:
            self._run("DELETE FROM term_totals WHERE namespace = ? AND status = ? AND "
                      "docs <= 0", (namespace, status))

    def index_all_terms(self) -> int:
        """Build the full-text index of every memory (a migration from a schema without
        it); returns how many memories it indexed. Reads a namespace 500 rows at a time,
        the few columns a memory's terms need."""
        self._writes()
        done = 0
        for name in self.namespace_names():
            after = -1
            while True:
                found = self._rows("SELECT id, status, type, created_ts, content, body, seq "
                                   "FROM memories WHERE namespace = ? AND seq > ? ORDER BY "
                                   "seq LIMIT 500", (name, after))
                if not found:
                    break
                rows: list[tuple[Any, ...]] = []
                totals: Counter[str] = Counter()
                docs: Counter[str] = Counter()
                for mid, status, mtype, ts, content, body, _ in found:
                    made, length = term_rows(name, status, mid, float(ts),
                                             search_text(content, _speaker(mtype, body)))
                    rows += made
                    docs[status] += 1
                    totals[status] += length
                self._many("INSERT INTO terms (namespace, status, term, memory_id, tf, "
                           "length, created_ts) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                for status, n in sorted(docs.items()):
                    self._add_totals(name, status, n, totals[status])
                done, after = done + len(found), int(found[-1][-1])
        return done

    def _term_length(self, memory_id: str) -> int:
        found = self._rows("SELECT length FROM terms WHERE memory_id = ? LIMIT 1",
                           (memory_id,))
        return int(found[0][0]) if found else 0

    def _update_memory(self, node: MemoryNode, *, reindex: bool) -> None:
        found = self._rows("SELECT status FROM memories WHERE id = ?", (node.id,))
        if found and found[0][0] != node.status.value:  # the full-text index follows
            length = self._term_length(node.id)
            self._add_totals(node.namespace, str(found[0][0]), -1, -length)
            self._add_totals(node.namespace, node.status.value, 1, length)
            self._run("UPDATE terms SET status = ? WHERE memory_id = ?",
                      (node.status.value, node.id))
        doc = node.model_dump(mode="json", include=set(META))
        self._run("UPDATE memories SET status = ?, sensitivity = ?, meta = ? WHERE id = ?",
                  (node.status.value, node.sensitivity, canonical_json(doc), node.id))
        if reindex:
            self._log(node.namespace, node.id)

    def _update_stats(self, *nodes: MemoryNode) -> None:
        rows = [stats_row(node) for node in nodes]
        self._many("UPDATE stats SET access_count = ?, last_access_at = ?, last_access_step = ?, "
                   "touch_seq = ? WHERE id = ?", [(*rest, mid) for mid, *rest in rows])

    def _set_vector(self, memory_id: str, vector: Vector) -> None:
        found = self._rows("SELECT namespace FROM memories WHERE id = ?", (memory_id,))
        if found:
            self._run("UPDATE memories SET vector = ? WHERE id = ?", (blob_of(vector), memory_id))
            self._log(found[0][0], memory_id)

    def _delete_memory(self, memory_id: str) -> None:
        found = self._rows("SELECT namespace, status FROM memories WHERE id = ?", (memory_id,))
        if not found:
            return
        self._add_totals(found[0][0], found[0][1], -1, -self._term_length(memory_id))
        self._run("DELETE FROM terms WHERE memory_id = ?", (memory_id,))
        self._run("DELETE FROM memories WHERE id = ?", (memory_id,))
        self._run("DELETE FROM stats WHERE id = ?", (memory_id,))
        self._run("DELETE FROM edges WHERE source = ? OR target = ?", (memory_id, memory_id))
        self._log(found[0][0], memory_id)

    def _add_edges(self, namespace: str, edges: Sequence[Edge]) -> None:
        self._many("INSERT INTO edges (source, predicate, target, namespace, weight, step) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   [(e.source, e.predicate.value, e.target, namespace, e.weight, e.step)
                    for e in edges])

    def prune_changes(self, through: int) -> None:
        self._run("DELETE FROM changes WHERE seq <= ?", (through,))
