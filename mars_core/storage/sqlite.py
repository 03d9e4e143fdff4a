"""The SQLite record store: the embedded default, on disk or in RAM (stdlib ``sqlite3``).

One database file holds a whole store (:mod:`mars_core.storage.base` lists the rows).

* **Transactions.** A write takes ``BEGIN IMMEDIATE`` and commits or rolls back whole.
  A file store is in WAL mode: readers never block the writer, and each read
  (:meth:`SQLiteRecordStore.read`) sees one committed snapshot.
* **One writing process.** A file store opened to write takes an exclusive lock on
  ``<file>-writer.lock`` (the operating system's file lock, :mod:`mars_core._lockfile`:
  ``flock`` on POSIX, ``LockFileEx`` on Windows; the kernel drops it when the process
  dies, so a crash leaves no stale lock). A second writer waits ``lock_timeout`` seconds, then
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
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from mars_core._guard import guarded
from mars_core._lockfile import LockFile, LockHeld
from mars_core.audit import AuditEvent, canonical_json
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    MarsBackendError,
    MarsError,
    StoreClosedError,
    ValidationError,
)
from mars_core.storage._sql import SqlTxn
from mars_core.storage.base import RecordCapabilities, check_timeout

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteRecordStore", "migrate"]

SCHEMA_VERSION = 2
"""The version of the schema below; older files are migrated by :data:`MIGRATIONS`."""

_SCHEMA_V1 = """
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

_SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS terms (
    namespace TEXT NOT NULL, status TEXT NOT NULL, term TEXT NOT NULL,
    memory_id TEXT NOT NULL, tf INTEGER NOT NULL, length INTEGER NOT NULL,
    created_ts REAL NOT NULL, PRIMARY KEY (namespace, status, term, memory_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS terms_by_memory ON terms (memory_id);
CREATE TABLE IF NOT EXISTS term_totals (
    namespace TEXT NOT NULL, status TEXT NOT NULL, docs INTEGER NOT NULL,
    length INTEGER NOT NULL, PRIMARY KEY (namespace, status));
CREATE INDEX IF NOT EXISTS memories_by_seq ON memories (namespace, seq);
CREATE INDEX IF NOT EXISTS memories_by_time ON memories (namespace, status, created_ts);
CREATE INDEX IF NOT EXISTS memories_by_conversation ON memories (namespace, conversation, seq);
CREATE INDEX IF NOT EXISTS memories_by_sensitivity ON memories (namespace, sensitivity);
"""
"""What version 2 added: the full-text index (``terms``: one row per memory and term;
``term_totals``: each partition's memories and terms) and the indexes that serve a
namespace's history without loading it."""

_SCHEMA = _SCHEMA_V1 + _SCHEMA_V2


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


class _Txn(SqlTxn):
    """A :class:`~mars_core.storage.base.RecordTxn` over one SQLite connection: the
    shared queries (:class:`~mars_core.storage._sql.SqlTxn`), numbered by SQLite's own
    ``AUTOINCREMENT`` (one writer: the order of writes is the order of commits)."""

    def __init__(self, conn: sqlite3.Connection, location: str, writable: bool) -> None:
        super().__init__(location, writable)
        self._c = conn

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        return _errors(self._where)

    def _cursor(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        return self._c.execute(sql, tuple(args))

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with _errors(self._where):
            self._c.executemany(sql, [tuple(r) for r in rows])

    def _sequence(self, table: str) -> int:
        found = self._rows("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,))
        return int(found[0][0]) if found else 0

    def _log(self, namespace: str, memory_id: str) -> None:
        self._run("INSERT INTO changes (namespace, memory_id) VALUES (?, ?)",
                  (namespace, memory_id))

    def _log_many(self, entries: Sequence[tuple[str, str]]) -> None:
        self._many("INSERT INTO changes (namespace, memory_id) VALUES (?, ?)", entries)

    def last_change(self) -> int:
        return self._sequence("changes")

    def _append_audit(self, events: Sequence[AuditEvent]) -> None:
        self._writes()
        if not events:
            return
        # one writer inside BEGIN IMMEDIATE: AUTOINCREMENT numbers the rows one after
        # the other from the table's sequence, which is checked after the insert
        first = self._sequence("audit") + 1
        self._many("INSERT INTO audit (namespace, seq, body) VALUES (?, ?, ?)",
                   [(ev.namespace, ev.seq, canonical_json(ev.model_dump(mode="json")))
                    for ev in events])
        if self._sequence("audit") != first + len(events) - 1:
            raise CorruptStoreError(f"the audit table of {self._where} numbered a batch of "
                                    "events out of sequence")
        self._many("INSERT INTO audit_refs (memory_id, ordinal) VALUES (?, ?) "
                   "ON CONFLICT DO NOTHING",
                   [(m, first + n) for n, ev in enumerate(events)
                    for m in dict.fromkeys(ev.node_ids)])


def _to_v2(tx: _Txn) -> None:
    """Version 1 → 2: the full-text index, built from every memory."""
    for statement in filter(str.strip, _SCHEMA_V2.split(";")):
        tx._run(statement)
    tx.index_all_terms()


MIGRATIONS: dict[int, Callable[[_Txn], None]] = {1: _to_v2}
"""``{from_version: migrate}``: each step brings a file one version up, inside the
transaction of the open that found it older."""


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
        lock_timeout = check_timeout(lock_timeout, "lock_timeout")
        if synchronous not in _SYNCHRONOUS:
            raise ValidationError(f"synchronous must be one of {_SYNCHRONOUS}, not "
                                  f"{synchronous!r}")
        self._lock = threading.RLock()
        self._closed = False
        self._txn: _Txn | None = None
        self._lock_file: LockFile | None = None
        self._synchronous = synchronous
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
            self._refuse_foreign(conn)
            conn.execute("PRAGMA secure_delete = ON")
            if self.path is not None and not self.read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        return conn

    def _refuse_foreign(self, conn: sqlite3.Connection) -> None:
        """Refuse a database that holds tables but not a store's (another program's),
        before anything is written to it (not even the switch to WAL mode).

        Raises:
            CorruptStoreError: it is one.
        """
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                            "'table'")}
        if names and "meta" not in names:
            conn.close()
            raise CorruptStoreError(
                f"{self.location} holds another database (tables that are not a "
                "mars-memory store's): open a store in a path of its own; nothing was "
                "changed")

    def _take_writer_lock(self, timeout: float) -> None:
        assert self.path is not None
        lock = self.path.with_name(self.path.name + "-writer.lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_file = LockFile.take(lock, timeout=timeout)
        except LockHeld as held:
            raise ConflictError(
                f"another process ({held.holder or 'unknown'}) is writing the store at "
                f"{self.path}; one process writes a store at a time: open it with "
                "read_only=True to read beside it, or once that process has closed "
                f"it (waited {timeout:g} s)") from None
        except OSError as exc:
            raise MarsBackendError(f"cannot open {lock} to write the store: {exc}; pass a "
                                   "writable directory") from exc

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
                MIGRATIONS[version](tx)
                version += 1
            tx._put_meta("schema_version", str(SCHEMA_VERSION))

    # --- transactions ------------------------------------------------------------------

    @contextlib.contextmanager
    def _begin(self, statement: str, durable: bool = True) -> Iterator[_Txn]:
        with self._lock:
            if self._closed:
                raise StoreClosedError("this record store is closed; open it again")
            if self._txn is not None:  # nested: the open transaction serves
                if statement != "BEGIN" and not self._txn.writable:
                    raise ConflictError("cannot write inside a read transaction")
                yield self._txn
                return
            relaxed = not durable and self._synchronous == "full" and self.path is not None
            if relaxed:  # this commit only: the WAL stays consistent, the fsync is skipped
                self._conn.execute("PRAGMA synchronous = NORMAL")
            try:
                yield from self._transaction(statement)
            finally:
                if relaxed:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("PRAGMA synchronous = FULL")

    def _transaction(self, statement: str) -> Iterator[_Txn]:
        """Begin with ``statement``, hand out the transaction, then commit it (roll it
        back if the block raised)."""
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

    def write(self, *, durable: bool = True) -> contextlib.AbstractContextManager[_Txn]:
        """One write transaction (``BEGIN IMMEDIATE``); ``durable=False``: committed
        with ``synchronous=NORMAL`` (no ``fsync``; see
        :meth:`~mars_core.storage.base.RecordStore.write`).

        Raises:
            ConflictError: the store is read-only, or the database stayed busy.
        """
        if self.read_only:
            raise ConflictError("this store was opened with read_only=True; open it without "
                                "read_only (one writer at a time) to change it")
        return self._begin("BEGIN IMMEDIATE", durable)

    def next_counter(self) -> int:
        """The next value of the memory counter, written in a transaction of its own (or
        in the one open: one writer numbers its memories in order).

        Raises:
            ConflictError: the store is read-only.
        """
        with self.write() as tx:
            value = tx.counter() + 1
            tx.set_counter(value)
        return value

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
        if self._lock_file is not None:
            self._lock_file.release()
            self._lock_file = None

    def __enter__(self) -> SQLiteRecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def migrate(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Bring the file at ``path`` to :data:`SCHEMA_VERSION`: ``(before, after)``. An
    open does the same (a SQLite store has one writer, which migrates it); this says
    what it found.

    Raises:
        ConfigError: no file at ``path``.
        CorruptStoreError: not a store, or one written by a newer version.
        ConflictError: another process writes it.
    """
    file = Path(path)
    if not file.is_file():
        from mars_core.errors import ConfigError

        raise ConfigError(f"there is no store at {file} to migrate")
    with _errors(str(file)):
        conn = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
        try:
            found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                 ).fetchone() if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() else None
        finally:
            conn.close()
    before = int(found[0]) if found else 0
    SQLiteRecordStore(file).close()
    return before, SCHEMA_VERSION
