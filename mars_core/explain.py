"""``explain(node_id)``: the provenance chain and the audit rationale of a memory.

It works for active memories, for forgotten ones (in the archive) and for erased ones
(then only the audit events remain — they hold keyed hashes, never text).

Examples:
    >>> Explanation(node_id="x", status="unknown", node=None).render().splitlines()[0]
    'memory x: unknown'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mars_core.audit import AuditEvent, AuditLog
from mars_core.model import MemoryNode
from mars_core.state import StoreState

__all__ = ["ChainLink", "Explanation", "explain"]


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One ancestor in a provenance chain (no content, only its description)."""

    node_id: str
    type: str
    status: str
    source: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a memory is where it is.

    Attributes:
        node_id: the memory asked about.
        status: ``active``, ``archived``, ``erased`` or ``unknown``.
        node: the memory itself, when it still exists.
        provenance: its derivesFrom ancestors, nearest first.
        derived: ids of memories derived from it.
        events: the audit events that touched it, oldest first.
    """

    node_id: str
    status: str
    node: MemoryNode | None
    provenance: tuple[ChainLink, ...] = ()
    derived: tuple[str, ...] = ()
    events: tuple[AuditEvent, ...] = field(default_factory=tuple)

    @property
    def rationale(self) -> str:
        """The rationale of the latest decision about this memory."""
        return self.events[-1].rationale if self.events else ""

    def render(self) -> str:
        """A human-readable account (ids, types and rationales; no memory text)."""
        lines = [f"memory {self.node_id}: {self.status}"]
        if self.node is not None:
            n = self.node
            lines.append(f"  {n.type.value}, {n.weight} tokens, sensitivity {n.sensitivity:.2f}, "
                         f"source {n.provenance.source}, accessed {n.access_count}x")
        for link in self.provenance:
            lines.append(f"  derives from {link.node_id} ({link.type}, {link.status}, "
                         f"{link.source})")
        if self.derived:
            lines.append(f"  used by {len(self.derived)} derived memories")
        for ev in self.events:
            who = f" by {ev.policy}" if ev.policy else ""
            lines.append(f"  #{ev.seq} step {ev.step} {ev.op.value}{who}: {ev.rationale}")
        return "\n".join(lines)


def explain(state: StoreState, audit: AuditLog, node_id: str) -> Explanation:
    """Build the explanation of ``node_id`` from the views and the audit log."""
    events = tuple(audit.for_node(node_id))
    node = state.nodes.get(node_id)
    if node is None:
        status = "erased" if any(e.op.value == "erase" for e in events) else "unknown"
        return Explanation(node_id, status, None, events=events)
    chain = []
    for aid in state.graph.ancestors(node_id):
        anc = state.nodes.get(aid)
        if anc is not None:
            chain.append(ChainLink(aid, anc.type.value, anc.status.value, anc.provenance.source))
    return Explanation(node_id, node.status.value, node, tuple(chain),
                       tuple(state.graph.descendants(node_id)), events)
