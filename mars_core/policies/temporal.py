"""Temporal policies: FIFO and LRU (seed 000 §3.3.1, §5.3, Table 1).

FIFO forgets the oldest memories first (a sliding window over creation order); LRU
forgets the least recently *used* first (insert or access, kept as a hash-linked list:
O(1) per update, O(k) per trigger). Under ``U(S) = Σ v e^{-λ age}`` with equal values
and weights, LRU's order is the utility-optimal eviction order (seed 000 §3.4.3).

Examples:
    >>> from mars_core.policies import make_policy
    >>> make_policy("lru").name
    'lru'
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Iterator

from mars_core.model import MemoryNode
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import Candidate, PolicyView

__all__ = ["FIFOPolicy", "LRUPolicy"]


class _OrderedPolicy(Policy):
    """A per-namespace ordered set (hash-linked list); the front is forgotten first."""

    move_on_access = False

    def replay_key(self, node: MemoryNode) -> tuple[int, ...]:
        """Replay in the order memories (re)entered the active store."""
        return (node.activated_seq, node.seq)

    def __init__(self) -> None:
        self._order: dict[str, OrderedDict[str, None]] = defaultdict(OrderedDict)

    def on_insert(self, node: MemoryNode) -> None:
        order = self._order[node.namespace]
        order[node.id] = None
        order.move_to_end(node.id)

    def on_access(self, node: MemoryNode) -> None:
        if self.move_on_access and node.id in self._order[node.namespace]:
            self._order[node.namespace].move_to_end(node.id)

    def on_remove(self, node: MemoryNode) -> None:
        self._order[node.namespace].pop(node.id, None)

    def _reason(self, view: PolicyView, node: MemoryNode) -> str:
        raise NotImplementedError  # pragma: no cover - subclasses define it

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        for node_id in self._order[view.namespace]:
            node = view.node(node_id)
            age = view.step - node.step
            yield Candidate(node_id, float(-node.touch_seq),
                            {"age_steps": float(age), "touch_seq": float(node.touch_seq),
                             "access_count": float(node.access_count)},
                            self._reason(view, node))


@register("fifo")
class FIFOPolicy(_OrderedPolicy):
    """First in, first out: the oldest memory is forgotten first.

    Examples:
        >>> FIFOPolicy().name
        'fifo'
    """

    def _reason(self, view: PolicyView, node: MemoryNode) -> str:
        return f"oldest first: created at step {node.step} ({view.step - node.step} steps ago)"


@register("lru")
class LRUPolicy(_OrderedPolicy):
    """Least recently used first (insert or access counts as a use).

    Examples:
        >>> LRUPolicy().name
        'lru'
    """

    move_on_access = True

    def replay_key(self, node: MemoryNode) -> tuple[int, ...]:
        """Replay in recency order (the LRU list), restoring it exactly after reopen."""
        return (node.touch_seq, node.seq)

    def _reason(self, view: PolicyView, node: MemoryNode) -> str:
        last = node.last_access_step if node.last_access_step is not None else node.step
        return (f"least recently used: last used at step {last} "
                f"({view.step - last} steps ago), {node.access_count} accesses")
