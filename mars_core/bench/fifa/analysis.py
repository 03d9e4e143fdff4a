"""The inferential analyses of seed 000 §6.4.2 over FiFA cells, and the paper side by side.

* :func:`pairwise` — every policy pair per metric family, paired by seed × scenario
  (averaged over budgets): paired t with Holm–Bonferroni and Benjamini–Hochberg adjusted
  p-values, Hedges-corrected d (Table 4), Cliff's δ, and the Wilcoxon signed-rank test as
  the non-parametric robustness check.
* :func:`mcnemar_pairs` — McNemar's exact test on paired goal outcomes (the same goal of the
  same world and budget under two policies), Holm and BH over the pairs.
* :func:`anova` — Table 3: the mixed-effects ANOVA per metric on agent–scenario–seed units.
* :func:`versus_paper` — Tables 2, 3 and 4 beside the paper's figures.

Example:
    >>> cells = [{"seed": s, "scenario": "x", "policy": p, "budget": 2000,
    ...           "metrics": {"composite": 0.5 + 0.01 * s + (0.1 if p == "lru" else 0.0)},
    ...           "goals": "10" if p == "lru" else "00"} for s in range(4)
    ...          for p in ("lru", "random")]
    >>> row = pairwise(cells, ("lru", "random"), metrics=("composite",))[0]
    >>> row["d"] is None, row["delta"], row["mean_diff"]
    (True, 1.0, 0.1)
    >>> mcnemar_pairs(cells, ("lru", "random"))[0]["table"]
    [[0, 4], [0, 4]]
"""

from __future__ import annotations

import multiprocessing
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from mars_core.bench.fifa.paper import (
    PAPER_TABLE2,
    PAPER_TABLE3,
    PAPER_TABLE4,
    implied_anova_df2,
    implied_pairs,
)
from mars_core.bench.fifa.stats import (
    AnovaResult,
    adjust,
    cliffs_delta,
    effect_size,
    kendall_tau,
    mcnemar_paired,
    mixed_anova,
    wilcoxon,
)
from mars_core.errors import ValidationError

__all__ = ["ANOVA_METRICS", "TESTED", "anova", "mcnemar_pairs", "pairwise", "units",
           "versus_paper"]

TESTED: tuple[str, ...] = ("composite", "nc", "gcr", "sra", "pp", "ce")
"""Metric families of the paired tests (Holm–Bonferroni and BH within each)."""

ANOVA_METRICS: tuple[str, ...] = ("nc", "gcr", "sra", "pp", "ce", "composite")
"""The metrics of Table 3, in its order."""

_ND = 4
Adjustment = Literal["holm", "fdr_bh"]


def _r(x: float | None, nd: int = _ND) -> float | None:
    return None if x is None else round(float(x), nd)


def units(cells: Iterable[Mapping[str, Any]], policy: str, metric: str,
          scenarios: Sequence[str] | None = None,
          budgets: Sequence[int] | None = None) -> dict[tuple[int, str], float]:
    """Per (seed, scenario) value of a policy's metric, averaged over budgets."""
    acc: dict[tuple[int, str], list[float]] = defaultdict(list)
    for c in cells:
        if c["policy"] != policy or c["metrics"].get(metric) is None:
            continue
        if (scenarios and c["scenario"] not in scenarios) or \
                (budgets and c["budget"] not in budgets):
            continue
        acc[(c["seed"], c["scenario"])].append(float(c["metrics"][metric]))
    return {k: statistics.fmean(v) for k, v in sorted(acc.items())}


def paired(cells: Sequence[Mapping[str, Any]], a: str, b: str, metric: str,
           **kw: Any) -> dict[str, Any]:
    """One paired comparison of policies ``a`` and ``b`` on ``metric`` (unadjusted)."""
    ua, ub = units(cells, a, metric, **kw), units(cells, b, metric, **kw)
    keys = sorted(set(ua) & set(ub))
    xa, xb = [ua[k] for k in keys], [ub[k] for k in keys]
    res, eff = wilcoxon(xa, xb), effect_size(xa, xb)
    cd = cliffs_delta(xa, xb) if keys else None
    diff = statistics.fmean(ua[k] - ub[k] for k in keys) if keys else 0.0
    return {"a": a, "b": b, "metric": metric, "pairs": len(keys), "mean_diff": _r(diff),
            "median_diff": _r(res.median_diff), "t": _r(eff.t), "p_t": _r(eff.p, 8),
            "d": _r(eff.d), "effect": eff.label,
            "delta": _r(cd.delta if cd else None), "delta_effect": cd.label if cd else None,
            "w_plus": res.w_plus, "n": res.n, "p_wilcoxon": _r(res.p, 8),
            "method": res.method}


def pairwise(cells: Sequence[Mapping[str, Any]], policies: Sequence[str],
             metrics: Sequence[str] = TESTED) -> list[dict[str, Any]]:
    """Every policy pair on every metric, paired by seed × scenario; within each metric
    family, Holm (``p_holm``) and BH (``p_bh``) on the paired t p-values and Holm on the
    Wilcoxon p-values (``p_wilcoxon_holm``). A pair with no spread has ``p_t`` None and
    takes part in no adjustment."""
    out = []
    for metric in metrics:
        fam = [paired(cells, a, b, metric) for a, b in combinations(policies, 2)]
        tested = [r for r in fam if r["p_t"] is not None]
        plan: tuple[tuple[str, str, Adjustment], ...] = (
            ("p_holm", "p_t", "holm"), ("p_bh", "p_t", "fdr_bh"),
            ("p_wilcoxon_holm", "p_wilcoxon", "holm"))
        for key, src, method in plan:
            rows = tested if src == "p_t" else fam
            for row, p in zip(rows, adjust([float(r[src]) for r in rows], method), strict=True):
                row[key] = _r(p, 8)
        for row in fam:
            row.setdefault("p_holm", None)
            row.setdefault("p_bh", None)
        out += fam
    return out


def mcnemar_pairs(cells: Sequence[Mapping[str, Any]],
                  policies: Sequence[str]) -> list[dict[str, Any]]:
    """McNemar's exact test per policy pair on goal outcomes paired by world, budget and
    goal (§6.3.2: "McNemar's test for paired binary outcomes at the goal level"), with Holm
    and BH over the pairs.

    Raises:
        ValidationError: two cells of the same world and budget with different goal counts.
    """
    goals: dict[tuple[str, int, str, int], str] = {
        (c["policy"], c["seed"], c["scenario"], c["budget"]): c.get("goals", "") for c in cells}
    rows: list[dict[str, Any]] = []
    for a, b in combinations(policies, 2):
        xa: list[bool] = []
        xb: list[bool] = []
        for (pol, seed, scen, budget), ga in sorted(goals.items()):
            gb = goals.get((b, seed, scen, budget)) if pol == a else None
            if gb is None:
                continue
            if len(ga) != len(gb):
                raise ValidationError(f"goal outcomes of {a} and {b} differ in length at "
                                      f"seed {seed}, {scen}, budget {budget}")
            xa += [g == "1" for g in ga]
            xb += [g == "1" for g in gb]
        if not xa:
            continue
        res = mcnemar_paired(xa, xb)
        rows.append({"a": a, "b": b, "goals": len(xa), "table": [list(r) for r in res.table],
                     "rate_a": _r(sum(xa) / len(xa)), "rate_b": _r(sum(xb) / len(xb)),
                     "risk_difference": _r(res.risk_difference),
                     "odds_ratio": _r(res.odds_ratio), "p": _r(res.p, 8)})
    both: tuple[tuple[str, Adjustment], ...] = (("p_holm", "holm"), ("p_bh", "fdr_bh"))
    for key, method in both:
        for row, p in zip(rows, adjust([float(r["p"]) for r in rows], method), strict=True):
            row[key] = _r(p, 8)
    return rows


def _anova_rows(cells: Iterable[Mapping[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Agent–scenario–seed units (§6.4.2) of one metric: one row per cast agent per cell."""
    rows = []
    for c in cells:
        for i, m in enumerate(c.get("agents") or ()):
            if m.get(metric) is not None:
                rows.append({"policy": c["policy"], "budget": c["budget"],
                             "scenario": c["scenario"], "seed": c["seed"], "agent": i,
                             "y": float(m[metric])})
    return rows


def _fit(job: tuple[str, list[dict[str, Any]]]) -> AnovaResult | None:
    return mixed_anova(job[1], job[0])


def anova(cells: Sequence[Mapping[str, Any]], *, workers: int = 1,
          metrics: Sequence[str] = ANOVA_METRICS) -> dict[str, Any]:
    """Table 3: the mixed-effects ANOVA of every metric (fits run in ``workers`` processes).
    A metric with nothing to test maps to ``None``."""
    jobs = [(m, _anova_rows(cells, m)) for m in metrics]
    if workers > 1 and len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            fits = pool.map(_fit, jobs, chunksize=1)
    else:
        fits = [_fit(j) for j in jobs]
    out: dict[str, Any] = {}
    for m, fit in zip(metrics, fits, strict=True):
        out[m] = None if fit is None else {
            "rows": fit.rows, "converged": fit.converged, "boundary": fit.boundary,
            "variance": {k: _r(v, 8) for k, v in fit.variance.items()},
            "terms": {t.term: {"chi2": _r(t.chi2), "df": t.df, "F": _r(t.f), "p": _r(t.p, 10),
                               "eta2": _r(t.eta2), "partial_eta2": _r(t.partial_eta2)}
                      for t in fit.terms}}
    return out


def _rank(values: Mapping[str, float]) -> dict[str, int]:
    order = sorted(values, key=lambda p: (-values[p], p))
    return {p: i + 1 for i, p in enumerate(order)}


def versus_paper(summary: Mapping[str, Any], pairs: Sequence[Mapping[str, Any]],
                 table3: Mapping[str, Any]) -> dict[str, Any]:
    """Tables 2, 3 and 4 beside the paper's (only the policies and pairs both have).

    ``table2`` ranks the paper's five policies by composite among themselves, with every
    metric's mean and half-width, ours and the paper's, and Kendall's τ between the two
    composite orders; ``table3`` sets our Policy term beside the paper's F, p and η² (and
    the error degrees of freedom the paper's η² implies); ``table4`` sets each of the paper's
    pairs beside ours, with whether d has the same sign.
    """
    ov = summary["overall"]
    common = [p for p in PAPER_TABLE2 if p in ov and ov[p]["composite"]["mean"] is not None]
    ours_rank = _rank({p: ov[p]["composite"]["mean"] for p in common})
    paper_rank = _rank({p: PAPER_TABLE2[p]["composite"][0] for p in common})
    t2 = {p: {"rank": ours_rank[p], "paper_rank": paper_rank[p],
              **{m: {"ours": [ov[p][m]["mean"], ov[p][m]["half"]],
                     "paper": list(PAPER_TABLE2[p][m])} for m in TESTED}} for p in common}
    tau = None
    if len(common) >= 2:
        k, kp = kendall_tau([ours_rank[p] for p in common], [paper_rank[p] for p in common])
        tau = {"tau": _r(k), "p": _r(kp)}
    t3 = {}
    for m, paper in PAPER_TABLE3.items():
        term = ((table3.get(m) or {}).get("terms") or {}).get("policy")
        t3[m] = {"paper": {**paper, "implied_df2": _r(implied_anova_df2(
                     float(paper["F"]), float(paper["eta2"])), 1)},
                 "ours": term}
    t4 = []
    for a, b, metric, t, p, d in PAPER_TABLE4:
        row = _find_pair(pairs, a, b, metric)
        t4.append({"a": a, "b": b, "metric": metric,
                   "paper": {"t": t, "p_adj": p, "d": d, "implied_n": _r(implied_pairs(t, d), 2)},
                   "ours": row,
                   "same_sign": None if row is None or row["d"] is None else
                   (row["d"] > 0) == (d > 0)})
    return {"table2": t2, "kendall_tau": tau, "table3": t3, "table4": t4}


def _find_pair(pairs: Sequence[Mapping[str, Any]], a: str, b: str,
               metric: str) -> dict[str, Any] | None:
    """Our row for ``a`` vs ``b`` (signs flipped when we computed ``b`` vs ``a``)."""
    for r in pairs:
        if r["metric"] != metric:
            continue
        if (r["a"], r["b"]) == (a, b):
            return dict(r)
        if (r["a"], r["b"]) == (b, a):
            flip = {k: (None if r[k] is None else -r[k])
                    for k in ("mean_diff", "median_diff", "t", "d", "delta")}
            return {**r, **flip, "a": a, "b": b}
    return None
