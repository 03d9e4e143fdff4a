"""The PostgreSQL record store: one database for many processes on many machines.

Install the extra: ``pip install 'mars-memory[postgres]'`` (psycopg 3 and its pool).
The tables are those of the SQLite store, with the same meaning
(:mod:`mars_core.storage.base`; the queries are shared, :mod:`mars_core.storage._sql`),
in a schema of their own (``mars`` unless the URL says ``?schema=NAME``), so several
stores can share one database, beside LangGraph's or anyone's tables.

* **Transactions.** A write is one ``READ COMMITTED`` transaction, committed whole or
  not at all; a read is a ``REPEATABLE READ, READ ONLY`` one: one committed snapshot.
* **Many writers.** Several processes write at once (``exclusive_writer`` is False):
  a transaction holds each namespace it writes with a transaction-scoped advisory lock
  (:meth:`~mars_core.storage.base.RecordTxn.lock_namespaces`), so writers of one
  namespace take turns and writers of different namespaces do not wait for each
  other. The store numbers new memories from a database sequence
  (:meth:`PostgresRecordStore.next_counter`), which nobody waits on.
* **Commit order.** The change log and the audit events are numbered in the order their
  transactions commit: they are written at the end of the transaction under one short
  store-wide lock held until the commit, so a reader never sees a later number before
  an earlier one (the audit anchors of :attr:`~mars_core.engine.trail.AuditTrail.head`
  and an index catching up from the change log rely on that). This is the one section
  every commit of a store passes through one at a time: the writing of those rows and
  the commit itself.
* **Errors.** A server that cannot be reached is
  :class:`~mars_core.errors.StorageUnavailableError` (nothing was written, unless the
  connection was lost during the commit itself: the message says the outcome is then
  unknown); a lock held past ``lock_timeout`` is
  :class:`~mars_core.errors.ConflictError`; a deadlock the server broke is
  :class:`~mars_core.errors.ConcurrentWriteError` (nothing written: repeat the call); a
  statement the server canceled (its ``statement_timeout``) is
  :class:`~mars_core.errors.MarsBackendError` (nothing written).
* **Erasure.** Deleted rows are gone from every query at once; the store then runs
  ``VACUUM`` on the tables that held text, so their dead row versions are removed once
  no open transaction still sees them. PostgreSQL does not overwrite freed space: the
  bytes may remain in unused disk blocks, the write-ahead log, replicas and backups
  until those are recycled (``purges_on_erase`` is False, and the receipt says so).
* **Schema.** Its version is a row of the ``meta`` table. A new schema is created at
  the first open; an older one is refused with the command that migrates it,
  ``mars migrate --path URL`` (:func:`migrate`), run once while the other processes
  are stopped; a newer one is refused (upgrade mars-memory).

Examples:
    >>> shown_url("postgresql://ana:secret@db.example:5433/agents?schema=tenant_a")
    ('postgresql://ana@db.example:5433/agents?schema=tenant_a', 'tenant_a')

    ``PostgresRecordStore("postgresql://ana@db.example/agents")`` opens (or creates)
    the store in schema ``mars`` of database ``agents``.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from mars_core._guard import guarded
from mars_core.audit import AuditEvent, canonical_json
from mars_core.errors import (
    ConcurrentWriteError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    ExtraNotInstalledError,
    MarsBackendError,
    MarsError,
    StorageUnavailableError,
    StoreClosedError,
    ValidationError,
)
from mars_core.model import MemoryNode
from mars_core.storage._sql import BM25_SQL, SqlTxn, idf_pairs
from mars_core.storage.base import Change, RecordCapabilities, Vector, check_timeout

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["DEFAULT_SCHEMA", "MIGRATIONS", "SCHEMA_VERSION", "PostgresRecordStore",
           "discard_empty_store", "holds_store", "is_postgres_url", "migrate",
           "schema_version", "shown_url"]

SCHEMA_VERSION = 2
"""The version of the schema below; older ones are migrated by :func:`migrate`."""

DEFAULT_SCHEMA = "mars"
"""The schema of a URL without ``?schema=``."""

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE namespaces (
    name TEXT PRIMARY KEY, version BIGINT NOT NULL, step BIGINT NOT NULL,
    touch BIGINT NOT NULL, audit_count BIGINT NOT NULL, audit_head TEXT NOT NULL,
    state TEXT NOT NULL);
CREATE TABLE memories (
    id TEXT PRIMARY KEY, namespace TEXT NOT NULL, seq BIGINT NOT NULL,
    status TEXT NOT NULL, type TEXT NOT NULL, weight BIGINT NOT NULL,
    conversation TEXT, created_ts DOUBLE PRECISION NOT NULL,
    sensitivity DOUBLE PRECISION NOT NULL, content TEXT NOT NULL, body TEXT NOT NULL,
    meta TEXT NOT NULL, vector BYTEA NOT NULL);
CREATE INDEX memories_by_namespace ON memories (namespace, status, seq);
CREATE TABLE stats (
    id TEXT PRIMARY KEY, access_count BIGINT NOT NULL, last_access_at TEXT,
    last_access_step BIGINT, touch_seq BIGINT NOT NULL);
CREATE TABLE edges (
    ord BIGINT GENERATED ALWAYS AS IDENTITY, source TEXT NOT NULL,
    predicate TEXT NOT NULL, target TEXT NOT NULL, namespace TEXT NOT NULL,
    weight DOUBLE PRECISION NOT NULL, step BIGINT NOT NULL,
    PRIMARY KEY (source, predicate, target));
CREATE INDEX edges_by_namespace ON edges (namespace);
CREATE INDEX edges_by_target ON edges (target);
CREATE TABLE audit (
    ordinal BIGINT PRIMARY KEY, namespace TEXT NOT NULL, seq BIGINT NOT NULL,
    body TEXT NOT NULL, UNIQUE (namespace, seq));
CREATE TABLE audit_refs (
    memory_id TEXT NOT NULL, ordinal BIGINT NOT NULL, PRIMARY KEY (memory_id, ordinal));
CREATE TABLE changes (
    seq BIGINT PRIMARY KEY, namespace TEXT NOT NULL, memory_id TEXT NOT NULL);
CREATE SEQUENCE memory_counter;
"""

_TABLES_V2 = """
CREATE TABLE terms (
    namespace TEXT NOT NULL, status TEXT NOT NULL, term TEXT NOT NULL,
    memory_id TEXT NOT NULL, tf INTEGER NOT NULL, length INTEGER NOT NULL,
    created_ts DOUBLE PRECISION NOT NULL, PRIMARY KEY (namespace, status, term, memory_id));
CREATE INDEX terms_by_memory ON terms (memory_id);
CREATE TABLE term_totals (
    namespace TEXT NOT NULL, status TEXT NOT NULL, docs BIGINT NOT NULL,
    length BIGINT NOT NULL, PRIMARY KEY (namespace, status));
CREATE INDEX memories_by_seq ON memories (namespace, seq);
CREATE INDEX memories_by_time ON memories (namespace, status, created_ts);
CREATE INDEX memories_by_conversation ON memories (namespace, conversation, seq);
CREATE INDEX memories_by_sensitivity ON memories (namespace, sensitivity)
"""
"""What version 2 added: the full-text index and the indexes that serve a namespace's
history without loading it (as the SQLite store's)."""

_TABLES += _TABLES_V2
"""The schema's tables (in the store's schema): the SQLite store's, with the change log
and audit numbered by the store (commit order) and edges ordered by an identity."""

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SYNCHRONOUS = {"full": "on", "normal": "off"}
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
_UNAVAILABLE = ("08", "57P01", "57P02", "57P03")
"""SQLSTATEs (or classes) of a server that went away or refuses connections."""


def _load() -> tuple[Any, Any]:
    """``(psycopg, psycopg_pool)``, imported on first use.

    Raises:
        ExtraNotInstalledError: the ``postgres`` extra is not installed.
    """
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ExtraNotInstalledError("postgres", exc.name or "psycopg") from exc
    return psycopg, psycopg_pool


def is_postgres_url(value: object) -> bool:
    """Whether ``value`` is a ``postgresql://`` (or ``postgres://``) URL.

    Examples:
        >>> is_postgres_url("postgres://u@h/db"), is_postgres_url("./mars_data")
        (True, False)
    """
    return isinstance(value, str) and value.split("://", 1)[0].lower() in (
        "postgresql", "postgres") and "://" in value


def _split(url: str) -> tuple[str, str]:
    """``(the URL libpq reads, the schema)``: ``?schema=`` is ours, not libpq's.

    Raises:
        ValidationError: not a PostgreSQL URL, or a schema name that is not a plain
            lower-case SQL identifier.
    """
    if not is_postgres_url(url):
        raise ValidationError("a PostgreSQL record store takes a postgresql:// URL, such "
                              "as postgresql://user@host:5432/dbname")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValidationError(f"schema={schema!r}: a schema name is a lower-case SQL "
                              "identifier (letters, digits, _; at most 63)")
    # libpq's parameters go on exactly as written (re-encoding them would turn a %20
    # into a "+", which libpq does not read as a space)
    rest = "&".join(item for item in parts.query.split("&")
                    if item and unquote(item.partition("=")[0]) != "schema")
    return urlunsplit(("postgresql", parts.netloc, parts.path, rest, parts.fragment)), schema


def shown_url(url: str) -> tuple[str, str]:
    """``(the URL without its password, the schema)``: what messages and ``stats()``
    show.

    Raises:
        ValidationError: not a PostgreSQL URL, or a bad schema name.
    """
    libpq, schema = _split(url)
    parts = urlsplit(libpq)
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    query = [(k, v) for k, v in parse_qsl(parts.query) if k in ("host", "port", "user")]
    return urlunsplit(("postgresql", netloc, parts.path,
                       urlencode([*query, ("schema", schema)]), "")), schema


def _key(schema: str, what: str) -> int:
    """A 64-bit advisory-lock key for ``what`` in ``schema`` (stores of other schemas of
    the database never share one)."""
    digest = hashlib.blake2b(f"mars-memory\x00{schema}\x00{what}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    """The shared queries' ``?`` placeholders as psycopg's ``%s``."""
    return sql.replace("?", "%s")


def _unavailable(exc: BaseException, conn: Any) -> bool:
    state = getattr(exc, "sqlstate", None)
    if state is None:
        return True
    return state.startswith(_UNAVAILABLE[0]) or state in _UNAVAILABLE[1:] or \
        bool(conn is not None and conn.broken)


@contextlib.contextmanager
def _errors(where: str, conn: Any = None, *, committing: bool = False) -> Iterator[None]:
    """Wrap what psycopg raises: a lock that waited too long is a conflict, a deadlock
    the server broke a concurrent write, a server away unavailable."""
    psycopg, pool = _load()
    errors = psycopg.errors
    try:
        yield
    except MarsError:
        raise
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text holds it
        raise ValidationError(f"a value written to the record store at {where} is not "
                              "valid Unicode (a lone surrogate); nothing was written") from exc
    except errors.LockNotAvailable as exc:
        raise ConflictError(
            f"the record store at {where}: another writer held what this call writes "
            "longer than lock_timeout; nothing was written: retry (or raise "
            "lock_timeout)") from exc
    except errors.QueryCanceled as exc:  # statement_timeout, or pg_cancel_backend()
        raise MarsBackendError(
            f"the PostgreSQL server of {where} canceled a statement ({str(exc).strip()}): "
            "its statement_timeout (or an administrator) stopped it; nothing was written: "
            "retry, or raise statement_timeout for the store's role") from exc
    except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
        raise ConcurrentWriteError(
            f"the record store at {where} broke a tie between two writers; nothing was "
            "written: repeat the call") from exc
    except errors.UniqueViolation as exc:
        raise ConflictError(f"the record store at {where}: a row with this key exists "
                            "already (another writer added it); nothing was written") from exc
    except (pool.PoolTimeout, pool.PoolClosed, psycopg.InterfaceError) as exc:
        raise StorageUnavailableError(
            f"the PostgreSQL server of {where} cannot be reached ({exc}); nothing was "
            "written: check that it runs and accepts connections, then retry") from exc
    except psycopg.OperationalError as exc:
        if not _unavailable(exc, conn):
            raise MarsBackendError(f"the record store at {where} failed: {exc}") from exc
        if committing:
            raise StorageUnavailableError(
                f"the connection to the PostgreSQL server of {where} was lost while a write "
                f"committed ({exc}): it may or may not have been committed; read the store "
                "again before repeating it") from exc
        raise StorageUnavailableError(
            f"the connection to the PostgreSQL server of {where} was lost ({exc}); nothing "
            "was written: check that the server runs, then retry") from exc
    except psycopg.DataError as exc:
        raise ValidationError(f"a value written to the record store at {where} was "
                              f"refused ({exc}); nothing was written") from exc
    except errors.UndefinedTable as exc:
        raise CorruptStoreError(f"a table of the record store at {where} is missing ({exc}); "
                                "restore the schema from a backup") from exc
    except psycopg.Error as exc:
        raise MarsBackendError(f"the record store at {where} failed: {exc}") from exc


_ANALYZE_SHARE = 0.1  # of the memories the planner's statistics count
_ANALYZE_MIN = 200  # memories: below it, autovacuum's own threshold (50 rows + 10 %) serves


def _refresh_statistics(conn: psycopg.Connection[Any], inserted: int) -> None:
    """``ANALYZE`` the tables a search reads after a write that inserted 200 memories or
    more and at least a tenth of those the planner's statistics count (any, when they
    count none), as autovacuum would a minute later: without statistics the planner
    takes an equality on a column for 0.5 % of its rows, so a namespace looks small and
    a full-text search scanned all its postings. Geometric steps: a store pays a
    logarithmic number of them as it grows. Best effort, never waiting: the write is
    committed already; a table another session holds (its own ``ANALYZE``, a
    ``VACUUM``) is skipped, and a failure (the server gone) is left to autovacuum and to
    the next call's own errors."""
    if inserted < _ANALYZE_MIN:
        return
    psycopg, _ = _load()
    with contextlib.suppress(psycopg.Error):
        known = conn.execute("SELECT reltuples FROM pg_class WHERE oid = "
                             "'memories'::regclass").fetchone()
        if known is None or known[0] <= 0 or inserted >= _ANALYZE_SHARE * known[0]:
            _analyze(conn)


def _analyze(conn: psycopg.Connection[Any]) -> None:
    """Refresh the planner's statistics of the tables a search reads (the connection's
    schema; autocommit), skipping any another session holds."""
    conn.execute("ANALYZE (SKIP_LOCKED) memories, terms, term_totals, edges, stats")


class _Txn(SqlTxn):
    """A :class:`~mars_core.storage.base.RecordTxn` over one PostgreSQL connection: the
    shared queries, numbered in commit order (see the module)."""

    TEXT_ORDER = ' COLLATE "C"'
    EDGE_ORDER = "ord"

    def __init__(self, conn: psycopg.Connection[Any], location: str, schema: str,
                 writable: bool) -> None:
        super().__init__(location, writable)
        self._c = conn
        self._schema = schema
        self._changes: list[tuple[str, str]] = []
        self._events: list[AuditEvent] = []
        self.inserted = 0
        """Memories this transaction inserted (what :func:`_refresh_statistics` weighs)."""

    def _insert_memories(self, items: Sequence[tuple[MemoryNode, Vector]]) -> None:
        super()._insert_memories(items)
        self.inserted += len(items)

    # --- the dialect ---------------------------------------------------------------------

    # PostgreSQL picks its indexes by row estimates that may be stale: with an empty
    # table's statistics it takes an equality for 0.5 % of a column's rows, so one
    # store's namespace looks small, and it ran the shared ranking as a scan of every
    # posting of the namespace against the VALUES list of the query's terms. Its full-text
    # queries leave it less to misjudge, and the store refreshes its statistics after
    # large writes (_refresh_statistics).

    def _ranked(self, statuses: list[str], idf: dict[str, float],
                params: tuple[float, ...], namespace: str) -> tuple[str, list[Any]]:
        """Each posting weighed by a ``CASE`` over its term, with the terms in the
        ``WHERE``: one table, no join to order."""
        terms = sorted(idf)
        cases = " ".join("WHEN ? THEN ?" for _ in terms)
        return (f"SELECT t.memory_id, sum(CASE t.term {cases} END * {BM25_SQL}) AS score "
                f"FROM terms t WHERE t.namespace = ? AND t.term IN "
                f"({', '.join('?' * len(terms))}) AND t.status IN "
                f"({', '.join('?' * len(statuses))})",
                [*idf_pairs(idf), *params, namespace, *terms, *statuses])

    def _postings_of(self, namespace: str, statuses: list[str]) -> tuple[str, list[Any]]:
        return "", []  # by id alone: ids are unique, whatever the estimates

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        return _errors(self._where, self._c)

    def _cursor(self, sql: str, args: Sequence[Any]) -> Any:
        # a client-side cursor: libpq holds the whole result, its rows become Python
        # objects a batch at a time (fetchmany)
        return self._c.execute(_pg(sql), tuple(args))

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with _errors(self._where, self._c), self._c.cursor() as cur:
            cur.executemany(_pg(sql), [tuple(r) for r in rows])

    def _id_chunks(self, ids: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
        wanted = list(dict.fromkeys(ids))
        if wanted:
            yield "= ANY(?)", [wanted]

    def _manifest_text(self) -> str | None:
        if self.writable:  # a read-modify-write: one writer of the manifest at a time
            self._exec("SELECT pg_advisory_xact_lock(?)", (_key(self._schema, "manifest"),))
        return self._meta("manifest")

    # --- numbering in commit order --------------------------------------------------------

    def _log(self, namespace: str, memory_id: str) -> None:
        self._writes()
        self._changes.append((namespace, memory_id))

    def _append_audit(self, events: Sequence[AuditEvent]) -> None:
        self._writes()
        self._events.extend(events)

    def flush(self) -> None:
        """Number and write the change-log entries and audit events of this transaction
        under the store-wide log lock, which is held until the transaction ends: numbers
        are taken in the order transactions commit."""
        if not (self._changes or self._events):
            return
        self._exec("SELECT pg_advisory_xact_lock(?)", (_key(self._schema, "log"),))
        found = dict(self._rows("SELECT key, value FROM meta WHERE key IN "
                                "('last_change', 'last_audit')"))
        last_change, last_audit = int(found.get("last_change", 0)), \
            int(found.get("last_audit", 0))
        changes, events = self._changes, self._events
        self._changes, self._events = [], []
        if changes:
            self._exec_many("INSERT INTO changes (seq, namespace, memory_id) VALUES (?, ?, ?)",
                            [(last_change + i, ns, mid)
                             for i, (ns, mid) in enumerate(changes, start=1)])
            self._put_meta("last_change", str(last_change + len(changes)))
        if events:
            rows = [(last_audit + i, ev.namespace, ev.seq,
                     canonical_json(ev.model_dump(mode="json")))
                    for i, ev in enumerate(events, start=1)]
            self._exec_many("INSERT INTO audit (ordinal, namespace, seq, body) "
                            "VALUES (?, ?, ?, ?)", rows)
            refs = [(m, row[0]) for row, ev in zip(rows, events, strict=True)
                    for m in dict.fromkeys(ev.node_ids)]
            if refs:
                self._exec_many("INSERT INTO audit_refs (memory_id, ordinal) VALUES (?, ?) "
                                "ON CONFLICT DO NOTHING", refs)
            self._put_meta("last_audit", str(last_audit + len(events)))

    def last_change(self) -> int:
        self.flush()
        return int(self._meta("last_change") or 0)

    def changes(self, after: int) -> list[Change]:
        self.flush()
        return super().changes(after)

    def first_change(self) -> int:
        self.flush()
        return super().first_change()

    def prune_changes(self, through: int) -> None:
        self.flush()
        super().prune_changes(through)

    def audit(self, namespace: str | None = None) -> list[AuditEvent]:
        self.flush()
        return super().audit(namespace)

    def audit_for(self, memory_id: str) -> list[AuditEvent]:
        self.flush()
        return super().audit_for(memory_id)

    def audit_size(self) -> int:
        self.flush()
        return super().audit_size()

    def audit_heads(self, upto: int | None = None) -> tuple[int, dict[str, tuple[int, str]]]:
        self.flush()
        return super().audit_heads(upto)

    def rename_namespace(self, old: str, new: str, events: Sequence[AuditEvent]) -> None:
        self.flush()
        super().rename_namespace(old, new, events)

    # --- the counter and the namespaces ---------------------------------------------------

    def counter(self) -> int:
        found = self._rows(
            "SELECT coalesce((SELECT value FROM meta WHERE key = 'counter'), '0'), "
            "CASE WHEN is_called THEN last_value ELSE 0 END FROM memory_counter")
        return max(int(found[0][0]), int(found[0][1]))

    def set_counter(self, value: int) -> None:
        """Raise the counter to ``value`` (never lower: several writers may set it, each
        from what it saw)."""
        self._run("INSERT INTO meta (key, value) VALUES ('counter', ?) ON CONFLICT (key) DO "
                  "UPDATE SET value = greatest(meta.value::bigint, excluded.value::bigint)::text",
                  (str(int(value)),))

    def lock_index(self, key: str, *, shared: bool = False) -> None:
        """Hold the index ``key`` with a transaction-scoped advisory lock."""
        if not shared:
            self._writes()
        how = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        self._exec(f"SELECT {how}(?)", (_key(self._schema, f"index\x00{key}"),))

    def lock_namespaces(self, names: Sequence[str]) -> dict[str, int]:
        """Hold each namespace with a transaction-scoped advisory lock (in one order,
        so two writers never deadlock on them), then read their versions."""
        self._writes()
        keys = sorted({_key(self._schema, f"ns\x00{n}") for n in names})
        for key in keys:
            self._exec("SELECT pg_advisory_xact_lock(?)", (key,))
        return self._versions(names)


def _to_v2(tx: _Txn) -> None:
    """Version 1 → 2: the full-text index, built from every memory."""
    for statement in filter(str.strip, _TABLES_V2.split(";")):
        tx._run(statement)
    tx.index_all_terms()


MIGRATIONS: dict[int, Callable[[_Txn], None]] = {1: _to_v2}
"""``{from_version: migrate}``: each step takes the migration's transaction
(``search_path`` on the store's schema) and brings the schema one version up."""


class PostgresRecordStore:
    """The :class:`~mars_core.storage.base.RecordStore` on a PostgreSQL server.

    Args:
        url: ``postgresql://user:password@host:port/dbname`` (or ``postgres://``; every
            libpq parameter works: ``?host=/run/postgresql`` for a Unix socket,
            ``?sslmode=require`` ...) with, optionally, ``?schema=NAME``: the schema
            that holds the store (default ``mars``; created when missing).
        read_only: read only: nothing is ever written (a missing schema is a
            :class:`~mars_core.errors.ConfigError`).
        lock_timeout: seconds a write waits for a namespace another writer holds
            before :class:`~mars_core.errors.ConflictError`.
        connect_timeout: seconds to wait for a connection (at open, and for the pool).
        pool_size: connections the store keeps open at most (one serves a
            transaction; another numbers memories while one is open).
        synchronous: ``"full"`` (a returned write is on the server's disk:
            ``synchronous_commit=on``) or ``"normal"`` (``off``: a crash of the server,
            not of this process, may lose the last writes).

    Raises:
        ExtraNotInstalledError: the ``postgres`` extra is not installed.
        StorageUnavailableError: the server cannot be reached (or refuses the login).
        CorruptStoreError: the schema is older (the message names ``mars migrate``) or
            newer than this version's.
        ConfigError: ``read_only`` and no store in the schema.
        ValidationError: a bad URL or option.

    Examples:
        ``PostgresRecordStore("postgresql://ana@db/agents?schema=tenant_a")``; see
        :mod:`mars_core.storage.postgres` for what it guarantees.
    """

    name = "postgresql"

    def __init__(self, url: str, *, read_only: bool = False, lock_timeout: float = 5.0,
                 connect_timeout: float = 10.0, pool_size: int = 4,
                 synchronous: Literal["full", "normal"] = "full") -> None:
        lock_timeout = check_timeout(lock_timeout, "lock_timeout")
        connect_timeout = check_timeout(connect_timeout, "connect_timeout")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 2:
            raise ValidationError(f"pool_size must be an int >= 2, not {pool_size!r}")
        if synchronous not in _SYNCHRONOUS:
            raise ValidationError(f"synchronous must be one of {tuple(_SYNCHRONOUS)}, not "
                                  f"{synchronous!r}")
        self._libpq, self.schema = _split(url)
        self.location, _ = shown_url(url)
        driver, pool_module = _load()
        self.read_only = bool(read_only)
        self.capabilities = RecordCapabilities(durable=True, multi_process=True,
                                               exclusive_writer=False, purges_on_erase=False)
        self._lock = threading.RLock()
        self._closed = False
        self._txn: _Txn | None = None
        self._timeout = float(connect_timeout)
        self._settings = {"search_path": f'"{self.schema}"',
                          "lock_timeout": f"{max(1, round(lock_timeout * 1000))}ms",
                          "synchronous_commit": _SYNCHRONOUS[synchronous]}
        self._prepare(driver)
        self._pool: psycopg_pool.ConnectionPool[Any] = pool_module.ConnectionPool(
            self._libpq, min_size=1, max_size=pool_size, open=False,
            kwargs=self._connect_kwargs(), configure=self._configure,
            timeout=self._timeout, name=f"mars-memory {self.schema}")
        with _errors(self.location):
            self._pool.open(wait=True, timeout=self._timeout)

    def __repr__(self) -> str:
        return (f"PostgresRecordStore({self.location!r}"
                f"{', read_only' if self.read_only else ''})")

    # --- connections -------------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": max(1, round(self._timeout)),
                "application_name": "mars-memory"}

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Every connection: the store's schema, its lock wait, its durability."""
        for setting, value in self._settings.items():
            conn.execute(f"SET {setting} = {value}" if setting == "search_path"
                         else f"SET {setting} = '{value}'")

    def _connect(self, driver: Any) -> psycopg.Connection[Any]:
        try:
            conn = driver.connect(self._libpq, **self._connect_kwargs())
        except driver.Error as exc:
            raise StorageUnavailableError(
                f"cannot connect to the PostgreSQL server of {self.location}: "
                f"{str(exc).strip()}; check that it runs, the URL and the credentials "
                "(nothing was changed)") from exc
        with _errors(self.location, conn):
            self._configure(conn)
        return cast("psycopg.Connection[Any]", conn)

    def _prepare(self, driver: Any) -> None:
        """Create the schema (a writer, at the first open) or check its version."""
        conn = self._connect(driver)
        try:
            with _errors(self.location, conn), conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(self.schema, "schema"),))
                version = _version(conn, self.schema)
                if version == 0 and self.read_only:
                    raise ConfigError(f"read_only=True opens an existing store, and there is "
                                      f"none at {self.location}; open it once without "
                                      "read_only to create it")
                if version == 0:
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                    for statement in filter(str.strip, _TABLES.split(";")):
                        conn.execute(statement)
                    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s)",
                                 (str(SCHEMA_VERSION),))
                    return
                _check_version(version, self.location)
        finally:
            conn.close()

    # --- transactions ------------------------------------------------------------------

    def _checkout(self, begin: str) -> psycopg.Connection[Any]:
        """A pooled connection with a transaction begun (a connection the server
        dropped since is replaced once: nothing was done on it yet)."""
        for attempt in (1, 2):
            with _errors(self.location):
                conn = self._pool.getconn(timeout=self._timeout)
            try:
                conn.execute(begin)
                return cast("psycopg.Connection[Any]", conn)
            except Exception as exc:
                self._pool.putconn(conn)
                if attempt == 2 or not _unavailable(exc, conn):
                    with _errors(self.location, conn):
                        raise
                self._pool.check()
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def _begin(self, write: bool, durable: bool = True) -> Iterator[_Txn]:
        with self._lock:
            if self._closed:
                raise StoreClosedError("this record store is closed; open it again")
            if self._txn is not None:  # nested: the open transaction serves
                if write and not self._txn.writable:
                    raise ConflictError("cannot write inside a read transaction")
                yield self._txn
                return
            conn = self._checkout(_WRITE if write else _READ)
            self._txn = txn = _Txn(conn, self.location, self.schema, write)
            try:
                try:
                    if write and not durable:  # this transaction only
                        with _errors(self.location, conn):
                            conn.execute("SET LOCAL synchronous_commit TO OFF")
                    yield txn
                    txn.flush()
                except BaseException:
                    with contextlib.suppress(Exception):
                        conn.execute("ROLLBACK")
                    raise
                with _errors(self.location, conn, committing=True):
                    conn.execute("COMMIT")
                _refresh_statistics(conn, txn.inserted)
            finally:
                self._txn = None
                self._pool.putconn(conn)

    def read(self) -> contextlib.AbstractContextManager[_Txn]:
        """A committed snapshot (one ``REPEATABLE READ, READ ONLY`` transaction)."""
        return self._begin(False)

    def write(self, *, durable: bool = True) -> contextlib.AbstractContextManager[_Txn]:
        """One write transaction (``READ COMMITTED``, namespaces held as written);
        ``durable=False``: with ``synchronous_commit=off`` (see
        :meth:`~mars_core.storage.base.RecordStore.write`).

        Raises:
            ConflictError: the store is read-only, or a lock waited past lock_timeout.
            StorageUnavailableError: the server cannot be reached.
        """
        if self.read_only:
            raise ConflictError("this store was opened with read_only=True; open it without "
                                "read_only to change it")
        return self._begin(True, durable)

    @guarded
    def next_counter(self) -> int:
        """The next value of the store's ``memory_counter`` sequence (never waits on
        another writer, never given twice); moved past the counter first when an import
        set it beyond the sequence.

        Raises:
            ConflictError: the store is read-only.
            StorageUnavailableError: the server cannot be reached.
        """
        if self.read_only:
            raise ConflictError("this store was opened with read_only=True; it numbers "
                                "no memories")
        txn = self._txn
        if txn is not None and txn.writable:
            return self._next(txn._c, in_transaction=True)
        with _errors(self.location), self._pool.connection(timeout=self._timeout) as conn:
            return self._next(conn, in_transaction=False)

    def _next(self, conn: psycopg.Connection[Any], *, in_transaction: bool) -> int:
        sql = ("SELECT nextval('memory_counter'), "
               "coalesce((SELECT value FROM meta WHERE key = 'counter'), '0')")
        with _errors(self.location, conn):
            value, floor = conn.execute(sql).fetchone() or (0, 0)
            if int(value) > int(floor):
                return int(value)
            # an import set the counter beyond the sequence: move the sequence past it
            with contextlib.nullcontext() if in_transaction else conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(self.schema, "counter"),))
                conn.execute("SELECT setval('memory_counter', greatest(%s, "
                             "(SELECT last_value FROM memory_counter)))", (int(floor),))
                row = conn.execute("SELECT nextval('memory_counter')").fetchone()
            return int(row[0]) if row else 0

    def purge(self) -> str:
        """Vacuum the tables that held the erased text (their dead row versions go once
        no open transaction sees them); says what cannot be promised."""
        if self.read_only:
            return "read-only: nothing purged"
        with self._lock:
            if self._closed:
                raise StoreClosedError("this record store is closed; open it again")
            try:
                with _errors(self.location), \
                        self._pool.connection(timeout=self._timeout) as conn:
                    conn.execute("VACUUM (SKIP_LOCKED) memories, stats, edges")
                done = "erased rows deleted and their tables vacuumed"
            except MarsBackendError as exc:
                if isinstance(exc, StorageUnavailableError):
                    raise
                done = f"erased rows deleted; VACUUM was refused ({exc.__cause__})"
        return (f"postgresql: {done}; PostgreSQL does not overwrite freed space, so copies "
                "may remain in unused disk blocks, the write-ahead log, replicas and "
                "backups until they are recycled")

    def close(self) -> None:
        """Close the pool (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(Exception):
                self._pool.close(timeout=self._timeout)

    def __enter__(self) -> PostgresRecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _version(conn: psycopg.Connection[Any], schema: str) -> int:
    """The schema version the store in ``schema`` records (0: no store there)."""
    found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".meta',)).fetchone()
    if not found or found[0] is None:
        return 0
    row = conn.execute(f'SELECT value FROM "{schema}".meta WHERE key = %s',
                       ("schema_version",)).fetchone()
    return int(row[0]) if row else 0


def _check_version(version: int, location: str) -> None:
    if version > SCHEMA_VERSION:
        raise CorruptStoreError(
            f"{location} was written by a newer mars-memory (schema {version}, this one "
            f"reads {SCHEMA_VERSION}); upgrade mars-memory")
    if version < SCHEMA_VERSION:
        shown = location.replace("'", "")
        raise CorruptStoreError(
            f"{location} has schema {version} and this mars-memory needs {SCHEMA_VERSION}: "
            f"stop the processes that use it, then run `mars migrate --path '{shown}'` "
            "(with the password in the URL or in $PGPASSWORD)")


@contextlib.contextmanager
def _connection(url: str, connect_timeout: float) -> Iterator[tuple[Any, str, str]]:
    """``(a connection in autocommit mode, the schema, the URL shown)`` for a look at
    the store at ``url``, closed afterwards.

    Raises:
        StorageUnavailableError: the server cannot be reached.
        ValidationError: a bad URL.
    """
    libpq, schema = _split(url)
    location, _ = shown_url(url)
    psycopg, _pool = _load()
    try:
        conn = psycopg.connect(libpq, autocommit=True,
                               connect_timeout=max(1, round(connect_timeout)))
    except psycopg.Error as exc:
        raise StorageUnavailableError(f"cannot connect to the PostgreSQL server of "
                                      f"{location}: {str(exc).strip()}") from exc
    try:
        with _errors(location, conn):
            yield conn, schema, location
    finally:
        conn.close()


def schema_version(url: str, *, connect_timeout: float = 10.0) -> int:
    """The schema version of the store at ``url`` (0: none there).

    Raises:
        StorageUnavailableError: the server cannot be reached.
        ValidationError: a bad URL.
    """
    with _connection(url, connect_timeout) as (conn, schema, _location):
        return _version(conn, schema)


def holds_store(url: str, *, connect_timeout: float = 10.0) -> bool:
    """Whether the schema ``url`` names holds a store: its tables and a manifest (the
    tables alone are what a copy or an import that failed leaves: no store). Nothing is
    created.

    Raises:
        StorageUnavailableError: the server cannot be reached.
        ValidationError: a bad URL.
    """
    with _connection(url, connect_timeout) as (conn, schema, _location):
        if _version(conn, schema) == 0:
            return False
        row = conn.execute(f'SELECT 1 FROM "{schema}".meta WHERE key = %s',
                           ("manifest",)).fetchone()
        return row is not None


_ROWS = ("memories", "namespaces", "audit", "edges")
"""The tables whose rows make a store more than its manifest."""


def discard_empty_store(url: str, *, connect_timeout: float = 10.0) -> bool:
    """Take a store that holds nothing but its manifest off ``url`` again (what a
    command that created it and then failed does): its ``meta`` rows go, the tables
    stay, and the next open creates a store anew. A store with any memory, namespace,
    audit event or edge is left as it is.

    Returns:
        Whether a store was discarded.

    Raises:
        StorageUnavailableError: the server cannot be reached.
        ValidationError: a bad URL.
    """
    with _connection(url, connect_timeout) as (conn, schema, _location), conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(schema, "schema"),))
        if _version(conn, schema) == 0:
            return False
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(schema, "manifest"),))
        for table in _ROWS:
            if conn.execute(f'SELECT 1 FROM "{schema}".{table} LIMIT 1').fetchone():
                return False
        done = conn.execute(f'DELETE FROM "{schema}".meta WHERE key <> %s',
                            ("schema_version",))
        return bool(done.rowcount)


def migrate(url: str, *, connect_timeout: float = 10.0) -> tuple[int, int]:
    """Bring the store at ``url`` to :data:`SCHEMA_VERSION`: ``(before, after)``.

    Every step of :data:`MIGRATIONS` runs in one transaction, under the lock an open
    takes to check the schema (an open waits for it, then finds the new version). Stop
    the processes that use the store first: one running an older mars-memory keeps its
    old idea of the schema. A current schema is left as it is.

    Raises:
        StorageUnavailableError: the server cannot be reached.
        ConfigError: there is no store at ``url``.
        CorruptStoreError: the schema is newer than this version's.
        ValidationError: a bad URL.
    """
    libpq, schema = _split(url)
    location, _ = shown_url(url)
    psycopg, _pool = _load()
    before = schema_version(url, connect_timeout=connect_timeout)
    if before == 0:
        raise ConfigError(f"there is no store at {location} to migrate (a store is created "
                          "by its first open)")
    _check_newer(before, location)
    conn = psycopg.connect(libpq, autocommit=True, connect_timeout=max(1, round(connect_timeout)))
    try:
        with _errors(location, conn), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(schema, "schema"),))
            conn.execute(f'SET LOCAL search_path = "{schema}"')
            version = _version(conn, schema)
            _check_newer(version, location)
            while version < SCHEMA_VERSION:
                MIGRATIONS[version](_Txn(conn, location, schema, True))
                version += 1
            conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'",
                         (str(version),))
        if before < SCHEMA_VERSION:  # the tables a step filled: statistics before any search
            with contextlib.suppress(psycopg.Error):
                conn.execute(f'SET search_path = "{schema}"')
                _analyze(conn)
    finally:
        conn.close()
    return before, SCHEMA_VERSION


def _check_newer(version: int, location: str) -> None:
    if version > SCHEMA_VERSION:
        _check_version(version, location)
