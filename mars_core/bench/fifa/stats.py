"""Statistics for FiFA in numpy only: bootstrap intervals, Wilcoxon, Holm–Bonferroni.

* :func:`bootstrap_ci` — percentile bootstrap of the mean over clusters (seeds), with a
  seeded generator, so the report is reproducible.
* :func:`wilcoxon` — the paired signed-rank test (zero differences dropped, tied ranks
  averaged). The p-value is exact (the null distribution of the rank sum enumerated by
  dynamic programming over doubled ranks, so ties stay exact) up to ``exact_max`` pairs,
  and the normal approximation with tie and continuity corrections beyond.
* :func:`holm` — Holm–Bonferroni step-down adjusted p-values.
* :func:`effect_size` — paired Cohen's d (d_z: mean difference over the standard
  deviation of the differences) with Hedges' small-sample correction
  J = 1 − 3 / (4(n − 1) − 1), and the paired t statistic, as seed 000 Table 4 reports them
  (positive favours the first sample).

Example:
    >>> round(wilcoxon([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.0] * 6).p, 5)
    0.03125
    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    >>> e = effect_size([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 2.0])
    >>> round(e.d, 3), round(e.t, 3), e.label
    (1.029, 2.828, 'large')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mars_core.errors import ValidationError

__all__ = ["EffectSize", "Interval", "WilcoxonResult", "bootstrap_ci", "effect_size", "holm",
           "wilcoxon"]


@dataclass(frozen=True)
class Interval:
    """A mean with a 95% (by default) bootstrap interval."""

    mean: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (the ± of seed 000 Table 2)."""
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class WilcoxonResult:
    """A paired signed-rank test: W+ (rank sum of positive differences), n non-zero pairs,
    the two-sided p-value, the method used and the median difference (x − y)."""

    w_plus: float
    n: int
    p: float
    method: str
    median_diff: float


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, resamples: int = 2000,
                 seed: int = 0) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (one value per cluster).

    Raises:
        ValidationError: no values, or a level outside (0, 1).
    """
    if not values:
        raise ValidationError("bootstrap_ci needs at least one value")
    if not 0 < level < 1:
        raise ValidationError("level must be in (0, 1)")
    x = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(x.mean()), float(lo), float(hi))


def _ranks(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks 1..n of ``a`` with ties averaged."""
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a), dtype=np.float64)
    sorted_a = a[order]
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _exact_p(doubled: Sequence[int], w2: int) -> float:
    """Two-sided exact p of the doubled rank sum ``w2`` under the sign-flip null."""
    total = sum(doubled)
    counts = np.zeros(total + 1, dtype=np.float64)
    counts[0] = 1.0
    for r in doubled:
        counts[r:] = counts[r:] + counts[:-r].copy() if r else counts * 2
    probs = counts / counts.sum()
    mean = total / 2
    dev = abs(w2 - mean)
    idx = np.arange(total + 1)
    return float(min(1.0, probs[np.abs(idx - mean) >= dev - 1e-9].sum()))


def wilcoxon(x: Sequence[float], y: Sequence[float], *, exact_max: int = 60) -> WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test of paired samples ``x`` and ``y``.

    Raises:
        ValidationError: different lengths.
    """
    if len(x) != len(y):
        raise ValidationError("wilcoxon needs paired samples of equal length")
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    median = float(np.median(d)) if len(d) else 0.0
    d = d[np.abs(d) > 1e-12]
    n = len(d)
    if n == 0:
        return WilcoxonResult(0.0, 0, 1.0, "no-difference", median)
    r = _ranks(np.abs(d))
    w_plus = float(r[d > 0].sum())
    if n <= exact_max:
        doubled = [round(2 * v) for v in r]
        return WilcoxonResult(w_plus, n, _exact_p(doubled, round(2 * w_plus)), "exact",
                              median)
    _, tie_counts = np.unique(r, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - float(((tie_counts ** 3) - tie_counts).sum()) / 48
    z = (abs(w_plus - n * (n + 1) / 4) - 0.5) / math.sqrt(var) if var > 0 else 0.0
    return WilcoxonResult(w_plus, n, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))),
                          "normal", median)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (same order as given), monotone and ≤ 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        adjusted[i] = round(running, 12)
    return adjusted


@dataclass(frozen=True)
class EffectSize:
    """Paired effect size: Hedges-corrected Cohen's d_z, the paired t, pairs, and a label
    (negligible < 0.2 ≤ small < 0.5 ≤ medium < 0.8 ≤ large, on |d|). ``d`` and ``t`` are
    ``None`` when undefined (fewer than two pairs, or differences with no spread)."""

    d: float | None
    t: float | None
    n: int
    label: str


def _label(d: float | None) -> str:
    if d is None:
        return "undefined"
    a = abs(d)
    return "negligible" if a < 0.2 else "small" if a < 0.5 else "medium" if a < 0.8 else "large"


def effect_size(x: Sequence[float], y: Sequence[float]) -> EffectSize:
    """Cohen's d of paired samples with Hedges' correction, and the paired t statistic.

    Raises:
        ValidationError: different lengths.
    """
    if len(x) != len(y):
        raise ValidationError("effect_size needs paired samples of equal length")
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    n = len(d)
    sd = float(d.std(ddof=1)) if n >= 2 else 0.0
    if n < 2 or sd <= 1e-12:
        return EffectSize(None, None, n, "undefined")
    mean = float(d.mean())
    hedges = 1.0 - 3.0 / (4.0 * (n - 1) - 1.0)
    dz = mean / sd * hedges
    return EffectSize(dz, mean / (sd / math.sqrt(n)), n, _label(dz))
