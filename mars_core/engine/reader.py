"""The reader: retrieval, recall, prompt context — and the one write a read makes.

A read never rewrites a memory. Counting it as an access stages, for each hit, one small
statistics row (count, last access, recency) and, for the call, one ``access`` audit
event, in one transaction (:meth:`Reader.record_access`); a ``read_only`` call or store
records nothing. The views follow with the new statistics alone
(:meth:`~mars_core.engine.namespace.NamespaceState.apply_stats`: nothing is re-indexed),
and the transaction does not wait for the disk unless ``StoreConfig.durable_accesses``
(it is as atomic, and survives a crash of the process).

Examples:
    >>> from mars_core.engine.reader import Reader
    >>> Reader.__name__
    'Reader'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, TypeVar

from mars_core import assemble
from mars_core.audit import AuditOp
from mars_core.context import EvidenceItem, Validity, rank_recall, recall_walk, render_context
from mars_core.embeddings import embed_one
from mars_core.engine.engine import Engine
from mars_core.engine.guard import OutputGuard
from mars_core.engine.namespace import NamespaceState
from mars_core.errors import NotFoundError, ValidationError
from mars_core.lexical import tokenize
from mars_core.model import RECALLABLE, MemoryNode, MemoryStatus, MemoryType, Predicate
from mars_core.privacy.output import Section
from mars_core.privacy.redaction import redact as redact_text
from mars_core.privacy.redaction import sensitive_phrases
from mars_core.retrieval import Hit, Query, pack, rank
from mars_core.retrieval import relative_cutoff as cut
from mars_core.storage.base import Vector

__all__ = ["Reader"]

_T = TypeVar("_T")

_SHOWN: Final = frozenset({Validity.CURRENT, Validity.OUTDATED})
"""Lineage marks of memories that ``render_context`` may show as evidence."""


def _items(marked: Sequence[assemble.Marked], shown: Mapping[str, str]) -> list[EvidenceItem]:
    """Evidence items, with the text the semantic pass let through (a rephrasing)."""
    out = []
    for it in assemble.evidence_items(marked):
        text = shown.get(it.node_id) if it.node_id is not None else None
        out.append(it if text is None or text == it.text else replace(it, text=text))
    return out


class Reader:
    """Reads memories and records the accesses (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.e = engine

    # --- ranking ----------------------------------------------------------------------------

    def rank(self, state: NamespaceState, status: MemoryStatus, qvec: Vector,
             q: Query) -> list[Hit]:
        """Ranked hits of one namespace's active or archived memories."""
        self.e.sync.ensure_current()
        with self.e.sync.querying():
            return rank(state, self.e.index, lambda ids: self.e.stored_vectors(state, ids),
                        status=status, qvec=qvec, q=q, cfg=self.e.config.retrieval)

    def retrieve(self, q: Query, budget: int, *, k: int | None, ratio: float,
                 include_archive: bool | None, read_only: bool) -> list[Hit]:
        """Hybrid retrieval, cut and packed; an access unless ``read_only``.

        ``include_archive``: ``True`` adds every archived memory (scores × 0.9), ``False``
        searches the active memories alone, ``None`` the active ones and the second tier
        (:meth:`search`).
        """
        state = self.e.ns(q.namespace)
        qvec = embed_one(self.e.embedder, q.text)
        if include_archive:
            hits = self.rank(state, MemoryStatus.ACTIVE, qvec, q)
            hits += [Hit(h.node, h.score * 0.9, h.dense, h.lexical, True)
                     for h in self.rank(state, MemoryStatus.ARCHIVED, qvec, q)]
            hits.sort(key=lambda h: (-h.score, h.archived, h.node.seq))
        else:
            hits = self.search(state, qvec, q, second_tier=include_archive is None)
        recallable = self.recallable(state)  # private mode without consent
        chosen = pack(cut([h for h in hits if recallable(h.node)], ratio,
                          self.derivation(state)), budget, k)
        if not read_only and chosen and not self.e.read_only:
            state.policy.on_retrieve(q.namespace, [h.node for h in chosen if not h.archived],
                                     budget, state.step)
            self.record_access(state, chosen, budget, q.text, telemetry=True)
        return chosen

    def search(self, state: NamespaceState, qvec: Vector, q: Query, *,
               second_tier: bool = True,
               admit: Callable[[MemoryNode], bool] | None = None) -> list[Hit]:
        """The active memories ranked; with ``second_tier`` and
        ``RetrievalConfig.search_archive`` (and an archive), the active and the recallable
        archived memories ranked together on one scale: what a policy archived to make
        room or a summary replaced, not superseded or corrected (an outdated turn was
        still said) and not expired (:data:`~mars_core.model.RECALLABLE`). ``admit``
        leaves more out (before the ranking: what it refuses lends no score to a reply)."""
        statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
        if second_tier and self.e.config.retrieval.search_archive \
                and state.count(MemoryStatus.ARCHIVED):
            statuses += (MemoryStatus.ARCHIVED,)
        now = self.e.clock.now()

        def allowed(node: MemoryNode) -> bool:
            return (admit is None or admit(node)) and (node.is_active or (
                node.archive_reason in RECALLABLE
                and (node.expires_at is None or node.expires_at > now)
                and assemble.validity(state, node.id) in _SHOWN))

        self.e.sync.ensure_current()
        return rank(state, self.e.index, lambda ids: self.e.stored_vectors(state, ids),
                    status=statuses, qvec=qvec, q=q, cfg=self.e.config.retrieval,
                    admit=allowed if admit is not None or len(statuses) > 1 else None)

    def recall(self, ns: str, *, entity: str | None, goal: str | None, k: int, max_hops: int,
               read_only: bool) -> list[Hit]:
        """A walk of a small ball around an entity or a goal, reranked by similarity."""
        state = self.e.ns(ns)
        starts = assemble.recall_starts(state, entity, goal, limit=k)
        ball = recall_walk(state.graph, starts, state.is_active, max_hops=max_hops,
                           max_nodes=4 * k)
        ids = [i for i, _ in ball]
        vecs = dict(zip(ids, self.e.vectors(state, ids), strict=True))
        ranked = rank_recall(ball, vecs, embed_one(self.e.embedder, entity or goal or ""),
                             allowed=self.purpose_filter(state, goal), limit=k)
        hits = [Hit(state.node(r.node_id), r.score, r.similarity or 0.0, 0.0) for r in ranked]
        if hits and not read_only and not self.e.read_only:
            self.record_access(state, hits, sum(h.node.weight for h in hits),
                               entity or goal or "")
        return hits

    def render(self, q: Query, budget: int, *, conversation: str | None, active_turns: int,
               evidence: int, redact: bool, evidence_only: bool) -> str:
        """Prompt-ready context: evidence, its raw support, the active conversation.

        With ``redact``, the semantic pass (:class:`~mars_core.engine.guard.OutputGuard`)
        runs over every memory before it is placed — a withheld piece of evidence makes
        room for the next — and the surface pass over the rendered text.

        Raises:
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        state = self.e.ns(q.namespace)
        active = assemble.active_turns(state, conversation, active_turns)
        skip = frozenset(n.id for n in active)
        recallable = self.recallable(state)
        echo = " ".join(q.text.split()).casefold()  # the question is not its own evidence

        def not_echo(node: MemoryNode) -> bool:  # nor does it lend its score to its reply
            return " ".join(node.content.split()).casefold() != echo

        ranked = self.search(state, embed_one(self.e.embedder, q.text),
                             q, admit=not_echo)  # q: the call's scope (template, jurisdiction)
        # a replaced memory is not evidence (it is shown beside what replaced it); a turn
        # whose statement was replaced is, marked outdated
        marks = {h.id: assemble.lineage(state, h.id, recallable) for h in ranked}
        hits = [h for h in ranked if marks[h.id][0] in _SHOWN and recallable(h.node)]
        guard = OutputGuard.for_call(self.e, state) if redact else None
        if guard is not None and guard.hook is None:
            # nothing can bring a flagged memory back: drop it before the relative cut-off,
            # so the best memory that may be shown sets the bar
            guard.check([h.node for h in hits] + active)
            hits = guard.drop(hits, lambda kept: self._cut(state, kept, skip)[:evidence])
        # cut with the active turns still in: a fact drawn from a turn on screen stays
        shown: dict[str, str] = {}
        while True:
            kept = self._cut(state, hits, skip)
            if guard is None:
                break
            kept = self._shown(guard, [(h, h.node) for h in kept], "evidence", evidence, shown)
            gone = {h.id for h in hits if guard.withheld(h.id)}
            if not gone:
                break
            hits = [h for h in hits if h.id not in gone]  # the hook withheld: cut again
        hits = kept[:evidence]
        cards = [(h.node, h.score, *marks[h.id]) for h in hits]
        support = assemble.support_for(state, [h.node for h in hits],
                                       skip=skip | {h.id for h in hits}, shown=recallable)
        turns = [(n, float(i), *assemble.lineage(state, n.id, recallable))
                 for i, n in enumerate(active)]
        if guard is not None:
            support = self._shown(guard, [(m, m[0]) for m in support], "support", None, shown)
            turns = self._shown(guard, [(t, t[0]) for t in turns], "active", None, shown)
        text = render_context(_items(cards, shown), _items(support, shown),
                              _items(turns, shown), budget, self.e.counter.count,
                              evidence_only=evidence_only)
        counts: dict[str, Any] = {}
        if redact:
            result = redact_text(text, protected=self.protected_phrases(state),
                                 analyzer=self.e.enricher.analyzer)
            text, counts = result.text, {"redacted": result.spans_redacted,
                                         "redacted_kinds": sorted(k.value for k in result.kinds)}
            if guard is not None and guard.counts:
                counts.update(sorted(guard.counts.items()))
        if hits and not self.e.read_only:
            self.record_access(state, hits, budget, q.text, counts, telemetry=True)
        return text

    def _cut(self, state: NamespaceState, hits: list[Hit], skip: frozenset[str]) -> list[Hit]:
        """The relative cut-off of ``render``, then the active turns left out."""
        return [h for h in cut(hits, self.e.config.retrieval.relative_cutoff,
                               self.derivation(state)) if h.id not in skip]

    @staticmethod
    def _shown(guard: OutputGuard, items: Sequence[tuple[_T, MemoryNode]], section: Section,
               limit: int | None, shown: dict[str, str]) -> list[_T]:
        """The items whose memory may be shown (in order, at most ``limit``), recording
        in ``shown`` the text each is shown with."""
        out: list[_T] = []
        for item, node in items:
            if limit is not None and len(out) >= limit:
                break
            text = guard.text(node, section)
            if text is not None:
                shown[node.id] = text
                out.append(item)
        return out

    @staticmethod
    def memories(state: NamespaceState, mtype: MemoryType | str | None,
                 status: MemoryStatus | str | None) -> list[MemoryNode]:
        """Memories of a namespace, oldest first (``status=None``: active and archived).

        Raises:
            ValidationError: an unknown type or status.
        """
        try:
            statuses = list(MemoryStatus) if status is None else [MemoryStatus(status)]
            mt = None if mtype is None else MemoryType(mtype)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if MemoryStatus.ARCHIVED in statuses:
            state.load_archive()
        nodes = [state.node(i) for s in statuses for i in state.ids(s)]
        return sorted((n for n in nodes if mt is None or n.type is mt), key=lambda n: n.seq)

    @staticmethod
    def history(state: NamespaceState, memory_id: str) -> list[MemoryNode]:
        """All versions of a memory along ``supersedes`` edges, oldest first."""
        g, seen, todo = state.graph, {memory_id}, [memory_id]
        while todo:
            cur = todo.pop()
            for e in g.out_edges(cur, Predicate.SUPERSEDES) + g.in_edges(cur, Predicate.SUPERSEDES):
                for nxt in (e.source, e.target):
                    if nxt not in seen and nxt in state:
                        seen.add(nxt)
                        todo.append(nxt)
        return sorted((state.node(i) for i in seen), key=lambda n: n.seq)

    # --- accesses -----------------------------------------------------------------------------

    def record_access(self, state: NamespaceState, hits: Sequence[Hit], budget: int,
                      query: str, params: Mapping[str, Any] | None = None, *,
                      rationale: str | None = None, telemetry: bool = False) -> None:
        """One statistics row per hit and one ``access`` event, in one transaction
        (durable as ``StoreConfig.durable_accesses`` says). ``telemetry``: a retrieval,
        whose share of active hits feeds an elastic budget's hit rate."""
        ns = state.name
        with self.e.unit(durable=self.e.config.durable_accesses) as unit:
            elastic, cfg = self.e.elastic(ns, unit), self.e.config.elastic
            if telemetry and elastic is not None and cfg is not None:
                self.e.set_elastic(unit, ns, elastic.observe_hits(
                    cfg, active=sum(1 for h in hits if not h.archived), total=len(hits)))
            step, now = self.e.step(unit, ns), self.e.clock.now()
            for h in reversed(hits):  # the best hit becomes the most recently used
                node = state.node(h.node.id)
                self.e.stats(unit, node.model_copy(update={
                    "access_count": node.access_count + 1, "last_access_at": now,
                    "last_access_step": step, "touch_seq": self.e.touch(unit, ns)}))
            unit.event(ns, op=AuditOp.ACCESS, node_ids=[h.id for h in hits], step=step, at=now,
                       features={h.id: {"score": h.score, "dense": h.dense,
                                        "lexical": h.lexical} for h in hits},
                       rationale=rationale or f"retrieved {len(hits)} memories "
                                 f"({sum(h.node.weight for h in hits)} of {budget} tokens)",
                       contents={"query": query}, params=params)

    def reinforce(self, state: NamespaceState, ids: Iterable[str], reason: str,
                  credit: bool) -> None:
        """Record a use of exactly these memories (and credit them, if asked).

        Raises:
            NotFoundError: an id that is not a memory of the namespace.
            ValidationError: an archived memory.
        """
        nodes = []
        for i in dict.fromkeys(ids):
            if not isinstance(i, str) or i not in state:
                raise NotFoundError(f"no memory with id {i!r} in namespace {state.name!r}")
            node = state.node(i)
            if not node.is_active:
                raise ValidationError(f"memory {i} is not an active memory of {state.name!r}")
            nodes.append(node)
        if not nodes:
            return
        hits = [Hit(n, 1.0, 0.0, 0.0, False) for n in nodes]
        self.record_access(state, hits, sum(n.weight for n in nodes), "",
                           {"reason": reason}, rationale=f"{reason}: {len(nodes)} memories")
        if credit:
            ids = [n.id for n in nodes]
            state.policy.on_credit(state.name, ids, ids, state.step)

    # --- what may be shown ------------------------------------------------------------------

    @staticmethod
    def derivation(state: NamespaceState) -> Callable[[str], list[str]]:
        """A memory's derivation neighbours: what it derives from, what derives from it."""
        def linked(node_id: str) -> list[str]:
            g = state.graph
            return [e.target for e in g.out_edges(node_id, Predicate.DERIVES_FROM)] + \
                [e.source for e in g.in_edges(node_id, Predicate.DERIVES_FROM)]
        return linked

    def recallable(self, state: NamespaceState) -> Callable[[MemoryNode], bool]:
        """Private mode: only what consent covers may be recalled."""
        prefs, now = state.prefs, self.e.clock.now()
        if prefs is None or not prefs.private_mode:
            return lambda node: True
        return lambda node: prefs.recallable(node, now)

    def purpose_filter(self, state: NamespaceState, goal: str | None) -> Callable[[str], bool]:
        """Purpose limitation (seed 000 §4.3): private mode hides what consent does not
        cover; for a goal, social memories must be linked to a task of that goal."""
        recallable = self.recallable(state)
        goal_words = set(tokenize(goal or ""))

        def linked_to_goal(nid: str) -> bool:
            for e in state.graph.in_edges(nid) + state.graph.out_edges(nid):
                other = state.get(e.target if e.source == nid else e.source)
                if other is not None and other.type is MemoryType.TASK and \
                        goal_words & set(tokenize(other.content)):
                    return True
            return False

        def allowed(nid: str) -> bool:
            node = state.node(nid)
            if not recallable(node):
                return False
            return goal is None or node.type is not MemoryType.SOCIAL or linked_to_goal(nid)

        return allowed

    def protected_phrases(self, state: NamespaceState, threshold: float = 0.7) -> list[str]:
        """What the second redaction pass protects: the sensitive phrases of the
        namespace's high-sensitivity memories, and the user's private/blocked entities."""
        phrases: list[str] = []
        cache = state.phrases
        for node in self._sensitive(state, threshold):
            if node.id not in cache:  # content is immutable: detect once per memory
                cache[node.id] = tuple(sensitive_phrases(
                    node.content, self.e.scorer.detect(node.content)))
            phrases += cache[node.id]
        prefs = state.prefs
        if prefs is not None:
            phrases += [*prefs.private_entities, *prefs.blocked_entities]
        return list(dict.fromkeys(phrases))

    @staticmethod
    def _sensitive(state: NamespaceState, threshold: float) -> Iterable[MemoryNode]:
        """Memories at least ``threshold`` sensitive, active or archived (only those are
        read from the archive)."""
        for ref in sorted(state.refs.values(), key=lambda r: (r.status is MemoryStatus.ARCHIVED,
                                                              r.seq)):
            if ref.sensitivity >= threshold:
                yield state.node(ref.id)
