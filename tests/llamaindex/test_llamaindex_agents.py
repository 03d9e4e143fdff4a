"""FunctionAgent and ReActAgent with ``memory=MarsMemory(...)``: several turns, then a
later conversation of the same session recalls an earlier fact; another session never
sees it."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llamaindex_helpers import Recorder

from llamaindex_mars import MarsMemory
from mars_core import FakeClock, HashingEmbedder, MemoryStore


def _weather(city: str = "Lisbon") -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(kind: type[FunctionAgent] | type[ReActAgent], llm: MockFunctionCallingLLM
           ) -> FunctionAgent | ReActAgent:
    return kind(llm=llm, tools=[FunctionTool.from_defaults(_weather)],
                system_prompt="You are a helpful travel assistant.")


@pytest.mark.parametrize("kind", [FunctionAgent, ReActAgent])
async def test_agent_recalls_a_fact_from_an_earlier_session(
        kind: type[FunctionAgent] | type[ReActAgent], mstore, recorder: Recorder,
        llm: MockFunctionCallingLLM) -> None:
    store = mstore()
    agent = _agent(kind, llm)
    first = MarsMemory(store, session_id="alice")
    for turn in ["My sister Ana lives in Porto.", "I prefer window seats on trains.",
                 "Please plan a weekend trip for me."]:
        await agent.run(user_msg=turn, memory=first)
    # within one conversation the working history reaches the LLM as chat messages
    assert "My sister Ana lives in Porto." in [m.content for m in recorder.calls[-1]]
    await agent.run(user_msg="I love hiking in the mountains.",
                    memory=MarsMemory(store, session_id="bob"))

    later = MarsMemory(store, session_id="alice")  # a new conversation: empty history
    assert later.conversation_id == "alice/2" and later.get_all() == []
    await agent.run(user_msg="Which seats do I prefer on trains?", memory=later)
    seen = recorder.last_input_text()
    assert "window seats" in seen
    assert "hiking" not in seen  # bob's memories never reach alice's agent
    assert "Please plan a weekend trip" not in [m.content for m in recorder.calls[-1]]


@pytest.mark.parametrize("kind", [FunctionAgent, ReActAgent])
async def test_agent_recalls_across_a_restart(kind: type[FunctionAgent] | type[ReActAgent],
                                              tmp_path: Path, key: bytes) -> None:
    def open_store() -> MemoryStore:
        return MemoryStore.open(tmp_path / "mars", embedder=HashingEmbedder(),
                                clock=FakeClock(), audit_key=key, budget=4000)

    with open_store() as store:
        rec = Recorder()
        agent = _agent(kind, MockFunctionCallingLLM(response_generator=rec))
        await agent.run(user_msg="My dentist appointment is on Friday at 9.",
                        memory=MarsMemory(store, session_id="carol"))
    with open_store() as store:  # a new process would do exactly this
        rec = Recorder()
        agent = _agent(kind, MockFunctionCallingLLM(response_generator=rec))
        memory = MarsMemory(store, session_id="carol")
        await agent.run(user_msg="When is my dentist appointment?", memory=memory)
        assert "Friday at 9" in rec.last_input_text()
        assert memory.conversation_id == "carol/2"


async def test_function_agent_keeps_tool_calls_in_the_working_history(mstore) -> None:
    """The default mock calls every tool once, then answers: the tool call and its result
    stay in the working history with their structure; only text is observed."""
    store = mstore()
    memory = MarsMemory(store, session_id="dave")
    agent = FunctionAgent(llm=MockFunctionCallingLLM(),
                          tools=[FunctionTool.from_defaults(_weather)])
    await agent.run(user_msg="What is the weather?", memory=memory)
    roles = [m.role.value for m in memory.get_all()]
    assert roles == ["user", "assistant", "tool", "assistant"]
    observed = [(n.provenance.source, n.content)
                for n in await store.alist("dave", type="episodic")]
    assert observed == [("user", "What is the weather?"),
                        ("assistant", "Tool calls complete.")]


async def test_react_agent_without_system_prompt_needs_insert_user(mstore) -> None:
    """A ReActAgent without a system_prompt drops a leading system message (LlamaIndex
    behaviour); ``insert="user"`` carries the recall inside the user message instead."""
    store = mstore()
    await MarsMemory(store, session_id="eve").aput(
        ChatMessage(role="user", content="My locker code is behind the blue door."))
    for insert, expected in (("system", False), ("user", True)):
        rec = Recorder()
        agent = ReActAgent(llm=MockFunctionCallingLLM(response_generator=rec), tools=[])
        memory = MarsMemory(store, session_id="eve", insert=insert)
        await agent.run(user_msg="Where is my locker code?", memory=memory)
        assert ("blue door" in rec.last_input_text()) is expected
