"""Search where the data lives (DESIGN §3), on PostgreSQL: the records on a real server
with the numpy index, or with the index on a real ``chroma run`` server (the deployment
of several processes). What ``test_search_history`` checks on SQLite holds there too:
opening a store loads no namespace, a namespace's load is its active memories whatever
its history, a query reads its candidates by id (not the archive), and the keyword
channel (the records' term index) meets the forms of a word.

The reads are counted by :class:`mars_core.testing.CountingRecords` (the memories the
record store returned), never timed."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mars_core import HashingEmbedder, MemoryStore, RetrievalConfig
from mars_core.bench.history import conversation
from mars_core.index.base import VectorIndex
from mars_core.index.numpy import NumpyIndex
from mars_core.storage.postgres import PostgresRecordStore
from mars_core.testing import CountingRecords
from mars_core.views.namespace import KEEP_READ_STORE

QUERY = "Where does Ana's sister live and what did Greta say about jazz?"

Opener = Callable[..., MemoryStore]


@pytest.fixture(params=["postgres", "postgres-chroma"])
def opener(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[Opener]:
    """Opens stores of one place (the test's schema; with ``postgres-chroma``, a prefix
    of its own on the session's Chroma server): ``opener(records=None, **kw)``, where
    ``records`` wraps a :class:`PostgresRecordStore` of the test's URL (``postgres_url``
    is the same fixture value)."""
    index: Callable[[], VectorIndex] = NumpyIndex
    if request.param == "postgres-chroma":
        pytest.importorskip("chromadb")
        from mars_core.index.chroma import ChromaIndex

        server = request.getfixturevalue("chroma_server")
        prefix = f"t{uuid.uuid4().hex[:12]}_"

        def index() -> VectorIndex:
            return ChromaIndex(host=server.host, port=server.port, prefix=prefix)
    made: list[MemoryStore] = []

    def factory(records: CountingRecords | None = None, **kw: Any) -> MemoryStore:
        store = MemoryStore(records=records or PostgresRecordStore(postgres_url),
                            index=index(), embedder=HashingEmbedder(), **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


def _filled(opener: Opener, n: int, budget: int) -> None:
    """``n`` memories (the texts of a conversation's turns) added in one bulk: on a
    small budget, nearly all of them archived."""
    with opener(budget=budget) as store:
        store.add_many([t for _, t in conversation(n)])


def test_a_namespace_loads_its_active_memories_and_a_query_reads_its_candidates(
        opener: Opener, postgres_url: str) -> None:
    """150 memories on a budget of 80 tokens: nearly all archived. Opening loads nothing,
    the first call loads the active memories, and a render_context reads its 16
    candidates (and what they link to) by id: a few dozen memories, not the archive."""
    _filled(opener, 150, budget=80)
    counting = CountingRecords(PostgresRecordStore(postgres_url))
    store = opener(counting, retrieval=RetrievalConfig(candidates=16))
    stats = store.stats("default")["namespaces"]["default"]
    assert stats["archived"] > 20 * stats["active"] > 0
    assert store.resident("default") == {"default": 0}  # opening loaded nothing
    counting.memories_read = 0
    store.add("Ana's sister lives in Lyon now")
    assert counting.memories_read <= stats["active"] + 5  # the load: the active memories
    active = store.stats("default")["namespaces"]["default"]["active"]
    assert store.resident("default")["default"] == active
    counting.memories_read = 0
    assert "Lyon" in store.render_context(QUERY)
    assert 0 < counting.memories_read < stats["archived"] // 4  # not the archive
    assert active < store.resident("default")["default"] <= active + KEEP_READ_STORE


def test_the_keyword_channel_meets_the_forms_of_a_word(opener: Opener) -> None:
    """"live", "lives", "lived", "living": one term in the records' term index."""
    store = opener()
    answer = store.add("Ana lives in Porto")
    store.add_many(["Bo likes jazz", "Cy plays chess on Sundays", "Dev works in Lisbon",
                    "Ana bought a red bike"])
    for query in ("Where does Ana live?", "Where is Ana living now?", "Ana lived where?"):
        hits = store.retrieve(query, k=2, read_only=True, relative_cutoff=0)
        assert hits[0].id == answer.id and hits[0].lexical == 1.0
