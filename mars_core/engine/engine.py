"""The services every collaborator of the store shares: opening, namespaces, units.

:class:`Engine` owns the record store, the vector index and the configuration, opens the
store (the manifest, nothing else), loads namespaces on demand
(:class:`~mars_core.engine.cache.NamespaceCache`), begins and commits units of work
(:class:`~mars_core.engine.unit.Unit`: one record-store transaction each, then the views,
then the index), and gives the policies their views. The operations themselves live in
the collaborators (:mod:`mars_core.engine.writer`, ``reader``, ``eraser``,
``maintainer``); :class:`~mars_core.store.MemoryStore` is the façade over them.

Examples:
    >>> from mars_core.engine.engine import FORMAT_VERSION
    >>> FORMAT_VERSION
    2
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.audit import AuditChain, AuditOp
from mars_core.budget import ElasticState, TokenCounter, make_counter
from mars_core.clock import Clock
from mars_core.config import StoreConfig, parse_config
from mars_core.embedders import runs_locally
from mars_core.embeddings import Embedder
from mars_core.engine.cache import NamespaceCache
from mars_core.engine.indexing import IndexSync
from mars_core.engine.keyed import KeyedIndex
from mars_core.engine.trail import AUDIT_FORMAT, enlist, sealed, upgrade
from mars_core.engine.unit import Draft, Unit
from mars_core.enrich import Enricher
from mars_core.errors import (
    ConcurrentWriteError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    MarsError,
    ValidationError,
)
from mars_core.index.base import VectorIndex
from mars_core.io_checks import check_storable
from mars_core.keys import KEY_ENV, KeyRing, check_key, env_key, key_id
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType
from mars_core.policies import Policy, make_policy
from mars_core.privacy.dp import PrivacyAccountant
from mars_core.privacy.output import SENSITIVE_THRESHOLD
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.privacy.semantic import SemanticSensitivity, semantic_for
from mars_core.privacy.sensitivity import SensitivityScorer
from mars_core.progress import ProgressFn, report
from mars_core.scoring.dmf import CentroidTracker
from mars_core.shares import TypeShares
from mars_core.storage.base import (
    IndexRow,
    NamespaceRecord,
    NamespaceTotals,
    RecordStore,
    RecordTxn,
    TermHits,
    TermQuery,
    Vector,
)
from mars_core.summarise import ExtractiveSummariser, Summariser
from mars_core.views.history import RecordHistory
from mars_core.views.namespace import NamespaceState, NamespaceView
from mars_core.views.protected import ProtectedFacts

__all__ = ["FIT_PENDING", "FORMAT_VERSION", "Engine", "build_policy", "recorded_config"]

FORMAT_VERSION = 2
"""The store format: 2 is the record store + derived index layout (1: vector collections)."""

FIT_PENDING = "fit_pending"
"""Manifest key set, in the transaction that records new budgets, until every namespace
is within its budget again: an open that finds it brings them under (a crash in between
is finished by the next open)."""

log = logging.getLogger(__name__)


def _budgets(config: object) -> tuple[object, object, object]:
    """The budget fields of a recorded configuration (a dict), for comparison."""
    cfg = config if isinstance(config, Mapping) else {}
    return cfg.get("budget"), cfg.get("namespace_budgets"), cfg.get("elastic")


def recorded_config(manifest: Mapping[str, Any],
                    overrides: Mapping[str, Any] | None = None) -> StoreConfig:
    """The configuration a store recorded (with a caller's keyword ``overrides`` on top),
    checked as strictly as a caller's.

    Raises:
        ConfigError: it is not valid (a store written by a version that accepted a value
            now refused, such as a namespace budget of 0, or an edited manifest); the
            message says how to replace it.
    """
    try:
        return parse_config({**manifest.get("config", {}), **(overrides or {})})
    except ConfigError as exc:
        raise ConfigError(
            f"the configuration recorded in this store is refused ({exc}); reopen the "
            "store once, not read-only, with a valid configuration (e.g. "
            "MemoryStore.open(path, budget=8000, namespace_budgets={...})): it replaces "
            "the recorded one") from None


def build_policy(config: StoreConfig, record: NamespaceRecord,
                 summariser: Summariser | None = None) -> Policy:
    """A namespace's own policy instance under ``config``, with its shares and DP
    accountant; a policy that summarises (``Policy.summarises``) writes its summaries
    with ``summariser`` (the store's, when one was given; None: the policy's default).

    Raises:
        ConfigError: an unknown policy or bad policy parameters.
    """
    name, _, arg = config.policy.partition(":")
    policy = make_policy(name, **{**config.policy_params, **({"path": arg} if arg else {})})
    if summariser is not None and policy.summarises:
        policy.use_summariser(summariser)
    if config.type_shares is not None:
        policy.type_shares = TypeShares(initial=config.type_shares)
    if config.dp.enabled:
        policy.dp = config.dp
        state = record.state.get("dp")
        policy.accountant = PrivacyAccountant.from_state(state) if state else \
            PrivacyAccountant.from_config(config.dp)
    return policy


class Engine:
    """The store's shared machinery (internal; see the module).

    Args:
        records: the system of record.
        index: the vector index.
        embedder: text → vector.
        config: the configuration (``explicit``: given by the caller, so it replaces a
            reopened store's recorded one).
        clock: wall-clock source.
        audit_key: the audit HMAC key (default: `$MARS_AUDIT_KEY`, else the key ring of a
            durable store, else random in RAM; :mod:`mars_core.keys`). Never persisted.
        summariser: the caller's summariser: reflection (budget-triggered and in
            ``maintain``) and erasure summaries (None: extractive).
        read_only: a reader: nothing is ever written.
        cache_namespaces: how many namespaces stay loaded between calls.
        note: how the index was chosen (shown by ``stats()``).
        embedder_note: how the embedder of a new store was chosen (recorded in the
            manifest and shown by ``stats()``), e.g. ``"passed"``.
        overrides: keyword fields given without a config object: a reopened store
            applies them on top of its recorded configuration (None: ``config`` whole).
    """

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, *,
                 config: StoreConfig, explicit: bool, clock: Clock, audit_key: bytes | None,
                 summariser: Summariser | None, read_only: bool, cache_namespaces: int,
                 note: str, embedder_note: str = "passed",
                 overrides: Mapping[str, Any] | None = None) -> None:
        self.records, self.embedder = records, embedder
        self.index = KeyedIndex(index)  # names and conversation ids reach it keyed
        self.embedder_note = embedder_note
        self.config, self.clock = config, clock
        self.summariser: Summariser = summariser or ExtractiveSummariser()
        self.policy_summariser = summariser
        """The caller's summariser for the policies' budget-triggered summaries (None:
        each policy's default, the extractive one counting with the store's counter)."""
        self.read_only, self.note, self.overrides = read_only, note, overrides
        self.counter: TokenCounter = make_counter(config.token_counter)
        self.enricher = Enricher(config.nlp)
        self.scorer = SensitivityScorer(analyzer=self.enricher.analyzer)
        self._semantic: tuple[str, SemanticSensitivity] | None = None
        exclusive = records.capabilities.exclusive_writer and not read_only
        self.shared = not records.capabilities.exclusive_writer
        """Other processes write these records too: new memories are numbered by the
        record store, and a commit checks the namespaces it read are unchanged."""
        self.cache = NamespaceCache(self._load, capacity=cache_namespaces,
                                    on_evict=self._evicted, on_stale=self._stale,
                                    version=None if exclusive else self._version)
        self.sync = IndexSync(records, self.index, writer=not read_only)
        self.seq = 0
        self.store_id = self.secret = ""
        self.ring = KeyRing() if records.capabilities.durable else None
        self.fit_pending = False
        """The budgets changed on reopen and some namespace may not fit yet."""
        self._open(audit_key, explicit)

    # --- opening ---------------------------------------------------------------------------

    def _open(self, audit_key: bytes | None, explicit: bool) -> None:
        given = check_key(audit_key) if audit_key is not None else env_key()
        if self.read_only:
            with self.records.read() as tx:
                manifest = tx.manifest()
                if manifest is None:
                    raise ConfigError(f"read_only=True opens an existing store, and there is "
                                      f"none at {self.records.location}; open it once "
                                      "without read_only to create it")
                self._adopt(manifest, explicit=False)
                key = self._key(manifest, given, None)
                self.seq = tx.counter()
        else:
            with self.records.write() as tx:
                # the default namespace first, as every writer holds namespaces before
                # the manifest (a new configuration writes an event into it)
                tx.lock_namespaces([self.config.default_namespace])
                manifest = tx.manifest()
                if manifest is None:
                    _refuse_headless(tx, self.records.location)
                    manifest, key = self._create(tx, given)
                else:
                    self._adopt(manifest, explicit)
                    key = self._key(manifest, given, tx)
                    self._record_changes(tx, manifest, explicit, key)
                self.seq = tx.counter()
            self.fit_pending = bool(manifest.get(FIT_PENDING))
        self.store_id = str(manifest["store_id"])
        self.secret = str(manifest.get("id_secret", self.config.seed or 0))
        self.chain = AuditChain(key)
        if not self.read_only and int(manifest.get("audit_format", 1)) < AUDIT_FORMAT:
            with self.records.write() as tx:  # written before rows and heads were audited
                upgrade(tx, self.chain, self.clock.now())
        index = manifest.get("index") or {}
        self.index.use(self.chain)
        self.sync.bind(self.index_identity(self.embedder, int(index.get("generation", 0))),
                       self.embedder.dim)
        if not self.read_only:  # a crash may have left an erasure's WAL or index behind
            pending = list(manifest.get("compact_pending") or [])
            self.purge(pending) if pending else self.records.purge()

    def index_identity(self, embedder: Embedder, generation: int) -> str:
        """What the vector index is bound as: the store, its embedder and the index's
        generation (``:keyed``: an index written before it held keyed tokens, not names,
        is another one, rebuilt from the records)."""
        return f"{self.store_id}:{embedder.name}:{embedder.dim}:{generation}:keyed"

    def _create(self, tx: RecordTxn, given: bytes | None) -> tuple[dict[str, Any], bytes]:
        """A new store's manifest: a random store id and id secret (the seed's, when
        configured), and the audit key's id — the key itself goes to the key ring, or
        nowhere when the caller gave it (:mod:`mars_core.keys`)."""
        self._policy(NamespaceRecord(self.config.default_namespace))  # refuse a bad one now
        store_id = os.urandom(16).hex()
        seed = self.config.seed
        key = given if given is not None else \
            self.ring.create(store_id) if self.ring is not None else os.urandom(32)
        manifest = {**self.manifest(), "store_id": store_id,
                    "id_secret": str(seed) if seed is not None else os.urandom(16).hex(),
                    "audit_key_id": key_id(key),
                    "audit_key": "caller" if given is not None or self.ring is None else "ring",
                    "audit_format": AUDIT_FORMAT}
        manifest = enlist(AuditChain(key), manifest)  # no namespace yet
        tx.put_manifest(manifest)
        return manifest, key

    def _key(self, manifest: dict[str, Any], given: bytes | None,
             tx: RecordTxn | None) -> bytes:
        """The audit key of a reopened store: the caller's, else the key ring's; a key
        recorded in the manifest by an earlier build moves to the ring (when writing).

        Raises:
            ConfigError: no key, or another store's.
        """
        store_id, recorded = str(manifest["store_id"]), manifest.get("audit_key")
        legacy = bytes.fromhex(recorded) if isinstance(recorded, str) and \
            recorded not in ("caller", "ring") else None
        key = given or legacy or (self.ring.load(store_id) if self.ring is not None else None)
        if key is None:
            where = f"in {self.ring.path(store_id)}" if self.ring is not None else "here"
            raise ConfigError(
                f"the audit key of this store is not {where}: pass audit_key= (or set "
                f"${KEY_ENV}) if the store was created with one, else copy its key file from "
                "the machine that created it (mars_core.keys)")
        if manifest.get("audit_key_id", key_id(key)) != key_id(key):
            raise ConfigError("this audit key is not the one this store was created with "
                              f"(key id {manifest.get('audit_key_id')}); nothing was changed")
        if legacy is not None and tx is not None and self.ring is not None and given is None:
            if self.ring.load(store_id) is None:
                self.ring.save(store_id, legacy)
            manifest.update(audit_key="ring", audit_key_id=key_id(legacy))
            tx.put_manifest(manifest)
        return key

    def budgets_fitted(self) -> None:
        """Every namespace is within its budget: take the pending mark off the manifest."""
        with self.records.write() as tx:
            manifest = dict(tx.manifest() or {})
            if manifest.pop(FIT_PENDING, None) is not None:
                tx.put_manifest(manifest)
        self.fit_pending = False

    def manifest(self, generation: int = 0) -> dict[str, Any]:
        """The manifest fields this store's configuration determines."""
        return {"format_version": FORMAT_VERSION, "token_counter": self.config.token_counter,
                "embedder": {"name": self.embedder.name, "dim": self.embedder.dim,
                             "choice": self.embedder_note},
                "index": {"name": self.index.name, "generation": generation,
                          "choice": self.note, "server": self.index.capabilities.shared},
                "records": self.records.name, "id_scheme": "uuid5(id_secret:counter)",
                "signals": self.enricher.name, "config": self.config.model_dump(mode="json")}

    def _adopt(self, manifest: Mapping[str, Any], explicit: bool) -> None:
        """Check a reopened store's manifest; take its configuration unless given one."""
        if manifest.get("format_version") != FORMAT_VERSION:
            raise CorruptStoreError(
                f"store format {manifest.get('format_version')} is not supported by this "
                f"version (format {FORMAT_VERSION}); export it with the version that wrote "
                "it (mars export) and import the JSON-LD")
        emb = manifest.get("embedder", {})
        if (emb.get("name"), emb.get("dim")) != (self.embedder.name, self.embedder.dim):
            raise EmbeddingMismatchError(
                f"this store was built with embedder {emb.get('name')!r} (dim "
                f"{emb.get('dim')}), not {self.embedder.name!r} (dim {self.embedder.dim}); "
                "open it with the original embedder, then call store.reembed(new_embedder)")
        # how the store's embedder was chosen when it was created (or re-embedded): a
        # reopen does not change it, so stats() reads the same before and after one
        self.embedder_note = str(emb.get("choice", self.embedder_note))
        if not explicit or self.overrides is not None:
            # keywords alone apply on top of what the store recorded, not of the defaults
            self.config = recorded_config(manifest, self.overrides if explicit else None)
            self.counter = make_counter(self.config.token_counter)
            self.enricher = Enricher(self.config.nlp)
            self.scorer = SensitivityScorer(analyzer=self.enricher.analyzer)
        if manifest.get("token_counter") != self.config.token_counter:
            raise ConfigError(
                f"this store counts tokens with {manifest.get('token_counter')!r}; "
                f"token_counter={self.config.token_counter!r} would change every weight")
        self._policy(NamespaceRecord(self.config.default_namespace))  # refuse a bad one now

    def _record_changes(self, tx: RecordTxn, manifest: dict[str, Any], explicit: bool,
                        key: bytes) -> None:
        """Write a new configuration or index choice into the manifest (a new
        configuration with a ``config`` audit event)."""
        generation = int((manifest.get("index") or {}).get("generation", 0))
        wanted = {**manifest, **self.manifest(generation)}
        if explicit and _budgets(manifest.get("config")) != _budgets(wanted["config"]):
            wanted[FIT_PENDING] = True  # cleared once every namespace fits (Writer.fit_budgets)
        if wanted == manifest:
            return
        if explicit and manifest.get("config") != wanted["config"]:
            chain = AuditChain(key)
            ns = self.config.default_namespace
            tx.lock_namespaces([ns])  # the recorded configuration may name another one
            found = tx.namespace(ns)
            record = found or NamespaceRecord(ns)
            txn = chain.begin(ns, record.audit_count, record.audit_head)
            txn.add(op=AuditOp.CONFIG, namespace=ns, params=wanted["config"], step=record.step,
                    at=self.clock.now(), rationale="store reopened with a new configuration")
            tx.append_audit(txn.events)
            tx.put_namespace(sealed(chain, NamespaceRecord(
                ns, record.version + 1, record.step, record.touch, txn.next_seq, txn.head,
                record.state)))
            if found is None and int(wanted.get("audit_format", 1)) >= AUDIT_FORMAT:
                wanted = enlist(chain, wanted, [ns])  # a new namespace, in the sealed list
        tx.put_manifest(wanted)
        manifest.update(wanted)

    # --- namespaces ----------------------------------------------------------------------

    def ns(self, name: str) -> NamespaceState:
        """A namespace's views (loaded on first touch)."""
        return self.cache.get(name)

    def _version(self, name: str) -> int:
        with self.records.read() as tx:
            record = tx.namespace(name)
        return record.version if record is not None else 0

    def _load(self, name: str) -> NamespaceState:
        """A namespace's views: its record, its active memories and their edges (its
        history is read when asked for, :class:`~mars_core.views.history.RecordHistory`)."""
        with self.records.read() as tx:
            record = tx.namespace(name) or NamespaceRecord(name)
            active = tx.memories(name, MemoryStatus.ACTIVE)
            edges = tx.edges_of(name, [n.id for n in active]) if active else []
            archived = (tx.totals(name).get(name) or NamespaceTotals()).archived
        state = NamespaceState(record, active, edges, self._policy(record), archived=archived,
                               history=RecordHistory(self.records, name))
        saved = record.state.get("policy") or {}
        if saved.get("name") == state.policy.name and saved.get("state"):
            state.policy.load_state(saved["state"])  # ValidationError on a corrupt record
        state.saved_policy = state.policy.state_dict()
        if record.state.get("prefs") is not None:
            state.prefs = PrivacyPreferences.model_validate(record.state["prefs"])
        return state

    def _policy(self, record: NamespaceRecord) -> Policy:
        """A namespace's own policy instance, with its shares and DP accountant."""
        return build_policy(self.config, record, self.policy_summariser)

    def _evicted(self, state: NamespaceState) -> None:
        """A namespace leaves the cache: save what its policy learned since its last
        commit, and let the index drop what it holds of it in this process."""
        try:
            self.save_policy(state)
        finally:
            self.index.forget(state.name)

    def _stale(self, state: NamespaceState) -> None:
        """Another process changed a cached namespace: its views and what this
        process's index holds of it are read again. What its policy learned here since
        its last commit is dropped: it was learned on a state that is gone, and the
        committed one wins."""
        self.index.forget(state.name)

    def save_policy(self, state: NamespaceState) -> None:
        """Write a namespace's policy state if it changed since its last commit (when
        another process has changed the namespace since, the committed state wins)."""
        if self.read_only or state.policy.state_dict() == state.saved_policy:
            return
        try:
            with self.unit() as unit:  # the namespace may have left the cache already
                d = unit.draft(state.record, state.record.state)
                self._stage_policy(state, d)
        except ConcurrentWriteError:
            log.info("a namespace's learned policy state was not saved: another process "
                     "changed the namespace since this one read it")

    def centroid(self, state: NamespaceState) -> CentroidTracker:
        """The namespace's moving centroid, primed from its most recent stored vectors
        (exactly the vectors written, so a reopened store scores as the live one did)."""
        def prime() -> CentroidTracker:
            with self.records.read() as tx:
                recent = tx.newest_ids(state.name, self.enricher.config.centroid_window)
            vecs = self.stored_vectors(state, recent)
            return self.enricher.tracker(vecs[i] for i in recent if i in vecs)

        return state.novelty(prime)

    # --- units of work ---------------------------------------------------------------------

    def begin(self) -> Unit:
        """Start staging one operation's writes.

        Raises:
            ConflictError: the store is read-only.
        """
        if self.read_only:
            raise ConflictError("this store was opened with read_only=True; open it without "
                                "read_only (one writer at a time) to change it")
        return Unit(counter=self.seq, chain=self.chain,
                    allocate=self.records.next_counter if self.shared else None)

    def draft(self, unit: Unit, name: str) -> Draft:
        """The unit's draft of a namespace (its counters and state as staged)."""
        state = self.ns(name)
        if name not in unit.drafts and state.policy.state_dict() != state.saved_policy:
            unit.learned[name] = state.policy.state_dict()  # unsaved: kept if it fails
        return unit.draft(state.record, state.record.state)

    # --- the budget (fixed, or elastic: seed 000 §6.9.2) -------------------------------------

    def budget(self, name: str, unit: Unit | None = None) -> int:
        """A namespace's budget now: the configured one, or its elastic budget as staged
        in ``unit`` (as committed without one)."""
        base = self.config.budget_for(name)
        state = self.elastic(name, unit)
        return base if state is None else state.budget

    def elastic(self, name: str, unit: Unit | None = None) -> ElasticState | None:
        """The namespace's elastic budget and telemetry (None: the budget is fixed)."""
        cfg = self.config.elastic
        if cfg is None:
            return None
        saved = (self.draft(unit, name).state if unit is not None
                 else self.ns(name).record.state).get("elastic")
        return ElasticState.load(saved, cfg, self.config.budget_for(name))

    def set_elastic(self, unit: Unit, name: str, state: ElasticState) -> None:
        """Stage a namespace's elastic state with the unit."""
        self.draft(unit, name).state["elastic"] = state.as_dict()

    def step(self, unit: Unit, name: str, advance: bool = False) -> int:
        """The namespace's interaction counter as staged (``advance``: one more)."""
        d = self.draft(unit, name)
        if advance:
            d.step += 1
        return d.step

    def touch(self, unit: Unit, name: str) -> int:
        """The namespace's next recency value."""
        d = self.draft(unit, name)
        d.touch += 1
        return d.touch

    def view(self, unit: Unit, name: str) -> NamespaceView:
        """A policy view of a namespace at the unit's staged counters; its random
        generator derives from the seed and persisted counters, so seeded choices are the
        same whether or not the store was reopened."""
        d = self.draft(unit, name)
        # the configured seed (0 without one), not the id secret: random choices stay
        # the same from store to store by default; only the ids are the store's own
        seed = self.config.seed if self.config.seed is not None else 0
        rng = random.Random(f"{seed}:{name}:{unit.counter}:{d.touch}")
        state = self.ns(name)
        return state.view(self.budget(name, unit), self.clock.now(), rng, step=d.step, io=self)

    @contextlib.contextmanager
    def unit(self, *, durable: bool = True) -> Iterator[Unit]:
        """Stage one operation: committed when the block ends, abandoned if it raises
        (the views of every namespace it touched are read again from the records).
        ``durable=False``: committed without waiting for the disk
        (:meth:`~mars_core.storage.base.RecordStore.write`)."""
        unit = self.begin()
        try:
            yield unit
            self.commit(unit, durable=durable)
        except BaseException:
            self.abandon(unit)
            raise

    def abandon(self, unit: Unit) -> None:
        """Forget the views a failed unit changed (the records never saw it); what their
        policies had learned before the unit began, and not saved yet, is kept."""
        for name in unit.namespaces():
            self.cache.drop(name)
            self.index.forget(name)
            learned = unit.learned.get(name)
            if learned is not None:
                with contextlib.suppress(MarsError):  # unreadable now: read when next used
                    self.ns(name).policy.load_state(learned)

    # --- staging: the records' ops and the views, together ------------------------------

    def insert(self, unit: Unit, node: MemoryNode, vector: Vector,
               edges: Sequence[Edge] = ()) -> None:
        """Stage a new memory (and push its vector into the namespace's centroid).

        Raises:
            ValidationError: the memory breaks a bound an import of the store's export
                would refuse (:func:`~mars_core.io_checks.check_storable`).
        """
        check_storable(node, "the new memory")
        self.draft(unit, node.namespace)
        unit.insert(node, vector, edges)
        state = self.ns(node.namespace)
        state.keep_vector(node.id, vector)  # a policy planning in this unit reads it
        state.apply_put(node, edges, new=True).tell(state.policy)
        if (facts := state.held_protected()) is not None:
            facts.follow(node, vector)
        self.enricher.commit(vector, self.centroid(state))

    def update(self, unit: Unit, node: MemoryNode, *, reindex: bool,
               edges: Sequence[Edge] = ()) -> None:
        """Stage new metadata (status, sensitivity, pin, ...) of a memory (a memory the
        views do not hold is read first: they follow its move).

        Raises:
            ValidationError: as :meth:`insert`.
        """
        check_storable(node, f"memory {node.id}")
        self.draft(unit, node.namespace)
        unit.update(node, reindex=reindex, edges=edges)
        state = self.ns(node.namespace)
        state.apply_put(node, edges).tell(state.policy)
        if (facts := state.held_protected()) is not None:
            facts.follow(node)

    def stats(self, unit: Unit, node: MemoryNode) -> None:
        """Stage new access statistics of a memory."""
        self.draft(unit, node.namespace)
        unit.stats(node)
        state = self.ns(node.namespace)
        state.apply_stats(node).tell(state.policy)

    def delete(self, unit: Unit, node: MemoryNode) -> None:
        """Stage an erasure."""
        self.draft(unit, node.namespace)
        unit.delete(node)
        state = self.ns(node.namespace)
        state.apply_delete(node).tell(state.policy)
        if (facts := state.held_protected()) is not None:
            facts.drop(node.id, erased=True)

    def commit(self, unit: Unit, *, durable: bool = True) -> None:
        """Write the unit in one transaction, then the index."""
        for name, d in unit.drafts.items():
            state = self.cache.peek(name)
            if state is not None:
                self._stage_policy(state, d)
        with self.records.write(durable=durable) as tx:
            records = unit.write(tx, counter_before=self.seq)
            last = tx.last_change()
            changed = [n.id for n in unit.reindexed()]
            rows: list[IndexRow] = list(tx.index_rows(ids=changed)) if changed else []
        self.seq = unit.counter
        for name in unit.retired:  # erased whole: its record is gone, the views with it
            self.cache.drop(name)
            self.index.forget(name)
        for name, record in records.items():
            state = self.cache.peek(name)
            if state is not None:
                state.record = record
                policy = record.state.get("policy")
                if policy is not None:
                    state.saved_policy = policy["state"]
        self.sync.after_commit(unit.inserted(), rows, unit.deleted(), last)

    @staticmethod
    def _stage_policy(state: NamespaceState, d: Draft) -> None:
        """Save what the namespace's policy learned (and its DP accountant) with the unit,
        when it changed. The state holds ids and numbers only, never memory text."""
        learned = state.policy.state_dict()
        if learned != state.saved_policy:
            d.state["policy"] = {"name": state.policy.name, "state": learned}
        if state.policy.accountant is not None:
            d.state["dp"] = state.policy.accountant.state()

    # --- vectors and text -----------------------------------------------------------------

    def semantic(self) -> SemanticSensitivity | None:
        """The embedding-level sensitivity classifier of the store's embedder (fitted on
        first use, once per process and embedder; :mod:`mars_core.privacy.semantic`), or
        None when the configuration turns it off (by default: on only with the library's
        local sentence-transformers embedder; ``StoreConfig.semantic_sensitivity``)."""
        wanted = self.config.semantic_sensitivity
        if wanted is None:
            wanted = runs_locally(self.embedder)
        if not wanted:
            return None
        if self._semantic is None or self._semantic[0] != self.embedder.name:
            self._semantic = (self.embedder.name, semantic_for(self.embedder))
        return self._semantic[1]

    def everything(self, state: NamespaceState) -> list[MemoryNode]:
        """Every memory of a namespace, oldest first, read from the records and held by
        its views until the next call (an erasure by name, new preferences: calls that
        must see the whole history)."""
        with self.records.read() as tx:
            found = tx.memories(state.name)
        return state.hold(found)

    def search_terms(self, query: TermQuery) -> TermHits:
        """The record store's full-text search (one committed snapshot)."""
        with self.records.read() as tx:
            return tx.search_terms(query)
    def protected(self, state: NamespaceState) -> ProtectedFacts:
        """The namespace's protected facts (its memories at least
        :data:`~mars_core.privacy.output.SENSITIVE_THRESHOLD` sensitive, with their
        vectors), read by one query the first time the output check asks, then kept up
        to date by :meth:`insert`, :meth:`update` and :meth:`delete`."""
        def read() -> ProtectedFacts:
            with self.records.read() as tx:
                return ProtectedFacts(tx.sensitive(state.name, SENSITIVE_THRESHOLD))

        return state.protected_facts(read)

    def stored_vectors(self, state: NamespaceState, ids: Sequence[str]) -> dict[str, Vector]:
        """The vectors the records keep for memories of ``state`` (read once, then kept
        with the namespace's views; a vector never changes but by re-embedding)."""
        def read(missing: list[str]) -> Mapping[str, Vector]:
            with self.records.read() as tx:
                return tx.vectors(missing)

        return state.vectors_of(ids, read)

    def vectors(self, state: NamespaceState, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length stored vectors, one row per id (zero rows for unknown ids)."""
        out = np.zeros((len(ids), self.embedder.dim), dtype=np.float32)
        found = self.stored_vectors(state, ids)
        for i, memory_id in enumerate(ids):
            vec = found.get(memory_id)
            if vec is not None:
                norm = float(np.linalg.norm(vec))
                out[i] = vec / norm if norm > 0 else vec
        return out

    def embed_rows(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts; rows L2-normalised.

        Raises:
            ValidationError: the embedder returned the wrong shape or non-finite values.
        """
        out = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        if out.shape != (len(texts), self.embedder.dim) or not np.all(np.isfinite(out)):
            raise ValidationError(f"embedder {self.embedder.name!r} returned shape "
                                  f"{out.shape} or non-finite values for {len(texts)} texts")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(out, norms, out=np.zeros_like(out),
                                                  where=norms > 0)
        return unit

    def count_tokens(self, text: str) -> int:
        """The weight of a text as a memory."""
        return max(1, self.counter.count(text))

    def reindex(self, progress: ProgressFn | None = None) -> int:
        """Rebuild the vector index from the records; returns how many entries it holds
        (an index that loads on demand is only dropped: it reads them when queried;
        ``progress``: stage ``index``).

        Raises:
            ConfigError: a read-only store.
        """
        if self.read_only:
            raise ConfigError("a read_only store has nothing to reindex")
        for state in self.cache.states():
            self.index.forget(state.name)
        if self.index.capabilities.loads_on_demand:
            with self.records.read() as tx:
                total = sum(t.active + t.archived for t in tx.totals().values())
            report(progress, "index", total, total)
            return total
        return self.sync.rebuild(progress)

    # --- reports ------------------------------------------------------------------------------

    def report(self, namespace: str | None) -> dict[str, Any]:
        """Counts, token use and configuration (of one namespace, or of all), read in one
        snapshot of the records."""
        with self.records.read() as tx:
            totals = tx.totals(namespace)
            names = [namespace] if namespace is not None else list(totals)
            per = {}
            for ns in names:
                t = totals.get(ns) or NamespaceTotals()
                record = tx.namespace(ns)
                base = self.config.budget_for(ns)
                elastic = None if self.config.elastic is None else ElasticState.load(
                    (record.state if record else {}).get("elastic"), self.config.elastic, base)
                per[ns] = {"active": t.active, "archived": t.archived, "tokens": t.tokens,
                           "budget": base if elastic is None else elastic.budget,
                           **({} if elastic is None else {"budget_base": base,
                                                          "elastic": elastic.as_dict()}),
                           "tokens_by_type": {m.value: t.tokens_by_type.get(m, 0)
                                              for m in MemoryType},
                           "step": record.step if record else 0}
            events = tx.audit_size()
        return {"records": self.records.name, "index": self.index.name,
                "index_choice": self.note, "embedder": self.embedder.name,
                "embedder_choice": f"{self.embedder.name} ({self.embedder_note})",
                "dim": self.embedder.dim, "token_counter": self.counter.name,
                "signals": self.enricher.name, "signals_choice": self.enricher.choice,
                "policy": self.config.policy,
                "audit_events": events, "namespaces": per}

    def export(self, namespace: str | None) -> dict[str, Any]:
        """The JSON-LD document of one namespace or of all, read in one snapshot of the
        records (no namespace is loaded for it)."""
        from mars_core.io import to_jsonld

        nodes: list[MemoryNode] = []
        edges: list[Edge] = []
        steps: dict[str, int] = {}
        with self.records.read() as tx:
            for ns in [namespace] if namespace is not None else list(tx.totals()):
                found = tx.memories(ns)
                if not found:
                    continue
                nodes += found
                edges += tx.edges(ns)
                record = tx.namespace(ns)
                steps[ns] = record.step if record else 0
        nodes.sort(key=lambda n: n.seq)
        return to_jsonld(nodes, sorted(edges, key=lambda e: e.key), dict(sorted(steps.items())))

    # --- erasure's last steps ----------------------------------------------------------------

    def purge(self, namespaces: Sequence[str]) -> str:
        """After an erasure (or an open that finds one unfinished): make erased bytes
        unrecoverable where the stores can — the record store's files, then the index
        partitions of ``namespaces`` where the index keeps deleted vectors — and take the
        namespaces off the manifest's pending list. Says what was done."""
        done = [self.records.purge()]
        self.sync.flush()
        index = self.index
        if self.sync.behind:
            done.append(f"{index.name}: unreachable; its entries are deleted when it is caught "
                        "up")
            return "; ".join(done)
        if index.capabilities.keeps_deleted:
            try:
                done.append(self.sync.compact(list(namespaces)))
            except ConflictError:  # the erasure stands; the next open compacts them
                done.append(f"{index.name}: held by another process; its partitions are "
                            "compacted at the next open")
                return "; ".join(done)
        else:
            done.append(f"{index.name}: entries deleted")
        with self.records.write() as tx:
            manifest = dict(tx.manifest() or {})
            left = sorted(set(manifest.get("compact_pending") or []) - set(namespaces))
            if left != manifest.get("compact_pending", []):
                tx.put_manifest({**manifest, "compact_pending": left})
        return "; ".join(done)

    # --- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """Save what cached namespaces learned, mark the index, close both stores."""
        try:
            for state in self.cache.states():
                self.save_policy(state)
            self.sync.flush()
        finally:
            try:
                self.index.close()
            finally:
                self.records.close()


def _refuse_headless(tx: RecordTxn, location: str) -> None:
    """Refuse a record store that holds records but no manifest (it was damaged: a new
    manifest would claim them for another store, with another key).

    Raises:
        CorruptStoreError: records without a manifest.
    """
    if tx.audit_size() or tx.namespace_names():
        raise CorruptStoreError(
            f"the record store at {location} holds records but its manifest is missing: it "
            "is damaged; restore it from a backup (nothing was changed)")
