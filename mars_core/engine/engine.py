"""The services every collaborator of the store shares: opening, namespaces, units.

:class:`Engine` owns the record store, the vector index and the configuration, opens the
store (the manifest, nothing else), loads namespaces on demand
(:class:`~mars_core.engine.cache.NamespaceCache`), begins and commits units of work
(:class:`~mars_core.engine.unit.Unit`: one record-store transaction each, then the views,
then the index), and gives the policies their views. The operations themselves live in
the collaborators (:mod:`mars_core.engine.writer`, ``reader``, ``eraser``,
``maintainer``); :class:`~mars_core.store.MemoryStore` is the façade over them.

The opening itself (the manifest, the audit key) is :mod:`mars_core.engine.manifest`'s;
vectors and text are :mod:`mars_core.engine.vectors`'s; the reports
:mod:`mars_core.engine.reports`'s.

Examples:
    >>> from mars_core.engine.engine import Engine
    >>> Engine.__name__
    'Engine'
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mars_core.audit import AuditChain
from mars_core.budget import ElasticState, TokenCounter, make_counter
from mars_core.clock import Clock
from mars_core.config import StoreConfig
from mars_core.embeddings import Embedder
from mars_core.engine.cache import NamespaceCache
from mars_core.engine.indexing import IndexSync
from mars_core.engine.keyed import KeyedIndex
from mars_core.engine.manifest import Manifest
from mars_core.engine.trail import AUDIT_FORMAT, upgrade
from mars_core.engine.unit import Draft, Unit
from mars_core.engine.vectors import VectorIO
from mars_core.errors import (
    ConcurrentWriteError,
    ConfigError,
    ConflictError,
    MarsError,
)
from mars_core.index.base import VectorIndex
from mars_core.io.checks import check_storable
from mars_core.knowledge.summarise import ExtractiveSummariser, Summariser
from mars_core.model import Edge, MemoryNode, MemoryStatus
from mars_core.policies import Policy, make_policy
from mars_core.privacy.dp import PrivacyAccountant
from mars_core.privacy.output import SENSITIVE_THRESHOLD
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.privacy.sensitivity import SensitivityScorer
from mars_core.progress import ProgressFn, report
from mars_core.scoring.dmf import CentroidTracker
from mars_core.shares import TypeShares
from mars_core.storage.base import (
    IndexRow,
    NamespaceRecord,
    NamespaceTotals,
    RecordStore,
    TermHits,
    TermQuery,
    Vector,
)
from mars_core.views.history import RecordHistory
from mars_core.views.namespace import NamespaceState, NamespaceView
from mars_core.views.protected import ProtectedFacts

__all__ = ["Engine", "build_policy"]

log = logging.getLogger(__name__)


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
        cache_memories: how many memories they hold together between calls.
        note: how the index was chosen (shown by ``stats()``).
        embedder_note: how the embedder of a new store was chosen (recorded in the
            manifest and shown by ``stats()``), e.g. ``"passed"``.
        overrides: keyword fields given without a config object: a reopened store
            applies them on top of its recorded configuration (None: ``config`` whole).
    """

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, *,
                 config: StoreConfig, explicit: bool, clock: Clock, audit_key: bytes | None,
                 summariser: Summariser | None, read_only: bool, cache_namespaces: int,
                 cache_memories: int, note: str, embedder_note: str = "passed",
                 overrides: Mapping[str, Any] | None = None) -> None:
        self.records = records
        self.index = KeyedIndex(index)  # names and conversation ids reach it keyed
        self.clock = clock
        self.summariser: Summariser = summariser or ExtractiveSummariser()
        self.policy_summariser = summariser
        """The caller's summariser for the policies' budget-triggered summaries (None:
        each policy's default, the extractive one counting with the store's counter)."""
        self.read_only, self.note = read_only, note
        self.manifest = Manifest(
            records, self.index, embedder, config=config, clock=clock, read_only=read_only,
            check_policy=lambda cfg: self._policy(NamespaceRecord(cfg.default_namespace), cfg),
            note=note, embedder_note=embedder_note, overrides=overrides)
        """The store's manifest: read once, here; then the index identity, the budget fit."""
        opened = self.manifest.open(audit_key, explicit)
        self.config = self.manifest.config
        self.embedder_note = self.manifest.embedder_note
        self.enricher = self.manifest.enricher
        self.scorer = SensitivityScorer(analyzer=self.enricher.analyzer)
        self.io = VectorIO(records, embedder, make_counter(self.config.token_counter),
                           semantic_sensitivity=self.config.semantic_sensitivity)
        """Vectors and text: what a policy's view and the output check read."""
        exclusive = records.capabilities.exclusive_writer and not read_only
        self.shared = not records.capabilities.exclusive_writer
        """Other processes write these records too: new memories are numbered by the
        record store, and a commit checks the namespaces it read are unchanged."""
        self.cache = NamespaceCache(self._load, capacity=cache_namespaces,
                                    max_held=cache_memories,
                                    on_evict=self._evicted, on_stale=self._stale,
                                    version=None if exclusive else self._version)
        self.sync = IndexSync(records, self.index, writer=not read_only)
        self.seq = opened.seq
        self.secret = str(opened.manifest.get("id_secret", self.config.seed or 0))
        self.chain = AuditChain(opened.key)
        self._start(opened.manifest)

    @property
    def embedder(self) -> Embedder:
        """The store's embedder (:attr:`io`'s)."""
        return self.io.embedder

    @property
    def counter(self) -> TokenCounter:
        """The store's token counter (:attr:`io`'s)."""
        return self.io.counter

    def _start(self, manifest: Mapping[str, Any]) -> None:
        """Begin from an opened manifest: the audit format brought up to date, the index
        bound to this store and embedder, what a crash left behind purged."""
        if not self.read_only and int(manifest.get("audit_format", 1)) < AUDIT_FORMAT:
            with self.records.write() as tx:  # written before rows and heads were audited
                upgrade(tx, self.chain, self.clock.now())
        index = manifest.get("index") or {}
        self.index.use(self.chain)
        self.sync.bind(self.manifest.index_identity(self.embedder,
                                                    int(index.get("generation", 0))),
                       self.embedder.dim)
        if not self.read_only:  # a crash may have left an erasure's WAL or index behind
            pending = list(manifest.get("compact_pending") or [])
            self.purge(pending) if pending else self.records.purge()


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

    def _policy(self, record: NamespaceRecord, config: StoreConfig | None = None) -> Policy:
        """A namespace's own policy instance, with its shares and DP accountant (under
        ``config``, the store's by default)."""
        return build_policy(config or self.config, record, self.policy_summariser)

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
            vecs = self.io.stored_vectors(state, recent)
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
        return state.view(self.budget(name, unit), self.clock.now(), rng, step=d.step, io=self.io)

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

    def stage_insert(self, unit: Unit, node: MemoryNode, vector: Vector,
               edges: Sequence[Edge] = ()) -> None:
        """Stage a new memory (and push its vector into the namespace's centroid).

        Raises:
            ValidationError: the memory breaks a bound an import of the store's export
                would refuse (:func:`~mars_core.io.checks.check_storable`).
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

    def stage_update(self, unit: Unit, node: MemoryNode, *, reindex: bool,
               edges: Sequence[Edge] = ()) -> None:
        """Stage new metadata (status, sensitivity, pin, ...) of a memory (a memory the
        views do not hold is read first: they follow its move).

        Raises:
            ValidationError: as :meth:`stage_insert`.
        """
        check_storable(node, f"memory {node.id}")
        self.draft(unit, node.namespace)
        unit.update(node, reindex=reindex, edges=edges)
        state = self.ns(node.namespace)
        state.apply_put(node, edges).tell(state.policy)
        if (facts := state.held_protected()) is not None:
            facts.follow(node)

    def stage_stats(self, unit: Unit, node: MemoryNode) -> None:
        """Stage new access statistics of a memory."""
        self.draft(unit, node.namespace)
        unit.stats(node)
        state = self.ns(node.namespace)
        state.apply_stats(node).tell(state.policy)

    def stage_delete(self, unit: Unit, node: MemoryNode) -> None:
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
        to date by :meth:`stage_insert`, :meth:`stage_update` and :meth:`stage_delete`."""
        def read() -> ProtectedFacts:
            with self.records.read() as tx:
                return ProtectedFacts(tx.sensitive(state.name, SENSITIVE_THRESHOLD))

        return state.protected_facts(read)

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

    # --- what the store is built of -----------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """The parts of the store and how each was chosen (the head of ``stats()``)."""
        return {"records": self.records.name, "index": self.index.name,
                "index_choice": self.note, "embedder": self.embedder.name,
                "embedder_choice": f"{self.embedder.name} ({self.embedder_note})",
                "dim": self.embedder.dim, "token_counter": self.counter.name,
                "signals": self.enricher.name, "signals_choice": self.enricher.choice,
                "policy": self.config.policy}

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
