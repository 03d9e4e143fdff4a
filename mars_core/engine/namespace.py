"""One namespace's in-memory views, loaded on demand from the record store.

A :class:`NamespaceState` holds what the policies, retrieval and extraction read about one
namespace: its active memories (whole), a brief reference to every memory (id, status,
type, conversation, ``seq``) so archived ones are known without being loaded, the edge
graph, the budget ledger, the BM25 indices, the extraction's known facts, the newest
episode of each conversation, its policy instance, its privacy preferences and its
moving centroid. Archived memories are read from the record store when something asks
for them (:meth:`NamespaceState.node`, :meth:`NamespaceState.load_archive`).

Views change only after a transaction committed (:mod:`mars_core.engine.unit`); nothing
here writes. :class:`NamespaceView` is the read-only
:class:`~mars_core.policies.base.PolicyView` a policy plans over.

Examples:
    >>> ns = NamespaceState.of("maya")
    >>> ns.count(), ns.used
    (0, 0)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from mars_core.budget import BudgetLedger
from mars_core.engine.timeline import Timeline
from mars_core.errors import ConcurrentWriteError, NotFoundError
from mars_core.extract import KnownFacts, Topic, topic_of
from mars_core.graph import MemoryGraph
from mars_core.lexical import BM25Index
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType, TaskPayload, TaskStatus
from mars_core.policies.base import Policy
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.scoring.dmf import CentroidTracker
from mars_core.storage.base import MemoryRef, NamespaceRecord

if TYPE_CHECKING:
    from mars_core.engine.protected import ProtectedFacts
    from mars_core.privacy.detectors import Kind

__all__ = ["NamespaceState", "NamespaceView", "ViewIO"]

_LIVE_GOALS = (TaskStatus.PENDING, TaskStatus.ACTIVE)
_CARD_TYPES = (MemoryType.SEMANTIC, MemoryType.SOCIAL)

Fetch = Callable[[Sequence[str]], list[MemoryNode]]
"""Reads memories of the namespace by id from the record store."""


class NamespaceState:
    """The views of one namespace (not thread-safe: the store holds its lock).

    Args:
        record: the namespace's persisted record.
        refs: every memory of the namespace, briefly, by ``seq``.
        active: its active memories, by ``seq``.
        edges: its edges.
        policy: its own policy instance (rebuilt here from the active memories).
        fetch: reads archived memories by id when asked for (default: none can be).
        bm25: BM25 ``(k1, b)`` (the defaults of :class:`~mars_core.config.RetrievalConfig`).
    """

    def __init__(self, record: NamespaceRecord, refs: Sequence[MemoryRef],
                 active: Sequence[MemoryNode], edges: Iterable[Edge], policy: Policy, *,
                 fetch: Fetch | None = None, bm25: tuple[float, float] = (0.9, 0.4)) -> None:
        self.name = record.name
        self.record = record
        self.nodes: dict[str, MemoryNode] = {}
        self.refs: dict[str, MemoryRef] = {r.id: r for r in refs}
        self.order: dict[MemoryStatus, dict[str, None]] = {s: {} for s in MemoryStatus}
        for ref in refs:
            self.order[ref.status][ref.id] = None
        self.graph = MemoryGraph()
        self.ledger = BudgetLedger()
        self._bm25 = bm25
        self.lexical: dict[MemoryStatus, BM25Index] = {MemoryStatus.ACTIVE: BM25Index(*bm25)}
        self.timeline: dict[MemoryStatus, Timeline] = {
            MemoryStatus.ACTIVE: Timeline(_entry(n) for n in active)}
        self.archive_loaded = False
        self.known = KnownFacts()
        self.last_episode: dict[str, str] = {}
        self.policy = policy
        self.saved_policy: dict[str, Any] = {}
        self.prefs: PrivacyPreferences | None = None
        self.centroid: CentroidTracker | None = None
        self.protected: ProtectedFacts | None = None  # read by the output check
        self.privacy_kinds: dict[str, frozenset[Kind]] = {}  # sensitive categories, by memory
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}  # stored vectors read so far
        self._cards: dict[MemoryStatus, list[tuple[str, Topic]]] = {}
        self._fetch = fetch
        for ref in refs:
            if ref.type is MemoryType.EPISODIC:
                self.last_episode[ref.conversation or ""] = ref.id
        for node in active:
            self.nodes[node.id] = node
            self._index(node, timeline=False)  # the timeline was built above, in one sort
        for edge in edges:
            self.graph.add(edge)
        policy.rebuild(active)

    @classmethod
    def of(cls, name: str, nodes: Iterable[MemoryNode] = (), edges: Iterable[Edge] = (),
           policy: Policy | None = None) -> NamespaceState:
        """A namespace holding ``nodes`` (all in memory; for tests and examples).

        Examples:
            >>> NamespaceState.of("ns").count()
            0
        """
        from mars_core.policies import make_policy

        state = cls(NamespaceRecord(name), [], [], [], policy or make_policy("lru"))
        for node in sorted(nodes, key=lambda n: n.seq):
            state.apply_put(node)
        for edge in edges:
            state.graph.add(edge)
        state.archive_loaded = True
        state.lexical[MemoryStatus.ARCHIVED] = BM25Index(*state._bm25)
        for i in state.order[MemoryStatus.ARCHIVED]:
            state.lexical[MemoryStatus.ARCHIVED].add(i, state.nodes[i].search_text,
                                                     _stamp(state.nodes[i]))
        state.timeline[MemoryStatus.ARCHIVED] = Timeline(
            _entry(state.nodes[i]) for i in state.order[MemoryStatus.ARCHIVED])
        return state

    # --- counters --------------------------------------------------------------------

    @property
    def step(self) -> int:
        """The interaction counter Δn."""
        return self.record.step

    @property
    def used(self) -> int:
        """Active tokens."""
        return self.ledger.used(self.name)

    def count(self, status: MemoryStatus = MemoryStatus.ACTIVE) -> int:
        """How many memories have a status."""
        return len(self.order[status])

    # --- lookups -----------------------------------------------------------------------

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self.refs

    def ids(self, status: MemoryStatus) -> Iterator[str]:
        """Ids with a status, oldest first."""
        return iter(list(self.order[status]))

    def node(self, memory_id: str) -> MemoryNode:
        """A memory by id, active or archived (read from the record store if needed).

        Raises:
            NotFoundError: no such memory in this namespace.
        """
        node = self.nodes.get(memory_id)
        if node is not None:
            return node
        if memory_id not in self.refs or self._fetch is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        self._read([memory_id])
        return self.nodes[memory_id]

    def get(self, memory_id: str) -> MemoryNode | None:
        """A memory by id, or ``None``."""
        return self.node(memory_id) if memory_id in self.refs else None

    def load_archive(self) -> None:
        """Read every archived memory (once) and index them for search."""
        if self.archive_loaded:
            return
        wanted = [i for i in self.order[MemoryStatus.ARCHIVED] if i not in self.nodes]
        if wanted and self._fetch is not None:
            self._read(wanted)
        index = BM25Index(*self._bm25)
        for i in self.order[MemoryStatus.ARCHIVED]:
            index.add(i, self.nodes[i].search_text, _stamp(self.nodes[i]))
        self.lexical[MemoryStatus.ARCHIVED] = index
        self.timeline[MemoryStatus.ARCHIVED] = Timeline(
            _entry(self.nodes[i]) for i in self.order[MemoryStatus.ARCHIVED])
        self.archive_loaded = True

    def _read(self, ids: Sequence[str]) -> None:
        """Read memories this view lists from the record store.

        Raises:
            ConcurrentWriteError: one of them is gone or changed status since the view
                was read (another process erased or restored it): the view is stale, the
                call is repeated on a fresh one.
        """
        assert self._fetch is not None
        for found in self._fetch(ids):
            self.nodes[found.id] = found
        missing = [i for i in ids if i not in self.nodes]
        if missing:
            raise ConcurrentWriteError(
                f"namespace {self.name!r} was changed by another process while this call "
                "read it (a memory it listed is gone); nothing was written: repeat the call")

    def all_nodes(self) -> list[MemoryNode]:
        """Every memory, oldest first (loads the archive)."""
        self.load_archive()
        return sorted((self.nodes[i] for i in self.refs), key=lambda n: n.seq)

    def index(self, status: MemoryStatus) -> BM25Index:
        """The BM25 index of the active or (loaded then) archived memories."""
        if status is MemoryStatus.ARCHIVED:
            self.load_archive()
        return self.lexical[status]

    def cards(self, status: MemoryStatus) -> list[tuple[str, Topic]]:
        """The cards of one partition: its semantic and social memories that have a topic
        (:func:`~mars_core.extract.topic_of`), oldest first; kept until one changes."""
        found = self._cards.get(status)
        if found is None:
            if status is MemoryStatus.ARCHIVED:
                self.load_archive()
            found = []
            for i in self.order[status]:
                if self.refs[i].type in _CARD_TYPES:
                    topic = topic_of(self.refs[i].type, self.node(i).payload)
                    if topic is not None:
                        found.append((i, topic))
            self._cards[status] = found
        return found

    def window(self, status: MemoryStatus, since: float | None,
               until: float | None) -> list[str]:
        """Ids of the memories of ``status`` created in ``[since, until]`` (timestamps;
        ``None``: open), oldest first — the temporal range index
        (:class:`~mars_core.engine.timeline.Timeline`)."""
        self.index(status)  # the archive's views are built when first needed
        return self.timeline[status].window(since, until)

    def is_active(self, memory_id: str) -> bool:
        """The memory exists here and is active."""
        ref = self.refs.get(memory_id)
        return ref is not None and ref.status is MemoryStatus.ACTIVE

    def is_active_goal(self, memory_id: str) -> bool:
        """An active task whose goal is pending or active."""
        if not self.is_active(memory_id):
            return False
        node = self.nodes[memory_id]
        return isinstance(node.payload, TaskPayload) and node.payload.status in _LIVE_GOALS

    # --- committed changes -------------------------------------------------------------

    def apply_put(self, node: MemoryNode, edges: Iterable[Edge] = ()) -> None:
        """A committed insert or change of a memory (status transitions included)."""
        old = self.nodes.get(node.id)
        ref = self.refs.get(node.id)
        if node.type in _CARD_TYPES:
            self._cards.clear()
        moved = ref is None or ref.status is not node.status
        if ref is not None:
            if moved:  # a memory that keeps its status keeps its place in the order
                self.order[ref.status].pop(node.id, None)
            if ref.status is MemoryStatus.ACTIVE and old is not None:
                self._unindex(old)
            elif ref.status is MemoryStatus.ARCHIVED and self.archive_loaded:
                self.lexical[MemoryStatus.ARCHIVED].remove(node.id)
                self.timeline[MemoryStatus.ARCHIVED].remove(node.id)
        self.refs[node.id] = MemoryRef(node.id, node.status, node.type,
                                       node.provenance.conversation_id, node.seq,
                                       node.sensitivity)
        if moved or node.id not in self.order[node.status]:
            self._place(node)
        self.nodes[node.id] = node
        if node.is_active:
            self._index(node)
        else:
            self.known.remove(node.id)
            if self.archive_loaded:
                self.lexical[MemoryStatus.ARCHIVED].add(node.id, node.search_text, _stamp(node))
                self.timeline[MemoryStatus.ARCHIVED].add(*_entry(node))
        if node.type is MemoryType.EPISODIC:
            self._track_episode(node)
        for edge in edges:
            self.graph.add(edge)
        self._notify(None if ref is None else ref.status, old, node)

    def apply_stats(self, node: MemoryNode) -> None:
        """A committed access: new statistics (count, last access, recency) of a memory
        this view holds. Nothing a statistic does not change is touched — its place in
        the order, the lexical and temporal indexes, the ledger, the known facts — and
        the policy hears of it as an access (an active memory whose recency moved).

        Raises:
            NotFoundError: the view holds no such memory.
        """
        old = self.nodes.get(node.id)
        if old is None or node.id not in self.refs:
            raise NotFoundError(f"no memory with id {node.id!r}")
        self.nodes[node.id] = node
        if node.is_active and node.touch_seq != old.touch_seq:
            self.policy.on_access(node)

    def _place(self, node: MemoryNode) -> None:
        """Put ``node`` in its status order, keeping ``seq`` order."""
        order = self.order[node.status]
        order.pop(node.id, None)
        if not order or self.refs[next(reversed(order))].seq < node.seq:
            order[node.id] = None
            return
        merged = sorted([*order, node.id], key=lambda i: self.refs[i].seq)
        order.clear()
        order.update(dict.fromkeys(merged))

    def _notify(self, was: MemoryStatus | None, old: MemoryNode | None,
                node: MemoryNode) -> None:
        """Tell the policy: it tracks the active memories only."""
        was_active = was is MemoryStatus.ACTIVE
        if was_active != node.is_active:
            (self.policy.on_insert if node.is_active else self.policy.on_remove)(node)
        elif node.is_active and old is not None and node.touch_seq != old.touch_seq:
            self.policy.on_access(node)
        elif node.is_active:  # metadata only (sensitivity, pin, expiry)
            self.policy.on_update(node)

    def apply_delete(self, memory_id: str) -> None:
        """A committed erasure of a memory."""
        ref = self.refs.pop(memory_id, None)
        if ref is None:
            return
        if ref.type in _CARD_TYPES:
            self._cards.clear()
        node = self.nodes.pop(memory_id, None)
        self.order[ref.status].pop(memory_id, None)
        self.privacy_kinds.pop(memory_id, None)
        self.vectors.pop(memory_id, None)
        if ref.status is MemoryStatus.ACTIVE and node is not None:
            self._unindex(node)
            self.policy.on_remove(node)
        elif self.archive_loaded:
            self.lexical[MemoryStatus.ARCHIVED].remove(memory_id)
            self.timeline[MemoryStatus.ARCHIVED].remove(memory_id)
        self.graph.remove_node(memory_id)
        conv = ref.conversation or ""
        if self.last_episode.get(conv) == memory_id:
            del self.last_episode[conv]
            for other in sorted(self.refs.values(), key=lambda r: r.seq):
                if other.type is MemoryType.EPISODIC and (other.conversation or "") == conv:
                    self.last_episode[conv] = other.id

    def _track_episode(self, node: MemoryNode) -> None:
        conv = node.provenance.conversation_id or ""
        last = self.refs.get(self.last_episode.get(conv, ""))
        if last is None or last.seq <= node.seq:
            self.last_episode[conv] = node.id

    def _index(self, node: MemoryNode, *, timeline: bool = True) -> None:
        self.lexical[MemoryStatus.ACTIVE].add(node.id, node.search_text, _stamp(node))
        if timeline:
            self.timeline[MemoryStatus.ACTIVE].add(*_entry(node))
        self.ledger.add(self.name, node.type, node.weight)
        self.known.add(node)

    def _unindex(self, node: MemoryNode) -> None:
        self.lexical[MemoryStatus.ACTIVE].remove(node.id)
        self.timeline[MemoryStatus.ACTIVE].remove(node.id)
        self.ledger.remove(self.name, node.type, node.weight)
        self.known.remove(node.id)

    def view(self, budget: int, now: datetime, rng: random.Random, *, step: int | None = None,
             io: ViewIO | None = None) -> NamespaceView:
        """A read-only policy view (``step``: a staged counter value)."""
        return NamespaceView(self, budget, now, rng, step, io or ViewIO.empty())


@dataclass(frozen=True)
class ViewIO:
    """What a view needs from the store: vectors, the embedder and the token counter."""

    vectors: Callable[[Sequence[str]], npt.NDArray[np.float32]]
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]]
    count_tokens: Callable[[str], int]

    @staticmethod
    def empty() -> ViewIO:
        """A view IO for tests of policies that need no vectors (vectors are zero)."""
        return ViewIO(lambda ids: np.zeros((len(ids), 1), dtype=np.float32),
                      lambda texts: np.zeros((len(texts), 1), dtype=np.float32),
                      lambda text: max(1, len(text.split())))


@dataclass
class NamespaceView:
    """The :class:`~mars_core.policies.base.PolicyView` of one namespace."""

    state: NamespaceState
    budget: int
    now: datetime
    rng: random.Random
    staged_step: int | None = None
    io: ViewIO = field(default_factory=ViewIO.empty)

    @property
    def namespace(self) -> str:
        """The namespace."""
        return self.state.name

    @property
    def step(self) -> int:
        """Current interaction counter (including the operation being staged)."""
        return self.staged_step if self.staged_step is not None else self.state.step

    @property
    def used(self) -> int:
        """Active tokens."""
        return self.state.used

    @property
    def count(self) -> int:
        """Active memory count."""
        return self.state.count()

    def used_by_type(self) -> dict[MemoryType, int]:
        """Active tokens of each type (from the budget ledger, O(1))."""
        return self.state.ledger.by_type(self.state.name)

    @property
    def graph(self) -> MemoryGraph:
        """The namespace's memory graph."""
        return self.state.graph

    def active(self) -> Iterator[MemoryNode]:
        """Active memories, oldest first."""
        return (self.state.nodes[i] for i in self.state.ids(MemoryStatus.ACTIVE))

    def node(self, node_id: str) -> MemoryNode:
        """A memory by id."""
        return self.state.node(node_id)

    def is_leaf(self, node_id: str) -> bool:
        """No active memory derives from it."""
        return self.state.graph.is_leaf(node_id, self.state.is_active)

    def task_protected(self, node_id: str) -> bool:
        """An active goal (goal status gates eviction, seed 000 §3.2.4), or a prerequisite
        of one without an equivalent summary (task-safety, §3.2.7)."""
        st = self.state
        return st.is_active_goal(node_id) or st.graph.task_protected(
            node_id, st.is_active_goal, st.is_active)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalised embeddings of memories, one row per id."""
        return self.io.vectors(ids)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts (rows L2-normalised)."""
        return self.io.embed(texts)

    def count_tokens(self, text: str) -> int:
        """Weight a text would have as a memory."""
        return self.io.count_tokens(text)

    def goal_vector(self) -> npt.NDArray[np.float32] | None:
        """Mean embedding of the namespace's active goals (None without goals)."""
        goals = [i for i in self.state.ids(MemoryStatus.ACTIVE) if self.state.is_active_goal(i)]
        if not goals:
            return None
        mean = self.vectors(goals).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None


def _entry(node: MemoryNode) -> tuple[str, float, int]:
    """A memory's place on the timeline: id, creation timestamp, sequence number."""
    return node.id, _stamp(node), node.seq


def _stamp(node: MemoryNode) -> float:
    """Where a memory sits in time for the lexical index (its creation, as the vector
    index's ``created_ts`` field)."""
    return node.created_at.timestamp()
