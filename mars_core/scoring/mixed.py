"""OSL-MR Mixed-Score with the stable/temporary freshness multiplier (seed 001 §3.3, A.2).

The score of memory ``i`` at step ``t`` is (digest Z-B2 reconciliation of §3.3 and A.2)

    MS_i = fresh_i · (w_r·φ_rec + w_q·φ_q + w_a·φ_a + w_e·φ_e + w_s·φ_s + w_u·φ_u)
           - w_c · size_i / B

with the A.2 default prior ``w_r 0.35, w_q 0.40, w_a 0.15, w_e 0.05, w_s 0.03,
w_u 0.02`` (the six sum to 1.00) and the cost penalty ``w_c 0.05`` of §3.3
(``- w_c·s_{t,i}/B_t``, ``s`` the size in tokens, ``B`` the budget). Freshness multiplies
the relevance only: multiplying the cost term as well would make a stale memory
*cheaper*, the opposite of the intent.

**Freshness** (A.2): ``κ(Δt) = 1 + log(1 + Δt/τ)``, ``γ_i = γ_base(type_i)·κ(Δt_i)``,
``fresh = exp(-γ_i·Δt_i)`` with τ = 10, γ_base(stable) = 0.002, γ_base(temporary) = 0.15,
and an item is stale when ``fresh < θ_stale = 0.5``. Δt counts interaction steps since
the item was stored. The seed does not state the log base. We use the **natural log**
(the usual meaning of ``log``), which gives 0.756407 for a stable memory at Δt = 50;
the paper says "≈ 0.82", which neither base gives (log10: 0.837097, log2: 0.699).
:attr:`FreshnessConfig.log_base` switches the base (DESIGN §6, digest Z-B1).

**Signals** (A.2 lists them without definitions; digest Z-B3): the recency ratio
``(t_store + 1)/(t + 1)`` (given by the seed), question overlap, answer overlap, entity
overlap, session locality and speaker bonus, each in [0, 1]. :func:`question_overlap`,
:func:`jaccard` and :func:`session_locality` are plain set/number helpers; the caller
tokenises.

**Answer overlap is not online-observable.** The answer text is offline-available
supervision (OAS, seed 001 §3.1, §4.1): using it when deciding what to keep would leak
the future. The weight ``w_a`` is kept so the formula and its default prior stay the
seed's, but the signal defaults to 0 at decision time. A deployment may pass the overlap
with the agent's *previous* response as an online-safe proxy.

**Labelling** (A.2): without LLM labels, an utterance is ``temporary`` when it has a
planning/scheduling cue, is a short greeting (greeting cue and < 100 characters) or has a
present-state cue; otherwise ``stable`` (:func:`label_durability`). The seed gives the
cue lists only as "e.g."; ours are in :data:`PLANNING_CUES`, :data:`GREETING_CUES` and
:data:`STATE_CUES`.

Examples:
    >>> round(freshness(50, Durability.STABLE), 6), f"{freshness(50, 'temporary'):.2e}"
    (0.756407, '8.07e-10')
    >>> sig = MixedSignals(recency=1.0, question=0.5)
    >>> round(mixed_score(sig, delta_t=0, durability="stable", size=10, budget=100), 4)
    0.545
    >>> label_durability("I will go hiking tomorrow"), label_durability("My sister is a nurse")
    (<Durability.TEMPORARY: 'temporary'>, <Durability.STABLE: 'stable'>)
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mars_core import decay
from mars_core.decay import FloatArray
from mars_core.errors import ValidationError

__all__ = [
    "GREETING_CUES",
    "LEGACY_DURABILITY",
    "PLANNING_CUES",
    "SIGNAL_NAMES",
    "STATE_CUES",
    "Durability",
    "FreshnessConfig",
    "MixedScoreConfig",
    "MixedSignals",
    "MixedWeights",
    "first_stale_step",
    "freshness",
    "freshness_batch",
    "is_stale",
    "jaccard",
    "kappa",
    "label_durability",
    "mixed_score",
    "mixed_score_batch",
    "question_overlap",
    "recency_ratio",
    "relevance",
    "session_locality",
    "stale_risk",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)

SIGNAL_NAMES: tuple[str, ...] = ("recency", "question", "answer", "entity", "session", "speaker")
"""Column order of the relevance signals φ in :func:`mixed_score_batch`."""


class Durability(StrEnum):
    """OSL-MR's binary memory type (seed 001 §3.3, A.2), fixed at creation."""

    STABLE = "stable"
    TEMPORARY = "temporary"


LEGACY_DURABILITY: dict[str, Durability] = {
    "stable_fact": Durability.STABLE,
    "profile_trait": Durability.STABLE,
    "relationship_state": Durability.STABLE,
    "opinion_preference": Durability.STABLE,
    "other": Durability.STABLE,
    "activity_event": Durability.TEMPORARY,
    "temporary_plan": Durability.TEMPORARY,
    "ephemeral": Durability.TEMPORARY,
}
"""The seed's legacy 8-class schema mapped to the binary taxonomy (A.2 names the classes
but not the mapping; ours follows the B.1 label definitions — digest Z-B4)."""

PLANNING_CUES: tuple[str, ...] = (
    "plan", "plans", "planning", "planned", "tomorrow", "tonight", "will", "going to",
    "next week", "next month", "later", "soon", "schedule", "scheduled",
)
"""Planning/scheduling cues (A.2 gives "e.g., plan, tomorrow, will, tonight"; rest ours)."""

GREETING_CUES: tuple[str, ...] = (
    "hi", "hello", "hey", "good morning", "good afternoon", "good evening", "good night",
    "bye", "goodbye", "see you",
)
"""Greeting cues; a greeting labels ``temporary`` only under 100 characters (A.2)."""

STATE_CUES: tuple[str, ...] = (
    "just", "currently", "right now", "at the moment", "today", "these days",
)
"""Present-state cues (A.2 gives "e.g., just, currently"; rest ours)."""

GREETING_MAX_CHARS = 100
"""A greeting is "short" below this many characters (seed 001 A.2)."""


def _cue_pattern(cues: Collection[str]) -> re.Pattern[str]:
    escaped = (re.escape(c).replace(r"\ ", r"\s+") for c in cues)
    alternatives = sorted(escaped, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


_PLANNING = _cue_pattern(PLANNING_CUES)
_GREETING = _cue_pattern(GREETING_CUES)
_STATE = _cue_pattern(STATE_CUES)


# --- configuration -------------------------------------------------------------------------


class FreshnessConfig(BaseModel):
    """Constants of the OSL-MR freshness proxy (seed 001 A.2).

    Examples:
        >>> FreshnessConfig().gamma_temporary / FreshnessConfig().gamma_stable   # "75x"
        75.0
    """

    model_config = _STRICT
    tau: float = Field(10.0, gt=0.0, allow_inf_nan=False,
                       description="Time scale τ of κ(Δt) = 1 + log(1 + Δt/τ) (A.2: 10).")
    gamma_stable: float = Field(0.002, ge=0.0, allow_inf_nan=False,
                                description="Base decay rate γ_base of stable items (A.2).")
    gamma_temporary: float = Field(0.15, ge=0.0, allow_inf_nan=False,
                                   description="Base decay rate γ_base of temporary items (A.2).")
    theta_stale: float = Field(0.5, ge=0.0, le=1.0,
                               description="Stale when fresh < θ_stale (A.2: 0.5).")
    log_base: float = Field(
        math.e, gt=0.0, allow_inf_nan=False,
        description="Base of the log in κ. The seed leaves it unstated; natural log (default) "
        "gives fresh = 0.756 for a stable item at Δt = 50, base 10 gives 0.837; the paper's "
        "'≈0.82' matches neither (DESIGN §6).",
    )

    @field_validator("log_base")
    @classmethod
    def _not_one(cls, v: float) -> float:
        if v == 1.0:
            raise ValueError("log_base must not be 1")
        return v

    def base_rate(self, durability: Durability | str) -> float:
        """γ_base of a durability class."""
        if Durability(durability) is Durability.STABLE:
            return self.gamma_stable
        return self.gamma_temporary


class MixedWeights(BaseModel):
    """Mixed-Score weights: seed 001 A.2's default prior.

    Examples:
        >>> w = MixedWeights()
        >>> round(w.recency + w.question + w.answer + w.entity + w.session + w.speaker, 10)
        1.0
    """

    model_config = _STRICT
    recency: float = Field(0.35, ge=0.0, allow_inf_nan=False, description="w_r, recency ratio.")
    question: float = Field(0.40, ge=0.0, allow_inf_nan=False,
                            description="w_q, overlap of the memory with the question/query.")
    answer: float = Field(
        0.15, ge=0.0, allow_inf_nan=False,
        description="w_a, answer overlap. Kept for fidelity; its signal is offline-only (OAS) "
        "and defaults to 0 at decision time.",
    )
    entity: float = Field(0.05, ge=0.0, allow_inf_nan=False, description="w_e, entity overlap.")
    session: float = Field(0.03, ge=0.0, allow_inf_nan=False, description="w_s, session locality.")
    speaker: float = Field(0.02, ge=0.0, allow_inf_nan=False, description="w_u, speaker bonus.")
    cost: float = Field(
        0.05, ge=0.0, allow_inf_nan=False,
        description="w_c, penalty on size/budget (§3.3 '- w_c·s/B'), outside the freshness factor.",
    )

    def relevance_vector(self) -> FloatArray:
        """The six positive weights in :data:`SIGNAL_NAMES` order."""
        return np.array([getattr(self, name) for name in SIGNAL_NAMES], dtype=np.float64)


class MixedScoreConfig(BaseModel):
    """Configuration of :func:`mixed_score`.

    Examples:
        >>> MixedScoreConfig(use_freshness=False).weights.question
        0.4
    """

    model_config = _STRICT
    weights: MixedWeights = Field(default_factory=MixedWeights,
                                  description="Signal weights (seed 001 A.2 default prior).")
    freshness: FreshnessConfig = Field(default_factory=FreshnessConfig,
                                       description="Freshness proxy constants (seed 001 A.2).")
    use_freshness: bool = Field(
        True,
        description="Multiply relevance by fresh_proxy (A.2). §4.1 evaluates the learner "
        "without it; whether the tabulated Mixed-Score used it is unclear (digest Z-B8).",
    )


class MixedSignals(BaseModel):
    """The online relevance signals φ of one memory, each in [0, 1].

    Examples:
        >>> MixedSignals(recency=0.5).answer      # offline-only signal: 0 by default
        0.0
    """

    model_config = _STRICT
    recency: float = Field(0.0, ge=0.0, le=1.0,
                           description="(t_store + 1)/(t + 1), see recency_ratio().")
    question: float = Field(0.0, ge=0.0, le=1.0, description="Query-term overlap.")
    answer: float = Field(
        0.0, ge=0.0, le=1.0,
        description="Answer overlap: OAS, so 0 at decision time unless an online proxy "
        "(overlap with the previous response) is supplied.",
    )
    entity: float = Field(0.0, ge=0.0, le=1.0, description="Entity-set overlap (Jaccard).")
    session: float = Field(0.0, ge=0.0, le=1.0, description="Session locality.")
    speaker: float = Field(0.0, ge=0.0, le=1.0, description="Speaker bonus (0 or 1).")

    def as_array(self) -> FloatArray:
        """The signals in :data:`SIGNAL_NAMES` order."""
        return np.array([getattr(self, name) for name in SIGNAL_NAMES], dtype=np.float64)


# --- freshness -----------------------------------------------------------------------------


def kappa(delta_t: float, tau: float = 10.0, log_base: float = math.e) -> float:
    """The time-scaling factor ``κ(Δt) = 1 + log_b(1 + Δt/τ)`` (seed 001 A.2).

    Examples:
        >>> round(kappa(50), 6), round(kappa(50, log_base=10), 6)
        (2.791759, 1.778151)
    """
    if not (math.isfinite(delta_t) and delta_t >= 0):
        raise ValidationError(f"delta_t must be finite and >= 0, got {delta_t!r}")
    if not tau > 0 or not log_base > 0 or log_base == 1.0:
        raise ValidationError("tau must be > 0 and log_base > 0 and != 1")
    return 1.0 + math.log1p(delta_t / tau) / math.log(log_base)


def freshness(
    delta_t: float, durability: Durability | str, config: FreshnessConfig | None = None
) -> float:
    """``fresh_proxy = exp(-γ_base(type)·κ(Δt)·Δt)`` in (0, 1], Δt in interaction steps.

    Examples:
        >>> freshness(0, "temporary"), round(freshness(10, "temporary"), 6)
        (1.0, 0.078888)
    """
    cfg = config or FreshnessConfig()
    return decay.log_accelerated(delta_t, cfg.base_rate(durability), cfg.tau, cfg.log_base)


def freshness_batch(
    delta_t: ArrayLike, temporary: ArrayLike, config: FreshnessConfig | None = None
) -> FloatArray:
    """:func:`freshness` of many items; ``temporary`` is a boolean mask.

    Examples:
        >>> freshness_batch([50, 50], [False, True]).round(6).tolist()
        [0.756407, 0.0]
    """
    cfg = config or FreshnessConfig()
    dt = np.asarray(delta_t, dtype=np.float64).reshape(-1)
    temp = np.asarray(temporary, dtype=bool).reshape(-1)
    if temp.shape != dt.shape:
        raise ValidationError("delta_t and temporary must have the same length")
    rates = np.where(temp, cfg.gamma_temporary, cfg.gamma_stable)
    return decay.log_accelerated(dt, rates, cfg.tau, cfg.log_base)


def stale_risk(
    delta_t: float, durability: Durability | str, config: FreshnessConfig | None = None
) -> float:
    """``stale_risk = 1 - fresh_proxy`` (seed 001 §3.3)."""
    return 1.0 - freshness(delta_t, durability, config)


def is_stale(
    delta_t: float, durability: Durability | str, config: FreshnessConfig | None = None
) -> bool:
    """True when ``fresh_proxy < θ_stale`` (strict, seed 001 A.2).

    Examples:
        >>> is_stale(101, "stable"), is_stale(102, "stable")
        (False, True)
    """
    cfg = config or FreshnessConfig()
    return freshness(delta_t, durability, cfg) < cfg.theta_stale


def first_stale_step(
    durability: Durability | str, config: FreshnessConfig | None = None, limit: int = 10**9
) -> int | None:
    """The smallest integer Δt at which an item is stale, or None within ``limit``.

    Freshness is strictly decreasing in Δt (for a positive base rate), so this is a
    binary search.

    Examples:
        >>> first_stale_step("stable"), first_stale_step("temporary")
        (102, 4)
    """
    cfg = config or FreshnessConfig()
    if not is_stale(limit, durability, cfg):
        return None
    lo, hi = 0, limit          # invariant: not stale at lo (fresh(0) = 1), stale at hi
    if is_stale(0, durability, cfg):
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if is_stale(mid, durability, cfg):
            hi = mid
        else:
            lo = mid
    return hi


# --- signals -------------------------------------------------------------------------------


def recency_ratio(t_store: int, t: int) -> float:
    """φ_rec = ``(t_store + 1)/(t + 1)`` (seed 001 A.2): 1 for the newest item.

    Examples:
        >>> recency_ratio(9, 9), recency_ratio(4, 9)
        (1.0, 0.5)
    """
    if t_store < 0 or t < t_store:
        raise ValidationError(f"need 0 <= t_store <= t, got t_store={t_store}, t={t}")
    return (t_store + 1) / (t + 1)


def question_overlap(query_terms: Collection[str], memory_terms: Collection[str]) -> float:
    """Share of the query's terms found in the memory: ``|q ∩ m| / |q|`` (0 for no terms).

    Examples:
        >>> question_overlap({"ana", "tea"}, {"ana", "likes", "tea", "green"})
        1.0
    """
    q = set(query_terms)
    return len(q & set(memory_terms)) / len(q) if q else 0.0


def jaccard(a: Collection[str], b: Collection[str]) -> float:
    """Jaccard overlap ``|a ∩ b| / |a ∪ b|`` (0 when both are empty); used for entities.

    Examples:
        >>> jaccard({"Ana", "Bo"}, {"Ana"})
        0.5
    """
    x, y = set(a), set(b)
    union = x | y
    return len(x & y) / len(union) if union else 0.0


def session_locality(distance: int) -> float:
    """``1/(1 + distance)`` sessions apart: 1 in the same session (ours, digest Z-B3).

    Examples:
        >>> session_locality(0), session_locality(1)
        (1.0, 0.5)
    """
    if distance < 0:
        raise ValidationError(f"session distance must be >= 0, got {distance}")
    return 1.0 / (1.0 + distance)


# --- the score -----------------------------------------------------------------------------


def relevance(signals: MixedSignals, weights: MixedWeights | None = None) -> float:
    """The linear relevance ``Σ_k w_k·φ_k`` (without freshness or cost).

    Examples:
        >>> relevance(MixedSignals(recency=1.0, question=1.0))
        0.75
    """
    w = weights or MixedWeights()
    return float(w.relevance_vector() @ signals.as_array())


def mixed_score(
    signals: MixedSignals,
    *,
    delta_t: float,
    durability: Durability | str,
    size: float,
    budget: float,
    config: MixedScoreConfig | None = None,
) -> float:
    """``fresh·Σ w_k φ_k - w_c·size/budget`` for one memory (see the module docstring).

    Args:
        signals: the online relevance signals.
        delta_t: interaction steps since the memory was stored.
        durability: stable or temporary.
        size: the memory's token cost.
        budget: the token budget B (> 0).
        config: weights and freshness constants.

    Examples:
        >>> s = MixedSignals(recency=1.0, question=1.0)
        >>> round(mixed_score(s, delta_t=50, durability="temporary", size=20, budget=100), 4)
        -0.01
    """
    cfg = config or MixedScoreConfig()
    if not (math.isfinite(budget) and budget > 0):
        raise ValidationError(f"budget must be a finite number > 0, got {budget!r}")
    if not (math.isfinite(size) and size >= 0):
        raise ValidationError(f"size must be finite and >= 0, got {size!r}")
    rel = relevance(signals, cfg.weights)
    if cfg.use_freshness:
        rel *= freshness(delta_t, durability, cfg.freshness)
    return rel - cfg.weights.cost * size / budget


def mixed_score_batch(
    signals: ArrayLike,
    delta_t: ArrayLike,
    temporary: ArrayLike,
    sizes: ArrayLike,
    budget: float,
    *,
    config: MixedScoreConfig | None = None,
) -> FloatArray:
    """:func:`mixed_score` for n memories; ``signals`` is (n, 6) in :data:`SIGNAL_NAMES` order.

    Examples:
        >>> mixed_score_batch([[1, 0, 0, 0, 0, 0]], [0], [False], [10], 100).round(4).tolist()
        [0.345]
    """
    cfg = config or MixedScoreConfig()
    phi = np.asarray(signals, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[1] != len(SIGNAL_NAMES):
        raise ValidationError(f"signals must have shape (n, {len(SIGNAL_NAMES)}), got {phi.shape}")
    if phi.size and (not np.all(np.isfinite(phi)) or phi.min() < 0 or phi.max() > 1):
        raise ValidationError("signals must lie in [0, 1]")
    size = np.asarray(sizes, dtype=np.float64).reshape(-1)
    bad_size = size.size > 0 and (size.min() < 0 or not np.all(np.isfinite(size)))
    if size.shape[0] != phi.shape[0] or bad_size:
        raise ValidationError("sizes must be n finite numbers >= 0")
    if not (math.isfinite(budget) and budget > 0):
        raise ValidationError(f"budget must be a finite number > 0, got {budget!r}")
    rel = phi @ cfg.weights.relevance_vector()
    if cfg.use_freshness:
        rel = rel * freshness_batch(delta_t, temporary, cfg.freshness)
    result: FloatArray = rel - cfg.weights.cost * size / budget
    return result


# --- online labelling ----------------------------------------------------------------------


def label_durability(text: str) -> Durability:
    """The online heuristic labeller of seed 001 A.2: ``temporary`` or ``stable``.

    Temporary when the text has a planning/scheduling cue, is a short greeting (a
    greeting cue and fewer than 100 characters) or has a present-state cue; stable
    otherwise. Cues match whole words, case-insensitively.

    Examples:
        >>> label_durability("Hey there!"), label_durability("I'm currently in Lisbon")
        (<Durability.TEMPORARY: 'temporary'>, <Durability.TEMPORARY: 'temporary'>)
    """
    if _PLANNING.search(text) or _STATE.search(text):
        return Durability.TEMPORARY
    if len(text.strip()) < GREETING_MAX_CHARS and _GREETING.search(text):
        return Durability.TEMPORARY
    return Durability.STABLE
