"""MaRS utility density: the feature map ψ, type weights θ and ``score = (Û - λ_priv·s)/w``.

Seed 000 §3.2.6 (eq 5, repeated as eq 6 §3.3 and eq 7 §4.2) defines for a node ``i``

    ψ_i = [ e^{-λ_age·age(i)}, norm(a_i), sim(φ(c_i), g_t), cent(i; G),
            novel(i; E ∪ S ∪ R), 1{t_i = task}·urgency(i) ]
    Û_i = θ^(t_i) · ψ_i                  score(i) = (Û_i - λ_priv·s_i) / w_i

and leaves every constant and every feature function unspecified ("the defaults match
those used in the experiments", §5.3, without giving them; digest Z-A2). The choices
made here, each a field of :class:`DensityConfig` or stated below:

* **recency** ``e^{-λ_age(t)·Δn}`` with the age ``Δn`` counted in *interaction steps* of
  the namespace (``MemoryNode.step``; seed 004 §6 axis, DESIGN §3), not wall-clock time.
  λ_age is per type (§5.3: "type-specific weights and decay constants").
* **access frequency** is log-scaled and saturating, ``min(1, ln(1+a)/ln(1+a_ref))``
  with ``a_ref = 10`` (seed 003's 10-access cap). It is *local* — one node's feature
  does not move when another node is accessed — so the importance heap can be updated
  in O(log n) per event as §3.2.5/§5.2 require; ``a_i / max_j a_j`` ("max") and seed
  003's ``min(1, a/10)`` ("cap") are available as options.
* **goal similarity** is the cosine between the node embedding and the goal embedding
  g_t clipped to [0, 1] (§5.3 "cosine similarity"); 0 when there is no goal.
* **centrality** is personalised PageRank (damping 0.85, the standard value) over the
  semantic ∪ social subgraph (§3.2.5, §4.2, §5.3; predicates ``isA`` and ``friendOf``),
  read as undirected, by power iteration in numpy. Personalisation puts the restart
  mass on goal-related nodes (goal similarity plus task urgency) when there is any,
  else it is uniform (plain PageRank). Scores are divided by the largest score so
  the feature lies in [0, 1]; nodes with no such edge get 0 (they are not in the
  subgraph the seed ranks).
* **novelty** is ``1 - max(0, max_j cos(φ_i, φ_j))`` over the *other* nodes of the
  working set (§5.3 "novelty relative to the current working set"): 1 for a node
  unlike everything else, 0 for an exact duplicate. A moving centroid was rejected: it
  scores a duplicate pair as novel when the pair is far from the centroid.
  :func:`novelty_batch` is the exact all-pairs form (O(n²·d)); the policies use the
  *bounded* working set of :mod:`mars_core.scoring.working_set` — the
  ``novelty_window`` = 1,024 most recently written memories, maintained incrementally
  (exact for n ≤ W; beyond it, old memories are compared with the recent ones only).
* **urgency** (task nodes only) is ``priority · e^{-max(0, hours to deadline)/h}`` with
  h = 72 h: full priority when due or overdue, about 0.10·priority a week ahead; 0 for
  tasks that are done, cancelled or have no deadline.

All features lie in [0, 1]. The default θ of each type is its type weight times a
distribution over the six features, so ``Û ∈ [0, type_weight] ⊆ [0, 1]``:

========  ===========  =======  =========  ====  ==========  =======  =======
type      type weight  recency  frequency  goal  centrality  novelty  urgency
========  ===========  =======  =========  ====  ==========  =======  =======
episodic  0.5          0.40     0.15       0.20  0.05        0.20     0
semantic  1.0          0.10     0.25       0.25  0.25        0.15     0
social    0.7          0.10     0.20       0.20  0.40        0.10     0
task      0.9          0.10     0.10       0.30  0.10        0.05     0.35
========  ===========  =======  =========  ====  ==========  =======  =======

The type weights anchor on seed 003's ``type_weights`` (decision 1.0, gotcha 0.9,
finding 0.7, observation 0.5 — also its default for unknown kinds): durable semantic
knowledge like a decision (seed 000 §3.2.2 "semantic nodes typically enjoy higher
retention value"), tasks like gotchas (prerequisites of active goals are retained,
§4.2), social facts like findings, raw episodes like observations. The distributions
follow seed 000's prose: episodes are recency-heavy and novelty-sensitive (they are
what reflection consolidates, §3.3.2); semantic memory is atemporal, rewarded for
generality/centrality (§3.2.2) and use; social memory is centrality-heavy (the social
graph, §3.2.3); task memory follows goal alignment and deadline-weighted urgency
(§3.2.4, §4.2).

Priority-Decay (DESIGN §6) uses §3.3.2's ``imp = α·type_weight + β·recency +
γ·frequency`` divided by ``α+β+γ`` so ``imp ∈ [0, 1]``, keyed per unit weight with §5.3's
privacy penalty, ``(imp − λ_priv·s)/w`` (:func:`priority_key`); the privacy pass uses
§3.3.3's ``removal_priority = s·age·(1-imp)``.

Examples:
    >>> import numpy as np
    >>> from mars_core.model import MemoryType
    >>> cfg = DensityConfig()
    >>> psi = Psi(recency=1.0, frequency=0.0, goal=0.5, centrality=0.0, novelty=1.0, urgency=0.0)
    >>> round(utility(MemoryType.EPISODIC, psi, cfg), 3)        # 0.5·(0.4 + 0.2·0.5 + 0.2)
    0.35
    >>> round(score(MemoryType.EPISODIC, psi, sensitivity=0.4, weight=10, config=cfg), 4)
    0.025
    >>> batch = density_batch([MemoryType.SEMANTIC, MemoryType.EPISODIC], age_steps=[0, 0],
    ...                       access_counts=[0, 0], sensitivity=[0, 0], weights=[5, 5])
    >>> batch.density.round(3).tolist()                    # recency only: 0.1/5 and 0.2/5
    [0.02, 0.04]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core import decay
from mars_core.decay import FloatArray
from mars_core.errors import ValidationError
from mars_core.model import MemoryType, Predicate, TaskPayload, TaskStatus
from mars_core.scoring._arrays import (
    _check_features,
    _check_unit,
    _matrix,
    _unit_rows,
    _unit_vector,
    _vector,
)
from mars_core.scoring.centrality import (
    CENTRALITY_PREDICATES,
    SparseAdjacency,
    _as_sparse,
    centrality,
    personalized_pagerank,
)

__all__ = [
    "CENTRALITY_PREDICATES",
    "FEATURE_NAMES",
    "DensityBatch",
    "DensityConfig",
    "FeatureWeights",
    "FrequencyNorm",
    "Psi",
    "SparseAdjacency",
    "access_frequency",
    "access_frequency_batch",
    "centrality",
    "cosine",
    "density_batch",
    "goal_similarity",
    "goal_similarity_batch",
    "importance",
    "importance_batch",
    "novelty",
    "novelty_batch",
    "payload_urgency",
    "personalized_pagerank",
    "priority_key",
    "recency",
    "removal_priority",
    "score",
    "task_urgency",
    "utility",
    "utility_density",
]


FEATURE_NAMES: tuple[str, ...] = (
    "recency", "frequency", "goal", "centrality", "novelty", "urgency",
)
"""The six components of ψ in seed 000's order (§3.2.6)."""

FrequencyNorm = Literal["log", "max", "cap"]
"""How access counts become [0, 1]: log-saturating (default), share of the max, or capped."""

_TYPES: tuple[MemoryType, ...] = tuple(MemoryType)
_TASK_INDEX = _TYPES.index(MemoryType.TASK)
_STRICT = ConfigDict(extra="forbid", frozen=True)
_NOVELTY_CHUNK = 1024
_CLOSED_TASKS = frozenset({TaskStatus.DONE, TaskStatus.CANCELLED})


# --- value objects -------------------------------------------------------------------------


class Psi(NamedTuple):
    """The feature vector ψ_i of one node; every component lies in [0, 1].

    Examples:
        >>> Psi(1, 0, 0, 0, 1, 0).as_array().tolist()
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    """

    recency: float
    frequency: float
    goal: float
    centrality: float
    novelty: float
    urgency: float

    def as_array(self) -> FloatArray:
        """ψ as a float64 vector in :data:`FEATURE_NAMES` order."""
        return np.asarray(self, dtype=np.float64)


class FeatureWeights(BaseModel):
    """One type's weight vector θ^(t) ∈ R_{≥0}^6 (seed 000 §3.2.6).

    Examples:
        >>> FeatureWeights(recency=0.5, novelty=0.5).as_array().tolist()
        [0.5, 0.0, 0.0, 0.0, 0.5, 0.0]
    """

    model_config = _STRICT
    recency: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                           description="Weight of exponential recency e^{-λ_age·Δn}.")
    frequency: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                             description="Weight of normalised access frequency.")
    goal: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                        description="Weight of cosine similarity to the active goal g_t.")
    centrality: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                              description="Weight of personalised-PageRank centrality.")
    novelty: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                           description="Weight of novelty w.r.t. the working set.")
    urgency: float = Field(0.0, ge=0.0, allow_inf_nan=False,
                           description="Weight of deadline-weighted urgency (task nodes only).")

    def as_array(self) -> FloatArray:
        """θ as a float64 vector in :data:`FEATURE_NAMES` order."""
        return np.array([getattr(self, name) for name in FEATURE_NAMES], dtype=np.float64)

    @classmethod
    def scaled(cls, scale: float, **shares: float) -> FeatureWeights:
        """θ = ``scale`` × a distribution over the features (``shares`` should sum to 1).

        Examples:
            >>> FeatureWeights.scaled(0.5, recency=0.4, novelty=0.6).novelty
            0.3
        """
        return cls(**{k: round(scale * v, 12) for k, v in shares.items()})


def _default_type_weight() -> dict[MemoryType, float]:
    return {
        MemoryType.SEMANTIC: 1.0,
        MemoryType.TASK: 0.9,
        MemoryType.SOCIAL: 0.7,
        MemoryType.EPISODIC: 0.5,
    }


def _default_theta() -> dict[MemoryType, FeatureWeights]:
    tw = _default_type_weight()
    return {
        MemoryType.EPISODIC: FeatureWeights.scaled(
            tw[MemoryType.EPISODIC], recency=0.40, frequency=0.15, goal=0.20,
            centrality=0.05, novelty=0.20),
        MemoryType.SEMANTIC: FeatureWeights.scaled(
            tw[MemoryType.SEMANTIC], recency=0.10, frequency=0.25, goal=0.25,
            centrality=0.25, novelty=0.15),
        MemoryType.SOCIAL: FeatureWeights.scaled(
            tw[MemoryType.SOCIAL], recency=0.10, frequency=0.20, goal=0.20,
            centrality=0.40, novelty=0.10),
        MemoryType.TASK: FeatureWeights.scaled(
            tw[MemoryType.TASK], recency=0.10, frequency=0.10, goal=0.30,
            centrality=0.10, novelty=0.05, urgency=0.35),
    }


def _default_lambda_age() -> dict[MemoryType, float]:
    return {
        MemoryType.EPISODIC: 0.035,   # half-life ≈ 19.8 steps: DMF's λ (seed 004 Table 3)
        MemoryType.SOCIAL: 0.01,      # ≈ 69 steps: social detail fades unless used (§4.3)
        MemoryType.TASK: 0.005,       # ≈ 139 steps: goals outlive the turns that set them
        MemoryType.SEMANTIC: 0.0025,  # ≈ 277 steps: atemporal knowledge (§3.2.2)
    }


class DensityConfig(BaseModel):
    """Every constant of the MaRS density and of Priority-Decay, with its source.

    Seed 000 gives none of these numbers (digest A.1, A.5, Z-A1, Z-A2); each default is
    our choice and the reason is in the field's description and the module docstring.

    Examples:
        >>> cfg = DensityConfig(lambda_priv=0.5)
        >>> cfg.lambda_priv, cfg.ppr_damping, cfg.type_weight[MemoryType.SEMANTIC]
        (0.5, 0.85, 1.0)
    """

    model_config = _STRICT
    theta: dict[MemoryType, FeatureWeights] = Field(
        default_factory=_default_theta,
        description="Type-specific weights θ^(t) (seed 000 §3.2.6; values ours: type weight "
        "× a per-type feature distribution, see the module docstring). Every type needed.",
    )
    lambda_age: dict[MemoryType, float] = Field(
        default_factory=_default_lambda_age,
        description="Recency rate λ_age per interaction step, per type (§5.3 exposes "
        "type-specific decay constants; values ours: episodic 0.035 = DMF's λ, social 0.01, "
        "task 0.005, semantic 0.0025 — durable types decay slower).",
    )
    lambda_priv: float = Field(
        0.25, ge=0.0, allow_inf_nan=False,
        description="Privacy penalty λ_priv in score = (Û - λ_priv·s)/w (eq 5/7). 0.25 "
        "(digest Z-A2): a fully sensitive memory loses a quarter of the largest possible Û.",
    )
    type_weight: dict[MemoryType, float] = Field(
        default_factory=_default_type_weight,
        description="Type prior in [0, 1] for imp() and the scale of θ: semantic 1.0, task "
        "0.9, social 0.7, episodic 0.5 (anchored on seed 003's type_weights).",
    )
    alpha: float = Field(
        0.4, ge=0.0, allow_inf_nan=False,
        description="α, weight of the type prior in imp (§3.3.2; value ours, digest Z-A1).",
    )
    beta: float = Field(
        0.3, ge=0.0, allow_inf_nan=False,
        description="β, weight of recency in imp (§3.3.2; value ours, digest Z-A1).",
    )
    gamma: float = Field(
        0.3, ge=0.0, allow_inf_nan=False,
        description="γ, weight of access frequency in imp (§3.3.2; value ours, digest Z-A1). "
        "imp is divided by α+β+γ so it lies in [0, 1] as §3.3.3's (1 - imp) needs.",
    )
    frequency_norm: FrequencyNorm = Field(
        "log",
        description="norm(a): 'log' = min(1, ln(1+a)/ln(1+frequency_ref)) (default: local, "
        "so heap keys need no global re-keying); 'max' = a / max_j a_j over the namespace; "
        "'cap' = min(1, a/frequency_ref) (seed 003).",
    )
    frequency_ref: float = Field(
        10.0, gt=0.0, allow_inf_nan=False,
        description="Access count at which 'log' and 'cap' saturate at 1 (seed 003's "
        "min(access_count/10, 1)).",
    )
    ppr_damping: float = Field(
        0.85, gt=0.0, lt=1.0,
        description="PageRank damping (probability of following an edge); 0.85 is the "
        "standard value (Brin & Page); the seed names PPR without parameters (§3.2.5).",
    )
    ppr_tol: float = Field(
        1e-10, gt=0.0, description="Power iteration stops when the L1 change is below this."
    )
    ppr_max_iter: int = Field(
        200, ge=1, description="Power-iteration cap (0.85^200 ≈ 1e-14, far below ppr_tol)."
    )
    centrality_predicates: tuple[Predicate, ...] = Field(
        CENTRALITY_PREDICATES,
        description="Edge predicates of the semantic ∪ social subgraph used for centrality "
        "(§4.2 'personalized PageRank over E_sem ∪ E_soc').",
    )
    novelty_window: int = Field(
        1024, ge=1,
        description="W: the policies measure novelty against the W most recently written "
        "active memories of the namespace (§5.3 'novelty relative to the current working "
        "set'; ours: exact for n ≤ W, O(n·d) per trigger beyond, see "
        "mars_core.scoring.working_set). novelty_batch itself is the exact all-pairs form.",
    )
    urgency_horizon_hours: float = Field(
        72.0, gt=0.0, allow_inf_nan=False,
        description="h in urgency = priority·e^{-hours_to_deadline/h}. 72 h (ours): a task "
        "due tomorrow keeps 0.72 of its priority, one due in a week 0.10.",
    )

    @model_validator(mode="after")
    def _complete(self) -> DensityConfig:
        for name in ("theta", "lambda_age", "type_weight"):
            table = getattr(self, name)
            missing = [t.value for t in _TYPES if t not in table]
            if missing:
                raise ValueError(f"{name} needs an entry for every memory type; missing {missing}")
        for t, lam in self.lambda_age.items():
            if not (math.isfinite(lam) and lam >= 0):
                raise ValueError(f"lambda_age[{t.value}] must be finite and >= 0")
        for t, tw in self.type_weight.items():
            if not 0.0 <= tw <= 1.0:
                raise ValueError(f"type_weight[{t.value}] must lie in [0, 1]")
        if self.alpha + self.beta + self.gamma <= 0:
            raise ValueError("alpha + beta + gamma must be positive")
        return self

    def theta_table(self) -> FloatArray:
        """θ of every type as a (4, 6) matrix, rows in ``MemoryType`` order."""
        return np.vstack([self.theta[t].as_array() for t in _TYPES])


# --- single features -----------------------------------------------------------------------


def recency(age_steps: float, rate: float) -> float:
    """Exponential recency ``e^{-rate·age}``, age in interaction steps Δn (seed 000 §3.2.6).

    Examples:
        >>> round(recency(20, 0.035), 4)
        0.4966
    """
    return decay.exponential(age_steps, rate)


def access_frequency_batch(
    counts: ArrayLike, mode: FrequencyNorm = "log", ref: float = 10.0,
    max_count: float | None = None,
) -> FloatArray:
    """Normalised access frequency of many nodes, in [0, 1].

    Args:
        counts: access counts a_i >= 0.
        mode: ``log`` (default), ``max`` or ``cap`` (see :class:`DensityConfig`).
        ref: saturation count of ``log`` and ``cap``.
        max_count: the namespace maximum for ``max`` (default: the max of ``counts``).

    Examples:
        >>> access_frequency_batch([0, 10, 100], "log").round(3).tolist()
        [0.0, 1.0, 1.0]
        >>> access_frequency_batch([1, 2, 4], "max").tolist()
        [0.25, 0.5, 1.0]
    """
    a = _vector(counts, "access counts")
    if mode == "log":
        return np.minimum(1.0, np.log1p(a) / math.log1p(ref))
    if mode == "cap":
        return np.minimum(1.0, a / ref)
    if mode == "max":
        top = float(a.max()) if max_count is None and a.size else float(max_count or 0.0)
        if top <= 0:
            return np.zeros_like(a)
        return np.minimum(1.0, a / top)
    raise ValidationError(f"unknown frequency normalisation {mode!r}; use 'log', 'max' or 'cap'")


def access_frequency(
    count: float, mode: FrequencyNorm = "log", ref: float = 10.0,
    max_count: float | None = None,
) -> float:
    """Normalised access frequency norm(a_i) of one node, in [0, 1].

    ``max`` needs ``max_count`` (the namespace maximum); without it the node is its own max.

    Examples:
        >>> round(access_frequency(2), 4), access_frequency(5, "cap")
        (0.4582, 0.5)
        >>> access_frequency(3, "max", max_count=6)
        0.5
    """
    if mode == "max" and max_count is None:
        max_count = count
    return float(access_frequency_batch([count], mode, ref, max_count)[0])


def cosine(a: ArrayLike, b: ArrayLike) -> float:
    """Cosine similarity in [-1, 1]; 0 when either vector is zero.

    Examples:
        >>> round(cosine([1, 0], [1, 1]), 4), cosine([1, 0], [0, 0])
        (0.7071, 0.0)
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0 or ny == 0:
        return 0.0
    return float(np.clip(np.dot(x, y) / (nx * ny), -1.0, 1.0))


def goal_similarity(embedding: ArrayLike, goal: ArrayLike | None) -> float:
    """``sim(φ(c_i), g_t)``: cosine to the goal clipped to [0, 1]; 0 with no goal.

    Examples:
        >>> goal_similarity([1, 0], None), goal_similarity([1, 0], [-1, 0])
        (0.0, 0.0)
        >>> goal_similarity([1, 0], [2, 0])
        1.0
    """
    if goal is None:
        return 0.0
    return max(0.0, cosine(embedding, goal))


def goal_similarity_batch(embeddings: ArrayLike, goal: ArrayLike | None) -> FloatArray:
    """:func:`goal_similarity` for each row of ``embeddings`` (n, d)."""
    x = _matrix(embeddings, "embeddings")
    if goal is None:
        return np.zeros(x.shape[0])
    g = np.asarray(goal, dtype=np.float64).reshape(-1)
    if x.shape[0] and g.shape[0] != x.shape[1]:
        raise ValidationError(f"goal has dimension {g.shape[0]}, embeddings {x.shape[1]}")
    gn = float(np.linalg.norm(g))
    if gn == 0:
        return np.zeros(x.shape[0])
    sims = _unit_rows(x) @ (g / gn)
    return np.clip(sims, 0.0, 1.0)


def novelty(embedding: ArrayLike, others: ArrayLike) -> float:
    """``1 - max(0, max_j cos(φ_i, φ_j))`` over the other working-set embeddings (rows).

    1 when there are no others or none is similar; 0 for an exact duplicate.

    Examples:
        >>> novelty([1, 0], [[1, 0]]), novelty([1, 0], [[0, 1]]), novelty([1, 0], [])
        (0.0, 1.0, 1.0)
    """
    o = np.asarray(others, dtype=np.float64)
    if o.size == 0:
        return 1.0
    o = o.reshape(-1, np.asarray(embedding).size)
    x = np.asarray(embedding, dtype=np.float64).reshape(1, -1)
    sims = _unit_rows(o) @ _unit_rows(x)[0]
    return float(1.0 - np.clip(sims.max(), 0.0, 1.0))


def novelty_batch(embeddings: ArrayLike, *, block: int = _NOVELTY_CHUNK) -> FloatArray:
    """Novelty of every row with respect to the other rows (the working set).

    Computed in blocks of ``block`` rows (an int ≥ 1) so memory stays O(block·n), not
    O(n²); the result does not depend on ``block``.

    Examples:
        >>> novelty_batch([[1, 0], [1, 0], [0, 1]]).tolist()
        [0.0, 0.0, 1.0]
    """
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValidationError(f"block must be an int >= 1, not {block!r}")
    x = _unit_rows(_matrix(embeddings, "embeddings"))
    n = x.shape[0]
    out = np.ones(n)
    if n <= 1:
        return out
    for start in range(0, n, block):
        stop = min(n, start + block)
        sims = x[start:stop] @ x.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        out[start:stop] = 1.0 - np.clip(sims.max(axis=1), 0.0, 1.0)
    return out


def task_urgency(
    priority: float, hours_to_deadline: float | None, horizon_hours: float = 72.0
) -> float:
    """Deadline-weighted urgency ``priority · e^{-max(0, hours_to_deadline)/h}``.

    Overdue tasks (negative hours) keep their full priority; no deadline gives 0.

    Examples:
        >>> task_urgency(0.8, 0), round(task_urgency(1.0, 168), 3), task_urgency(1.0, None)
        (0.8, 0.097, 0.0)
    """
    if not 0.0 <= priority <= 1.0:
        raise ValidationError(f"priority must lie in [0, 1], got {priority!r}")
    if hours_to_deadline is None:
        return 0.0
    if math.isnan(hours_to_deadline):
        raise ValidationError("hours_to_deadline must be a number")
    return priority * decay.exponential(max(0.0, hours_to_deadline), 1.0 / horizon_hours)


def payload_urgency(payload: TaskPayload, now: datetime, horizon_hours: float = 72.0) -> float:
    """Urgency of a task payload at ``now``: 0 when done, cancelled or without a deadline.

    Examples:
        >>> from datetime import UTC, datetime
        >>> p = TaskPayload(priority=0.5, deadline=datetime(2026, 1, 1, tzinfo=UTC))
        >>> payload_urgency(p, datetime(2026, 1, 2, tzinfo=UTC))   # overdue
        0.5
    """
    if payload.status in _CLOSED_TASKS or payload.deadline is None:
        return 0.0
    hours = (payload.deadline - now).total_seconds() / 3600.0
    return task_urgency(payload.priority, hours, horizon_hours)


# --- utility, density, importance ----------------------------------------------------------


def utility(mtype: MemoryType | str, psi: Psi, config: DensityConfig | None = None) -> float:
    """Û_i = θ^(t_i)·ψ_i, with the urgency term only for task nodes (seed 000 §3.2.6).

    Examples:
        >>> only_urgent = Psi(0, 0, 0, 0, 0, 1.0)
        >>> round(utility("task", only_urgent), 3), utility("semantic", only_urgent)
        (0.315, 0.0)
    """
    cfg = config or DensityConfig()
    t = MemoryType(mtype)
    _check_features(psi.as_array())
    theta = cfg.theta[t].as_array()
    x = psi.as_array()
    if t is not MemoryType.TASK:
        x[5] = 0.0
    return float(theta @ x)


def utility_density(
    utility_value: float, sensitivity: float, weight: float, lambda_priv: float
) -> float:
    """``(Û - λ_priv·s)/w`` (seed 000 eq 5/7): utility per token after the privacy penalty.

    Examples:
        >>> utility_density(0.6, 0.4, 10, 0.25)
        0.05
    """
    _check_unit(sensitivity, "sensitivity")
    if not (math.isfinite(weight) and weight > 0):
        raise ValidationError(f"weight must be a finite number > 0, got {weight!r}")
    if not (math.isfinite(lambda_priv) and lambda_priv >= 0):
        raise ValidationError(f"lambda_priv must be finite and >= 0, got {lambda_priv!r}")
    if not math.isfinite(utility_value):
        raise ValidationError("utility must be finite")
    return (utility_value - lambda_priv * sensitivity) / weight


def score(
    mtype: MemoryType | str,
    psi: Psi,
    sensitivity: float,
    weight: float,
    config: DensityConfig | None = None,
) -> float:
    """The density of one node from its features: ``(θ^(t)·ψ - λ_priv·s)/w``."""
    cfg = config or DensityConfig()
    return utility_density(utility(mtype, psi, cfg), sensitivity, weight, cfg.lambda_priv)


def importance(
    mtype: MemoryType | str,
    age_steps: float,
    access_count: float,
    config: DensityConfig | None = None,
    *,
    max_count: float | None = None,
) -> float:
    """Priority-Decay importance ``(α·type_weight + β·recency + γ·frequency)/(α+β+γ)`` in [0, 1].

    Seed 000 §3.3.2 with DESIGN §6; recency and frequency are the density's own
    features (same λ_age per type, same norm()).

    Examples:
        >>> round(importance("semantic", age_steps=0, access_count=0), 3)   # 0.4·1 + 0.3·1
        0.7
    """
    cfg = config or DensityConfig()
    t = MemoryType(mtype)
    rec = recency(age_steps, cfg.lambda_age[t])
    freq = access_frequency(access_count, cfg.frequency_norm, cfg.frequency_ref, max_count)
    total = cfg.alpha + cfg.beta + cfg.gamma
    return (cfg.alpha * cfg.type_weight[t] + cfg.beta * rec + cfg.gamma * freq) / total


def priority_key(importance_value: float, weight: float, sensitivity: float = 0.0,
                 lambda_priv: float = 0.0) -> float:
    """Priority-Decay heap key ``(imp − λ_priv·s)/w``: the density of §5.3 with
    Priority-Decay's importance as Û (§3.3.2, §5.4); smallest goes first. With the
    defaults (no penalty) it is §3.3.2's ``imp/w``.

    Examples:
        >>> priority_key(0.5, 4)
        0.125
        >>> priority_key(0.5, 4, sensitivity=0.8, lambda_priv=0.25)   # (0.5 - 0.2) / 4
        0.075
    """
    if not (math.isfinite(weight) and weight > 0):
        raise ValidationError(f"weight must be a finite number > 0, got {weight!r}")
    _check_unit(sensitivity, "sensitivity")
    if not (math.isfinite(lambda_priv) and lambda_priv >= 0):
        raise ValidationError(f"lambda_priv must be finite and >= 0, got {lambda_priv!r}")
    return (importance_value - lambda_priv * sensitivity) / weight


def removal_priority(sensitivity: float, age: float, importance_value: float) -> float:
    """§3.3.3 ``s·age·(1 - imp)``: highest is removed first by the privacy pass.

    ``imp`` must lie in [0, 1]. The age unit does not matter for the order (scaling every
    age by a constant scales every priority by it); callers use interaction steps Δn.

    Examples:
        >>> removal_priority(0.8, 10, 0.25)
        6.0
    """
    _check_unit(sensitivity, "sensitivity")
    _check_unit(importance_value, "importance")
    if not (math.isfinite(age) and age >= 0):
        raise ValidationError(f"age must be finite and >= 0, got {age!r}")
    return sensitivity * age * (1.0 - importance_value)


@dataclass(frozen=True)
class DensityBatch:
    """Result of :func:`density_batch`: ψ (n, 6), Û (n,) and the density (n,).

    Examples:
        >>> b = density_batch(["task"], [0], [0], [0.0], [1], urgency=[1.0])
        >>> b.psi(0).urgency, round(float(b.utility[0]), 3)
        (1.0, 0.405)
    """

    features: FloatArray
    utility: FloatArray
    density: FloatArray

    def psi(self, i: int) -> Psi:
        """The features of node ``i`` (e.g. for an audit record)."""
        return Psi(*(float(v) for v in self.features[i]))


def density_batch(
    types: Sequence[MemoryType | str] | NDArray[np.integer],
    age_steps: ArrayLike,
    access_counts: ArrayLike,
    sensitivity: ArrayLike,
    weights: ArrayLike,
    *,
    embeddings: ArrayLike | None = None,
    goal: ArrayLike | None = None,
    adjacency: ArrayLike | SparseAdjacency | None = None,
    personalization: ArrayLike | None = None,
    urgency: ArrayLike | None = None,
    config: DensityConfig | None = None,
    goal_similarity: ArrayLike | None = None,
    novelty: ArrayLike | None = None,
) -> DensityBatch:
    """ψ, Û and density of a whole working set at once (vectorised eq 5/7).

    Args:
        types: memory type of each node.
        age_steps: interaction steps since each node was written (Δn >= 0).
        access_counts: access counts a_i >= 0 (``max`` norm uses the max of these).
        sensitivity: s_i in [0, 1].
        weights: token cost w_i > 0.
        embeddings: (n, d) content embeddings; needed for goal similarity and novelty
            (both 0 without them).
        goal: the active goal embedding g_t (goal similarity 0 without it).
        adjacency: the semantic ∪ social graph over the same n nodes (centrality 0
            without it); see :meth:`SparseAdjacency.from_edges`.
        personalization: PPR restart weights; default: goal similarity + urgency when
            any is positive, else uniform.
        urgency: per-node deadline urgency in [0, 1] (e.g. from :func:`payload_urgency`);
            only task nodes use it.
        config: constants (default :class:`DensityConfig`).
        goal_similarity: precomputed goal similarity in [0, 1] per node (used instead of
            computing it from ``embeddings`` and ``goal``).
        novelty: precomputed novelty in [0, 1] per node, e.g. the bounded working-set
            novelty of :class:`~mars_core.scoring.working_set.WorkingSetCache` (used
            instead of the exact all-pairs :func:`novelty_batch`).

    ``types`` may also be an integer array of indices into ``MemoryType`` (the column
    form the working-set cache keeps), which skips a per-node conversion.

    Raises:
        ValidationError: inconsistent lengths or out-of-range values.
    """
    cfg = config or DensityConfig()
    idx = _type_index(types)
    n = idx.shape[0]
    age = _vector(age_steps, "age_steps", n)
    counts = _vector(access_counts, "access_counts", n)
    s = _vector(sensitivity, "sensitivity", n)
    w = _vector(weights, "weights", n)
    if np.any(s > 1.0):
        raise ValidationError("sensitivity must lie in [0, 1]")
    if np.any(w <= 0):
        raise ValidationError("weights must be > 0")
    is_task = idx == _TASK_INDEX
    urg = np.zeros(n) if urgency is None else _vector(urgency, "urgency", n)
    if np.any(urg > 1.0):
        raise ValidationError("urgency must lie in [0, 1]")
    urg = np.where(is_task, urg, 0.0)

    lam = np.array([cfg.lambda_age[t] for t in _TYPES])[idx]
    feats = np.zeros((n, len(FEATURE_NAMES)))
    feats[:, 0] = np.exp(-lam * age)
    feats[:, 1] = access_frequency_batch(counts, cfg.frequency_norm, cfg.frequency_ref)
    if embeddings is not None:
        emb = _matrix(embeddings, "embeddings")
        if emb.shape[0] != n:
            raise ValidationError(f"embeddings have {emb.shape[0]} rows for {n} nodes")
        feats[:, 2] = goal_similarity_batch(emb, goal)
        if novelty is None:
            feats[:, 4] = novelty_batch(emb)
    for col, given, name in ((2, goal_similarity, "goal_similarity"), (4, novelty, "novelty")):
        if given is not None:
            feats[:, col] = _unit_vector(given, name, n)
    if adjacency is not None:
        g = _as_sparse(adjacency)
        if g.n != n:
            raise ValidationError(f"adjacency has {g.n} nodes, expected {n}")
        if personalization is None:
            personalization = feats[:, 2] + urg
        feats[:, 3] = centrality(g, personalization, damping=cfg.ppr_damping,
                                 tol=cfg.ppr_tol, max_iter=cfg.ppr_max_iter)
    feats[:, 5] = urg
    util = np.einsum("ij,ij->i", cfg.theta_table()[idx], feats)
    dens = (util - cfg.lambda_priv * s) / w
    return DensityBatch(features=feats, utility=util, density=dens)


def importance_batch(
    types: Sequence[MemoryType | str],
    age_steps: ArrayLike,
    access_counts: ArrayLike,
    config: DensityConfig | None = None,
) -> FloatArray:
    """:func:`importance` of many nodes (``max`` norm uses the max of ``access_counts``).

    Examples:
        >>> importance_batch(["semantic", "episodic"], [0, 0], [0, 0]).round(2).tolist()
        [0.7, 0.5]
    """
    cfg = config or DensityConfig()
    idx = np.array([_TYPES.index(MemoryType(t)) for t in types], dtype=np.int64)
    n = idx.shape[0]
    age = _vector(age_steps, "age_steps", n)
    counts = _vector(access_counts, "access_counts", n)
    lam = np.array([cfg.lambda_age[t] for t in _TYPES])[idx]
    tw = np.array([cfg.type_weight[t] for t in _TYPES])[idx]
    freq = access_frequency_batch(counts, cfg.frequency_norm, cfg.frequency_ref)
    total = cfg.alpha + cfg.beta + cfg.gamma
    result: FloatArray = (cfg.alpha * tw + cfg.beta * np.exp(-lam * age) + cfg.gamma * freq) / total
    return result


# --- helpers -------------------------------------------------------------------------------


def _type_index(types: Sequence[MemoryType | str] | NDArray[np.integer]) -> NDArray[np.int64]:
    """Indices into ``MemoryType`` of ``types`` (names, members, or indices already)."""
    if isinstance(types, np.ndarray) and np.issubdtype(types.dtype, np.integer):
        idx = types.astype(np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(_TYPES)):
            raise ValidationError(f"type indices must lie in [0, {len(_TYPES)})")
        return idx
    return np.array([_TYPES.index(MemoryType(t)) for t in types], dtype=np.int64)
