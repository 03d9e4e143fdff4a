"""The privacy corpus through every exit that hands memory text to a model (issue 30).

Under the defaults, no exit may return a raw leak (:func:`mars_core.bench.leakage.leaks`):
an identifier's value, a word of a special-category statement, or — in the line of a
restatement of a sensitive or erased memory — a word that gives its fact away. The exits
are the real framework classes, offline: the LangChain and LlamaIndex retrievers, the
LangGraph store's ``search`` and ``get``, the LangChain chat history and classic memory
(text and messages), the agent middleware in a real ``create_agent`` graph with a fake
chat model, the memory tools, and LlamaIndex's ``MarsMemory`` and ``MarsMemoryBlock``.
Each gets a subset of the corpus (phone numbers in five formats, e-mail addresses,
IBANs, cards, national ids, every special-category statement, every restatement); the
whole corpus goes through the core check (``check_output``) once.

The store uses the embedder ``MemoryStore`` picks by default (all-MiniLM-L6-v2 when
installed): the restatements are found by meaning, and the hashing embedder misses
those that share few words with what they restate (``mars bench leakage`` measures
both); without MiniLM, the restatement part is skipped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.bench.leakage import RESTATED, Planted, corpus, leaks
from mars_core.embedders import minilm_installed
from mars_core.embeddings import Embedder
from mars_core.privacy.masking import shows

_MINILM = minilm_installed() and importlib.util.find_spec("sentence_transformers") is not None
_PHONES = ("555-123-4567", "+44 20 7946 0958", "06 12 34 56 78", "+81 3-1234-5678",
           "(11) 91234-5678")  # North American, E.164, French, Japanese, Brazilian


def _subset() -> list[Planted]:
    """Five phone formats, two of every other identifier kind, every statement."""
    items, seen = [], dict[str, int]()
    for p in corpus():
        if not p.identifier:
            items.append(p)
        elif (p.kind == "phone" and p.secrets[0] in _PHONES) or \
                (p.kind != "phone" and seen.get(p.kind, 0) < 2):
            seen[p.kind] = seen.get(p.kind, 0) + 1
            items.append(p)
    return items


SUBSET = _subset()


def _embedder() -> Embedder:
    from mars_core.embedders import SentenceTransformerEmbedder, default_embedder

    return SentenceTransformerEmbedder() if _MINILM else default_embedder(prefer="hashing")


def _raw_leaks(units: Iterable[str], items: Iterable[Planted] = SUBSET,
               restated: bool = _MINILM) -> list[str]:
    """What ``units`` (the texts an exit returned, one memory each) show raw."""
    units = [u for u in units if u]
    found = [p.text for p in items for u in units
             if any(leaks(u, s, identifier=p.identifier) for s in p.secrets)]
    if restated:
        found += [t for f in RESTATED for _, t in f.restatements for u in units
                  if shows(u, t) and any(leaks(u, w, identifier=False) for w in f.giveaway)]
    return sorted(set(found))


def _lines(text: str) -> list[str]:
    """The memory texts of a rendered context."""
    return [line.split("] ", 1)[1] for line in text.splitlines()
            if line.startswith("- [") and "] " in line]


def _questions(items: Iterable[Planted] = SUBSET) -> list[str]:
    return [f"tell me about this: {p.text}" for p in items] + [
        q for f in RESTATED for q in (f.probe, f"tell me about this: {f.original}")]


def _script(items: Iterable[Planted] = SUBSET
            ) -> tuple[list[tuple[str, str]], list[str], list[tuple[str, str]]]:
    """The corpus as turns (with the detected restated memories), the marked memories,
    then the restatements — in that order, so the restated memories are older."""
    turns: list[tuple[str, str]] = []
    for p in items:
        turns += [("user", p.text), ("user", "the weather was nice today")]
    turns += [("user", f.original) for f in RESTATED if f.how != "marked"]
    marked = [f.original for f in RESTATED if f.how == "marked"]
    later = [("assistant" if source == "assistant" else "user", text)
             for f in RESTATED for source, text in f.restatements]
    return turns, marked, later


def _mark(store: MemoryStore, namespace: str, conversation: str = "c") -> None:
    """The memories their caller marks sensitive (``add(..., sensitivity=0.9)``), as
    turns of ``conversation`` in ``namespace`` (an adapter has no way to mark one)."""
    store.add_many([{"text": t, "sensitivity": 0.9, "namespace": namespace,
                     "provenance": {"source": "user", "conversation_id": conversation}}
                    for t in _script()[1]])


def _ingest(store: MemoryStore, namespace: str, items: Iterable[Planted] = SUBSET) -> None:
    """The script into ``namespace`` in three batched calls (one embedding call each)."""
    turns, _, later = _script(items)
    store.observe_many([{"role": r, "text": t} for r, t in turns], namespace=namespace,
                       conversation_id="c")
    _mark(store, namespace)
    store.observe_many([{"role": r, "text": t} for r, t in later], namespace=namespace,
                       conversation_id="c")


@pytest.fixture(scope="module")
def store() -> Iterator[MemoryStore]:
    with MemoryStore(embedder=_embedder(), clock=FakeClock(), nlp="rules", budget=20000,
                     seed=3) as s:
        yield s


def _erase_erased(store: MemoryStore, namespace: str) -> None:
    """Erase the memory the corpus erases once its restatements are stored."""
    for node in store.list(namespace):
        if node.content == RESTATED[-1].original:
            store.erase(node_id=node.id, namespace=namespace)


@pytest.fixture(scope="module")
def core(store: MemoryStore) -> str:
    """Namespace ``core``: the subset observed as one conversation."""
    _ingest(store, "core")
    _erase_erased(store, "core")
    return "core"


def test_the_whole_corpus_through_the_core_check() -> None:
    with MemoryStore(embedder=_embedder(), clock=FakeClock(), nlp="rules", budget=20000,
                     seed=4) as s:
        items = corpus()
        _ingest(s, "default", items)
        _erase_erased(s, "default")
        nodes = s.list(status=None)
        shown = [x.node.content for x in s.check_output(nodes) if x.node is not None]
        assert _raw_leaks(shown, items) == []
        raw = [x.node.content for x in s.check_output(nodes, redact=False)
               if x.node is not None]
        assert len(_raw_leaks(raw, items)) >= len(items)  # every item is there to leak


def test_core_reads(store: MemoryStore, core: str) -> None:
    units: list[str] = []
    for q in _questions():
        units += [h.text for h in store.retrieve(q, k=5, namespace=core)]
        units += _lines(store.render_context(q, namespace=core, budget_tokens=300))
    assert _raw_leaks(units) == []
    raw = [h.text for q in _questions()[::4] for h in store.retrieve(q, k=5, namespace=core,
                                                                       redact=False)]
    assert _raw_leaks(raw)  # the questions do reach the planted memories


def test_langchain_retriever_and_tools(store: MemoryStore, core: str) -> None:
    from langchain_mars.retrievers import MarsRetriever
    from langchain_mars.tools import memory_tools

    retriever = MarsRetriever(store=store, k=5, namespace=core)
    _, recall, _ = memory_tools(store, namespace=core)
    units = [d.page_content for q in _questions()[::2] for d in retriever.invoke(q)]
    units += [line.split(") ", 1)[1] for q in _questions()[1::2]
              for line in recall.invoke({"query": q}).splitlines() if ") " in line]
    assert _raw_leaks(units) == []
    assert _raw_leaks(d.page_content for q in _questions()[::4]
                      for d in retriever.invoke(q, redact=False))


def test_llamaindex_retriever(store: MemoryStore, core: str) -> None:
    from llamaindex_mars.retriever import MarsRetriever

    retriever = MarsRetriever(store, namespace=core, k=5)
    units = [n.node.get_content() for q in _questions()[1::2] for n in retriever.retrieve(q)]
    assert _raw_leaks(units) == []


def test_langgraph_store_search_and_get(store: MemoryStore) -> None:
    from langgraph.store.base import PutOp

    from langchain_mars.store import MarsStore
    from mars_core.namespaces import ITEM_KEY as MARKER

    graph_store = MarsStore(store)
    turns, _, later = _script()
    graph_store.batch([PutOp(("corpus",), f"k{i}", {"text": t}, None)
                       for i, (_, t) in enumerate(turns)])
    # an item cannot be marked sensitive through LangGraph's API: its marked facts are
    # the app's own, stored as items by the core with the mark
    ns = MarsStore.mars_namespace(("corpus",))
    store.add_many([{"text": json.dumps({"text": t}), "sensitivity": 0.9, "namespace": ns,
                     "metadata": {MARKER: {"namespace": ["corpus"], "key": f"m{i}",
                                           "value": {"text": t}}}}
                    for i, t in enumerate(_script()[1])])
    graph_store.batch([PutOp(("corpus",), f"r{i}", {"text": t}, None)
                       for i, (_, t) in enumerate(later)])
    _erase_erased_item(graph_store)
    found = [i for q in _questions()[::2]
             for i in graph_store.search(("corpus",), query=q, limit=5)]
    units = [str(i.value["text"]) for i in found]
    units += [str(item.value["text"]) for i in found[::3]
              if (item := graph_store.get(i.namespace, i.key)) is not None]
    assert _raw_leaks(units) == []
    raw = MarsStore(store, redact=False)
    assert _raw_leaks(str(i.value["text"]) for q in _questions()[::6]
                      for i in raw.search(("corpus",), query=q, limit=5))


def _erase_erased_item(graph_store: Any) -> None:
    """Delete the item the corpus erases (a LangGraph delete is an erasure)."""
    for i, (_, t) in enumerate(_script()[0]):
        if t == RESTATED[-1].original:
            graph_store.delete(("corpus",), f"k{i}")


def test_langchain_chat_history_and_classic_memory(store: MemoryStore) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mars.chat_history import MarsChatMessageHistory
    from langchain_mars.classic import MarsMemory

    history = MarsChatMessageHistory(store, "s1", namespace="chat", budget_tokens=20000)
    turns, _, later = _script()
    history.add_messages([HumanMessage(t) for _, t in turns])
    _mark(store, "chat", "s1")
    history.add_messages([AIMessage(t) if r == "assistant" else HumanMessage(t)
                          for r, t in later])
    _erase_erased(store, "chat")
    assert _raw_leaks(m.text for m in history.messages) == []
    memory = MarsMemory(store=store, session_id="s1", namespace="chat", active_turns=200,
                        budget_tokens=20000, return_messages=True)
    text_memory = MarsMemory(store=store, session_id="s1", namespace="chat",
                             budget_tokens=20000)
    units: list[str] = []
    for q in _questions()[::3]:
        for m in memory.load_memory_variables({"input": q})["history"]:
            units += _lines(m.text) if m.type == "system" else [m.text]
        units += _lines(text_memory.load_memory_variables({"input": q})["history"])
    assert _raw_leaks(units) == []


def test_langchain_middleware_in_a_real_agent(store: MemoryStore, core: str) -> None:
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_mars.middleware import MarsMemoryMiddleware

    class Seen(BaseCallbackHandler):
        def __init__(self) -> None:
            self.system: list[str] = []

        def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
            self.system += [m.text for batch in messages for m in batch if m.type == "system"]

    seen = Seen()
    questions = _questions()[::2]
    agent = create_agent(FakeListChatModel(responses=["ok"] * len(questions)),
                         middleware=[MarsMemoryMiddleware(store, namespace=core,
                                                          observe=False)])
    for q in questions:
        agent.invoke({"messages": [("user", q)]}, {"callbacks": [seen]})
    assert any("===" in s for s in seen.system)  # memories were injected
    assert _raw_leaks(u for s in seen.system for u in _lines(s)) == []


def test_llamaindex_memory_and_block(store: MemoryStore) -> None:
    from llama_index.core.llms import ChatMessage

    from llamaindex_mars.block import MarsMemoryBlock
    from llamaindex_mars.memory import MarsMemory

    memory = MarsMemory(store, session_id="li", token_limit=20000, recall_tokens=2000)
    turns, _, later = _script()
    first = [ChatMessage(role=r, content=t) for r, t in turns]
    then = [ChatMessage(role=r, content=t) for r, t in later]
    block = MarsMemoryBlock(store, budget_tokens=2000)
    memory.put_messages(first)
    asyncio.run(block.aput(first, session_id="blk"))
    _mark(store, memory.namespace, memory.conversation_id)
    _mark(store, "blk")
    memory.put_messages(then)
    asyncio.run(block.aput(then, session_id="blk"))
    _erase_erased(store, memory.namespace)
    _erase_erased(store, "blk")
    units: list[str] = []
    for q in _questions()[::3]:
        memory.put(ChatMessage(role="user", content=q))  # the exchange in progress
        for m in memory.get()[:-1]:  # all but that message, which the app just gave
            text = m.content or ""
            units += _lines(text) if m.role.value == "system" else [text]
        ask = [ChatMessage(role="user", content=q)]
        units += _lines(asyncio.run(block.aget(ask, session_id="blk")))
    assert _raw_leaks(units) == []
