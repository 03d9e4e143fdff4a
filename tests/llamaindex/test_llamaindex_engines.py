"""Chat engines with ``MarsMemory`` (and ``MarsRetriever`` for the context engine)."""

from __future__ import annotations

import asyncio

from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

from llamaindex_mars import MarsMemory, MarsRetriever


def _seen(llm: MockLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(m.content or "" for m in llm.last_chat_messages or [])


async def test_simple_chat_engine_recalls_across_conversations(mstore) -> None:
    store = mstore()
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=2, is_chat_model=True)
    first = SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, session_id="al"))
    # the synchronous chat leaves the event loop (its store calls would block it)
    reply = await asyncio.to_thread(first.chat, "My dog is called Rex and he is a beagle.")
    assert reply.response == "text text"
    await asyncio.to_thread(first.chat, "I live in Porto.")
    assert "My dog is called Rex" in _seen(llm)  # working history of the conversation

    later = SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, session_id="al"))
    await later.achat("What breed is my dog?")
    assert "beagle" in _seen(llm)
    other = SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, session_id="zo"))
    await asyncio.to_thread(other.chat, "What breed is my dog?")
    assert "beagle" not in _seen(llm)


def test_condense_plus_context_engine_with_mars_retriever(mstore) -> None:
    store = mstore()
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=2, is_chat_model=True)
    SimpleChatEngine.from_defaults(llm=llm, memory=MarsMemory(store, session_id="al")).chat(
        "My passport number is in the blue folder, and my flight leaves on Monday.")
    memory = MarsMemory(store, session_id="al")
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=MarsRetriever(store, "al", k=3), llm=llm, memory=memory, skip_condense=True)
    engine.chat("When does my flight leave?")
    seen = _seen(llm)
    assert "Here are the relevant documents" in seen and "Monday" in seen
    assert "memory_type: episodic" in seen and "memory_id" not in seen
    engine.chat("Where is my passport number?")  # second turn: the history is there
    assert "When does my flight leave?" in _seen(llm)
    assert len(engine.chat_history) == 4

    engine.reset()  # forgets this session only
    assert store.list("al") == [] and memory.get_all() == []
    llm.reset_memory()
    engine.chat("When does my flight leave?")
    assert "Monday" not in _seen(llm)
    assert all("Monday" not in n.text for n in MarsRetriever(store, "al").retrieve("Monday"))
