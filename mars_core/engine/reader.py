"""The reader: retrieval, recall, prompt context — and the one write a read makes.

A read never rewrites a memory. Counting it as an access stages, for each hit, one small
statistics row (count, last access, recency) and, for the call, one ``access`` audit
event, in one transaction (:meth:`Reader.record_access`); a ``read_only`` call or store
records nothing. The views follow with the new statistics alone
(:meth:`~mars_core.views.namespace.NamespaceState.apply_stats`: nothing is re-indexed),
and the transaction does not wait for the disk unless ``StoreConfig.durable_accesses``
(it is as atomic, and survives a crash of the process).

Examples:
    A retrieval counts as an access (one ``access`` event); a ``read_only`` one records
    nothing:

    >>> from mars_core import FakeClock, MemoryStore
    >>> with MemoryStore(budget=100, clock=FakeClock()) as store:
    ...     fact = store.add("Ana moved to Lisbon")
    ...     texts = [hit.text for hit in store.retrieve("Where does Ana live?")]
    ...     _ = store.retrieve("Where does Ana live?", read_only=True)
    ...     (texts, [event.op.value for event in store.audit.events()],
    ...      store.get(fact.id).access_count)
    (['Ana moved to Lisbon'], ['insert', 'access'], 1)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any, TypeVar

from mars_core.audit import AuditOp
from mars_core.embeddings import embed_one
from mars_core.engine import args
from mars_core.engine.engine import Engine
from mars_core.engine.guard import OutputCheck, Shown
from mars_core.errors import NotFoundError, ValidationError
from mars_core.model import HIDDEN, RECALLABLE, MemoryNode, MemoryStatus, MemoryType, Predicate
from mars_core.privacy.redaction import redact as redact_text
from mars_core.reading import assemble
from mars_core.reading.analysis import terms
from mars_core.reading.context import (
    EvidenceItem,
    rank_recall,
    recall_walk,
    render_context,
)
from mars_core.reading.rerank import Reranker, rerank_hits
from mars_core.reading.retrieval import Hit, Query, pack, rank
from mars_core.reading.retrieval import relative_cutoff as cut
from mars_core.storage.base import TermQuery, Vector
from mars_core.views.namespace import NamespaceState

__all__ = ["Reader"]

_T = TypeVar("_T")


@lru_cache(maxsize=16_384)
def _folded(text: str) -> str:
    """A text with its whitespace collapsed and its case folded (what an echo of the
    question is compared by; cached: a memory's content never changes)."""
    return " ".join(text.split()).casefold()


class Reader:
    """Reads memories and records the accesses (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # --- ranking ----------------------------------------------------------------------------

    def rank(self, state: NamespaceState, status: MemoryStatus | tuple[MemoryStatus, ...],
             qvec: Vector, q: Query,
             admit: Callable[[MemoryNode], bool] | None = None) -> list[Hit]:
        """Ranked hits of one namespace's active or archived memories (or both), read in
        one snapshot of the records (the index brought to the last commit first)."""
        self.engine.sync.prepare()
        with self.engine.records.read():  # every read of the search: one transaction
            return rank(state, self.engine.sync,
                        lambda ids: self.engine.io.stored_vectors(state, ids),
                        self.engine.search_terms, status=status, qvec=qvec, q=q,
                        cfg=self.engine.config.retrieval, admit=admit)

    def retrieve(self, q: Query, budget: int, *, k: int | None, ratio: float,
                 include_archive: bool | None, read_only: bool, redact: bool,
                 rerank: Reranker | None = None) -> list[Hit]:
        """Hybrid retrieval, cut and packed, then the output check (``redact``); an
        access unless ``read_only``.

        ``include_archive``: ``True`` adds every archived memory (scores × 0.9) but what a
        user cleared (:data:`~mars_core.model.HIDDEN`), ``False``
        searches the active memories alone, ``None`` the active ones and the second tier
        (:meth:`search`).

        Raises:
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        state = self.engine.ns(q.namespace)
        qvec = embed_one(self.engine.embedder, q.text)
        if include_archive:
            hits = self.rank(state, MemoryStatus.ACTIVE, qvec, q)
            hits += [Hit(h.node, h.score * 0.9, h.dense, h.lexical, True)
                     for h in self.rank(state, MemoryStatus.ARCHIVED, qvec, q,
                                        admit=lambda n: n.archive_reason not in HIDDEN)]
            hits.sort(key=lambda h: (-h.score, h.archived, h.node.seq))
        else:
            hits = self.search(state, qvec, q, second_tier=include_archive is None)
        recallable = self.recallable(state)  # private mode without consent
        check = OutputCheck(self.engine, state) if redact else None
        kept = rerank_hits([h for h in hits if recallable(h.node) and (
            check is None or not check.withheld_before(h.node))], q.text, rerank)
        chosen = pack(cut(kept, ratio, self.derivation(state)), budget, k)
        shown = self.checked(check, chosen)
        if not read_only and shown and not self.engine.read_only:
            ids = {h.id for h in shown}
            state.policy.on_retrieve(q.namespace, [h.node for h in chosen if not h.archived
                                                   and h.id in ids], budget, state.step)
            self.record_access(state, shown, budget, q.text, self.check_params(check),
                               telemetry=True)
        return shown

    @staticmethod
    def checked(check: OutputCheck | None, hits: Sequence[Hit]) -> list[Hit]:
        """The hits as the output check lets them out (``None``: unchecked); a withheld
        one is left out."""
        if check is None:
            return list(hits)
        shown = check.shown_all([h.node for h in hits])
        return [replace(h, node=s.node, masked=s.kinds) for h, s in zip(hits, shown, strict=True)
                if s.node is not None]

    @staticmethod
    def check_params(check: OutputCheck | None) -> dict[str, Any]:
        """What an access event records of the output check: its counts, or that it was
        off (an explicit read of the raw text)."""
        return {"redact": False} if check is None else check.params()

    def check_output(self, state: NamespaceState, nodes: Sequence[MemoryNode],
                     redact: bool) -> list[Shown]:
        """The output check over memories a caller read by other means (an adapter's
        chat history, a LangGraph item); ``redact=False``: shown as they are."""
        if not redact:
            return [Shown(n, (), None) for n in nodes]
        return OutputCheck(self.engine, state).shown_all(nodes, "active")

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
        if second_tier and self.engine.config.retrieval.search_archive \
                and state.count(MemoryStatus.ARCHIVED):
            statuses += (MemoryStatus.ARCHIVED,)
        now = self.engine.clock.now()

        def allowed(node: MemoryNode) -> bool:
            return (admit is None or admit(node)) and (node.is_active or (
                node.archive_reason in RECALLABLE
                and (node.expires_at is None or node.expires_at > now)
                and not assemble.replaced(state, node.id)))

        return self.rank(state, statuses, qvec, q,
                         admit=allowed if admit is not None or len(statuses) > 1 else None)

    def recall(self, ns: str, *, entity: str | None, goal: str | None, k: int, max_hops: int,
               read_only: bool, redact: bool) -> list[Hit]:
        """A walk of a small ball around an entity or a goal, reranked by similarity, then
        the output check (``redact``).

        Raises:
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        state = self.engine.ns(ns)
        starts = assemble.recall_starts(state, entity, goal, self.searcher(state), limit=k)
        ball = recall_walk(state.graph, starts, state.is_active, max_hops=max_hops,
                           max_nodes=4 * k)
        ids = [i for i, _ in ball]
        vecs = dict(zip(ids, self.engine.io.vectors(state, ids), strict=True))
        ranked = rank_recall(ball, vecs, embed_one(self.engine.embedder, entity or goal or ""),
                             allowed=self.purpose_filter(state, goal), limit=k)
        check = OutputCheck(self.engine, state) if redact else None
        found = [(state.node(r.node_id), r) for r in ranked]
        hits = self.checked(check, [Hit(n, r.score, r.similarity or 0.0, 0.0) for n, r in found
                                    if check is None or not check.withheld_before(n)])
        if hits and not read_only and not self.engine.read_only:
            self.record_access(state, hits, sum(h.node.weight for h in hits),
                               entity or goal or "", self.check_params(check))
        return hits

    def render(self, q: Query, budget: int, *, conversation: str | None, active_turns: int,
               evidence: int, redact: bool, evidence_only: bool,
               rerank: Reranker | None = None) -> str:
        """Prompt-ready context: evidence, its raw support, the active conversation.

        With ``redact``, the output check (:class:`~mars_core.engine.guard.OutputCheck`)
        decides what of each memory is shown before it is placed — a withheld piece of
        evidence makes room for the next — and the surface pass runs over the rendered
        text (the tags and notes the lines add).

        Raises:
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        state = self.engine.ns(q.namespace)
        active = assemble.active_turns(state, conversation, active_turns)
        skip = frozenset(n.id for n in active)
        recallable = self.recallable(state)
        echo = _folded(q.text)  # the question is not its own evidence

        def not_echo(node: MemoryNode) -> bool:  # nor does it lend its score to its reply
            return _folded(node.content) != echo

        ranked = self.search(state, embed_one(self.engine.embedder, q.text),
                             q, admit=not_echo)  # q: the call's scope (template, jurisdiction)
        # a replaced memory is not evidence (it is shown beside what replaced it); a turn
        # whose statement was replaced is, marked outdated once it is chosen (below). An
        # archived hit was asked already (the search's admit, `allowed`)
        hits = rerank_hits([h for h in ranked if (h.archived or not assemble.replaced(
            state, h.id)) and recallable(h.node)], q.text, rerank)
        check = OutputCheck(self.engine, state) if redact else None
        if check is not None:
            # nothing brings such a memory back: left out before the relative cut-off,
            # so the best memory that may be shown sets the bar
            withheld = sum(check.withheld_before(h.node)
                           for h in self._cut(state, hits, skip)[:evidence])
            if withheld:
                check.counts["withheld"] += withheld
            hits = [h for h in hits if not check.withheld_before(h.node)]
        # cut with the active turns still in: a fact drawn from a turn on screen stays
        while True:
            kept = self._cut(state, hits, skip)
            if check is None:
                break
            kept = self._kept(check, kept, evidence)
            gone = {h.id for h in hits if h.id in check.decided and check.decided[h.id].withheld}
            if not gone:
                break
            hits = [h for h in hits if h.id not in gone]  # the hook withheld: cut again
        hits = kept[:evidence]
        text = self._text(check)
        assemble.read_lineage(state, [*(h.id for h in hits), *(n.id for n in active)])
        cards = [(h.node, h.score, *assemble.lineage(state, h.id, recallable, text))
                 for h in hits]
        support = assemble.support_for(state, [h.node for h in hits],
                                       skip=skip | {h.id for h in hits}, shown=recallable,
                                       text=text)
        turns = [(n, float(i), *assemble.lineage(state, n.id, recallable, text))
                 for i, n in enumerate(active)]
        if check is not None:
            check.prepare([m[0] for m in support] + [t[0] for t in turns])
            support = [m for m in support if not check.shown(m[0], "support").withheld]
            turns = [t for t in turns if not check.shown(t[0], "active").withheld]
        rendered = render_context(self._items(check, cards), self._items(check, support),
                                  self._items(check, turns), budget, self.engine.counter.count,
                                  evidence_only=evidence_only)
        counts = self.check_params(check)
        if check is not None:  # the surface pass over what the lines add (tags, names)
            result = redact_text(rendered, protected=check.phrases)
            rendered = result.text
            if result.changed:
                counts["redacted_lines"] = result.spans_redacted
        if hits and not self.engine.read_only:
            self.record_access(state, hits, budget, q.text, counts, telemetry=True)
        return rendered

    @staticmethod
    def _kept(check: OutputCheck, hits: Sequence[Hit], limit: int) -> list[Hit]:
        """The first ``limit`` hits the check does not withhold."""
        out: list[Hit] = []
        for h in hits:
            if len(out) >= limit:
                break
            if not check.shown(h.node, "evidence").withheld:
                out.append(h)
        return out

    @staticmethod
    def _text(check: OutputCheck | None) -> Callable[[MemoryNode], str | None]:
        """A memory's text as the check shows it (a note quoting a replacement)."""
        if check is None:
            return lambda n: n.content

        def text(node: MemoryNode) -> str | None:
            shown = check.shown(node, "support").node
            return None if shown is None else shown.content
        return text

    @staticmethod
    def _items(check: OutputCheck | None, marked: Sequence[assemble.Marked]
               ) -> list[EvidenceItem]:
        """Evidence items, each with the text the check lets out."""
        items = assemble.evidence_items(marked)
        if check is None:
            return items
        out = []
        for it in items:
            node = check.decided[it.node_id].node if it.node_id in check.decided else None
            out.append(it if node is None or node.content == it.text
                       else replace(it, text=node.content))
        return out

    def _cut(self, state: NamespaceState, hits: list[Hit], skip: frozenset[str]) -> list[Hit]:
        """The relative cut-off of ``render``, then the active turns left out."""
        return [h for h in cut(hits, self.engine.config.retrieval.relative_cutoff,
                               self.derivation(state)) if h.id not in skip]

    def memories(self, state: NamespaceState, mtype: MemoryType | str | None,
                 status: MemoryStatus | str | None, newest: int | None = None
                 ) -> list[MemoryNode]:
        """Memories of a namespace, oldest first (``status=None``: active and archived;
        the archive is read from the records, not held); only the ``newest`` when given
        (read by their ids: the rest of the archive is not read).

        Raises:
            ValidationError: an unknown type or status, or ``newest`` not an int >= 1.
        """
        try:
            statuses = list(MemoryStatus) if status is None else [MemoryStatus(status)]
            mt = None if mtype is None else MemoryType(mtype)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if newest is not None:
            newest = args.count(newest, "newest", low=1)
        if statuses == [MemoryStatus.ACTIVE]:
            nodes = [n for n in (state.nodes[i] for i in state.active_ids())
                     if mt is None or n.type is mt]
            return sorted(nodes, key=lambda n: n.seq)[-newest if newest else 0:]
        one = statuses[0] if len(statuses) == 1 else None
        with self.engine.records.read() as tx:
            if newest is None:
                nodes = [n for n in tx.memories(state.name, one) if mt is None or n.type is mt]
            else:
                nodes = tx.memories_by_id(state.name, tx.newest_ids(state.name, newest,
                                                                    status=one, mtype=mt))
        return sorted(nodes, key=lambda n: n.seq)

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
        with self.engine.unit(durable=self.engine.config.durable_accesses) as unit:
            elastic, cfg = self.engine.elastic(ns, unit), self.engine.config.elastic
            if telemetry and elastic is not None and cfg is not None:
                self.engine.set_elastic(unit, ns, elastic.observe_hits(
                    cfg, active=sum(1 for h in hits if not h.archived), total=len(hits)))
            step, now = self.engine.step(unit, ns), self.engine.clock.now()
            for h in reversed(hits):  # the best hit becomes the most recently used
                node = state.node(h.node.id)
                self.engine.stage_stats(unit, node.model_copy(update={
                    "access_count": node.access_count + 1, "last_access_at": now,
                    "last_access_step": step, "touch_seq": self.engine.touch(unit, ns)}))
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

    def searcher(self, state: NamespaceState) -> Callable[[str, int], list[str]]:
        """The full-text search of ``state``'s active memories: text, how many → ids."""
        cfg = self.engine.config.retrieval

        def search(text: str, k: int) -> list[str]:
            found = self.engine.search_terms(TermQuery(state.name, tuple(terms(text)), k=k,
                                                  k1=cfg.bm25_k1, b=cfg.bm25_b))
            return [i for i, _ in found.hits]
        return search

    def recallable(self, state: NamespaceState) -> Callable[[MemoryNode], bool]:
        """Private mode: only what consent covers may be recalled."""
        prefs, now = state.prefs, self.engine.clock.now()
        if prefs is None or not prefs.private_mode:
            return lambda node: True
        return lambda node: prefs.recallable(node, now)

    def purpose_filter(self, state: NamespaceState, goal: str | None) -> Callable[[str], bool]:
        """Purpose limitation (seed 000 §4.3): private mode hides what consent does not
        cover; for a goal, social memories must be linked to a task of that goal."""
        recallable = self.recallable(state)
        goal_words = set(terms(goal or ""))

        def linked_to_goal(nid: str) -> bool:
            for e in state.graph.in_edges(nid) + state.graph.out_edges(nid):
                other = state.get(e.target if e.source == nid else e.source)
                if other is not None and other.type is MemoryType.TASK and \
                        goal_words & set(terms(other.content)):
                    return True
            return False

        def allowed(nid: str) -> bool:
            node = state.node(nid)
            if not recallable(node):
                return False
            return goal is None or node.type is not MemoryType.SOCIAL or linked_to_goal(nid)

        return allowed
