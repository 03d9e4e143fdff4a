"""FiFA's statistics, by scipy and statsmodels (the ``bench`` extra), as seed 000 §6.3.2 and
§6.4.2 specify them.

* :func:`bootstrap_ci` — percentile bootstrap of the mean over clusters (seeds),
  ``scipy.stats.bootstrap`` with a seeded generator (reproducible reports).
* :func:`wilcoxon` — the paired signed-rank test, ``scipy.stats.wilcoxon``.
* :func:`adjust` — Holm–Bonferroni and Benjamini–Hochberg adjusted p-values,
  ``statsmodels.stats.multitest.multipletests``.
* :func:`effect_size` — paired Cohen's d (d_z: mean difference over the standard deviation of
  the differences) with Hedges' correction J = 1 − 3 / (4(n − 1) − 1), and the paired t
  (``scipy.stats.ttest_rel``), as seed 000 Table 4 reports them (positive favours the first).
* :func:`cliffs_delta` — Cliff's δ = P(X > Y) − P(X < Y), from the Mann–Whitney U of
  ``scipy.stats.mannwhitneyu`` (δ = 2U/(nm) − 1; scipy has no Cliff's δ of its own).
* :func:`mcnemar_paired` — McNemar's exact test of paired binary outcomes,
  ``statsmodels.stats.contingency_tables.mcnemar``.
* :func:`mixed_anova` — the linear mixed-effects ANOVA of §6.4.2: fixed Budget, Policy and
  their interaction (sum-to-zero contrasts, so main effects are averaged over the other
  factor), random intercepts for Scenario and Seed (crossed variance components),
  ``statsmodels.formula.api.mixedlm``, REML; Wald tests per term. η² and partial η² come
  from the type-III sums of squares of the same fixed effects with Scenario and Seed as
  blocks (``statsmodels.formula.api.ols`` and ``anova_lm``).

Example:
    >>> round(wilcoxon([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.0] * 6).p, 5)
    0.03125
    >>> [round(p, 3) for p in adjust([0.01, 0.04, 0.03], "holm")]
    [0.03, 0.06, 0.06]
    >>> e = effect_size([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 2.0])
    >>> round(e.d, 3), round(e.t, 3), e.label
    (1.029, 2.828, 'large')
    >>> cliffs_delta([3.0, 4.0], [1.0, 2.0]).delta
    1.0
"""

from __future__ import annotations

import gc
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mars_core.errors import ExtraNotInstalledError, ValidationError

__all__ = ["AnovaResult", "AnovaTerm", "CliffsDelta", "EffectSize", "Interval",
           "McNemarResult", "WilcoxonResult", "adjust", "bootstrap_ci", "cliffs_delta",
           "effect_size", "kendall_tau", "mcnemar_paired", "mixed_anova", "wilcoxon"]


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError as exc:
        raise ExtraNotInstalledError("bench", "scipy") from exc
    return stats


def _statsmodels(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(f"statsmodels.{name}")
    except ImportError as exc:
        raise ExtraNotInstalledError("bench", "statsmodels") from exc


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
    mean = float(x.mean())
    if len(x) < 2 or float(np.ptp(x)) == 0.0:
        return Interval(mean, mean, mean)  # nothing to resample: a degenerate interval
    res = _scipy_stats().bootstrap((x,), np.mean, confidence_level=level,
                                   n_resamples=resamples, method="percentile",
                                   rng=np.random.default_rng(seed))
    return Interval(mean, float(res.confidence_interval.low),
                    float(res.confidence_interval.high))


@dataclass(frozen=True)
class WilcoxonResult:
    """A paired signed-rank test: W+ (rank sum of positive differences), n non-zero pairs,
    the two-sided p-value, scipy's method and the median difference (x − y)."""

    w_plus: float
    n: int
    p: float
    method: str
    median_diff: float


def wilcoxon(x: Sequence[float], y: Sequence[float]) -> WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test of paired samples (zero differences dropped;
    scipy's ``method="auto"``: exact for up to 50 pairs without ties, an exhaustive
    permutation for up to 13 pairs with ties, the normal approximation otherwise).

    Raises:
        ValidationError: different lengths.
    """
    if len(x) != len(y):
        raise ValidationError("wilcoxon needs paired samples of equal length")
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    median = float(np.median(d)) if len(d) else 0.0
    d = d[np.abs(d) > 1e-12]
    if len(d) == 0:
        return WilcoxonResult(0.0, 0, 1.0, "no-difference", median)
    st = _scipy_stats()
    res = st.wilcoxon(d, zero_method="wilcox", alternative="two-sided", method="auto")
    ranks = st.rankdata(np.abs(d))
    ties = len(np.unique(np.abs(d))) < len(d)
    # scipy's "auto": exact without ties up to 50 pairs, an exhaustive permutation with
    # ties up to 13, the normal approximation otherwise
    method = "normal" if len(d) > 50 else "exact" if not ties else \
        "permutation" if len(d) <= 13 else "normal"
    return WilcoxonResult(float(ranks[d > 0].sum()), len(d), float(res.pvalue), method, median)


def adjust(pvalues: Sequence[float], method: Literal["holm", "fdr_bh"]) -> list[float]:
    """Adjusted p-values (same order): ``"holm"`` (Holm–Bonferroni, family-wise error) or
    ``"fdr_bh"`` (Benjamini–Hochberg false discovery rate).

    Raises:
        ValidationError: an unknown method.
    """
    if method not in ("holm", "fdr_bh"):
        raise ValidationError(f"unknown adjustment {method!r}; use 'holm' or 'fdr_bh'")
    if not pvalues:
        return []
    multipletests = _statsmodels("stats.multitest").multipletests
    with _collection_of_new_objects_only():
        adjusted = multipletests(list(pvalues), alpha=0.05, method=method)[1]
    return [float(p) for p in adjusted]


@contextmanager
def _collection_of_new_objects_only() -> Iterator[None]:
    """Objects alive on entry are left out of garbage collections until exit.

    statsmodels' Holm adjustment ends with a full ``gc.collect()``, which walks every
    object of the process: 0.1 s a call in a fresh ``mars bench fifa``, several times that
    in a long-lived process (a notebook, a test worker), and a report makes dozens of
    calls. Frozen objects are not walked (``gc.freeze``); nothing is collected less —
    they are unfrozen on exit, where the next automatic collection sees them again.

    A process that froze objects itself (a server that forks after loading) keeps them
    frozen: there, and in a second thread inside this block, nothing is frozen or
    unfrozen (``gc.unfreeze`` cannot tell whose objects it releases).
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass(frozen=True)
class EffectSize:
    """Paired effect size: Hedges-corrected Cohen's d_z, the paired t and its two-sided p,
    pairs, and a label (negligible < 0.2 ≤ small < 0.5 ≤ medium < 0.8 ≤ large, on |d|).
    ``d``, ``t`` and ``p`` are ``None`` when undefined (fewer than two pairs, or
    differences with no spread)."""

    d: float | None
    t: float | None
    n: int
    label: str
    p: float | None = None


def _label(d: float | None) -> str:
    if d is None:
        return "undefined"
    a = abs(d)
    return "negligible" if a < 0.2 else "small" if a < 0.5 else "medium" if a < 0.8 else "large"


def effect_size(x: Sequence[float], y: Sequence[float]) -> EffectSize:
    """Cohen's d of paired samples with Hedges' correction, and the paired t test.

    Raises:
        ValidationError: different lengths.
    """
    if len(x) != len(y):
        raise ValidationError("effect_size needs paired samples of equal length")
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    d = a - b
    n = len(d)
    sd = float(d.std(ddof=1)) if n >= 2 else 0.0
    if n < 2 or sd <= 1e-12:
        return EffectSize(None, None, n, "undefined")
    hedges = 1.0 - 3.0 / (4.0 * (n - 1) - 1.0)
    dz = float(d.mean()) / sd * hedges
    res = _scipy_stats().ttest_rel(a, b)
    return EffectSize(dz, float(res.statistic), n, _label(dz), float(res.pvalue))


@dataclass(frozen=True)
class CliffsDelta:
    """Cliff's δ ∈ [−1, 1] (positive: the first sample tends to be larger), the two-sided
    Mann–Whitney p, and Romano et al.'s label (negligible < 0.147 ≤ small < 0.33 ≤ medium
    < 0.474 ≤ large, on |δ|)."""

    delta: float
    p: float
    label: str


def cliffs_delta(x: Sequence[float], y: Sequence[float]) -> CliffsDelta:
    """Cliff's δ of two samples via ``scipy.stats.mannwhitneyu``: δ = 2·U_x / (n·m) − 1.

    Raises:
        ValidationError: an empty sample.
    """
    if not x or not y:
        raise ValidationError("cliffs_delta needs two non-empty samples")
    res = _scipy_stats().mannwhitneyu(np.asarray(x, dtype=np.float64),
                                      np.asarray(y, dtype=np.float64),
                                      alternative="two-sided")
    delta = 2.0 * float(res.statistic) / (len(x) * len(y)) - 1.0
    a = abs(delta)
    label = "negligible" if a < 0.147 else "small" if a < 0.33 else \
        "medium" if a < 0.474 else "large"
    p = float(res.pvalue)
    return CliffsDelta(delta, 1.0 if math.isnan(p) else p, label)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Kendall's τ-b between two rankings and its two-sided p (``scipy.stats.kendalltau``).

    Raises:
        ValidationError: different lengths or fewer than two items.
    """
    if len(x) != len(y) or len(x) < 2:
        raise ValidationError("kendall_tau needs two rankings of the same length (≥ 2)")
    res = _scipy_stats().kendalltau(list(x), list(y))
    return float(res.statistic), float(res.pvalue)


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test of paired binary outcomes: the 2×2 table
    ``[[both, only_a], [only_b, neither]]``, the exact two-sided p, the risk difference
    P(a) − P(b) and the discordant odds ratio only_a / only_b (``None`` when only_b = 0)."""

    table: tuple[tuple[int, int], tuple[int, int]]
    p: float
    risk_difference: float
    odds_ratio: float | None


def mcnemar_paired(a: Sequence[bool], b: Sequence[bool]) -> McNemarResult:
    """McNemar's exact test (binomial on the discordant pairs) of paired outcomes.

    Raises:
        ValidationError: different lengths or no pairs.
    """
    if len(a) != len(b) or not a:
        raise ValidationError("mcnemar_paired needs paired outcomes of equal, non-zero length")
    both = sum(1 for u, v in zip(a, b, strict=True) if u and v)
    only_a = sum(1 for u, v in zip(a, b, strict=True) if u and not v)
    only_b = sum(1 for u, v in zip(a, b, strict=True) if v and not u)
    neither = len(a) - both - only_a - only_b
    table = ((both, only_a), (only_b, neither))
    if only_a + only_b == 0:
        p = 1.0
    else:
        mcnemar = _statsmodels("stats.contingency_tables").mcnemar
        p = float(mcnemar([list(r) for r in table], exact=True).pvalue)
    return McNemarResult(table, p, (only_a - only_b) / len(a),
                         None if only_b == 0 else only_a / only_b)


@dataclass(frozen=True)
class AnovaTerm:
    """One fixed-effect term of the mixed model: the Wald χ² and its degrees of freedom,
    F = χ² / df, the p-value (χ² reference), and η² and partial η² from type-III sums of
    squares."""

    term: str
    chi2: float
    df: int
    f: float
    p: float
    eta2: float
    partial_eta2: float


@dataclass(frozen=True)
class AnovaResult:
    """A metric's mixed-effects ANOVA: its terms, the variance components (Scenario, Seed)
    and residual variance, the number of rows, whether REML converged, and ``boundary``:
    a variance component was estimated at zero (below 1e-8 of the residual variance)."""

    metric: str
    terms: tuple[AnovaTerm, ...]
    variance: Mapping[str, float]
    rows: int
    converged: bool
    boundary: bool

    def term(self, name: str) -> AnovaTerm | None:
        """The term called ``name`` (``policy``, ``budget``, ``policy:budget``), if fitted."""
        return next((t for t in self.terms if t.term == name), None)


_FACTORS = ("policy", "budget")
_RANDOM = ("scenario", "seed")


def mixed_anova(rows: Sequence[Mapping[str, Any]], metric: str) -> AnovaResult | None:
    """Fit §6.4.2's model to ``rows`` (dicts with ``policy``, ``budget``, ``scenario``,
    ``seed`` and the metric's value ``y``), or ``None`` when there is nothing to test (fewer
    than two policies, fewer than two levels of both random factors, or a constant metric).

    Raises:
        ExtraNotInstalledError: statsmodels (the ``bench`` extra) is not installed.
    """
    pd = _pandas()
    frame = pd.DataFrame([{k: r[k] for k in (*_FACTORS, *_RANDOM, "y")} for r in rows])
    if frame.empty:
        return None
    for k in (*_FACTORS, *_RANDOM):
        frame[k] = frame[k].astype(str)
    fixed = [f for f in _FACTORS if frame[f].nunique() > 1]
    random_ = [r for r in _RANDOM if frame[r].nunique() > 1]
    if "policy" not in fixed or not random_ or frame["y"].nunique() < 2:
        return None
    rhs = " * ".join(f"C({f}, Sum)" for f in fixed)
    smf = _statsmodels("formula.api")
    frame["one"] = 1
    sums = _type3(frame, rhs, random_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns on every near-zero component
        # L-BFGS: the default (BFGS, then a retry) stopped short of convergence on the full
        # grid's composite and SRA; L-BFGS converges there, with the same fixed effects
        fit = smf.mixedlm(f"y ~ {rhs}", frame, groups="one", re_formula="0",
                          vc_formula={r: f"0 + C({r})" for r in random_}).fit(
                              reml=True, method=["lbfgs"])
        wald = fit.wald_test_terms(scalar=True).summary_frame()
    boundary = bool((np.asarray(fit.vcomp) <= 1e-8 * max(float(fit.scale), 1e-300)).any())
    terms = []
    for name, row in wald.iterrows():
        if name == "Intercept":
            continue
        term = _term_name(str(name))
        ss, ss_total, ss_resid = sums[str(name)], sums["__total__"], sums["Residual"]
        terms.append(AnovaTerm(term, float(row["chi2"]), int(row["df constraint"]),
                               float(row["chi2"]) / int(row["df constraint"]),
                               float(row["P>chi2"]), ss / ss_total,
                               ss / (ss + ss_resid) if ss + ss_resid > 0 else 0.0))
    variance = {r: float(v) for r, v in zip(fit.model.exog_vc.names, fit.vcomp, strict=True)}
    variance["residual"] = float(fit.scale)
    return AnovaResult(metric, tuple(terms), variance, len(frame), bool(fit.converged),
                       boundary)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ExtraNotInstalledError("bench", "pandas (with statsmodels)") from exc
    return pandas


def _term_name(name: str) -> str:
    """``C(policy, Sum):C(budget, Sum)`` → ``policy:budget``."""
    return ":".join(part.split("(")[1].split(",")[0] for part in name.split(":"))


def _type3(frame: Any, rhs: str, blocks: Sequence[str]) -> dict[str, float]:
    """Type-III sums of squares of the fixed effects, with the random factors as blocks."""
    smf, anova = _statsmodels("formula.api"), _statsmodels("stats.anova")
    formula = f"y ~ {rhs}" + "".join(f" + C({b}, Sum)" for b in blocks)
    table = anova.anova_lm(smf.ols(formula, frame).fit(), typ=3)
    out = {str(k): float(v) for k, v in table["sum_sq"].items()}
    y = frame["y"].to_numpy(dtype=np.float64)
    out["__total__"] = float(((y - y.mean()) ** 2).sum())
    return out
