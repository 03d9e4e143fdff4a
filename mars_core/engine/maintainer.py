"""The maintainer: background hygiene off the ``add`` path, and re-embedding.

:meth:`Maintainer.maintain_namespace` runs seed 003's phases on one namespace in one
transaction: TTL expiry, graduated retention (opt-in), near-duplicate merging and
reflection. :meth:`Maintainer.reembed` moves the whole store to another embedder in one
record-store transaction (the store is on the old embedder or the new one, never
between), then rebuilds the vector index from the new vectors.

Examples:
    Near-duplicate merging: the newer memory absorbs the older, which is archived:

    >>> from mars_core import FakeClock, MemoryStore
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     old = store.add("Ana moved to Lisbon in May")
    ...     new = store.add("Ana moved to Lisbon in May")
    ...     counts = store.maintain()["default"]
    ...     counts["merged"], store.get(old.id).status.value, store.get(new.id).status.value
    (1, 'archived', 'active')
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np

from mars_core.audit import AuditOp
from mars_core.embeddings import Embedder
from mars_core.engine.engine import Engine
from mars_core.engine.unit import Unit
from mars_core.engine.writer import Writer
from mars_core.errors import ValidationError
from mars_core.maintenance import Merge, plan_dedup, plan_expiry, plan_graduated
from mars_core.model import Edge, Predicate
from mars_core.policies import Eviction
from mars_core.policies.reflection import ReflectionSummaryPolicy
from mars_core.progress import ProgressFn, report
from mars_core.scoring.retention import KIND_BY_TYPE, LifecycleConfig
from mars_core.storage.base import NamespaceRecord, SetVector
from mars_core.views.namespace import NamespaceState

__all__ = ["Maintainer"]


class Maintainer:
    """Maintenance phases and re-embedding (see the module)."""

    def __init__(self, engine: Engine, writer: Writer) -> None:
        self.engine, self.writer = engine, writer

    def lifecycle(self, state: NamespaceState) -> LifecycleConfig:
        """Seed 003 TTLs, with the user's per-type retention horizons taking precedence."""
        cfg = LifecycleConfig()
        prefs = state.prefs
        if prefs is None or not prefs.retention_days:
            return cfg
        ttl = dict(cfg.ttl)
        for mtype, days in prefs.retention_days.items():
            ttl[KIND_BY_TYPE[mtype]] = timedelta(days=days)
        return cfg.model_copy(update={"ttl": ttl})

    def maintain_namespace(self, ns: str, *, ttl: bool, graduated: bool, dedup: bool,
                           reflect: bool) -> dict[str, int]:
        """One namespace's maintenance phases in one write (seed 003 order)."""
        report = {"expired": 0, "archived": 0, "merged": 0, "summarised": 0}
        with self.engine.unit() as unit:
            state = self.engine.ns(ns)
            view, taken = self.engine.view(unit, ns), set[str]()
            cfg = self.lifecycle(state)
            if ttl:
                evs = plan_expiry(view, view.now, cfg, exclude=frozenset(taken))
                self.writer.archive(unit, ns, evs, "ttl", {})
                taken.update(e.node_id for e in evs)
                report["expired"] = len(evs)
            compact: tuple[str, ...] = ()
            if graduated:
                gp = plan_graduated(view, view.now, cfg, exclude=frozenset(taken))
                self.writer.archive(unit, ns, gp.archive, "graduated", {})
                taken.update(e.node_id for e in gp.archive)
                report["archived"], compact = len(gp.archive), gp.compact
            if dedup:
                merges = plan_dedup(view, self.engine.config.dedup_threshold,
                                    exclude=frozenset(taken))
                if merges:
                    self._merge(unit, state, merges)
                taken.update(m.dropped_id for m in merges)
                report["merged"] = len(merges)
            if reflect and (compact or view.used >= self.engine.config.reflect_at * view.budget):
                reflector = ReflectionSummaryPolicy(summariser=self.engine.summariser)
                plan = reflector.consolidate(view, max(1, view.used), frozenset(taken))
                for summary in plan.summaries:
                    self.writer.summarise(unit, ns, summary, "reflection", reflector.params())
                report["summarised"] = len(plan.summaries)
            if not unit.events:
                unit.drafts.clear()  # nothing to write (the unit commits nothing)
        return report

    def _merge(self, unit: Unit, state: NamespaceState, merges: Sequence[Merge]) -> None:
        """Dedup (seed 003): archive each duplicate; the kept memory records what it
        absorbed (``metadata["also_from"]``) and ``supersedes`` it; the audit is the log."""
        ns = state.name
        step, now = self.engine.step(unit, ns), self.engine.clock.now()
        absorbed: dict[str, list[str]] = {}
        for m in merges:
            absorbed.setdefault(m.kept_id, []).append(m.dropped_id)
        self.writer.archive(unit, ns, [Eviction(m.dropped_id, state.node(m.dropped_id).weight,
                                           m.cosine, {"cosine": m.cosine}, m.rationale)
                                  for m in merges], "dedup", {"threshold": merges[0].threshold})
        for kept_id, dropped in sorted(absorbed.items()):
            kept = state.node(kept_id)
            also = sorted({*kept.metadata.get("also_from", []), *dropped})
            edges = [Edge(source=kept_id, predicate=Predicate.SUPERSEDES, target=d, step=step)
                     for d in dropped]
            self.engine.stage_update(unit, kept.model_copy(update={"metadata": {**kept.metadata,
                                                                      "also_from": also}}),
                          reindex=False, edges=edges)
            unit.event(ns, op=AuditOp.METADATA, node_ids=[kept_id], policy="dedup", step=step,
                       at=now, params={"absorbed": dropped},
                       rationale=f"absorbed {len(dropped)} duplicate(s): {', '.join(dropped)}")

    # --- re-embedding -----------------------------------------------------------------------

    def reembed(self, embedder: Embedder, batch_size: int,
                progress: ProgressFn | None = None) -> int:
        """Move every memory to ``embedder``'s vectors in one transaction, then rebuild
        the index; returns how many memories were re-embedded (``progress``: stages
        ``embed`` and ``write``).

        Raises:
            ValidationError: the embedder returned the wrong shape or non-finite values,
                or a bad ``batch_size`` (nothing changed).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be a positive int")
        unit = self.engine.begin()  # refuses a read-only store
        count = 0
        default = self.engine.config.default_namespace
        with self.engine.records.write() as tx:
            tx.lock_namespaces([default])  # its config event; before the manifest
            total = sum(t.active + t.archived for t in tx.totals().values())
            report(progress, "embed", 0, total)
            for ns in tx.namespace_names():
                nodes = tx.memories(ns)
                for i in range(0, len(nodes), batch_size):
                    chunk = nodes[i:i + batch_size]
                    vecs = np.asarray(embedder.embed([n.content for n in chunk]), np.float32)
                    if vecs.shape != (len(chunk), embedder.dim) or not np.all(np.isfinite(vecs)):
                        raise ValidationError(f"embedder {embedder.name!r} returned shape "
                                              f"{vecs.shape} or non-finite values")
                    tx.apply([SetVector(node.id, vec)
                              for node, vec in zip(chunk, vecs, strict=True)])
                    count += len(chunk)
                    report(progress, "embed", min(count, total), total)
            manifest = dict(tx.manifest() or {})
            generation = int((manifest.get("index") or {}).get("generation", 0)) + 1
            manifest.update(embedder={"name": embedder.name, "dim": embedder.dim,
                                      "choice": "passed to reembed"},
                            index={"name": self.engine.index.name, "generation": generation,
                                   "choice": self.engine.note})
            tx.put_manifest(manifest)
            ns = default
            record = tx.namespace(ns) or NamespaceRecord(ns)
            d = unit.draft(record, record.state)
            unit.event(ns, op=AuditOp.CONFIG, step=d.step, at=self.engine.clock.now(),
                       params={"embedder": embedder.name, "dim": embedder.dim},
                       rationale=f"re-embedded {count} memories with {embedder.name}")
            unit.write(tx, counter_before=unit.counter)
            report(progress, "write", 0, count)
        report(progress, "write", count, count)
        self.engine.io.embedder = embedder
        self.engine.embedder_note = "passed to reembed"
        for state in self.engine.cache.states():  # their centroids hold the old vectors
            self.engine.cache.drop(state.name)
            self.engine.index.forget(state.name)
        # another identity: the index empties itself and is rebuilt from the new vectors
        identity = self.engine.manifest.index_identity(embedder, generation)
        self.engine.sync.bind(identity, embedder.dim)
        return count

