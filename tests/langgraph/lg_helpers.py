"""Helpers of the LangGraph store tests: what a store holds underneath, read raw."""

from __future__ import annotations

import numpy as np

from mars_core import MemoryStore
from mars_core.model import MemoryStatus
from mars_core.storage import PostgresRecordStore, SQLiteRecordStore
from mars_core.testing import index_sync, record_store, vector_index

__all__ = ["indexed_ids", "raw_text"]


def raw_text(memory: MemoryStore) -> str:
    """Everything the store's system of record holds, as one string: every row of every
    table of its record store (memories, statistics, edges, audit events, namespace
    records with their policy state and preferences, the manifest, the change log):
    SQLite's file dumped as SQL, or every row of the PostgreSQL schema's tables as the
    server returns them (what no query can reach — dead row versions, the WAL — is the
    documented limit of an erasure there: ``purges_on_erase`` is False)."""
    records = record_store(memory)
    if isinstance(records, PostgresRecordStore):
        with memory._lock, records._pool.connection() as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename",
                (records.schema,)).fetchall()]
            return "\n".join(repr(row) for table in tables for row in conn.execute(
                f'SELECT * FROM "{records.schema}"."{table}"').fetchall())
    assert isinstance(records, SQLiteRecordStore), records
    with memory._lock, records._lock:
        return "\n".join(records._conn.iterdump())


def indexed_ids(memory: MemoryStore, namespace: str) -> set[str]:
    """Every id the store's vector index holds in a namespace (active and archived)."""
    probe = np.ones(memory.embedder.dim, dtype=np.float32)
    with memory._lock:
        index_sync(memory).ensure_current()
        return {i for status in MemoryStatus
                for i, _ in vector_index(memory).query(namespace, status, probe, 10_000)}
