"""The eraser: the right to be forgotten, and the privacy preferences that change sensitivity.

An erasure (:meth:`Eraser.erase`) plans its cascade (:mod:`mars_core.privacy.erasure`;
an entity's partial mentions: :mod:`mars_core.privacy.names`), then in one transaction
regenerates the summaries that survive, deletes every erased memory (its row,
statistics and edges; SQLite overwrites them, ``secure_delete``) and appends one
``erase`` event per memory (keyed hashes only). Then the record store purges (the WAL is
checkpointed and truncated) and the vector index deletes the entries and, where it keeps
deleted vectors in its files, rebuilds the namespace's partitions. The receipt says what
was done on disk, and lists the memories an entity erasure left for review.

Before anything is deleted, the surviving memories that restate an erased one in other
words are found (:func:`~mars_core.privacy.semantic.restates` on the erased vectors'
nearest neighbours; a restatement shares a word beyond the subject's name, or a sensitive
category); in the same transaction each is marked (the ``restates_erased``
signal, one ``metadata`` event), so ``render_context`` withholds it from then on, and the
receipt lists it for review (``restating``).

Examples:
    An entity erasure takes every memory that mentions the entity:

    >>> from mars_core import FakeClock, MemoryStore
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     for text in ("Ana moved to Lisbon", "Bo likes green tea", "Ana's sister visits"):
    ...         _ = store.add(text)
    ...     receipt = store.erase(entity="Ana")
    ...     receipt.request, len(receipt.erased), [m.content for m in store.list()]
    ('entity', 2, ['Bo likes green tea'])
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pydantic

from mars_core.audit import AuditOp
from mars_core.engine.engine import Engine
from mars_core.engine.guard import calibration, sensitive_kinds
from mars_core.engine.unit import Unit
from mars_core.engine.writer import Embeddings, Writer
from mars_core.errors import MarsBackendError, NotFoundError, ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    SemanticPayload,
)
from mars_core.privacy.erasure import ErasurePlan, ambiguous_mentions, plan_erasure
from mars_core.privacy.output import ERASED_SIGNAL
from mars_core.privacy.preferences import ConsentGrant, PrivacyPreferences
from mars_core.privacy.receipts import AmbiguousMention, ErasureReceipt
from mars_core.privacy.semantic import Anchors, restates
from mars_core.storage.base import RecordTxn
from mars_core.views.namespace import NamespaceState

__all__ = ["Eraser"]


class _Snapshot:
    """What an erasure plan reads of a namespace (:class:`~mars_core.privacy.erasure.
    Memories`), from one read transaction of the records: its memories a batch at a
    time, one by id, its edges."""

    def __init__(self, tx: RecordTxn, name: str) -> None:
        self.tx, self.name = tx, name
        self.graph = MemoryGraph()
        for edge in tx.edges(name):
            self.graph.add(edge)

    def each(self) -> Iterator[MemoryNode]:
        for batch in self.tx.scan(self.name):
            yield from batch

    def get(self, memory_id: str) -> MemoryNode | None:
        node = self.tx.memory(memory_id)
        return node if node is not None and node.namespace == self.name else None

log = logging.getLogger(__name__)

_NEIGHBOURS = 32
"""Nearest neighbours of each erased memory, per status, checked for restatements."""


class Eraser:
    """Erases memories and applies privacy preferences (see the module)."""

    def __init__(self, engine: Engine, writer: Writer) -> None:
        self.engine, self.writer = engine, writer

    def erase(self, state: NamespaceState, *, node_id: str | None = None,
              entity: str | None = None, conversation: str | None = None,
              whole: bool = False, partial: bool = True) -> ErasureReceipt:
        """Erase memories of one namespace and everything derived from them.

        ``partial``: an entity erasure also reaches partial mentions of a person's name
        (:mod:`mars_core.privacy.names`); the ambiguous ones are listed in the receipt.
        """
        ns = state.name
        with self.engine.records.read() as tx:  # one snapshot, streamed: no view holds it all
            plan = plan_erasure(_Snapshot(tx, ns), node_id=node_id, entity=entity,
                                conversation=conversation, namespace_all=whole,
                                partial=partial)
        request = ("node" if node_id is not None else "entity" if entity is not None
                   else "conversation" if conversation is not None else "namespace")
        selector = node_id or entity or conversation or ns
        params = {"target_hash": self.engine.chain.content_hash(selector)[:16]}
        by_type = Counter(plan.nodes[i].type.value for i in plan.erased)
        restating = self._restating(state, plan)
        with self.engine.unit() as unit:
            renamed = self._stage(unit, state, plan, request, params)
            self._mark(unit, state, restating)
            if whole:  # its record and chain leave its name behind (renamed to a token)
                self._stage_prefs_erasure(unit, state)
                unit.retire.add(ns)
            if self.engine.index.capabilities.keeps_deleted:
                unit.compact.add(ns)
        draft = unit.drafts.get(ns)
        seqs = tuple(ev.seq for ev in draft.audit.events) if draft is not None else ()
        state = self.engine.ns(ns)
        state.forget_novelty()  # primed again from what survives: no erased vector in it
        purged = self.engine.purge([unit.retired.get(ns, ns)])
        physical = f"{purged}; {self._checked(plan, ns, whole)}"
        return ErasureReceipt(request, ns, plan.erased, tuple(renamed.items()), dict(by_type),
                              seqs, physical, self._ambiguous(state, plan, renamed.values()),
                              tuple(nid for nid, _, _ in restating))

    def _checked(self, plan: ErasurePlan, ns: str, whole: bool) -> str:
        """What the records hold of the erasure once it is done, read back: the receipt
        states what was checked, not what is assumed."""
        with self.engine.records.read() as tx:
            left = tx.existing(list(plan.erased))
            named = whole and (tx.namespace(ns) is not None or bool(tx.audit(ns)))
        found = [f"the records hold none of the {len(plan.erased)} erased memories"
                 if not left else f"NOT REMOVED: {len(left)} of the erased memories are "
                 "still in the records"]
        if whole:
            found.append("the namespace's name is still in the records (NOT REMOVED)" if named
                         else "no namespace record or audit event bears its name")
        return "checked: " + ", ".join(found)

    def _restating(self, state: NamespaceState, plan: ErasurePlan
                   ) -> list[tuple[str, float, str]]:
        """The surviving memories (active or archived) that restate an erased one:
        ``(id, cosine, route)``. Candidates come from the vector index (the nearest
        neighbours of each erased memory), then :func:`~mars_core.privacy.semantic.restates`
        decides; computed before anything is deleted (the erased vectors are needed)."""
        gone = set(plan.erased) | {old for old, _ in plan.regenerate}
        total = state.count() + state.count(MemoryStatus.ARCHIVED)
        if not plan.erased or len(gone) >= total:
            return []
        cal = calibration(self.engine.io)
        override = self.engine.config.paraphrase_threshold
        floor = min(cal.topic_threshold, override or cal.paraphrase_threshold)
        erased = list(plan.erased)
        vecs = self.engine.io.vectors(state, erased)
        try:
            found = self._neighbours(state, vecs, floor)
        except MarsBackendError:  # the index is away: every survivor is a candidate
            log.warning("the vector index is unreachable: an erasure's restatements are "
                        "looked for among all %d memories of the namespace", total)
            found = {n.id for n in self.engine.everything(state)}
        state.read(found - gone)  # one read for the neighbours the views do not hold
        ids = sorted(i for i in found - gone if i in state)
        if not ids:
            return []
        io = self.engine.io
        kinds = [sensitive_kinds(io, state, i, state.node(i).content) for i in ids]
        ref_kinds = [sensitive_kinds(io, state, i, plan.nodes[i].content) for i in erased]
        hits = restates(self.engine.io.vectors(state, ids), kinds, vecs, ref_kinds, cal,
                        paraphrase_threshold=override,
                        anchors=[Anchors.of(state.node(i).content) for i in ids],
                        reference_anchors=[Anchors.of(plan.nodes[i].content) for i in erased])
        return [(i, h.similarity, h.route) for i, h in zip(ids, hits, strict=True)
                if h is not None]

    def _neighbours(self, state: NamespaceState, vecs: npt.NDArray[np.float32],
                    floor: float) -> set[str]:
        """The index's nearest neighbours of each erased vector, per status, at a cosine
        of ``floor`` or more."""
        found: set[str] = set()
        self.engine.sync.prepare()
        for vec in vecs:
            for status in (MemoryStatus.ACTIVE, MemoryStatus.ARCHIVED):
                found.update(nid for nid, score in self.engine.sync.query(
                    state.name, status, vec, _NEIGHBOURS) if score >= floor)
        return found

    def _mark(self, unit: Unit, state: NamespaceState,
              restating: Sequence[tuple[str, float, str]]) -> None:
        """Mark the memories that restate an erased one (one ``metadata`` event each)."""
        if not restating:
            return
        step, now = self.engine.step(unit, state.name), self.engine.clock.now()
        for nid, sim, route in restating:
            node = state.node(nid)
            self.engine.stage_update(unit, node.model_copy(
                update={"signals": {**node.signals, ERASED_SIGNAL: sim}}), reindex=False)
            unit.event(state.name, op=AuditOp.METADATA, node_ids=[nid], step=step, at=now,
                       features={nid: {ERASED_SIGNAL: sim}},
                       rationale=f"restates an erased memory (cosine {sim:.2f}, {route}): "
                                 "withheld from render_context")

    @staticmethod
    def _ambiguous(state: NamespaceState, plan: ErasurePlan,
                   regenerated: Iterable[str]) -> tuple[AmbiguousMention, ...]:
        """The plan's memories for review, and the regenerated summaries that inherit an
        ambiguous mention from a surviving member."""
        if plan.name is None:
            return plan.ambiguous
        name = plan.name
        return (*plan.ambiguous,
                *(a for nid in regenerated for a in ambiguous_mentions(name, state.node(nid))))

    def _stage(self, unit: Unit, state: NamespaceState, plan: ErasurePlan, request: str,
               params: dict[str, str]) -> dict[str, str]:
        """Stage an erasure plan; returns ``{old summary id: regenerated id}``."""
        ns = state.name
        step = self.engine.step(unit, ns)
        renamed: dict[str, str] = {}
        for old_id, members in plan.regenerate:
            new = self._regenerate(unit, state, plan.nodes[old_id],
                                   [renamed.get(m, m) for m in members], plan.nodes)
            renamed[old_id] = new.id
        for nid in [*plan.erased, *renamed]:
            node = plan.nodes[nid]
            why = (f"regenerated as {renamed[nid]} without the erased material" if nid in renamed
                   else "erased on request: names the person by part of the name"
                   if nid in plan.partial
                   else "erased on request" if nid in plan.targets
                   else "erased: derived from erased material")
            self.engine.stage_delete(unit, node)
            unit.event(ns, op=AuditOp.ERASE, node_ids=[nid], policy="erasure",
                       params={"request": request, **params}, step=step, at=self.engine.clock.now(),
                       rationale=why, contents={nid: node.content})
        return renamed

    def _regenerate(self, unit: Unit, state: NamespaceState, old: MemoryNode,
                    members: Sequence[str], known: Mapping[str, MemoryNode]) -> MemoryNode:
        """A summary written again from ``members`` (the plan's memories, or summaries
        this erasure regenerated)."""
        old_id = old.id
        nodes = [known[m] if m in known else state.node(m) for m in members]
        text = self.engine.summariser([n.content for n in nodes], target_tokens=old.weight)
        concept = old.payload.concept if isinstance(old.payload, SemanticPayload) else None
        prov = Provenance(source="summary", derived_from=tuple(members),
                          conversation_id=old.provenance.conversation_id)
        vectors = Embeddings(self.engine, [text])
        node = self.writer.build(unit, text, MemoryType.SEMANTIC, state.name,
                            step=self.engine.step(unit, state.name), vectors=vectors,
                            provenance=prov,
                            payload={"concept": concept},
                            sensitivity=max(n.sensitivity for n in nodes), depth=old.depth)
        node = node.model_copy(update={"status": old.status,
                                       "archive_reason": old.archive_reason})
        edges = [Edge(source=node.id, predicate=Predicate.DERIVES_FROM, target=m, step=node.step)
                 for m in members]
        self.engine.stage_insert(unit, node, vectors(text), edges)
        unit.event(state.name, op=AuditOp.SUMMARISE, node_ids=[node.id, *members],
                   policy="erasure", step=node.step, at=node.created_at,
                   rationale=f"regenerated summary {old_id} from {len(members)} surviving "
                             "memories, without the erased material",
                   contents={node.id: node.content})
        return node

    def _stage_prefs_erasure(self, unit: Unit, state: NamespaceState) -> None:
        """A whole-namespace erasure also erases its preferences (they name entities)."""
        d = self.engine.draft(unit, state.name)
        if d.state.pop("prefs", None) is not None:
            unit.event(state.name, op=AuditOp.CONFIG, step=self.engine.step(unit, state.name),
                       at=self.engine.clock.now(),
                       rationale="privacy preferences erased with the namespace")
        state.prefs = None

    # --- preferences ------------------------------------------------------------------------

    def set_preferences(self, state: NamespaceState, prefs: PrivacyPreferences) -> None:
        """New preferences, applied to what the namespace holds: every memory's
        sensitivity is recomputed from what was detected at ingestion (one ``metadata``
        event per change); the change itself is one ``config`` event (counts only)."""
        ns = state.name
        with self.engine.unit() as unit:
            state.prefs = prefs  # the views follow; a failure reloads them
            step, now = self.engine.step(unit, ns), self.engine.clock.now()
            for node in self.engine.everything(state):
                detected = node.signals.get("sensitivity_detected", node.sensitivity)
                new_s = self.writer.user_sensitivity(node, detected)
                if abs(new_s - node.sensitivity) > 1e-12:
                    self.engine.stage_update(unit, node.model_copy(update={"sensitivity": new_s}),
                                  reindex=True)
                    unit.event(ns, op=AuditOp.METADATA, node_ids=[node.id], step=step, at=now,
                               features={node.id: {"before": node.sensitivity,
                                                   "after": new_s}},
                               rationale=f"sensitivity {node.sensitivity:.2f} -> {new_s:.2f} "
                                         "by the user's privacy preferences")
            self.engine.draft(unit, ns).state["prefs"] = prefs.model_dump(mode="json")
            unit.event(ns, op=AuditOp.CONFIG, step=step, at=now, params={
                "private_entities": len(prefs.private_entities),
                "blocked_entities": len(prefs.blocked_entities),
                "blocked_conversations": len(prefs.blocked_conversations),
                "private_mode": prefs.private_mode, "consents": len(prefs.consents),
                "retention_days": {t.value: d for t, d in prefs.retention_days.items()}},
                rationale="privacy preferences updated by the user")

    def grant(self, state: NamespaceState, *, types: Iterable[MemoryType | str],
              entities: Iterable[str], purpose: str, expires_at: datetime | None
              ) -> ConsentGrant:
        """Add a consent grant to the namespace's preferences.

        Raises:
            ValidationError: a bad grant (nothing changes).
        """
        prefs = state.prefs or PrivacyPreferences()
        try:
            grant = ConsentGrant(id=f"consent-{state.record.audit_count}", types=tuple(
                MemoryType(t) for t in types), entities=tuple(entities), purpose=purpose,
                granted_at=self.engine.clock.now(), expires_at=expires_at)
        except (ValueError, pydantic.ValidationError) as exc:
            raise ValidationError(f"invalid consent: {exc}") from None
        self.set_preferences(state, prefs.model_copy(
            update={"consents": (*prefs.consents, grant)}))
        return grant

    def revoke(self, state: NamespaceState, consent_id: str) -> None:
        """Withdraw a consent grant.

        Raises:
            NotFoundError: no such grant in the namespace.
        """
        prefs = state.prefs or PrivacyPreferences()
        kept = tuple(c for c in prefs.consents if c.id != consent_id)
        if len(kept) == len(prefs.consents):
            raise NotFoundError(f"no consent {consent_id!r} in namespace {state.name!r}")
        self.set_preferences(state, prefs.model_copy(update={"consents": kept}))
