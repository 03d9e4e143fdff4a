"""``MemoryStore``: the façade where every path meets (DESIGN §3).

It validates, delegates and audits; the work lives in the modules below it. Every
public operation runs under one re-entrant lock, stages its writes (memory records,
audit events, store state) in one :class:`~mars_core.backends.base.WriteBatch`, applies
the batch, and only then updates the in-memory views — so a rejected input or a failed
write changes nothing, and a write that returned is durable.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> with MemoryStore(budget=50, clock=FakeClock()) as store:
    ...     a = store.add("Ana moved to Lisbon in May", type="episodic")
    ...     hits = store.retrieve("where does Ana live?", budget_tokens=20)
    ...     [h.id == a.id for h in hits]
    [True]
"""

from __future__ import annotations

import builtins
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pydantic

from mars_core import assemble, codec
from mars_core._async import asyncify
from mars_core.audit import AuditOp, VerifyReport
from mars_core.backends.base import Record
from mars_core.context import Validity, rank_recall, recall_walk, render_context
from mars_core.core import StoreCore, _op
from mars_core.embeddings import Embedder, embed_one
from mars_core.errors import (
    BlockedByPreferenceError,
    BudgetExceededError,
    ConflictError,
    NotFoundError,
    ValidationError,
)
from mars_core.explain import Explanation, explain
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
)
from mars_core.policies import Eviction
from mars_core.privacy.erasure import plan_erasure
from mars_core.privacy.preferences import ConsentGrant, PrivacyPreferences
from mars_core.privacy.receipts import ErasureReceipt, PrivacyReceipt, build_receipt
from mars_core.privacy.redaction import redact as redact_text
from mars_core.retrieval import Hit, Query, pack
from mars_core.retrieval import relative_cutoff as cut

__all__ = ["MemoryStore"]


class MemoryStore(StoreCore):
    """A typed, budgeted, audited memory store over a vector backend.

    Args:
        backend: where records live (default: an ephemeral in-memory backend).
        embedder: text → vector (default: :class:`~mars_core.embeddings.HashingEmbedder`).
        config: a :class:`~mars_core.config.StoreConfig`; keyword overrides below win.
        clock: wall-clock source (default: the system clock).
        audit_key: secret for keyed content hashes and the audit chain (default: random,
            generated once and kept in the store's ``meta`` collection).
        keys_path: a directory of its own for encryption keys (needs the ``crypto``
            extra). When given, each memory's document is sealed with AES-256-GCM under a
            key of its own, and ``erase`` destroys the keys (crypto-shredding, for
            backends that cannot purge deleted data physically; see
            :mod:`mars_core.privacy.crypto`). Chosen when the store is created and recorded
            in its manifest: an encrypted store must always be opened with its keys.
            Bytes on disk then differ between runs; the decrypted store does not.
        read_only: open an existing store to read it: nothing is ever written (every
            change raises :class:`~mars_core.errors.ConflictError`; ``retrieve``,
            ``recall`` and ``render_context`` record no access; no collection is made or
            tuned) and no writer lease is taken. What it shows is the store as of the
            open: :meth:`refresh` (or reopen) to see later writes. (An embedded Chroma or
            Qdrant directory, which one process holds at a time, still completes a
            crashed batch when its backend opens it.)
        lease_ttl: seconds a writer lease lasts without writes (at least 3), on a
            shared backend (a Chroma or Qdrant server, or a client passed in): one writer
            per store, any number of ``read_only`` readers; see docs/deployment.md.
        **overrides: any ``StoreConfig`` field, e.g. ``budget=8000, policy="lru"``.

    Examples:
        >>> store = MemoryStore(budget=100, policy="fifo")
        >>> store.add("I prefer window seats", type="semantic").type.value
        'semantic'
        >>> store.close()
    """

    # --- public API: writing -----------------------------------------------------------------

    @_op
    def add(
        self,
        text: str,
        *,
        type: MemoryType | str = MemoryType.EPISODIC,
        payload: Any = None,
        sensitivity: float | None = None,
        provenance: Provenance | Mapping[str, Any] | None = None,
        namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        pinned: bool = False,
        expires_at: datetime | None = None,
        links: Iterable[tuple[Predicate | str, str]] = (),
    ) -> MemoryNode:
        """Store a memory; evict by the policy if the namespace goes over budget.

        Args:
            text: the content (immutable once stored).
            type: ``episodic``, ``semantic``, ``social`` or ``task``.
            payload: the typed payload (a model or a mapping of its fields).
            sensitivity: privacy sensitivity in [0, 1] (default 0).
            provenance: where it came from; ``derived_from`` ids become derivesFrom edges.
            namespace: tenant/user/session (default ``config.default_namespace``).
            metadata: JSON-compatible user metadata.
            pinned: evict only when forced by the budget.
            expires_at: TTL expiry (UTC).
            links: extra edges ``(predicate, target_id)`` from this memory.

        Returns:
            The stored memory.

        Raises:
            ValidationError: bad input (nothing is stored).
            BudgetExceededError: heavier than the namespace's whole budget.
            NotFoundError: a linked memory does not exist.
        """
        ns = self._ns(namespace)
        txn = self._begin()
        step = self._step(txn, ns, advance=True)
        node, vector = self._build(txn, text, type, ns, step, payload=payload,
                                   sensitivity=sensitivity, provenance=provenance,
                                   metadata=dict(metadata) if metadata is not None else None,
                                   pinned=pinned, expires_at=expires_at)
        self._stage_insert(txn, node, vector, self._edges_for(node, links))
        self._enforce_budget(txn, ns, node.weight, [node.id])
        self._commit(txn)
        return node

    @_op
    def update(self, node_id: str, text: str, *,
               metadata: Mapping[str, Any] | None = None,
               expires_at: datetime | Literal["keep"] | None = "keep") -> MemoryNode:
        """Replace a memory's content: a new memory derivesFrom and supersedes the old one,
        which goes to the archive.

        Args:
            node_id: the memory to replace.
            text: the new content.
            metadata: the new version's metadata (default: a copy of the old one's).
            expires_at: the new version's expiry (default: the old one's; None: none).

        Raises:
            NotFoundError: no such memory.
        """
        old = self._state.get(node_id)
        expiry = old.expires_at if expires_at == "keep" else expires_at
        txn = self._begin()
        step = self._step(txn, old.namespace, advance=True)
        prov = old.provenance.model_copy(update={"derived_from": (old.id,)})
        node, vector = self._build(txn, text, old.type, old.namespace, step, payload=old.payload,
                                   sensitivity=old.sensitivity, provenance=prov,
                                   metadata=dict(old.metadata if metadata is None else metadata),
                                   pinned=old.pinned,
                                   expires_at=expiry)
        edges = self._edges_for(node, [(Predicate.SUPERSEDES, old.id)])
        self._stage_put(txn, node, vector, edges=edges)
        txn.audit.add(op=AuditOp.UPDATE, namespace=old.namespace, node_ids=[node.id, old.id],
                      step=step, at=node.created_at, rationale=f"new version of {old.id}",
                      contents={node.id: node.content})
        if old.is_active:
            self._stage_archive(txn, old.namespace, [Eviction(
                old.id, old.weight, None, {}, f"superseded by its new version {node.id}")],
                "update", {})
        self._enforce_budget(txn, old.namespace, node.weight - (old.weight if old.is_active else 0),
                             [node.id, old.id])
        self._commit(txn)
        return node

    @_op
    def forget(self, node_id: str, reason: str = "forgotten on request") -> MemoryNode:
        """Deliberately forget a memory: it moves to the archive (still explainable and
        searchable with ``include_archive=True``). Already archived: returned unchanged."""
        node = self._state.get(node_id)
        if not node.is_active:
            return node
        txn = self._begin()
        self._stage_archive(txn, node.namespace, [Eviction(node.id, node.weight, None, {},
                                                           f"forgotten by the user: {reason}")],
                            "user", {})
        self._commit(txn)
        self.policy.on_forget(node, self._state.step(node.namespace))
        return self._state.nodes[node_id]

    @_op
    def restore(self, node_id: str) -> MemoryNode:
        """Bring an archived memory back to the active store (the budget is enforced)."""
        node = self._state.get(node_id)
        if node.is_active:
            return node
        txn = self._begin()
        txn.touch += 1
        vec = self.backend.get(self._colls[MemoryStatus.ARCHIVED], [node_id],
                               with_vectors=True)[0].vector
        restored = node.model_copy(update={"status": MemoryStatus.ACTIVE,
                                           "touch_seq": txn.touch, "activated_seq": txn.touch})
        self._stage_put(txn, restored, vec, MemoryStatus.ARCHIVED)
        txn.audit.add(op=AuditOp.RESTORE, namespace=node.namespace, node_ids=[node_id],
                      step=self._step(txn, node.namespace), at=self.clock.now(),
                      rationale="restored from the archive on request")
        self._enforce_budget(txn, node.namespace, node.weight, [node_id])
        self._commit(txn)
        return restored

    @_op
    def link(self, source: str, predicate: Predicate | str, target: str) -> Edge:
        """Add a typed edge between two memories of one namespace."""
        node = self._state.get(source)
        edges = self._edges_for(node, [(predicate, target)], implicit=False)
        self._state.graph.check(edges[0])
        txn = self._begin()
        self._stage_put(txn, node, None, node.status, edges)
        txn.audit.add(op=AuditOp.METADATA, namespace=node.namespace, node_ids=[source, target],
                      step=self._step(txn, node.namespace), at=self.clock.now(),
                      rationale=f"linked {source} {edges[0].predicate.value} {target}")
        self._commit(txn)
        return edges[0]

    @_op
    def observe(
        self,
        role: str,
        text: str,
        *,
        namespace: str | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        turn: int | None = None,
        speaker: str | None = None,
        at: datetime | None = None,
        external_id: str | None = None,
    ) -> builtins.list[MemoryNode]:
        """Store one conversational turn and what it says about the user — no LLM call.

        Always one episodic memory per turn (linked ``temporalNext`` from the previous
        turn of the conversation); semantic facts, preferences, constraints, social
        relations and dated plans are extracted by deterministic cue rules
        (:mod:`mars_core.extract`), each ``derivesFrom`` the episode. A new value on a
        known topic supersedes (or, after a correction cue, corrects) the old memory,
        which moves to the archive. Text signals and the DMF survival score are
        computed once, here.

        Args:
            role: ``user``, ``assistant``, ``tool``, ... (the provenance source).
            text: the turn.
            namespace: the user/tenant/session.
            conversation_id: groups turns into a conversation.
            session_id: a session within it.
            turn: turn index.
            speaker: who "I" is in the text (e.g. a LoCoMo speaker name).
            at: when the turn happened (default: the store's clock).
            external_id: the turn's id in the caller's system.

        Returns:
            The stored memories: the episode first, then the extracted ones.
        """
        if not isinstance(role, str) or not role.strip():
            raise ValidationError("role must be a non-empty string such as 'user'")
        ns = self._ns(namespace)
        try:
            prov = Provenance(source=role, conversation_id=conversation_id,
                              session_id=session_id, turn=turn, external_id=external_id)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "turn provenance") from None
        try:
            self._check_allowed(text, ns, conversation_id)
        except BlockedByPreferenceError:
            return []  # the user asked for this never to be stored: a turn leaves no trace
        txn = self._begin()
        nodes = self._stage_observe(txn, ns, text, prov=prov, speaker=speaker, at=at)
        self._enforce_budget(txn, ns, sum(n.weight for n in nodes), [n.id for n in nodes])
        self._commit(txn)
        return [self._state.nodes.get(n.id, n) for n in nodes]

    # --- public API: reading -------------------------------------------------------------------

    @_op
    def get(self, node_id: str) -> MemoryNode:
        """A memory by id (active or archived); not counted as an access."""
        return self._state.get(node_id)

    @_op
    def list(
        self,
        namespace: str | None = None,
        *,
        type: MemoryType | str | None = None,
        status: MemoryStatus | str | None = MemoryStatus.ACTIVE,
    ) -> builtins.list[MemoryNode]:
        """Memories of a namespace, oldest first (``status=None``: active and archived)."""
        ns = self._ns(namespace)
        try:
            statuses = list(MemoryStatus) if status is None else [MemoryStatus(status)]
            mt = None if type is None else MemoryType(type)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        nodes = [self._state.nodes[i] for s in statuses for i in self._state.ids(ns, s)]
        nodes = [n for n in nodes if mt is None or n.type is mt]
        return sorted(nodes, key=lambda n: n.seq)

    @_op
    def history(self, node_id: str) -> builtins.list[MemoryNode]:
        """All versions of a memory along ``supersedes`` edges, oldest first."""
        self._state.get(node_id)
        g, seen, todo = self._state.graph, {node_id}, [node_id]
        while todo:
            cur = todo.pop()
            for e in g.out_edges(cur, Predicate.SUPERSEDES) + g.in_edges(cur, Predicate.SUPERSEDES):
                for nxt in (e.source, e.target):
                    if nxt not in seen and nxt in self._state.nodes:
                        seen.add(nxt)
                        todo.append(nxt)
        return sorted((self._state.nodes[i] for i in seen), key=lambda n: n.seq)

    @_op
    def retrieve(
        self,
        query: str,
        *,
        budget_tokens: int | None = None,
        k: int | None = None,
        types: Iterable[MemoryType | str] | None = None,
        max_sensitivity: float | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        conversation: str | None = None,
        namespace: str | None = None,
        include_archive: bool = False,
        read_only: bool = False,
        relative_cutoff: float | None = None,
    ) -> builtins.list[Hit]:
        """Hybrid (dense + BM25) retrieval, reranked, cut and packed into a token budget.

        The pipeline is the one measured on LoCoMo (docs/benchmarks/evidence.md), set by
        :class:`~mars_core.config.RetrievalConfig`: ``dense_weight`` · cosine + the rest ·
        BM25, plus ``cue_weight`` · the answerability rerank; hits below
        ``relative_cutoff`` × the best score are dropped; what remains fills the budget in
        rank order, at most ``k``. So it may return fewer than ``k`` hits: pass
        ``relative_cutoff=0`` for "the ``k`` best" (the framework adapters whose contract
        is exactly ``k`` do).

        Counts as an access of every hit (statistics, recency, one audit event) unless
        ``read_only`` (always so in a store opened with ``read_only=True``). Archived
        memories come only with ``include_archive`` and rank after active ones of equal
        score.

        Args:
            query: the question or cue.
            budget_tokens: token budget (the config's ``default_budget_tokens`` if None).
            k: at most this many hits (no limit if None).
            types: only memories of these types.
            max_sensitivity: only memories at most this sensitive.
            since: only memories created at or after this time.
            until: only memories created before this time.
            conversation: only memories of this conversation.
            namespace: the namespace (the default one if None).
            include_archive: also search archived (forgotten) memories.
            read_only: do not count the retrieval as an access.
            relative_cutoff: this call's cut-off in [0, 1] (the config's if None; 0: off).

        Raises:
            ValidationError: bad query or filter values.
        """
        q, budget = self._query(query, namespace=namespace, types=types,
                                max_sensitivity=max_sensitivity, since=since, until=until,
                                conversation=conversation, budget_tokens=budget_tokens, k=k)
        ratio = self._cutoff(relative_cutoff)
        qvec = embed_one(self.embedder, query)
        hits = self._rank(MemoryStatus.ACTIVE, qvec, q)
        if include_archive:
            hits += [Hit(h.node, h.score * 0.9, h.dense, h.lexical, True)
                     for h in self._rank(MemoryStatus.ARCHIVED, qvec, q)]
            hits.sort(key=lambda h: (-h.score, h.archived, h.node.seq))
        recallable = self._recallable(q.namespace)  # private mode without consent
        chosen = pack(cut([h for h in hits if recallable(h.node)], ratio, self._derivation),
                      budget, k)
        if not read_only and chosen:  # a read-only store records no access anyway
            self.policy.on_retrieve(q.namespace, [h.node for h in chosen], budget,
                                    self._state.step(q.namespace))
            self._record_access(q.namespace, chosen, budget, query)
        return chosen

    @_op
    def recall(
        self,
        entity: str | None = None,
        *,
        goal: str | None = None,
        namespace: str | None = None,
        k: int = 10,
        max_hops: int = 2,
        read_only: bool = False,
    ) -> builtins.list[Hit]:
        """Memories around an entity or a goal: a walk of a small ball in the semantic and
        social graph, reranked by similarity to the goal (seed 000 §4.1). The hits count
        as an access unless ``read_only`` (always so in a store opened with
        ``read_only=True``).

        Raises:
            ValidationError: neither or both of ``entity`` and ``goal``.
        """
        if (entity is None) == (goal is None) or not (entity or goal or "").strip():
            raise ValidationError("recall needs exactly one of entity= or goal=")
        if not isinstance(k, int) or k <= 0:
            raise ValidationError("k must be a positive integer")
        ns = self._ns(namespace)
        starts = assemble.recall_starts(self._state, ns, entity, goal, limit=k)
        ball = recall_walk(self._state.graph, starts, self._state.is_active,
                           max_hops=max_hops, max_nodes=4 * k)
        ids = [i for i, _ in ball]
        vecs = dict(zip(ids, self._vectors(ids), strict=True))
        ranked = rank_recall(ball, vecs, embed_one(self.embedder, entity or goal or ""),
                             allowed=self._purpose_filter(ns, goal), limit=k)
        hits = [Hit(self._state.nodes[r.node_id], r.score, r.similarity or 0.0, 0.0)
                for r in ranked]
        if hits and not read_only:
            self._record_access(ns, hits, sum(h.node.weight for h in hits), entity or goal or "")
        return hits

    @_op
    def render_context(
        self,
        query: str,
        *,
        budget_tokens: int | None = None,
        namespace: str | None = None,
        conversation: str | None = None,
        active_turns: int = 6,
        evidence: int = 5,
        redact: bool = True,
        evidence_only: bool = False,
    ) -> str:
        """Prompt-ready context: recalled evidence, its raw support, then the active
        conversation — the layout of DMF §9.3 step 6, within ``budget_tokens``.

        ``evidence_only=True`` leaves the active-conversation section out (for
        integrations that render the conversation themselves); the active turns are
        still not repeated as evidence.

        With ``redact`` (the default) the text passes the two-pass output check
        (:mod:`mars_core.privacy.redaction`): surface detectors mask identifiers and
        secrets, then any reappearance of a high-sensitivity memory's sensitive phrases
        (or of the user's private or blocked entities) is masked. The evidence counts as
        an access (one audit event, with the redaction counts), except in a store opened
        with ``read_only=True``.
        """
        q, budget = self._query(query, namespace=namespace, types=None, max_sensitivity=None,
                                since=None, until=None, conversation=None,
                                budget_tokens=budget_tokens, k=None)
        active = assemble.active_turns(self._state, q.namespace, conversation, active_turns)
        skip = frozenset(n.id for n in active)
        recallable = self._recallable(q.namespace)
        echo = " ".join(q.text.split()).casefold()  # the question is not its own evidence
        hits = [h for h in self._rank(MemoryStatus.ACTIVE, embed_one(self.embedder, query),
                                      Query(q.text, q.namespace))
                if assemble.validity(self._state, h.id) is Validity.CURRENT
                and recallable(h.node) and " ".join(h.node.content.split()).casefold() != echo]
        # cut with the active turns still in: a fact drawn from a turn on screen stays
        hits = [h for h in cut(hits, self.config.retrieval.relative_cutoff, self._derivation)
                if h.id not in skip][:evidence]
        cards = [(h.node, h.score, Validity.CURRENT) for h in hits]
        support = assemble.support_for(self._state, [h.node for h in hits],
                                       skip=skip | {h.id for h in hits})
        text = render_context(assemble.evidence_items(cards), assemble.evidence_items(support),
                              assemble.evidence_items([(n, float(i), Validity.CURRENT)
                                                       for i, n in enumerate(active)]),
                              budget, self.counter.count, evidence_only=evidence_only)
        counts: dict[str, Any] = {}
        if redact:
            result = redact_text(text, protected=self._protected_phrases(q.namespace),
                                 analyzer=self.enricher.analyzer)
            text, counts = result.text, {"redacted": result.spans_redacted,
                                         "redacted_kinds": sorted(k.value for k in result.kinds)}
        if hits:
            self._record_access(q.namespace, hits, budget, query, counts)
        return text

    @_op
    def credit(self, used: Iterable[str], offered: Iterable[str],
               namespace: str | None = None) -> None:
        """Feedback after an answer: of the memories ``offered`` to it, ``used`` were used.

        It feeds the policies' observable rewards (the meta-controller, the per-type
        shares; seed 002's Recognizer credit). Nothing is stored.

        Raises:
            ValidationError: ``used`` is not a subset of ``offered``.
        """
        ns = self._ns(namespace)
        used_l, offered_l = list(used), list(offered)
        if not set(used_l) <= set(offered_l):
            raise ValidationError("credited memories must be among those offered")
        self.policy.on_credit(ns, used_l, offered_l, self._state.step(ns))

    @_op
    def reinforce(self, ids: Iterable[str], namespace: str | None = None,
                  reason: str = "credited use", *, credit: bool = True) -> None:
        """Record a use of exactly these memories: an access each (statistics, LRU order,
        Oblivion's frequency), one audit event, and — with ``credit`` — the policies'
        credit hook (an answer used them; ``credit=False`` for a plain read, e.g. a
        LangGraph store search).

        Raises:
            ValidationError: an id of another namespace, or an archived memory.
            NotFoundError: an unknown id.
        """
        ns = self._ns(namespace)
        nodes = [self._state.get(i) for i in dict.fromkeys(ids)]
        for n in nodes:
            if n.namespace != ns or not n.is_active:
                raise ValidationError(f"memory {n.id} is not an active memory of {ns!r}")
        if not nodes:
            return
        hits = [Hit(n, 1.0, 0.0, 0.0, False) for n in nodes]
        self._record_access(ns, hits, sum(n.weight for n in nodes), "",
                            {"reason": reason}, rationale=f"{reason}: {len(nodes)} memories")
        if credit:
            self.policy.on_credit(ns, [n.id for n in nodes], [n.id for n in nodes],
                                  self._state.step(ns))

    @_op
    def set_metadata(self, node_id: str, metadata: Mapping[str, Any] | None = None, *,
                     expires_at: datetime | Literal["keep"] | None = "keep",
                     pinned: bool | None = None) -> MemoryNode:
        """Change what is mutable about a memory — its metadata, TTL expiry, pin — in place.

        Content is immutable (use :meth:`update`); one ``metadata`` audit event records the
        change (field names, never values).

        Raises:
            NotFoundError: no such memory.
            ValidationError: metadata that is not JSON-compatible.
        """
        old = self._state.get(node_id)
        update: dict[str, Any] = {}
        if metadata is not None:
            update["metadata"] = dict(metadata)
        if expires_at != "keep":
            update["expires_at"] = expires_at
        if pinned is not None:
            update["pinned"] = pinned
        try:
            node = MemoryNode.model_validate({**old.model_dump(), **update})
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "metadata change") from None
        txn = self._begin()
        step = self._step(txn, old.namespace)
        self._stage_put(txn, node)
        txn.audit.add(op=AuditOp.METADATA, namespace=old.namespace, node_ids=[node.id],
                      step=step, at=self.clock.now(), params={"fields": sorted(update)},
                      rationale=f"changed {', '.join(sorted(update)) or 'nothing'}")
        self._commit(txn)
        return node

    @_op
    def namespaces(self) -> builtins.list[str]:
        """Every namespace that holds memories (active or archived), sorted."""
        return sorted(ns for ns, by in self._state.by_ns.items() if any(by.values()))

    @_op
    def explain(self, node_id: str) -> Explanation:
        """The provenance chain and the audit rationale of a memory (also when forgotten)."""
        return explain(self._state, self.audit, node_id)

    @_op
    def verify(self) -> VerifyReport:
        """Verify the audit chain held in memory: hashes, order and links. (Its head was
        checked against the store's state record when the store was opened.)"""
        return self.audit.verify()

    @_op
    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts, token use and configuration (of one namespace, or of all)."""
        st = self._state
        names = [self._ns(namespace)] if namespace is not None else st.namespaces()
        per = {}
        for ns in names:
            per[ns] = {
                "active": st.count(ns, MemoryStatus.ACTIVE),
                "archived": st.count(ns, MemoryStatus.ARCHIVED),
                "tokens": st.ledger.used(ns), "budget": self.config.budget_for(ns),
                "tokens_by_type": {t.value: v for t, v in st.ledger.by_type(ns).items()},
                "step": st.step(ns),
            }
        return {"backend": self.backend.name, "backend_choice": self._backend_note,
                "embedder": self.embedder.name, "dim": self.embedder.dim,
                "encrypted": self._cipher is not None, "token_counter": self.counter.name,
                "policy": self.policy.name, "audit_events": len(self.audit), "namespaces": per}

    @_op
    def reembed(self, embedder: Embedder, batch_size: int = 256) -> int:
        """Move the store to a new embedder; returns how many memories were re-embedded.

        Vectors are written to new collections first; one atomic write then switches the
        manifest (with a ``config`` audit event); only then are the old collections
        emptied. A crash before the switch leaves the store on the old embedder, after
        it on the new one; a failure deletes the copies made so far, and the next try
        starts from empty new collections. Reopen the store with the new embedder
        afterwards.
        """
        self._begin()  # refuses a read-only store before anything is written
        if self._lease is not None:
            self._lease.check()  # ... and a writer that lost its lease
        new = self._reembed_targets()
        try:
            count = sum(self._copy_embedded(self._colls[status], name, embedder, batch_size)
                        for status, name in new.items())
        except ConflictError:
            raise  # the lease is another writer's now: not ours to write (erasure purges)
        except BaseException:
            self._empty(new.values())  # no copy outlives the failure (an erased text!)
            raise
        txn = self._begin()
        txn.batch.upsert(codec.META, [codec.meta_record("manifest", self._manifest(embedder, new))])
        txn.audit.add(op=AuditOp.CONFIG, namespace=self.config.default_namespace, step=0,
                      at=self.clock.now(), params={"embedder": embedder.name, "dim": embedder.dim},
                      rationale=f"re-embedded {count} memories with {embedder.name}")
        self._commit(txn)
        old, self._colls, self.embedder = self._colls, new, embedder
        self._empty(old.values())
        return count

    def _copy_embedded(self, source: str, target: str, embedder: Embedder,
                       batch_size: int) -> int:
        """Copy ``source``'s records into ``target`` (emptied first: a crashed earlier
        try may have left copies, of memories erased since) with ``embedder``'s vectors."""
        self.backend.ensure_collection(target, embedder.dim)
        self._empty([target])
        records = self.backend.get(source)
        for i in range(0, len(records), batch_size):
            chunk = records[i:i + batch_size]
            texts = [codec.decode_node(r, self._unseal)[0].content for r in chunk]
            vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
            if vecs.shape != (len(chunk), embedder.dim):
                raise ValidationError(f"embedder {embedder.name!r} returned {vecs.shape}")
            if self._lease is not None:
                self._lease.check()  # and renews it: a long re-embedding keeps the store
            self.backend.upsert(target, [Record(r.id, v, r.document, r.metadata)
                                         for r, v in zip(chunk, vecs, strict=True)])
        return len(records)

    @_op
    def maintain(self, namespace: str | None = None, *, ttl: bool = True,
                 graduated: bool = False, dedup: bool = True,
                 reflect: bool = True) -> dict[str, dict[str, int]]:
        """Background hygiene, off the ``add`` path (seed 003, seed 000 §5.1):

        1. ``ttl``: archive memories past their expiry or their type's TTL (seed 003,
           overridden by the user's retention horizons);
        2. ``graduated``: seed 003 graduated retention (opt-in: it archives idle memories
           after 90 days regardless of type);
        3. ``dedup``: merge near-duplicates (cosine > ``config.dedup_threshold``), the newer
           memory absorbing the older;
        4. ``reflect``: consolidate redundant episodes into summaries when the namespace
           is above ``config.reflect_at`` of its budget.

        Pinned memories, active goals and their prerequisites are never touched. Each
        namespace is one atomic write. Returns counts per namespace.
        """
        names = [self._ns(namespace)] if namespace is not None else self._state.namespaces()
        return {ns: self._maintain_namespace(ns, ttl=ttl, graduated=graduated, dedup=dedup,
                                             reflect=reflect) for ns in names}

    # --- privacy ---------------------------------------------------------------------------------

    @_op
    def erase(
        self,
        node_id: str | None = None,
        *,
        entity: str | None = None,
        conversation: str | None = None,
        namespace: str | None = None,
    ) -> ErasureReceipt:
        """Right to be forgotten: remove memories and everything derived from them.

        Give exactly one selector — ``node_id``, ``entity`` (every memory mentioning it),
        ``conversation`` (every memory from it) — scoped to ``namespace``; or give only
        ``namespace`` to erase the whole namespace. Summaries built on erased memories
        are regenerated from what survives, or erased when too little does
        (:mod:`mars_core.privacy.erasure`). The text leaves active memory, the archive
        and every collection; backends that can rewrite their files are compacted.
        The audit keeps one ``erase`` event per memory, with keyed hashes only.
        Erasing a whole namespace also erases its privacy preferences. With encryption
        on (``keys_path``), the keys of every erased record are then destroyed, so what
        a backend keeps of deleted documents is ciphertext without a key.

        Raises:
            ValidationError: no selector, or several.
            NotFoundError: ``node_id`` does not exist.
        """
        if node_id is not None and namespace is None:
            namespace = self._state.get(node_id).namespace
        ns = self._ns(namespace)
        whole = namespace is not None and node_id is entity is conversation is None
        plan = plan_erasure(self._state, ns, node_id=node_id, entity=entity,
                            conversation=conversation, namespace_all=whole)
        request = ("node" if node_id is not None else "entity" if entity is not None
                   else "conversation" if conversation is not None else "namespace")
        selector = node_id or entity or conversation or ns
        params = {"target_hash": self.audit.content_hash(selector)[:16]}
        txn = self._begin()
        first = len(self.audit)
        by_type = Counter(self._state.nodes[i].type.value for i in plan.erased)
        renamed = self._stage_erase(txn, ns, plan, request, params)
        keys = [*plan.erased, *renamed, *(self._stage_prefs_erasure(txn, ns) if whole else [])]
        self._commit(txn)
        for gone in [*plan.erased, *renamed]:  # no erased phrase stays in memory either
            self._phrases.pop(gone, None)
        if whole:
            self._prefs.pop(ns, None)
        shredded = self._shred(keys)  # after the records are gone, never before
        self._prime_centroids([n for n in self._state.nodes.values() if n.namespace == ns])
        return ErasureReceipt(request, ns, plan.erased, tuple(renamed.items()), dict(by_type),
                              tuple(range(first, len(self.audit))), self._purge(shredded))

    @_op
    def preferences(self, namespace: str | None = None) -> PrivacyPreferences:
        """The namespace's privacy preferences (defaults when none were set)."""
        return self._prefs.get(self._ns(namespace), PrivacyPreferences())

    @_op
    def set_preferences(self, preferences: PrivacyPreferences | Mapping[str, Any],
                        namespace: str | None = None) -> PrivacyPreferences:
        """Set a namespace's privacy preferences and apply them to what it already holds.

        Sensitivities are recomputed from each memory's detected sensitivity (kept in its
        signals) under the new preferences — private entities and their descendants
        included; every changed memory gets one ``metadata`` audit event. The change of
        preferences itself is one ``config`` event (counts only, no entity names).
        """
        ns = self._ns(namespace)
        try:
            prefs = preferences if isinstance(preferences, PrivacyPreferences) else \
                PrivacyPreferences.model_validate(preferences)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "privacy preferences") from None
        txn = self._begin()
        self._stage_preferences(txn, ns, prefs)
        self._commit(txn)
        self._prefs[ns] = prefs
        return prefs

    @_op
    def grant_consent(self, *, types: Iterable[MemoryType | str] = (),
                      entities: Iterable[str] = (), purpose: str = "",
                      expires_at: datetime | None = None,
                      namespace: str | None = None) -> ConsentGrant:
        """Allow private memories (by type and/or entity) to be recalled in private mode."""
        ns = self._ns(namespace)
        prefs = self._prefs.get(ns, PrivacyPreferences())
        try:
            grant = ConsentGrant(id=f"consent-{len(self.audit)}", types=tuple(
                MemoryType(t) for t in types), entities=tuple(entities), purpose=purpose,
                granted_at=self.clock.now(), expires_at=expires_at)
        except (ValueError, pydantic.ValidationError) as exc:
            raise ValidationError(f"invalid consent: {exc}") from None
        self.set_preferences(prefs.model_copy(update={"consents": (*prefs.consents, grant)}),
                             ns)
        return grant

    @_op
    def revoke_consent(self, consent_id: str, namespace: str | None = None) -> None:
        """Withdraw a consent grant (recorded in the audit)."""
        ns = self._ns(namespace)
        prefs = self._prefs.get(ns, PrivacyPreferences())
        kept = tuple(c for c in prefs.consents if c.id != consent_id)
        if len(kept) == len(prefs.consents):
            raise NotFoundError(f"no consent {consent_id!r} in namespace {ns!r}")
        self.set_preferences(prefs.model_copy(update={"consents": kept}), ns)

    @_op
    def receipt(self, namespace: str | None = None) -> PrivacyReceipt:
        """The privacy receipt of a namespace: stored, summarised, removed, and why."""
        ns = self._ns(namespace)
        return build_receipt(ns, self.list(ns, status=None), self.audit.events(ns))

    # --- export / import -------------------------------------------------------------------------

    @_op
    def export_jsonld(self, path: str | os.PathLike[str] | None = None,
                      namespace: str | None = None) -> dict[str, Any]:
        """Export memories and edges as JSON-LD (to ``path`` when given); returns the document."""
        from mars_core.io import to_jsonld, write_json

        nodes = [n for n in sorted(self._state.nodes.values(), key=lambda n: n.seq)
                 if namespace is None or n.namespace == namespace]
        keep = {n.id for n in nodes}
        edges = [e for e in self._state.graph.edges() if e.source in keep and e.target in keep]
        doc = to_jsonld(nodes, edges, {ns: self._state.step(ns) for ns in
                                       sorted({n.namespace for n in nodes})})
        if path is not None:
            write_json(Path(path), doc)
        return doc

    @_op
    def import_jsonld(self, source: str | os.PathLike[str] | Mapping[str, Any]) -> int:
        """Import a JSON-LD export (ids preserved); returns how many memories were imported.

        Raises:
            ImportFormatError: malformed document (nothing imported).
            ConflictError: an id already exists here (nothing imported).
        """
        from mars_core.io import from_jsonld

        nodes, edges, steps = from_jsonld(source)
        nodes = [n.model_copy(update={"weight": max(1, self.counter.count(n.content))})
                 for n in nodes]  # weights are ours to count, whatever the document says
        clash = [n.id for n in nodes if n.id in self._state.nodes]
        if clash:
            raise ConflictError(f"{len(clash)} imported ids already exist (first: {clash[0]})")
        self._check_import_edges(nodes, edges)
        for ns in {n.namespace for n in nodes}:
            if sum(n.weight for n in nodes if n.namespace == ns and n.is_active) > \
                    self.config.budget_for(ns):
                raise BudgetExceededError(f"active memories of {ns!r} exceed its budget")
        vectors = self.embedder.embed([n.content for n in nodes]) if nodes else \
            np.zeros((0, self.embedder.dim), dtype=np.float32)
        by_source: dict[str, list[Edge]] = {}
        for e in edges:
            by_source.setdefault(e.source, []).append(e)
        txn = self._begin()
        for node, vec in zip(nodes, vectors, strict=True):
            self._stage_put(txn, node, vec, edges=by_source.get(node.id, []))
            txn.counter, txn.touch = max(txn.counter, node.seq), max(txn.touch, node.touch_seq)
        for ns, step in steps.items():
            txn.steps[ns] = max(step, self._state.step(ns))
        for ns in sorted({n.namespace for n in nodes}):
            ids = [n.id for n in nodes if n.namespace == ns]
            txn.audit.add(op=AuditOp.IMPORT, namespace=ns, node_ids=ids, step=self._step(txn, ns),
                          at=self.clock.now(), rationale=f"imported {len(ids)} memories")
        self._commit(txn)
        return len(nodes)

    @classmethod
    def from_jsonld(cls, source: str | os.PathLike[str] | Mapping[str, Any],
                    **kwargs: Any) -> MemoryStore:
        """A new (in-memory unless ``backend=`` is given) store holding a JSON-LD export."""
        store = cls(**kwargs)
        store.import_jsonld(source)
        return store

    # --- lifecycle -------------------------------------------------------------------------------

    @_op
    def refresh(self) -> bool:
        """Read the store again if its writer changed it since this reader last read it.

        For a ``read_only`` store beside a writer (another process on a shared server):
        one small read when nothing changed, otherwise the views are rebuilt as on open.
        A writer's own store is always current (``False``).

        Returns:
            Whether anything was read again.

        Raises:
            EmbeddingMismatchError, CorruptStoreError, MarsBackendError: as when opening
                (the writer moved the store to another embedder, ...); the store then
                stays as it was.
        """
        return self._refresh()

    def close(self) -> None:
        """Close the store and its backend (idempotent)."""
        with self._lock:
            if not self._closed:
                try:
                    self._flush_policy_state()
                finally:  # closed whatever the flush met: no handle outlives close()
                    self._closed = True
                    self._release_lease()
                    self.backend.close()
                    if self._cipher is not None:
                        self._cipher.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- async twins (written once) ----------------------------------------------------------

    aadd = asyncify(add)
    aupdate = asyncify(update)
    aforget = asyncify(forget)
    arestore = asyncify(restore)
    alink = asyncify(link)
    aobserve = asyncify(observe)
    arecall = asyncify(recall)
    arender_context = asyncify(render_context)
    aget = asyncify(get)
    alist = asyncify(list)
    ahistory = asyncify(history)
    aretrieve = asyncify(retrieve)
    acredit = asyncify(credit)
    aexplain = asyncify(explain)
    astats = asyncify(stats)
    averify = asyncify(verify)
    arefresh = asyncify(refresh)
    areembed = asyncify(reembed)
    amaintain = asyncify(maintain)
    aerase = asyncify(erase)
    areceipt = asyncify(receipt)
    apreferences = asyncify(preferences)
    aset_preferences = asyncify(set_preferences)
    agrant_consent = asyncify(grant_consent)
    arevoke_consent = asyncify(revoke_consent)
    aexport_jsonld = asyncify(export_jsonld)
    aimport_jsonld = asyncify(import_jsonld)
    aclose = asyncify(close)

