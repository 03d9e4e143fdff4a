"""The SQLite record store: the embedded default, on disk or in RAM (stdlib ``sqlite3``).

One database file holds a whole store (:mod:`mars_core.storage.base` lists the rows).

* **Transactions.** A write takes ``BEGIN IMMEDIATE`` and commits or rolls back whole.
  A file store is in WAL mode: readers never block the writer, and each read
  (:meth:`SQLiteRecordStore.read`) sees one committed snapshot.
* **One writing process.** A file store opened to write takes an exclusive lock on
  ``<file>-writer.lock`` (``fcntl.flock``; the kernel drops it when the process dies, so
  a crash leaves no stale lock). A second writer waits ``lock_timeout`` seconds, then
  gets :class:`~mars_core.errors.ConflictError` naming the process that holds it;
  ``read_only=True`` opens never lock and never write. (The store's caches rely on
  this: nothing else changes the records under a writer.)
* **Durability.** ``synchronous=FULL`` by default: a transaction that returned survives
  a power cut, not only a crash of the process (``synchronous="normal"`` trades that
  for about 0.2 ms per write).
* **Erasure.** ``secure_delete`` is on, so SQLite overwrites deleted rows with zeros;
  :meth:`SQLiteRecordStore.purge` then checkpoints the WAL into the database and
  truncates it, so no erased byte remains in the ``-wal`` file either. A reader that holds
  a snapshot at that moment keeps the WAL from being truncated; the purge says so, and
  the next purge (every erasure, and every writer's open) completes it.
* **Schema.** The schema version is a row of the ``meta`` table; opening a file written
  by a newer version is refused, an older one is migrated (:data:`MIGRATIONS`).

``SQLiteRecordStore()`` without a path keeps the database in RAM (``MemoryStore()``,
tests): not durable, and private to the process.

Examples:
    >>> from mars_core.storage.base import NamespaceRecord
    >>> records = SQLiteRecordStore()
    >>> with records.write() as tx:
    ...     tx.put_namespace(NamespaceRecord("u1", step=1))
    ...     tx.set_counter(4)
    >>> with records.read() as tx:
    ...     tx.counter(), tx.namespace_names()
    (4, ['u1'])
    >>> records.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pydantic

from mars_core._guard import guarded
from mars_core.audit import AuditEvent, canonical_json
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    MarsBackendError,
    MarsError,
    StoreClosedError,
    ValidationError,
)
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType
from mars_core.storage.base import (
    Change,
    IndexRow,
    MemoryRef,
    NamespaceRecord,
    NamespaceTotals,
    RecordCapabilities,
    Vector,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteRecordStore"]

SCHEMA_VERSION = 1
"""The version of the schema below; older files are migrated by :data:`MIGRATIONS`."""

MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}
"""``{from_version: migrate}``: each step brings a file one version up (none yet)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS namespaces (
    name TEXT PRIMARY KEY, version INTEGER NOT NULL, step INTEGER NOT NULL,
    touch INTEGER NOT NULL, audit_count INTEGER NOT NULL, audit_head TEXT NOT NULL,
    state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, namespace TEXT NOT NULL, seq INTEGER NOT NULL,
    status TEXT NOT NULL, type TEXT NOT NULL, weight INTEGER NOT NULL,
    conversation TEXT, created_ts REAL NOT NULL, sensitivity REAL NOT NULL,
    content TEXT NOT NULL, body TEXT NOT NULL, meta TEXT NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS memories_by_namespace ON memories (namespace, status, seq);
CREATE TABLE IF NOT EXISTS stats (
    id TEXT PRIMARY KEY, access_count INTEGER NOT NULL, last_access_at TEXT,
    last_access_step INTEGER, touch_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS edges (
    source TEXT NOT NULL, predicate TEXT NOT NULL, target TEXT NOT NULL,
    namespace TEXT NOT NULL, weight REAL NOT NULL, step INTEGER NOT NULL,
    PRIMARY KEY (source, predicate, target));
CREATE INDEX IF NOT EXISTS edges_by_namespace ON edges (namespace);
CREATE INDEX IF NOT EXISTS edges_by_target ON edges (target);
CREATE TABLE IF NOT EXISTS audit (
    ordinal INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
    seq INTEGER NOT NULL, body TEXT NOT NULL, UNIQUE (namespace, seq));
CREATE TABLE IF NOT EXISTS audit_refs (
    memory_id TEXT NOT NULL, ordinal INTEGER NOT NULL, PRIMARY KEY (memory_id, ordinal));
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, memory_id TEXT NOT NULL);
"""

_BODY = ("payload", "provenance", "created_at", "step", "depth")
"""The immutable fields of a memory kept in its ``body`` JSON (the rest are columns)."""
_META = ("pinned", "expires_at", "metadata", "signals", "activated_seq")
"""The mutable fields kept in its ``meta`` JSON."""
_COLUMNS = ("id, namespace, seq, status, type, weight, conversation, created_ts, "
            "sensitivity, content, body, meta")
_JOINED = (f"SELECT {', '.join('m.' + c for c in _COLUMNS.split(', '))}, s.access_count, "
           "s.last_access_at, s.last_access_step, s.touch_seq "
           "FROM memories m JOIN stats s ON s.id = m.id")
_SYNCHRONOUS = ("full", "normal")


@contextlib.contextmanager
def _errors(location: str) -> Iterator[None]:
    """Wrap what ``sqlite3`` raises: a busy database is a conflict, a damaged one corrupt."""
    try:
        yield
    except MarsError:
        raise
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text holds it
        raise ValidationError(f"a value written to the record store at {location} is not "
                              "valid Unicode (a lone surrogate); nothing was written") from exc
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise ConflictError(
                f"the record store at {location} is busy with another writer; nothing was "
                "written: retry, or open it with read_only=True to read") from exc
        raise MarsBackendError(f"the record store at {location} failed: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise CorruptStoreError(
            f"the record store at {location} is damaged ({exc}); restore it from a backup "
            "(mars export / import)") from exc


def _blob(vector: Vector) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def _vector(blob: bytes) -> Vector:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


class _Txn:
    """A :class:`~mars_core.storage.base.RecordTxn` over one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, location: str, writable: bool) -> None:
        self._c = conn
        self._where = location
        self.writable = writable

    # --- helpers -----------------------------------------------------------------------

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with _errors(self._where):
            return self._c.execute(sql, tuple(args)).fetchall()

    def _run(self, sql: str, args: Sequence[Any] = ()) -> None:
        if not self.writable:
            raise ConflictError("a read transaction cannot write")
        with _errors(self._where):
            self._c.execute(sql, tuple(args))

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not self.writable:
            raise ConflictError("a read transaction cannot write")
        with _errors(self._where):
            self._c.executemany(sql, [tuple(r) for r in rows])

    def _meta(self, key: str) -> str | None:
        found = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return str(found[0][0]) if found else None

    def _put_meta(self, key: str, value: str) -> None:
        self._run("INSERT INTO meta (key, value) VALUES (?, ?) "
                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def _log(self, namespace: str, memory_id: str) -> None:
        self._run("INSERT INTO changes (namespace, memory_id) VALUES (?, ?)",
                  (namespace, memory_id))

    def _sequence(self, table: str) -> int:
        found = self._rows("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,))
        return int(found[0][0]) if found else 0

    def _node(self, row: Sequence[Any]) -> MemoryNode:
        (mid, ns, seq, status, mtype, weight, _conv, _ts, sens, content, body, meta,
         count, last_at, last_step, touch) = row
        try:
            return MemoryNode.model_validate({
                "id": mid, "namespace": ns, "seq": seq, "status": status, "type": mtype,
                "weight": weight, "sensitivity": sens, "content": content,
                **json.loads(body), **json.loads(meta), "access_count": count,
                "last_access_at": last_at, "last_access_step": last_step, "touch_seq": touch})
        except (ValueError, pydantic.ValidationError) as exc:
            raise CorruptStoreError(f"memory {mid} in {self._where} is unreadable") from exc

    def _event(self, body: str) -> AuditEvent:
        try:
            return AuditEvent.model_validate_json(body)
        except ValueError as exc:
            raise CorruptStoreError(f"an audit event in {self._where} is unreadable") from exc

    # --- reading -----------------------------------------------------------------------

    def manifest(self) -> dict[str, Any] | None:
        raw = self._meta("manifest")
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
        return NamespaceRecord(n, version, step, touch, count, head, json.loads(state))

    def namespace_names(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT name FROM namespaces UNION SELECT DISTINCT namespace FROM memories "
            "ORDER BY 1")]

    def totals(self, namespace: str | None = None) -> dict[str, NamespaceTotals]:
        where, args = ("WHERE namespace = ?", (namespace,)) if namespace is not None else ("", ())
        parts: dict[str, dict[str, Any]] = {}
        for ns, status, mtype, count, tokens in self._rows(
                "SELECT namespace, status, type, count(*), sum(weight) FROM memories "
                f"{where} GROUP BY namespace, status, type", args):
            part = parts.setdefault(ns, {"active": 0, "archived": 0, "tokens": 0, "by": {}})
            part[status] += count
            if status == MemoryStatus.ACTIVE.value:
                part["tokens"] += tokens
                part["by"][MemoryType(mtype)] = int(tokens)
        return {ns: NamespaceTotals(p["active"], p["archived"], p["tokens"], p["by"])
                for ns, p in sorted(parts.items())}

    def refs(self, namespace: str) -> list[MemoryRef]:
        return [MemoryRef(i, MemoryStatus(s), MemoryType(t), c or None, q, float(v))
                for i, s, t, c, q, v in self._rows(
                    "SELECT id, status, type, conversation, seq, sensitivity FROM memories "
                    "WHERE namespace = ? ORDER BY seq", (namespace,))]

    def memories(self, namespace: str, status: MemoryStatus | None = None) -> list[MemoryNode]:
        where, args = "m.namespace = ?", [namespace]
        if status is not None:
            where, args = where + " AND m.status = ?", [*args, MemoryStatus(status).value]
        return [self._node(r) for r in self._rows(f"{_JOINED} WHERE {where} ORDER BY m.seq",
                                                  args)]

    def memory(self, memory_id: str) -> MemoryNode | None:
        found = self._rows(f"{_JOINED} WHERE m.id = ?", (memory_id,))
        return self._node(found[0]) if found else None

    def existing(self, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        wanted = list(dict.fromkeys(ids))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            marks = ", ".join("?" * len(chunk))
            out.update(r[0] for r in self._rows(f"SELECT id FROM memories WHERE id IN ({marks})",
                                                chunk))
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        wanted = list(dict.fromkeys(ids))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            marks = ", ".join("?" * len(chunk))
            for mid, blob in self._rows(f"SELECT id, vector FROM memories WHERE id IN ({marks})",
                                        chunk):
                out[mid] = _vector(blob)
        return out

    def index_rows(self, namespace: str | None = None, ids: Sequence[str] | None = None
                   ) -> Iterator[IndexRow]:
        sql = ("SELECT id, namespace, status, type, sensitivity, created_ts, conversation, "
               "vector FROM memories")
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            for i in range(0, len(wanted), 500):
                chunk = wanted[i:i + 500]
                yield from self._index_rows(
                    f"{sql} WHERE id IN ({', '.join('?' * len(chunk))}) ORDER BY seq", chunk)
            return
        where, args = ("WHERE namespace = ?", (namespace,)) if namespace is not None else ("", ())
        yield from self._index_rows(f"{sql} {where} ORDER BY seq", args)

    def _index_rows(self, sql: str, args: Sequence[Any]) -> Iterator[IndexRow]:
        for mid, ns, status, mtype, sens, ts, conv, blob in self._rows(sql, args):
            yield IndexRow(mid, ns, MemoryStatus(status), _vector(blob),
                           {"type": mtype, "sensitivity": float(sens), "created_ts": float(ts),
                            "conversation": conv or ""})

    def edges(self, namespace: str) -> list[Edge]:
        out = []
        for src, pred, tgt, weight, step in self._rows(
                "SELECT source, predicate, target, weight, step FROM edges "
                "WHERE namespace = ? ORDER BY rowid", (namespace,)):
            try:
                out.append(Edge(source=src, predicate=pred, target=tgt, weight=weight, step=step))
            except pydantic.ValidationError as exc:
                raise CorruptStoreError(f"an edge in {self._where} is unreadable") from exc
        return out

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
        return [Change(s, n, m) for s, n, m in self._rows(
            "SELECT seq, namespace, memory_id FROM changes WHERE seq > ? ORDER BY seq", (after,))]

    def last_change(self) -> int:
        return self._sequence("changes")

    def first_change(self) -> int:
        return int(self._rows("SELECT coalesce(min(seq), 0) FROM changes")[0][0])

    # --- writing -----------------------------------------------------------------------

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

    def delete_namespace(self, name: str) -> None:
        self._run("DELETE FROM namespaces WHERE name = ?", (name,))

    def insert_memory(self, node: MemoryNode, vector: Vector) -> None:
        if self._rows("SELECT 1 FROM memories WHERE id = ?", (node.id,)):
            raise ConflictError(f"a memory with id {node.id!r} already exists")
        doc = node.model_dump(mode="json")
        self._run(f"INSERT INTO memories ({_COLUMNS}, vector) VALUES "
                  "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (node.id, node.namespace, node.seq, node.status.value, node.type.value,
                   node.weight, node.provenance.conversation_id, node.created_at.timestamp(),
                   node.sensitivity, node.content,
                   canonical_json({k: doc[k] for k in _BODY}),
                   canonical_json({k: doc[k] for k in _META}), _blob(vector)))
        self._run("INSERT INTO stats (id, access_count, last_access_at, last_access_step, "
                  "touch_seq) VALUES (?, ?, ?, ?, ?)", _stats_row(node))
        self._log(node.namespace, node.id)

    def update_memory(self, node: MemoryNode, *, reindex: bool) -> None:
        doc = node.model_dump(mode="json", include=set(_META))
        self._run("UPDATE memories SET status = ?, sensitivity = ?, meta = ? WHERE id = ?",
                  (node.status.value, node.sensitivity, canonical_json(doc), node.id))
        if reindex:
            self._log(node.namespace, node.id)

    def update_stats(self, node: MemoryNode) -> None:
        mid, count, last_at, last_step, touch = _stats_row(node)
        self._run("UPDATE stats SET access_count = ?, last_access_at = ?, last_access_step = ?, "
                  "touch_seq = ? WHERE id = ?", (count, last_at, last_step, touch, mid))

    def set_vector(self, memory_id: str, vector: Vector) -> None:
        found = self._rows("SELECT namespace FROM memories WHERE id = ?", (memory_id,))
        if found:
            self._run("UPDATE memories SET vector = ? WHERE id = ?", (_blob(vector), memory_id))
            self._log(found[0][0], memory_id)

    def delete_memory(self, memory_id: str) -> None:
        found = self._rows("SELECT namespace FROM memories WHERE id = ?", (memory_id,))
        if not found:
            return
        self._run("DELETE FROM memories WHERE id = ?", (memory_id,))
        self._run("DELETE FROM stats WHERE id = ?", (memory_id,))
        self._run("DELETE FROM edges WHERE source = ? OR target = ?", (memory_id, memory_id))
        self._log(found[0][0], memory_id)

    def add_edges(self, namespace: str, edges: Sequence[Edge]) -> None:
        self._many("INSERT INTO edges (source, predicate, target, namespace, weight, step) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   [(e.source, e.predicate.value, e.target, namespace, e.weight, e.step)
                    for e in edges])

    def remove_edges(self, keys: Sequence[tuple[str, str, str]]) -> None:
        self._many("DELETE FROM edges WHERE source = ? AND predicate = ? AND target = ?", keys)

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        for ev in events:
            self._run("INSERT INTO audit (namespace, seq, body) VALUES (?, ?, ?)",
                      (ev.namespace, ev.seq, canonical_json(ev.model_dump(mode="json"))))
            ordinal = self._sequence("audit")
            self._many("INSERT INTO audit_refs (memory_id, ordinal) VALUES (?, ?) "
                       "ON CONFLICT DO NOTHING", [(m, ordinal) for m in dict.fromkeys(ev.node_ids)])

    def prune_changes(self, through: int) -> None:
        self._run("DELETE FROM changes WHERE seq <= ?", (through,))


def _stats_row(node: MemoryNode) -> tuple[str, int, str | None, int | None, int]:
    last = node.last_access_at.isoformat() if node.last_access_at is not None else None
    return (node.id, node.access_count, last, node.last_access_step, node.touch_seq)


class SQLiteRecordStore:
    """The :class:`~mars_core.storage.base.RecordStore` over SQLite.

    Args:
        path: the database file (created with its directory when missing), or ``None``
            for a private database in RAM.
        read_only: open an existing file to read it: no lock is taken, nothing is ever
            written (a missing file is a :class:`~mars_core.errors.ConfigError`).
        lock_timeout: seconds a writer waits for another process's write lock before
            :class:`~mars_core.errors.ConflictError` (also how long one transaction
            waits for the database).
        synchronous: ``"full"`` (a returned write survives a power cut) or ``"normal"``
            (it survives a crash of the process).

    Raises:
        ConflictError: another process writes the file (after ``lock_timeout``).
        ConfigError: ``read_only`` and there is no file; a bad option.
        CorruptStoreError: the file is not a database, or a newer version wrote it.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "mars.sqlite3"
        >>> with SQLiteRecordStore(path) as records:
        ...     records.capabilities.durable, records.capabilities.exclusive_writer
        (True, True)
    """

    name = "sqlite"

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False,
                 lock_timeout: float = 5.0,
                 synchronous: Literal["full", "normal"] = "full") -> None:
        if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, int | float) \
                or not lock_timeout >= 0:
            raise ValidationError(f"lock_timeout must be a number of seconds >= 0, "
                                  f"not {lock_timeout!r}")
        if synchronous not in _SYNCHRONOUS:
            raise ValidationError(f"synchronous must be one of {_SYNCHRONOUS}, not "
                                  f"{synchronous!r}")
        self._lock = threading.RLock()
        self._closed = False
        self._txn: _Txn | None = None
        self._lock_fd: int | None = None
        self.read_only = bool(read_only)
        self.path = None if path is None else Path(path)
        self.location = "memory" if self.path is None else str(self.path)
        self.capabilities = RecordCapabilities(
            durable=self.path is not None, multi_process=self.path is not None,
            exclusive_writer=True, purges_on_erase=True)
        try:
            self._conn = self._connect(float(lock_timeout), synchronous)
        except BaseException:
            self._unlock()
            raise
        try:
            self._prepare()
        except BaseException:
            self._release()
            raise

    def __repr__(self) -> str:
        return f"SQLiteRecordStore({self.location!r}{', read_only' if self.read_only else ''})"

    # --- opening -----------------------------------------------------------------------

    def _connect(self, timeout: float, synchronous: str) -> sqlite3.Connection:
        if self.path is None:
            if self.read_only:
                raise ValidationError("read_only needs a path: a store in RAM starts empty")
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        elif self.read_only:
            if not self.path.is_file():
                from mars_core.errors import ConfigError

                raise ConfigError(f"read_only=True opens an existing store, and there is none "
                                  f"at {self.path}; open it once without read_only to create it")
            with _errors(self.location):
                conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False,
                                       timeout=timeout)
        else:
            self._take_writer_lock(timeout)
            with _errors(self.location):
                conn = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=False, timeout=timeout)
        with _errors(self.location):
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            conn.execute("PRAGMA secure_delete = ON")
            if self.path is not None and not self.read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        return conn

    def _take_writer_lock(self, timeout: float) -> None:
        assert self.path is not None
        lock = self.path.with_name(self.path.name + "-writer.lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise MarsBackendError(f"cannot open {lock} to write the store: {exc}; pass a "
                                   "writable directory") from exc
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                    os.close(fd)
                    raise ConflictError(
                        f"another process ({holder or 'unknown'}) is writing the store at "
                        f"{self.path}; one process writes a store at a time: open it with "
                        "read_only=True to read beside it, or once that process has closed "
                        f"it (waited {timeout:g} s)") from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        self._lock_fd = fd

    def _prepare(self) -> None:
        """Create the schema (a writer), check or migrate its version."""
        with self._begin("BEGIN" if self.read_only else "BEGIN IMMEDIATE") as tx:
            found = tx._rows("SELECT name FROM sqlite_master WHERE name = 'meta'")
            version = int(tx._meta("schema_version") or 0) if found else 0
            if version > SCHEMA_VERSION:
                raise CorruptStoreError(
                    f"{self.location} was written by a newer mars-memory (schema {version}, "
                    f"this one reads {SCHEMA_VERSION}); upgrade mars-memory")
            if self.read_only:
                if version == 0:
                    raise CorruptStoreError(f"{self.location} holds no mars-memory store")
                if version < SCHEMA_VERSION:
                    raise CorruptStoreError(f"{self.location} has schema {version}; open it "
                                            "once without read_only to migrate it")
                return
            if version == 0:  # one statement at a time: executescript would commit
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    tx._run(statement)
            while 0 < version < SCHEMA_VERSION:
                MIGRATIONS[version](self._conn)
                version += 1
            tx._put_meta("schema_version", str(SCHEMA_VERSION))

    # --- transactions ------------------------------------------------------------------

    @contextlib.contextmanager
    def _begin(self, statement: str) -> Iterator[_Txn]:
        with self._lock:
            if self._closed:
                raise StoreClosedError("this record store is closed; open it again")
            if self._txn is not None:  # nested: the open transaction serves
                if statement != "BEGIN" and not self._txn.writable:
                    raise ConflictError("cannot write inside a read transaction")
                yield self._txn
                return
            with _errors(self.location):
                self._conn.execute(statement)
            self._txn = _Txn(self._conn, self.location, statement != "BEGIN")
            try:
                yield self._txn
            except BaseException:
                self._txn = None
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise
            self._txn = None
            with _errors(self.location):
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise

    def read(self) -> contextlib.AbstractContextManager[_Txn]:
        """A committed snapshot (one SQLite read transaction)."""
        return self._begin("BEGIN")

    def write(self) -> contextlib.AbstractContextManager[_Txn]:
        """One write transaction (``BEGIN IMMEDIATE``).

        Raises:
            ConflictError: the store is read-only, or the database stayed busy.
        """
        if self.read_only:
            raise ConflictError("this store was opened with read_only=True; open it without "
                                "read_only (one writer at a time) to change it")
        return self._begin("BEGIN IMMEDIATE")

    @guarded
    def purge(self) -> str:
        """Checkpoint the WAL into the database and truncate it (deleted rows are already
        zeroed by ``secure_delete``)."""
        if self.path is None:
            return "sqlite in RAM: erased rows overwritten, nothing on disk"
        if self.read_only:
            return "read-only: nothing purged"
        with _errors(self.location):
            busy, _frames, _done = self._conn.execute(
                "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            return ("sqlite: erased rows overwritten in the database; the write-ahead log could "
                    "not be truncated while another process reads the store, so older copies "
                    "stay in it until the next erasure or open")
        return "sqlite: erased rows overwritten (secure_delete), write-ahead log truncated"

    def close(self) -> None:
        """Close the database and release the writer lock (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    def _release(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self.path is not None and not self.read_only:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> SQLiteRecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
