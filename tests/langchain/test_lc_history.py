"""MarsChatMessageHistory with RunnableWithMessageHistory and on its own."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from lc_helpers import ModelInputs

from langchain_mars.chat_history import MarsChatMessageHistory
from mars_core import MemoryStore, ValidationError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _chain(store: MemoryStore, answers: list[str], **kw: Any) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{input}")])
    return RunnableWithMessageHistory(
        prompt | FakeListChatModel(responses=answers),
        lambda session_id: MarsChatMessageHistory(store, session_id, namespace="ana", **kw),
        input_messages_key="input", history_messages_key="history")


def test_runnable_with_message_history_round_trip(lc_store: MemoryStore,
                                                  recorder: ModelInputs) -> None:
    chain = _chain(lc_store, ["Hello Ana.", "You live in Porto."])
    config: Any = {"configurable": {"session_id": "s1"}, "callbacks": [recorder]}
    chain.invoke({"input": "Hi, I'm Ana and I live in Porto."}, config)
    reply = chain.invoke({"input": "Where do I live?"}, config)
    assert reply.text == "You live in Porto."
    second = [(m.type, m.text) for m in recorder.calls[1]]
    assert second == [("system", "You are terse."),
                      ("human", "Hi, I'm Ana and I live in Porto."), ("ai", "Hello Ana."),
                      ("human", "Where do I live?")]
    # the turns were observed: facts were extracted from them into the same namespace
    facts = [n.content for n in lc_store.list("ana", type="semantic")]
    assert "The user lives in Porto" in facts


def test_sessions_are_separate_and_clear_is_scoped(lc_store: MemoryStore) -> None:
    one = MarsChatMessageHistory(lc_store, "s1", namespace="ana")
    two = MarsChatMessageHistory(lc_store, "s2", namespace="ana")
    one.add_messages([HumanMessage("I like green tea"), AIMessage("Noted.")])
    two.add_messages([HumanMessage("Book a table for two")])
    assert [m.text for m in two.messages] == ["Book a table for two"]
    one.clear()
    assert one.messages == []
    assert [m.text for m in two.messages] == ["Book a table for two"]
    archived = lc_store.list("ana", type="episodic", status="archived")
    assert [n.content for n in archived] == ["I like green tea", "Noted."]
    # forgetting keeps what the session taught; erasing removes it
    assert any("green tea" in n.content for n in lc_store.list("ana", type="semantic"))


def test_erase_mode_removes_the_session_and_what_derives_from_it(lc_store: MemoryStore) -> None:
    history = MarsChatMessageHistory(lc_store, "s1", namespace="ana", clear_mode="erase")
    history.add_messages([HumanMessage("I like green tea")])
    MarsChatMessageHistory(lc_store, "s2", namespace="ana").add_user_message("Hello")
    history.clear()
    left = [n.content for n in lc_store.list("ana", status=None)]
    assert left == ["Hello"]


def test_messages_are_the_newest_turns_within_budget(lc_store: MemoryStore) -> None:
    history = MarsChatMessageHistory(lc_store, "s", budget_tokens=12)
    turns = ["one two three four", "five six seven eight", "nine ten eleven twelve",
             "thirteen fourteen fifteen sixteen"]
    history.add_messages([HumanMessage(t) if i % 2 == 0 else AIMessage(t)
                          for i, t in enumerate(turns)])
    weights = {n.content: n.weight for n in lc_store.list(type="episodic")}
    kept = [m.text for m in history.messages]
    assert kept == turns[-len(kept):] and 0 < len(kept) < len(turns)
    assert sum(weights[t] for t in kept) <= 12
    assert sum(weights[t] for t in turns[-len(kept) - 1:]) > 12
    capped = MarsChatMessageHistory(lc_store, "s", max_messages=1).messages
    assert [m.text for m in capped] == turns[-1:]
    assert [n.provenance.turn for n in lc_store.list(type="episodic")] == [0, 1, 2, 3]


def test_roles_round_trip_and_empty_messages_are_skipped(lc_store: MemoryStore) -> None:
    history = MarsChatMessageHistory(lc_store, "s")
    history.add_messages([SystemMessage("Be brief"), HumanMessage("hi"),
                          AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "1"}]),
                          ChatMessage("looks fine", role="critic")])
    assert [(type(m).__name__, m.text) for m in history.messages] == [
        ("SystemMessage", "Be brief"), ("HumanMessage", "hi"), ("ChatMessage", "looks fine")]
    assert all(m.id for m in history.messages)


async def test_async_twins(lc_store: MemoryStore) -> None:
    history = MarsChatMessageHistory(lc_store, "s")
    await history.aadd_messages([HumanMessage("I live in Porto"), AIMessage("Ok")])
    assert [m.text for m in await history.aget_messages()] == ["I live in Porto", "Ok"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_bad_input_is_a_typed_error_and_stores_nothing(lc_store: MemoryStore) -> None:
    for kwargs in ({"session_id": ""}, {"session_id": "s", "budget_tokens": 0},
                   {"session_id": "s", "clear_mode": "shred"}):
        with pytest.raises(ValidationError):
            MarsChatMessageHistory(lc_store, **kwargs)
    history = MarsChatMessageHistory(lc_store, "s")
    with pytest.raises(ValidationError):
        history.add_messages([HumanMessage("ok"), "not a message"])  # type: ignore[list-item]
    assert lc_store.list() == []


def test_clear_empties_what_the_chain_sees_and_new_turns_follow(
        lc_store: MemoryStore, recorder: ModelInputs) -> None:
    chain = _chain(lc_store, ["Hello Ana.", "Hi.", "Noted."])
    config: Any = {"configurable": {"session_id": "s1"}, "callbacks": [recorder]}
    chain.invoke({"input": "I live in Porto."}, config)
    MarsChatMessageHistory(lc_store, "s1", namespace="ana").clear()
    chain.invoke({"input": "Hello again."}, config)
    chain.invoke({"input": "I like jazz."}, config)
    assert [m.text for m in recorder.calls[1]] == ["You are terse.", "Hello again."]
    assert [m.text for m in recorder.calls[2]] == ["You are terse.", "Hello again.", "Hi.",
                                                   "I like jazz."]
