"""Maintenance planners (seed 003): deduplication, TTL expiry, graduated retention.

These are *pure* planners over a read-only :class:`~mars_core.policies.plan.PolicyView`
of one namespace: they return value objects and change nothing. The store's
``maintain()`` applies them (archive, never delete: seed 003 "Don't delete on expiry -
archive"; "Forgetting without archival is data destruction").

Task-safety holds in every planner: a pinned memory, an active goal, or a prerequisite
of an active goal without an equivalent summary is **never** proposed (DESIGN §3
invariant 3). Maintenance is hygiene, not budget pressure, so no protection yields.

* :func:`plan_dedup` — seed 003's deduplication: memories newest first; a memory whose
  cosine to an already kept one is ``> threshold`` (strict, default 0.92) is a duplicate
  of the *first* (newest) such kept memory and is dropped; the kept one absorbs it.
  Memories are compared within one memory type only (an episode and the semantic fact
  it mentions play different roles). Exact greedy result, computed in row blocks with
  one matrix product per block against the kept set: O(n·k·d) arithmetic for k kept
  memories, O(n) Python steps.
* :func:`plan_expiry` — TTL per seed 003 kind (``should_expire``: ``now − created_at >
  ttl``, strict), plus an explicit ``expires_at`` on the memory (strict, too).
* :func:`plan_graduated` — ``should_archive`` (idle > 90 whole days and relevance ≤ 0.5,
  never identity or active decisions) and, with ``tiers=True``, seed 003's graduated
  retention tiers by whole days since creation (archive or compact).

The seed 003 kind of a memory is ``metadata["kind"]`` when it names one, else
``compacted_summary`` for summaries (compaction depth ≥ 1), else the MaRS type mapping
of :func:`~mars_core.scoring.retention.kind_for`.

Examples:
    >>> import random
    >>> from datetime import UTC, datetime
    >>> from mars_core.views.namespace import NamespaceState
    >>> view = NamespaceState.of("ns").view(100, datetime(2026, 1, 1, tzinfo=UTC),
    ...                                     random.Random(0))
    >>> plan_dedup(view), plan_expiry(view), plan_graduated(view).archive
    ([], [], [])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from mars_core import decay
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode, MemoryType, utc
from mars_core.policies.plan import Eviction, PolicyView
from mars_core.scoring.retention import (
    LifecycleConfig,
    PracticeKind,
    RetentionAction,
    graduated_action,
    kind_for,
    relevance_at,
    should_archive,
    should_expire,
    ttl_for,
)

__all__ = [
    "DEDUP_THRESHOLD",
    "GraduatedPlan",
    "Merge",
    "memory_kind",
    "plan_dedup",
    "plan_expiry",
    "plan_graduated",
]

DEDUP_THRESHOLD = 0.92
"""Seed 003's dedup similarity: a cosine strictly above it marks a duplicate."""

_BLOCK = 512
_KINDS = frozenset(k.value for k in PracticeKind)
_TYPE_NOUN = {MemoryType.EPISODIC: "episodic", MemoryType.SEMANTIC: "semantic",
              MemoryType.SOCIAL: "social", MemoryType.TASK: "task"}


@dataclass(frozen=True, slots=True)
class Merge:
    """A planned dedup merge: ``dropped_id`` duplicates the newer ``kept_id``.

    Examples:
        >>> Merge("new", "old", 0.953).rationale
        'duplicate of new (cosine 0.953 > 0.92); the newer memory is kept'
    """

    kept_id: str
    dropped_id: str
    cosine: float
    threshold: float = DEDUP_THRESHOLD

    @property
    def rationale(self) -> str:
        """Why the memory is dropped (ids and numbers only, no memory text)."""
        return (f"duplicate of {self.kept_id} (cosine {self.cosine:.3f} > {self.threshold:.2f}); "
                "the newer memory is kept")


@dataclass(frozen=True, slots=True)
class GraduatedPlan:
    """What graduated retention proposes: memories to archive, memories to compact."""

    archive: list[Eviction] = field(default_factory=list)
    compact: tuple[str, ...] = ()


def memory_kind(node: MemoryNode) -> PracticeKind:
    """The seed 003 kind of a memory (see the module docstring).

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> n = MemoryNode(id="a", type="task", content="x", weight=1, payload={"kind": "task"})
        >>> memory_kind(n).value, memory_kind(n.model_copy(update={"depth": 1})).value
        ('project_status', 'compacted_summary')
    """
    hint = node.metadata.get("kind")
    if isinstance(hint, str) and hint in _KINDS:
        return PracticeKind(hint)
    if node.depth >= 1:
        return PracticeKind.COMPACTED_SUMMARY
    return kind_for(node.type)


def _unprotected(view: PolicyView, exclude: frozenset[str]) -> Iterator[MemoryNode]:
    return (n for n in view.active()
            if n.id not in exclude and not n.pinned and not view.task_protected(n.id))


def _eviction(node: MemoryNode, rationale: str, features: dict[str, float],
              score: float | None = None) -> Eviction:
    return Eviction(node.id, node.weight, score, features, rationale)


# --- deduplication ----------------------------------------------------------------------------


def plan_dedup(view: PolicyView, threshold: float = DEDUP_THRESHOLD, *,
               block: int = _BLOCK, exclude: frozenset[str] = frozenset()) -> list[Merge]:
    """Seed 003 deduplication of the namespace's active memories (newest kept).

    Args:
        view: the namespace.
        threshold: cosine strictly above which two memories are duplicates (0.92).
        block: rows per matrix product (memory O(block·k)).
        exclude: ids to ignore entirely (e.g. already planned for archival in the same
            maintenance transaction).

    Raises:
        ValidationError: ``threshold`` outside [-1, 1] or ``block`` < 1.
    """
    if not -1.0 <= threshold <= 1.0:
        raise ValidationError(f"threshold must lie in [-1, 1], got {threshold}")
    if block < 1:
        raise ValidationError("block must be >= 1")
    by_type: dict[MemoryType, list[MemoryNode]] = {}
    for node in view.active():
        if node.id not in exclude:
            by_type.setdefault(node.type, []).append(node)
    merges: list[Merge] = []
    for mtype in MemoryType:
        nodes = sorted(by_type.get(mtype, []), key=lambda n: (n.created_at, n.seq), reverse=True)
        if len(nodes) > 1:
            merges += _dedup_slice(view, nodes, threshold, block)
    return sorted(merges, key=lambda m: (m.kept_id, m.dropped_id))


def _dedup_slice(view: PolicyView, nodes: list[MemoryNode], threshold: float, block: int
                 ) -> list[Merge]:
    x = np.asarray(view.vectors([n.id for n in nodes]), dtype=np.float32)
    droppable = np.array([not n.pinned and not view.task_protected(n.id) for n in nodes])
    kept_rows: list[int] = []
    kept_mat = np.zeros((0, x.shape[1]), dtype=np.float32)
    merges: list[Merge] = []
    for start in range(0, len(nodes), block):
        rows = np.arange(start, min(len(nodes), start + block))
        prev = x[rows] @ kept_mat.T
        inner = x[rows] @ x[rows].T
        new_kept: list[int] = []
        for j, row in enumerate(rows.tolist()):
            match = _first_match(prev[j], inner[j, new_kept], threshold)
            if match is None or not droppable[row]:
                new_kept.append(j)
                continue
            kept = kept_rows[match] if match < len(kept_rows) else int(
                rows[new_kept[match - len(kept_rows)]])
            cos = float(x[row] @ x[kept])
            merges.append(Merge(nodes[kept].id, nodes[row].id, cos, threshold))
        kept_rows += [int(rows[j]) for j in new_kept]
        kept_mat = np.concatenate([kept_mat, x[rows[new_kept]]]) if new_kept else kept_mat
    return merges


def _first_match(prev: npt.NDArray[np.float32], inner: npt.NDArray[np.float32],
                 threshold: float) -> int | None:
    """Index (in kept order: earlier blocks, then this block) of the first kept match."""
    hits = np.nonzero(np.concatenate([prev, inner]) > threshold)[0]
    return int(hits[0]) if hits.size else None


# --- TTL expiry -------------------------------------------------------------------------------


def _span(delta: timedelta) -> str:
    if delta >= timedelta(days=2):
        return f"{delta.days} days"
    hours = int(delta.total_seconds() // 3600)
    return f"{hours} hours" if hours != 1 else "1 hour"


def plan_expiry(view: PolicyView, now: datetime | None = None,
                config: LifecycleConfig | None = None, *,
                exclude: frozenset[str] = frozenset()) -> list[Eviction]:
    """Active memories past their TTL (seed 003 ``should_expire``) or their ``expires_at``.

    Evictions are archives (seed 003: expiry archives); oldest first; ``exclude``: ids
    to ignore.

    Examples:
        >>> import random
        >>> from mars_core.views.namespace import NamespaceState
        >>> v = NamespaceState.of("ns").view(100, datetime(2026, 1, 1), random.Random(0))
        >>> plan_expiry(v)
        []
    """
    cfg = config or LifecycleConfig()
    at = utc(now or view.now)
    out: list[Eviction] = []
    for node in sorted(_unprotected(view, exclude), key=lambda n: (n.created_at, n.seq)):
        kind = memory_kind(node)
        age = at - node.created_at
        if node.expires_at is not None and at > node.expires_at:
            out.append(_eviction(node, f"expired: explicit expiry at "
                                 f"{node.expires_at.isoformat()} passed, created "
                                 f"{_span(age)} ago", {"age_days": age.total_seconds() / 86400}))
        elif should_expire(kind, node.created_at, at, cfg):
            ttl = ttl_for(kind, cfg)
            assert ttl is not None  # should_expire is False for immortal kinds
            out.append(_eviction(
                node, f"expired: TTL {_span(ttl)} for {_TYPE_NOUN[node.type]} memories "
                f"(seed 003 kind {kind.value}), created {_span(age)} ago",
                {"age_days": age.total_seconds() / 86400,
                 "ttl_days": ttl.total_seconds() / 86400}))
    return out


# --- graduated retention ----------------------------------------------------------------------


_TIER_REASON = {
    1: "7–30 days: raw outputs are archived",
    2: "30–90 days: details are archived, findings compacted",
    3: "over 90 days: only identity and decisions are kept",
}


def _tier(age_days: int, cfg: LifecycleConfig) -> int:
    return sum(age_days > t for t in cfg.tiers_days)


def plan_graduated(view: PolicyView, now: datetime | None = None,
                   config: LifecycleConfig | None = None, *, tiers: bool = True,
                   exclude: frozenset[str] = frozenset()) -> GraduatedPlan:
    """Seed 003 archival (``should_archive``) and, with ``tiers``, graduated retention.

    Args:
        view: the namespace.
        now: the time to judge at (default: the view's time).
        config: seed 003 lifecycle constants.
        tiers: also apply the age tiers of ``graduated_action`` (digest Z-D6: the tiers
            are an alternative profile — they archive a 91-day-old preference whose TTL is
            730 days — so a store should make them opt-in).
        exclude: ids to ignore (e.g. already expired in the same transaction).

    Returns:
        memories to archive (oldest first) and ids of memories the tiers mark for
        compaction (findings and observations 30–90 days old: hand them to reflection).
    """
    cfg = config or LifecycleConfig()
    at = utc(now or view.now)
    archive: list[Eviction] = []
    compact: list[str] = []
    for node in sorted(_unprotected(view, exclude), key=lambda n: (n.created_at, n.seq)):
        kind = memory_kind(node)
        age_days = decay.whole_days_between(node.created_at, at)
        last = node.last_access_at or node.created_at
        idle = decay.whole_days_between(last, at)
        rel = relevance_at(kind, node.created_at, node.access_count, node.last_access_at,
                           now=at, config=cfg.relevance)
        feats = {"age_days": float(age_days), "idle_days": float(idle), "relevance": rel}
        if should_archive(kind, node.created_at, node.access_count, node.last_access_at,
                          now=at, config=cfg):
            archive.append(_eviction(
                node, f"archived: idle {idle} days (> {cfg.max_age_days}) and relevance "
                f"{rel:.2f} ≤ {cfg.keep_relevance:.2f} (seed 003 kind {kind.value})", feats, rel))
            continue
        if not tiers:
            continue
        action = graduated_action(kind, age_days, cfg)
        if action is RetentionAction.ARCHIVE:
            archive.append(_eviction(
                node, f"archived by graduated retention: {kind.value} {age_days} days old "
                f"({_TIER_REASON[_tier(age_days, cfg)]})", feats, rel))
        elif action is RetentionAction.COMPACT:
            compact.append(node.id)
    return GraduatedPlan(archive, tuple(compact))
