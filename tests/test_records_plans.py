"""What SQLite's planner does with the record store's reads (issue 29): a read by ids
searches by the ids' index, never by a namespace's index, so its cost does not grow with
the namespace's history. Without statistics, SQLite took an index on the namespace for
``id IN (…) AND namespace = ?`` and scanned the whole history of the namespace for each
read of a search's candidates and of their edges.

Every read by ids a search issues is traced (the stdlib's trace callback on the store's
connection) and its plan asked of SQLite itself (``EXPLAIN QUERY PLAN``)."""

from __future__ import annotations

import pathlib
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mars_core import HashingEmbedder, MemoryStore

T0 = datetime(2024, 5, 1, tzinfo=UTC)
_PLACES = ("Porto", "Lisbon", "Braga", "Faro", "Evora", "Coimbra")
_SCANS = [["SCAN", table] for table in ("memories", "m", "stats", "s", "edges", "terms", "t")]


def _traced(statements: list[str]) -> Any:
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn
    return connect


def _namespace_searches(db: pathlib.Path, statements: list[str]) -> list[tuple[str, str]]:
    """The plan steps of ``statements`` that search by a namespace alone, or scan a table."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        bad = []
        for sql in dict.fromkeys(statements):
            for *_, step in conn.execute(f"EXPLAIN QUERY PLAN {sql}"):
                if step.endswith("(namespace=?)") or step.split()[:2] in _SCANS:
                    bad.append((step, sql[:200]))
        return bad
    finally:
        conn.close()


def test_a_search_reads_its_candidates_and_their_edges_by_id(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[str] = []
    monkeypatch.setattr(sqlite3, "connect", _traced(statements))
    with MemoryStore.open(tmp_path / "s", index="numpy", embedder=HashingEmbedder(),
                          budget=120) as store:  # a small budget: most turns are archived
        store.observe_many([
            {"role": "user" if i % 2 == 0 else "assistant", "conversation_id": "c1",
             "text": f"Ana moved to {_PLACES[i % 6]} in week {i} and likes tea number {i}?",
             "speaker": "Ana" if i % 2 == 0 else None, "at": T0 + timedelta(minutes=i)}
            for i in range(60)])
        assert store.stats()["namespaces"]["default"]["archived"] > 20
        statements.clear()
        context = store.render_context("Where did Ana move, and what tea does she like?")
    assert "Ana" in context
    reads = [s for s in statements if " IN (" in s and s.lstrip().upper().startswith("SELECT")]
    assert len(reads) >= 3  # the candidates, their edges both ways
    assert _namespace_searches(tmp_path / "s" / "mars.sqlite3", reads) == []
