"""``MemoryStore``: the façade where every path meets (DESIGN §3).

It validates, delegates and audits; the work lives in the modules below it. Every
public operation runs under one re-entrant lock, stages its writes (memory records,
audit events, store state) in one :class:`~mars_core.backends.base.WriteBatch`, applies
the batch, and only then updates the in-memory views — so a rejected input or a failed
write changes nothing, and a write that returned is durable.

Example:
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
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
import pydantic

from mars_core import codec
from mars_core._async import asyncify
from mars_core.audit import AuditLog, AuditOp, AuditTxn, VerifyReport
from mars_core.backends.base import Record, VectorBackend, WriteBatch
from mars_core.budget import TokenCounter, make_counter
from mars_core.clock import Clock, SystemClock
from mars_core.config import StoreConfig
from mars_core.embeddings import Embedder, HashingEmbedder, embed_one
from mars_core.enrich import Enricher
from mars_core.errors import (
    BudgetExceededError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    ImportFormatError,
    NotFoundError,
    StoreClosedError,
    ValidationError,
)
from mars_core.explain import Explanation, explain
from mars_core.graph import MemoryGraph
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    TaskPayload,
    default_payload,
)
from mars_core.policies import Eviction, Policy, Summary, make_policy
from mars_core.retrieval import Hit, Query, pack, rank
from mars_core.state import NamespaceView, StoreState, ViewIO

__all__ = ["MemoryStore"]

S = TypeVar("S", bound="MemoryStore")
P = ParamSpec("P")
R = TypeVar("R")



def _op(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a public method under the store lock, refusing a closed store."""

    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            if self._closed:
                raise StoreClosedError("the store is closed; open it again to use it")
            return fn(self, *args, **kwargs)

    wrapper.__name__, wrapper.__qualname__ = fn.__name__, fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _validation(exc: pydantic.ValidationError) -> ValidationError:
    """Our error from pydantic's, without echoing input values (they may be sensitive)."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
             for e in exc.errors(include_input=False, include_url=False)]
    return ValidationError("invalid memory: " + "; ".join(parts))


@dataclass
class _Txn:
    """The staged writes of one operation."""

    batch: WriteBatch
    audit: AuditTxn
    counter: int
    touch: int
    steps: dict[str, int] = field(default_factory=dict)
    puts: list[tuple[MemoryNode, list[Edge]]] = field(default_factory=list)
    centroid: list[tuple[Any, str]] = field(default_factory=list)


class MemoryStore:
    """A typed, budgeted, audited memory store over a vector backend.

    Args:
        backend: where records live (default: an ephemeral in-memory backend).
        embedder: text → vector (default: :class:`~mars_core.embeddings.HashingEmbedder`).
        config: a :class:`~mars_core.config.StoreConfig`; keyword overrides below win.
        clock: wall-clock source (default: the system clock).
        audit_key: secret for keyed content hashes and the audit chain (default: random,
            generated once and kept in the store's ``meta`` collection).
        **overrides: any ``StoreConfig`` field, e.g. ``budget=8000, policy="lru"``.

    Example:
        >>> store = MemoryStore(budget=100, policy="fifo")
        >>> store.add("I prefer window seats", type="semantic").type.value
        'semantic'
        >>> store.close()
    """

    def __init__(
        self,
        backend: VectorBackend | None = None,
        embedder: Embedder | None = None,
        *,
        config: StoreConfig | None = None,
        clock: Clock | None = None,
        audit_key: bytes | None = None,
        **overrides: Any,
    ) -> None:
        from mars_core.backends.memory import InMemoryBackend

        self._lock = threading.RLock()
        self._closed = False
        self.backend: VectorBackend = backend if backend is not None else InMemoryBackend()
        try:
            self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
            self.clock: Clock = clock if clock is not None else SystemClock()
            self._explicit = config is not None or bool(overrides)
            self.config = self._configure(config, overrides)
            self._state = StoreState()
            self._colls = {MemoryStatus.ACTIVE: codec.MEMORIES,
                           MemoryStatus.ARCHIVED: codec.ARCHIVE}
            self._io = ViewIO(self._vectors, self._embed_rows,
                              lambda text: max(1, self.counter.count(text)))
            self._load(audit_key)
        except BaseException:
            self.backend.close()  # release the directory lock: a failed open holds nothing
            raise

    @staticmethod
    def _configure(config: StoreConfig | None, overrides: Mapping[str, Any]) -> StoreConfig:
        base = config or StoreConfig()
        try:
            return base.model_validate({**base.model_dump(), **overrides})
        except pydantic.ValidationError as exc:
            raise ConfigError(f"invalid store configuration: {exc}") from exc

    @classmethod
    def open(cls, path: str | os.PathLike[str], **kwargs: Any) -> MemoryStore:
        """Open (or create) a store persisted under ``path``.

        Args:
            path: a directory; created when missing.
            **kwargs: passed to :class:`MemoryStore` (``embedder``, ``clock``, config fields).
        """
        from mars_core.backends.memory import InMemoryBackend

        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(InMemoryBackend(directory), **kwargs)

    # --- opening ---------------------------------------------------------------------------

    def _load(self, audit_key: bytes | None) -> None:
        self.backend.ensure_collection(codec.META, 0)
        meta = dict(codec.decode_meta(r) for r in self.backend.get(codec.META))
        manifest = meta.get("manifest")
        if manifest is not None:
            self._check_manifest(manifest)
        for name, dim in ((self._colls[MemoryStatus.ACTIVE], self.embedder.dim),
                          (self._colls[MemoryStatus.ARCHIVED], self.embedder.dim),
                          (codec.AUDIT, 0)):
            self.backend.ensure_collection(name, dim)
        self.counter: TokenCounter = make_counter(self.config.token_counter)
        self.enricher = Enricher(self.config.nlp)
        self.policy: Policy = make_policy(self.config.policy, **self.config.policy_params)
        self._state.policies = [self.policy]
        key_hex = meta.get("keys", {}).get("audit")
        key = bytes.fromhex(key_hex) if key_hex else (audit_key or os.urandom(32))
        self.audit = AuditLog(key)
        self._rng = random.Random(self.config.seed)
        self._restore(meta)
        if manifest is None:
            self.backend.apply(WriteBatch().upsert(codec.META, [
                codec.meta_record("manifest", self._manifest()),
                codec.meta_record("keys", {"audit": key.hex()})]))
        elif manifest.get("config") != self._config_doc():
            txn = self._begin()
            txn.batch.upsert(codec.META, [codec.meta_record("manifest", self._manifest())])
            txn.audit.add(op=AuditOp.CONFIG, namespace=self.config.default_namespace,
                          params=self._config_doc(), step=0, at=self.clock.now(),
                          rationale="store reopened with a new configuration")
            self._commit(txn)

    def _config_doc(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")

    def _manifest(self, embedder: Embedder | None = None,
                  colls: Mapping[MemoryStatus, str] | None = None) -> dict[str, Any]:
        emb, names = embedder or self.embedder, colls or self._colls
        return {"format_version": codec.FORMAT_VERSION, "token_counter": self.config.token_counter,
                "embedder": {"name": emb.name, "dim": emb.dim},
                "collections": {s.value: n for s, n in names.items()},
                "id_scheme": "uuid5(seed:counter)", "backend": self.backend.name,
                "signals": self.enricher.name, "config": self._config_doc()}

    def _check_manifest(self, manifest: Mapping[str, Any]) -> None:
        if manifest.get("format_version") != codec.FORMAT_VERSION:
            raise CorruptStoreError(
                f"store format {manifest.get('format_version')} is not supported by this "
                f"version (format {codec.FORMAT_VERSION}); export it with the version that "
                "wrote it and import the JSON-LD")
        emb = manifest.get("embedder", {})
        if (emb.get("name"), emb.get("dim")) != (self.embedder.name, self.embedder.dim):
            raise EmbeddingMismatchError(
                f"this store was built with embedder {emb.get('name')!r} (dim {emb.get('dim')}), "
                f"not {self.embedder.name!r} (dim {self.embedder.dim}); open it with the original "
                "embedder, then call store.reembed(new_embedder) to move it")
        if not self._explicit:
            self.config = StoreConfig.model_validate(manifest.get("config", {}))
        for status, name in manifest.get("collections", {}).items():
            self._colls[MemoryStatus(status)] = name
        if manifest.get("token_counter") != self.config.token_counter:
            raise ConfigError(
                f"this store counts tokens with {manifest.get('token_counter')!r}; "
                f"token_counter={self.config.token_counter!r} would change every weight")

    def _restore(self, meta: Mapping[str, Mapping[str, Any]]) -> None:
        st = self._state
        nodes: list[MemoryNode] = []
        for coll in self._colls.values():
            for rec in self.backend.get(coll):
                node, edges = codec.decode_node(rec)
                nodes.append(node)
                st.owned[node.id] = edges
        nodes.sort(key=lambda n: n.seq)
        for node in nodes:
            st.apply_put(node, notify=False)
        for owner in [n.id for n in nodes]:
            for edge in st.owned.get(owner, []):
                st.graph.add(edge)
        self.policy.rebuild(n for n in nodes if n.is_active)
        self._prime_centroids(nodes)
        state = meta.get("state", {})
        st.counter, st.touch = int(state.get("counter", 0)), int(state.get("touch", 0))
        for key, data in meta.items():
            if key.startswith("ns:"):
                st.steps[key[3:]] = int(data["step"])
        self.audit.load(codec.decode_audit(r) for r in self.backend.get(codec.AUDIT))
        head = (int(state.get("audit_count", 0)), state.get("audit_head", self.audit.head))
        if (len(self.audit), self.audit.head) != head:
            raise CorruptStoreError("the audit log does not match the recorded chain head; "
                                    "run store.verify() on a copy and restore from a snapshot")

    def _prime_centroids(self, nodes: Sequence[MemoryNode]) -> None:
        """Rebuild each namespace's moving centroid from its most recent memories.

        The texts are embedded again rather than read back from the backend: backends
        may renormalise stored vectors, and the centroid must be bit-identical to the
        one the live process had, so reopening never changes a later score.
        """
        if not self.enricher.enabled:
            return
        window = self.enricher.config.centroid_window
        recent: dict[str, builtins.list[MemoryNode]] = {}
        for node in nodes:  # sorted by seq
            recent.setdefault(node.namespace, []).append(node)
        for ns, members in recent.items():
            tail = members[-window:]
            self.enricher.prime(ns, [embed_one(self.embedder, n.content) for n in tail])

    # --- transactions ------------------------------------------------------------------------

    def _begin(self) -> _Txn:
        return _Txn(WriteBatch(), self.audit.begin(), self._state.counter, self._state.touch)

    def _step(self, txn: _Txn, namespace: str, advance: bool = False) -> int:
        if advance:
            txn.steps[namespace] = txn.steps.get(namespace, self._state.step(namespace)) + 1
        return txn.steps.get(namespace, self._state.step(namespace))

    def _stage_put(self, txn: _Txn, node: MemoryNode, vector: Any = None,
                   old_status: MemoryStatus | None = None, edges: Sequence[Edge] = ()) -> None:
        owned = list(self._state.owned.get(node.id, [])) + [
            e for e in edges if e.key not in {x.key for x in self._state.owned.get(node.id, [])}]
        if old_status is not None and old_status is not node.status:
            txn.batch.delete(self._colls[old_status], [node.id])
        txn.batch.upsert(self._colls[node.status], [codec.node_record(node, owned, vector)])
        txn.puts.append((node, list(edges)))

    def _commit(self, txn: _Txn) -> None:
        st = self._state
        events = txn.audit.events
        state_doc = {"counter": txn.counter, "touch": txn.touch,
                     "audit_count": len(self.audit) + len(events), "audit_head": txn.audit.head}
        txn.batch.upsert(codec.AUDIT, [codec.audit_record(e) for e in events])
        txn.batch.upsert(codec.META, [codec.meta_record("state", state_doc)] + [
            codec.meta_record(f"ns:{ns}", {"step": step}) for ns, step in txn.steps.items()])
        self.backend.apply(txn.batch)
        st.counter, st.touch = txn.counter, txn.touch
        st.steps.update(txn.steps)
        for node, edges in txn.puts:
            st.apply_put(node, edges)
        for vector, ns in txn.centroid:
            self.enricher.commit(vector, ns)
        self.audit.commit(txn.audit)

    # --- building nodes ----------------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        ns = self.config.default_namespace if namespace is None else namespace
        if not isinstance(ns, str) or not ns or len(ns) > 256:
            raise ValidationError("namespace must be a non-empty string of at most 256 characters")
        return ns

    def _new_id(self, txn: _Txn) -> str:
        while True:
            txn.counter += 1
            nid = codec.memory_id(self.config.seed, txn.counter)
            if nid not in self._state.nodes:
                return nid

    def _build(self, txn: _Txn, text: object, mtype: object, ns: str, step: int,
               **fields: Any) -> tuple[MemoryNode, Any]:
        if not isinstance(text, str):
            raise ValidationError(f"memory text must be a str, not {type(text).__name__}")
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
        try:
            node = MemoryNode(
                id=self._new_id(txn), type=mt, content=text, payload=payload, namespace=ns,
                created_at=self.clock.now(), step=step, seq=txn.counter,
                sensitivity=0.0 if sens is None else sens,
                weight=max(1, self.counter.count(text)), touch_seq=txn.touch + 1,
                activated_seq=txn.touch + 1, **fields)
        except pydantic.ValidationError as exc:
            raise _validation(exc) from None
        budget = self.config.budget_for(ns)
        if node.weight > budget:
            raise BudgetExceededError(
                f"this memory needs {node.weight} tokens but namespace {ns!r} has a budget of "
                f"{budget}; split the text or raise the budget")
        txn.touch += 1
        vector = embed_one(self.embedder, text)
        signals = self.enricher.compute(text, vector, ns, node.provenance.source)
        txn.centroid.append((vector, ns))
        return node.model_copy(update={"signals": signals}), vector

    def _edges_for(self, node: MemoryNode, links: Iterable[tuple[Predicate | str, str]],
                   implicit: bool = True) -> list[Edge]:
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
        edges = []
        for pred, target in dict.fromkeys(pairs):
            other = self._state.nodes.get(target)
            if other is None:
                raise NotFoundError(f"linked memory {target!r} does not exist")
            if other.namespace != node.namespace:
                raise ValidationError("memories may only be linked within one namespace")
            try:
                edges.append(Edge(source=node.id, predicate=pred, target=target, step=node.step))
            except pydantic.ValidationError as exc:
                raise _validation(exc) from None
        return edges

    # --- budget --------------------------------------------------------------------------

    def _enforce_budget(self, txn: _Txn, ns: str, incoming: int, exclude: Iterable[str]) -> None:
        """Sweep (hygiene the policy does at every write), then restore the budget."""
        view, taken = self._view(txn, ns), frozenset(exclude)
        swept = self.policy.sweep(view, taken)
        self._stage_archive(txn, ns, swept.evictions, self.policy.name, self.policy.params())
        need = self._state.ledger.used(ns) - swept.freed + incoming - view.budget
        if need <= 0:
            return
        plan = self.policy.apply(view, need, taken | {e.node_id for e in swept.evictions})
        for summary in plan.summaries:
            self._stage_summary(txn, ns, summary, self.policy.name, self.policy.params())
        self._stage_archive(txn, ns, plan.evictions, self.policy.name, self.policy.params())

    def _view(self, txn: _Txn, ns: str) -> NamespaceView:
        return self._state.view(ns, self.config.budget_for(ns), self.clock.now(), self._rng,
                                step=self._step(txn, ns), io=self._io)

    def _vectors(self, ids: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.zeros((len(ids), self.embedder.dim), dtype=np.float32)
        pos = {nid: i for i, nid in enumerate(ids)}
        for rec in self.backend.get(self._colls[MemoryStatus.ACTIVE], list(ids),
                                    with_vectors=True):
            if rec.vector is not None:
                norm = float(np.linalg.norm(rec.vector))
                out[pos[rec.id]] = rec.vector / norm if norm > 0 else rec.vector
        return out

    def _embed_rows(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32).reshape(
            len(texts), self.embedder.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray[Any, np.dtype[np.float32]] = np.divide(
            out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit

    def _move_to_archive(self, txn: _Txn, ids: Sequence[str]) -> None:
        recs = self.backend.get(self._colls[MemoryStatus.ACTIVE], list(ids), with_vectors=True)
        vectors = {r.id: r.vector for r in recs}
        for nid in ids:
            node = self._state.nodes[nid].model_copy(update={"status": MemoryStatus.ARCHIVED})
            self._stage_put(txn, node, vectors.get(nid), MemoryStatus.ACTIVE)

    def _stage_archive(self, txn: _Txn, ns: str, evictions: Sequence[Eviction],
                       policy: str, params: Mapping[str, Any]) -> None:
        self._move_to_archive(txn, [e.node_id for e in evictions])
        step = self._step(txn, ns)
        for ev in evictions:
            node = self._state.nodes[ev.node_id]
            txn.audit.add(op=AuditOp.EVICT, namespace=ns, node_ids=[node.id], policy=policy,
                          params=params, features={node.id: dict(ev.features)}, score=ev.score,
                          rationale=ev.rationale, step=step, at=self.clock.now(),
                          contents={node.id: node.content})

    def _stage_summary(self, txn: _Txn, ns: str, summary: Summary, policy: str,
                       params: Mapping[str, Any]) -> MemoryNode:
        members = [self._state.nodes[i] for i in summary.member_ids]
        convs = {m.provenance.conversation_id for m in members}
        prov = Provenance(source="summary", derived_from=summary.member_ids,
                          conversation_id=convs.pop() if len(convs) == 1 else None)
        step = self._step(txn, ns)
        node, vector = self._build(
            txn, summary.text, MemoryType.SEMANTIC, ns, step, provenance=prov,
            payload={"concept": summary.concept,
                     "confidence": min(1.0, max(0.0, 1.0 - summary.distortion))},
            sensitivity=summary.sensitivity, depth=max(m.depth for m in members) + 1)
        self._stage_put(txn, node, vector, edges=self._edges_for(node, ()))
        self._move_to_archive(txn, summary.member_ids)
        txn.audit.add(op=AuditOp.SUMMARISE, namespace=ns, node_ids=[node.id, *summary.member_ids],
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
        edges = self._edges_for(node, links)
        self._stage_put(txn, node, vector, edges=edges)
        used, budget = self._state.ledger.used(ns), self.config.budget_for(ns)
        txn.audit.add(op=AuditOp.INSERT, namespace=ns, node_ids=[node.id], step=step,
                      at=node.created_at, features={node.id: {"weight": node.weight,
                                                              "sensitivity": node.sensitivity}},
                      rationale=f"stored {node.type.value} memory of {node.weight} tokens "
                                f"({used + node.weight} of {budget} tokens before forgetting)",
                      contents={node.id: node.content})
        self._enforce_budget(txn, ns, node.weight, [node.id])
        self._commit(txn)
        return node

    @_op
    def update(self, node_id: str, text: str) -> MemoryNode:
        """Replace a memory's content: a new memory derivesFrom and supersedes the old one,
        which goes to the archive.

        Raises:
            NotFoundError: no such memory.
        """
        old = self._state.get(node_id)
        txn = self._begin()
        step = self._step(txn, old.namespace, advance=True)
        prov = old.provenance.model_copy(update={"derived_from": (old.id,)})
        node, vector = self._build(txn, text, old.type, old.namespace, step, payload=old.payload,
                                   sensitivity=old.sensitivity, provenance=prov,
                                   metadata=dict(old.metadata), pinned=old.pinned)
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
    ) -> builtins.list[Hit]:
        """Hybrid (dense + BM25) retrieval packed into a token budget.

        Counts as an access of every hit (statistics, recency, one audit event) unless
        ``read_only``. Archived memories come only with ``include_archive`` and rank after
        active ones of equal score.

        Raises:
            ValidationError: bad query or filter values.
        """
        q, budget = self._query(query, namespace=namespace, types=types,
                                max_sensitivity=max_sensitivity, since=since, until=until,
                                conversation=conversation, budget_tokens=budget_tokens, k=k)
        qvec = embed_one(self.embedder, query)
        hits = self._rank(MemoryStatus.ACTIVE, qvec, q)
        if include_archive:
            hits += [Hit(h.node, h.score * 0.9, h.dense, h.lexical, True)
                     for h in self._rank(MemoryStatus.ARCHIVED, qvec, q)]
            hits.sort(key=lambda h: (-h.score, h.archived, h.node.seq))
        chosen = pack(hits, budget, k)
        if not read_only and chosen:
            self.policy.on_retrieve(q.namespace, [h.node for h in chosen], budget,
                                    self._state.step(q.namespace))
            self._record_access(q.namespace, chosen, budget, query)
        return chosen

    def _rank(self, status: MemoryStatus, qvec: Any, q: Query) -> builtins.list[Hit]:
        return rank(self._state, self.backend, collection=self._colls[status], status=status,
                    qvec=qvec, q=q, cfg=self.config.retrieval)

    def _query(self, text: object, *, namespace: str | None, types: Iterable[Any] | None,
               max_sensitivity: float | None, since: datetime | None, until: datetime | None,
               conversation: str | None, budget_tokens: int | None, k: int | None
               ) -> tuple[Query, int]:
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("a query must be a non-empty string")
        budget = self.config.retrieval.default_budget_tokens if budget_tokens is None \
            else budget_tokens
        if not isinstance(budget, int) or budget <= 0:
            raise ValidationError("budget_tokens must be a positive integer")
        if k is not None and (not isinstance(k, int) or k <= 0):
            raise ValidationError("k must be a positive integer")
        if max_sensitivity is not None and not 0.0 <= max_sensitivity <= 1.0:
            raise ValidationError("max_sensitivity must lie in [0, 1]")
        try:
            tset = None if types is None else frozenset(MemoryType(t) for t in types)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        return Query(text, self._ns(namespace), tset, max_sensitivity, since, until,
                     conversation), budget

    def _record_access(self, ns: str, hits: Sequence[Hit], budget: int, query: str) -> None:
        txn = self._begin()
        step, now = self._step(txn, ns), self.clock.now()
        for h in reversed(hits):  # the best hit becomes the most recently used
            txn.touch += 1
            node = self._state.nodes[h.node.id]
            self._stage_put(txn, node.model_copy(update={
                "access_count": node.access_count + 1, "last_access_at": now,
                "last_access_step": step, "touch_seq": txn.touch}))
        txn.audit.add(op=AuditOp.ACCESS, namespace=ns, node_ids=[h.id for h in hits], step=step,
                      at=now, features={h.id: {"score": h.score, "dense": h.dense,
                                               "lexical": h.lexical} for h in hits},
                      rationale=f"retrieved {len(hits)} memories "
                                f"({sum(h.node.weight for h in hits)} of {budget} tokens)",
                      contents={"query": query})
        self._commit(txn)

    @_op
    def explain(self, node_id: str) -> Explanation:
        """The provenance chain and the audit rationale of a memory (also when forgotten)."""
        return explain(self._state, self.audit, node_id)

    @_op
    def verify(self) -> VerifyReport:
        """Verify the audit chain (hashes, order, and the recorded head)."""
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
        return {"backend": self.backend.name, "embedder": self.embedder.name,
                "dim": self.embedder.dim, "token_counter": self.counter.name,
                "policy": self.policy.name, "audit_events": len(self.audit), "namespaces": per}

    @_op
    def reembed(self, embedder: Embedder, batch_size: int = 256) -> int:
        """Move the store to a new embedder; returns how many memories were re-embedded.

        Vectors are written to new collections first; one atomic write then switches the
        manifest (with a ``config`` audit event); only then are the old collections
        emptied. A crash before the switch leaves the store on the old embedder, after
        it on the new one. Reopen the store with the new embedder afterwards.
        """
        gen = sum(1 for e in self.audit.events() if e.op is AuditOp.CONFIG
                  and "embedder" in e.params) + 1
        new = {s: f"{base}_g{gen}" for s, base in
               ((MemoryStatus.ACTIVE, codec.MEMORIES), (MemoryStatus.ARCHIVED, codec.ARCHIVE))}
        count = 0
        for status, name in new.items():
            self.backend.ensure_collection(name, embedder.dim)
            records = self.backend.get(self._colls[status])
            for i in range(0, len(records), batch_size):
                chunk = records[i:i + batch_size]
                texts = [codec.decode_node(r)[0].content for r in chunk]
                vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
                if vecs.shape != (len(chunk), embedder.dim):
                    raise ValidationError(f"embedder {embedder.name!r} returned {vecs.shape}")
                self.backend.upsert(name, [Record(r.id, v, r.document, r.metadata)
                                           for r, v in zip(chunk, vecs, strict=True)])
                count += len(chunk)
        txn = self._begin()
        txn.batch.upsert(codec.META, [codec.meta_record("manifest", self._manifest(embedder, new))])
        txn.audit.add(op=AuditOp.CONFIG, namespace=self.config.default_namespace, step=0,
                      at=self.clock.now(), params={"embedder": embedder.name, "dim": embedder.dim},
                      rationale=f"re-embedded {count} memories with {embedder.name}")
        self._commit(txn)
        old, self._colls, self.embedder = self._colls, new, embedder
        for name in old.values():
            ids = [r.id for r in self.backend.get(name)]
            self.backend.apply(WriteBatch().delete(name, ids))
        return count

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

    def _check_import_edges(self, nodes: Sequence[MemoryNode], edges: Sequence[Edge]) -> None:
        known = {n.id: n for n in nodes}
        scratch = MemoryGraph()
        for e in edges:
            src, tgt = known.get(e.source), known.get(e.target) or self._state.nodes.get(e.target)
            if src is None or tgt is None:
                raise ImportFormatError(f"edge {e.key} names a memory that is not in the export")
            if src.namespace != tgt.namespace:
                raise ImportFormatError(f"edge {e.key} crosses namespaces")
            try:
                scratch.add(e)
            except ValidationError as exc:
                raise ImportFormatError(str(exc)) from None

    @classmethod
    def from_jsonld(cls, source: str | os.PathLike[str] | Mapping[str, Any],
                    **kwargs: Any) -> MemoryStore:
        """A new (in-memory unless ``backend=`` is given) store holding a JSON-LD export."""
        store = cls(**kwargs)
        store.import_jsonld(source)
        return store

    # --- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store and its backend (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self.backend.close()

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
    aget = asyncify(get)
    alist = asyncify(list)
    ahistory = asyncify(history)
    aretrieve = asyncify(retrieve)
    aexplain = asyncify(explain)
    astats = asyncify(stats)
    averify = asyncify(verify)
    areembed = asyncify(reembed)
    aexport_jsonld = asyncify(export_jsonld)
    aimport_jsonld = asyncify(import_jsonld)
    aclose = asyncify(close)

