"""Random-Drop: evict uniformly at random among feasible leaves (seed 000 §4.2, control).

Seed 000 §4.2 describes a "reservoir-style baseline that evicts uniformly at random among
feasible leaves", O(1) per decision. Here each draw picks the ``k``-th memory, ``k``
uniform, of the namespace's active memories in activation order, with the store's seeded
generator (``view.rng``): the same seed and the same operations give the same evictions.
The draw is without replacement within one trigger, and the template skips memories it
may not evict yet (pinned, task-protected, non-leaves), so the first memory taken is
uniform among the feasible leaves (rejection sampling).

Why rank-in-activation-order and not a swap-remove array: a swap-remove array's layout
depends on the whole history of removals, which a reopened store cannot see, so the same
random number would name a different memory after a reopen. The rank of a memory among
the active ones in activation order is a function of the active set alone, and the
policy rebuilds it exactly on open (``replay_key`` = activation order). It is kept in a
slot array with a Fenwick tree of occupied slots: O(log n) per insert, removal and draw
(17 steps at n = 100k), holes compacted in amortised O(1).

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> def run(seed):
    ...     store = MemoryStore(budget=12, policy="random", seed=seed, clock=FakeClock())
    ...     ids = [store.add(f"memory number {i}").id for i in range(8)]
    ...     gone = [i for i, x in enumerate(ids) if not store.get(x).is_active]
    ...     store.close()
    ...     return gone
    >>> run(7) == run(7)
    True
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from mars_core.model import MemoryNode
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import Candidate, PolicyView

__all__ = ["RandomDropPolicy"]


class _Fenwick:
    """Counts of occupied slots: prefix sums and ``k``-th occupied slot in O(log n)."""

    __slots__ = ("_n", "_top", "_tree")

    def __init__(self, occupied: list[bool]) -> None:
        n = len(occupied)
        tree = [0] * (n + 1)
        for i, full in enumerate(occupied, 1):
            tree[i] += int(full)
            parent = i + (i & -i)
            if parent <= n:
                tree[parent] += tree[i]
        self._n, self._tree = n, tree
        self._top = 1 << max(0, n.bit_length() - 1) if n else 0

    def add(self, index: int, delta: int) -> None:
        """Add ``delta`` to slot ``index`` (0-based)."""
        i, tree, n = index + 1, self._tree, self._n
        while i <= n:
            tree[i] += delta
            i += i & -i

    def find(self, k: int) -> int:
        """The 0-based slot of the ``k``-th (0-based) occupied slot."""
        pos, rest, bit, tree, n = 0, k, self._top, self._tree, self._n
        while bit:
            nxt = pos + bit
            if nxt <= n and tree[nxt] <= rest:
                pos, rest = nxt, rest - tree[nxt]
            bit >>= 1
        return pos


class _Pool:
    """The active memories of one namespace, in activation order, for uniform draws."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[int, int]] = {}
        self.slots: list[str | None] = []
        self.pos: dict[str, int] = {}
        self.tree = _Fenwick([])
        self.capacity = 0
        self.holes = 0
        self.last: tuple[int, int] | None = None
        self.unsorted = False
        self.hidden: list[int] = []

    def __len__(self) -> int:
        return len(self.keys)

    def settle(self) -> None:
        """Put back the memories drawn (and not evicted) at the last trigger."""
        for slot in self.hidden:
            self.tree.add(slot, 1)
        self.hidden.clear()

    def add(self, node: MemoryNode) -> None:
        self.settle()
        key = (node.activated_seq, node.seq)
        self.keys[node.id] = key
        if self.unsorted:
            return
        if self.last is not None and key < self.last:
            self.unsorted = True  # out of order (an import): rebuilt at the next draw
            return
        if len(self.slots) >= self.capacity:
            self.slots.append(node.id)
            self.pos[node.id] = len(self.slots) - 1
            self._rebuild(sort=False)
        else:
            self.slots.append(node.id)
            self.pos[node.id] = len(self.slots) - 1
            self.tree.add(len(self.slots) - 1, 1)
        self.last = key

    def remove(self, node_id: str) -> None:
        self.settle()
        if self.keys.pop(node_id, None) is None:
            return
        slot = self.pos.pop(node_id, None)
        if slot is None:
            return
        self.slots[slot] = None
        self.tree.add(slot, -1)
        self.holes += 1
        if self.holes > max(64, len(self.keys)):
            self._rebuild(sort=False)

    def _rebuild(self, sort: bool) -> None:
        if sort:
            live: list[str | None] = [*sorted(self.keys, key=self.keys.__getitem__)]
        else:
            live = [s for s in self.slots if s is not None]
        self.capacity = max(64, 2 * len(live))
        self.slots = live
        self.pos = {node_id: i for i, node_id in enumerate(live) if node_id is not None}
        self.tree = _Fenwick([True] * len(live) + [False] * (self.capacity - len(live)))
        self.holes, self.unsorted, self.hidden = 0, False, []
        last = live[-1] if live else None
        self.last = self.keys[last] if last is not None else None

    def draw(self, rng: random.Random) -> tuple[str, int] | None:
        """A memory not drawn yet in this trigger, uniformly; and the pool size it came from."""
        if self.unsorted:
            self._rebuild(sort=True)
        available = len(self.keys) - len(self.hidden)
        if available <= 0:
            return None
        slot = self.tree.find(rng.randrange(available))
        self.tree.add(slot, -1)
        self.hidden.append(slot)
        node_id = self.slots[slot]
        assert node_id is not None
        return node_id, available


@register("random")
class RandomDropPolicy(Policy):
    """Uniform random eviction among feasible leaves, from the store's seeded generator.

    Examples:
        >>> RandomDropPolicy().name
        'random'
    """

    def __init__(self) -> None:
        self._pools: dict[str, _Pool] = {}

    def params(self) -> dict[str, Any]:
        """Recorded in every eviction event."""
        return {"selection": "uniform", "generator": "store seed"}

    def replay_key(self, node: MemoryNode) -> tuple[int, ...]:
        """Replay in activation order, the order the draws index."""
        return (node.activated_seq, node.seq)

    def _pool(self, namespace: str) -> _Pool:
        if namespace not in self._pools:
            self._pools[namespace] = _Pool()
        return self._pools[namespace]

    def on_insert(self, node: MemoryNode) -> None:
        self._pool(node.namespace).add(node)

    def on_remove(self, node: MemoryNode) -> None:
        self._pool(node.namespace).remove(node.id)

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        pool = self._pool(view.namespace)
        pool.settle()
        draw = 0
        while (picked := pool.draw(view.rng)) is not None:
            node_id, available = picked
            draw += 1
            reason = (f"uniform random draw (control baseline, seed 000 §4.2): draw {draw}, "
                      f"one of {available:,} memories not drawn yet, each with probability "
                      f"{1 / available:.4f}")
            yield Candidate(node_id, 1.0 / available,
                            {"draw": float(draw), "pool": float(available),
                             "probability": 1.0 / available}, reason)

    def activation_order(self, namespace: str) -> list[str]:
        """The namespace's active ids in the order draws index them (for tests)."""
        pool = self._pool(namespace)
        pool.settle()
        if pool.unsorted:
            return sorted(pool.keys, key=pool.keys.__getitem__)
        return [s for s in pool.slots if s is not None]
