"""The Executor (seed 002 §2.4): the self-adaptive control loop of one namespace.

At each turn it (i) puts the query into working memory, (ii) runs Decayer→Activator
rounds until the buffer suffices or ``max_iterations`` is reached, (iii) builds the
prompt — the routed cluster's procedures, the accessible clusters' summaries, the buffer
and the recent turns — and calls the agent, (iv) lets the Recognizer credit the answer
and the Memory Manager persist the turn and reinforce what was used.

The read path (:meth:`Executor.read`) and the write path (:meth:`Executor.write`) are
separate calls over an explicit :class:`~mars_core.control.memory.WorkingMemory`, so a
graph (``langchain_mars.graph``) can run them as nodes; :meth:`Executor.turn` chains
them for plain Python use.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     ex = Executor(store, "u1")
    ...     first = ex.turn("I live in Porto and I love jazz", lambda p: "Noted.")
    ...     second = ex.turn("Where do I live?", lambda p: "You live in Porto.")
    ...     second.read.rounds[0].retrieve, len(second.used) > 0
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mars_core._async import asyncify
from mars_core.control.access import TurnClock, memory_retention
from mars_core.control.activator import (
    Activation,
    Activator,
    ClusterTarget,
    Decomposer,
    aim_at,
)
from mars_core.control.clusters import Cluster, ClusterBook
from mars_core.control.config import ControlConfig
from mars_core.control.decayer import Decayer, Judge, Uncertainty
from mars_core.control.manager import MemoryManager, Persisted, Rewriter
from mars_core.control.memory import Buffer, Turn, WorkingMemory
from mars_core.control.recognizer import Recognizer
from mars_core.model import MemoryNode
from mars_core.namespaces import NamespaceArg, canonical_namespace
from mars_core.store import MemoryStore

__all__ = ["Executor", "Prompt", "ReadResult", "TurnResult"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the agent receives.

    Attributes:
        query: the user's message.
        system: memory context (procedures, cluster summaries, buffer items).
        history: recent turns before the query.
        procedures: the routed cluster's learned instructions.
    """

    query: str
    system: str
    history: tuple[Turn, ...]
    procedures: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The read path of one turn: rounds, activations, the final buffer and cluster."""

    memory: WorkingMemory
    rounds: tuple[Uncertainty, ...]
    activations: tuple[Activation, ...]
    cluster: Cluster | None
    accessible: tuple[str, ...]

    @property
    def retrieved(self) -> bool:
        """Whether any round ran the Activator."""
        return bool(self.activations)


@dataclass(frozen=True, slots=True)
class TurnResult:
    """A whole turn: read, prompt, answer, credit and writes."""

    read: ReadResult
    prompt: Prompt
    answer: str
    used: tuple[str, ...]
    persisted: Persisted
    memory: WorkingMemory


class Executor:
    """Oblivion's control loop over one store namespace.

    Args:
        store: the memory store.
        namespace: whose memory (a namespace string or tuple, :mod:`mars_core.namespaces`).
        config: every component's parameters.
        judge: optional LLM-style uncertainty judge (True = buffer suffices).
        decomposer: optional sub-query generator.
        rewrite: optional L3 episode rewriter.
        conversation_id: groups turns into a conversation.
    """

    def __init__(self, store: MemoryStore, namespace: NamespaceArg = "default", *,
                 config: ControlConfig | None = None, judge: Judge | None = None,
                 decomposer: Decomposer | None = None, rewrite: Rewriter | None = None,
                 conversation_id: str = "main") -> None:
        ns = canonical_namespace(namespace)
        self.store, self.namespace = store, ns
        self.config = cfg = config or ControlConfig()
        self.clusters = ClusterBook(store, ns, cfg.clusters, cfg.retention)
        self.decayer = Decayer(store.embedder, cfg.decayer, judge)
        self.activator = Activator(store, ns, cfg.activator, decomposer, cfg.retention)
        self.recognizer = Recognizer(cfg.recognizer)
        self.manager = MemoryManager(store, ns, conversation_id=conversation_id,
                                     episode_turns=cfg.episode_turns, rewrite=rewrite,
                                     clusters=self.clusters)
        self.memory = WorkingMemory()

    def read(self, query: str, memory: WorkingMemory) -> ReadResult:
        """Decayer→Activator rounds, then the turn's cluster and the accessible ones."""
        buffer = memory.buffer
        rounds: list[Uncertainty] = []
        acts: list[Activation] = []
        for i in range(self.config.max_iterations):
            verdict = self.assess(query, buffer, i)
            rounds.append(verdict)
            if not verdict.retrieve:
                break
            act = self.activator.activate(query, buffer, self.config.buffer.max_items,
                                          self.config.buffer.max_tokens,
                                          self.targets(query, verdict))
            acts.append(act)
            buffer = act.buffer
            if not act.added:
                break
        accessible = tuple(self.decayer.accessible(self.clusters.retentions()))
        return ReadResult(memory.with_buffer(buffer), tuple(rounds), tuple(acts),
                          self.clusters.route(query, create=False), accessible)

    def assess(self, query: str, buffer: Buffer, round_: int) -> Uncertainty:
        """The Decayer's round ``round_`` over ``buffer``, judging each L1 cluster of the
        namespace on the items attributed to it (``u_t(c)``, seed 002 §2.2)."""
        return self.decayer.assess(query, buffer, round_, self.clusters.all())

    def targets(self, query: str, verdict: Uncertainty) -> tuple[ClusterTarget, ...]:
        """The clusters ``verdict`` found uncertain that the Activator aims sub-queries at
        (:func:`~mars_core.control.activator.aim_at`, at most ``target_clusters``)."""
        return aim_at(query, verdict, self.clusters.all(),
                      self.config.activator.target_clusters)

    def prompt(self, query: str, read: ReadResult) -> Prompt:
        """Render what the agent sees."""
        procs = read.cluster.procedures if read.cluster is not None else ()
        lines: list[str] = []
        if procs:
            lines += [f"Procedures for {read.cluster.topic if read.cluster else ''}:",
                      *(f"- {p}" for p in procs)]
        topics = [c.summary() for c in self.clusters.all() if c.topic in read.accessible]
        if topics:
            lines += ["Memory topics:", *(f"- {t}" for t in topics)]
        items = read.memory.buffer.items
        if items:
            lines += ["Relevant memories:", *(f"- [{i.layer.value}] {i.text}" for i in items)]
        return Prompt(query, "\n".join(lines), read.memory.window, procs)

    def write(self, query: str, answer: str, read: ReadResult,
              feedback: str | None = None) -> tuple[Persisted, tuple[str, ...], WorkingMemory]:
        """Credit, persist, reinforce, update the cluster, decay the buffer."""
        used = self.credit(query, answer, read.memory.buffer)
        persisted, buffer = self.commit(query, answer, read.memory.buffer, used, feedback)
        k = self.config.buffer.window_turns
        memory = read.memory.with_turn(Turn("user", query), k).with_turn(
            Turn("assistant", answer), k).with_buffer(buffer)
        return persisted, used, memory

    def credit(self, query: str, answer: str, buffer: Buffer) -> tuple[str, ...]:
        """The Recognizer's step: ids of the buffer items the answer used."""
        return tuple(self.recognizer.used(query, answer, buffer.items))

    def commit(self, query: str, answer: str, buffer: Buffer, used: Sequence[str],
               feedback: str | None = None) -> tuple[Persisted, Buffer]:
        """The Memory Manager's step; returns what was written and the decayed buffer."""
        offered = buffer.ids
        persisted = self.manager.persist(query, answer)
        reinforced = self.manager.reinforce(used, offered)
        cluster = self.manager.update_cluster(query, used, offered, feedback)
        done = Persisted(persisted.observed, persisted.episodes, tuple(reinforced), cluster)
        return done, self._decay_buffer(buffer)

    def render(self, query: str, buffer: Buffer, history: Sequence[Turn] = ()) -> Prompt:
        """The prompt for ``query`` over ``buffer`` (routes the query, reads retentions)."""
        accessible = tuple(self.decayer.accessible(self.clusters.retentions()))
        read = ReadResult(WorkingMemory(tuple(history), buffer), (), (),
                          self.clusters.route(query, create=False), accessible)
        return self.prompt(query, read)

    def turn(self, query: str, respond: Callable[[Prompt], str],
             feedback: str | None = None) -> TurnResult:
        """One full turn with ``respond(prompt) -> answer`` as the agent."""
        read = self.read(query, self.memory)
        prompt = self.prompt(query, read)
        answer = respond(prompt)
        persisted, used, self.memory = self.write(query, answer, read, feedback)
        return TurnResult(read, prompt, answer, used, persisted, self.memory)

    def feedback(self, query: str, text: str) -> Cluster | None:
        """Feedback on the answer to ``query``: its cluster may learn a procedure."""
        return self.manager.learn(query, text)

    aturn = asyncify(turn)
    afeedback = asyncify(feedback)

    def _decay_buffer(self, buffer: Buffer) -> Buffer:
        """Evict buffer items whose retention fell below ``low_retention`` (never deleted)."""
        clock = TurnClock(self.store, self.namespace)
        low = self.config.retention.low_retention
        keep = [i for i in buffer.items if (n := self._node(i.id)) is not None
                and memory_retention(n, clock, self.config.retention) >= low]
        return Buffer(tuple(keep))

    def _node(self, node_id: str) -> MemoryNode | None:
        node = self.store.get(node_id, namespace=self.namespace)
        return node if node.is_active else None
