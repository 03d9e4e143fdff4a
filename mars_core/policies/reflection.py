"""Reflection-Summary: consolidate redundant episodes into one semantic memory.

Seed 000 §3.3.2 (with §3.1, §4.2, §4.3, §5.3, §5.4) replaces a cluster ``C`` of episodic
memories by one *semantic* summary ``c̄`` linked to them by ``derivesFrom`` when

* the **distortion** ``D(C ⇒ c̄) = (1/|C|) Σ_{i∈C} ‖φ(c_i) − φ(c̄)‖`` is at most τ_util
  (the utility loss is at most ``κ·D`` when U is κ-Lipschitz in the embedding), and
* the **privacy gate** holds: ``s̄ ≤ min_{i∈C} s_i − τ_priv`` — the summary must be less
  sensitive than every member by a margin, "a privacy bound that guarantees risk
  reduction" (§4.3, as written; issue 33). Sensitivities below ``gate_floor`` (0.3) count
  as 0 on both sides: the scorer gives a weekday or a first name 0.05–0.3, which is not
  something to protect. So a cluster of ordinary turns passes (everything is 0); a
  cluster of sensitive members passes when the summary drops below the least sensitive
  of them; and a cluster that mixes a sensitive member with a harmless one passes only
  when the summary carries nothing above the floor — otherwise it is "left intact and
  considered for deletion by the policy" (§4.3), where the density's own penalty
  λ_priv·s tilts eviction toward the sensitive member. ``privacy_reference="max"`` keeps
  the gate used before issue 33, ``s̄ ≤ max_{i∈C} s_i − τ_priv`` (§5.4's "the most
  sensitive constituent"), which DESIGN §6 had chosen because the min form blocks every
  cluster holding one harmless turn with a sensitive one.

Otherwise the cluster is "left intact and considered for deletion by the policy": the
second stage evicts by MaRS density, so the policy always restores the budget. The seed
gives no parameters (digest Z-A6, Z-A9); each choice is a :class:`ReflectionConfig` field
with its reason. The algorithm, per trigger:

1. **Candidates**: active episodic memories and summaries of depth < 2 (seed 003: never
   compact more than twice), not pinned, not task-protected, not already taken; in
   creation order (step, then sequence).
2. **Clustering with temporal linkage** (§3.3.2 "ANN on φ(c) plus linkage on E_temp"):
   each memory is compared with its ``temporal_window`` predecessors in time — one
   vectorised dot product per offset, O(n·W·d) — and linked when the cosine is at
   least ``link_similarity`` and the two are at most ``temporal_window`` steps apart;
   clusters are the connected components (single link, union–find, O(n·W·α(n))). A
   topic that comes back after a long gap forms a new cluster: recurring topics across
   sessions are left to :func:`mars_core.maintenance.plan_dedup` and a later pass.
   Components larger than ``max_cluster_size`` are cut into equal consecutive chunks.
   *With the policy's working-set cache* (what the policies use) the links are computed
   once per memory, when it is first seen, against every episodic/semantic memory at
   most ``temporal_window`` steps away, and kept until one side leaves; a trigger then
   filters the linked pairs to the eligible slice, so it costs O(new·W·d) plus the
   union–find over linked memories. With one episode per step this equals the
   predecessor rule; with several memories per step it may link more pairs.
3. **Ranking**: redundancy (mean pairwise cosine inside the cluster) minus
   ``density_weight`` × the cluster's mean MaRS density, min–max scaled over the
   clusters: the most redundant, least valuable clusters go first.
4. **Summarising** with the pluggable :class:`~mars_core.knowledge.summarise.Summariser` (default
   :class:`~mars_core.knowledge.summarise.ExtractiveSummariser`) to about ``target_ratio`` of the
   cluster's tokens; then the gates. At most ``max_attempts_per_trigger`` summariser
   calls and ``max_summaries_per_trigger`` accepted summaries per trigger (§5.3
   "rate-limited per trigger to cap worst-case latency"); the generator is lazy, so no
   cluster is summarised once the budget is restored.
5. **A conservative retry** (§5.3: a cluster whose summary fails the checks "is skipped
   or resubmitted with a more conservative target length"): when the first summary
   fails — the summariser raised a :class:`~mars_core.errors.MarsError` or returned
   nothing, the summary is not shorter than its cluster, or a gate refused it — the
   cluster is summarised once more, at a target that moves away from the failure:
   *longer* (``target / retry_factor``, below the cluster's size) when the distortion
   gate refused it, since a summary that keeps more loses less utility; *shorter*
   (``target · retry_factor``) otherwise — a summary too long for its cluster or for
   the summariser, or one keeping too much sensitive detail, is asked for less. The
   retry is a summariser call and counts against ``max_attempts_per_trigger``; a
   summary accepted on retry records both targets and the first failure in its audit
   features and rationale (``retry``, ``first_target_tokens``, ``target_tokens``).

**Sensitivity of a summary** (ours; the seed gives no formula). The gate can only credit
what it can verify, so ``s̄ = max_i r_i`` with ``r_i = identifier_discount · s_i`` when
member ``i`` held direct identifiers (:func:`~mars_core.knowledge.summarise.find_identifiers`) and
none of them survives in the summary, else ``r_i = s_i``. A summary that keeps a
sensitive member's phone number is as sensitive as that member and fails the gate; one
that masks it passes when no other member is nearly as sensitive; a sensitive member with
no detectable identifier keeps its full sensitivity (the cluster is then evicted by
density instead, which already penalises sensitivity). **Zero-sensitivity clusters**: the
gate passes whenever ``s̄`` counts as 0 (it is 0, or below ``gate_floor``) — with
τ_priv > 0 the literal inequality could never hold when every member has ``s = 0``,
though there is nothing to protect; a summary with no sensitivity is trivially "less
sensitive" than any member.

**Worked examples** (τ_priv 0.05, floor 0.3, identifier discount 0.5; tested in
``tests/test_reflection.py``): members 0.8, 0.7, 0.9, each with a phone number the
summary masks: ``s̄ = max(0.4, 0.35, 0.45) = 0.45 ≤ 0.7 − 0.05`` — accepted. Members 0.8
(with a phone) and four ordinary turns at 0: the reference is 0 and ``s̄ = 0.4 ≥ 0.3``
— refused under ``min`` (the summary still carries half the sensitive member's risk),
accepted under ``max`` (0.4 ≤ 0.8 − 0.05). The refused cluster is retried once at half
the target (step 5), refused again, and left to the density stage.

Examples:
    >>> from mars_core.policies import make_policy
    >>> p = make_policy("reflection", tau_util=0.5)
    >>> p.name, p.config.tau_util, p.config.link_similarity
    ('reflection', 0.5, 0.8)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core.errors import ConfigError, MarsError
from mars_core.knowledge.summarise import (
    ExtractiveSummariser,
    Summariser,
    find_identifiers,
    key_terms,
)
from mars_core.model import MemoryNode, MemoryType, Predicate, TaskPayload
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import (
    MAX_DEPTH,
    Candidate,
    EvictStage,
    PolicyView,
    Stage,
    SummariseStage,
    Summary,
)
from mars_core.scoring.density import (
    FEATURE_NAMES,
    DensityBatch,
    DensityConfig,
    SparseAdjacency,
    density_batch,
    payload_urgency,
)
from mars_core.scoring.working_set import WorkingSetCache, score_working_set

__all__ = [
    "Cluster",
    "ReflectionConfig",
    "ReflectionSummaryPolicy",
    "conservative_target",
    "density_candidates",
    "find_clusters",
    "gate_reference",
    "privacy_gate",
    "propose_summaries",
    "summary_sensitivity",
]

log = logging.getLogger(__name__)

_GATE_EPS = 1e-12
_TYPES = tuple(MemoryType)
_GOAL = FEATURE_NAMES.index("goal")
_NOVELTY = FEATURE_NAMES.index("novelty")
Matrix = npt.NDArray[np.float32]


class ReflectionConfig(BaseModel):
    """Every constant of Reflection-Summary, with its source or the reason for the value.

    Seed 000 gives none of them (digest A.5 "Parameter values given in §4.2: none").

    Examples:
        >>> cfg = ReflectionConfig()
        >>> cfg.tau_util, cfg.tau_priv, cfg.min_cluster_size, cfg.max_summaries_per_trigger
        (0.63, 0.05, 3, 2)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    tau_util: float = Field(
        0.63, gt=0.0, le=2.0, allow_inf_nan=False,
        description="Distortion gate D(C⇒c̄) ≤ τ_util (seed 000 §4.3; value ours). 0.63 ≈ "
        "√(2−2·0.8): on average a member is no farther from the summary than from a "
        "neighbour it was linked to at link_similarity 0.8. Digest Z-A6's 0.4 (mean cosine "
        "≥ 0.92) rejects even the centroid of a MiniLM paraphrase cluster (measured D ≈ 0.35 "
        "for the centroid, 0.4–0.6 for extractive summaries; unrelated texts ≈ 1.1).",
    )
    tau_priv: float = Field(
        0.05, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Privacy margin: s̄ ≤ min_i s_i − τ_priv (seed 000 §4.3 'a small margin "
        "τ_priv ≥ 0'; 0.05 as digest Z-A5 suggests). The gate passes when s̄ counts as 0 "
        "(see gate_floor and the module docstring on zero-sensitivity clusters).",
    )
    privacy_reference: Literal["min", "max"] = Field(
        "min",
        description="Which member the summary must be less sensitive than: 'min' (default) "
        "s̄ ≤ min_i s_i − τ_priv, seed 000 §4.3 as written ('guarantees risk reduction'); "
        "'max' s̄ ≤ max_i s_i − τ_priv, §5.4's 'most sensitive constituent', the gate before "
        "issue 33 (DESIGN §6's former choice: it lets a cluster holding one harmless turn be "
        "summarised when the summary drops below its most sensitive member).",
    )
    gate_floor: float = Field(
        0.3, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Sensitivity floor of the privacy gate (ours): a member's or the "
        "summary's sensitivity below it counts as 0 — a weekday or a first name scores "
        "0.05–0.3, and requiring a drop below that would block consolidating ordinary "
        "chit-chat, which is what reflection is for. A cluster whose members are all below "
        "it passes (nothing to protect); a member below it makes the 'min' reference 0, so "
        "the summary must carry nothing at or above the floor.",
    )
    identifier_discount: float = Field(
        0.5, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Share of a member's sensitivity left in the summary when all its direct "
        "identifiers were removed (ours): removing what the surface pass of §4.3 detects "
        "('detectors and templates') halves the risk; the quasi-identifying content stays.",
    )
    link_similarity: float = Field(
        0.8, ge=-1.0, le=1.0, allow_inf_nan=False,
        description="Cosine at or above which two temporally close memories are linked "
        "(digest Z-A9). Measured: MiniLM paraphrases 0.72–0.95, unrelated turns < 0.32; the "
        "hashing embedder links only near-verbatim repeats (≥ 0.8) — conservative by design.",
    )
    temporal_window: int = Field(
        10, ge=1, le=1000,
        description="Temporal linkage: a memory is compared with this many predecessors in "
        "time and linked only within this many steps (digest Z-A9 'within 10 turns'); the "
        "linkage costs O(n·W·d).",
    )
    min_cluster_size: int = Field(
        3, ge=2,
        description="Smallest cluster summarised (digest Z-A9). A pair is left to dedup and "
        "eviction: summarising two memories saves little and adds a summary node.",
    )
    max_cluster_size: int = Field(
        16, ge=2,
        description="Largest cluster summarised at once (ours): bounds the summariser input "
        "(16 turns ≈ 500 prompt tokens) and single-link chaining drift; larger components "
        "are cut into equal consecutive chunks.",
    )
    target_ratio: float = Field(
        0.3, gt=0.0, lt=1.0, allow_inf_nan=False,
        description="Summary length target as a share of the cluster's tokens (ours). "
        "Measured: distortion barely moves between 0.2 and 0.5 on redundant clusters, so the "
        "cheaper 0.3 frees ≥ 70% of the cluster while keeping room for distinct facts.",
    )
    max_summaries_per_trigger: int = Field(
        2, ge=0,
        description="Rate limit: accepted summaries per trigger (seed 000 §4.2 'a capped "
        "budget of summaries', §5.3 'rate-limited per trigger'; 2 as digest Z-A9).",
    )
    max_attempts_per_trigger: int = Field(
        4, ge=0,
        description="Rate limit on summariser calls per trigger, accepted or not (ours): "
        "with an LLM summariser each call is the latency §5.3 caps; 4 = twice the "
        "summaries allowed, so one rejected cluster does not starve the trigger.",
    )
    density_weight: float = Field(
        0.25, ge=0.0, allow_inf_nan=False,
        description="How much a low mean density raises a cluster's rank (seed 000 §4.2: "
        "reflect 'high-redundancy clusters'; density breaks near-ties). Rank = redundancy − "
        "0.25 × min–max scaled density: redundancy dominates.",
    )
    include_summaries: bool = Field(
        True,
        description="Also cluster existing summaries of depth < 2 (seed 003: a summary may "
        "be compacted once more, never twice).",
    )
    conservative_retry: bool = Field(
        True,
        description="Resubmit a cluster whose summary failed once, with a more conservative "
        "target length (seed 000 §5.3); the retry counts as an attempt.",
    )
    retry_factor: float = Field(
        0.5, gt=0.0, lt=1.0, allow_inf_nan=False,
        description="How far the retry's target moves (ours): target·0.5 after a summary "
        "too long, unsafe or failed, target/0.5 (at most the cluster's tokens − 1) after "
        "the distortion gate refused one. Halving is the smallest step that changes an "
        "extractive summary by at least a sentence on the clusters we measured.",
    )

    @model_validator(mode="after")
    def _sizes(self) -> ReflectionConfig:
        if self.max_cluster_size < self.min_cluster_size:
            raise ValueError("max_cluster_size must be >= min_cluster_size")
        return self


@dataclass(frozen=True, slots=True)
class Cluster:
    """A group of temporally linked, similar memories (in creation order).

    Attributes:
        ids: member ids, oldest first.
        redundancy: mean pairwise cosine of the members.
        density: mean MaRS density of the members.
        priority: the ranking key (higher goes first).
    """

    ids: tuple[str, ...]
    redundancy: float
    density: float
    priority: float = 0.0


# --- candidates and clustering ------------------------------------------------------------


def _eligible(view: PolicyView, node: MemoryNode, taken: frozenset[str],
              config: ReflectionConfig) -> bool:
    if node.id in taken or node.pinned or node.depth >= MAX_DEPTH:
        return False
    kind_ok = node.type is MemoryType.EPISODIC or (
        config.include_summaries and node.type is MemoryType.SEMANTIC and node.depth >= 1)
    return kind_ok and not view.task_protected(node.id)


def _components(n: int, src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64]) -> list[list[int]]:
    """Connected components of at least two members (ascending indices), by union-find over
    the linked indices only (a memory without a link cannot form a cluster)."""
    parent = {i: i for i in sorted(set(src.tolist()) | set(dst.tolist()))}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in parent:
        groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _temporal_links(x: Matrix, steps: npt.NDArray[np.int64], config: ReflectionConfig
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    n = x.shape[0]
    src: list[npt.NDArray[np.int64]] = []
    dst: list[npt.NDArray[np.int64]] = []
    for off in range(1, min(config.temporal_window, n - 1) + 1):
        sims = np.einsum("ij,ij->i", x[off:], x[:-off])
        close = (steps[off:] - steps[:-off]) <= config.temporal_window
        idx = np.nonzero((sims >= config.link_similarity) & close)[0].astype(np.int64)
        src.append(idx)
        dst.append(idx + off)
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def _chunks(members: list[int], config: ReflectionConfig) -> list[list[int]]:
    parts = math.ceil(len(members) / config.max_cluster_size)
    return [c.tolist() for c in np.array_split(np.asarray(members), parts)
            if len(c) >= config.min_cluster_size]


def _cluster_features(x: Matrix, goal: Matrix | None
                      ) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Redundancy (mean pairwise cosine), novelty inside the cluster, goal similarity."""
    k = x.shape[0]
    sub = x.astype(np.float64)
    gram = sub @ sub.T
    redundancy = float((gram.sum() - np.trace(gram)) / (k * (k - 1)))
    np.fill_diagonal(gram, -np.inf)
    novelty = 1.0 - np.clip(gram.max(axis=1), 0.0, 1.0)
    goal_sim = (np.zeros(k) if goal is None
                else np.clip(sub @ np.asarray(goal, dtype=np.float64).reshape(-1), 0.0, 1.0))
    return redundancy, novelty, goal_sim


def _density_batch(view: PolicyView, nodes: Sequence[MemoryNode], x: Matrix | None,
                   config: DensityConfig, *, goal: Matrix | None,
                   adjacency: SparseAdjacency | None = None) -> DensityBatch:
    """MaRS density of ``nodes`` (``goal``: the namespace's goal vector)."""
    urgency = [payload_urgency(n.payload, view.now, config.urgency_horizon_hours)
               if isinstance(n.payload, TaskPayload) else 0.0 for n in nodes]
    return density_batch(
        [n.type for n in nodes], [max(0, view.step - n.step) for n in nodes],
        [n.access_count for n in nodes], [n.sensitivity for n in nodes],
        [n.weight for n in nodes], embeddings=x, goal=goal,
        adjacency=adjacency, urgency=urgency, config=config)


def _eligible_slice(view: PolicyView, taken: frozenset[str], cfg: ReflectionConfig
                   ) -> tuple[list[MemoryNode], Matrix]:
    """Eligible memories in creation order (step, then sequence) and their vectors."""
    nodes = sorted((n for n in view.active() if _eligible(view, n, taken, cfg)),
                   key=lambda n: (n.step, n.seq))
    if len(nodes) < cfg.min_cluster_size:
        return nodes, np.zeros((len(nodes), 0), np.float32)
    return nodes, np.asarray(view.vectors([n.id for n in nodes]), dtype=np.float32)


def _protected(view: PolicyView, cache: WorkingSetCache) -> set[str]:
    """Task-protected memories: the live goals' prerequisites without a summary (the only
    memories ``view.task_protected`` can hold besides the goals, which are tasks)."""
    out: set[str] = set()
    for goal_id in cache.space(view.namespace).task_nodes():
        for edge in view.graph.out_edges(goal_id, Predicate.REQUIRES):
            if edge.target not in out and view.task_protected(edge.target):
                out.add(edge.target)
    return out


_Links = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _cached_slice(view: PolicyView, taken: frozenset[str], cfg: ReflectionConfig,
                  cache: WorkingSetCache
                  ) -> tuple[list[MemoryNode], Callable[[list[int]], Matrix], _Links]:
    """The eligible slice from the working-set cache: vectorised filters on the columns,
    cached vectors, task-safety from the goals' prerequisites only, and the temporal
    links the cache keeps per memory (only the memories new since the last trigger are
    compared)."""
    ws = cache.refresh(view)
    kind, depth = ws.column("type"), ws.column("depth")
    ok = (kind == _TYPES.index(MemoryType.EPISODIC))
    if cfg.include_summaries:
        ok |= (kind == _TYPES.index(MemoryType.SEMANTIC)) & (depth >= 1)
    ok &= (depth < MAX_DEPTH) & ~ws.column("pinned").astype(bool)
    order = np.lexsort((ws.column("seq")[ok], ws.column("step")[ok]))
    slots = ws.slots()[ok][order]
    blocked = ws.slots_of(taken | _protected(view, cache))
    if blocked.size:
        slots = slots[~np.isin(slots, blocked)]
    nodes = ws.nodes_of(slots)
    links = ws.temporal_links(cfg.temporal_window, cfg.link_similarity)
    pairs = [(a, b) for a, partners in links.items() for b in partners if a < b]
    def vectors(rows: list[int]) -> Matrix:
        return ws.vectors(slots[np.asarray(rows, np.int64)])

    if not pairs or slots.size == 0:
        return nodes, vectors, (np.zeros(0, np.int64), np.zeros(0, np.int64))
    lookup = np.full(int(slots.max()) + 1, -1, np.int64)
    lookup[slots] = np.arange(slots.size)
    ends = ws.slot_of_seq([p for pair in pairs for p in pair]).reshape(-1, 2)
    pos = np.where((ends >= 0) & (ends < lookup.size), lookup[np.clip(ends, 0, lookup.size - 1)],
                   -1)
    pos = pos[(pos >= 0).all(axis=1)]
    return nodes, vectors, (pos.min(axis=1), pos.max(axis=1))


def find_clusters(view: PolicyView, taken: frozenset[str] = frozenset(), *,
                  config: ReflectionConfig | None = None,
                  density: DensityConfig | None = None,
                  cache: WorkingSetCache | None = None) -> list[Cluster]:
    """Clusters of the eligible slice, best first (see the module docstring, steps 1–3).

    With a :class:`~mars_core.scoring.working_set.WorkingSetCache` (the policies pass
    theirs) the slice is read from its columns and cached vectors; the result is the same.

    Examples:
        >>> from mars_core.views.namespace import NamespaceState
        >>> import random
        >>> from datetime import UTC, datetime
        >>> empty = NamespaceState.of("ns").view(100, datetime(2026, 1, 1, tzinfo=UTC),
        ...                                      random.Random(0))
        >>> find_clusters(empty)
        []
    """
    cfg = config or ReflectionConfig()
    if cache is None:
        nodes, x = _eligible_slice(view, taken, cfg)
        if len(nodes) < cfg.min_cluster_size:
            return []
        src, dst = _temporal_links(x, np.array([n.step for n in nodes], np.int64), cfg)
        vec_of: Callable[[list[int]], Matrix] = x.__getitem__
    else:
        nodes, vec_of, (src, dst) = _cached_slice(view, taken, cfg, cache)
        if len(nodes) < cfg.min_cluster_size:
            return []
    groups = [chunk for comp in _components(len(nodes), src, dst)
              if len(comp) >= cfg.min_cluster_size for chunk in _chunks(comp, cfg)]
    return _rank(_score_groups(view, nodes, vec_of, groups, density or DensityConfig()), cfg)


def _score_groups(view: PolicyView, nodes: Sequence[MemoryNode],
                  vec_of: Callable[[list[int]], Matrix], groups: list[list[int]],
                  dcfg: DensityConfig
                  ) -> list[tuple[tuple[str, ...], float, float, int]]:
    """Per group: ids, redundancy, mean MaRS density, first sequence number.

    One vectorised density pass over all clustered members (recency, frequency, urgency,
    sensitivity, weight); goal similarity and novelty are added per cluster — novelty
    inside the cluster, the working set the summary would replace — so the cost stays
    O(Σ k²·d) instead of the O(n²·d) of novelty over the whole namespace.
    """
    if not groups:
        return []
    flat = [i for g in groups for i in g]
    members = [nodes[i] for i in flat]
    base = _density_batch(view, members, None, dcfg, goal=None).density
    theta = dcfg.theta_table()[[_TYPES.index(n.type) for n in members]]
    goal = view.goal_vector()
    out = []
    start = 0
    for g in groups:
        stop = start + len(g)
        redundancy, novelty, goal_sim = _cluster_features(vec_of(g), goal)
        w = np.array([n.weight for n in members[start:stop]], dtype=np.float64)
        extra = (theta[start:stop, _GOAL] * goal_sim + theta[start:stop, _NOVELTY] * novelty) / w
        dens = base[start:stop] + extra
        out.append((tuple(nodes[i].id for i in g), redundancy, float(dens.mean()),
                    nodes[g[0]].seq))
        start = stop
    return out


def _rank(raw: list[tuple[tuple[str, ...], float, float, int]], cfg: ReflectionConfig
          ) -> list[Cluster]:
    if not raw:
        return []
    dens = np.array([r[2] for r in raw])
    span = float(dens.max() - dens.min())
    scaled = (dens - dens.min()) / span if span > 0 else np.zeros_like(dens)
    ranked = sorted(zip(raw, scaled.tolist(), strict=True),
                    key=lambda p: (-(p[0][1] - cfg.density_weight * p[1]), p[0][3]))
    return [Cluster(r[0], r[1], r[2], r[1] - cfg.density_weight * s) for r, s in ranked]


# --- gates ----------------------------------------------------------------------------------


def summary_sensitivity(member_texts: Sequence[str], member_sensitivity: Sequence[float],
                        summary_text: str, identifier_discount: float = 0.5
                        ) -> tuple[float, int]:
    """``(s̄, members whose identifiers were all removed)`` (see the module docstring).

    Examples:
        >>> summary_sensitivity(["call 555-123-4567", "lunch at noon"], [0.8, 0.1],
        ...                     "call [phone]")
        (0.4, 1)
        >>> summary_sensitivity(["call 555-123-4567"], [0.8], "call 555 123 4567")
        (0.8, 0)
    """
    kept = find_identifiers(summary_text)
    s_bar, masked = 0.0, 0
    for text, s in zip(member_texts, member_sensitivity, strict=True):
        ids = find_identifiers(text)
        residual = s
        if ids and not ids & kept:
            residual = identifier_discount * s
            masked += 1
        s_bar = max(s_bar, residual)
    return s_bar, masked


def _floored(s: float, floor: float) -> float:
    return 0.0 if s < floor else s


def gate_reference(member_sensitivity: Sequence[float], floor: float = 0.0,
                   how: Literal["min", "max"] = "min") -> float:
    """The sensitivity the summary must stay ``τ_priv`` below: the least (``min``, §4.3) or
    the most (``max``, §5.4) sensitive member, each member below ``floor`` counted as 0.

    Examples:
        >>> gate_reference([0.9, 0.7, 0.8]), gate_reference([0.9, 0.1], floor=0.3)
        (0.7, 0.0)
        >>> gate_reference([0.9, 0.1], floor=0.3, how="max")
        0.9
    """
    values = [_floored(s, floor) for s in member_sensitivity]
    return (min(values) if how == "min" else max(values)) if values else 0.0


def privacy_gate(s_bar: float, reference: float, tau_priv: float, floor: float = 0.0) -> bool:
    """``s̄ ≤ reference − τ_priv``, or ``s̄`` counts as 0 (``s̄ = 0``, or below ``floor``).

    ``reference`` is :func:`gate_reference` of the cluster (§4.3: the least sensitive
    member).

    Examples:
        >>> privacy_gate(0.4, 0.8, 0.05), privacy_gate(0.8, 0.8, 0.05), privacy_gate(0, 0, 0.05)
        (True, False, True)
        >>> privacy_gate(0.45, 0.0, 0.05, floor=0.3), privacy_gate(0.25, 0.0, 0.05, floor=0.3)
        (False, True)
    """
    s = _floored(s_bar, floor)
    return s <= 0.0 or s <= reference - tau_priv + _GATE_EPS


def _distortion(x: Matrix, summary_vec: Matrix) -> float:
    diff = x.astype(np.float64) - summary_vec.astype(np.float64).reshape(1, -1)
    return float(np.linalg.norm(diff, axis=1).mean())


# --- the summarise stage ----------------------------------------------------------------------


@dataclass
class _Budget:
    attempts: int
    accepted: int


def _privacy_reason(s_bar: float, sens: Sequence[float], cfg: ReflectionConfig) -> str:
    """Why the privacy gate let a summary through (numbers only, never text)."""
    max_s, ref = max(sens), gate_reference(sens, cfg.gate_floor, cfg.privacy_reference)
    which = "least" if cfg.privacy_reference == "min" else "most"
    if max_s <= 0.0:
        return "no sensitive member"
    if s_bar <= 0.0:
        return "the summary carries no sensitivity"
    if max_s < cfg.gate_floor:
        return (f"most sensitive member {max_s:.2f} < gate floor {cfg.gate_floor:.2f}, "
                f"summary {s_bar:.2f} ≤ it")
    if s_bar < cfg.gate_floor:
        return (f"summary sensitivity {s_bar:.2f} < gate floor {cfg.gate_floor:.2f} "
                f"(the {which} sensitive member counts {ref:.2f})")
    return (f"sensitivity {s_bar:.2f} ≤ {ref:.2f} ({which} sensitive member) − τ_priv "
            f"{cfg.tau_priv:.2f}")


def _rationale(nodes: Sequence[MemoryNode], cluster: Cluster, cfg: ReflectionConfig, *,
               d: float, s_bar: float, tokens: tuple[int, int]) -> str:
    noun = "episodes" if all(n.type is MemoryType.EPISODIC for n in nodes) else "memories"
    steps = [n.step for n in nodes]
    depth = max(n.depth for n in nodes) + 1
    priv = _privacy_reason(s_bar, [n.sensitivity for n in nodes], cfg)
    return (f"consolidated {len(nodes)} redundant {noun} (steps {min(steps)}–{max(steps)}, "
            f"mean similarity {cluster.redundancy:.2f}) into a depth-{depth} summary; "
            f"distortion {d:.2f} ≤ τ_util {cfg.tau_util:.2f}; {priv}; "
            f"{tokens[0]} → {tokens[1]} tokens")


@dataclass(frozen=True, slots=True)
class _Outcome:
    """One summariser call on a cluster: the summary, or why it failed."""

    summary: Summary | None
    failure: str = ""
    reason: str = ""


def _try_cluster(view: PolicyView, cluster: Cluster, cfg: ReflectionConfig,
                 summariser: Summariser, target: int) -> _Outcome:
    nodes = [view.node(i) for i in cluster.ids]
    tokens_in = sum(n.weight for n in nodes)
    texts = [n.content for n in nodes]
    try:
        text = summariser(texts, target_tokens=target)
    except MarsError as exc:
        return _Outcome(None, "error", f"the summariser failed ({type(exc).__name__})")
    if not isinstance(text, str) or not text.strip():
        return _Outcome(None, "empty", "the summariser returned no text")
    tokens_out = view.count_tokens(text)
    if tokens_out >= tokens_in:
        return _Outcome(None, "too_long", f"the summary was not shorter than its cluster "
                                          f"({tokens_out} ≥ {tokens_in} tokens)")
    d = _distortion(view.vectors(list(cluster.ids)), view.embed([text])[0])
    if d > cfg.tau_util:
        return _Outcome(None, "distortion", f"distortion {d:.2f} > τ_util {cfg.tau_util:.2f}")
    sens = [n.sensitivity for n in nodes]
    s_bar, masked = summary_sensitivity(texts, sens, text, cfg.identifier_discount)
    max_s = max(sens)
    ref = gate_reference(sens, cfg.gate_floor, cfg.privacy_reference)
    if not privacy_gate(s_bar, ref, cfg.tau_priv, cfg.gate_floor):
        return _Outcome(None, "privacy", f"sensitivity {s_bar:.2f} > {ref:.2f} "
                                         f"({cfg.privacy_reference} member) − τ_priv "
                                         f"{cfg.tau_priv:.2f}")
    depth = max(n.depth for n in nodes) + 1
    features = {"cluster_size": float(len(nodes)), "mean_similarity": cluster.redundancy,
                "mean_density": cluster.density, "priority": cluster.priority,
                "distortion": d, "tau_util": cfg.tau_util, "sensitivity": s_bar,
                "max_member_sensitivity": max_s, "min_member_sensitivity": min(sens),
                "gate_reference": ref, "tau_priv": cfg.tau_priv,
                "identifiers_removed": float(masked), "depth": float(depth),
                "tokens_in": float(tokens_in), "tokens_out": float(tokens_out),
                "target_tokens": float(target), "retry": 0.0}
    concept = ", ".join(key_terms(texts)) or None
    return _Outcome(Summary(cluster.ids, text, d, s_bar, features,
                            _rationale(nodes, cluster, cfg, d=d, s_bar=s_bar,
                                       tokens=(tokens_in, tokens_out)),
                            concept))


def conservative_target(failure: str, target: int, tokens_in: int,
                        config: ReflectionConfig) -> int | None:
    """The retry's target after ``failure`` (module docstring, step 5), or None when no
    other target is left (the cluster is skipped).

    Examples:
        >>> cfg = ReflectionConfig()
        >>> conservative_target("distortion", 12, 40, cfg)  # the gate refused: keep more
        24
        >>> conservative_target("too_long", 12, 40, cfg)  # too long, unsafe, failed: less
        6
        >>> conservative_target("distortion", 30, 40, cfg), conservative_target("error", 1, 40, cfg)
        (39, None)
    """
    if failure == "distortion":
        longer = min(tokens_in - 1, math.ceil(target / config.retry_factor))
        return longer if longer > target else None
    shorter = max(1, math.floor(target * config.retry_factor))
    return shorter if shorter < target else None


def _summarise(view: PolicyView, cluster: Cluster, cfg: ReflectionConfig,
               summariser: Summariser, left: _Budget) -> Summary | None:
    """One cluster: a summary at the target length, then, when it fails and an attempt is
    left, one retry at a more conservative target (module docstring, step 5)."""
    tokens_in = sum(view.node(i).weight for i in cluster.ids)
    target = max(1, int(cfg.target_ratio * tokens_in))
    left.attempts -= 1
    first = _try_cluster(view, cluster, cfg, summariser, target)
    if first.summary is not None or not cfg.conservative_retry or left.attempts == 0:
        return first.summary
    retry = conservative_target(first.failure, target, tokens_in, cfg)
    if retry is None:
        log.debug("reflection: a cluster of %d skipped (%s)", len(cluster.ids), first.failure)
        return None
    left.attempts -= 1
    second = _try_cluster(view, cluster, cfg, summariser, retry)
    if second.summary is None:
        log.debug("reflection: a cluster of %d skipped after a retry (%s, then %s)",
                  len(cluster.ids), first.failure, second.failure)
        return None
    done = second.summary
    way = "longer" if retry > target else "shorter"
    return replace(done, features={**done.features, "retry": 1.0,
                                   "first_target_tokens": float(target)},
                   rationale=f"{done.rationale}; resubmitted at a more conservative target "
                             f"({way}: {retry} tokens instead of {target}) after the first "
                             f"summary failed: {first.reason}")


def propose_summaries(view: PolicyView, need: int, taken: frozenset[str], *,
                      config: ReflectionConfig | None = None,
                      summariser: Summariser | None = None,
                      density: DensityConfig | None = None,
                      cache: WorkingSetCache | None = None) -> Iterator[Summary]:
    """Yield gated summaries of the best clusters, lazily, within the rate limits.

    ``need`` is not used to size summaries: the template stops consuming this generator
    as soon as ``need`` tokens are freed, so no further cluster is summarised.
    """
    cfg = config or ReflectionConfig()
    summ = summariser or ExtractiveSummariser(view.count_tokens)
    left = _Budget(cfg.max_attempts_per_trigger, cfg.max_summaries_per_trigger)
    if need <= 0 or left.attempts == 0 or left.accepted == 0:
        return
    for cluster in find_clusters(view, taken, config=cfg, density=density, cache=cache):
        if left.attempts == 0 or left.accepted == 0:
            return
        summary = _summarise(view, cluster, cfg, summ, left)
        if summary is not None:
            left.accepted -= 1
            yield summary


# --- the eviction stage -----------------------------------------------------------------------


def density_candidates(view: PolicyView, config: DensityConfig | None = None, *,
                       cache: WorkingSetCache | None = None) -> Iterator[Candidate]:
    """Active memories by increasing MaRS density (eq 5/7), with ψ as audit features.

    ψ uses the namespace's goal vector, personalised PageRank over isA/friendOf edges and
    novelty; ties go to the older memory. Without ``cache`` everything is computed from
    the view, novelty exactly over all pairs (O(n²·d)); with one (what the policies
    pass), from the cached working set with the bounded novelty of
    :mod:`mars_core.scoring.working_set` (O(n·d) per trigger).
    """
    cfg = config or DensityConfig()
    if cache is not None:
        sc = score_working_set(view, cache, cfg)
        nodes, order = sc.nodes, sc.order.tolist()
        features, utility, density = sc.features, sc.utility, sc.density
    else:
        nodes = sorted(view.active(), key=lambda n: n.seq)
        ids = [n.id for n in nodes]
        x = np.asarray(view.vectors(ids), dtype=np.float32)
        adjacency = SparseAdjacency.from_edges(ids, view.graph.edges(),
                                               cfg.centrality_predicates)
        batch = _density_batch(view, nodes, x, cfg, goal=view.goal_vector(),
                               adjacency=adjacency)
        order = np.argsort(batch.density, kind="stable").tolist()
        features, utility, density = batch.features, batch.utility, batch.density
    for i in order:
        node = nodes[i]
        feats = dict(zip(FEATURE_NAMES, features[i].tolist(), strict=True))
        dens, util = float(density[i]), float(utility[i])
        feats.update(utility=util, density=dens, sensitivity=node.sensitivity,
                     weight=float(node.weight))
        yield Candidate(node.id, dens, feats,
                        f"low utility density {dens:.4f} = (Û {util:.3f} − λ_priv·s "
                        f"{cfg.lambda_priv * node.sensitivity:.3f}) / {node.weight} tokens")


# --- the policy -----------------------------------------------------------------------------


def _build_config(config: ReflectionConfig | Mapping[str, Any] | None,
                  overrides: Mapping[str, Any]) -> ReflectionConfig:
    base = config.model_dump() if isinstance(config, ReflectionConfig) else dict(config or {})
    try:
        return ReflectionConfig.model_validate({**base, **overrides})
    except pydantic.ValidationError as exc:
        raise ConfigError(f"invalid reflection configuration: {exc}") from exc


@register("reflection")
class ReflectionSummaryPolicy(Policy):
    """Reflection-Summary, then eviction by MaRS density (always restores the budget).

    Args:
        config: a :class:`ReflectionConfig` (or a mapping of its fields).
        summariser: any :class:`~mars_core.knowledge.summarise.Summariser` (default: the
            deterministic :class:`~mars_core.knowledge.summarise.ExtractiveSummariser` counting
            tokens with the store's counter).
        density: the MaRS density constants of the eviction stage and of cluster ranking.
        **overrides: :class:`ReflectionConfig` fields, e.g. ``tau_util=0.5`` (this is how
            ``StoreConfig.policy_params`` reaches the policy).

    Raises:
        ConfigError: an unknown or invalid parameter.

    Examples:
        >>> from mars_core.knowledge.summarise import FakeSummariser
        >>> p = ReflectionSummaryPolicy(summariser=FakeSummariser("gist"), tau_priv=0.1)
        >>> p.params()["tau_priv"], p.params()["summariser"]
        (0.1, 'fake')
    """

    summarises: ClassVar[bool] = True

    def __init__(self, config: ReflectionConfig | Mapping[str, Any] | None = None, *,
                 summariser: Summariser | None = None, density: DensityConfig | None = None,
                 **overrides: Any) -> None:
        self.config = _build_config(config, overrides)
        self.summariser = summariser
        self.density = density or DensityConfig()
        self.working_set = WorkingSetCache(self.density.novelty_window)

    def use_summariser(self, summariser: Summariser) -> None:
        """The store's summariser writes this policy's summaries (unless it was built
        with one)."""
        if self.summariser is None:
            self.summariser = summariser

    def params(self) -> dict[str, Any]:
        """The reflection constants and the summariser's name (for the audit)."""
        name = getattr(self.summariser, "name", type(self.summariser).__name__)
        return {**self.config.model_dump(mode="json"),
                "summariser": ExtractiveSummariser.name if self.summariser is None else name}

    # --- hooks: the working-set cache -----------------------------------------------------

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Replay the active memories into a fresh working-set cache."""
        self.working_set.clear()
        super().rebuild(nodes)

    def on_insert(self, node: MemoryNode) -> None:
        self.working_set.on_insert(node)

    def on_access(self, node: MemoryNode) -> None:
        super().on_access(node)
        self.working_set.on_access(node)

    def on_update(self, node: MemoryNode) -> None:
        self.working_set.on_update(node)

    def on_remove(self, node: MemoryNode) -> None:
        self.working_set.on_remove(node)

    def _propose(self, view: PolicyView, need: int, taken: frozenset[str]
                 ) -> Iterator[Summary]:
        return propose_summaries(view, need, taken, config=self.config,
                                 summariser=self.summariser, density=self.density,
                                 cache=self.working_set)

    def _density(self, view: PolicyView) -> Iterator[Candidate]:
        return density_candidates(view, self.density, cache=self.working_set)

    def _stages(self) -> Sequence[Stage]:
        return (SummariseStage("reflection", self._propose),
                EvictStage("density", self._density, densities=True))
