"""The writer: every call that stores or changes memories.

It builds memories (validation, ids, weights, write-time signals, sensitivity), stages
them with their edges and audit events, and restores the budget after each one with the
namespace's policy (sweep, then summaries and evictions, each archived with its
rationale). ``add`` and ``observe`` take one item or many: a bulk call is one
transaction and one batched embedding call, with the budget enforced after every item as
if they had come one by one.

Examples:
    >>> NewMemory("Ana moved to Lisbon").type
    <MemoryType.EPISODIC: 'episodic'>
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pydantic

from mars_core.audit import AuditOp, erased_token
from mars_core.engine.engine import Engine
from mars_core.engine.unit import Unit
from mars_core.errors import (
    BlockedByPreferenceError,
    BudgetExceededError,
    ConflictError,
    ErasedMemoryError,
    ImportFormatError,
    NotFoundError,
    ValidationError,
)
from mars_core.knowledge.enrich import Enricher
from mars_core.knowledge.extract import extract
from mars_core.model import (
    ArchiveReason,
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    TaskPayload,
    default_payload,
)
from mars_core.nlp import TextSignals
from mars_core.policies import Eviction, Summary
from mars_core.privacy.semantic import SemanticSensitivity, SemanticVerdict
from mars_core.progress import EMBED_BATCH, ProgressFn, report
from mars_core.storage.base import RecordTxn, Vector

__all__ = ["NewMemory", "Turn", "Writer", "mint_id"]

_IDS = uuid.UUID("6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f")


def mint_id(secret: str, counter: int) -> str:
    """The UUID of the ``counter``-th memory of a store with id secret ``secret`` (a
    random one per store, or the configured seed): Qdrant accepts only UUIDs, a replay of
    the same store gives the same ids, another store's cannot be guessed.

    Examples:
        >>> mint_id("0", 1) == mint_id("0", 1) != mint_id("1", 1)
        True
    """
    return str(uuid.uuid5(_IDS, f"{secret}:{counter}"))


@dataclass(frozen=True)
class NewMemory:
    """One memory to add (the arguments of :meth:`~mars_core.store.MemoryStore.add`)."""

    text: str
    type: MemoryType | str = MemoryType.EPISODIC
    payload: Any = None
    sensitivity: float | None = None
    provenance: Provenance | Mapping[str, Any] | None = None
    namespace: str = "default"
    metadata: Mapping[str, Any] | None = None
    pinned: bool = False
    expires_at: datetime | None = None
    links: tuple[tuple[Predicate | str, str], ...] = ()


@dataclass(frozen=True)
class Turn:
    """One conversational turn (the arguments of
    :meth:`~mars_core.store.MemoryStore.observe`)."""

    role: str
    text: str
    namespace: str = "default"
    provenance: Provenance = field(default_factory=Provenance)
    speaker: str | None = None
    at: datetime | None = None


class Embeddings:
    """Embeddings of one call: fetched up front in batches of
    :data:`~mars_core.progress.EMBED_BATCH` texts (one embedding call for a call of fewer
    texts; ``progress`` sees each batch), missing ones on demand. The write-time analysis
    of the same texts is batched too (:meth:`signals`, :meth:`verdict`)."""

    def __init__(self, engine: Engine, texts: Iterable[str],
                 progress: ProgressFn | None = None) -> None:
        self._engine = engine
        wanted = list(dict.fromkeys(texts))
        self._cache: dict[str, Vector] = {}
        self._verdicts: tuple[SemanticSensitivity, dict[str, SemanticVerdict]] | None = None
        self._signals: dict[str, TextSignals | None] | None = None
        if not wanted:
            return
        report(progress, "embed", 0, len(wanted))
        for start in range(0, len(wanted), EMBED_BATCH):
            batch = wanted[start:start + EMBED_BATCH]
            self._cache.update(zip(batch, self._embed(batch), strict=True))
            report(progress, "embed", start + len(batch), len(wanted))

    def _embed(self, texts: Sequence[str]) -> list[Vector]:
        emb = self._engine.embedder
        out = np.asarray(emb.embed(list(texts)), dtype=np.float32)
        if out.shape != (len(texts), emb.dim) or not np.all(np.isfinite(out)):
            raise ValidationError(f"embedder {emb.name!r} returned shape {out.shape} or "
                                  f"non-finite values for {len(texts)} texts")
        return list(out)

    def __len__(self) -> int:
        return len(self._cache)

    def verdict(self, text: str, model: SemanticSensitivity) -> SemanticVerdict:
        """The semantic sensitivity verdict of ``text``'s vector: every vector fetched up
        front is classified in one matrix product the first time one is asked for."""
        if self._verdicts is None or self._verdicts[0] is not model:
            texts = list(self._cache)
            found = model.verdicts(np.stack([self._cache[t] for t in texts])) if texts else []
            self._verdicts = (model, dict(zip(texts, found, strict=True)))
        known = self._verdicts[1].get(text)
        return known if known is not None else model.verdict(self(text))

    def signals(self, text: str, enricher: Enricher) -> TextSignals | None:
        """The text signals of ``text``: every text fetched up front is analysed in one
        batch the first time one is asked for (spaCy parses them with ``nlp.pipe``
        instead of one call each); the same signals as ``enricher.analyze(text)``."""
        if self._signals is None:
            texts = list(self._cache)
            self._signals = dict(zip(texts, enricher.analyze_many(texts), strict=True))
        if text in self._signals:
            return self._signals[text]
        return enricher.analyze(text)

    def __call__(self, text: str) -> Vector:
        vec = self._cache.get(text)
        if vec is None:
            vec = self._cache[text] = self._embed([text])[0]
        return vec


class Writer:
    """Stores and changes memories (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # --- adding ---------------------------------------------------------------------------

    def add(self, items: Sequence[NewMemory],
            progress: ProgressFn | None = None) -> list[MemoryNode]:
        """Store memories in one transaction (the budget restored after each);
        ``progress`` (:mod:`mars_core.progress`) follows the embedding, the staging and
        the commit.

        Raises:
            ValidationError, BudgetExceededError, NotFoundError, BlockedByPreferenceError:
                a bad item (nothing of the call is stored).
        """
        for item in items:
            _check_text(item.text)
            self._check_allowed(item.text, item.namespace, _conversation(item.provenance))
        vectors = Embeddings(self.engine, (i.text for i in items), progress)
        out = []
        report(progress, "store", 0, len(items))
        with self.engine.unit() as unit:
            self.reserve(unit, len(items))
            for done, item in enumerate(items, 1):
                ns = item.namespace
                step = self.engine.step(unit, ns, advance=True)
                node = self.build(unit, item.text, item.type, ns, step=step,
                                  vectors=vectors, payload=item.payload,
                                  sensitivity=item.sensitivity,
                                  provenance=item.provenance,
                                  metadata=dict(item.metadata) if item.metadata is not None
                                  else None, pinned=item.pinned, expires_at=item.expires_at)
                self.insert(unit, node, vectors(node.content), self.edges_for(node, item.links))
                self.enforce_budget(unit, ns, [node.id])
                out.append(node)
                report(progress, "store", done, len(items))
            report(progress, "write", 0, len(items))
        report(progress, "write", len(items), len(items))
        return [self.engine.ns(n.namespace).get(n.id) or n for n in out]

    def observe(self, turns: Sequence[Turn],
                progress: ProgressFn | None = None) -> list[list[MemoryNode]]:
        """Store turns in one transaction: an episode each plus what is extracted from it
        (``progress`` counts the turns kept).

        Turns the namespace's preferences block leave no trace (an empty list).
        """
        kept = [t for t in turns if not self._blocked(t)]
        vectors = Embeddings(self.engine, self._likely_texts(kept), progress)
        out: dict[int, list[MemoryNode]] = {}
        report(progress, "store", 0, len(kept))
        with self.engine.unit() as unit:
            self.reserve(unit, len(vectors))
            for done, turn in enumerate(kept, 1):
                nodes = self._stage_turn(unit, turn, vectors)
                self.enforce_budget(unit, turn.namespace, [n.id for n in nodes])
                out[id(turn)] = nodes
                report(progress, "store", done, len(kept))
            report(progress, "write", 0, len(kept))
        report(progress, "write", len(kept), len(kept))
        result = []
        for turn in turns:
            state = self.engine.ns(turn.namespace)
            result.append([state.get(n.id) or n for n in out.get(id(turn), [])])
        return result

    def _blocked(self, turn: Turn) -> bool:
        try:
            self._check_allowed(turn.text, turn.namespace, turn.provenance.conversation_id)
        except BlockedByPreferenceError:
            return True  # the user asked for this never to be stored: a turn leaves no trace
        return False

    def _likely_texts(self, turns: Sequence[Turn]) -> list[str]:
        """The turns and the facts a dry run of extraction finds in them, so one
        embedding call covers (nearly) all of a bulk call."""
        texts: list[str] = []
        known = {}
        for turn in turns:
            _check_text(turn.text)
            texts.append(turn.text)
            if turn.namespace not in known:
                known[turn.namespace] = copy.deepcopy(self.engine.ns(turn.namespace).known)
            for item in extract(turn.role, turn.text, None, speaker=turn.speaker,
                                known=known[turn.namespace],
                                anchor=turn.at or self.engine.clock.now()):
                texts.append(item.text)
        return texts

    def _stage_turn(self, unit: Unit, turn: Turn, vectors: Embeddings) -> list[MemoryNode]:
        """One turn: its episode, the memories extracted from it, their edges."""
        ns, prov = turn.namespace, turn.provenance
        state = self.engine.ns(ns)
        step = self.engine.step(unit, ns, advance=True)
        episode = self.build(unit, turn.text, MemoryType.EPISODIC, ns, step=step,
                             vectors=vectors, provenance=prov, created_at=turn.at,
                             payload={"participants": (turn.speaker,) if turn.speaker else ()})
        prev = state.latest_episode(prov.conversation_id)
        links = [Edge(source=prev, predicate=Predicate.TEMPORAL_NEXT, target=episode.id,
                      step=step)] if prev in state else []
        self.insert(unit, episode, vectors(turn.text), links, f"; turn of {prov.source}")
        out = [episode]
        items = list(extract(prov.source, turn.text, None, speaker=turn.speaker,
                             known=state.known, anchor=turn.at or self.engine.clock.now()))
        for item in items:
            node = self.build(
                unit, item.text, item.type, ns, step=step, vectors=vectors,
                payload=dict(item.payload), created_at=turn.at,
                provenance=prov.model_copy(update={"derived_from": (episode.id,)}))
            edges = [Edge(source=node.id, predicate=p, target=t, step=step)
                     for p, t in item.edges(episode.id) if t == episode.id or t in state]
            self.insert(unit, node, vectors(item.text), edges,
                        f"; {item.kind} extracted ({item.reason})")
            verb = "corrected" if item.corrects else "superseded"
            replaced = [old for old in map(state.get, item.replaced)
                        if old is not None and old.is_active]
            if replaced:
                self.archive(unit, ns, [Eviction(old.id, old.weight, None, {},
                                                 f"{verb} by the newer memory {node.id}")
                                        for old in replaced], "observe", {})
            out.append(node)
        return out

    # --- changing --------------------------------------------------------------------------

    def update(self, old: MemoryNode, text: str, metadata: Mapping[str, Any] | None,
               expires_at: datetime | None) -> MemoryNode:
        """A new version derivesFrom and supersedes ``old``, which is archived."""
        _check_text(text)
        ns = old.namespace
        self._check_allowed(text, ns, old.provenance.conversation_id)
        vectors = Embeddings(self.engine, [text])
        with self.engine.unit() as unit:
            step = self.engine.step(unit, ns, advance=True)
            prov = old.provenance.model_copy(update={"derived_from": (old.id,)})
            node = self.build(unit, text, old.type, ns, step=step, vectors=vectors,
                              payload=old.payload, sensitivity=old.sensitivity, provenance=prov,
                              metadata=dict(old.metadata if metadata is None else metadata),
                              pinned=old.pinned, expires_at=expires_at)
            edges = self.edges_for(node, [(Predicate.SUPERSEDES, old.id)])
            self.engine.stage_insert(unit, node, vectors(text), edges)
            unit.event(ns, op=AuditOp.UPDATE, node_ids=[node.id, old.id], step=step,
                       at=node.created_at, rationale=f"new version of {old.id}",
                       contents={node.id: node.content})
            if old.is_active:
                self.archive(unit, ns, [Eviction(old.id, old.weight, None, {},
                                                 f"superseded by its new version {node.id}")],
                             "update", {})
            self.enforce_budget(unit, ns, [node.id, old.id])
        return self.engine.ns(ns).node(node.id)

    def forget(self, node: MemoryNode, reason: str) -> MemoryNode:
        """Archive a memory on request. Already archived to make room (evicted or
        summarised, so still found by retrieval's second tier): marked forgotten, so it
        leaves retrieval too. Archived for any other reason: unchanged."""
        if not node.is_active:
            if node.archive_reason not in (ArchiveReason.EVICTED, ArchiveReason.SUMMARISED):
                return node
            ns = node.namespace
            with self.engine.unit() as unit:
                self.engine.stage_update(unit, node.model_copy(
                    update={"archive_reason": ArchiveReason.FORGOTTEN}), reindex=False)
                unit.event(ns, op=AuditOp.EVICT, node_ids=[node.id],
                           step=self.engine.step(unit, ns), at=self.engine.clock.now(),
                           rationale=f"forgotten by the user (was archived): {reason}")
            return self.engine.ns(ns).node(node.id)
        with self.engine.unit() as unit:
            self.archive(unit, node.namespace, [Eviction(node.id, node.weight, None, {},
                                                         f"forgotten by the user: {reason}")],
                         "user", {})
        state = self.engine.ns(node.namespace)
        state.policy.on_forget(node, state.step)
        return state.node(node.id)

    def clear(self, ns: str, turns: Sequence[MemoryNode], reason: str) -> list[MemoryNode]:
        """Archive a cleared conversation's turns as ``cleared`` (never shown again, see
        :data:`~mars_core.model.HIDDEN`), the active ones and those already archived in
        one unit: one ``evict`` event each."""
        todo = [n for n in turns if n.archive_reason is not ArchiveReason.CLEARED]
        if not todo:
            return []
        with self.engine.unit() as unit:
            self.archive(unit, ns, [Eviction(n.id, n.weight, None, {}, f"cleared: {reason}")
                                    for n in todo if n.is_active], "clear", {})
            step = self.engine.step(unit, ns)
            for node in (n for n in todo if not n.is_active):
                self.engine.stage_update(unit, node.model_copy(
                    update={"archive_reason": ArchiveReason.CLEARED}), reindex=False)
                unit.event(ns, op=AuditOp.EVICT, node_ids=[node.id], step=step,
                           at=self.engine.clock.now(),
                           rationale=f"cleared (was archived, {node.archive_reason}): {reason}")
        state = self.engine.ns(ns)
        for node in todo:
            if node.is_active:
                state.policy.on_forget(node, state.step)
        return [state.node(n.id) for n in todo]

    def restore(self, node: MemoryNode) -> MemoryNode:
        """Bring an archived memory back (the budget is enforced)."""
        if node.is_active:
            return node
        ns = node.namespace
        with self.engine.unit() as unit:
            touch = self.engine.touch(unit, ns)
            restored = node.model_copy(update={"status": MemoryStatus.ACTIVE,
                                               "archive_reason": None,
                                               "touch_seq": touch, "activated_seq": touch})
            self.engine.stage_update(unit, restored, reindex=True)
            unit.event(ns, op=AuditOp.RESTORE, node_ids=[node.id],
                       step=self.engine.step(unit, ns), at=self.engine.clock.now(),
                       rationale="restored from the archive on request")
            self.enforce_budget(unit, ns, [node.id])
        return self.engine.ns(ns).node(node.id)

    def link(self, node: MemoryNode, predicate: Predicate | str, target: str) -> Edge:
        """Add a typed edge between two memories of one namespace."""
        edges = self.edges_for(node, [(predicate, target)], implicit=False)
        state = self.engine.ns(node.namespace)
        state.graph.check_link(edges[0])
        with self.engine.unit() as unit:
            self.engine.stage_update(unit, node, reindex=False, edges=edges)
            unit.event(node.namespace, op=AuditOp.METADATA, node_ids=[node.id, target],
                       step=self.engine.step(unit, node.namespace), at=self.engine.clock.now(),
                       rationale=f"linked {node.id} {edges[0].predicate.value} {target}")
        return edges[0]

    def set_metadata(self, old: MemoryNode, update: Mapping[str, Any]) -> MemoryNode:
        """Change what is mutable about a memory in place (one ``metadata`` event)."""
        try:
            node = MemoryNode.model_validate({**old.model_dump(), **update})
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "metadata change") from None
        with self.engine.unit() as unit:
            self.engine.stage_update(unit, node, reindex=False)
            unit.event(old.namespace, op=AuditOp.METADATA, node_ids=[node.id],
                       step=self.engine.step(unit, old.namespace), at=self.engine.clock.now(),
                       params={"fields": sorted(update)},
                       rationale=f"changed {', '.join(sorted(update)) or 'nothing'}")
        return node

    def import_nodes(self, nodes: Sequence[MemoryNode], edges: Sequence[Edge],
                     steps: Mapping[str, int], *, skip_existing: bool = False,
                     skip_erased: bool = False, progress: ProgressFn | None = None) -> int:
        """Store exported memories as they are (ids, statuses, statistics kept), all or
        nothing.

        ``nodes``, ``edges`` and ``steps`` come from :func:`mars_core.io.jsonld.from_jsonld`, which
        checked the document on its own; here what needs the store is checked before
        anything is staged: no id exists yet, every edge target outside the document is
        a memory of the edge's namespace here, the active memories fit each budget. A
        namespace's interaction counter becomes the largest of its own, the document's
        and its imported memories' steps; the store's memory counter and the namespace's
        recency counter move past the imported ``seq`` and ``touch_seq``/``activated_seq``
        (all bounded by :data:`mars_core.io.checks.MAX_COUNTER`, so writes go on).

        With ``skip_existing`` (a re-run of an import), a memory already here under its
        id, in its namespace and with its text, is left as it is (its edges of the
        document too) and not counted; only another memory under one of the ids is a
        conflict.

        A memory erased here before — its id, or its text in its namespace, is in an
        ``erase`` event of the audit (texts as keyed hashes) — is refused, or with
        ``skip_erased`` left out (its edges too): a restored backup must not bring back
        what a user had erased.

        Returns:
            How many memories were imported.

        Raises:
            ConflictError: an imported id already exists (with ``skip_existing``: as
                another memory).
            ErasedMemoryError: the document holds erased memories (without
                ``skip_erased``).
            ImportFormatError: an edge names a memory that is neither in the document
                nor in its namespace here.
            BudgetExceededError: a namespace's imported active memories exceed its budget.
        """
        nodes = [n.model_copy(update={"weight": self.engine.io.count_tokens(n.content)})
                 for n in nodes]
        with self.engine.records.read() as tx:
            clash = sorted(tx.existing([n.id for n in nodes]))
            if skip_existing and clash:
                doc = {n.id: n for n in nodes}
                same = {i for i in clash if (m := tx.memory(i)) is not None
                        and (m.namespace, m.content) == (doc[i].namespace, doc[i].content)}
                clash = [i for i in clash if i not in same]
                nodes = [n for n in nodes if n.id not in same]
                edges = [e for e in edges if e.source not in same]
            erased = self._erased(tx, nodes)
        if clash:
            raise ConflictError(f"{len(clash)} imported ids already exist (first: {clash[0]})")
        if erased and not skip_erased:
            raise ErasedMemoryError(
                f"{len(erased)} memories of the document were erased from this store "
                f"(first: {erased[0]}); nothing was imported (skip them to import the rest)")
        if erased:
            gone = set(erased)
            nodes = [n for n in nodes if n.id not in gone]
            edges = [e for e in edges if e.source not in gone and e.target not in gone]
        if not nodes:
            return 0
        self._check_import_targets(nodes, edges)
        for ns in {n.namespace for n in nodes}:
            if sum(n.weight for n in nodes if n.namespace == ns and n.is_active) > \
                    self.engine.config.budget_for(ns):
                raise BudgetExceededError(f"active memories of {ns!r} exceed its budget")
        vectors = Embeddings(self.engine, (n.content for n in nodes), progress)
        by_source: dict[str, list[Edge]] = {}
        for e in edges:
            by_source.setdefault(e.source, []).append(e)
        report(progress, "store", 0, len(nodes))
        with self.engine.unit() as unit:
            for done, node in enumerate(nodes, 1):
                self.engine.stage_insert(unit, node, vectors(node.content),
                                         by_source.get(node.id, []))
                unit.counter = max(unit.counter, node.seq)
                d = self.engine.draft(unit, node.namespace)
                d.touch = max(d.touch, node.touch_seq, node.activated_seq)
                d.step = max(d.step, node.step, node.last_access_step or 0)
                report(progress, "store", done, len(nodes))
            for ns, step in steps.items():
                if ns in unit.drafts:
                    unit.drafts[ns].step = max(step, unit.drafts[ns].step)
            for ns in sorted({n.namespace for n in nodes}):
                ids = [n.id for n in nodes if n.namespace == ns]
                unit.event(ns, op=AuditOp.IMPORT, node_ids=ids, step=self.engine.step(unit, ns),
                           at=self.engine.clock.now(), rationale=f"imported {len(ids)} memories")
            report(progress, "write", 0, len(nodes))
        report(progress, "write", len(nodes), len(nodes))
        return len(nodes)

    def _erased(self, tx: RecordTxn, nodes: Sequence[MemoryNode]) -> list[str]:
        """Ids of ``nodes`` erased here before: by id, or by text in their namespace
        (keyed hashes of the ``erase`` events; one read of each namespace's audit, and of
        the chains of the namespace's earlier erasures as a whole, kept under its token:
        :func:`~mars_core.audit.erased_name`)."""
        found: list[str] = []
        names = tx.namespace_names()
        for ns in sorted({n.namespace for n in nodes}):
            ids: set[str] = set()
            texts: set[str] = set()
            token = self.engine.chain.namespace_token(ns)
            chains = [ns, *(n for n in names if erased_token(n) == token)]
            for ev in (e for chain in chains for e in tx.audit(chain)):
                if ev.op is AuditOp.ERASE:
                    ids.update(ev.node_ids)
                    texts.update(ev.content_hashes.values())
            if ids:
                found += [n.id for n in nodes if n.namespace == ns and (
                    n.id in ids or self.engine.chain.content_hash(n.content) in texts)]
        return found

    def _check_import_targets(self, nodes: Sequence[MemoryNode], edges: Sequence[Edge]) -> None:
        """Edge targets outside the document must be memories of the edge's namespace here
        (the document checked the rest; ``derived_from`` ids all have their edge)."""
        namespace = {n.id: n.namespace for n in nodes}
        outside = [e for e in edges if e.target not in namespace]
        with self.engine.records.read() as tx:
            for e in outside:
                found = tx.memory(e.target)
                if found is None or found.namespace != namespace[e.source]:
                    raise ImportFormatError(
                        f"edge {e.source} {e.predicate.value} {e.target}: {e.target} is "
                        f"neither in the document nor a memory of namespace "
                        f"{namespace[e.source]!r} in this store")

    # --- building ----------------------------------------------------------------------

    def build(self, unit: Unit, text: str, mtype: object, ns: str, *, step: int,
              vectors: Embeddings, **fields: Any) -> MemoryNode:
        """A new memory: validated, weighed, scored (signals, sensitivity), with an id.

        Raises:
            ValidationError: a bad type, payload or field.
            BudgetExceededError: heavier than the namespace's whole budget.
        """
        _check_text(text)
        try:
            mt = MemoryType(str(mtype))
        except ValueError:
            raise ValidationError(
                f"unknown memory type {mtype!r}; use one of {[t.value for t in MemoryType]}"
            ) from None
        payload = fields.pop("payload", None)
        if payload is None:
            payload = default_payload(mt)
        elif isinstance(payload, Mapping):
            payload = {"kind": mt.value, **payload}
        sens = fields.pop("sensitivity", None)
        fields = {k: v for k, v in fields.items() if v is not None}
        touch = self.engine.touch(unit, ns)
        try:
            node = MemoryNode(
                id=self._new_id(unit), type=mt, content=text, payload=payload, namespace=ns,
                created_at=fields.pop("created_at", None) or self.engine.clock.now(), step=step,
                seq=unit.counter, sensitivity=0.0 if sens is None else sens,
                weight=self.engine.io.count_tokens(text), touch_seq=touch, activated_seq=touch,
                **fields)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "memory") from None
        budget = self.engine.budget(ns, unit)
        if node.weight > budget:
            raise BudgetExceededError(
                f"this memory needs {node.weight} tokens but namespace {ns!r} has a budget of "
                f"{budget}; split the text or raise the budget")
        vector = vectors(text)
        state = self.engine.ns(ns)
        sig = vectors.signals(text, self.engine.enricher)
        signals = self.engine.enricher.compute(text, vector, self.engine.centroid(state),
                                          node.provenance.source, sig)
        detected = node.sensitivity
        if sens is None and self.engine.config.sensitivity_scoring:
            model = self.engine.io.semantic()
            detected = self.engine.scorer.score(
                text, provenance=node.provenance, type=mt, signals=sig,
                semantic=vectors.verdict(text, model) if model is not None else None).score
        signals["sensitivity_detected"] = detected
        # the preferences read the text, namespace and provenance, never the signals
        return node.model_copy(update={"signals": signals,
                                       "sensitivity": self.user_sensitivity(node, detected)})

    def reserve(self, unit: Unit, count: int) -> None:
        """Check the ids of the next ``count`` memories of ``unit`` against the records in
        one read (a bulk call), so :meth:`_new_id` need not read once per memory. Only
        when this process numbers the memories (one writer); an id found taken is
        skipped by :meth:`_new_id` as before."""
        if unit.allocate is not None or count < 2:
            return
        ids = {unit.counter + i: mint_id(self.engine.secret, unit.counter + i)
               for i in range(1, count + 1)}
        with self.engine.records.read() as tx:
            taken = tx.existing(list(ids.values()))
        unit.unused.update((seq, i) for seq, i in ids.items() if i not in taken)

    def _new_id(self, unit: Unit) -> str:
        while True:
            seq = unit.next_seq()
            nid = unit.unused.pop(seq, None)
            if nid is not None:
                return nid
            nid = mint_id(self.engine.secret, seq)
            with self.engine.records.read() as tx:
                if not tx.existing([nid]):
                    return nid

    def user_sensitivity(self, node: MemoryNode, detected: float) -> float:
        """Sensitivity after the namespace's preferences, with private inheritance."""
        state = self.engine.ns(node.namespace)
        prefs = state.prefs
        if prefs is None:
            return detected
        s = prefs.adjust(detected, (), node.content)
        ancestors = set(node.provenance.derived_from)
        for parent in node.provenance.derived_from:
            ancestors.update(state.graph.ancestors(parent))
        if any((a_node := state.get(a)) is not None and prefs.mentions_private(a_node.content)
               for a in ancestors):
            s = max(s, prefs.private_floor)  # what derives from a private memory inherits it
        return s

    def _check_allowed(self, text: str, ns: str, conversation: str | None) -> None:
        prefs = self.engine.ns(ns).prefs
        if prefs is not None and prefs.blocks(text, conversation):
            raise BlockedByPreferenceError(
                f"namespace {ns!r} blocks this entity or conversation from long-term storage")

    def edges_for(self, node: MemoryNode, links: Iterable[tuple[Predicate | str, str]],
                  implicit: bool = True) -> list[Edge]:
        """The edges a memory owns: its derivations, its task's prerequisites, ``links``.

        Raises:
            ValidationError: a malformed link.
            NotFoundError: a target that is not a memory of the node's namespace.
        """
        pairs: list[tuple[Predicate, str]] = []
        if implicit:
            pairs += [(Predicate.DERIVES_FROM, t) for t in node.provenance.derived_from]
            if isinstance(node.payload, TaskPayload):
                pairs += [(Predicate.REQUIRES, t) for t in node.payload.dependencies]
        try:
            pairs += [(Predicate(p), t) for p, t in links]
        except (ValueError, TypeError):
            raise ValidationError(
                f"links must be (predicate, target id) pairs; predicates: "
                f"{[p.value for p in Predicate]}") from None
        state = self.engine.ns(node.namespace)
        edges = []
        for pred, target in dict.fromkeys(pairs):
            if not isinstance(target, str) or target not in state:
                raise NotFoundError(f"linked memory {target!r} does not exist in namespace "
                                    f"{node.namespace!r}")
            try:
                edges.append(Edge(source=node.id, predicate=pred, target=target, step=node.step))
            except pydantic.ValidationError as exc:
                raise ValidationError.from_pydantic(exc, "edge") from None
        return edges

    # --- staging -------------------------------------------------------------------------

    def insert(self, unit: Unit, node: MemoryNode, vector: Vector, edges: Sequence[Edge],
               why: str = "") -> None:
        """Stage a new memory with its edges and its ``insert`` audit event."""
        ns = node.namespace
        used = self.engine.ns(ns).used
        self.engine.stage_insert(unit, node, vector, edges)
        unit.event(ns, op=AuditOp.INSERT, node_ids=[node.id], step=node.step, at=node.created_at,
                   features={node.id: {"weight": node.weight, "sensitivity": node.sensitivity}},
                   rationale=f"stored {node.type.value} memory of {node.weight} tokens "
                             f"({used + node.weight} of {self.engine.budget(ns, unit)} tokens "
                             f"before forgetting){why}",
                   contents={node.id: node.content})

    def archive(self, unit: Unit, ns: str, evictions: Sequence[Eviction], policy: str,
                params: Mapping[str, Any]) -> None:
        """Move memories to the archive, one ``evict`` event each; the stage (``policy``)
        says why (:data:`_REASONS`; a policy's own name: it made room)."""
        state = self.engine.ns(ns)
        step = self.engine.step(unit, ns)
        reason = _REASONS.get(policy, ArchiveReason.EVICTED)
        for ev in evictions:
            node = state.node(ev.node_id)
            self.engine.stage_update(unit, node.model_copy(update={"status": MemoryStatus.ARCHIVED,
                                                        "archive_reason": reason}),
                          reindex=True)
            unit.event(ns, op=AuditOp.EVICT, node_ids=[node.id], policy=policy, params=params,
                       features={node.id: dict(ev.features)}, score=ev.score,
                       rationale=ev.rationale, step=step, at=self.engine.clock.now(),
                       contents={node.id: node.content})

    def summarise(self, unit: Unit, ns: str, summary: Summary, policy: str,
                  params: Mapping[str, Any]) -> MemoryNode:
        """Replace a cluster by a summary memory; the members go to the archive."""
        state = self.engine.ns(ns)
        members = [state.node(i) for i in summary.member_ids]
        convs = {m.provenance.conversation_id for m in members}
        prov = Provenance(source="summary", derived_from=summary.member_ids,
                          conversation_id=convs.pop() if len(convs) == 1 else None)
        step = self.engine.step(unit, ns)
        vectors = Embeddings(self.engine, [summary.text])
        node = self.build(unit, summary.text, MemoryType.SEMANTIC, ns, step=step,
                          vectors=vectors, provenance=prov, payload={
                              "concept": summary.concept,
                              "confidence": min(1.0, max(0.0, 1.0 - summary.distortion))},
                          sensitivity=summary.sensitivity,
                          depth=max(m.depth for m in members) + 1)
        self.engine.stage_insert(unit, node, vectors(summary.text), self.edges_for(node, ()))
        for m in members:
            self.engine.stage_update(unit, state.node(m.id).model_copy(
                update={"status": MemoryStatus.ARCHIVED,
                        "archive_reason": ArchiveReason.SUMMARISED}), reindex=True)
        unit.event(ns, op=AuditOp.SUMMARISE, node_ids=[node.id, *summary.member_ids],
                   policy=policy, params=params, score=summary.distortion,
                   features={node.id: {"distortion": summary.distortion,
                                       "sensitivity": summary.sensitivity,
                                       "members": float(len(members)),
                                       "tokens_saved": float(sum(m.weight for m in members)
                                                             - node.weight),
                                       **summary.features}},
                   rationale=summary.rationale or f"summarised {len(members)} memories",
                   step=step, at=node.created_at,
                   contents={n.id: n.content for n in [node, *members]})
        return node

    def _elastic_decide(self, unit: Unit, ns: str) -> None:
        """Raise or lower an elastic budget from the telemetry so far (seed 000 §6.9.2),
        with a ``config`` event that gives the rates; the policy then restores the new
        budget as after any write."""
        cfg, st = self.engine.config.elastic, self.engine.elastic(ns, unit)
        if cfg is None or st is None:
            return
        new, why = st.decide(cfg, self.engine.config.budget_for(ns))
        if why is None:
            return
        self.engine.set_elastic(unit, ns, new)
        unit.event(ns, op=AuditOp.CONFIG, step=self.engine.step(unit, ns),
                   at=self.engine.clock.now(),
                   params={"elastic_budget": new.budget, "previous": st.budget,
                           "budget_base": self.engine.config.budget_for(ns),
                           "trigger_rate": round(st.triggers, 6),
                           "hit_rate": None if st.hits is None else round(st.hits, 6)},
                   rationale=f"the budget of {ns!r} was {why}")

    def _elastic_observe(self, unit: Unit, ns: str, *, triggered: bool) -> None:
        cfg, st = self.engine.config.elastic, self.engine.elastic(ns, unit)
        if cfg is not None and st is not None:
            self.engine.set_elastic(unit, ns, st.observe_write(cfg, triggered=triggered))

    def fit_budgets(self) -> dict[str, int]:
        """Bring every namespace over its budget under it (a store reopened with smaller
        budgets); a no-op unless the manifest says budgets changed.

        Each namespace over its budget is one transaction: a ``config`` audit event in
        that namespace records its budget and what its active memories used, then its
        policy restores the budget as after any write — memories go to the archive, each
        with an ``evict`` event and the policy's rationale; nothing is deleted, and
        ``restore`` or ``retrieve(include_archive=True)`` still reach them.

        Returns:
            The namespaces brought under their budgets, with the tokens they used before.
        """
        if not self.engine.manifest.fit_pending:
            return {}
        with self.engine.records.read() as tx:
            totals = tx.totals()
        over = {ns: t.tokens for ns, t in totals.items() if t.tokens > self.engine.budget(ns)}
        for ns, used in over.items():
            budget = self.engine.budget(ns)
            self.engine.cache.new_call()  # as between calls: at most `capacity` stay loaded
            with self.engine.unit() as unit:
                unit.event(ns, op=AuditOp.CONFIG, step=self.engine.step(unit, ns),
                           at=self.engine.clock.now(), params={"budget": budget, "used": used},
                           rationale=f"the budget of {ns!r} is now {budget} tokens and its "
                                     f"active memories use {used}: the policy archives "
                                     "memories until they fit")
                self.enforce_budget(unit, ns, (), write=False)
        self.engine.manifest.budgets_fitted()
        return over

    def enforce_budget(self, unit: Unit, ns: str, exclude: Iterable[str], *,
                       write: bool = True) -> None:
        """Sweep (hygiene the policy does at every write), then restore the budget. A
        ``write`` moves an elastic budget first and counts in its trigger rate."""
        state = self.engine.ns(ns)
        policy = state.policy
        if write:
            self._elastic_decide(unit, ns)
        view, taken = self.engine.view(unit, ns), frozenset(exclude)
        swept = policy.sweep(view, taken)
        self.archive(unit, ns, swept.evictions, policy.name, policy.params())
        need = state.used - view.budget
        if write:
            self._elastic_observe(unit, ns, triggered=need > 0)
        if need <= 0:
            return
        plan = policy.apply(view, need, taken | {e.node_id for e in swept.evictions})
        params = policy.params()
        for summary in plan.summaries:
            self.summarise(unit, ns, summary, policy.name, params)
        if plan.dp is not None and policy.accountant is not None:
            params = {**params, "dp": plan.dp, "accountant": policy.accountant.totals(ns)}
        self.archive(unit, ns, plan.evictions, policy.name, params)


_REASONS: dict[str, ArchiveReason] = {
    "observe": ArchiveReason.SUPERSEDED, "update": ArchiveReason.SUPERSEDED,
    "dedup": ArchiveReason.SUPERSEDED, "user": ArchiveReason.FORGOTTEN,
    "clear": ArchiveReason.CLEARED,
    "ttl": ArchiveReason.EXPIRED, "graduated": ArchiveReason.EXPIRED,
}
"""Why :meth:`Writer.archive` archives, by stage; any other stage is a policy making room."""


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise ValidationError(f"memory text must be a str, not {type(text).__name__}")


def _conversation(prov: object) -> str | None:
    if isinstance(prov, Mapping):
        conv = prov.get("conversation_id")
        return conv if isinstance(conv, str) else None
    return prov.conversation_id if isinstance(prov, Provenance) else None

