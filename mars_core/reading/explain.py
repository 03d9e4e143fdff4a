"""``explain(node_id)``: the provenance chain and the audit rationale of a memory.

It works for active memories, for forgotten ones (in the archive) and for erased ones
(then only the audit events remain — they hold keyed hashes, never text).

Examples:
    >>> Explanation(node_id="x", status="unknown", node=None).render().splitlines()[0]
    'memory x: unknown'
    >>> Explanation(node_id="x", status="unknown", node=None).as_dict()["events"]
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mars_core.audit import AuditEvent
from mars_core.errors import NotFoundError
from mars_core.model import MemoryNode
from mars_core.views.namespace import NamespaceState

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

    def as_dict(self) -> dict[str, Any]:
        """The account as JSON-ready values: what :meth:`render` says, field by field (no
        memory text, no content hash; the schema of ``mars explain --json``)."""
        n = self.node
        memory = None if n is None else {
            "namespace": n.namespace, "type": n.type.value, "status": n.status.value,
            "tokens": n.weight, "sensitivity": n.sensitivity, "source": n.provenance.source,
            "uses": n.access_count, "created_at": n.created_at.isoformat()}
        return {
            "id": self.node_id, "status": self.status, "memory": memory,
            "derives_from": [{"id": c.node_id, "type": c.type, "status": c.status,
                              "source": c.source} for c in self.provenance],
            "derived": list(self.derived),
            "events": [{"seq": e.seq, "op": e.op.value, "step": e.step,
                        "at": None if e.at is None else e.at.isoformat(),
                        "policy": e.policy, "score": e.score, "node_ids": list(e.node_ids),
                        "rationale": e.rationale} for e in self.events],
        }


def explain(state: NamespaceState | None, events: Sequence[AuditEvent],
            node_id: str) -> Explanation:
    """Build the explanation of ``node_id`` from its namespace's views (``None``: it is
    in no namespace any more) and the audit events that name it.

    Raises:
        NotFoundError: no memory has ever had that id.
    """
    node = state.get(node_id) if state is not None else None
    if node is None:
        if not any(e.op.value == "erase" for e in events):
            raise NotFoundError(f"no memory with id {node_id!r}")
        return Explanation(node_id, "erased", None, events=tuple(events))
    assert state is not None
    chain = []
    for aid in state.graph.ancestors(node_id):
        anc = state.get(aid)
        if anc is not None:
            chain.append(ChainLink(aid, anc.type.value, anc.status.value, anc.provenance.source))
    return Explanation(node_id, node.status.value, node, tuple(chain),
                       tuple(state.graph.descendants(node_id)), tuple(events))
