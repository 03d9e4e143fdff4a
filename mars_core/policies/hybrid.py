"""Hybrid: temporal skim → reflection → importance → privacy (seed 000 §3.3.4, Fig. 2, §4.2).

Seed 000 composes the policies into "a fixed, terminating sequence" (§4.2); DESIGN §6
fixes the order of the prose (the formula ``f_temporal ∘ f_reflect ∘ f_importance ∘
f_privacy`` would literally run privacy first, digest Z-A4). Each stage is a stage of
the :class:`~mars_core.policies.base.Policy` template, so every eviction is a leaf
removal or a strictly cheaper summary, the weight strictly decreases and the walk ends
with the budget restored (§3.3.4's termination argument, enforced by the template):

1. **temporal skim** (``hybrid/temporal``) removes *clearly stale* leaves — a memory
   that was **never accessed** since it was written **and** whose recency
   ``e^{-λ_age(t)·Δn}`` (the density's own per-type rate, Δn in interaction steps) is
   below ``stale_recency`` = 0.05 (digest Z-A4's threshold; ≈ 86 steps for an episode,
   ≈ 1,200 for a semantic fact). Stalest first. It never touches a memory that was ever
   retrieved, a pinned one, an active goal or its prerequisite, or a non-leaf: Fig. 2's
   "remove old, low-importance" with "low importance" made observable (no use at all).
2. **reflection** (``hybrid/reflection``) consolidates redundant episodic clusters with
   :func:`~mars_core.policies.reflection.propose_summaries` "within a capped budget of
   summaries" (§4.2) — the rate limits of its :class:`ReflectionConfig`
   (``max_summaries_per_trigger`` = 2 accepted, ``max_attempts_per_trigger`` = 4
   summariser calls; §5.3 "rate-limited per trigger to cap worst-case latency").
3. **importance** (``hybrid/importance``) ranks every active memory by the full MaRS
   density of eq 7, ``(θ^(t)·ψ − λ_priv·s)/w`` (DESIGN §6), computed in one vectorised
   :func:`~mars_core.scoring.density.density_batch`: recency, normalised access
   frequency, cosine to the namespace goal (``view.goal_vector()``), personalised
   PageRank over the isA ∪ friendOf subgraph, novelty within the working set and
   deadline urgency of tasks. Lowest density first (ties: oldest first). Novelty is
   measured against the bounded working set of :mod:`mars_core.scoring.working_set`
   (the ``novelty_window`` most recent memories; exact while n ≤ W).
4. **privacy** (``hybrid/privacy``): §4.2 runs it "if the store is still over budget or
   near ties remain" and §5.3 calls it a tie-break at the boundary. Where the density
   order reaches a *near tie* — candidates within ``tie_band`` (5%, digest Z-A7) of the
   lowest density of the band — and the band holds a sensitive memory
   (``s ≥ privacy_sensitivity``), the importance stage stops and this stage takes over:
   the band is ordered by §3.3.3's ``removal_priority = s·age·(1 − imp)`` (Priority-Decay
   importance, age in steps), highest first, then the density order resumes (further
   sensitive bands are broken the same way; every eviction after the first such tie is
   labelled ``hybrid/privacy`` and its reason says whether the tie-break or the density
   order decided). This is the deterministic mode. With differential privacy on
   (``StoreConfig.dp``), the template's exponential-mechanism tie-break re-chooses the
   boundary of the importance stage instead (seed 000 §4.3), drawing from the operating
   system's generator, never the store's seed (DESIGN §3).

Rationales name the stage and its evidence, e.g. ``evicted by hybrid/importance:
density 0.0121 = (Û 0.210 − λ_priv·s 0.000)/17 tokens, lowest of 4,812``.

Cost of one trigger (n active memories, d embedding dimensions, E edges of the semantic
and social memories, W the novelty window): the skim is O(k + types) on per-type lists of
never-accessed memories; reflection is whatever ``propose_summaries`` costs on the cached
working set (vectorised eligibility, temporal links computed once per memory, union–find
over the linked memories only, plus the summariser calls); the density reads the
:class:`~mars_core.scoring.working_set.WorkingSetCache` — columns and vectors kept by the
hooks, novelty against the W most recent memories updated incrementally, O(n·d) per
trigger after one write instead of the O(n²·d) of all pairs — then O(E·iterations) for
PageRank and O(n log n) to sort; the tie-break is O(band). Measured figures are in
``docs/benchmarks/policies.md``.

Examples:
    >>> from mars_core.policies import make_policy
    >>> p = make_policy("hybrid", stale_recency=0.1)
    >>> p.name, p.config.stale_recency, [s.label for s in p._stages()]
    ('hybrid', 0.1, ['hybrid/temporal', 'hybrid/reflection', 'hybrid/importance', \
'hybrid/privacy'])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pydantic
from pydantic import BaseModel, ConfigDict, Field

from mars_core.errors import ConfigError
from mars_core.knowledge.summarise import ExtractiveSummariser, Summariser
from mars_core.model import MemoryNode, MemoryType
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import (
    Candidate,
    EvictStage,
    PolicyView,
    Stage,
    SummariseStage,
    Summary,
)
from mars_core.policies.reflection import ReflectionConfig, propose_summaries
from mars_core.scoring.density import FEATURE_NAMES, DensityConfig, importance
from mars_core.scoring.working_set import WorkingSetCache, score_working_set

__all__ = ["HybridConfig", "HybridPolicy", "TieCandidate"]

_EPS = 1e-12


class HybridConfig(BaseModel):
    """Every constant of the Hybrid policy; seed 000 gives none (digest A.5, Z-A4, Z-A7, Z-A9).

    Examples:
        >>> HybridConfig().stale_recency, HybridConfig().reflection.max_summaries_per_trigger
        (0.05, 2)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    density: DensityConfig = Field(
        default_factory=DensityConfig,
        description="θ, λ_age, λ_priv and the feature constants of eq 7 (the importance "
        "pass uses the full density, DESIGN §6); λ_age also sets staleness.",
    )
    stale_recency: float = Field(
        0.05, ge=0.0, le=1.0,
        description="A never-accessed leaf is clearly stale when its recency "
        "e^{-λ_age(t)·Δn} is below this (digest Z-A4 suggests 0.05: about 4.3 half-lives; "
        "≈ 86 steps for an episode with λ = 0.035). 0 disables the skim.",
    )
    reflection: ReflectionConfig = Field(
        default_factory=ReflectionConfig,
        description="Clustering, gates and rate limits of the reflection stage (§4.2 'a "
        "capped budget of summaries': max_summaries_per_trigger = 2 accepted, "
        "max_attempts_per_trigger = 4 summariser calls; max_summaries_per_trigger = 0 "
        "disables the stage). The defaults are the reflection policy's, documented there.",
    )
    tie_band: float = Field(
        0.05, ge=0.0, le=1.0,
        description="Relative tolerance of a near tie: d ≤ d_min + tie_band·max(|d_min|, "
        "1e-12) (digest Z-A7 suggests 5%). 0 breaks only exact ties.",
    )
    privacy_sensitivity: float = Field(
        0.5, ge=0.0, le=1.0,
        description="A near tie is decided by the privacy pass when one of its members has "
        "sensitivity at least this (ours: more sensitive than not; the private-mode "
        "threshold σ_t = 0.7 of Z-A23 is for retrieval, a stricter purpose).",
    )


@dataclass(frozen=True, slots=True)
class TieCandidate:
    """One member of a near tie, as the privacy tie-break sees it.

    Attributes:
        node_id: the memory.
        density: its eq-7 density.
        sensitivity: s_i.
        removal_priority: §3.3.3's ``s·age·(1 − imp)`` (age in steps).
        importance: Priority-Decay ``imp`` in [0, 1].
        age_steps: interaction steps since it was written.
        seq: store-wide creation order (the last tie-break).
    """

    node_id: str
    density: float
    sensitivity: float
    removal_priority: float
    importance: float
    age_steps: float
    seq: int


@dataclass
class _Scores:
    """The density of every active memory of one trigger, sorted ascending."""

    nodes: list[MemoryNode]
    features: np.ndarray[Any, np.dtype[np.float64]]
    utility: np.ndarray[Any, np.dtype[np.float64]]
    density: np.ndarray[Any, np.dtype[np.float64]]
    age: np.ndarray[Any, np.dtype[np.float64]]
    order: list[int]


@register("hybrid")
class HybridPolicy(Policy):
    """The four-stage Hybrid policy (module docstring: stages, defaults, cost).

    Args:
        config: the constants (default :class:`HybridConfig`).
        summariser: writes reflection summaries (default: the deterministic
            :class:`~mars_core.knowledge.summarise.ExtractiveSummariser` counting tokens with the
            store's counter).
        **params: overrides of ``config`` fields (what ``StoreConfig.policy_params``
            passes), e.g. ``stale_recency=0.1`` or ``density={"lambda_priv": 0.5}``.

    Raises:
        ConfigError: bad parameters.

    Examples:
        >>> HybridPolicy(reflection={"max_summaries_per_trigger": 0}).params()["max_summaries"]
        0
    """

    summarises: ClassVar[bool] = True

    def __init__(self, config: HybridConfig | None = None, *,
                 summariser: Summariser | None = None, **params: Any) -> None:
        base = config or HybridConfig()
        try:
            self.config = HybridConfig.model_validate({**dict(base), **params})
        except pydantic.ValidationError as exc:
            raise ConfigError(f"bad parameters for policy 'hybrid': {exc}") from None
        self.summariser = summariser
        self._never_used: dict[tuple[str, MemoryType], dict[str, MemoryNode]] = {}
        self.working_set = WorkingSetCache(self.config.density.novelty_window)

    def use_summariser(self, summariser: Summariser) -> None:
        """The store's summariser writes the reflection stage's summaries (unless the
        policy was built with one)."""
        if self.summariser is None:
            self.summariser = summariser

    def params(self) -> dict[str, Any]:
        """The stage constants recorded with every decision."""
        cfg = self.config
        name = (ExtractiveSummariser.name if self.summariser is None
                else getattr(self.summariser, "name", type(self.summariser).__name__))
        return {"stale_recency": cfg.stale_recency,
                "max_summaries": cfg.reflection.max_summaries_per_trigger,
                "tie_band": cfg.tie_band, "privacy_sensitivity": cfg.privacy_sensitivity,
                "lambda_priv": cfg.density.lambda_priv, "summariser": name}

    def _stages(self) -> Sequence[Stage]:
        ranking = _DensityPass(self)
        return (EvictStage("hybrid/temporal", self._stale),
                SummariseStage("hybrid/reflection", self._reflect),
                EvictStage("hybrid/importance", ranking.importance, densities=True),
                EvictStage("hybrid/privacy", ranking.privacy))

    # --- stage 1: temporal skim ------------------------------------------------------------

    # The never-accessed, unpinned active memories of each namespace and type, oldest
    # first: within one type recency falls with age alone, so the stalest of all is the
    # stalest head of these lists, and a skim costs O(k + types) instead of a scan.
    def _fresh(self, node: MemoryNode) -> dict[str, MemoryNode]:
        return self._never_used.setdefault((node.namespace, node.type), {})

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Replay the active memories into a fresh skim index and working set."""
        self._never_used.clear()
        self.working_set.clear()
        super().rebuild(nodes)

    def on_insert(self, node: MemoryNode) -> None:
        self.working_set.on_insert(node)
        if node.access_count or node.pinned:
            return
        space = self._fresh(node)
        last = next(reversed(space.values()), None)
        space[node.id] = node
        if last is not None and last.seq > node.seq:  # a restore: keep creation order
            ordered = sorted(space.values(), key=lambda n: n.seq)
            space.clear()
            space.update((n.id, n) for n in ordered)

    def on_access(self, node: MemoryNode) -> None:
        super().on_access(node)
        self.working_set.on_access(node)
        self._fresh(node).pop(node.id, None)

    def on_update(self, node: MemoryNode) -> None:
        self.working_set.on_update(node)
        if node.pinned:
            self._fresh(node).pop(node.id, None)

    def on_remove(self, node: MemoryNode) -> None:
        self.working_set.on_remove(node)
        self._fresh(node).pop(node.id, None)

    def _stale(self, view: PolicyView) -> Iterator[Candidate]:
        """Never-accessed leaves whose recency fell below ``stale_recency``, stalest first
        (a merge of the per-type lists, O(k) per trigger)."""
        threshold = self.config.stale_recency
        lam = self.config.density.lambda_age
        # no copy: the lists change only in the hooks, which run after the trigger commits
        heads = {t: iter(space.values()) for (ns, t), space in sorted(
            self._never_used.items(), key=lambda kv: kv[0][1].value) if ns == view.namespace}
        current: dict[MemoryType, MemoryNode] = {}
        for t, it in heads.items():
            first = next(it, None)
            if first is not None:
                current[t] = first
        while current:
            def rec_of(n: MemoryNode) -> float:
                return math.exp(-lam[n.type] * float(max(0, view.step - n.step)))
            t, node = min(current.items(), key=lambda kv: (rec_of(kv[1]), kv[1].seq))
            rec = rec_of(node)
            if rec >= threshold:
                return
            nxt = next(heads[t], None)
            if nxt is None:
                del current[t]
            else:
                current[t] = nxt
            if not node.is_active or view.node(node.id).access_count or \
                    view.task_protected(node.id) or not view.is_leaf(node.id):
                continue
            age = float(max(0, view.step - node.step))
            yield Candidate(node.id, rec,
                            {"recency": rec, "age_steps": age, "access_count": 0.0},
                            f"clearly stale: never accessed, recency {rec:.3f} < "
                            f"{threshold:g} after {age:.0f} steps ({node.type.value})")

    # --- stage 2: reflection ---------------------------------------------------------------

    def _reflect(self, view: PolicyView, need: int, taken: frozenset[str]) -> Iterator[Summary]:
        """Gated summaries of redundant episodic clusters, within the rate limits."""
        return propose_summaries(view, need, taken, config=self.config.reflection,
                                 summariser=self.summariser, density=self.config.density,
                                 cache=self.working_set)

    # --- stage 4 hook ----------------------------------------------------------------------

    def _privacy_tie_break(self, view: PolicyView, band: Sequence[TieCandidate]
                           ) -> list[TieCandidate]:
        """Order a near tie holding a sensitive memory; the first is evicted first.

        Deterministic: ``removal_priority`` highest first, then lowest density, then
        oldest. (The randomised mode is the template's DP tie-break, not this hook:
        DP randomness must not be replayable from the store's seed.)
        """
        return sorted(band, key=lambda c: (-c.removal_priority, c.density, c.seq))


class _DensityPass:
    """Stages 3 and 4 of one trigger: one density computation, one shared cursor."""

    def __init__(self, policy: HybridPolicy) -> None:
        self.policy = policy
        self.scores: _Scores | None = None
        self.pos = 0

    # --- the two stages --------------------------------------------------------------------

    def importance(self, view: PolicyView) -> Iterator[Candidate]:
        """Lowest density first, until a near tie holding a sensitive memory."""
        sc = self._scores(view)
        while self.pos < len(sc.order):
            band = self._band(sc)
            if self._sensitive_tie(sc, band):
                return
            self.pos += 1
            yield self._density_candidate(sc, band[0], "")

    def privacy(self, view: PolicyView) -> Iterator[Candidate]:
        """From the first sensitive near tie on: ties by removal priority, else density."""
        sc = self._scores(view)
        while self.pos < len(sc.order):
            band = self._band(sc)
            if not self._sensitive_tie(sc, band):
                self.pos += 1
                yield self._density_candidate(
                    sc, band[0], " (density order, after a privacy tie-break)")
                continue
            self.pos += len(band)
            ordered = self.policy._privacy_tie_break(view, [self._tie(sc, i) for i in band])
            for rank, tie in enumerate(ordered, 1):
                yield self._tie_candidate(sc, tie, rank, band)

    # --- scoring ---------------------------------------------------------------------------

    def _scores(self, view: PolicyView) -> _Scores:
        if self.scores is None:
            sc = score_working_set(view, self.policy.working_set, self.policy.config.density)
            self.scores = _Scores(sc.nodes, sc.features, sc.utility, sc.density, sc.age,
                                  sc.order.tolist())
        return self.scores

    def _band(self, sc: _Scores) -> list[int]:
        """Indices (into ``sc.nodes``) of the near tie starting at the cursor."""
        first = sc.order[self.pos]
        d0 = float(sc.density[first])
        edge = d0 + self.policy.config.tie_band * max(abs(d0), _EPS)
        band = [first]
        for k in range(self.pos + 1, len(sc.order)):
            idx = sc.order[k]
            if float(sc.density[idx]) > edge:
                break
            band.append(idx)
        return band

    def _sensitive_tie(self, sc: _Scores, band: Sequence[int]) -> bool:
        limit = self.policy.config.privacy_sensitivity
        return len(band) > 1 and any(sc.nodes[i].sensitivity >= limit for i in band)

    def _tie(self, sc: _Scores, i: int) -> TieCandidate:
        node = sc.nodes[i]
        age = float(sc.age[i])
        imp = min(1.0, max(0.0, importance(node.type, age, node.access_count,
                                           self.policy.config.density)))
        return TieCandidate(node.id, float(sc.density[i]), node.sensitivity,
                            node.sensitivity * age * (1.0 - imp), imp, age, node.seq)

    # --- candidates ------------------------------------------------------------------------

    def _features(self, sc: _Scores, i: int) -> dict[str, float]:
        node = sc.nodes[i]
        feats = {name: round(float(v), 6) for name, v in zip(FEATURE_NAMES, sc.features[i],
                                                              strict=True)}
        feats.update(utility=round(float(sc.utility[i]), 6), density=float(sc.density[i]),
                     sensitivity=node.sensitivity, weight=float(node.weight),
                     age_steps=float(sc.age[i]))
        return feats

    def _density_candidate(self, sc: _Scores, i: int, tail: str) -> Candidate:
        node = sc.nodes[i]
        rank = self.pos  # the cursor has just passed this memory
        penalty = self.policy.config.density.lambda_priv * node.sensitivity
        reason = (f"density {sc.density[i]:.4g} = (Û {sc.utility[i]:.3f} − λ_priv·s "
                  f"{penalty:.3f})/{node.weight} tokens, {_ordinal(rank, 'lowest')} of "
                  f"{len(sc.nodes):,}")
        if node.sensitivity > 0:
            reason += f"; sensitivity {node.sensitivity:.2f}"
        return Candidate(node.id, float(sc.density[i]), self._features(sc, i), reason + tail)

    def _tie_candidate(self, sc: _Scores, tie: TieCandidate, rank: int,
                       band: Sequence[int]) -> Candidate:
        i = next(k for k in band if sc.nodes[k].id == tie.node_id)
        feats = self._features(sc, i)
        feats.update(removal_priority=tie.removal_priority, importance=tie.importance,
                     tie_size=float(len(band)))
        d0 = float(sc.density[band[0]])
        reason = (f"near tie of {len(band)} within {self.policy.config.tie_band:.0%} of "
                  f"density {d0:.4g}: removal priority s·age·(1−imp) = "
                  f"{tie.removal_priority:.3g} (sensitivity {tie.sensitivity:.2f}, age "
                  f"{tie.age_steps:.0f} steps, imp {tie.importance:.2f}), "
                  f"{_ordinal(rank, 'highest')} in the tie")
        return Candidate(tie.node_id, tie.density, feats, reason)


def _ordinal(n: int, word: str) -> str:
    """``(1, 'lowest')`` → 'lowest', ``(2, 'lowest')`` → '2nd lowest', 13 → '13th ...'."""
    if n == 1:
        return word
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix} {word}"
