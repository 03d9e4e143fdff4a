"""Many texts at once through the adapters are embedded in one call (issue 21, item 5):
LangGraph ``MarsStore.batch``/``abatch``, LangChain ``add_messages``, LlamaIndex
``put_messages`` and the memory block — real framework classes, a real store, the
hashing embedder behind :class:`~mars_core.testing.CountingEmbedder`."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.errors import BudgetExceededError
from mars_core.testing import CountingEmbedder


def _store(counting: CountingEmbedder, budget: int = 100_000) -> MemoryStore:
    return MemoryStore(budget=budget, clock=FakeClock(), embedder=counting)


# --- LangGraph: MarsStore.batch / abatch ------------------------------------------------------


@pytest.fixture
def langgraph() -> Any:
    return pytest.importorskip("langgraph.store.base", reason="needs the langgraph extra")


def test_batch_of_new_puts_is_one_embedding_call_and_one_add_many(langgraph: Any) -> None:
    from langchain_mars import MarsStore

    counting = CountingEmbedder()
    with _store(counting) as memory:
        store = MarsStore(memory)
        ops = [langgraph.PutOp(("users", f"u{i % 3}"), f"k{i}", {"text": f"fact {i}"})
               for i in range(40)]
        assert store.batch(ops) == [None] * 40
        assert counting.batches == [40]
        assert memory.stats()["audit_events"] == 40  # one insert event each, one commit
        assert store.get(("users", "u1"), "k4").value == {"text": "fact 4"}  # type: ignore[union-attr]
        hits = store.search(("users",), query="fact 17", limit=1)
        assert [h.key for h in hits] == ["k17"]


def test_batch_keeps_the_order_of_puts_gets_and_updates(langgraph: Any) -> None:
    from langchain_mars import MarsStore

    counting = CountingEmbedder()
    ns = ("docs",)
    with _store(counting) as memory:
        store = MarsStore(memory)
        results = store.batch([
            langgraph.PutOp(ns, "a", {"text": "alpha one"}),
            langgraph.PutOp(ns, "b", {"text": "beta one"}),
            langgraph.GetOp(ns, "a"),                            # sees the put before it
            langgraph.PutOp(ns, "a", {"text": "alpha two"}),     # an update: a new version
            langgraph.PutOp(ns, "c", {"text": "gamma one"}),
            langgraph.PutOp(ns, "c", {"text": "gamma two"}),     # the same key again
            langgraph.GetOp(ns, "c"),
        ])
        assert results[2].value == {"text": "alpha one"}
        assert results[6].value == {"text": "gamma two"}
        assert store.get(ns, "a").value == {"text": "alpha two"}  # type: ignore[union-attr]
        assert [len(memory.history(store.node_id(ns, k) or "", namespace="docs"))
                for k in ("a", "b", "c")] == [2, 1, 2]
        # a, b together; the update of a; c alone (a put of c follows); c's update
        assert counting.batches == [2, 1, 1, 1]


def test_abatch_batches_too(langgraph: Any) -> None:
    from langchain_mars import MarsStore

    counting = CountingEmbedder()
    with _store(counting) as memory:
        store = MarsStore(memory)
        ops = [langgraph.PutOp(("n",), f"k{i}", {"text": f"async fact {i}"}) for i in range(12)]
        assert asyncio.run(store.abatch(ops)) == [None] * 12
        assert counting.batches == [12]


def test_a_put_heavier_than_the_budget_fails_the_batch_before_anything_runs(
        langgraph: Any) -> None:
    from langchain_mars import MarsStore

    counting = CountingEmbedder()
    with _store(counting, budget=50) as memory:
        store = MarsStore(memory)
        ops = [langgraph.PutOp(("n",), "small", {"text": "a small fact"}),
               langgraph.PutOp(("n",), "big", {"text": "word " * 200})]
        with pytest.raises(BudgetExceededError, match="'big'"):
            store.batch(ops)
        assert store.get(("n",), "small") is None
        assert memory.stats()["audit_events"] == 0 and counting.calls == 0


# --- LangChain chat history, LlamaIndex memory and block -------------------------------------


def test_chat_history_add_messages_is_one_embedding_call() -> None:
    pytest.importorskip("langchain_core", reason="needs the langchain extra")
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mars import MarsChatMessageHistory

    counting = CountingEmbedder()
    with _store(counting) as memory, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BaseChatMessageHistory is deprecated upstream
        history = MarsChatMessageHistory(memory, "s1")
        messages = [HumanMessage(f"question {i} about the garden") if i % 2 == 0
                    else AIMessage(f"answer {i} about the garden") for i in range(30)]
        history.add_messages(messages)
        assert len(history.messages) == 30
    assert counting.batches[0] == 30 and counting.calls == 1


def test_llamaindex_put_messages_and_block_are_one_embedding_call_each() -> None:
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    from llama_index.core.llms import ChatMessage

    from llamaindex_mars import MarsMemory, MarsMemoryBlock

    counting = CountingEmbedder()
    messages = [ChatMessage(role="user" if i % 2 == 0 else "assistant",
                            content=f"turn {i} about the blue door") for i in range(24)]
    with _store(counting) as memory:
        MarsMemory(memory, session_id="ana").put_messages(messages)
        assert counting.batches == [24]
        asyncio.run(MarsMemoryBlock(memory).aput(messages, session_id="bo"))
        assert counting.batches == [24, 24]
        assert len(memory.list("ana")) == len(memory.list("bo")) == 24
