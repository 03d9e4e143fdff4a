"""LangGraph nodes for Oblivion's read and write paths, over :mod:`mars_core.control`.

The nodes are thin: each calls one component of a per-namespace
:class:`~mars_core.control.Executor` and returns a state update.

* :class:`DecayerNode` — whether the buffer suffices (or the round limit is reached); when
  it does, renders the memory context for the agent (``mars_context``);
* :class:`ActivatorNode` — one sub-query DAG retrieval into the buffer;
* :class:`RecognizerNode` — which buffer items the agent's answer used;
* :class:`MemoryManagerNode` — persist the turn, reinforce used memories, update the
  turn's L1 cluster (learning a procedure from ``mars_feedback``), decay the buffer.

:func:`with_mars_memory` wires them around the user's agent node::

    START → decayer ─(retrieve?)→ activator → decayer → … → agent → recognizer
          → memory_manager → END

The buffer lives in the graph state (``mars_buffer``), so with a checkpointer it carries
from one turn of a thread to the next, as Oblivion's working memory does. The agent node
reads ``mars_context`` — :func:`memory_messages` prepends it as a system message.

Each turn is stored under the LangGraph thread as its conversation
(``config["configurable"]["thread_id"]``), so two threads are two conversations of the
namespace (L3 episodes never span them); a run without a thread id uses the builder's
``conversation_id``. The graph keeps one :class:`~mars_core.control.Executor` per
(namespace, thread) for at most ``max_executors`` pairs (least recently used idle ones are
dropped): an Executor holds no state of its own, so a thread whose Executor was dropped
resumes exactly as if it had been kept. The namespace is any form the rest of the library accepts: a
namespace string path (``"memories/ana"``), a tuple of parts, a template such as
``("memories", "{user_id}")`` or ``"memories/{user_id}"`` filled per run from the
runtime context and ``config["configurable"]`` (see
:class:`~langchain_mars._namespace.NamespaceTemplate`), or a function of the run config.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from mars_core import MemoryStore, FakeClock
    >>> model = FakeListChatModel(responses=["Noted.", "You live in Porto."])
    >>> def agent(state):
    ...     return {"messages": [model.invoke(memory_messages(state))]}
    >>> store = MemoryStore(clock=FakeClock())
    >>> app = with_mars_memory(agent, store, namespace="u1").compile(checkpointer=InMemorySaver())
    >>> cfg = {"configurable": {"thread_id": "t1"}}
    >>> _ = app.invoke({"messages": [("user", "I live in Porto")]}, cfg)
    >>> out = app.invoke({"messages": [("user", "Where do I live?")]}, cfg)
    >>> out["messages"][-1].content, "Porto" in out["mars_context"]
    ('You live in Porto.', True)
    >>> store.close()
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

from mars_core.control import (
    Buffer,
    ClusterTarget,
    ControlConfig,
    Decomposer,
    Executor,
    Judge,
    Rewriter,
    Turn,
)
from mars_core.engine.args import label
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.namespaces import NamespaceArg, canonical_namespace
from mars_core.store import MemoryStore

try:
    from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langgraph", exc.name or "langgraph") from exc

from langchain_mars._namespace import (
    NamespaceTemplate,
    as_template,
    resolve_namespace,
    run_runtime,
)

__all__ = [
    "DEFAULT_MAX_EXECUTORS",
    "ActivatorNode",
    "DecayerNode",
    "MarsMemoryState",
    "MemoryManagerNode",
    "NamespaceFn",
    "RecognizerNode",
    "memory_messages",
    "with_mars_memory",
]

NamespaceFn = Callable[[RunnableConfig], NamespaceArg]
"""Picks the MaRS namespace of a run from its config (e.g. ``configurable.user_id``): a
namespace string or a tuple of parts (:mod:`mars_core.namespaces`); an opaque id such as
a user id is one part, ``(config["configurable"]["user_id"],)``."""


DEFAULT_MAX_EXECUTORS = 1024
"""How many (namespace, thread) pairs a graph keeps an Executor for, by default (see
``with_mars_memory(max_executors=...)``): each is a few small objects, rebuilt on demand."""

_NEW_TURN = "\x00new turn"


def _turn_log(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer of ``mars_rounds``: appends within a turn; a new turn starts afresh."""
    if right and right[0] == _NEW_TURN:
        return list(right[1:])
    return [*(left or []), *(right or [])]


class MarsMemoryState(TypedDict, total=False):
    """Graph state of the memory nodes (``mars_*`` keys are theirs; ``messages`` is shared).

    Attributes:
        messages: the conversation (LangGraph ``add_messages`` reducer).
        mars_buffer: the buffer ``B_t`` (JSON items; carried across turns by a checkpointer).
        mars_round: Decayer→Activator rounds done this turn.
        mars_retrieve: the Decayer's last verdict.
        mars_targets: the uncertain clusters the next Activator run aims at (JSON).
        mars_rounds: this turn's Decayer verdicts (rationales).
        mars_context: memory context rendered for the agent.
        mars_procedures: the routed cluster's learned procedures.
        mars_used: ids of buffer items the answer used.
        mars_feedback: feedback on the answer (a procedure may be learned from it).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    mars_buffer: list[dict[str, Any]]
    mars_round: int
    mars_retrieve: bool
    mars_targets: list[dict[str, Any]]
    mars_rounds: Annotated[list[str], _turn_log]
    mars_context: str
    mars_procedures: list[str]
    mars_used: list[str]
    mars_feedback: str | None


def memory_messages(state: MarsMemoryState) -> list[BaseMessage]:
    """The state's messages with the memory context first, as a system message."""
    msgs: list[BaseMessage] = list(state.get("messages", []))
    ctx = state.get("mars_context", "")
    return [SystemMessage(ctx), *msgs] if ctx else msgs


def _text(msg: BaseMessage) -> str:
    content = msg.content
    if isinstance(content, str):
        return content
    return " ".join(c if isinstance(c, str) else str(c.get("text", "")) for c in content)


def _last(state: MarsMemoryState, kind: str) -> str:
    for msg in reversed(state.get("messages", [])):
        if msg.type == kind:
            return _text(msg)
    raise ValidationError(f"the graph state holds no {kind!r} message")


def _conversation(config: RunnableConfig, default: str) -> str:
    """The run's LangGraph thread id (the conversation of its turns), else ``default``."""
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or thread == "":
        return default
    return label(str(thread), "thread_id")


class _Executors:
    """The Executors of the (namespace, conversation) pairs in use: at most ``limit`` kept.

    An Executor holds nothing a turn needs from an earlier one: the buffer is in the
    graph state (with the checkpointer), the turns, facts and L1 clusters are in the
    store, and what it caches is keyed by the namespace's version
    (:func:`~mars_core.control.access.namespace_version`). So dropping one costs only
    its rebuilding, and a thread whose Executor was dropped resumes exactly as if it had
    been kept. When a new pair would exceed ``limit``, the least recently used *idle*
    Executors are dropped; one a node is running is kept until the node returns (the
    count may exceed ``limit`` while more pairs than that run at once).
    """

    def __init__(self, store: MemoryStore,
                 namespace: NamespaceArg | NamespaceTemplate | NamespaceFn,
                 factory: Callable[[str, str], Executor], conversation_id: str,
                 limit: int) -> None:
        self.store, self.factory, self.limit = store, factory, limit
        self.conversation_id = label(conversation_id, "conversation_id")
        self.namespace: NamespaceFn | NamespaceTemplate | str
        if callable(namespace):
            self.namespace = namespace
        else:
            fixed = as_template(namespace)
            self.namespace = "default" if fixed is None else fixed
        self._made: OrderedDict[tuple[str, str], Executor] = OrderedDict()  # oldest use first
        self._busy: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self.built = 0
        """How many Executors were built (a dropped pair that comes back is built again)."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._made)

    def key(self, config: RunnableConfig | None) -> tuple[str, str]:
        """The (namespace, conversation) of a run."""
        cfg = config or RunnableConfig()
        if isinstance(self.namespace, NamespaceTemplate):
            ns = resolve_namespace(self.namespace, config=cfg, runtime=run_runtime()) \
                or "default"
        elif callable(self.namespace):
            ns = canonical_namespace(self.namespace(cfg))
        else:
            ns = self.namespace
        return ns, _conversation(cfg, self.conversation_id)

    @contextmanager
    def use(self, config: RunnableConfig | None) -> Iterator[Executor]:
        """The run's Executor (built on first use), kept while the block runs."""
        key = self.key(config)
        with self._lock:
            executor = self._made.get(key)
            if executor is None:
                executor = self._made[key] = self.factory(*key)
                self.built += 1
            self._made.move_to_end(key)
            self._busy[key] += 1
            self._trim()
        try:
            yield executor
        finally:
            with self._lock:
                self._busy[key] -= 1
                if self._busy[key] <= 0:
                    del self._busy[key]
                self._trim()

    def _trim(self) -> None:
        """Drop the least recently used idle Executors beyond ``limit`` (lock held)."""
        for key in [k for k in self._made if k not in self._busy]:
            if len(self._made) <= self.limit:
                return
            del self._made[key]


class DecayerNode:
    """Decide whether to retrieve; when not, render the context for the agent."""

    def __init__(self, executors: _Executors) -> None:
        self.executors = executors

    def __call__(self, state: MarsMemoryState, config: RunnableConfig) -> dict[str, Any]:
        with self.executors.use(config) as ex:
            return self._run(ex, state)

    def _run(self, ex: Executor, state: MarsMemoryState) -> dict[str, Any]:
        query, buffer = _last(state, "human"), Buffer.from_list(state.get("mars_buffer", []))
        rnd = state.get("mars_round", 0)
        fresh = [_NEW_TURN] if rnd == 0 else []
        if rnd < ex.config.max_iterations:
            verdict = ex.assess(query, buffer, rnd)
            if verdict.retrieve:
                return {"mars_retrieve": True, "mars_rounds": [*fresh, verdict.reason],
                        "mars_targets": [t.to_dict() for t in ex.targets(query, verdict)]}
            note = [*fresh, verdict.reason]
        else:
            note = [f"stopped after {len(state.get('mars_rounds', []))} round(s): round limit "
                    "reached or no new memory found"]
        history = [Turn(m.type, _text(m)) for m in state.get("messages", [])[:-1]]
        prompt = ex.render(query, buffer, history[-ex.config.buffer.window_turns:])
        return {"mars_retrieve": False, "mars_rounds": note, "mars_context": prompt.system,
                "mars_procedures": list(prompt.procedures)}


class ActivatorNode:
    """One Activator run: the sub-query DAG into the buffer."""

    def __init__(self, executors: _Executors) -> None:
        self.executors = executors

    def __call__(self, state: MarsMemoryState, config: RunnableConfig) -> dict[str, Any]:
        with self.executors.use(config) as ex:
            return self._run(ex, state)

    def _run(self, ex: Executor, state: MarsMemoryState) -> dict[str, Any]:
        targets = [ClusterTarget.from_dict(t) for t in state.get("mars_targets", [])]
        act = ex.activator.activate(_last(state, "human"),
                                    Buffer.from_list(state.get("mars_buffer", [])),
                                    ex.config.buffer.max_items, ex.config.buffer.max_tokens,
                                    targets)
        rnd = state.get("mars_round", 0) + 1
        return {"mars_buffer": act.buffer.to_list(),
                "mars_round": rnd if act.added else ex.config.max_iterations}


class RecognizerNode:
    """Credit assignment of the agent's answer to the buffer items."""

    def __init__(self, executors: _Executors) -> None:
        self.executors = executors

    def __call__(self, state: MarsMemoryState, config: RunnableConfig) -> dict[str, Any]:
        with self.executors.use(config) as ex:
            return self._run(ex, state)

    def _run(self, ex: Executor, state: MarsMemoryState) -> dict[str, Any]:
        used = ex.credit(_last(state, "human"), _last(state, "ai"),
                         Buffer.from_list(state.get("mars_buffer", [])))
        return {"mars_used": list(used)}


class MemoryManagerNode:
    """Persist the turn, reinforce used memories, update the cluster, decay the buffer."""

    def __init__(self, executors: _Executors) -> None:
        self.executors = executors

    def __call__(self, state: MarsMemoryState, config: RunnableConfig) -> dict[str, Any]:
        with self.executors.use(config) as ex:
            return self._run(ex, state)

    def _run(self, ex: Executor, state: MarsMemoryState) -> dict[str, Any]:
        _, buffer = ex.commit(_last(state, "human"), _last(state, "ai"),
                              Buffer.from_list(state.get("mars_buffer", [])),
                              state.get("mars_used", []), state.get("mars_feedback"))
        return {"mars_buffer": buffer.to_list(), "mars_round": 0, "mars_feedback": None}


def _after_decayer(state: MarsMemoryState) -> str:
    return "activator" if state.get("mars_retrieve") else "agent"


def with_mars_memory(
    agent: Callable[..., Any],
    store: MemoryStore,
    *,
    namespace: NamespaceArg | NamespaceTemplate | NamespaceFn = "default",
    config: ControlConfig | None = None,
    max_iterations: int | None = None,
    judge: Judge | None = None,
    decomposer: Decomposer | None = None,
    rewrite: Rewriter | None = None,
    conversation_id: str = "main",
    state_schema: type[Any] = MarsMemoryState,
    max_executors: int = DEFAULT_MAX_EXECUTORS,
) -> StateGraph[Any]:
    """Wrap an agent node with Oblivion's memory nodes; returns the uncompiled graph.

    Args:
        agent: the user's node (``state -> update``); it should read ``mars_context``
            (see :func:`memory_messages`) and append its answer to ``messages``.
        store: the memory store.
        namespace: a namespace (a string path such as ``"memories/ana"`` or a tuple of
            parts), a template filled per run from the runtime context and
            ``config["configurable"]`` (``("memories", "{user_id}")``,
            ``"memories/{user_id}"`` or a :class:`~langchain_mars._namespace.NamespaceTemplate`),
            or a function of the run config choosing one (see :data:`NamespaceFn`).
        config: control-loop configuration.
        max_iterations: overrides ``config.max_iterations`` (Decayer→Activator rounds).
        judge: optional uncertainty judge (see :mod:`langchain_mars.models`).
        decomposer: optional sub-query generator (see :mod:`langchain_mars.models`).
        rewrite: optional L3 episode rewriter.
        conversation_id: the conversation of a run without a LangGraph thread; a run with
            ``config["configurable"]["thread_id"]`` stores its turns under that thread.
        state_schema: the graph state (extend :class:`MarsMemoryState` to add keys).
        max_executors: the most (namespace, thread) pairs whose control-loop
            :class:`~mars_core.control.Executor` the graph keeps built (default
            :data:`DEFAULT_MAX_EXECUTORS`). Past it the least recently used idle one is
            dropped; it holds no state of its own (the buffer is in the graph state,
            the rest in the store), so its thread, when it comes back, gets a new one
            and continues exactly as before.

    Raises:
        ValidationError: ``max_iterations`` or ``max_executors`` is not a positive
            integer, or an invalid namespace (a template missing its value fails when
            the graph runs).
    """
    cfg = config or ControlConfig()
    if max_iterations is not None:
        if not isinstance(max_iterations, int) or max_iterations < 1:
            raise ValidationError("max_iterations must be a positive integer")
        cfg = cfg.model_copy(update={"max_iterations": max_iterations})
    if not isinstance(max_executors, int) or isinstance(max_executors, bool) \
            or max_executors < 1:
        raise ValidationError(f"max_executors must be a positive integer, got {max_executors!r}")
    executors = _Executors(store, namespace, lambda ns, conversation: Executor(
        store, ns, config=cfg, judge=judge, decomposer=decomposer, rewrite=rewrite,
        conversation_id=conversation), conversation_id, max_executors)
    graph: StateGraph[Any] = StateGraph(state_schema)
    graph.add_node("decayer", DecayerNode(executors))
    graph.add_node("activator", ActivatorNode(executors))
    graph.add_node("agent", agent)
    graph.add_node("recognizer", RecognizerNode(executors))
    graph.add_node("memory_manager", MemoryManagerNode(executors))
    graph.add_edge(START, "decayer")
    graph.add_conditional_edges("decayer", _after_decayer, ["activator", "agent"])
    graph.add_edge("activator", "decayer")
    graph.add_edge("agent", "recognizer")
    graph.add_edge("recognizer", "memory_manager")
    graph.add_edge("memory_manager", END)
    return graph


