"""Your own reranker over the store (``rerank=``, :mod:`mars_core.reading.rerank`): a small local
cross-encoder-like model reorders what retrieve, render_context and the adapters return;
bad rerankers are refused; without one nothing changes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from mars_core import FakeClock, HashingEmbedder, MemoryStore, ValidationError
from mars_core.reading.rerank import RERANK_DEPTH, cross_encoder, rerank_hits

FACTS = ["Ana plays the drums in a jazz band", "Bo plays jazz records at home",
         "Ana's jazz band rehearses on Fridays", "The band Ana likes most is a jazz trio"]
QUERY = "who plays jazz in a band"


class PairModel:
    """A deterministic stand-in for ``sentence_transformers.CrossEncoder``: ``predict``
    reads each (query, text) pair and scores it by one chosen word (no download)."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.calls = 0

    def predict(self, sentences: list[tuple[str, str]]) -> list[float]:
        self.calls += 1
        return [float(self.word in t.casefold()) + 0.01 * len(t) for _, t in sentences]


def _store() -> MemoryStore:
    store = MemoryStore(budget=2000, clock=FakeClock(), embedder=HashingEmbedder())
    for text in FACTS:
        store.add(text, type="semantic")
    return store


def test_retrieve_reranks_and_keeps_the_scores() -> None:
    with _store() as store:
        plain = store.retrieve(QUERY, relative_cutoff=0, read_only=True)
        model = PairModel("fridays")
        mine = store.retrieve(QUERY, relative_cutoff=0, read_only=True,
                              rerank=cross_encoder(model))
        assert model.calls == 1
        assert mine[0].text == "Ana's jazz band rehearses on Fridays"
        assert plain[0].text != mine[0].text
        assert [h.score for h in mine] == [h.score for h in plain]  # handed out again
        assert {h.id for h in mine} == {h.id for h in plain}
        assert [h.id for h in store.retrieve(QUERY, relative_cutoff=0, read_only=True,
                                             rerank=None)] == [h.id for h in plain]


def test_render_context_shows_the_reranked_evidence_first() -> None:
    with _store() as store:
        text = store.render_context(QUERY, rerank=cross_encoder(PairModel("records")))
        first = next(line for line in text.splitlines() if line.startswith("- "))
        assert first.endswith("Bo plays jazz records at home")


def test_only_the_best_twenty_move() -> None:
    with MemoryStore(budget=10_000, clock=FakeClock(), embedder=HashingEmbedder()) as store:
        for i in range(30):
            store.add(f"jazz note {i} " + "x" * i, type="semantic")
        hits = store.retrieve("jazz note", relative_cutoff=0, read_only=True, k=30,
                              budget_tokens=10_000)
        moved = rerank_hits(hits, "jazz note", lambda q, ts: [len(t) for t in ts])
        assert [h.id for h in moved[RERANK_DEPTH:]] == [h.id for h in hits[RERANK_DEPTH:]]
        head = [h.node.content for h in moved[:RERANK_DEPTH]]
        assert head == sorted(head, key=len, reverse=True)


@pytest.mark.parametrize("bad", [
    lambda q, ts: [1.0],  # too few
    lambda q, ts: [math.nan] * len(ts),
    lambda q, ts: ["high"] * len(ts),
])
def test_a_bad_reranker_is_a_typed_error_and_records_nothing(bad: object) -> None:
    with _store() as store:
        before = len(store.audit)
        with pytest.raises(ValidationError, match="reranker"):
            store.retrieve(QUERY, rerank=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="rerank must be a callable"):
            store.render_context(QUERY, rerank="cross-encoder")  # type: ignore[arg-type]
        assert len(store.audit) == before


def test_the_adapters_pass_the_reranker() -> None:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from llama_index.core.llms import ChatMessage

    from langchain_mars.classic import MarsMemory as ClassicMemory
    from langchain_mars.middleware import MarsMemoryMiddleware
    from langchain_mars.retrievers import MarsRetriever
    from llamaindex_mars import MarsMemory
    from llamaindex_mars import MarsRetriever as LlamaRetriever

    fridays = cross_encoder(PairModel("fridays"))
    want = "Ana's jazz band rehearses on Fridays"
    with _store() as store:
        assert MarsRetriever(store=store, k=2, rerank=fridays).invoke(QUERY)[0].page_content \
            == want
        assert MarsRetriever(store=store, k=2).invoke(QUERY, rerank=fridays)[0].page_content \
            == want
        nodes = LlamaRetriever(store, k=2, rerank=fridays).retrieve(QUERY)
        assert nodes[0].node.get_content() == want
        with pytest.raises(ValidationError):
            LlamaRetriever(store, rerank=3)  # type: ignore[arg-type]

        seen: list[str] = []

        class Spy(FakeListChatModel):
            def _call(self, messages: Sequence[object], *a: object, **kw: object) -> str:
                seen.extend(m.text for m in messages if m.type == "system")  # type: ignore[attr-defined]
                return super()._call(messages, *a, **kw)  # type: ignore[arg-type]

        agent = create_agent(Spy(responses=["ok"]), middleware=[
            MarsMemoryMiddleware(store, observe=False, rerank=fridays)])
        agent.invoke({"messages": [("user", QUERY)]})
        recalled = [line for line in seen[-1].splitlines() if line.startswith("- ")]
        assert recalled[0].endswith(want)

        memory = MarsMemory(store, rerank=fridays)
        memory.put(ChatMessage(role="user", content="hello"))
        got = memory.get(QUERY)[0].content or ""
        assert next(line for line in got.splitlines() if line.startswith("- ")).endswith(want)

        as_text = ClassicMemory(store=store, rerank=fridays)
        as_messages = ClassicMemory(store=store, rerank=fridays, return_messages=True)
        for text in (as_text.load_memory_variables({"input": QUERY})["history"],
                     as_messages.load_memory_variables({"input": QUERY})["history"][0].text):
            assert next(line for line in text.splitlines() if line.startswith("- ")) \
                .endswith(want)
        with pytest.raises(ValidationError):
            ClassicMemory(store=store, rerank=3)
