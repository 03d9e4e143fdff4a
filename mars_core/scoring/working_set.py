"""Cached working set of a namespace: column views, vectors and bounded, incremental novelty.

The density-ranked policies (Reflection-Summary's eviction stage, Hybrid's importance
pass, the meta-controller when it plays them) score *every* active memory at a trigger.
Done from scratch, a trigger re-read every node object, re-fetched every vector from the
backend and computed novelty over all pairs: O(n²·d), 3.3 s at n = 10k and 158 s at
100k. Seed 000 §3.2.5 asks for "lightweight views ... updated incrementally" and §5.3
for a density "computed and updated in constant amortised time per event using cached
features and counters". :class:`WorkingSetCache` is that view, kept per namespace by the
policy hooks (``on_insert``/``on_access``/``on_update``/``on_remove``):

* **columns** — type, step, sequence, access count, sensitivity, weight, depth and pin
  of every active memory, in numpy arrays (slots reused through a free list), so a
  trigger computes ψ and the density with a handful of vectorised operations;
* **vectors** — the L2-normalised embedding of each active memory, fetched from the
  backend once, when the memory is first scored (only the memories new since the last
  trigger are fetched). A probe re-reads one cached vector at every trigger and drops
  the whole cache when it changed (``store.reembed`` swaps every vector at once);
* **novelty** against a bounded working set (below).

**The novelty approximation.** Seed 000 §5.3 defines novelty "relative to the current
working set". Here the working set ``R`` is the ``novelty_window`` (W, default 1,024)
most recently written active memories of the namespace (highest sequence numbers), and

    novelty(i) = 1 − max(0, max_{j ∈ R, j ≠ i} cos(φ_i, φ_j))

— 1 for a memory unlike everything the agent has recently seen, 0 for a duplicate of one
of them. With n ≤ W active memories, R is the whole namespace and the value equals the
exact all-pairs :func:`~mars_core.scoring.density.novelty_batch` (tested, to 1e-6: the
vectors are cached in float32). Beyond W, a memory is no longer compared with old
memories outside R: two old near-duplicates outside the window both look novel
(duplicates are what ``store.maintain()``'s deduplication at cosine 0.92 removes).

It is maintained incrementally: each memory keeps its best similarity to R and *which*
member gave it. When R changes (a memory is written, the oldest member leaves R, a member
is evicted), only the memories whose best member left R are recomputed against all of R
(O(W·d) each, about n/W of them per new write when best members are spread evenly), the
others are compared with the members that joined (O(d) each); memories seen for the
first time are compared with all of R. A trigger after k writes therefore costs
O(n·k·d + (n/W)·W·d) = O(n·(k+1)·d) instead of O(n²·d), and the first trigger after an
open O(n·W·d). Similarities are computed in float64 and the novelty is rounded to 1e-9,
so the incremental values and a full recomputation (what a reopened store does) agree.

Examples:
    >>> import numpy as np
    >>> from datetime import UTC, datetime
    >>> from mars_core.model import MemoryNode, MemoryType
    >>> vecs = {"a": [1.0, 0.0], "b": [1.0, 0.0], "c": [0.0, 1.0]}
    >>> class View:                           # the few things the cache reads
    ...     namespace, step, count, now = "ns", 3, 3, datetime(2026, 1, 1, tzinfo=UTC)
    ...     def vectors(self, ids):
    ...         return np.array([vecs[i] for i in ids], dtype=np.float32)
    >>> cache = WorkingSetCache(window=8)
    >>> for k, nid in enumerate("abc"):
    ...     cache.on_insert(MemoryNode(id=nid, type=MemoryType.EPISODIC, content=nid,
    ...                                weight=1, namespace="ns", step=k, seq=k))
    >>> ws = cache.refresh(View())
    >>> ws.ids(), ws.novelty().tolist()
    (['a', 'b', 'c'], [0.0, 0.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mars_core.errors import ValidationError
from mars_core.model import Edge, MemoryNode, MemoryType, Predicate, TaskPayload, TaskStatus
from mars_core.scoring.density import (
    DensityConfig,
    SparseAdjacency,
    density_batch,
    payload_urgency,
)

__all__ = [
    "DEFAULT_NOVELTY_WINDOW",
    "NamespaceWorkingSet",
    "ScoringView",
    "VectorSource",
    "WorkingSetCache",
    "WorkingSetScores",
    "score_working_set",
]

DEFAULT_NOVELTY_WINDOW = 1024
"""W: size of the working set novelty is measured against (exact for n ≤ W)."""

_TYPES: tuple[MemoryType, ...] = tuple(MemoryType)
_TASK = _TYPES.index(MemoryType.TASK)
_LINKABLE = (MemoryType.EPISODIC, MemoryType.SEMANTIC)
_LINKABLE_IDX = np.array([_TYPES.index(t) for t in _LINKABLE], np.int64)
_LIVE_GOALS = (TaskStatus.PENDING, TaskStatus.ACTIVE)
_CHUNK = 1024
_ROUND = 9
_REFINE = 1e-4   # float32 products are within ~1e-6 of float64 for unit vectors
_FEW = 16        # more near-ties than this in a row: recompute the row whole
_THIN = 64       # up to this many rows, products are computed row by row
_PROBE_TOL = 1e-6
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _products(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a @ b.T``; with few rows as matrix–vector products: a multi-threaded BLAS spends
    far longer on a thin matrix product than on the arithmetic when cores are busy."""
    if a.shape[0] > _THIN:
        full: npt.NDArray[Any] = a @ b.T
        return full
    if a.shape[0] == 0:
        return np.zeros((0, b.shape[0]), dtype=np.result_type(a, b))
    return np.stack([b @ row for row in a])


class VectorSource(Protocol):
    """What the cache reads from a policy view: the namespace, its clock and vectors."""

    now: datetime

    @property
    def namespace(self) -> str:
        """The namespace."""
        ...

    @property
    def step(self) -> int:
        """The namespace's interaction counter."""
        ...

    @property
    def count(self) -> int:
        """Active memories in the namespace."""
        ...

    def active(self) -> Iterable[MemoryNode]:
        """Active memories of the namespace."""
        ...

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalised embeddings of active memories, one row per id."""
        ...


class _Graph(Protocol):
    def out_edges(self, node_id: str, predicate: Predicate | None = None) -> list[Edge]: ...


class ScoringView(VectorSource, Protocol):
    """A :class:`VectorSource` that also reads nodes and the graph (a policy view)."""

    @property
    def graph(self) -> _Graph:
        """The memory graph."""
        ...

    def node(self, node_id: str) -> MemoryNode:
        """A memory by id (its current metadata)."""
        ...


class NamespaceWorkingSet:
    """The cached columns, vectors and novelty state of one namespace.

    Built and kept current by :class:`WorkingSetCache`; read at a trigger after
    :meth:`WorkingSetCache.refresh`. Arrays returned by the readers are aligned with
    :meth:`slots` (active memories in slot order, not creation order).
    """

    def __init__(self, window: int) -> None:
        self.window = window
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._nodes: list[MemoryNode | None] = []
        self._tasks: dict[str, None] = {}
        cap = 16
        self._seq = np.zeros(cap, np.int64)
        self._step = np.zeros(cap, np.int64)
        self._type = np.zeros(cap, np.int64)
        self._count = np.zeros(cap, np.float64)
        self._sens = np.zeros(cap, np.float64)
        self._weight = np.ones(cap, np.float64)
        self._depth = np.zeros(cap, np.int64)
        self._pinned = np.zeros(cap, bool)
        self._active = np.zeros(cap, bool)
        self._has_vec = np.zeros(cap, bool)
        self._vec: npt.NDArray[np.float32] | None = None
        self._best = np.full(cap, -np.inf)
        self._arg = np.full(cap, -1, np.int64)      # sequence number of the best member
        self._scored = np.zeros(cap, bool)
        self._ref = np.zeros(0, np.int64)            # sequence numbers of R at the last refresh
        self.recomputed = 0                          # rows compared with all of R (tests)
        self._linked = np.zeros(cap, bool)           # temporal links computed for the slot
        self._by_step: dict[int, set[int]] = {}      # step -> slots of linkable memories
        self._links: dict[int, set[int]] = {}        # seq -> linked seqs
        self._link_cfg: tuple[int, float] | None = None
        self._slots: IntArray | None = None          # active slots, until the next change
        self.version = 0                             # bumped by every put and remove
        self.refreshed: int | None = None            # version at the last full refresh

    # --- slots -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot)

    def _grow(self, need: int) -> None:
        cap = self._seq.shape[0]
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("_seq", "_step", "_type", "_count", "_sens", "_weight", "_depth",
                     "_pinned", "_active", "_has_vec", "_best", "_arg", "_scored", "_linked"):
            old = getattr(self, name)
            fill = {"_weight": 1.0, "_best": -np.inf, "_arg": -1}.get(name, 0)
            arr = np.full(new, fill, dtype=old.dtype)
            arr[:cap] = old
            setattr(self, name, arr)
        if self._vec is not None:
            vec = np.zeros((new, self._vec.shape[1]), np.float32)
            vec[:cap] = self._vec
            self._vec = vec

    def put(self, node: MemoryNode) -> None:
        """Insert a memory, or update the columns of one already held (same content)."""
        slot = self._slot.get(node.id)
        self._slots = None
        self.version += 1
        if slot is None:
            slot = self._free.pop() if self._free else len(self._nodes)
            if slot == len(self._nodes):
                self._nodes.append(None)
                self._grow(slot + 1)
            self._slot[node.id] = slot
            self._has_vec[slot] = self._scored[slot] = self._linked[slot] = False
            self._best[slot], self._arg[slot] = -np.inf, -1
            if node.type in _LINKABLE:
                self._by_step.setdefault(node.step, set()).add(slot)
        self._nodes[slot] = node
        self._seq[slot], self._step[slot] = node.seq, node.step
        self._type[slot] = _TYPES.index(node.type)
        self._count[slot], self._sens[slot] = node.access_count, node.sensitivity
        self._weight[slot], self._depth[slot] = node.weight, node.depth
        self._pinned[slot], self._active[slot] = node.pinned, True
        if node.type is MemoryType.TASK:
            self._tasks[node.id] = None

    def remove(self, node_id: str) -> None:
        """Forget a memory that left the active set (a no-op when unknown)."""
        slot = self._slot.pop(node_id, None)
        if slot is None:
            return
        self._slots = None
        self.version += 1
        self._nodes[slot] = None
        self._active[slot] = self._has_vec[slot] = self._scored[slot] = False
        self._linked[slot] = False
        self._tasks.pop(node_id, None)
        bucket = self._by_step.get(int(self._step[slot]))
        if bucket is not None:
            bucket.discard(slot)
            if not bucket:
                del self._by_step[int(self._step[slot])]
        seq = int(self._seq[slot])
        for other in self._links.pop(seq, ()):
            self._links.get(other, set()).discard(seq)
        self._free.append(slot)

    def slots(self) -> IntArray:
        """Slots of the active memories (the row order of every reader)."""
        if self._slots is None:
            self._slots = np.flatnonzero(self._active[:len(self._nodes)]).astype(np.int64)
        return self._slots

    # --- readers ---------------------------------------------------------------------------

    def nodes(self) -> list[MemoryNode]:
        """The active memories, in :meth:`slots` order."""
        table = self._nodes
        return [table[s] for s in self.slots().tolist()]

    def nodes_of(self, slots: IntArray) -> list[MemoryNode]:
        """The memories held in ``slots`` (active slots only)."""
        table = self._nodes
        return [table[s] for s in slots.tolist()]

    def ids(self) -> list[str]:
        """Ids of the active memories, in :meth:`slots` order."""
        return [n.id for n in self.nodes()]

    def column(self, name: str) -> npt.NDArray[Any]:
        """One column over the active memories: ``seq``, ``step``, ``type`` (index into
        ``MemoryType``), ``count``, ``sens``, ``weight``, ``depth`` or ``pinned``."""
        if name not in ("seq", "step", "type", "count", "sens", "weight", "depth", "pinned"):
            raise ValidationError(f"unknown working-set column {name!r}")
        arr: npt.NDArray[Any] = getattr(self, f"_{name}")[self.slots()]
        return arr

    def vectors(self, slots: IntArray | None = None) -> npt.NDArray[np.float32]:
        """Cached unit vectors of ``slots`` (default: every active memory)."""
        rows = self.slots() if slots is None else slots
        if self._vec is None:
            return np.zeros((rows.shape[0], 0), np.float32)
        return self._vec[rows]

    def novelty(self) -> FloatArray:
        """Novelty of every active memory against the working set (after a refresh)."""
        best = self._best[self.slots()]
        out: FloatArray = np.round(1.0 - np.clip(best, 0.0, 1.0), _ROUND)
        return out

    def task_nodes(self) -> list[str]:
        """Ids of the active task memories (goals live or closed)."""
        return list(self._tasks)

    def slot_of(self, node_id: str) -> int:
        """The slot of an active memory."""
        return self._slot[node_id]

    def slots_of(self, ids: Iterable[str]) -> IntArray:
        """Slots of those ``ids`` that are active memories (unknown ids are skipped)."""
        found = [self._slot[i] for i in ids if i in self._slot]
        return np.asarray(found, np.int64)

    # --- vectors ---------------------------------------------------------------------------

    def _store_vectors(self, slots: IntArray, rows: npt.ArrayLike) -> None:
        x = np.asarray(rows, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] != slots.shape[0]:
            raise ValidationError(f"vectors have shape {x.shape} for {slots.shape[0]} memories")
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32)
        if self._vec is None or self._vec.shape[1] != unit.shape[1]:
            self._reset_vectors(unit.shape[1])
        assert self._vec is not None
        self._vec[slots] = unit
        self._has_vec[slots] = True

    def _reset_vectors(self, dim: int) -> None:
        self._vec = np.zeros((self._seq.shape[0], dim), np.float32)
        self._has_vec[:] = self._scored[:] = self._linked[:] = False
        self._ref = np.zeros(0, np.int64)
        self._links.clear()

    # --- temporal links (Reflection-Summary's clustering) -------------------------------

    def temporal_links(self, window: int, threshold: float) -> dict[int, set[int]]:
        """Links between episodic/semantic memories at most ``window`` steps apart whose
        cached vectors have cosine ≥ ``threshold``, as ``seq -> linked seqs``.

        Computed once per memory, against the memories already linked within its step
        window (O(window·memories per step·d) each), and kept until one side leaves; a
        change of ``window`` or ``threshold`` recomputes them all. Call after a refresh.
        """
        if self._link_cfg != (window, threshold):
            self._link_cfg = (window, threshold)
            self._links.clear()
            self._linked[:] = False
        assert self._vec is not None or not self._slot
        slots = self.slots()
        todo = slots[~self._linked[slots] & np.isin(self._type[slots], _LINKABLE_IDX)]
        for s in todo[np.argsort(self._seq[todo], kind="stable")].tolist():
            self._link_one(s, window, threshold)
        return self._links

    def _link_one(self, slot: int, window: int, threshold: float) -> None:
        assert self._vec is not None
        step = int(self._step[slot])
        near = [x for t in range(step - window, step + window + 1)
                for x in self._by_step.get(t, ()) if self._linked[x]]
        if near:
            cols = np.asarray(sorted(near), np.int64)
            sims = self._vec[cols] @ self._vec[slot]
            seq = int(self._seq[slot])
            for other in self._seq[cols[sims >= threshold]].tolist():
                self._links.setdefault(seq, set()).add(other)
                self._links.setdefault(other, set()).add(seq)
        self._linked[slot] = True

    def slot_of_seq(self, seqs: Sequence[int]) -> IntArray:
        """Slots of active memories given their sequence numbers (-1 when not active)."""
        slots = self.slots()
        order = np.argsort(self._seq[slots])
        keys = self._seq[slots][order]
        q = np.asarray(seqs, np.int64)
        at = np.clip(np.searchsorted(keys, q), 0, max(0, keys.size - 1))
        found = keys.size > 0
        hit = (keys[at] == q) if found else np.zeros(q.shape, bool)
        return np.where(hit, slots[order][at] if found else -1, -1).astype(np.int64)

    def _probe(self, view: VectorSource, slots: IntArray) -> None:
        """Drop every cached vector when one of them changed in the backend (re-embedding)."""
        held = slots[self._has_vec[slots]]
        if held.size == 0 or self._vec is None:
            return
        slot = int(held[0])
        node = self._nodes[slot]
        assert node is not None
        fresh = np.asarray(view.vectors([node.id]), dtype=np.float64)
        norm = float(np.linalg.norm(fresh))
        same = fresh.shape == (1, self._vec.shape[1]) and np.allclose(
            fresh[0] / (norm if norm > 0 else 1.0), self._vec[slot], atol=_PROBE_TOL)
        if not same:
            self._reset_vectors(fresh.shape[-1])

    def fetch_vectors(self, view: VectorSource) -> None:
        """Fetch the vectors of memories not cached yet (after the probe)."""
        slots = self.slots()
        self._probe(view, slots)
        missing = slots[~self._has_vec[slots]]
        if missing.size:
            ids = [self._nodes[s].id for s in missing.tolist()]
            self._store_vectors(missing, view.vectors(ids))

    # --- novelty ---------------------------------------------------------------------------

    def _reference(self, slots: IntArray) -> IntArray:
        """R: the ``window`` active slots with the highest sequence numbers."""
        if slots.shape[0] <= self.window:
            return slots
        part = np.argpartition(self._seq[slots], -self.window)[-self.window:]
        return np.sort(slots[part])

    def _exact_best(self, rows: IntArray, cols: IntArray, sims: npt.NDArray[np.float32]
                    ) -> tuple[FloatArray, IntArray]:
        """Best float64 similarity of each row among ``cols`` and the member's seq.

        ``sims`` are the float32 products (self-pairs already -inf): only the pairs within
        ``_REFINE`` of a row's float32 maximum are recomputed in float64, so the result is
        the exact float64 maximum whatever the batch shape (rows with many near-ties are
        recomputed whole).
        """
        assert self._vec is not None
        best = np.full(rows.shape[0], -np.inf)
        arg = np.full(rows.shape[0], -1, np.int64)
        top = sims.max(axis=1) if sims.shape[1] else np.full(rows.shape[0], -np.inf)
        near = np.isfinite(sims) & (sims >= (top - _REFINE)[:, None])
        crowded = near.sum(axis=1) > _FEW
        many = np.flatnonzero(crowded)
        if many.size:
            exact = _products(self._vec[rows[many]].astype(np.float64),
                              self._vec[cols].astype(np.float64))
            exact[~np.isfinite(sims[many])] = -np.inf
            k = exact.argmax(axis=1)
            best[many] = exact[np.arange(many.size), k]
            arg[many] = np.where(np.isfinite(best[many]), self._seq[cols[k]], -1)
        r, c = np.nonzero(near & ~crowded[:, None])
        if r.size:
            exact = np.einsum("ij,ij->i", self._vec[rows[r]].astype(np.float64),
                              self._vec[cols[c]].astype(np.float64))
            order = np.lexsort((c, -exact, r))
            first = order[np.r_[True, r[order][1:] != r[order][:-1]]]
            best[r[first]], arg[r[first]] = exact[first], self._seq[cols[c[first]]]
        return best, arg

    def _masked(self, rows: IntArray, cols: IntArray, sims: npt.NDArray[np.float32]
                ) -> npt.NDArray[np.float32]:
        sims[self._seq[rows][:, None] == self._seq[cols][None, :]] = -np.inf
        return sims

    def _compare(self, rows: IntArray, ref: IntArray) -> tuple[FloatArray, IntArray]:
        """Best similarity of each row to ``ref`` (self excluded) and the member's seq."""
        assert self._vec is not None
        best = np.full(rows.shape[0], -np.inf)
        arg = np.full(rows.shape[0], -1, np.int64)
        if ref.size == 0 or rows.size == 0:
            return best, arg
        ref_x = self._vec[ref]
        for start in range(0, rows.shape[0], _CHUNK):
            part = rows[start:start + _CHUNK]
            sims = self._masked(part, ref, _products(self._vec[part], ref_x))
            best[start:start + part.size], arg[start:start + part.size] = \
                self._exact_best(part, ref, sims)
        return best, arg

    def _join(self, keep: IntArray, joined: IntArray) -> None:
        """Raise the best of ``keep`` rows where a member that joined R is more similar.

        One float32 product of every cached row with the joined members (no gather of
        the rows), then the exact float64 pass only for rows that might improve.
        """
        assert self._vec is not None
        if joined.size > _FEW:  # many writes since the last refresh: blocked products
            rows = keep
            best, arg = self._compare(keep, joined)
        else:
            m = len(self._nodes)
            sims = self._masked(keep, joined,
                                _products(self._vec[joined], self._vec[:m]).T[keep])
            maybe = np.flatnonzero(sims.max(axis=1) >= self._best[keep] - _REFINE)
            if maybe.size == 0:
                return
            rows = keep[maybe]
            best, arg = self._exact_best(rows, joined, sims[maybe])
        better = best > self._best[rows]
        self._best[rows[better]], self._arg[rows[better]] = best[better], arg[better]

    def update_novelty(self) -> None:
        """Bring every active memory's best similarity to R up to date (incrementally)."""
        slots = self.slots()
        if self._vec is None or slots.size == 0:
            self._ref = np.zeros(0, np.int64)
            return
        ref = self._reference(slots)
        ref_seq = self._seq[ref]
        left = np.setdiff1d(self._ref, ref_seq, assume_unique=True)
        joined = ref[~np.isin(ref_seq, self._ref, assume_unique=True)]
        stale = ~self._scored[slots] | np.isin(self._arg[slots], left)
        redo, keep = slots[stale], slots[~stale]
        self._best[redo], self._arg[redo] = self._compare(redo, ref)
        self.recomputed += int(redo.size)
        if joined.size and keep.size:
            self._join(keep, joined)
        self._scored[slots] = True
        self._ref = np.sort(ref_seq)


class WorkingSetCache:
    """Per-namespace :class:`NamespaceWorkingSet` views, fed by the policy hooks.

    A policy holding a cache forwards its hooks (``on_insert``, ``on_access``,
    ``on_update``, ``on_remove``) and calls :meth:`refresh` at a trigger, then reads the
    namespace's columns, vectors and novelty (module docstring: what is cached, the
    novelty approximation, the cost). :meth:`clear` forgets everything (``rebuild``).

    Args:
        window: W, the number of most recent memories novelty is measured against.

    Raises:
        ValidationError: a window below 1.

    Examples:
        >>> WorkingSetCache(window=4).window
        4
    """

    def __init__(self, window: int = DEFAULT_NOVELTY_WINDOW) -> None:
        if window < 1:
            raise ValidationError(f"the novelty window must be >= 1, got {window!r}")
        self.window = window
        self._spaces: dict[str, NamespaceWorkingSet] = {}

    def space(self, namespace: str) -> NamespaceWorkingSet:
        """The namespace's working set (created empty on first use)."""
        ws = self._spaces.get(namespace)
        if ws is None:
            ws = self._spaces[namespace] = NamespaceWorkingSet(self.window)
        return ws

    def clear(self) -> None:
        """Forget every namespace (before a rebuild)."""
        self._spaces.clear()

    def on_insert(self, node: MemoryNode) -> None:
        """A memory became active."""
        self.space(node.namespace).put(node)

    def on_access(self, node: MemoryNode) -> None:
        """A memory was accessed (new statistics)."""
        self.on_update(node)

    def on_update(self, node: MemoryNode) -> None:
        """An active memory's metadata changed (sensitivity, pin, statistics)."""
        ws = self.space(node.namespace)
        if node.id in ws._slot:
            ws.put(node)

    def on_remove(self, node: MemoryNode) -> None:
        """A memory left the active set."""
        self.space(node.namespace).remove(node.id)

    def refresh(self, view: VectorSource) -> NamespaceWorkingSet:
        """Fetch missing vectors and update novelty for ``view``'s namespace.

        When the cache holds another number of memories than the view (a policy used
        without its hooks, e.g. on a bare view), the namespace is reloaded from
        ``view.active()`` first.
        """
        ws = self.space(view.namespace)
        if len(ws) != view.count:
            ws = self._spaces[view.namespace] = NamespaceWorkingSet(self.window)
            for node in view.active():
                ws.put(node)
        if ws.refreshed != ws.version:  # nothing changed since the last refresh: skip
            ws.fetch_vectors(view)
            ws.update_novelty()
            ws.refreshed = ws.version
        return ws

    def goal_vector(self, view: VectorSource, live: Sequence[MemoryNode]
                    ) -> npt.NDArray[np.float32] | None:
        """Unit mean of the cached vectors of the live goals ``live`` (None without any),
        as :meth:`~mars_core.policies.plan.PolicyView.goal_vector` computes it."""
        ws = self.space(view.namespace)
        goals = [n for n in live if isinstance(n.payload, TaskPayload)
                 and n.payload.status in _LIVE_GOALS and n.id in ws._slot]
        if not goals:
            return None
        mean = ws.vectors(np.array([ws.slot_of(n.id) for n in goals], np.int64)).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None


@dataclass(frozen=True)
class WorkingSetScores:
    """The eq-7 density of every active memory of a namespace, from the cache.

    Rows follow :meth:`NamespaceWorkingSet.slots`; ``order`` lists the rows by increasing
    density, ties to the older memory (lower sequence number).
    """

    nodes: list[MemoryNode]
    features: FloatArray
    utility: FloatArray
    density: FloatArray
    age: FloatArray
    order: IntArray


def _centrality_edges(view: ScoringView, ws: NamespaceWorkingSet, nodes: Sequence[MemoryNode],
                      predicates: Iterable[Predicate]) -> SparseAdjacency:
    """isA/friendOf edges of the semantic and social memories (seed 000 §3.2.5
    ``E_sem ∪ E_soc``), between active memories of the namespace, as row indices (each
    edge in both directions). Only the semantic and social memories are visited."""
    wanted = frozenset(predicates)
    kinds = np.array([_TYPES.index(MemoryType.SEMANTIC), _TYPES.index(MemoryType.SOCIAL)])
    rows = np.flatnonzero(np.isin(ws.column("type"), kinds))
    src: list[int] = []
    dst: list[int] = []
    wt: list[float] = []
    if rows.size:
        slots = ws.slots()
        lookup = np.full(int(slots.max()) + 1, -1, np.int64)
        lookup[slots] = np.arange(slots.size)
        for i in rows.tolist():
            for e in view.graph.out_edges(nodes[i].id):
                target = ws.slots_of((e.target,))
                if e.predicate in wanted and target.size:
                    j = int(lookup[int(target[0])])
                    src += (i, j)
                    dst += (j, i)
                    wt += (e.weight, e.weight)
    return SparseAdjacency(len(nodes), np.array(src, np.int64), np.array(dst, np.int64),
                           np.array(wt, np.float64))


def _goal_similarity(x: npt.NDArray[np.float32], goal: npt.NDArray[np.float32]
                     ) -> FloatArray | None:
    """Cosine of unit rows to the unit goal, clipped to [0, 1] (float32 product)."""
    if x.shape[1] == 0 or goal.shape[-1] != x.shape[1]:
        return None
    return np.clip((x @ goal.reshape(-1)).astype(np.float64), 0.0, 1.0)


def score_working_set(view: ScoringView, cache: WorkingSetCache,
                      config: DensityConfig | None = None) -> WorkingSetScores:
    """Refresh the cache for ``view``'s namespace and score every active memory (eq 7).

    The same features as :func:`~mars_core.scoring.density.density_batch` over the whole
    namespace, from cached columns: recency and frequency from the columns, goal
    similarity against the unit mean of the live goals' vectors, personalised PageRank
    over the isA/friendOf edges of the semantic and social memories, the bounded
    working-set novelty (module docstring) and the urgency of task memories (read fresh:
    a task's status and deadline are metadata). Costs O(n) vectorised plus the novelty
    update, plus O(edges) of the semantic and social memories in Python.
    """
    cfg = config or DensityConfig()
    ws = cache.refresh(view)
    nodes = ws.nodes()
    tasks = [view.node(i) for i in ws.task_nodes()]
    goal = cache.goal_vector(view, tasks)
    urgency = np.zeros(len(nodes))
    if tasks:
        row = {n.id: i for i, n in enumerate(nodes)}
        for t in tasks:
            if isinstance(t.payload, TaskPayload):
                urgency[row[t.id]] = payload_urgency(t.payload, view.now,
                                                     cfg.urgency_horizon_hours)
    age = np.maximum(0, view.step - ws.column("step")).astype(np.float64)
    batch = density_batch(
        ws.column("type").astype(np.int64), age, ws.column("count"), ws.column("sens"),
        ws.column("weight"),
        goal_similarity=None if goal is None else _goal_similarity(ws.vectors(), goal),
        novelty=ws.novelty(),
        adjacency=_centrality_edges(view, ws, nodes, cfg.centrality_predicates),
        urgency=urgency, config=cfg)
    order = np.lexsort((ws.column("seq"), batch.density)).astype(np.int64)
    return WorkingSetScores(nodes, batch.features, batch.utility, batch.density, age, order)
