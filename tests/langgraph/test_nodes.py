"""Oblivion's memory nodes in a compiled LangGraph graph, run offline with fake chat models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mars.graph import MarsMemoryState, memory_messages, with_mars_memory
from langchain_mars.models import (
    decomposer_from_chat_model,
    judge_from_chat_model,
    parse_subqueries,
    parse_verdict,
)
from mars_core import MemoryStore
from mars_core.audit import AuditOp
from mars_core.control import Buffer, ControlConfig, Executor
from mars_core.errors import ValidationError

Store = Callable[..., MemoryStore]


class Recorder(BaseCallbackHandler):
    """Records the messages each chat-model call receives."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any],
                            messages: list[list[BaseMessage]], **kw: Any) -> None:
        self.calls.extend(messages)


def _app(store: MemoryStore, answers: list[str], rec: Recorder, **kw: Any) -> Any:
    model = GenericFakeChatModel(messages=iter(AIMessage(a) for a in answers))

    def agent(state: MarsMemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke(memory_messages(state), {"callbacks": [rec]})]}

    return with_mars_memory(agent, store, namespace="u1", **kw).compile(
        checkpointer=InMemorySaver())


def _turn(app: Any, text: str, thread: str = "t1",
          **extra: Any) -> tuple[dict[str, Any], list[str]]:
    cfg = {"configurable": {"thread_id": thread}}
    nodes: list[str] = []
    for update in app.stream({"messages": [("user", text)], **extra}, cfg,
                             stream_mode="updates"):
        nodes += list(update)
    return app.get_state(cfg).values, nodes


def test_retrieval_skipped_when_buffer_suffices_triggered_when_not(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    app = _app(store, ["Noted.", "You live in Porto.", "Yes, in Porto.", "I do not know."], rec)
    _turn(app, "I live in Porto and my sister Marta is a nurse")
    state, nodes = _turn(app, "Where do I live?")
    assert "activator" in nodes  # empty buffer: retrieval triggered
    assert "Porto" in rec.calls[-1][0].content  # the system message the model received
    state, nodes = _turn(app, "Do I live in Porto?")
    assert "activator" not in nodes  # the buffer already suffices
    assert state["mars_rounds"][-1].endswith("buffer suffices")
    state, nodes = _turn(app, "What instrument does Bo play?")
    assert "activator" in nodes  # nothing about Bo in the buffer
    assert nodes[-3:] == ["agent", "recognizer", "memory_manager"]


def test_used_memories_reinforced_unused_decay(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    app = _app(store, ["Noted.", "Noted.", "Marta is a nurse."], rec)
    _turn(app, "My sister Marta is a nurse")
    _turn(app, "Bo plays the cello in an orchestra")
    state, _ = _turn(app, "What job does Marta have?")
    used = set(state["mars_used"])
    offered = {i["id"] for i in state["mars_buffer"]} | used
    assert used
    accessed = {i for e in store.audit.events("u1") if e.op is AuditOp.ACCESS for i in e.node_ids}
    assert accessed == used  # reinforcement strictly tied to credited use
    assert all(store.get(i, namespace="u1").access_count >= 1 for i in used)
    assert all(store.get(i, namespace="u1").access_count == 0 for i in offered - used)


def test_procedure_from_feedback_changes_what_the_model_receives(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    app = _app(store, ["It will be 68 degrees.", "20 degrees Celsius."], rec)
    _turn(app, "What will the weather be like on my trip tomorrow?",
          mars_feedback="Wrong unit. Next time, always give temperatures in Celsius.")
    first = rec.calls[0][0].content
    state, _ = _turn(app, "What will the weather be like on my trip next week?")
    second = rec.calls[1][0].content
    assert "Celsius" not in first
    assert "- always give temperatures in Celsius." in second
    assert state["mars_procedures"] == ["always give temperatures in Celsius."]
    assert state["mars_feedback"] is None  # consumed


def test_max_iterations_bounds_the_loop(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    for i in range(40):
        store.add(f"note {i}: chatter about the weather on day {i}", namespace="u1")
    app = _app(store, ["ok"], rec, max_iterations=2, judge=lambda q, t: False)
    _, nodes = _turn(app, "weather chatter")
    assert 1 <= nodes.count("activator") <= 2
    with pytest.raises(ValidationError):
        with_mars_memory(lambda s: s, store, max_iterations=0)


def test_llm_judge_and_decomposer_inside_the_graph(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    store.add("Marta studied marine biology in Faro", type="semantic", namespace="u1")
    store.add("Ana's sister is called Marta", type="social", namespace="u1")
    judge_model = FakeListChatModel(responses=["no", "yes"])
    splitter = FakeListChatModel(responses=["- Who is Ana's sister?\n- What did Marta study?"])
    app = _app(store, ["Marine biology."], rec, judge=judge_from_chat_model(judge_model),
               decomposer=decomposer_from_chat_model(splitter),
               config=ControlConfig(max_iterations=3))
    state, nodes = _turn(app, "What did Ana's sister study?")
    assert "marine biology" in rec.calls[-1][0].content
    assert state["messages"][-1].content == "Marine biology."
    assert nodes.count("activator") >= 1


def test_namespace_from_run_config_isolates_users(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    model = FakeListChatModel(responses=["Noted.", "I do not know."])

    def agent(state: MarsMemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke(memory_messages(state), {"callbacks": [rec]})]}

    app = with_mars_memory(agent, store, namespace=lambda c: c["configurable"]["user_id"]
                           ).compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "My PIN hint is blue whale")]},
               {"configurable": {"thread_id": "a", "user_id": "alice"}})
    app.invoke({"messages": [("user", "What is my PIN hint?")]},
               {"configurable": {"thread_id": "b", "user_id": "bob"}})
    assert "whale" not in rec.calls[-1][0].content
    assert store.list("bob") and all("whale" not in n.content for n in store.list("bob"))


@pytest.mark.backend_neutral
def test_model_adapters_parse_deterministically() -> None:
    assert parse_verdict("Yes.") is True and parse_verdict("insufficient") is False
    assert parse_verdict('{"sufficient": true}') is True and parse_verdict("maybe") is None
    assert parse_subqueries("1. a b\n2) c\n\n- a b", 5) == ["a b", "c"]
    assert parse_subqueries('["x", "y", "z"]', 2) == ["x", "y"]
    unsure = judge_from_chat_model(FakeListChatModel(responses=["Perhaps."]))
    assert unsure("q", ["m"]) is False  # not understood: retrieve, the safe side
    with pytest.raises(ValidationError):
        judge_from_chat_model("not a model")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        decomposer_from_chat_model(FakeListChatModel(responses=["x"]), max_subqueries=0)


def test_example_runs_and_shows_what_it_claims(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "langgraph_oblivion.py"
    spec = importlib.util.spec_from_file_location("langgraph_oblivion", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()
    assert out["retrieved"][1] is True and out["retrieved"][2] is False
    assert "Celsius" not in out["prompts"][3] and "always give temperatures in Celsius" in \
        out["prompts"][4]
    printed = capsys.readouterr().out
    assert "retrieval: skipped (buffer suffices)" in printed and "model saw:" in printed


def test_turns_are_stored_under_the_langgraph_thread(make_store: Store) -> None:
    store, rec = make_store(), Recorder()
    app = _app(store, ["Noted.", "Noted.", "Sure."], rec)
    _turn(app, "I live in Porto", thread="t1")
    _turn(app, "I play the cello", thread="t2")
    _turn(app, "I like green tea", thread="t1")
    turns = [(n.provenance.conversation_id, n.content)
             for n in store.list("u1", type="episodic") if n.provenance.source == "user"]
    assert turns == [("t1", "I live in Porto"), ("t2", "I play the cello"),
                     ("t1", "I like green tea")]
    # without a thread id (no checkpointer) the builder's conversation_id is used
    model = GenericFakeChatModel(messages=iter([AIMessage("Ok.")]))
    plain = with_mars_memory(lambda s: {"messages": [model.invoke(memory_messages(s))]},
                             store, namespace="u2", conversation_id="main").compile()
    plain.invoke({"messages": [("user", "Hello there")]})
    assert {n.provenance.conversation_id for n in store.list("u2", type="episodic")} == {"main"}


@pytest.mark.parametrize(("namespace", "configurable", "expected"), [
    (("memories", "{user_id}"), {"user_id": "ana"}, "memories/ana"),
    ("memories/{user_id}", {"user_id": "bo/2"}, "memories/bo%2F2"),
    (("memories", "ana"), {}, "memories/ana"),
    ("memories/ana", {}, "memories/ana"),
])
def test_namespace_forms_of_the_library(make_store: Store, namespace: Any,
                                        configurable: dict[str, str], expected: str) -> None:
    store, rec = make_store(), Recorder()
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")]))

    def agent(state: MarsMemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke(memory_messages(state), {"callbacks": [rec]})]}

    app = with_mars_memory(agent, store, namespace=namespace).compile(
        checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "I live in Porto")]},
               {"configurable": {"thread_id": "t9", **configurable}})
    stored = store.list(expected, type="episodic")
    assert [n.content for n in stored] == ["I live in Porto", "Noted."]
    assert {n.provenance.conversation_id for n in stored} == {"t9"}


def test_namespace_template_without_its_value_is_a_typed_error(make_store: Store) -> None:
    app = with_mars_memory(lambda s: s, make_store(), namespace=("memories", "{user_id}"))
    with pytest.raises(ValidationError, match="user_id"):
        app.compile().invoke({"messages": [("user", "hi")]})


def test_the_activator_node_aims_at_the_clusters_the_decayer_node_found_uncertain(
        make_store: Store) -> None:
    """The Decayer node hands its uncertain clusters (``mars_targets``) to the Activator
    node, as ``Executor.read`` does (seed 002 App. F)."""
    store, rec = make_store(), Recorder()
    app = _app(store, ["Noted.", "Nice.", "You live in Porto.", "Jazz on the guitar."], rec)
    _turn(app, "I live in Porto with my sister")
    _turn(app, "I love jazz and play the guitar")
    state, _ = _turn(app, "Where do I live?")
    query, before = "jazz guitar Porto sister", Buffer.from_list(state["mars_buffer"])
    ex = Executor(store, "u1")  # the clusters as the turn's Decayer node will see them
    expected = ex.targets(query, ex.assess(query, before, 0))
    assert expected, "both clusters holding items share words with the query"
    cfg = {"configurable": {"thread_id": "t1"}}
    decided = [u["decayer"] for u in app.stream({"messages": [("user", query)]}, cfg,
                                                stream_mode="updates") if "decayer" in u]
    assert decided[0]["mars_retrieve"] is True
    assert decided[0]["mars_targets"] == [t.to_dict() for t in expected]
