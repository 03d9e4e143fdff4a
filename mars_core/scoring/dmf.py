"""DMF survival score, decay, tiers and pruning scores (seed 004 §4.6–§8).

Everything here is a pure function of its arguments and a :class:`DMFConfig` (defaults
are the paper's, or marked [non-seed] where the paper is silent):

* semantic divergence ``D`` from a moving centroid: :class:`CentroidTracker` (eqs 6–7);
* the survival score ``Ω = σ(z_content + z_op + z_prov − x0)``: :func:`survival_score`
  and :func:`score_signals` (eqs 8–12), with the social floor (eqs 27–29);
* decay ``Ω_eff(Δn) = Ω·exp(−λ(1−ηΩ)Δn)``, half-life and tiers (eqs 15–20), with
  numpy versions for many entries at once (:func:`effective_scores`);
* hard-kill, retention bonus, supersession penalty and the pruning score
  ``S_prune = Ω_eff + B_ret − P_sup`` (eqs 21–26).

Examples:
    >>> from mars_core.scoring.dmf import survival_score, effective_score, half_life
    >>> s = survival_score(0.40, 0.15, 0.20, 0.15)  # the paper's average turn (§5.3)
    >>> round(s.z_total, 3), round(s.omega, 3)
    (1.255, 0.439)
    >>> round(effective_score(0.87, 0), 2), round(half_life(0.87), 2)
    (0.87, 35.05)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core import decay
from mars_core.errors import ValidationError
from mars_core.nlp.signals import TextSignals, entity_norm

__all__ = [
    "DEFAULT_DMF_CONFIG",
    "CentroidTracker",
    "CueFlags",
    "DMFConfig",
    "OperationalCues",
    "ProvenanceFlags",
    "ScoreBreakdown",
    "Tier",
    "apply_social_floor",
    "budget_eviction_order",
    "content_logit",
    "cosine_divergence",
    "decay_rate",
    "effective_score",
    "effective_scores",
    "entity_norm",
    "half_life",
    "is_hard_kill",
    "operational_logit",
    "provenance_logit",
    "prune_score",
    "prune_scores",
    "retention_bonus",
    "score_signals",
    "sigmoid",
    "supersession_penalty",
    "survival_score",
    "tier",
    "turns_until",
]

FloatArray = npt.NDArray[np.float64]


class DMFConfig(BaseModel):
    """Every DMF constant, with the paper's defaults (seed 004; [non-seed] where silent).

    Examples:
        >>> DMFConfig().alpha, DMFConfig(decay_lambda=0.05).decay_lambda
        (3.0, 0.05)
        >>> DMFConfig.model_validate({"alpah": 1})  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        pydantic_core._pydantic_core.ValidationError: ...
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # content channel, eq (8), Table 1
    alpha: float = Field(3.0, description="[seed §5.1 Table 1] Weight α of information density ID.")
    beta: float = Field(0.2, description="[seed §5.1 Table 1] Weight β of sentiment magnitude |S|.")
    gamma: float = Field(2.0, description="[seed §5.1 Table 1] Weight γ of normalised entities.")
    delta: float = Field(
        -2.5, le=0.0, description="[seed §5.1 Table 1] Weight δ (≤ 0, a penalty) of divergence D."
    )
    x0: float = Field(1.5, description="[seed §5.2 Table 1] Logistic midpoint x0 of eq (12).")
    e_cap: int = Field(5, ge=1, description="[seed §4.4 Table 1] Entity cap E_cap of eq (4).")
    # operational channel, eq (9)
    lambda_op: float = Field(
        0.75, ge=0.0, description="[seed §5.1] Scale λ_op of the operational channel."
    )
    eta_con: float = Field(1.20, description="[seed §5.1] Operational weight of a constraint.")
    eta_pref: float = Field(0.70, description="[seed §5.1] Operational weight of a preference.")
    eta_cs: float = Field(0.60, description="[seed §5.1] Operational weight of a current state.")
    eta_corr: float = Field(0.90, description="[seed §5.1] Operational weight of a correction.")
    eta_repl: float = Field(0.50, description="[seed §5.1] Operational weight of a replacement.")
    eta_past: float = Field(0.0, description="[seed §5.1] Operational weight of a past state.")
    # provenance channel, eq (10), Table 4
    kappa_uc: float = Field(0.15, description="[seed Table 4] Boost of a user correction.")
    kappa_pu: float = Field(0.10, description="[seed Table 4] Boost of a preference update.")
    kappa_con: float = Field(0.10, description="[seed Table 4] Boost of a constraint source.")
    kappa_cb: float = Field(
        0.0, ge=0.0, description="[seed Table 4] Penalty (subtracted) of 'corrected by user'."
    )
    # social floor, eqs (27)-(29)
    social_max_words: int = Field(
        6, ge=0, description="[seed §8.2 eq 28] Longest text (whitespace words) that is social."
    )
    tau_soc: float = Field(
        0.40, ge=0.0, le=1.0,
        description="[seed §8.2 eq 29] The floor applies only when raw Ω is below this.",
    )
    omega_soc_min: float = Field(
        0.25, ge=0.0, le=1.0, description="[seed §8.2 eq 29] Floor Ω_soc_min of a social turn."
    )
    # decay, eq (18)
    decay_lambda: float = Field(
        0.035, gt=0.0, description="[seed §6.4] Base decay rate λ per turn."
    )
    inertia_eta: float = Field(
        0.5, ge=0.0, lt=1.0, description="[seed §6.3–6.4] Inertia strength η in [0, 1)."
    )
    # tiers, eq (20)
    tau_h: float = Field(
        0.75, ge=0.0, le=1.0, description="[seed §6.6] Healthy floor τ_H: Ω_eff > τ_H is healthy."
    )
    tau_c: float = Field(
        0.3, ge=0.0, le=1.0,
        description="[seed §6.6] Critical ceiling τ_C: Ω_eff ≤ τ_C is critical.",
    )
    # pruning, §7
    omega_kill: float = Field(
        0.05, ge=0.0, le=1.0, description="[seed §7.1 eq 21] Hard-kill floor: evict if Ω_eff < it."
    )
    prune_interval: int = Field(
        5, ge=1, description="[non-seed, DMF reference] Turns between hard-kill sweeps (Z-E1)."
    )
    rho_con: float = Field(0.20, description="[seed §7.2.2 eq 23] Retention bonus of a constraint.")
    rho_pref: float = Field(
        0.10, description="[seed §7.2.2 eq 23] Retention bonus of a preference."
    )
    rho_cs: float = Field(
        0.10, description="[seed §7.2.2 eq 23] Retention bonus of a current state."
    )
    rho_corr: float = Field(
        0.15, description="[seed §7.2.2 eq 23] Retention bonus of a correction."
    )
    rho_repl: float = Field(
        0.08, description="[seed §7.2.2 eq 23] Retention bonus of a replacement."
    )
    p_sup: float = Field(
        0.35, ge=0.0, description="[seed §7.2.3 eq 24] Penalty of a superseded entry."
    )
    # divergence, eqs (6)-(7)
    centroid_window: int = Field(
        10, ge=1, description="[non-seed, DMF reference] Window W of the moving centroid (Z-E1)."
    )

    @model_validator(mode="before")
    @classmethod
    def _removed_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and "token_budget" in data:
            raise ValueError(
                "token_budget was removed (it was never read): DMF's budget τ_tok (seed 004 "
                "§7.2, 4096 tokens) is the store's budget of the namespace — pass "
                "MemoryStore(policy='dmf', budget=4096) and drop token_budget from "
                "policy_params (docs/migration.md)")
        return data

    @model_validator(mode="after")
    def _ordered_tiers(self) -> DMFConfig:
        if not self.tau_c < self.tau_h:
            raise ValueError("tau_c must be below tau_h")
        return self


DEFAULT_DMF_CONFIG = DMFConfig()
"""The paper's defaults."""


class CueFlags(Protocol):
    """The operational cues of eq (9)/(23); :class:`TextSignals` satisfies it."""

    @property
    def constraint(self) -> bool: ...

    @property
    def preference(self) -> bool: ...

    @property
    def current_state(self) -> bool: ...

    @property
    def past_state(self) -> bool: ...

    @property
    def correction(self) -> bool: ...

    @property
    def replacement(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class OperationalCues:
    """Explicit operational cues (when they come from somewhere other than the text).

    Examples:
        >>> round(operational_logit(OperationalCues(constraint=True)), 2)
        0.9
    """

    constraint: bool = False
    preference: bool = False
    current_state: bool = False
    past_state: bool = False
    correction: bool = False
    replacement: bool = False


@dataclass(frozen=True, slots=True)
class ProvenanceFlags:
    """Caller-supplied provenance of eq (10), local to the interaction.

    Examples:
        >>> round(provenance_logit(ProvenanceFlags(user_correction=True)), 2)
        0.15
    """

    user_correction: bool = False
    preference_update: bool = False
    constraint_source: bool = False
    corrected_by_user: bool = False


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """The channels and result of one survival score.

    Attributes:
        z_content: eq (8).
        z_op: eq (9).
        z_prov: eq (10).
        z_total: eq (11).
        omega_raw: ``σ(z_total − x0)``, eq (12), before the social floor.
        social: whether the turn is social (eq 28) as given by the caller.
        omega: ``Ω_final`` of eq (29): the score to decay, tier and prune with (Z-E11).
    """

    z_content: float
    z_op: float
    z_prov: float
    z_total: float
    omega_raw: float
    social: bool
    omega: float

    @property
    def floored(self) -> bool:
        """Whether the social floor raised the score."""
        return self.omega > self.omega_raw


class Tier(StrEnum):
    """Memory tiers of eq (20); labels for logging and pruning eligibility only."""

    HEALTHY = "healthy"
    UNSTABLE = "unstable"
    CRITICAL = "critical"


# --- survival score ---------------------------------------------------------------------


def sigmoid(x: float) -> float:
    """Numerically stable logistic ``1 / (1 + e^(−x))``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _check_unit(name: str, value: float, upper: float = 1.0) -> None:
    if not (0.0 <= value <= upper):  # also rejects NaN
        raise ValidationError(f"{name} must be in [0, {upper:g}], got {value!r}")


def content_logit(
    info_density: float,
    sentiment_abs: float,
    e_norm: float,
    divergence: float,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> float:
    """``z_content = α·ID + β·|S| + γ·E_norm + δ·D`` (eq 8).

    Examples:
        >>> round(content_logit(0.60, 0.05, 0.80, 0.05), 4)
        3.285
    """
    _check_unit("ID", info_density)
    _check_unit("|S|", sentiment_abs)
    _check_unit("E_norm", e_norm)
    _check_unit("D", divergence, 2.0)
    c = config
    return c.alpha * info_density + c.beta * sentiment_abs + c.gamma * e_norm + c.delta * divergence


def operational_logit(cues: CueFlags | None, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``z_op`` of eq (9); ``query_like`` and ``ack_like`` do not enter it."""
    if cues is None:
        return 0.0
    c = config
    total = (
        c.eta_con * cues.constraint
        + c.eta_pref * cues.preference
        + c.eta_cs * cues.current_state
        + c.eta_corr * cues.correction
        + c.eta_repl * cues.replacement
        + c.eta_past * cues.past_state
    )
    return c.lambda_op * total


def provenance_logit(
    provenance: ProvenanceFlags | None, config: DMFConfig = DEFAULT_DMF_CONFIG
) -> float:
    """``z_prov`` of eq (10)."""
    if provenance is None:
        return 0.0
    p, c = provenance, config
    return (
        c.kappa_uc * p.user_correction
        + c.kappa_pu * p.preference_update
        + c.kappa_con * p.constraint_source
        - c.kappa_cb * p.corrected_by_user
    )


def apply_social_floor(omega: float, social: bool, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``Ω_final`` of eq (29): raise a social turn below τ_soc to at least Ω_soc_min.

    Examples:
        >>> round(apply_social_floor(sigmoid(-1.5), True), 2), apply_social_floor(0.1, False)
        (0.25, 0.1)
    """
    if social and omega < config.tau_soc:
        return max(omega, config.omega_soc_min)
    return omega


def survival_score(
    info_density: float,
    sentiment_abs: float,
    e_norm: float,
    divergence: float,
    *,
    cues: CueFlags | None = None,
    provenance: ProvenanceFlags | None = None,
    social: bool = False,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> ScoreBreakdown:
    """The survival score Ω from given signals (eqs 8–12 and 29).

    Args:
        info_density: ``ID`` in [0, 1].
        sentiment_abs: ``|S|`` in [0, 1].
        e_norm: ``E_norm`` in [0, 1] (see :func:`entity_norm`).
        divergence: ``D`` in [0, 2] (see :class:`CentroidTracker`).
        cues: operational cues (:class:`OperationalCues` or :class:`TextSignals`).
        provenance: caller-supplied provenance flags.
        social: whether eq (28) holds for the text.
        config: the constants.

    Examples:
        >>> s = survival_score(0.35, 0.05, 0.20, 0.05, cues=OperationalCues(constraint=True))
        >>> round(s.z_total, 3), round(s.omega, 2)  # Table 2, "User constraint"
        (2.235, 0.68)
    """
    z_content = content_logit(info_density, sentiment_abs, e_norm, divergence, config)
    z_op = operational_logit(cues, config)
    z_prov = provenance_logit(provenance, config)
    z_total = z_content + z_op + z_prov
    raw = sigmoid(z_total - config.x0)
    return ScoreBreakdown(
        z_content=z_content,
        z_op=z_op,
        z_prov=z_prov,
        z_total=z_total,
        omega_raw=raw,
        social=social,
        omega=apply_social_floor(raw, social, config),
    )


def score_signals(
    signals: TextSignals,
    divergence: float = 0.0,
    *,
    provenance: ProvenanceFlags | None = None,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> ScoreBreakdown:
    """The survival score of analysed text (:func:`mars_core.nlp.analyze`) and its ``D``.

    Examples:
        >>> from mars_core.nlp import Analyzer
        >>> sig = Analyzer("rules", sentiment="lexicon").analyze("Thanks!")
        >>> s = score_signals(sig)
        >>> round(s.omega_raw, 4), s.omega  # ID = 0 after the phatic rule; floored
        (0.1976, 0.25)
    """
    return survival_score(
        signals.info_density,
        signals.sentiment_magnitude,
        signals.entity_norm(config.e_cap),
        divergence,
        cues=signals,
        provenance=provenance,
        social=signals.is_social(config.social_max_words),
        config=config,
    )


# --- decay, eqs (15)-(20) --------------------------------------------------------------


def decay_rate(omega: float, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``λ_eff = λ·(1 − ηΩ)`` (eqs 17–18)."""
    _check_unit("omega", omega)
    return config.decay_lambda * (1.0 - config.inertia_eta * omega)


def effective_score(
    omega: float, delta_n: float, config: DMFConfig = DEFAULT_DMF_CONFIG
) -> float:
    """``Ω_eff(Δn) = Ω·exp(−λ(1 − ηΩ)Δn)`` (eq 18); ``Δn`` = newer interactions (eq 15).

    Examples:
        >>> round(effective_score(0.86, 35), 4)
        0.4278
    """
    _check_unit("omega", omega)
    return float(decay.inertial(omega, delta_n, config.decay_lambda, config.inertia_eta))


def effective_scores(
    omega: npt.ArrayLike, delta_n: npt.ArrayLike, config: DMFConfig = DEFAULT_DMF_CONFIG
) -> FloatArray:
    """Vectorised :func:`effective_score` (numpy broadcasting of ``omega`` and ``delta_n``).

    Examples:
        >>> effective_scores([0.86, 0.44], [10, 10]).round(4).tolist()
        [0.7045, 0.3349]
    """
    om = np.asarray(omega, dtype=np.float64)
    dn = np.asarray(delta_n, dtype=np.float64)
    out: FloatArray = np.asarray(
        decay.inertial(om, dn, config.decay_lambda, config.inertia_eta), dtype=np.float64)
    return out


def half_life(omega: float, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``t_½(Ω) = ln 2 / (λ(1 − ηΩ))`` in turns (eq 19).

    Examples:
        >>> [round(half_life(o), 2) for o in (0.87, 0.18)]
        [35.05, 21.76]
    """
    return math.log(2.0) / decay_rate(omega, config)


def turns_until(
    omega: float, threshold: float, config: DMFConfig = DEFAULT_DMF_CONFIG
) -> float:
    """Continuous ``Δn`` at which ``Ω_eff`` reaches ``threshold`` (0 if already there).

    Examples:
        >>> round(turns_until(0.25, 0.05), 1)  # a floored social turn reaches hard-kill
        52.6
    """
    _check_unit("threshold", threshold)
    if threshold <= 0.0:
        return math.inf
    if omega <= threshold:
        return 0.0
    return math.log(omega / threshold) / decay_rate(omega, config)


def tier(omega_eff: float, config: DMFConfig = DEFAULT_DMF_CONFIG) -> Tier:
    """Tier of eq (20): healthy above τ_H, critical at or below τ_C, unstable between.

    Examples:
        >>> tier(0.76).value, tier(0.75).value, tier(0.31).value, tier(0.30).value
        ('healthy', 'unstable', 'unstable', 'critical')
    """
    if omega_eff > config.tau_h:
        return Tier.HEALTHY
    if omega_eff > config.tau_c:
        return Tier.UNSTABLE
    return Tier.CRITICAL


def is_hard_kill(omega_eff: float, config: DMFConfig = DEFAULT_DMF_CONFIG) -> bool:
    """Eq (21): evict (to the archive) when ``Ω_eff < Ω_kill``, whatever the tier."""
    return omega_eff < config.omega_kill


# --- budget-pressure pruning, eqs (22)-(26) ---------------------------------------------


def retention_bonus(cues: CueFlags | None, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``B_ret`` of eq (23) (past_state earns nothing).

    Examples:
        >>> retention_bonus(OperationalCues(constraint=True, correction=True))
        0.35
    """
    if cues is None:
        return 0.0
    c = config
    return (
        c.rho_con * cues.constraint
        + c.rho_pref * cues.preference
        + c.rho_cs * cues.current_state
        + c.rho_corr * cues.correction
        + c.rho_repl * cues.replacement
    )


def supersession_penalty(superseded: bool, config: DMFConfig = DEFAULT_DMF_CONFIG) -> float:
    """``P_sup = p_sup·1[superseded]`` (eq 24)."""
    return config.p_sup if superseded else 0.0


def prune_score(
    omega_eff: float,
    *,
    bonus: float = 0.0,
    superseded: bool = False,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> float:
    """``S_prune = Ω_eff + B_ret − P_sup`` (eq 25); the lowest is evicted first.

    Examples:
        >>> round(prune_score(0.25, bonus=retention_bonus(OperationalCues(constraint=True))), 2)
        0.45
        >>> round(prune_score(0.60, superseded=True), 2)
        0.25
    """
    return omega_eff + bonus - supersession_penalty(superseded, config)


def prune_scores(
    omega_eff: npt.ArrayLike,
    bonus: npt.ArrayLike = 0.0,
    superseded: npt.ArrayLike = False,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> FloatArray:
    """Vectorised :func:`prune_score`."""
    om = np.asarray(omega_eff, dtype=np.float64)
    b = np.asarray(bonus, dtype=np.float64)
    sup = np.asarray(superseded, dtype=bool)
    out: FloatArray = om + b - config.p_sup * sup.astype(np.float64)
    return out


def budget_eviction_order(
    ids: Sequence[int],
    omega_eff: npt.ArrayLike,
    bonus: npt.ArrayLike = 0.0,
    superseded: npt.ArrayLike = False,
    config: DMFConfig = DEFAULT_DMF_CONFIG,
) -> list[int]:
    """Candidates of eq (22) in eviction order of eq (26).

    Only entries with ``Ω_eff ≤ τ_H`` are candidates (healthy ones are protected); they
    are ordered by ``S_prune`` ascending, ties broken by the lower (older) interaction
    id (Z-E3). The caller evicts from the front until the budget holds.

    Examples:
        >>> budget_eviction_order([1, 2, 3, 4], [0.25, 0.40, 0.60, 0.90], [0.20, 0, 0, 0],
        ...                       [False, False, True, False])
        [3, 2, 1]
    """
    om = np.asarray(omega_eff, dtype=np.float64)
    if om.shape != (len(ids),):
        raise ValidationError("omega_eff must have one value per id")
    scores = np.broadcast_to(prune_scores(om, bonus, superseded, config), om.shape)
    keep = [i for i in range(len(ids)) if om[i] <= config.tau_h]
    keep.sort(key=lambda i: (float(scores[i]), ids[i]))
    return [ids[i] for i in keep]


# --- semantic divergence, eqs (6)-(7) ---------------------------------------------------


def _unit(vector: npt.ArrayLike) -> FloatArray:
    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    if not np.isfinite(v).all():
        raise ValidationError("embedding has non-finite values")
    norm = math.sqrt(float(v.dot(v)))  # what np.linalg.norm computes, without its overhead
    out: FloatArray = v / norm if norm > 0.0 else v
    return out


def cosine_divergence(vector: npt.ArrayLike, centroid: npt.ArrayLike | None) -> float:
    """``D = 1 − cos(v, C)`` in [0, 2] with the cosine clipped to [−1, 1] (eq 7).

    ``D = 0`` when there is no centroid or either norm is zero.

    Examples:
        >>> cosine_divergence([1.0, 0.0], [0.0, 1.0]), cosine_divergence([1.0, 0.0], None)
        (1.0, 0.0)
    """
    if centroid is None:
        return 0.0
    v, c = _unit(vector), _unit(centroid)
    if v.shape != c.shape:
        raise ValidationError(f"dimension mismatch: {v.shape[0]} vs {c.shape[0]}")
    if not v.any() or not c.any():
        return 0.0
    return 1.0 - min(1.0, max(-1.0, float(v @ c)))


class CentroidTracker:
    """Moving centroid of the last ``W`` embeddings and the divergence of a new one.

    ``C_n`` is the L2-normalised sum of the previous ``W`` unit embeddings (eq 6,
    unweighted: gap Z-E2). :meth:`observe` measures ``D`` against the centroid *before*
    adding the new vector, then pushes it (dropping the oldest beyond ``W``); on the
    first turn (empty window) ``D = 0`` (Z-E1).

    Args:
        window: ``W``, the number of previous embeddings kept (default 10, [non-seed]).

    Examples:
        >>> t = CentroidTracker(window=2)
        >>> t.observe([1.0, 0.0]), t.observe([1.0, 0.0]), t.observe([0.0, 1.0])
        (0.0, 0.0, 1.0)
        >>> round(t.divergence([1.0, 0.0]), 4)  # centroid of the last two: (1,0) and (0,1)
        0.2929
    """

    def __init__(self, window: int = DEFAULT_DMF_CONFIG.centroid_window) -> None:
        if window < 1:
            raise ValidationError("window must be >= 1")
        self._window: deque[FloatArray] = deque(maxlen=window)

    @classmethod
    def from_config(cls, config: DMFConfig) -> CentroidTracker:
        """A tracker whose window is ``config.centroid_window``."""
        return cls(config.centroid_window)

    @property
    def window(self) -> int:
        """``W``."""
        return self._window.maxlen or 0

    def __len__(self) -> int:
        return len(self._window)

    @property
    def centroid(self) -> FloatArray | None:
        """``C_n`` (unit length), or ``None`` when the window is empty or sums to zero."""
        if not self._window:
            return None
        total: FloatArray = np.sum(np.stack(list(self._window)), axis=0)
        norm = math.sqrt(float(total.dot(total)))
        return total / norm if norm > 0.0 else None

    def divergence(self, vector: npt.ArrayLike) -> float:
        """``D`` of ``vector`` against the current centroid (no update)."""
        return cosine_divergence(vector, self.centroid)

    def push(self, vector: npt.ArrayLike) -> None:
        """Add a vector to the window (L2-normalised; the oldest drops out beyond ``W``)."""
        v = _unit(vector)
        if self._window and self._window[0].shape != v.shape:
            raise ValidationError(
                f"dimension mismatch: {v.shape[0]} vs {self._window[0].shape[0]}"
            )
        self._window.append(v)

    def observe(self, vector: npt.ArrayLike) -> float:
        """Divergence of ``vector`` from the centroid, then push it (the per-turn update)."""
        d = self.divergence(vector)
        self.push(vector)
        return d

    def reset(self) -> None:
        """Forget every embedding."""
        self._window.clear()
