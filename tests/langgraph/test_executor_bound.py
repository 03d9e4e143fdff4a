"""The Oblivion nodes keep at most ``max_executors`` Executors, and a thread whose
Executor was dropped resumes exactly as if it had been kept (issue 21, item 3).

Two graphs run the same turns over three interleaved LangGraph threads on two stores
built alike: one keeps every Executor (the default bound), the other keeps one, so every
change of thread drops an Executor and the next turn of the dropped thread builds a new
one. The model is :class:`~langchain_mars.quoting.QuotingChatModel`, whose answers quote
the memory context it receives — what the memory did reaches the answer, the
Recognizer's credit, the reinforcement and the store. Every turn and the final stores
must be the same.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mars.graph import (
    DEFAULT_MAX_EXECUTORS,
    MarsMemoryState,
    memory_messages,
    with_mars_memory,
)
from langchain_mars.quoting import QuotingChatModel
from mars_core import MemoryStore
from mars_core.errors import ValidationError

Store = Callable[..., MemoryStore]

# (thread, user message, feedback): facts, questions, and a feedback that teaches a procedure
SCRIPT: list[tuple[str, str, str | None]] = [
    ("t1", "I live in Porto and my sister Marta is a nurse", None),
    ("t2", "Bo plays the cello in an orchestra", None),
    ("t3", "I am allergic to peanuts", None),
    ("t1", "Where do I live?", None),
    ("t2", "What instrument does Bo play?", None),
    ("t3", "What will the weather be like on my trip tomorrow?",
     "Wrong unit. Next time, always give temperatures in Celsius."),
    ("t1", "What job does Marta have?", None),
    ("t3", "What will the weather be like on my trip next week?", None),
    ("t2", "Does Bo play in an orchestra?", None),
    ("t1", "What am I allergic to?", None),
]


def _graph(store: MemoryStore, **kw: Any) -> Any:
    model = QuotingChatModel()

    def agent(state: MarsMemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke(memory_messages(state))]}

    return with_mars_memory(agent, store, namespace=("memories", "ana"), **kw)


def _executors(graph: Any) -> Any:
    """The graph's Executor cache (shared by its memory nodes)."""
    return graph.nodes["decayer"].runnable.func.executors


def _turn(app: Any, store: MemoryStore, thread: str, text: str,
          feedback: str | None) -> dict[str, Any]:
    """One turn; what it produced, with memory ids replaced by their texts (ids differ
    between two stores)."""
    cfg = {"configurable": {"thread_id": thread}}
    update: dict[str, Any] = {"messages": [("user", text)]}
    if feedback is not None:
        update["mars_feedback"] = feedback
    out = app.invoke(update, cfg)

    def text_of(node_id: str) -> str:
        return store.get(node_id, namespace="memories/ana").content

    return {"answer": out["messages"][-1].text, "context": out["mars_context"],
            "rounds": out["mars_rounds"], "procedures": out.get("mars_procedures"),
            "used": sorted(text_of(i) for i in out["mars_used"]),
            "buffer": [(i["text"], i["layer"], round(i["score"], 9))
                       for i in out["mars_buffer"]]}


def _held(store: MemoryStore) -> list[tuple[Any, ...]]:
    return [(n.type.value, n.content, n.status.value, n.access_count, n.last_access_step,
             n.provenance.conversation_id, n.step, round(n.sensitivity, 9))
            for n in store.list("memories/ana", status=None)]


def test_an_evicted_thread_resumes_as_if_never_evicted(make_store: Store) -> None:
    kept_store, evicted_store = make_store(), make_store()
    kept_graph, evicted_graph = _graph(kept_store), _graph(evicted_store, max_executors=1)
    kept = kept_graph.compile(checkpointer=InMemorySaver())
    evicted = evicted_graph.compile(checkpointer=InMemorySaver())
    turns = []
    for number, (thread, text, feedback) in enumerate(SCRIPT):
        if number == 7:  # the user forgets something between turns, on both stores
            for store in (kept_store, evicted_store):
                [sister] = [n for n in store.list("memories/ana") if n.type.value == "social"]
                store.forget(sister.id, namespace="memories/ana", reason="user asked")
        a = _turn(kept, kept_store, thread, text, feedback)
        b = _turn(evicted, evicted_store, thread, text, feedback)
        assert a == b, (number, thread, text)
        turns.append(a)
    assert _held(kept_store) == _held(evicted_store)
    assert [e.op for e in kept_store.audit.events("memories/ana")] == \
        [e.op for e in evicted_store.audit.events("memories/ana")]
    # the comparison means something: answers quoted recalled memories, credit followed,
    # and the feedback of turn 5 became a procedure the model received in turn 7
    assert sum(t["answer"].startswith("From memory:") for t in turns) >= 3
    assert any(t["used"] for t in turns)
    assert turns[7]["procedures"] == ["always give temperatures in Celsius."]
    assert "- always give temperatures in Celsius." in turns[7]["context"]
    # ... and the bound was really exercised: one Executor kept, one built per resumption
    kept_cache, evicted_cache = _executors(kept_graph), _executors(evicted_graph)
    assert (len(kept_cache), kept_cache.built) == (3, 3)
    changes = sum(1 for (t0, _, _), (t1, _, _) in itertools.pairwise(SCRIPT) if t0 != t1)
    assert len(evicted_cache) == 1 and evicted_cache.built == 1 + changes


def test_the_bound_holds_and_a_running_executor_is_not_dropped(make_store: Store) -> None:
    store = make_store()
    entered, release = threading.Event(), threading.Event()

    def decomposer(query: str) -> list[str]:
        if query.startswith("Thread A"):  # hold thread A inside its Activator node
            entered.set()
            assert release.wait(timeout=60), "never released"
        return []

    graph = _graph(store, max_executors=1, decomposer=decomposer)
    app, cache = graph.compile(checkpointer=InMemorySaver()), _executors(graph)
    a_cfg = {"configurable": {"thread_id": "a"}}
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(app.invoke(
        {"messages": [("user", "Thread A: I keep bees in Porto")]}, a_cfg)))
    runner.start()
    try:
        assert entered.wait(timeout=60)
        for i in range(3):  # other threads run whole turns meanwhile
            app.invoke({"messages": [("user", f"Thread B{i}: I play chess")]},
                       {"configurable": {"thread_id": f"b{i}"}})
            assert len(cache) == 1  # A's running Executor is what is left
        [(key, held)] = list(cache._made.items())
        assert key == ("memories/ana", "a")
    finally:
        release.set()
        runner.join(timeout=60)
    assert done and not runner.is_alive()
    built = cache.built
    app.invoke({"messages": [("user", "Thread A: where are my bees?")]}, a_cfg)
    assert cache.built == built and cache._made[("memories/ana", "a")] is held  # never dropped
    assert len(cache) == 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "8", None])
def test_max_executors_must_be_a_positive_integer(make_store: Store, bad: Any) -> None:
    with pytest.raises(ValidationError, match="max_executors"):
        _graph(make_store(), max_executors=bad)
    assert DEFAULT_MAX_EXECUTORS >= 1
