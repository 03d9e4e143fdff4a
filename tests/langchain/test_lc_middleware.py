"""MarsMemoryMiddleware inside real ``create_agent`` graphs with fake chat models."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_helpers import FakeToolModel, ModelInputs

from langchain_mars.middleware import MarsMemoryMiddleware, used_memories
from mars_core import MemoryStore, ValidationError
from mars_core.reading.context import HEADER_RECALLED, HEADER_STRUCTURED

ALLERGY = "I am allergic to peanuts and my sister is called Maria."


def _agent(store: MemoryStore, answers: list[str], **kw: Any) -> Any:
    middleware = MarsMemoryMiddleware(store, namespace=("memories", "{user_id}"), **kw)
    return create_agent(FakeListChatModel(responses=answers), middleware=[middleware],
                        system_prompt="You are a helpful cook.", checkpointer=InMemorySaver())


def _run(agent: Any, text: str, thread: str, user: str, rec: ModelInputs) -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": thread, "user_id": user},
                   "callbacks": [rec]}
    result: dict[str, Any] = agent.invoke({"messages": [("user", text)]}, config)
    return result


def test_fact_told_in_thread_a_reaches_thread_b(lc_store: MemoryStore,
                                                recorder: ModelInputs) -> None:
    agent = _agent(lc_store, ["Noted, Maria's sibling!", "Avoid peanuts: you are allergic."])
    _run(agent, ALLERGY, "thread-a", "ana", recorder)
    assert "peanuts" not in recorder.system_texts(0)[0]  # nothing to recall yet
    out = _run(agent, "Which foods am I allergic to?", "thread-b", "ana", recorder)

    system = recorder.system_texts(1)
    assert len(system) == 1 and system[0].startswith("You are a helpful cook.\n\n")
    assert "The user is allergic to peanuts" in system[0]
    # thread B's own conversation never held thread A's message: it came from memory
    assert [m.text for m in out["messages"]] == ["Which foods am I allergic to?",
                                                 "Avoid peanuts: you are allergic."]
    assert all(ALLERGY not in m.text for m in recorder.calls[1] if m.type != "system")
    turns = lc_store.list("memories/ana", type="episodic")
    assert [(t.provenance.source, t.provenance.conversation_id) for t in turns] == [
        ("user", "thread-a"), ("assistant", "thread-a"),
        ("user", "thread-b"), ("assistant", "thread-b")]


def test_recalled_block_has_no_empty_section(lc_store: MemoryStore,
                                              recorder: ModelInputs) -> None:
    """Every section header the middleware injects is followed by at least one item."""
    agent = _agent(lc_store, ["Noted.", "Peanuts."])
    _run(agent, ALLERGY, "thread-a", "ana", recorder)
    _run(agent, "Which foods am I allergic to?", "thread-b", "ana", recorder)
    lines = recorder.system_texts(1)[0].splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("=== ")]
    assert lines[headers[0]] == HEADER_RECALLED and lines[headers[0] + 1] == HEADER_STRUCTURED
    for i in headers[1:]:  # each section opens on an item of its own
        assert i + 1 < len(lines) and lines[i + 1].startswith("- "), lines[i:]


def test_memories_stay_with_their_user(lc_store: MemoryStore, recorder: ModelInputs) -> None:
    agent = _agent(lc_store, ["Noted.", "I don't know."])
    _run(agent, ALLERGY, "t1", "ana", recorder)
    _run(agent, "Which foods am I allergic to?", "t2", "bo", recorder)
    assert recorder.system_texts(1) == ["You are a helpful cook."]
    assert lc_store.list("memories/bo", type="semantic") == []


def test_answer_reinforces_only_used_memories(lc_store: MemoryStore, recorder: ModelInputs,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    credits: list[tuple[list[str], list[str], str | None]] = []
    real_credit = lc_store.credit

    def spy(used: Any, offered: Any, namespace: str | None = None) -> None:
        credits.append((list(used), list(offered), namespace))
        real_credit(used, offered, namespace)

    monkeypatch.setattr(lc_store, "credit", spy)
    agent = _agent(lc_store, ["Noted.", "Avoid peanuts: you are allergic."])
    _run(agent, ALLERGY, "t1", "ana", recorder)
    assert credits == []  # nothing was offered to the first answer
    _run(agent, "Which foods am I allergic to?", "t2", "ana", recorder)
    (used, offered, ns), = credits
    texts = {lc_store.get(i, namespace=ns).content for i in used}
    assert ns == "memories/ana"
    assert "The user is allergic to peanuts" in texts
    assert set(used) < set(offered)  # the sister, for one, was shown but not used
    assert ALLERGY not in texts


def test_a_masked_memory_is_still_offered_and_credited(lc_store: MemoryStore,
                                                       recorder: ModelInputs,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The output check masks the number in what the model sees; the memory is still the
    one offered, and the answer that uses it credits it."""
    credits: list[list[str]] = []
    real_credit = lc_store.credit

    def spy(used: Any, offered: Any, namespace: str | None = None) -> None:
        credits.append(list(used))
        real_credit(used, offered, namespace)

    monkeypatch.setattr(lc_store, "credit", spy)
    fact = lc_store.add("The plumber Jonas answers on 555-123-4567 on weekdays",
                        type="semantic", namespace="memories/ana")
    agent = _agent(lc_store, ["The plumber Jonas answers the phone on weekdays."])
    _run(agent, "How do I reach the plumber Jonas?", "t1", "ana", recorder)
    system = recorder.system_texts(0)[0]
    assert "The plumber Jonas answers on [PHONE] on weekdays" in system
    assert "4567" not in system
    assert credits == [[fact.id]]


async def test_async_agent_recalls_and_observes(lc_store: MemoryStore,
                                                recorder: ModelInputs) -> None:
    agent = _agent(lc_store, ["Noted.", "Peanuts."])
    for text, thread in ((ALLERGY, "a"), ("Which foods am I allergic to?", "b")):
        await agent.ainvoke({"messages": [("user", text)]},
                            {"configurable": {"thread_id": thread}, "callbacks": [recorder]},
                            context={"user_id": "ana"})
    assert "The user is allergic to peanuts" in recorder.system_texts(1)[0]
    assert len(await lc_store.alist("memories/ana", type="episodic")) == 4


def test_tool_call_steps_are_not_observed(lc_store: MemoryStore) -> None:
    from langchain_core.tools import tool

    @tool
    def lookup_menu(day: str) -> str:
        """The menu of a day."""
        return "lentil soup"

    model = FakeToolModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "lookup_menu", "args": {"day": "monday"},
                                   "id": "c1", "type": "tool_call"}]),
        AIMessage("Monday is lentil soup."),
    ]))
    agent = create_agent(model, tools=[lookup_menu],
                         middleware=[MarsMemoryMiddleware(lc_store, namespace="n")])
    agent.invoke({"messages": [("user", "What is on the menu on Monday?")]})
    turns = lc_store.list("n", type="episodic")
    assert [t.content for t in turns] == ["What is on the menu on Monday?",
                                          "Monday is lentil soup."]


def test_missing_user_id_is_a_typed_error(lc_store: MemoryStore) -> None:
    agent = _agent(lc_store, ["unused"])
    with pytest.raises(ValidationError, match="user_id"):
        agent.invoke({"messages": [("user", "hello")]}, {"configurable": {"thread_id": "x"}})
    assert lc_store.stats()["namespaces"] == {}


@pytest.mark.parametrize("bad", [{"budget_tokens": 0}, {"evidence": -1},
                                 {"min_overlap": 0.0}, {"namespace": 1.5}])
def test_bad_configuration(lc_store: MemoryStore, bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MarsMemoryMiddleware(lc_store, **bad)


@pytest.mark.backend_neutral
def test_used_memories_is_lexical_and_deterministic() -> None:
    offered = {"a": "The user is allergic to peanuts", "b": "Maria is the user's sister",
               "c": "..."}
    assert used_memories("You are allergic to peanuts", offered) == ["a"]
    assert used_memories("You are allergic to peanuts", offered, min_overlap=1.0) == []
    assert used_memories("Your sister Maria and your peanut allergy", offered) == ["b"]
