"""One namespace's in-memory views, loaded on demand from the record store.

A :class:`NamespaceState` holds what the policies, retrieval and extraction read about one
namespace, and only for its **active** memories — what its budget holds: the memories
themselves, the edges that touch them, the budget ledger, the temporal index, the
extraction's known facts, the cards, its policy instance, its privacy preferences and its
moving centroid. Its history stays in the record store: an archived memory, the edges of
a memory that is not active, the newest turn of a conversation, the archive's memories in
a time window are read through its :class:`~mars_core.views.history.History` when a call
asks for them, held until the next call begins (:meth:`NamespaceState.trim`), and
counted, not listed (the archive's size). Full-text search is the record store's
(:meth:`~mars_core.storage.base.RecordTxn.search_terms`). So what a namespace holds is
bounded by its budget, however long its history.

The views follow each change a unit of work stages (:mod:`mars_core.engine.unit`), so a
later step of the same call plans on what an earlier one staged; a unit that fails drops
them, and they are read again from the records. Nothing here writes, and nothing here
tells a policy anything: each ``apply_*`` change returns a :class:`Notice`, and the engine
hands it to the namespace's policy (:meth:`Notice.tell`) as it stages it — so the policy
holds exactly what the views hold: the committed state plus what the current unit
staged; a unit that fails drops the policy with the views, and both are read again from
the records (``tests/test_views.py``). :class:`NamespaceView` is the read-only
:class:`~mars_core.policies.plan.PolicyView` a policy plans over; it reads vectors and
token counts through a :class:`PolicyIO`, which the engine implements.

Examples:
    >>> ns = NamespaceState.of("maya")
    >>> ns.count(), ns.used
    (0, 0)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

from mars_core.budget import BudgetLedger
from mars_core.errors import NotFoundError
from mars_core.graph import MemoryGraph
from mars_core.knowledge.extract import KnownFacts, Topic, topic_of
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType, TaskPayload, TaskStatus
from mars_core.policies.base import Policy
from mars_core.policies.temporal import LRUPolicy
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.scoring.dmf import CentroidTracker
from mars_core.storage.base import NamespaceRecord, Vector
from mars_core.views.history import HeldHistory, History
from mars_core.views.timeline import Timeline

if TYPE_CHECKING:
    from mars_core.privacy.detectors import Kind
    from mars_core.views.protected import ProtectedFacts

__all__ = ["KEEP_READ", "KEEP_READ_STORE", "NamespaceState", "NamespaceView", "Notice", "PolicyIO",
           "ViewIO"]

_LIVE_GOALS = (TaskStatus.PENDING, TaskStatus.ACTIVE)
_CARD_TYPES = (MemoryType.SEMANTIC, MemoryType.SOCIAL)
_EPISODES: Final = 64
"""Conversations whose newest turn a namespace remembers between calls."""

KEEP_READ: Final = 512
"""Memories beyond the active ones that a namespace keeps between calls at least, the
last read (an agent's next question reads mostly the candidates its last one read: kept,
they are not read and validated again; 512 memories are about 1 MB)."""

KEEP_READ_STORE: Final = 4096
"""Memories beyond the active ones that the cached namespaces of a store keep between
calls together, when more than :data:`KEEP_READ` each (a namespace keeps what the others
leave of it, :class:`~mars_core.engine.cache.NamespaceCache`): one agent's loop over a
long history reads a few thousand distinct memories again and again (a round of
``observe`` + ``render_context`` at 2,000 turns reads ~130 candidates, 1,600 distinct in
50 rounds), while a process serving many namespaces keeps :data:`KEEP_READ` of each, as
before."""


class NamespaceState:
    """The views of one namespace (not thread-safe: the store holds its lock).

    Args:
        record: the namespace's persisted record.
        active: its active memories, by ``seq``.
        edges: every edge that touches one of them.
        policy: its own policy instance (rebuilt here from the active memories).
        archived: how many archived memories it has.
        history: where the rest is read (default: nothing else exists).
    """

    def __init__(self, record: NamespaceRecord, active: Sequence[MemoryNode],
                 edges: Iterable[Edge], policy: Policy, *, archived: int = 0,
                 history: History | None = None) -> None:
        self.name = record.name
        self.record = record
        self.history: History = history or HeldHistory()
        self.nodes: dict[str, MemoryNode] = {}
        """The active memories, and what this call read of the rest."""
        self.order: dict[str, None] = {}
        """The active memories' ids, by ``seq``."""
        self.archived = archived
        self.graph = MemoryGraph(source=self.history.edges)
        self.ledger = BudgetLedger()
        self.timeline = Timeline(_entry(n) for n in active)
        self.known = KnownFacts()
        self.last_episode: dict[str, str] = {}
        """The newest turn of the conversations seen lately (``""``: of none)."""
        self.policy = policy
        self.saved_policy: dict[str, Any] = {}
        self.prefs: PrivacyPreferences | None = None
        self._centroid: CentroidTracker | None = None
        self._protected: ProtectedFacts | None = None  # read by the output check
        self._kinds: dict[str, frozenset[Kind]] = {}  # sensitive categories, by memory
        self._vectors: dict[str, Vector] = {}  # stored vectors read so far
        self._cards: list[tuple[str, Topic]] | None = None
        self._absent: set[str] = set()  # ids this call found to be no memory here
        self._read_more = False  # something beyond the active memories is held
        self._recent: dict[str, None] = {}  # what calls read beyond them, oldest first
        self._others: set[str] = set()  # held, neither active nor read: archived by a call
        for node in active:
            self.nodes[node.id] = node
            self.order[node.id] = None
            self._index(node, timeline=False)  # the timeline was built above, in one sort
        for edge in edges:
            self.graph.add(edge)
        self.graph.complete(self.order)
        policy.rebuild(active)

    @classmethod
    def of(cls, name: str, nodes: Iterable[MemoryNode] = (), edges: Iterable[Edge] = (),
           policy: Policy | None = None) -> NamespaceState:
        """A namespace of ``nodes`` and ``edges``, its history held in RAM (for tests and
        examples).

        Examples:
            >>> NamespaceState.of("ns").count()
            0
        """
        given = sorted(nodes, key=lambda n: n.seq)
        links = list(edges)
        history = HeldHistory()
        state = cls(NamespaceRecord(name), [], [], policy or LRUPolicy(), history=history)
        for node in given:
            state.apply_put(node, new=True).tell(state.policy)
        for edge in links:
            state.graph.add(edge)
        history.nodes.update((n.id, n) for n in given)  # what a trim lets go of is here
        history.edge_list += links
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
        return len(self.order) if status is MemoryStatus.ACTIVE else self.archived

    # --- lookups -----------------------------------------------------------------------

    def __contains__(self, memory_id: object) -> bool:
        """Whether the namespace has this memory: held, or at an end of an edge held
        (edges join memories of the namespace, and go with them), else read."""
        if not isinstance(memory_id, str):
            return False
        if memory_id in self.nodes or self.graph.touches(memory_id):
            return True
        if memory_id not in self._absent:
            self.read([memory_id])
        return memory_id in self.nodes

    def active_ids(self) -> list[str]:
        """The active memories' ids, oldest first."""
        return list(self.order)

    def node(self, memory_id: str) -> MemoryNode:
        """A memory by id, active or not (read from the history if need be).

        Raises:
            NotFoundError: no such memory in this namespace.
        """
        node = self.nodes.get(memory_id)
        if node is None and memory_id not in self._absent:
            self.read([memory_id])
            node = self.nodes.get(memory_id)
        if node is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return node

    def get(self, memory_id: str) -> MemoryNode | None:
        """A memory by id, or ``None``."""
        return self.node(memory_id) if memory_id in self else None

    def read(self, ids: Iterable[str], *, edges: bool = False) -> None:
        """Read the memories among ``ids`` this view does not hold, in one read (and,
        with ``edges``, the edges of all of them in one more): what a search found."""
        ids = list(dict.fromkeys(ids))  # iterated twice with ``edges``
        wanted = [i for i in ids if i not in self.nodes and i not in self._absent]
        if wanted:
            found = self.history.memories(wanted)
            for node in found:
                self.nodes[node.id] = node
                self._recent[node.id] = None
            self._absent.update(set(wanted) - {n.id for n in found})
            self._read_more = True
        if edges:
            self.graph.load(i for i in ids if i in self.nodes)
            self._read_more = True

    def read_around(self, ids: Iterable[str]) -> None:
        """Read ``ids`` with their edges (two reads): what ranking then asks about the
        candidates of a search — is it current, which turn follows it — is held already;
        a neighbour is read when asked for (those of the reply units together, with
        their edges: :func:`~mars_core.reading.retrieval.reply_of`)."""
        self.read(ids, edges=True)

    def hold(self, nodes: Iterable[MemoryNode]) -> list[MemoryNode]:
        """Hold memories a caller read from the records (until the next call), keeping
        the views' version of any already held; returns what is held, in order."""
        out = []
        for node in nodes:
            held = self.nodes.setdefault(node.id, node)
            if held.id not in self.order:
                self._recent[held.id] = None
                self._others.discard(held.id)
            self._absent.discard(node.id)
            out.append(held)
        self._read_more = True
        return out

    def trim(self, keep: int = KEEP_READ) -> None:
        """Let go of what earlier calls read beyond the active memories (a call begins),
        but the ``keep`` read last: an agent's next question reads mostly what the last
        one did, so RAM stays bounded by the budget plus that many.

        What is held beyond the active memories is kept exact as it changes (read, held,
        activated, archived, erased), so a trim costs what it lets go of, not what it
        keeps."""
        if len(self.last_episode) > _EPISODES:
            self.last_episode.clear()
        self._absent.clear()
        if not self._read_more and len(self._recent) <= keep:
            return
        recent = self._recent
        gone = [*itertools.islice(recent, max(0, len(recent) - keep)), *self._others]
        for nid in gone:  # the oldest read, and what a call archived (not kept)
            recent.pop(nid, None)
            if nid in self.order:  # never an active memory (the bookkeeping says none is)
                continue
            self.nodes.pop(nid, None)
            self._vectors.pop(nid, None)
            self._kinds.pop(nid, None)
        self._others = set()
        self.graph.retain(_Either(self.order, recent), left=gone)
        self._read_more = False

    # --- caches of what the records hold (read once, kept with the views) ------------------

    def vectors_of(self, ids: Sequence[str],
                   read: Callable[[list[str]], Mapping[str, Vector]]) -> dict[str, Vector]:
        """The stored vectors of ``ids`` this view holds, those it does not ``read`` in
        one call first (unknown ids are left out; a vector never changes but by
        re-embedding)."""
        missing = [i for i in ids if i not in self._vectors]
        if missing:
            self._vectors.update(read(missing))
        return {i: self._vectors[i] for i in ids if i in self._vectors}

    def keep_vector(self, memory_id: str, vector: Vector) -> None:
        """Hold the vector of a memory being staged (a policy planning in the same unit
        reads it)."""
        self._vectors[memory_id] = vector

    def kinds_of(self, memory_id: str | None,
                 find: Callable[[], frozenset[Kind]]) -> frozenset[Kind]:
        """A memory's sensitive categories, ``find``-ed once and kept (content never
        changes; ``None``: a text that is no memory, never kept)."""
        if memory_id is None:
            return find()
        if memory_id not in self._kinds:
            self._kinds[memory_id] = find()
        return self._kinds[memory_id]

    def protected_facts(self, read: Callable[[], ProtectedFacts]) -> ProtectedFacts:
        """The namespace's protected facts, ``read`` the first time, then kept (the
        engine keeps them current through :meth:`held_protected`)."""
        if self._protected is None:
            self._protected = read()
        return self._protected

    def held_protected(self) -> ProtectedFacts | None:
        """The protected facts if they were read (None: nothing to keep current)."""
        return self._protected

    def novelty(self, prime: Callable[[], CentroidTracker]) -> CentroidTracker:
        """The namespace's moving centroid, ``prime``-d the first time it is asked for."""
        if self._centroid is None:
            self._centroid = prime()
        return self._centroid

    def forget_novelty(self) -> None:
        """Drop the moving centroid (primed again from what survives an erasure)."""
        self._centroid = None

    def held(self) -> int:
        """How many memories this view holds (the active ones, and what this call read)."""
        return len(self.nodes)

    def kept(self) -> int:
        """How many memories beyond the active ones this view holds (at most: some of
        those read may have become active since)."""
        return len(self._recent)

    def cards(self) -> list[tuple[str, Topic]]:
        """The cards of the active memories: the semantic and social ones that have a
        topic (:func:`~mars_core.knowledge.extract.topic_of`), oldest first; kept until one
        changes."""
        if self._cards is None:
            self._cards = [(i, topic) for i in self.order
                           if (topic := card_topic(self.nodes[i])) is not None]
        return self._cards

    def window(self, status: MemoryStatus, since: float | None,
               until: float | None) -> list[str]:
        """Ids of the memories of ``status`` created in ``[since, until]`` (timestamps;
        ``None``: open), oldest first — the temporal range index of the active ones
        (:class:`~mars_core.views.timeline.Timeline`), the history's for the archive."""
        if status is MemoryStatus.ACTIVE:
            return self.timeline.window(since, until)
        return self.history.window(status, since, until)

    def latest_episode(self, conversation: str | None) -> str | None:
        """The newest turn of a conversation (``None`` or ``""``: of none), staged ones
        included."""
        key = conversation or ""
        if key not in self.last_episode:
            found = self.history.latest_episode(conversation or None)
            if found is None:
                return None
            self.last_episode[key] = found
        return self.last_episode[key]

    def is_active(self, memory_id: str) -> bool:
        """The memory exists here and is active."""
        return memory_id in self.order

    def is_active_goal(self, memory_id: str) -> bool:
        """An active task whose goal is pending or active."""
        if not self.is_active(memory_id):
            return False
        node = self.nodes[memory_id]
        return isinstance(node.payload, TaskPayload) and node.payload.status in _LIVE_GOALS

    # --- changes -----------------------------------------------------------------------

    def apply_put(self, node: MemoryNode, edges: Iterable[Edge] = (), *,
                  new: bool = False) -> Notice:
        """A staged insert (``new``) or change of a memory (status transitions
        included); returns what the policy is to be told of it. A change of a memory this
        view does not hold reads its last version first."""
        if not new and node.id not in self.nodes and node.id not in self._absent:
            self.read([node.id])
        old = self.nodes.get(node.id)
        was = old.status if old is not None else None
        if node.type in _CARD_TYPES or (old is not None and old.type in _CARD_TYPES):
            self._cards = None
        if was is MemoryStatus.ACTIVE and old is not None:
            self._unindex(old)
        elif was is MemoryStatus.ARCHIVED:
            self.archived -= 1
        self._absent.discard(node.id)
        self.nodes[node.id] = node
        if node.is_active:
            self._recent.pop(node.id, None)
            self._others.discard(node.id)
            self._place(node)
            self._index(node)
            if not new and was is not MemoryStatus.ACTIVE:
                self.graph.load([node.id])  # a restored memory's edges are held from now on
            self.graph.complete([node.id])
        else:
            self.archived += 1
            self.known.remove(node.id)
            if node.id not in self._recent:
                self._others.add(node.id)
            self._read_more = True
        if node.type is MemoryType.EPISODIC:
            self._track_episode(node)
        for edge in edges:
            self.graph.add(edge)
        return Notice.of(was, old, node)

    def apply_stats(self, node: MemoryNode) -> Notice:
        """A staged access: new statistics (count, last access, recency) of a memory
        this view holds. Nothing a statistic does not change is touched — its place in
        the order, the temporal index, the ledger, the known facts — and the policy is
        to hear of it as an access (an active memory whose recency moved).

        Raises:
            NotFoundError: the view holds no such memory.
        """
        old = self.nodes.get(node.id)
        if old is None:
            raise NotFoundError(f"no memory with id {node.id!r}")
        self.nodes[node.id] = node
        moved = node.is_active and node.touch_seq != old.touch_seq
        return Notice("access" if moved else None, node)

    def _place(self, node: MemoryNode) -> None:
        """Put ``node`` in the active order, keeping ``seq`` order."""
        order = self.order
        order.pop(node.id, None)
        if not order or self.nodes[next(reversed(order))].seq < node.seq:
            order[node.id] = None
            return
        merged = sorted([*order, node.id], key=lambda i: self.nodes[i].seq)
        order.clear()
        order.update(dict.fromkeys(merged))

    def apply_delete(self, node: MemoryNode) -> Notice:
        """A staged erasure of a memory; returns what the policy is to be told of it."""
        held = self.nodes.pop(node.id, None)
        self._recent.pop(node.id, None)
        self._others.discard(node.id)
        status = (held or node).status
        if node.type in _CARD_TYPES:
            self._cards = None
        self._kinds.pop(node.id, None)
        self._vectors.pop(node.id, None)
        change = Notice(None, node)
        if node.id in self.order:
            del self.order[node.id]
            self._unindex(held or node)
            change = Notice("remove", held or node)
        elif status is MemoryStatus.ARCHIVED:
            self.archived -= 1
        self._absent.add(node.id)
        self.graph.remove_node(node.id)
        for conv in [c for c, i in self.last_episode.items() if i == node.id]:
            del self.last_episode[conv]  # read again when asked (after the erasure commits)
        return change

    def _track_episode(self, node: MemoryNode) -> None:
        conv = node.provenance.conversation_id or ""
        last = self.latest_episode(conv)
        before = self.get(last) if last is not None and last != node.id else None
        if before is None or before.seq <= node.seq:
            self.last_episode[conv] = node.id

    def _index(self, node: MemoryNode, *, timeline: bool = True) -> None:
        if timeline:
            self.timeline.add(*_entry(node))
        self.ledger.add(self.name, node.type, node.weight)
        self.known.add(node)

    def _unindex(self, node: MemoryNode) -> None:
        self.order.pop(node.id, None)
        self.timeline.remove(node.id)
        self.ledger.remove(self.name, node.type, node.weight)
        self.known.remove(node.id)

    def view(self, budget: int, now: datetime, rng: random.Random, *, step: int | None = None,
             io: PolicyIO | None = None) -> NamespaceView:
        """A read-only policy view (``step``: a staged counter value)."""
        return NamespaceView(self, budget, now, rng, step, io or ViewIO.empty())


class _Either:
    """Two id collections as one, for membership only (nothing copied)."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: Container[str], b: Container[str]) -> None:
        self._a, self._b = a, b

    def __contains__(self, item: object) -> bool:
        return item in self._a or item in self._b


@dataclass(frozen=True)
class Notice:
    """What a namespace's policy is to hear of one staged change (``None``: nothing —
    the policy tracks the active memories only).

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> node = MemoryNode(id="m1", type="episodic", content="hi", weight=1)
        >>> Notice.of(None, None, node).hook
        'insert'
    """

    hook: Literal["insert", "access", "update", "remove"] | None
    node: MemoryNode

    @staticmethod
    def of(was: MemoryStatus | None, old: MemoryNode | None, node: MemoryNode) -> Notice:
        """The change from ``old`` (of status ``was``; None: new) to ``node``."""
        if (was is MemoryStatus.ACTIVE) != node.is_active:
            return Notice("insert" if node.is_active else "remove", node)
        if node.is_active and old is not None and node.touch_seq != old.touch_seq:
            return Notice("access", node)
        return Notice("update" if node.is_active else None, node)  # metadata only

    def tell(self, policy: Policy) -> None:
        """Call the policy's hook for this change (none for ``None``)."""
        if self.hook == "insert":
            policy.on_insert(self.node)
        elif self.hook == "access":
            policy.on_access(self.node)
        elif self.hook == "update":
            policy.on_update(self.node)
        elif self.hook == "remove":
            policy.on_remove(self.node)


class PolicyIO(Protocol):
    """What a policy's view reads beyond the namespace's views: stored vectors, the
    embedder and the token counter (the engine implements it; :class:`ViewIO` for
    tests and examples)."""

    def vectors(self, state: NamespaceState,
                ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length stored vectors of memories of ``state``, one row per id (zero
        rows for unknown ids)."""
        ...

    def embed_rows(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embeddings of texts, rows L2-normalised."""
        ...

    def count_tokens(self, text: str) -> int:
        """The weight a text would have as a memory."""
        ...


@dataclass(frozen=True)
class ViewIO:
    """A :class:`PolicyIO` of plain functions, for tests and examples: ``read`` (ids →
    vectors), ``embed`` (texts → vectors) and ``count`` (text → tokens).

    Examples:
        >>> ViewIO.empty().count_tokens("two words")
        2
    """

    read: Callable[[Sequence[str]], npt.NDArray[np.float32]]
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]]
    count: Callable[[str], int]

    @staticmethod
    def empty() -> ViewIO:
        """A view IO for tests of policies that need no vectors (vectors are zero)."""
        return ViewIO(lambda ids: np.zeros((len(ids), 1), dtype=np.float32),
                      lambda texts: np.zeros((len(texts), 1), dtype=np.float32),
                      lambda text: max(1, len(text.split())))

    def vectors(self, state: NamespaceState,
                ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """``read(ids)`` (any namespace)."""
        return self.read(ids)

    def embed_rows(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``embed(texts)``."""
        return self.embed(texts)

    def count_tokens(self, text: str) -> int:
        """``count(text)``."""
        return self.count(text)


@dataclass
class NamespaceView:
    """The :class:`~mars_core.policies.plan.PolicyView` of one namespace."""

    state: NamespaceState
    budget: int
    now: datetime
    rng: random.Random
    staged_step: int | None = None
    io: PolicyIO = field(default_factory=ViewIO.empty)

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
        return (self.state.nodes[i] for i in self.state.active_ids())

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
        return self.io.vectors(self.state, ids)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts (rows L2-normalised)."""
        return self.io.embed_rows(texts)

    def count_tokens(self, text: str) -> int:
        """Weight a text would have as a memory."""
        return self.io.count_tokens(text)

    def goal_vector(self) -> npt.NDArray[np.float32] | None:
        """Mean embedding of the namespace's active goals (None without goals)."""
        goals = [i for i in self.state.active_ids() if self.state.is_active_goal(i)]
        if not goals:
            return None
        mean = self.vectors(goals).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None


def _entry(node: MemoryNode) -> tuple[str, float, int]:
    """A memory's place on the timeline: id, creation timestamp, sequence number."""
    return node.id, _stamp(node), node.seq


def _stamp(node: MemoryNode) -> float:
    """Where a memory sits in time (its creation, as the vector index's ``created_ts``
    field)."""
    return node.created_at.timestamp()


def card_topic(node: MemoryNode) -> Topic | None:
    """The topic of a memory that is a card (a semantic or social memory with one)."""
    return topic_of(node.type, node.payload) if node.type in _CARD_TYPES else None
