"""MarsRetriever: the langchain-tests standard retriever suite, plus its own behaviour."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_mars.retrievers import MarsRetriever
from mars_core import FakeClock, HashingEmbedder, MemoryStore, ValidationError
from mars_core.audit import AuditOp

FACTS = [
    ("Ana lives in Lisbon and works as a nurse", "semantic", 0.1),
    ("Ana's brother Bo plays the drums in a jazz band", "social", 0.2),
    ("Ana is allergic to peanuts", "semantic", 0.6),
    ("Finish the Lisbon apartment lease renewal by Friday", "task", 0.0),
    ("Ana and Bo had dinner at a Lisbon jazz bar last week", "episodic", 0.1),
]


def _store(namespace: str | None = None) -> MemoryStore:
    store = MemoryStore(budget=2000, embedder=HashingEmbedder(), clock=FakeClock())
    for text, kind, sens in FACTS:
        store.add(text, type=kind, sensitivity=sens, namespace=namespace)
    return store


class TestMarsRetrieverStandard(RetrieversIntegrationTests):
    """The standard suite: k in the constructor and per call, sync and async."""

    _stores: list[MemoryStore]

    @pytest.fixture(autouse=True)
    def _close_stores(self) -> Iterator[None]:
        self._stores = []
        yield
        for store in self._stores:
            store.close()

    @property
    def retriever_constructor(self) -> type[MarsRetriever]:
        return MarsRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = _store()
        self._stores.append(store)
        return {"store": store}

    @property
    def retriever_query_example(self) -> str:
        return "Where does Ana live?"


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = _store()
    yield s
    s.close()


def test_documents_carry_memory_metadata(store: MemoryStore) -> None:
    docs = MarsRetriever(store=store, k=2).invoke("Who plays the drums?")
    top = docs[0]
    node = store.get(top.id or "")
    assert top.page_content == node.content == FACTS[1][0]
    assert top.metadata["memory_type"] == "social"
    assert top.metadata["sensitivity"] == pytest.approx(0.2)
    assert top.metadata["id"] == node.id
    assert top.metadata["namespace"] == "default"
    assert top.metadata["score"] >= docs[1].metadata["score"] > 0
    assert {"dense_score", "lexical_score", "tokens", "created_at", "archived"} <= set(
        top.metadata)


def test_exactly_k_when_k_exist_and_fewer_when_not(store: MemoryStore) -> None:
    retriever = MarsRetriever(store=store, k=10)
    assert len(retriever.invoke("Ana Lisbon")) == 5  # all five share a word with it
    assert len(retriever.invoke("Ana Lisbon", k=2)) == 2


def test_filters_types_and_sensitivity(store: MemoryStore) -> None:
    retriever = MarsRetriever(store=store, k=5, types=["semantic"])
    docs = retriever.invoke("Ana")
    assert {d.metadata["memory_type"] for d in docs} == {"semantic"}
    assert len(docs) == 2
    safe = retriever.invoke("Ana", max_sensitivity=0.5)
    assert [d.page_content for d in safe] == [FACTS[0][0]]


def test_token_budget_limits_documents(store: MemoryStore) -> None:
    unbudgeted = MarsRetriever(store=store, k=5).invoke("Ana Lisbon")
    first_two = sum(d.metadata["tokens"] for d in unbudgeted[:2])
    budgeted = MarsRetriever(store=store, k=5, budget_tokens=first_two).invoke("Ana Lisbon")
    assert sum(d.metadata["tokens"] for d in budgeted) <= first_two
    assert [d.id for d in budgeted][:2] == [d.id for d in unbudgeted][:2]
    assert len(budgeted) < len(unbudgeted)


def test_relative_cutoff_counts_only_returned_as_accessed(store: MemoryStore) -> None:
    everything = MarsRetriever(store=store, k=5, read_only=True).invoke("peanuts allergy")
    best = everything[0].metadata["score"]
    kept = [d for d in everything if d.metadata["score"] >= 0.8 * best]
    assert 0 < len(kept) < len(everything)
    before = len(store.audit)
    docs = MarsRetriever(store=store, k=5, score_cutoff=0.8).invoke("peanuts allergy")
    assert [d.id for d in docs] == [d.id for d in kept]
    access = [e for e in store.audit.events()[before:] if e.op is AuditOp.ACCESS]
    assert len(access) == 1 and list(access[0].node_ids) == [d.id for d in docs]


def test_read_only_leaves_no_audit_event(store: MemoryStore) -> None:
    before = len(store.audit)
    MarsRetriever(store=store, read_only=True).invoke("Ana")
    assert len(store.audit) == before
    MarsRetriever(store=store).invoke("Ana")
    assert len(store.audit) == before + 1


def test_namespace_template_from_run_config() -> None:
    store = MemoryStore(budget=500, clock=FakeClock())
    try:
        store.add("Ana likes green tea", type="semantic", namespace="memories/ana")
        store.add("Bo likes black coffee", type="semantic", namespace="memories/bo")
        retriever = MarsRetriever(store=store, namespace=("memories", "{user_id}"))
        for user, drink in (("ana", "tea"), ("bo", "coffee")):
            docs = retriever.invoke("who likes a drink?",
                                    config={"configurable": {"user_id": user}})
            assert [d.metadata["namespace"] for d in docs] == [f"memories/{user}"]
            assert drink in docs[0].page_content
        # the config reaches the retriever inside a chain too
        chain = RunnableLambda(lambda q: q) | retriever
        docs = chain.invoke("likes", config={"configurable": {"user_id": "bo"}})
        assert [d.metadata["namespace"] for d in docs] == ["memories/bo"]
        with pytest.raises(ValidationError, match="user_id"):
            retriever.invoke("likes")
    finally:
        store.close()


async def test_async_matches_sync(store: MemoryStore) -> None:
    retriever = MarsRetriever(store=store, k=3, read_only=True, score_cutoff=0.3)
    sync = await asyncio.to_thread(retriever.invoke, "jazz drums")  # not on the loop
    asynchronous = await retriever.ainvoke("jazz drums")
    assert [d.id for d in asynchronous] == [d.id for d in sync]
    assert all(isinstance(d, Document) for d in asynchronous)


@pytest.mark.parametrize("bad", [{"k": 0}, {"k": True}, {"score_cutoff": 0.0},
                                 {"score_cutoff": 1.5}, {"namespace": 3},
                                 {"namespace": ("{user id}",)},
                                 # issue 19: nothing coerced, max_sensitivity in [0, 1]
                                 {"max_sensitivity": 2.0}, {"max_sensitivity": -0.1},
                                 {"max_sensitivity": True}, {"max_sensitivity": "0.5"},
                                 {"max_sensitivity": float("nan")}, {"score_cutoff": "0.5"},
                                 {"budget_tokens": "100"}, {"budget_tokens": True},
                                 {"include_archive": "yes"}, {"read_only": 1}])
def test_bad_constructor_arguments_are_typed_errors(store: MemoryStore,
                                                    bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MarsRetriever(store=store, **bad)


def test_bad_call_arguments_change_nothing(store: MemoryStore) -> None:
    retriever = MarsRetriever(store=store)
    before = len(store.audit)
    for kwargs in ({"k": -1}, {"types": ["dream"]}, {"max_sensitivity": 2.0}, {"top": 3},
                   {"max_sensitivity": True}, {"include_archive": "yes"}, {"read_only": 1}):
        with pytest.raises(ValidationError):
            retriever.invoke("Ana", **kwargs)
    with pytest.raises(ValidationError):
        retriever.invoke("   ")
    assert len(store.audit) == before


class _OverlapCrossEncoder(BaseCrossEncoder):
    """A deterministic stand-in for a cross-encoder model: it reads each (query, text)
    pair together and scores the share of the query's words the text holds."""

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        def words(s: str) -> set[str]:
            return {w.strip(".,?!'s").lower() for w in s.split()} - {""}
        return [len(words(q) & words(t)) / len(words(q)) for q, t in text_pairs]


def test_a_cross_encoder_downstream_reranks_every_candidate(store: MemoryStore) -> None:
    # what docs/benchmarks/evidence.md tells a user with a reranking model to do: the
    # retriever's cut-off is off (it returns up to k hits), and LangChain's own
    # compression retriever reranks them with the model
    retriever = MarsRetriever(store=store, k=5, read_only=True)
    query = "Who plays drums in a jazz band?"
    candidates = retriever.invoke(query)
    assert len(candidates) > len(store.retrieve(query, read_only=True))  # the cut-off's
    model = _OverlapCrossEncoder()
    scores = model.score([(query, d.page_content) for d in candidates])
    want = [d.page_content for _, d in sorted(zip(scores, candidates, strict=True),
                                              key=lambda p: -p[0])][:2]
    reranked = ContextualCompressionRetriever(
        base_compressor=CrossEncoderReranker(model=model, top_n=2),
        base_retriever=retriever).invoke(query)
    assert [d.page_content for d in reranked] == want
    assert want[0] == FACTS[1][0]


def test_scores_are_in_zero_one_and_keep_the_order() -> None:
    """The store's fused score passes 1 when the card channel answers a question (1.47
    here); the document's ``score`` is that score over the most it can be, in [0, 1]."""
    with MemoryStore(budget=2000) as s:
        s.observe("user", "I work at Acme as a baker.")
        s.observe("user", "My dog Rex loves the beach.")
        docs = MarsRetriever(store=s, k=3).invoke("Where do I work?")
        fused = [d.metadata["fused_score"] for d in docs]
        scores = [d.metadata["score"] for d in docs]
        assert fused[0] > 1.0 and all(0.0 <= x <= 1.0 for x in scores)
        assert scores == sorted(scores, reverse=True)
        cfg = s.config.retrieval
        top = 1 + cfg.cue_weight + cfg.speaker_weight + cfg.date_weight + cfg.card_weight
        assert scores == pytest.approx([f / top for f in fused])
