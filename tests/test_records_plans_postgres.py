"""What PostgreSQL's planner does with the record store's full-text search (issue 29):
it reads the postings of the query's terms, and a candidate's postings by its id, never
every posting of the namespace — whatever the planner's statistics say.

A store's tables are filled long before autovacuum's next ``ANALYZE`` after an import or
a burst of turns; with the estimates of an empty table, PostgreSQL ran the BM25 ranking
as a scan of all the namespace's postings joined to a ``VALUES`` list of the query's
terms (several times slower at 2,000 memories, and growing with the history), and read the
exact scores' postings through the namespace too. The statements a search sends are
traced (psycopg's ``Connection.execute``) and their plans asked of PostgreSQL itself
(``EXPLAIN (FORMAT JSON)``, in the search's own transaction)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.bench.history import conversation
from mars_core.index.numpy import NumpyIndex
from mars_core.storage.postgres import PostgresRecordStore

psycopg = pytest.importorskip("psycopg")


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _bad_steps(plan: dict[str, Any]) -> list[str]:
    """The steps of ``plan`` that read the postings table by anything but the terms or
    the ids asked for: a sequential scan, an index range of the namespace alone, a
    join that filters postings against the query's terms."""
    bad = []
    for node in _nodes(plan):
        kind, cond = node["Node Type"], node.get("Index Cond", "")
        on_terms = node.get("Relation Name") == "terms" or node.get(
            "Index Name", "").startswith("terms")
        if node.get("Join Filter") or (on_terms and kind == "Seq Scan") or (
                on_terms and "Index" in kind and not any(
                    key in cond for key in ("(term = ANY", "(memory_id = ANY"))):
            bad.append(f"{kind}: {cond or node.get('Join Filter', '')}"[:160])
    return bad


def test_a_full_text_search_reads_the_postings_of_its_terms_and_ids_alone(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plans: list[tuple[str, dict[str, Any]]] = []
    real = psycopg.Connection.execute

    def execute(self: Any, query: Any, params: Any = None, *args: Any, **kw: Any) -> Any:
        if isinstance(query, str) and " FROM terms" in query and "SELECT memory_id" in \
                query.replace("t.memory_id", "memory_id"):
            explained = real(self, f"EXPLAIN (FORMAT JSON) {query}", params).fetchone()
            plans.append((query, explained[0][0]["Plan"]))
        return real(self, query, params, *args, **kw)

    store = MemoryStore(records=PostgresRecordStore(postgres_url), index=NumpyIndex(),
                        embedder=HashingEmbedder(), budget=10**9)
    try:
        store.add_many([text for _, text in conversation(600, seed=3)])
        monkeypatch.setattr(psycopg.Connection, "execute", execute)
        hits = store.retrieve("Yesterday I went to the market with Greta and we talked "
                              "about jazz", k=5)
    finally:
        monkeypatch.undo()
        store.close()
    assert hits
    ranked = [q for q, _ in plans if "sum(" in q]
    exact = [q for q, _ in plans if "sum(" not in q]
    assert ranked and exact  # the ranking and the exact scores' read were both seen
    assert {q[:80]: _bad_steps(p) for q, p in plans} == {q[:80]: [] for q, _ in plans}


def _reltuples(conn: Any, schema: str) -> dict[str, float]:
    rows = conn.execute("SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON "
                        "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname IN "
                        "('memories', 'terms')", (schema,)).fetchall()
    return {str(name): float(n) for name, n in rows}


def test_a_large_write_refreshes_the_planners_statistics_and_never_waits_for_them(
        postgres_server: str, postgres_url: str) -> None:
    """A write of 200 memories or more (and at least 10 % of those the statistics count)
    runs ``ANALYZE`` after its commit; a smaller one leaves it to autovacuum (switched off
    on these tables here, so that only the store analyses them); a table another session
    holds is skipped, and the write returns."""
    schema = parse_qs(urlsplit(postgres_url).query)["schema"][0]
    texts = [text for _, text in conversation(700, seed=5)]
    store = MemoryStore(records=PostgresRecordStore(postgres_url), index=NumpyIndex(),
                        embedder=HashingEmbedder(), budget=10**9)
    with store, psycopg.connect(postgres_server, autocommit=True) as other:
        for table in ("memories", "terms", "term_totals", "edges", "stats"):
            other.execute(f'ALTER TABLE "{schema}".{table} SET (autovacuum_enabled = false)')
        empty = _reltuples(other, schema)  # -1 (never analysed) or 0 (indexed empty)
        store.add_many(texts[:100])
        assert _reltuples(other, schema) == empty and max(empty.values()) <= 0
        with other.transaction():  # a session holds the postings table
            other.execute(f'LOCK TABLE "{schema}".terms IN SHARE UPDATE EXCLUSIVE MODE')
            store.add_many(texts[100:400])
        counted = _reltuples(other, schema)
        assert counted == {"memories": 400, "terms": empty["terms"]}  # skipped, not waited
        store.add_many(texts[400:420])  # under 200: not analysed again
        assert _reltuples(other, schema) == counted
        store.add_many(texts[420:700])
        counted = _reltuples(other, schema)
        assert counted["memories"] == 700 and counted["terms"] > 700
        assert store.stats()["namespaces"]["default"]["active"] == 700
