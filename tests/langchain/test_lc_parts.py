"""Tools, the chat-model summariser, LangChain Embeddings as the embedder, and the
classic BaseMemory — each through real LangChain classes."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from lc_helpers import FakeToolModel, ModelInputs

from langchain_mars.retrievers import MarsRetriever
from langchain_mars.summariser import ChatModelSummariser
from langchain_mars.tools import memory_tools
from mars_core import (
    ExtraNotInstalledError,
    FakeClock,
    MemoryStore,
    NotFoundError,
    PolicyError,
    ValidationError,
)
from mars_core.embedders import LangChainEmbeddings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# --- tools ----------------------------------------------------------------------------------

def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id,
                                      "type": "tool_call"}])


def test_agent_calls_remember_then_recall(lc_store: MemoryStore,
                                          recorder: ModelInputs) -> None:
    model = FakeToolModel(messages=iter([
        _call("remember", {"content": "Ana's passport expires in March 2027"}, "c1"),
        _call("recall", {"query": "When does Ana's passport expire?"}, "c2"),
        AIMessage("It expires in March 2027."),
    ]))
    agent = create_agent(model, tools=memory_tools(lc_store, namespace=("m", "{user_id}")))
    out = agent.invoke({"messages": [("user", "Remember my passport date, then check it")]},
                       {"callbacks": [recorder]}, context={"user_id": "ana"})
    tool_results = [m.text for m in out["messages"] if isinstance(m, ToolMessage)]
    node = lc_store.list("m/ana", type="semantic")[0]
    assert node.content == "Ana's passport expires in March 2027"
    assert node.provenance.source == "agent"
    assert tool_results[0] == f"Remembered (id={node.id})."
    assert tool_results[1] == f"- [{node.id}] (semantic) {node.content}"
    # the model saw the recall result before answering
    assert recorder.calls[-1][-1].text == tool_results[1]
    assert out["messages"][-1].text == "It expires in March 2027."


async def test_forget_tool_is_scoped_to_its_namespace(lc_store: MemoryStore) -> None:
    theirs = await lc_store.aadd("Bo's PIN hint is his dog's name", namespace="m/bo")
    remember, recall, forget = memory_tools(lc_store, namespace="m/ana")
    mine = await lc_store.alist("m/ana")
    assert mine == []
    assert (await forget.ainvoke({"memory_id": theirs.id})
            == f"no memory with id {theirs.id!r} in namespace 'm/ana'")
    assert (await lc_store.aget(theirs.id, namespace="m/bo")).is_active  # nothing changed
    text = await remember.ainvoke({"content": "Ana takes the 8:10 train",
                                   "memory_type": "episodic"})
    ana_id = text.split("=")[1].rstrip(").")
    assert await forget.ainvoke({"memory_id": ana_id}) == f"Forgot {ana_id}."
    assert not (await lc_store.aget(ana_id, namespace="m/ana")).is_active
    assert await recall.ainvoke({"query": "train"}) == "No memories found."


def test_tool_errors_are_typed_when_asked(lc_store: MemoryStore) -> None:
    (forget,) = memory_tools(lc_store, include=("forget",), raise_errors=True)
    with pytest.raises(NotFoundError):
        forget.invoke({"memory_id": "missing"})
    (remember,) = memory_tools(lc_store, include=("remember",))
    # a typed error of ours goes back to the model as the tool's result
    assert "non-whitespace" in remember.invoke({"content": "   "})
    for bad in ({"k": 0}, {"include": ("remember", "shout")}, {"include": ()}):
        with pytest.raises(ValidationError):
            memory_tools(lc_store, **bad)
    assert lc_store.list() == []


# --- summariser and embedder ----------------------------------------------------------------

@pytest.mark.backend_neutral
def test_chat_model_summariser_sends_the_prompt_and_masks_the_reply(
        recorder: ModelInputs) -> None:
    model = FakeListChatModel(responses=["Call Ana at ana@example.com about the deploy."],
                              callbacks=[recorder])
    summary = ChatModelSummariser(model)(["deploy broke", "deploy broke again"],
                                         target_tokens=12)
    assert "ana@example.com" not in summary and "deploy" in summary
    prompt = recorder.calls[0][0].text
    assert "1. deploy broke" in prompt and "2. deploy broke again" in prompt
    assert "at most 12 tokens" in prompt


@pytest.mark.backend_neutral
def test_chat_model_summariser_errors_are_policy_errors() -> None:
    failing = FakeListChatModel(responses=[])  # no response left: the model raises
    with pytest.raises(PolicyError):
        ChatModelSummariser(failing)(["a", "b"], target_tokens=5)
    with pytest.raises(ValidationError):
        ChatModelSummariser(lambda p: p)


REPLY = "standup: the deploy pipeline is broken again"  # faithful: it passes the gates


def test_store_reflection_uses_the_chat_model(recorder: ModelInputs) -> None:
    model = FakeListChatModel(responses=[REPLY] * 8,
                              callbacks=[recorder])
    with MemoryStore(budget=280, clock=FakeClock(), nlp="rules",
                     summariser=ChatModelSummariser(model)) as store:
        for i in range(24):
            store.add(f"standup: the deploy pipeline is broken again, ticket {i % 3}")
        report = store.maintain(ttl=False, dedup=False)
        assert report["default"]["summarised"] >= 1
        summaries = [n for n in store.list(type="semantic") if n.depth == 1]
        assert summaries and {n.content for n in summaries} == {REPLY}
        assert recorder.calls  # the chat model was asked


def test_langchain_embeddings_serve_as_the_store_embedder() -> None:
    embedder = LangChainEmbeddings(DeterministicFakeEmbedding(size=32))
    with MemoryStore(budget=500, embedder=embedder, clock=FakeClock()) as store:
        store.add("Ana lives in Lisbon", type="semantic")
        store.add("Bo plays the drums", type="semantic")
        docs = MarsRetriever(store=store, k=1).invoke("Ana lives in Lisbon")
        assert docs[0].page_content == "Ana lives in Lisbon"
        assert docs[0].metadata["dense_score"] == pytest.approx(1.0, abs=1e-5)
        assert store.stats()["embedder"].startswith("langchain:DeterministicFakeEmbedding")


# --- classic BaseMemory ----------------------------------------------------------------------

def test_conversation_chain_with_mars_memory(lc_store: MemoryStore,
                                             recorder: ModelInputs) -> None:
    from langchain_classic.chains import ConversationChain

    from langchain_mars.classic import MarsMemory

    chain = ConversationChain(llm=FakeListChatModel(responses=["Hi Ana!", "In Porto."]),
                              memory=MarsMemory(store=lc_store, session_id="s1",
                                                namespace="ana"))
    chain.invoke({"input": "Hello, I'm Ana and I live in Porto."}, {"callbacks": [recorder]})
    out = chain.invoke({"input": "Where do I live?"}, {"callbacks": [recorder]})
    assert out["response"] == "In Porto."
    prompt = recorder.calls[1][0].text
    assert "The user lives in Porto" in prompt            # recalled fact
    assert "[episodic | 2026-01-01 00:00 UTC | assistant] Hi Ana!" in prompt  # the session
    assert [n.provenance.conversation_id for n in lc_store.list("ana", type="episodic")] \
        == ["s1"] * 4


def test_mars_memory_clear_and_bad_input(lc_store: MemoryStore) -> None:
    from langchain_mars.classic import MarsMemory

    memory = MarsMemory(store=lc_store, session_id="s1")
    assert memory.load_memory_variables({"input": "anything"}) == {"history": ""}
    memory.save_context({"input": "I like jazz"}, {"output": "Nice."})
    with pytest.raises(ValidationError):
        memory.save_context({"input": "a", "other": "b"}, {"output": "c"})
    with pytest.raises(ValidationError):
        memory.save_context({"input": "a"}, {"output": 3})  # type: ignore[dict-item]
    assert len(lc_store.list(type="episodic")) == 2
    memory.clear()
    assert lc_store.list(type="episodic") == []
    for bad in ({"budget_tokens": 0}, {"session_id": ""}, {"clear_mode": "shred"}):
        with pytest.raises(ValidationError):
            MarsMemory(store=lc_store, **bad)


@pytest.mark.backend_neutral
def test_classic_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_classic", None)
    monkeypatch.setitem(sys.modules, "langchain_classic.base_memory", None)
    monkeypatch.delitem(sys.modules, "langchain_mars.classic", raising=False)
    with pytest.raises(ExtraNotInstalledError, match=r"mars-memory\[langchain-classic\]"):
        importlib.import_module("langchain_mars.classic")
    monkeypatch.delitem(sys.modules, "langchain_mars.classic", raising=False)


def _chain_with(memory: Any, answers: list[str]) -> Any:
    from langchain_classic.chains import ConversationChain

    return ConversationChain(llm=FakeListChatModel(responses=answers), memory=memory)


def test_mars_memory_clear_erase_leaves_the_chain_nothing(lc_store: MemoryStore,
                                                           recorder: ModelInputs) -> None:
    from langchain_mars.classic import MarsMemory

    memory = MarsMemory(store=lc_store, session_id="s1", namespace="ana", clear_mode="erase")
    chain = _chain_with(memory, ["Noted.", "I do not know.", "Jazz, then."])
    chain.invoke({"input": "I live in Porto"}, {"callbacks": [recorder]})
    memory.clear()
    assert memory.load_memory_variables({"input": "Where do I live?"}) == {"history": ""}
    chain.invoke({"input": "Where do I live?"}, {"callbacks": [recorder]})
    assert "Porto" not in recorder.calls[1][0].text  # what the model received
    chain.invoke({"input": "What music do I like?"}, {"callbacks": [recorder]})
    after = recorder.calls[2][0].text  # the turn after clear() is part of the session
    assert "Where do I live?" in after and "I do not know." in after
    assert "Porto" not in after


def test_mars_memory_clear_forget_archives_the_turns_out_of_view(
        lc_store: MemoryStore) -> None:
    from langchain_mars.classic import MarsMemory
    from mars_core.reading.context import HEADER_ACTIVE

    memory = MarsMemory(store=lc_store, session_id="s1", namespace="ana")
    memory.save_context({"input": "I am learning the cello"}, {"response": "Lovely."})
    memory.clear()
    def active(text: str) -> str:
        return text.split(HEADER_ACTIVE)[1] if HEADER_ACTIVE in text else ""

    text = memory.load_memory_variables({"input": "hello"})["history"]
    assert "Lovely." not in text and "cello" not in active(text)
    assert [n.content for n in lc_store.list("ana", type="episodic", status="archived")] \
        == ["I am learning the cello", "Lovely."]
    memory.save_context({"input": "Book a table for two"}, {"response": "Done."})
    after = active(memory.load_memory_variables({"input": "hello"})["history"])
    assert [line.rsplit("] ", 1)[1] for line in after.strip().splitlines()] \
        == ["Book a table for two", "Done."]


def test_mars_memory_refuses_unknown_arguments(lc_store: MemoryStore) -> None:
    from langchain_mars.classic import MarsMemory

    with pytest.raises(ValidationError, match=r"sesion_id.*session_id"):
        MarsMemory(store=lc_store, sesion_id="s1")
    assert lc_store.list(status=None) == []


def test_mars_memory_return_messages_fills_a_messages_placeholder(
        lc_store: MemoryStore, recorder: ModelInputs) -> None:
    from langchain_classic.chains import ConversationChain
    from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    from langchain_mars.classic import MarsMemory

    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{input}")])
    memory = MarsMemory(store=lc_store, session_id="s1", namespace="ana",
                        return_messages=True)
    chain = ConversationChain(llm=FakeListChatModel(responses=["Hi Ana!", "In Porto."]),
                              prompt=prompt, memory=memory)
    chain.invoke({"input": "Hello, I'm Ana and I live in Porto."}, {"callbacks": [recorder]})
    out = chain.invoke({"input": "Where do I live?"}, {"callbacks": [recorder]})
    assert out["response"] == "In Porto."
    sent = recorder.calls[1]
    assert [type(m) for m in sent] == [SystemMessage, SystemMessage, HumanMessage,
                                       AIMessage, HumanMessage]
    assert "The user lives in Porto" in sent[1].text  # the recalled memories
    assert [m.text for m in sent[2:]] == ["Hello, I'm Ana and I live in Porto.", "Hi Ana!",
                                          "Where do I live?"]
    loaded = memory.load_memory_variables({"input": "x"})["history"]
    assert isinstance(loaded, list) and all(isinstance(m, BaseMessage) for m in loaded)
    text = MarsMemory(store=lc_store, session_id="s1", namespace="ana",
                      return_messages=False).load_memory_variables({"input": "x"})["history"]
    assert isinstance(text, str) and "Hi Ana!" in text
    memory.clear()
    left = memory.load_memory_variables({"input": "Where do I live?"})["history"]
    assert [m.type for m in left] == ["system"]  # forget: long-term memories stay, turns go
