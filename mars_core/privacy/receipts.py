"""Receipts: what an erasure removed, and what a namespace holds about its user and why.

Seed 000 §4.3: the system returns "privacy receipts" summarising what was stored,
summarised or removed and why. Receipts hold ids, counts and rationales from the
audit — never memory text. An entity erasure's receipt also lists the memories it left
for review (:class:`AmbiguousMention`): their ids and the part of the erased name they
use, which the caller supplied — nothing else of their text.

Examples:
    >>> r = ErasureReceipt("entity", "u1", ("a", "b"), (), {"episodic": 2}, (7, 8), "compacted")
    >>> r.render().splitlines()[0]
    'erasure (entity) in namespace u1: 2 memories removed, 0 summaries regenerated'
    >>> r.as_dict()["erased"], r.as_dict()["by_type"]
    (['a', 'b'], {'episodic': 2})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mars_core.audit import AuditEvent, AuditOp
from mars_core.model import MemoryNode, MemoryStatus
from mars_core.privacy.names import Reason

__all__ = ["AmbiguousMention", "ErasureReceipt", "PrivacyReceipt", "build_receipt"]

_WHY: Mapping[str, str] = {
    "shared": "another person in the namespace has this name part",
    "common word": "an everyday word, capitalised at the start of a sentence",
}


@dataclass(frozen=True, slots=True)
class AmbiguousMention:
    """A kept memory that may name the erased person by part of the name: for review.

    Entity erasure erases a partial mention ("Mr Doe", "Jane") only when the namespace
    makes the referent unambiguous (:mod:`mars_core.privacy.names`); these it did not.

    Attributes:
        node_id: the memory, still stored.
        part: the part of the erased name it uses, as the request spelled it (the
            receipt repeats no other text of the memory).
        reason: ``shared`` — another person known in the namespace has this part;
            ``common word`` — the part is an everyday word ("Rose") written capitalised
            at the start of a sentence, where it may be the word or the name.
    """

    node_id: str
    part: str
    reason: Reason


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """The result of one ``erase`` call.

    Attributes:
        request: ``node``, ``entity``, ``conversation`` or ``namespace``.
        namespace: where it acted.
        erased: ids removed from active memory, the archive and every collection.
        regenerated: ``(old summary id, new summary id)`` rewritten without the material.
        by_type: how many erased memories of each type.
        audit_seqs: the audit events that record it (hashes only).
        physical: what happened on disk (compaction, or what the backend keeps).
        ambiguous: memories kept for review, that may name the erased person by part of
            the name (entity erasure; see :class:`AmbiguousMention`). Erase them with
            ``erase(node_id=...)`` once reviewed.
        restating: memories kept that restate an erased one (by embedding similarity;
            :mod:`mars_core.privacy.output`): ``render_context`` withholds them from now
            on; erase them with ``erase(node_id=...)`` once reviewed.
    """

    request: str
    namespace: str
    erased: tuple[str, ...]
    regenerated: tuple[tuple[str, str], ...]
    by_type: Mapping[str, int]
    audit_seqs: tuple[int, ...]
    physical: str
    ambiguous: tuple[AmbiguousMention, ...] = ()
    restating: tuple[str, ...] = ()

    def render(self) -> str:
        """A human-readable receipt (ids and counts; no memory text)."""
        lines = [f"erasure ({self.request}) in namespace {self.namespace}: "
                 f"{len(self.erased)} memories removed, "
                 f"{len(self.regenerated)} summaries regenerated"]
        lines += [f"  {t}: {n}" for t, n in sorted(self.by_type.items())]
        lines += [f"  summary {old} -> {new}" for old, new in self.regenerated]
        lines.append(f"  storage: {self.physical}")
        if self.ambiguous:
            kept = len({a.node_id for a in self.ambiguous})
            lines.append(f"  to review (kept): {kept} memories may name the person by part "
                         "of the name")
            lines += [f"    {a.node_id}: {a.part!r}: {_WHY[a.reason]}" for a in self.ambiguous]
        if self.restating:
            lines.append(f"  to review (kept, withheld from render_context): "
                         f"{len(self.restating)} memories restate what was erased")
            lines += [f"    {nid}" for nid in self.restating]
        if self.audit_seqs:
            lines.append(f"  audit events #{self.audit_seqs[0]}..#{self.audit_seqs[-1]}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The receipt as JSON-ready values (ids and counts, no memory text; the schema
        of ``mars erase --json``)."""
        return {
            "request": self.request, "namespace": self.namespace,
            "erased": list(self.erased),
            "regenerated": [{"old": old, "new": new} for old, new in self.regenerated],
            "by_type": dict(sorted(self.by_type.items())),
            "audit_seqs": list(self.audit_seqs), "physical": self.physical,
            "ambiguous": [{"id": a.node_id, "part": a.part, "reason": a.reason}
                          for a in self.ambiguous],
            "restating": list(self.restating),
        }


@dataclass(frozen=True, slots=True)
class PrivacyReceipt:
    """What a namespace stores, has summarised or removed, and why.

    Attributes:
        namespace: the namespace (a user, tenant or session).
        stored: counts by ``status/type`` of memories held now.
        sensitive: how many held memories have sensitivity ≥ 0.5, by type.
        summarised: how many memories were folded into summaries.
        removed: counts by reason of memories that left active memory (evicted,
            forgotten by the user, erased).
        reasons: the most frequent rationales, with counts.
    """

    namespace: str
    stored: Mapping[str, int]
    sensitive: Mapping[str, int]
    summarised: int
    removed: Mapping[str, int]
    reasons: tuple[tuple[str, int], ...] = field(default_factory=tuple)

    def render(self) -> str:
        """A human-readable receipt."""
        lines = [f"privacy receipt for namespace {self.namespace}"]
        lines += [f"  stored {k}: {v}" for k, v in sorted(self.stored.items())]
        lines += [f"  sensitive (s >= 0.5) {k}: {v}" for k, v in sorted(self.sensitive.items())]
        lines.append(f"  summarised: {self.summarised} memories folded into summaries")
        lines += [f"  removed ({k}): {v}" for k, v in sorted(self.removed.items())]
        lines += [f"  why: {r} (x{n})" for r, n in self.reasons]
        return "\n".join(lines)


def _reason_key(ev: AuditEvent) -> str:
    text = ev.rationale.split(" [", 1)[0]  # drop "[3 of 40 active]"
    return text.split(":", 1)[0] if ev.op is AuditOp.EVICT else text


def build_receipt(namespace: str, nodes: Iterable[MemoryNode],
                  events: Iterable[AuditEvent], top: int = 5) -> PrivacyReceipt:
    """Assemble a namespace's receipt from its nodes and audit events."""
    stored: Counter[str] = Counter()
    sensitive: Counter[str] = Counter()
    for n in nodes:
        stored[f"{n.status.value}/{n.type.value}"] += 1
        if n.sensitivity >= 0.5 and n.status is MemoryStatus.ACTIVE:
            sensitive[n.type.value] += 1
    removed: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    summarised = 0
    for ev in events:
        if ev.op is AuditOp.SUMMARISE:
            summarised += max(0, len(ev.node_ids) - 1)
        elif ev.op is AuditOp.EVICT:
            removed["forgotten by the user" if ev.policy == "user" else
                    f"evicted by {ev.policy}"] += 1
            reasons[_reason_key(ev)] += 1
        elif ev.op is AuditOp.ERASE:
            removed["erased"] += 1
            reasons[ev.rationale] += 1
    return PrivacyReceipt(namespace, dict(stored), dict(sensitive), summarised, dict(removed),
                          tuple(reasons.most_common(top)))
