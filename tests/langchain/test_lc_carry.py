"""What the LangChain adapters carry into the store (speakers, times, sessions), what they
give back (k documents, the second tier), and that a cleared session never returns.

The rule under test (docs/integrations/index.md, "What each adapter stores and injects"):
a cleared session's turns are never shown to a model again — not as the active
conversation, not from the second tier, not as the raw support of a fact; the facts
learnt from them stay (``clear_mode="forget"``) or go (``clear_mode="erase"``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mars.chat_history import MarsChatMessageHistory
from langchain_mars.classic import MarsMemory
from langchain_mars.middleware import MarsMemoryMiddleware
from langchain_mars.retrievers import MarsRetriever
from mars_core import FakeClock, HashingEmbedder, MemoryStore, ValidationError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CHATTER = [f"Turn {i} about the weather on day {i}, nothing else" for i in range(12)]


def _store(budget: int = 400) -> MemoryStore:
    return MemoryStore(budget=budget, clock=FakeClock(), embedder=HashingEmbedder())


def _shown_anywhere(store: MemoryStore, query: str, text: str) -> list[str]:
    """Where ``text`` still reaches a model: the exits that show it."""
    where = []
    if text in store.render_context(query, budget_tokens=2000):
        where.append("render_context")
    if any(text in h.text for h in store.retrieve(query, budget_tokens=2000, k=50)):
        where.append("retrieve")
    if any(text in h.text for h in store.retrieve(query, budget_tokens=2000, k=50,
                                                  include_archive=True)):
        where.append("retrieve(include_archive=True)")
    if any(text in d.page_content for d in MarsRetriever(store=store, k=50).invoke(query)):
        where.append("MarsRetriever")
    return where


def test_classic_clear_never_brings_the_turns_back() -> None:
    """The regression of issue 31: clear() archived the turns and the second tier showed
    "I like jazz" as raw supporting evidence."""
    with _store() as store:
        memory = MarsMemory(store=store, session_id="s1")
        memory.save_context({"input": "I like jazz"}, {"response": "Noted."})
        memory.clear()
        text = memory.load_memory_variables({"input": "what music do I like?"})["history"]
        assert "I like jazz" not in text
        assert "The user likes jazz" in text  # the fact learnt stays (clear_mode="forget")
        assert _shown_anywhere(store, "what music do I like? jazz", "I like jazz") == []
        episodes = store.list(type="episodic", status=None)
        assert {(n.status.value, n.archive_reason) for n in episodes} == {("archived", "cleared")}


def test_classic_erase_mode_removes_the_facts_too() -> None:
    with _store() as store:
        memory = MarsMemory(store=store, session_id="s1", clear_mode="erase")
        memory.save_context({"input": "I like jazz"}, {"response": "Noted."})
        memory.clear()
        assert "jazz" not in memory.load_memory_variables({"input": "jazz?"})["history"]
        assert store.list(status=None) == []


def test_history_clear_also_hides_turns_a_policy_had_archived() -> None:
    """A turn the budget evicted is in the second tier; clearing its session takes it out."""
    with _store(budget=120) as store:
        history = MarsChatMessageHistory(store, "s1")
        history.add_messages([HumanMessage("My locker code is on the blue card")])
        history.add_messages([HumanMessage(t) for t in CHATTER])
        evicted = [n for n in store.list(type="episodic", status="archived")
                   if "blue card" in n.content]
        assert evicted and evicted[0].archive_reason == "evicted"  # the second tier
        assert "retrieve" in _shown_anywhere(store, "blue card locker code", "blue card")
        history.clear()
        assert _shown_anywhere(store, "blue card locker code", "blue card") == []
        assert history.messages == []
        # explain and erase still reach the cleared turn
        assert store.explain(evicted[0].id).node.content == evicted[0].content


def test_cleared_turns_come_back_for_none_of_the_exits_but_other_sessions_stay() -> None:
    with _store() as store:
        one = MarsChatMessageHistory(store, "s1")
        two = MarsChatMessageHistory(store, "s2")
        one.add_messages([HumanMessage("I adopted a beagle called Rex")])
        two.add_messages([HumanMessage("I adopted a cat called Tom")])
        one.clear()
        assert _shown_anywhere(store, "adopted beagle Rex", "beagle called Rex") == []
        assert "retrieve" in _shown_anywhere(store, "adopted cat Tom", "cat called Tom")
        # new turns of the cleared session are its conversation again
        one.add_messages([HumanMessage("Rex learnt to sit")])
        assert [m.text for m in one.messages] == ["Rex learnt to sit"]


def test_history_carries_names_and_times_into_observe() -> None:
    with _store() as store:
        history = MarsChatMessageHistory(store, "s1", user_name="Caroline",
                                         assistant_name="Melanie")
        history.add_messages([
            HumanMessage("I went to the LGBTQ support group yesterday",
                         additional_kwargs={"timestamp": "2023-05-08T13:56:00+00:00"}),
            AIMessage("I love painting sunsets", name="Mel"),
        ])
        turns = store.list(type="episodic")
        assert turns[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        speakers = [list(n.payload.participants) for n in turns]  # type: ignore[union-attr]
        assert speakers == [["Caroline"], ["Mel"]]
        # "I" resolves to the speaker, not to "the user"
        facts = [n.content for n in store.list(type="semantic")]
        assert any("Mel" in f and "painting" in f for f in facts), facts
        with pytest.raises(ValidationError, match="ISO 8601"):
            history.add_messages([HumanMessage("x", additional_kwargs={"timestamp": "soon"})])
        with pytest.raises(ValidationError):
            MarsChatMessageHistory(store, "s1", user_name="")


def test_classic_and_middleware_carry_configured_names() -> None:
    with _store() as store:
        memory = MarsMemory(store=store, session_id="s1", user_name="Caroline",
                            assistant_name="Melanie")
        memory.save_context({"input": "I like jazz"}, {"response": "I like folk"})
        agent = create_agent(FakeListChatModel(responses=["I play the violin"]),
                             middleware=[MarsMemoryMiddleware(store, namespace="mw",
                                                              user_name="Jon")])
        agent.invoke({"messages": [HumanMessage("I play chess", name="Gina")]},
                     {"configurable": {"thread_id": "t1"}})
        said = {n.content: list(n.payload.participants)  # type: ignore[union-attr]
                for ns in (None, "mw") for n in store.list(ns, type="episodic")}
        assert said == {"I like jazz": ["Caroline"], "I like folk": ["Melanie"],
                        "I play chess": ["Gina"], "I play the violin": []}
        with pytest.raises(ValidationError):
            MarsMemory(store=store, user_name="\x00")


def test_classic_dates_turns_by_the_timestamp_input_and_refuses_bad_ones() -> None:
    with _store() as store:
        memory = MarsMemory(store=store, session_id="s1", timestamp_key="at")
        # the timestamp input is not mistaken for the text: one other input is the text
        memory.save_context({"input": "I moved to Porto", "at": "2023-05-08T13:56:00+00:00"},
                            {"response": "Noted."})
        stamps = {n.content: n.created_at for n in store.list(type="episodic")}
        when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert stamps == {"I moved to Porto": when, "Noted.": when}
        before = len(store.list())
        with pytest.raises(ValidationError, match="ISO 8601"):
            memory.save_context({"input": "x", "at": "soon"}, {"response": "y"})
        assert len(store.list()) == before  # nothing stored
        with pytest.raises(ValidationError):
            MarsMemory(store=store, timestamp_key="")


def test_retriever_returns_k_documents_and_searches_the_second_tier() -> None:
    with _store(budget=120) as store:
        history = MarsChatMessageHistory(store, "s1")
        history.add_messages([HumanMessage("My locker code is on the blue card")])
        history.add_messages([HumanMessage(t) for t in CHATTER])
        retriever = MarsRetriever(store=store, k=4)
        docs = retriever.invoke("locker code blue card, which day?")
        assert len(docs) == 4  # k, not what the relative cut-off would leave
        assert docs[0].page_content == "My locker code is on the blue card"
        assert docs[0].metadata["archived"] is True
        hits = store.retrieve("locker code blue card, which day?", k=4)
        assert len(hits) < 4  # retrieve's own cut-off: the documented difference
        assert [d.id for d in docs][:len(hits)] == [h.id for h in hits]
        cut = retriever.invoke("locker code blue card, which day?", score_cutoff=0.9)
        assert len(cut) < 4  # the cut-off, when asked for
        active = MarsRetriever(store=store, k=4, include_archive=False)
        assert all(not d.metadata["archived"] for d in active.invoke("blue card"))
        with pytest.raises(ValidationError):
            MarsRetriever(store=store, include_archive="yes")  # type: ignore[arg-type]


def test_langgraph_delete_never_comes_back() -> None:
    from langchain_mars.store import MarsStore

    with _store() as memory:
        graph_store = MarsStore(memory)
        graph_store.put(("users", "ana"), "music", {"text": "Ana likes jazz"})
        graph_store.delete(("users", "ana"), "music")
        assert graph_store.search(("users", "ana"), query="jazz") == []
        everywhere: Any = memory.list("users/ana", status=None)
        assert everywhere == []
