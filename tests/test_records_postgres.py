"""The PostgreSQL record store: the conformance suite on a real server (a schema per
test), then what only it promises: a schema check at open that names ``mars migrate``,
numbers nobody waits for, typed errors for a server away, and a URL that never shows its
password."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator

import numpy as np
import pytest
from postgres_server import drop_schema, with_schema

from mars_core.errors import (
    ConfigError,
    ConflictError,
    CorruptStoreError,
    MarsBackendError,
    StorageUnavailableError,
    ValidationError,
)
from mars_core.model import MemoryNode
from mars_core.storage import NamespaceRecord, RecordStore
from mars_core.storage import postgres as pg
from mars_core.storage.base import AppendAudit, InsertMemory, TermQuery
from mars_core.storage.postgres import PostgresRecordStore, shown_url
from mars_core.testing import RecordStoreConformance


class TestPostgres(RecordStoreConformance):
    durable = True

    @pytest.fixture(autouse=True)
    def _server(self, postgres_server: str) -> Iterator[None]:
        self.base = postgres_server
        self.schemas: list[str] = []
        yield
        for schema in self.schemas:
            drop_schema(self.base, schema)

    def _url(self, path: pathlib.Path) -> str:
        schema = "t_" + "_".join(path.parts[-2:]).lower().replace("-", "_")[-40:]
        schema = "".join(c if c.isalnum() or c == "_" else "_" for c in schema)
        if schema not in self.schemas:
            self.schemas.append(schema)
        return with_schema(self.base, schema)

    def make_records(self, path: pathlib.Path) -> RecordStore:
        return PostgresRecordStore(self._url(path))

    def reopen(self, path: pathlib.Path, *, read_only: bool = False) -> RecordStore:
        return PostgresRecordStore(self._url(path), read_only=read_only)


# --- helpers ----------------------------------------------------------------------------


def _set_version(url: str, value: int) -> None:
    import psycopg

    libpq, schema = pg._split(url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".meta SET value = %s WHERE key = %s',
                     (str(value), "schema_version"))


def _schema_exists(url: str) -> bool:
    import psycopg

    libpq, schema = pg._split(url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                           (schema,)).fetchone()
    return bool(row and row[0])


# --- the schema --------------------------------------------------------------------------


def test_an_older_schema_is_refused_naming_mars_migrate_which_migrates_it(
        postgres_url: str) -> None:
    import psycopg

    with PostgresRecordStore(postgres_url) as records, records.write() as tx:
        tx.put_namespace(NamespaceRecord("kept", step=7))
        tx.apply([InsertMemory(MemoryNode(id=str(uuid.UUID(int=i + 1)), type="episodic",
                                          content=text, weight=3, seq=i + 1),
                               np.ones(4, np.float32)) for i, text in enumerate(
            ["Ana lives in Porto", "Bo likes jazz", "Ana's dog likes walks"])])
    query = TermQuery("default", ("ana", "like"), k=5)
    with PostgresRecordStore(postgres_url) as records, records.read() as tx:
        want = tx.search_terms(query)
    libpq, schema = pg._split(postgres_url)
    with psycopg.connect(libpq, autocommit=True) as conn:  # what version 1 wrote
        for table in ("terms", "term_totals"):
            conn.execute(f'DROP TABLE "{schema}".{table}')
        for index in ("memories_by_seq", "memories_by_time", "memories_by_conversation",
                      "memories_by_sensitivity"):
            conn.execute(f'DROP INDEX "{schema}".{index}')
    _set_version(postgres_url, 1)
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError, match=r"schema 1 .*mars migrate --path"):
            PostgresRecordStore(postgres_url, read_only=read_only)
    assert pg.schema_version(postgres_url) == 1
    assert pg.migrate(postgres_url) == (1, 2)
    with psycopg.connect(libpq, autocommit=True) as conn:  # the postings it wrote, counted
        counted, rows = conn.execute(
            f"SELECT (SELECT reltuples FROM pg_class WHERE oid = '\"{schema}\".terms'::regclass),"
            f' (SELECT count(*) FROM "{schema}".terms)').fetchone()
    assert counted == rows > 0
    assert pg.migrate(postgres_url) == (2, 2)  # current: nothing to do
    with PostgresRecordStore(postgres_url) as records, records.read() as tx:
        assert tx.namespace("kept") == NamespaceRecord("kept", step=7)
        assert want.hits and tx.search_terms(query) == want
    _set_version(postgres_url, 3)
    with pytest.raises(CorruptStoreError, match="newer"):
        PostgresRecordStore(postgres_url)
    with pytest.raises(CorruptStoreError, match="newer"):
        pg.migrate(postgres_url)


def test_read_only_needs_an_existing_store_and_creates_nothing(postgres_url: str) -> None:
    with pytest.raises(ConfigError, match="read_only"):
        PostgresRecordStore(postgres_url, read_only=True)
    assert not _schema_exists(postgres_url)
    with pytest.raises(ConfigError, match="no store"):
        pg.migrate(postgres_url)
    assert not _schema_exists(postgres_url)


@pytest.mark.parametrize("url", [
    "mysql://u@h/db", "postgresql://u@h/db?schema=Has-Caps", "postgresql://u@h/db?schema="])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(ValidationError):
        PostgresRecordStore(url)


@pytest.mark.parametrize("options", [{"lock_timeout": -1}, {"pool_size": 1},
                                     {"connect_timeout": True}, {"synchronous": "off"}])
def test_bad_options_are_refused(postgres_url: str, options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PostgresRecordStore(postgres_url, **options)  # type: ignore[arg-type]
    assert not _schema_exists(postgres_url)


def test_urls_are_shown_without_their_password() -> None:
    assert shown_url("postgres://ana:s3cret@db:5433/agents") == \
        ("postgresql://ana@db:5433/agents?schema=mars", "mars")
    assert "s3cret" not in repr(pg._split("postgresql://ana:s3cret@db/a?schema=x")[1])


# --- a server away ------------------------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:  # bound, never listening: a connection is refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_a_typed_error_without_the_password() -> None:
    url = f"postgresql://ana:s3cret@127.0.0.1:{_closed_port()}/agents"
    with pytest.raises(StorageUnavailableError, match="check that it runs") as caught:
        PostgresRecordStore(url, connect_timeout=2)
    assert "s3cret" not in str(caught.value)
    with pytest.raises(StorageUnavailableError):
        pg.schema_version(url, connect_timeout=2)


def test_connections_the_server_dropped_are_replaced(postgres_url: str) -> None:
    import psycopg

    libpq, _ = pg._split(postgres_url)
    with PostgresRecordStore(postgres_url, pool_size=2) as records:
        with records.write() as tx:
            tx.put_namespace(NamespaceRecord("a", step=1))
        with psycopg.connect(libpq, autocommit=True) as admin:  # as a restart would
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "application_name = 'mars-memory' AND pid <> pg_backend_pid()")
        with records.read() as tx:  # nothing was begun on them: safe to replace
            assert tx.namespace("a") == NamespaceRecord("a", step=1)


def test_a_connection_lost_inside_a_write_is_a_typed_error_and_nothing_is_written(
        postgres_url: str) -> None:
    import psycopg

    libpq, _ = pg._split(postgres_url)
    with PostgresRecordStore(postgres_url) as records:
        with pytest.raises(StorageUnavailableError, match="nothing was written"), \
                records.write() as tx:
            tx.put_namespace(NamespaceRecord("lost", step=1))
            pid = tx._rows("SELECT pg_backend_pid()")[0][0]
            with psycopg.connect(libpq, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            tx.put_namespace(NamespaceRecord("lost", step=2))
        with records.read() as tx:
            assert tx.namespace("lost") is None


def test_a_nul_in_text_is_refused_and_nothing_is_written(postgres_url: str) -> None:
    with PostgresRecordStore(postgres_url) as records:
        with pytest.raises(ValidationError), records.write() as tx:
            tx.put_namespace(NamespaceRecord("fine"))
            tx.put_namespace(NamespaceRecord("bad\x00name"))
        with records.read() as tx:
            assert tx.namespace_names() == []


# --- many writers -------------------------------------------------------------------------


def test_writers_of_one_namespace_take_turns_and_of_others_do_not_wait(
        postgres_url: str) -> None:
    with PostgresRecordStore(postgres_url) as first, \
            PostgresRecordStore(postgres_url, lock_timeout=0.2) as second:
        with first.write() as held:
            assert held.lock_namespaces(["a"]) == {"a": 0}
            with second.write() as tx:  # another namespace: no wait
                assert tx.lock_namespaces(["b"]) == {"b": 0}
                tx.put_namespace(NamespaceRecord("b", version=1))
            with pytest.raises(ConflictError, match="lock_timeout"), second.write() as tx:
                tx.put_namespace(NamespaceRecord("c", version=1))
                tx.lock_namespaces(["a", "c"])
            held.put_namespace(NamespaceRecord("a", version=1))
        with second.write() as tx:  # released at the commit: its version is the new one
            assert tx.lock_namespaces(["a", "b", "c"]) == {"a": 1, "b": 1, "c": 0}


def test_a_statement_the_server_cancels_is_not_taken_for_a_lock_wait(
        postgres_url: str) -> None:
    """The server's statement_timeout (here shorter than lock_timeout) cancels a write
    waiting for a namespace: a MarsBackendError that names it, not the ConflictError of
    lock_timeout; nothing written."""
    capped = f"{postgres_url}&options=-c%20statement_timeout%3D200"
    with PostgresRecordStore(postgres_url) as first, \
            PostgresRecordStore(capped, lock_timeout=60) as second:
        with first.write() as held:
            held.lock_namespaces(["a"])
            with pytest.raises(MarsBackendError, match="statement_timeout") as caught, \
                    second.write() as tx:
                tx.put_namespace(NamespaceRecord("b", version=1))
                tx.lock_namespaces(["a", "b"])
            assert not isinstance(caught.value, ConflictError)
        with second.read() as tx:
            assert tx.namespace("b") is None


def test_numbers_from_two_stores_never_collide(postgres_url: str) -> None:
    with PostgresRecordStore(postgres_url) as a, PostgresRecordStore(postgres_url) as b:
        taken = [s.next_counter() for _ in range(5) for s in (a, b)]
        with a.write() as tx:
            inner = [a.next_counter(), b.next_counter()]  # inside a transaction too
            tx.set_counter(0)
    assert len(set(taken + inner)) == 12 and taken == sorted(taken)


def test_the_audit_and_the_change_log_are_numbered_in_commit_order(postgres_url: str) -> None:
    suite = TestPostgres()
    a_events, b_events = suite.audit_events()
    with PostgresRecordStore(postgres_url) as first, PostgresRecordStore(postgres_url) as second:
        with first.write() as tx_a:  # begun first, committed last
            tx_a.apply([AppendAudit(tuple(a_events)), InsertMemory(suite.node(0), suite.vector(0))])
            with second.write() as tx_b:
                tx_b.apply([AppendAudit(tuple(b_events)),
                            InsertMemory(suite.node(1, "ns-b"), suite.vector(1))])
            with second.read() as seen:  # what a reader sees between the two commits
                between = (seen.audit_heads(), seen.changes(0))
        with second.read() as tx:
            assert tx.audit() == [*b_events, *a_events]
            assert [(c.seq, c.memory_id) for c in tx.changes(0)] == \
                [(1, suite.node(1).id), (2, suite.node(0).id)]
            assert between[0] == (2, {"ns-b": (2, b_events[-1].hash)})
            assert tx.audit_heads(between[0][0]) == between[0]  # the anchor still holds
            assert [c.seq for c in between[1]] == [1]
