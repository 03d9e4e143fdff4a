"""OSL-MR's per-step retention reward and its behaviour-cloning teacher (seed 001 §3.2, §3.5).

At step ``t`` a policy keeps ``A_t`` (sizes ``s_i``, ``Σ s_i ≤ B_t``); the query then demands
the evidence ``E_t``, each item ``e`` weighing ``τ(e)`` tokens, and memory ``i`` covers
``cov(i)``. With ``Cov_t = E_t ∩ ⋃_{i∈A_t} cov(i)`` (§3.2):

* ``T_hit = Σ_{e∈E_t} τ(e)·1[e ∈ Cov_t]``, ``T_miss = Σ_{e∈E_t} τ(e)·1[e ∉ Cov_t]``,
* ``T_reacq = Σ_{e∈E_t∖Cov_t} τ(e)·1[e recoverable]``,
* ``T_stale = Σ_{i∈A_t} s_i·1[m_i stale and used]``, ``F_t = 1[E_t ⊆ Cov_t]``,

    r_t = α_hit·T_hit + α_full·F_t − α_store·Σ_{i∈A_t} s_i − α_miss·T_miss
          − α_reacq·T_reacq − α_stale·T_stale

with the §4.1 defaults α_hit 4, α_full 64, α_store 1, α_miss 12, α_reacq 6, α_stale 6.
Tables report ``shifted = raw + C`` (§4.1: C = 606.134 on LoCoMo, 5561.92 on LongMemEval,
"purely cosmetic"; :data:`LOCOMO_SHIFT`, :data:`LONGMEMEVAL_SHIFT`).

The paper leaves three things to the implementation; ours, stated where they are used:
``cov(i) = {i}`` unless a coverage map is given (a LoCoMo turn is its own evidence id);
*recoverable* evidence is what can be fetched again (a turn of the log, a memory in the
archive), every missed item unless told otherwise; *stale and used* is passed in by the
caller (the benchmark: a retained evidence memory whose freshness proxy is below
θ_stale — the answer uses it, and it may be out of date).

The behaviour-cloning teacher (§3.5, :func:`swap_teacher`) starts from a selection (the
Mixed-Score's), and swaps one retained memory for an omitted one while a swap raises
``r_t`` and keeps the budget; it needs the gold evidence (OAS), so it only labels
training data.

Examples:
    >>> t = step_reward(["a", "b"], {"a": 10, "b": 20, "c": 5}, {"a": 10, "c": 5})
    >>> t.hit, t.miss, t.reacq, t.full, t.stored
    (10.0, 5.0, 5.0, 0, 30.0)
    >>> t.raw        # 4*10 + 0 - 30 - 12*5 - 6*5 - 0
    -80.0
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pydantic
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field

from mars_core.errors import ConfigError, ValidationError

__all__ = [
    "LOCOMO_SHIFT",
    "LONGMEMEVAL_SHIFT",
    "RewardConfig",
    "RewardTerms",
    "item_values",
    "step_reward",
    "swap_teacher",
]

LOCOMO_SHIFT = 606.134
"""The shift C of seed 001 Table 2 (LoCoMo): its worst row, Recency at budget 128, is 0."""

LONGMEMEVAL_SHIFT = 5561.92
"""The shift C of seed 001 Table 3 (LongMemEval)."""


class RewardConfig(BaseModel):
    """The reward coefficients of seed 001 §3.2 with the §4.1 defaults.

    Raises:
        ConfigError: a negative or non-finite coefficient, or an unknown field.

    Examples:
        >>> c = RewardConfig()
        >>> c.alpha_miss + c.alpha_reacq, c.alpha_full
        (18.0, 64.0)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ConfigError.from_pydantic(exc, "reward configuration") from None

    alpha_hit: float = Field(4.0, ge=0.0, allow_inf_nan=False,
                             description="Reward per token of covered evidence (§4.1: 4).")
    alpha_full: float = Field(64.0, ge=0.0, allow_inf_nan=False,
                              description="Bonus when every demanded item is covered (64).")
    alpha_store: float = Field(1.0, ge=0.0, allow_inf_nan=False,
                               description="Cost per retained token, the unit (1).")
    alpha_miss: float = Field(12.0, ge=0.0, allow_inf_nan=False,
                              description="Penalty per token of missed evidence (12).")
    alpha_reacq: float = Field(6.0, ge=0.0, allow_inf_nan=False,
                               description="Penalty per token of missed but recoverable "
                               "evidence: the cost of fetching it again (6).")
    alpha_stale: float = Field(6.0, ge=0.0, allow_inf_nan=False,
                               description="Penalty per token of a retained memory that is "
                               "stale and used (6).")
    shift: float = Field(0.0, allow_inf_nan=False,
                         description="C of ``shifted = raw + C`` (§4.1; LOCOMO_SHIFT for "
                         "the paper's Table 2).")


@dataclass(frozen=True)
class RewardTerms:
    """The terms of one step's reward (token-weighted, §3.2) and the total.

    Attributes:
        hit: T_hit. miss: T_miss. reacq: T_reacq. stale: T_stale.
        full: F_t (0 or 1). stored: Σ_{i∈A_t} s_i.
        raw: r_t. shifted: r_t + C.
    """

    hit: float
    miss: float
    reacq: float
    stale: float
    full: int
    stored: float
    raw: float
    shifted: float

    def as_dict(self) -> dict[str, float]:
        """The terms as a JSON-able mapping (for the training trace)."""
        return {k: float(v) for k, v in asdict(self).items()}


def _check_amounts(name: str, values: Mapping[str, float]) -> None:
    for key, v in values.items():
        if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
            raise ValidationError(f"{name}[{key!r}] must be a finite number >= 0, got {v!r}")


def step_reward(
    retained: Collection[str],
    sizes: Mapping[str, float],
    evidence: Mapping[str, float],
    *,
    coverage: Mapping[str, Collection[str]] | None = None,
    recoverable: Collection[str] | None = None,
    stale_used: Collection[str] = (),
    config: RewardConfig | None = None,
) -> RewardTerms:
    """The reward ``r_t`` of keeping ``retained`` when the query demands ``evidence``.

    Args:
        retained: the ids of A_t.
        sizes: s_i of (at least) every retained id, in tokens.
        evidence: E_t, each demanded item with its weight τ(e) in tokens.
        coverage: cov(i) per memory id; an id without an entry covers itself.
        recoverable: the demanded items that can be fetched again when missed;
            ``None``: every one (a log or an archive keeps them).
        stale_used: retained ids that are stale and used (others are ignored).
        config: the coefficients and the shift.

    Raises:
        ValidationError: a retained id without a size, or a negative or non-finite
            size or weight.

    Examples:
        >>> t = step_reward(["a"], {"a": 8}, {"a": 8})
        >>> t.hit, t.full, t.raw     # 4*8 + 64 - 8
        (8.0, 1, 88.0)
    """
    cfg = config or RewardConfig()
    kept = set(retained)
    missing = sorted(kept - set(sizes))
    if missing:
        raise ValidationError(f"no size for retained ids {missing[:5]}")
    _check_amounts("sizes", {i: sizes[i] for i in kept})
    _check_amounts("evidence", evidence)
    covered: set[str] = set()
    for i in kept:
        covered.update(coverage.get(i, (i,)) if coverage is not None else (i,))
    hit = sum(float(w) for e, w in evidence.items() if e in covered)
    missed = {e: float(w) for e, w in evidence.items() if e not in covered}
    miss = sum(missed.values())
    reacq = sum(w for e, w in missed.items() if recoverable is None or e in recoverable)
    stale = sum(float(sizes[i]) for i in kept & set(stale_used))
    full = int(not missed)
    stored = sum(float(sizes[i]) for i in kept)
    raw = (cfg.alpha_hit * hit + cfg.alpha_full * full - cfg.alpha_store * stored
           - cfg.alpha_miss * miss - cfg.alpha_reacq * reacq - cfg.alpha_stale * stale)
    return RewardTerms(hit, miss, reacq, stale, full, stored, raw, raw + cfg.shift)


FloatArray = npt.NDArray[np.float64]


def item_values(sizes: ArrayLike, tau: ArrayLike, recoverable: ArrayLike,
                stale_used: ArrayLike, config: RewardConfig | None = None) -> FloatArray:
    """Each memory's own share of ``r_t`` when it is kept and covers only itself.

    With ``cov(i) = {i}`` the reward is additive except for the full-coverage bonus:
    ``r_t = Σ_{i∈A_t} v_i − Σ_{e∈E_t} (α_miss + α_reacq·rec_e)·τ_e + α_full·F_t`` with
    ``v_i = (α_hit + α_miss + α_reacq·rec_i)·τ_i − α_store·s_i − α_stale·s_i·su_i``
    (``τ_i = 0`` for a memory that is not demanded evidence).

    Examples:
        >>> item_values([10, 5], [10, 0], [True, True], [False, False]).tolist()
        [210.0, -5.0]
    """
    cfg = config or RewardConfig()
    s = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(tau, dtype=np.float64)
    rec = np.asarray(recoverable, dtype=bool)
    su = np.asarray(stale_used, dtype=bool)
    if not (s.shape == t.shape == rec.shape == su.shape) or s.ndim != 1:
        raise ValidationError("sizes, tau, recoverable and stale_used must be equal-length")
    gain = (cfg.alpha_hit + cfg.alpha_miss + cfg.alpha_reacq * rec) * t
    result: FloatArray = gain - cfg.alpha_store * s - cfg.alpha_stale * s * su
    return result


def swap_teacher(
    start: Sequence[int],
    sizes: ArrayLike,
    tau: ArrayLike,
    budget: float,
    *,
    recoverable: ArrayLike | None = None,
    stale_used: ArrayLike | None = None,
    demanded: int | None = None,
    config: RewardConfig | None = None,
) -> list[int]:
    """The §3.5 teacher: swap one kept memory for an omitted one while ``r_t`` rises.

    Each round evaluates every (kept, omitted) pair that stays within ``budget`` and
    makes the swap that raises the reward most (ties: the lowest kept index, then the
    lowest omitted one); it stops when no swap raises it. Memories cover only
    themselves (``cov(i) = {i}``).

    Args:
        start: the indices of the starting selection (the Mixed-Score's).
        sizes: s_i of every memory of the pool.
        tau: τ_i, the evidence weight of memory i (0 for memories not demanded).
        budget: B_t; the start must fit it.
        recoverable: per memory, whether it can be fetched again (default: all).
        stale_used: per memory, stale and used when kept (default: none).
        demanded: |E_t| when some demanded items are in no memory of the pool (then
            full coverage is impossible); default: the memories with ``τ > 0``.
        config: the coefficients.

    Returns:
        The teacher's selection, sorted.

    Raises:
        ValidationError: the start exceeds the budget, repeats or is out of range.

    Examples:
        >>> swap_teacher([0, 1], [10, 10, 10, 4], [0, 0, 10, 0], 20)
        [2, 3]
    """
    cfg = config or RewardConfig()
    s = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(tau, dtype=np.float64)
    n = len(s)
    rec = np.ones(n, bool) if recoverable is None else np.asarray(recoverable, bool)
    su = np.zeros(n, bool) if stale_used is None else np.asarray(stale_used, bool)
    v = item_values(s, t, rec, su, cfg)
    is_ev = t > 0
    need = int(is_ev.sum()) if demanded is None else int(demanded)
    kept = np.zeros(n, bool)
    idx = list(start)
    if len(set(idx)) != len(idx) or any(not 0 <= i < n for i in idx):
        raise ValidationError("start must hold distinct indices of the pool")
    kept[idx] = True
    used = float(s[kept].sum())
    if used > budget + 1e-9:
        raise ValidationError(f"the start uses {used} > budget {budget}")
    while True:
        ins, outs = np.flatnonzero(kept), np.flatnonzero(~kept)
        if not len(ins) or not len(outs):
            break
        covered = int(is_ev[kept].sum())
        full_now = covered == need
        new_cov = covered - is_ev[ins][:, None].astype(int) + is_ev[outs][None, :].astype(int)
        delta = (v[outs][None, :] - v[ins][:, None]
                 + cfg.alpha_full * ((new_cov == need).astype(float) - float(full_now)))
        fits = used - s[ins][:, None] + s[outs][None, :] <= budget + 1e-9
        delta = np.where(fits, delta, -np.inf)
        best = int(np.argmax(delta))
        if not delta.flat[best] > 1e-9:
            break
        a, b = divmod(best, len(outs))
        kept[ins[a]], kept[outs[b]] = False, True
        used += float(s[outs[b]] - s[ins[a]])
    return [int(i) for i in np.flatnonzero(kept)]
