"""The store's in-memory views: nodes, order, graph, budget ledger, lexical indices.

These are *views* of what the backend holds (DESIGN §3 "system of record"): rebuilt on
open from the records and updated incrementally after every committed write. Nothing
here talks to the backend; :mod:`mars_core.store` stages writes, applies them, then calls
the ``apply_*`` methods below so the views change only once the write is durable.

Examples:
    >>> s = StoreState()
    >>> s.step("ns"), s.next_step("ns"), s.step("ns")
    (0, 1, 1)
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mars_core.budget import BudgetLedger
from mars_core.errors import NotFoundError
from mars_core.extract import KnownFacts
from mars_core.graph import MemoryGraph
from mars_core.lexical import BM25Index
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType, TaskPayload, TaskStatus
from mars_core.policies.base import Policy

__all__ = ["NamespaceView", "StoreState", "ViewIO"]

_LIVE_GOALS = (TaskStatus.PENDING, TaskStatus.ACTIVE)


class StoreState:
    """All in-memory views of one store (not thread-safe: the store holds the lock)."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.nodes: dict[str, MemoryNode] = {}
        self.by_ns: dict[str, dict[MemoryStatus, dict[str, None]]] = defaultdict(
            lambda: {MemoryStatus.ACTIVE: {}, MemoryStatus.ARCHIVED: {}}
        )
        self.graph = MemoryGraph()
        self.owned: dict[str, list[Edge]] = defaultdict(list)
        self.ledger = BudgetLedger()
        self.lexical: dict[tuple[str, MemoryStatus], BM25Index] = {}
        self.totals: Counter[MemoryStatus] = Counter()  # len(by_ns[*][status]), kept up
        self.steps: dict[str, int] = defaultdict(int)
        self.counter = 0
        self.touch = 0
        self._bm25 = (k1, b)
        self.policies: list[Policy] = []
        self.known: dict[str, KnownFacts] = defaultdict(KnownFacts)
        self.last_episode: dict[tuple[str, str], str] = {}

    # --- lookups -----------------------------------------------------------------------

    def get(self, node_id: str) -> MemoryNode:
        """A node by id, or ``NotFoundError``."""
        node = self.nodes.get(node_id)
        if node is None:
            raise NotFoundError(f"no memory with id {node_id!r}")
        return node

    def ids(self, namespace: str, status: MemoryStatus) -> Iterator[str]:
        """Ids of a namespace with a status, oldest first."""
        return iter(self.by_ns[namespace][status]) if namespace in self.by_ns else iter(())

    def count(self, namespace: str, status: MemoryStatus = MemoryStatus.ACTIVE) -> int:
        """Number of nodes of a namespace with a status."""
        return len(self.by_ns[namespace][status]) if namespace in self.by_ns else 0

    def total(self, status: MemoryStatus = MemoryStatus.ACTIVE) -> int:
        """Number of nodes with a status, over every namespace."""
        return self.totals[status]

    def namespaces(self) -> list[str]:
        """Namespaces that hold any node."""
        return sorted(ns for ns, d in self.by_ns.items() if any(d.values()))

    def index(self, namespace: str, status: MemoryStatus) -> BM25Index:
        """The BM25 index of a namespace's active or archived nodes."""
        key = (namespace, status)
        if key not in self.lexical:
            self.lexical[key] = BM25Index(*self._bm25)
        return self.lexical[key]

    def step(self, namespace: str) -> int:
        """The namespace's interaction counter Δn."""
        return self.steps.get(namespace, 0)

    def next_step(self, namespace: str) -> int:
        """Advance and return the interaction counter."""
        self.steps[namespace] += 1
        return self.steps[namespace]

    def is_active(self, node_id: str) -> bool:
        """The node exists and is active."""
        node = self.nodes.get(node_id)
        return node is not None and node.status is MemoryStatus.ACTIVE

    def is_active_goal(self, node_id: str) -> bool:
        """An active task node whose goal is pending or active."""
        node = self.nodes.get(node_id)
        return (node is not None and node.status is MemoryStatus.ACTIVE
                and isinstance(node.payload, TaskPayload) and node.payload.status in _LIVE_GOALS)

    # --- committed changes ---------------------------------------------------------------

    def apply_put(self, node: MemoryNode, owned_edges: Iterable[Edge] = (),
                  notify: bool = True) -> None:
        """Insert or replace a node (status transitions included) and its owned edges.

        ``notify=False`` skips the policy hooks (used on open, before ``rebuild``).
        """
        old = self.nodes.get(node.id)
        if old is not None:
            self._unindex(old)
        self.nodes[node.id] = node
        self._index(node)
        self.known[node.namespace].add(node)
        self._track_episode(node)
        for edge in owned_edges:
            self.add_edge(node.id, edge)
        if not notify:
            return
        if old is None or old.status is not node.status:
            for p in self.policies:
                (p.on_insert if node.is_active else p.on_remove)(node)
        elif node.is_active and node.touch_seq != old.touch_seq:
            for p in self.policies:
                p.on_access(node)
        elif node.is_active:  # metadata only (sensitivity, pin, expiry)
            for p in self.policies:
                p.on_update(node)

    def add_edge(self, owner: str, edge: Edge) -> None:
        """Record an edge stored in ``owner``'s record."""
        if all(e.key != edge.key for e in self.owned[owner]):
            self.owned[owner].append(edge)
        self.graph.add(edge)

    def apply_delete(self, node_id: str) -> MemoryNode | None:
        """Remove a node and every edge touching it (erasure)."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return None
        self._unindex(node)
        self.known[node.namespace].remove(node_id)
        key = (node.namespace, node.provenance.conversation_id or "")
        if self.last_episode.get(key) == node_id:
            del self.last_episode[key]
            for other in sorted(self.nodes.values(), key=lambda n: n.seq):
                self._track_episode(other)
        if node.is_active:
            for p in self.policies:
                p.on_remove(node)
        for edge in self.graph.remove_node(node_id):
            for owner in (edge.source, edge.target):
                self.owned[owner] = [e for e in self.owned.get(owner, []) if e.key != edge.key]
        self.owned.pop(node_id, None)
        return node

    def _track_episode(self, node: MemoryNode) -> None:
        """Remember the newest episode of each conversation (for temporalNext edges)."""
        if node.type is not MemoryType.EPISODIC:
            return
        key = (node.namespace, node.provenance.conversation_id or "")
        last = self.nodes.get(self.last_episode.get(key, ""))
        if last is None or last.seq <= node.seq:
            self.last_episode[key] = node.id

    def _index(self, node: MemoryNode) -> None:
        ids = self.by_ns[node.namespace][node.status]
        if node.id not in ids:
            ids[node.id] = None
            self.totals[node.status] += 1
        self.index(node.namespace, node.status).add(node.id, node.content)
        if node.is_active:
            self.ledger.add(node.namespace, node.type, node.weight)

    def _unindex(self, node: MemoryNode) -> None:
        ids = self.by_ns[node.namespace][node.status]
        if node.id in ids:
            del ids[node.id]
            self.totals[node.status] -= 1
        self.index(node.namespace, node.status).remove(node.id)
        if node.is_active:
            self.ledger.remove(node.namespace, node.type, node.weight)

    def view(self, namespace: str, budget: int, now: datetime, rng: random.Random, *,
             step: int | None = None, io: ViewIO | None = None) -> NamespaceView:
        """A read-only policy view of one namespace (``step``: a staged counter value)."""
        return NamespaceView(self, namespace, budget, now, rng, step, io or ViewIO.empty())


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

    state: StoreState
    namespace: str
    budget: int
    now: datetime
    rng: random.Random
    staged_step: int | None = None
    io: ViewIO = field(default_factory=ViewIO.empty)

    @property
    def step(self) -> int:
        """Current interaction counter (including the operation being staged)."""
        return self.staged_step if self.staged_step is not None else self.state.step(self.namespace)

    @property
    def used(self) -> int:
        """Active tokens."""
        return self.state.ledger.used(self.namespace)

    @property
    def count(self) -> int:
        """Active node count."""
        return self.state.count(self.namespace)

    def used_by_type(self) -> dict[MemoryType, int]:
        """Active tokens of each type (from the budget ledger, O(1))."""
        return self.state.ledger.by_type(self.namespace)

    @property
    def graph(self) -> MemoryGraph:
        """The memory graph."""
        return self.state.graph

    def active(self) -> Iterator[MemoryNode]:
        """Active nodes, oldest first."""
        return (self.state.nodes[i] for i in self.state.ids(self.namespace, MemoryStatus.ACTIVE))

    def node(self, node_id: str) -> MemoryNode:
        """A node by id."""
        return self.state.get(node_id)

    def is_leaf(self, node_id: str) -> bool:
        """No active node derives from it."""
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
        goals = [i for i in self.state.ids(self.namespace, MemoryStatus.ACTIVE)
                 if self.state.is_active_goal(i)]
        if not goals:
            return None
        mean = self.vectors(goals).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None
