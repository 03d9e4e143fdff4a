"""The SQLite record store: the conformance suite (in RAM and on a file), then what only
SQLite promises: one writing process, committed snapshots for a reader beside the writer,
erased bytes gone from every file after a purge, and its schema version."""

from __future__ import annotations

import os
import pathlib
import sqlite3
import subprocess
import sys
import threading
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import children
import numpy as np
import pytest

import mars_core
from mars_core.errors import ConfigError, ConflictError, CorruptStoreError, ValidationError
from mars_core.model import MemoryNode, MemoryType
from mars_core.storage import RecordStore, RecordTxn, SQLiteRecordStore
from mars_core.storage._sql import BATCH_ROWS
from mars_core.storage.base import DeleteMemory, InsertMemory, TermQuery
from mars_core.storage.sqlite import SCHEMA_VERSION, migrate
from mars_core.testing import RecordStoreConformance

DB = "mars.sqlite3"
T = TypeVar("T")
T0 = datetime(2024, 5, 1, tzinfo=UTC)
WAIT = 60.0  # a guard against a hang, never a measured duration


class TestSQLiteInRAM(RecordStoreConformance):
    durable = False

    def make_records(self, path: pathlib.Path) -> RecordStore:
        return SQLiteRecordStore()


class TestSQLiteFile(RecordStoreConformance):
    durable = True

    def make_records(self, path: pathlib.Path) -> RecordStore:
        return SQLiteRecordStore(path / DB)

    def reopen(self, path: pathlib.Path, *, read_only: bool = False) -> RecordStore:
        return SQLiteRecordStore(path / DB, read_only=read_only)


# --- helpers ----------------------------------------------------------------------------


def uid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def memory(n: int, content: str | None = None) -> MemoryNode:
    return MemoryNode(id=uid(n), type=MemoryType.SEMANTIC, content=content or f"fact {n}",
                      weight=3, seq=n + 1, namespace="ns-a", created_at=T0,
                      payload={"kind": "semantic", "concept": "Ana"},
                      metadata={"note": content or ""})


def vector(n: int) -> np.ndarray:
    return np.full(4, n + 1, dtype=np.float32)


def insert(records: SQLiteRecordStore, node: MemoryNode) -> None:
    with records.write() as tx:
        tx.apply([InsertMemory(node, vector(node.seq))])


HOLDER = """
import sys
from mars_core.storage import SQLiteRecordStore

records = SQLiteRecordStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()  # hold the store open until the test says so
records.close()
print("closed", flush=True)
"""


def _child_env() -> dict[str, str]:
    root = str(pathlib.Path(mars_core.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}


# --- one writing process ------------------------------------------------------------------


def test_a_second_writer_process_gets_a_conflict_naming_the_holder(
        tmp_path: pathlib.Path) -> None:
    path = tmp_path / DB
    with SQLiteRecordStore(path) as records:
        insert(records, memory(0))
    holder = children.popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=_child_env())
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(ConflictError, match=rf"another process \(pid {holder.pid} on "):
            SQLiteRecordStore(path, lock_timeout=0.2)
        with pytest.raises(ConflictError, match=rf"pid {holder.pid} "):
            SQLiteRecordStore(path, lock_timeout=0)
        with SQLiteRecordStore(path, read_only=True) as reader, reader.read() as tx:
            assert tx.memory(uid(0)) == memory(0)  # a reader never waits for the lock
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "closed"
        assert holder.wait(timeout=WAIT) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with SQLiteRecordStore(path, lock_timeout=0) as records:  # released: the next one writes
        insert(records, memory(1))


def test_one_process_holds_one_writer(tmp_path: pathlib.Path) -> None:
    with SQLiteRecordStore(tmp_path / DB), pytest.raises(ConflictError, match="pid"):
        SQLiteRecordStore(tmp_path / DB, lock_timeout=0)


# --- a reader beside the writer -----------------------------------------------------------


def test_a_reader_sees_only_committed_transactions(tmp_path: pathlib.Path) -> None:
    path = tmp_path / DB
    writing, release = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def write_one(records: SQLiteRecordStore) -> None:
        try:
            with records.write() as tx:
                tx.apply([InsertMemory(memory(1), vector(1))])
                tx.set_counter(2)
                writing.set()
                assert release.wait(WAIT)
        except BaseException as exc:
            failure.append(exc)
            writing.set()

    with SQLiteRecordStore(path) as writer:
        insert(writer, memory(0))
        with SQLiteRecordStore(path, read_only=True) as reader:
            thread = threading.Thread(target=write_one, args=(writer,))
            thread.start()
            try:
                assert writing.wait(WAIT) and not failure
                with reader.read() as tx:  # the write is in progress: invisible
                    assert (tx.existing([uid(0), uid(1)]), tx.counter()) == ({uid(0)}, 0)
                    release.set()
                    thread.join(WAIT)
                    assert not thread.is_alive() and not failure
                    # committed now, but this read is a snapshot taken before
                    assert tx.memory(uid(1)) is None
            finally:
                release.set()
                thread.join(WAIT)
            with reader.read() as tx:
                assert (tx.memory(uid(1)), tx.counter()) == (memory(1), 2)


# --- erasure ---------------------------------------------------------------------------------


def _files_holding(directory: pathlib.Path, marker: bytes) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file() and marker in p.read_bytes())


@pytest.mark.parametrize("padding", [0, 20_000], ids=["in-page", "overflow-pages"])
def test_purge_leaves_no_erased_byte_in_any_file(tmp_path: pathlib.Path, padding: int) -> None:
    marker = f"secret-{uuid.uuid4().hex}"
    directory = tmp_path / "store"
    with SQLiteRecordStore(directory / DB) as records:
        insert(records, memory(0))
        insert(records, memory(1, content=f"Ana's code is {marker} {marker * (padding // 39)}"))
        insert(records, memory(2))
        assert _files_holding(directory, marker.encode())  # the scan does find it
        with records.write() as tx:
            tx.apply([DeleteMemory(memory(1))])
        assert "truncated" in records.purge()
        assert _files_holding(directory, marker.encode()) == []  # the purge did it, not close
        with records.read() as tx:
            assert tx.existing([uid(0), uid(1), uid(2)]) == {uid(0), uid(2)}
    assert _files_holding(directory, marker.encode()) == []


def test_purge_in_ram_says_so() -> None:
    with SQLiteRecordStore() as records:
        assert "RAM" in records.purge()


# --- opening ---------------------------------------------------------------------------------


def test_schema_version_is_written_and_a_newer_one_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / DB
    SQLiteRecordStore(path).close()

    def version(value: int | None = None) -> str:
        conn = sqlite3.connect(path)
        try:
            if value is not None:
                with conn:
                    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                                 (str(value),))
            return str(conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
        finally:
            conn.close()

    assert version() == str(SCHEMA_VERSION)
    version(SCHEMA_VERSION + 1)
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError, match="newer"):
            SQLiteRecordStore(path, read_only=read_only, lock_timeout=0)
    version(SCHEMA_VERSION)
    with SQLiteRecordStore(path, lock_timeout=0) as records:  # the refusal left no lock
        insert(records, memory(0))


V1_UNDO = ("DROP TABLE terms", "DROP TABLE term_totals", "DROP INDEX memories_by_seq",
           "DROP INDEX memories_by_time", "DROP INDEX memories_by_conversation",
           "DROP INDEX memories_by_sensitivity",
           "UPDATE meta SET value = '1' WHERE key = 'schema_version'")
"""What makes a current file what version 1 wrote: its tables are version 1's, as are
its rows (version 2 added tables and indexes only)."""


def test_a_version_1_file_is_migrated_by_the_open_that_writes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / DB
    texts = ["Ana lives in Porto", "Bo likes jazz", "Ana's dog likes walks"]
    with SQLiteRecordStore(path) as records:
        for i, text in enumerate(texts):
            insert(records, memory(i, text))
        with records.read() as tx:
            want = tx.search_terms(TermQuery("ns-a", ("ana", "like"), k=5))
    conn = sqlite3.connect(path)
    with conn:
        for statement in V1_UNDO:
            conn.execute(statement)
    conn.close()
    with pytest.raises(CorruptStoreError, match="schema 1; open it once without read_only"):
        SQLiteRecordStore(path, read_only=True)
    with SQLiteRecordStore(path) as records, records.read() as tx:
        assert tx.search_terms(TermQuery("ns-a", ("ana", "like"), k=5)) == want
        assert want.hits and tx.totals()["ns-a"].active == 3
    assert migrate(path) == (SCHEMA_VERSION, SCHEMA_VERSION)


def test_a_file_that_is_not_a_database_is_corrupt(tmp_path: pathlib.Path) -> None:
    path = tmp_path / DB
    path.write_bytes(b"this is not an SQLite database, just text\n" * 200)
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError):
            SQLiteRecordStore(path, read_only=read_only, lock_timeout=0)


# --- a namespace read a batch of rows at a time ----------------------------------------------


def _filled(path: pathlib.Path, n: int) -> None:
    records = SQLiteRecordStore(path)
    with records.write() as tx:  # a note as long as the text: rows of ~2 KB
        tx.apply([InsertMemory(memory(i, f"fact {i} " + "x" * 1500), vector(i)) for i in range(n)])
    records.close()


def _traced(records: SQLiteRecordStore, read: Callable[[RecordTxn], T]
            ) -> tuple[T, tuple[int, int, int]]:
    """``read`` in a read transaction of ``records`` (closed after), and the traced
    memory (bytes) before it, after it and at its peak."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        with records.read() as tx:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            result = read(tx)
            after, peak = tracemalloc.get_traced_memory()
    finally:
        if not tracing:
            tracemalloc.stop()
        records.close()
    return result, (before, after, peak)


def test_a_namespace_is_read_a_batch_of_rows_at_a_time(tmp_path: pathlib.Path) -> None:
    """What ``memories`` holds beyond the memories it returns is a batch of raw rows,
    not the whole namespace's (a 10,000-memory namespace's rows were ~15 MB)."""
    n = 8 * BATCH_ROWS + 3
    _filled(tmp_path / DB, n)
    loaded, (before, after, peak) = _traced(SQLiteRecordStore(tmp_path / DB),
                                             lambda tx: tx.memories("ns-a"))
    assert [m.id for m in loaded] == [uid(i) for i in range(n)]  # whole, in seq order
    assert loaded[-1].content.startswith(f"fact {n - 1} ")
    assert peak - after < (after - before) / 4  # all rows at once: over 40% of it


def test_an_index_rebuild_streams_the_vectors_a_batch_at_a_time(tmp_path: pathlib.Path) -> None:
    """``index_rows`` (what ``mars reindex`` reads: every memory's vector) holds a batch
    of raw rows at a time, not the store's: a million 384-d vectors are ~1.5 GB."""
    n = 8 * BATCH_ROWS + 3
    records = SQLiteRecordStore(tmp_path / DB)
    with records.write() as tx:
        tx.apply([InsertMemory(memory(i), np.full(384, i + 1, dtype=np.float32))
                  for i in range(n)])
    seen, (before, _, peak) = _traced(
        records, lambda tx: [(row.id, float(row.vector[0])) for row in tx.index_rows()])
    assert seen == [(uid(i), float(i + 1)) for i in range(n)]  # whole, in seq order
    assert peak - before < n * 384 * 4 / 2  # all rows at once: over the whole 3.2 MB


@pytest.mark.parametrize("body", ["{", "[1]", '"text"', '{"step": "\\ud800"}'],
                         ids=["cut", "list", "string", "lone-surrogate"])
def test_a_damaged_row_past_the_first_batch_is_corrupt_and_leaves_the_store_usable(
        tmp_path: pathlib.Path, body: str) -> None:
    n = 2 * BATCH_ROWS + 10
    _filled(tmp_path / DB, n)
    with sqlite3.connect(tmp_path / DB) as raw:
        raw.execute("UPDATE memories SET body = ? WHERE id = ?", (body, uid(n - 3)))
    raw.close()
    records = SQLiteRecordStore(tmp_path / DB)
    try:
        with records.read() as tx:
            with pytest.raises(CorruptStoreError, match=uid(n - 3)):
                tx.memories("ns-a")
            assert [r.id for r in tx.index_rows("ns-a")] == [uid(i) for i in range(n)]
        with records.write() as tx:  # no statement of the failed read left open
            tx.apply([DeleteMemory(memory(n - 3)), InsertMemory(memory(n), vector(n))])
        with records.read() as tx:
            assert len(tx.memories("ns-a")) == n
    finally:
        records.close()


def test_read_only_needs_an_existing_store_and_creates_nothing(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "sub" / DB
    with pytest.raises(ConfigError, match="read_only"):
        SQLiteRecordStore(missing, read_only=True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValidationError, match="needs a path"):
        SQLiteRecordStore(read_only=True)


@pytest.mark.parametrize("options", [{"lock_timeout": -1}, {"lock_timeout": True},
                                     {"synchronous": "off"}])
def test_bad_options_are_refused(tmp_path: pathlib.Path, options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SQLiteRecordStore(tmp_path / DB, **options)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_purge_blocked_by_a_reader_says_so_and_the_next_one_completes(
        tmp_path: pathlib.Path) -> None:
    marker = f"secret-{uuid.uuid4().hex}"
    directory = tmp_path / "store"
    with SQLiteRecordStore(directory / DB, lock_timeout=0) as records:
        insert(records, memory(0, content=f"Ana's code is {marker}"))
        with SQLiteRecordStore(directory / DB, read_only=True) as reader:
            with reader.read() as tx:  # a snapshot that still holds the memory
                assert tx.memory(uid(0)) is not None
                with records.write() as wtx:
                    wtx.apply([DeleteMemory(memory(0))])
                assert "could not be truncated" in records.purge()
            done = records.purge()
            assert "truncated" in done and "could not" not in done
            assert _files_holding(directory, marker.encode()) == []  # before any close


@pytest.mark.parametrize("synchronous", ["full", "normal"])
def test_only_a_write_that_need_not_be_durable_skips_the_fsync(
        tmp_path: pathlib.Path, synchronous: str) -> None:
    """``write(durable=False)`` commits with ``synchronous=NORMAL`` (WAL: atomic, no
    fsync) and the next write waits for the disk again; a store opened ``normal`` stays
    so. Read on the store's own connection inside each transaction."""
    full, normal = 2, 1  # PRAGMA synchronous values
    with SQLiteRecordStore(tmp_path / "r.sqlite3", synchronous=synchronous) as records:
        opened = full if synchronous == "full" else normal

        def level() -> int:
            return int(records._conn.execute("PRAGMA synchronous").fetchone()[0])

        seen = []
        for durable in (False, True, False):
            with records.write(durable=durable) as tx:
                tx.set_counter(len(seen))
                seen.append(level())
        assert seen == [normal, opened, normal]
        assert level() == opened
        with pytest.raises(ConflictError), records.write(durable=False):
            raise ConflictError("a failed write")
        assert level() == opened
        with records.read() as tx:
            assert tx.counter() == 2
