"""Seed 001 §4.4 (Figs 2, 4, 5): the reward's sensitivity to its coefficients, on LoCoMo;
and the Mixed-Score's freshness, in the score and in the prior, side by side.

**Sensitivity.** §4.4 multiplies one coefficient at a time (α_hit, α_full, α_miss,
α_reacq, α_stale; α_store stays 1) by m ∈ {0.25, 0.5, 0.75, 1, 1.5, 2, 4} and plots each
method's average reward. Recency, GA, the Mixed-Score and both OSL-MR learners do not see
the reward when they choose (the learners are trained on gold evidence), so their
selections are the same at every multiplier and their reward is the dot product of the
coefficients with the mean reward terms of Table 2's run (r_t is linear in T_hit, F_t,
Σs, T_miss, T_reacq, T_stale; :func:`reward_of`). The BC-learner imitates a teacher that
maximises r_t, so its labels change with the coefficients: it is trained again for every
multiplier at the budgets in ``bc_budgets`` (64 by default, the budget of Fig. 2; at the
others it keeps the default teacher, marked in the results). Rewards are shifted as in
Table 2 (Recency at 128 under the default coefficients is 0).

**The Mixed-Score's freshness** (:data:`VARIANTS`): the same rows — the Mixed-Score, the
BC-learner whose teacher starts from it, OSL-MR whose prior it is — with freshness over Δt
in turns (A.2 as written), in sessions, and off; OSL-MR without the prior does not depend
on it and is given once.

Example:
    >>> terms = {"hit": 10, "full": 1, "stored": 30, "miss": 20, "reacq": 20, "stale": 0}
    >>> reward_of(terms, RewardConfig())          # 4·10 + 64 − 30 − 12·20 − 6·20
    -286.0
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mars_core.bench import locomo as L
from mars_core.bench.oslmr import table2
from mars_core.bench.plots import pyplot, save
from mars_core.knowledge.learn import LearnConfig
from mars_core.scoring.reward import LOCOMO_SHIFT, RewardConfig

__all__ = ["COEFFICIENTS", "MULTIPLIERS", "SERIES", "VARIANTS", "plot_sensitivity",
           "prior_variants", "reward_of", "sensitivity", "sensitivity_summary",
           "variants_table", "write_sensitivity"]

COEFFICIENTS: tuple[str, ...] = ("alpha_hit", "alpha_full", "alpha_miss", "alpha_reacq",
                                 "alpha_stale")
"""The coefficients §4.4 varies (α_store is fixed at 1)."""
MULTIPLIERS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
"""§4.4's multipliers of each default coefficient."""
SERIES: tuple[str, ...] = ("recency", "ga-heuristic", "mixed-score", "bc-learner", "osl-mr",
                           "osl-mr-no-prior")
"""The methods of the sensitivity curves (Table 2's rows)."""
VARIANTS: dict[str, L.MixedVariant] = {
    "Δt in turns (A.2 as written)": L.MixedVariant(),
    "Δt in sessions": L.MixedVariant(dt_unit="sessions"),
    "freshness off": L.MixedVariant(freshness=False),
}
"""The Mixed-Score's freshness, in the score, the BC teacher's start and OSL-MR's prior."""
_TERMS = ("hit", "full", "stored", "miss", "reacq", "stale")
_SYMBOL = {"alpha_hit": "α_hit", "alpha_full": "α_full", "alpha_miss": "α_miss",
           "alpha_reacq": "α_reacq", "alpha_stale": "α_stale"}


def reward_of(terms: Mapping[str, float], config: RewardConfig) -> float:
    """r_t (raw) from its terms (§3.2): α_hit·T_hit + α_full·F − α_store·Σs − α_miss·T_miss
    − α_reacq·T_reacq − α_stale·T_stale; a mean of terms gives the mean reward."""
    c = config
    return float(c.alpha_hit * terms["hit"] + c.alpha_full * terms["full"]
                 - c.alpha_store * terms["stored"] - c.alpha_miss * terms["miss"]
                 - c.alpha_reacq * terms["reacq"] - c.alpha_stale * terms["stale"])


def _scaled(coef: str, m: float) -> RewardConfig:
    default = RewardConfig()
    return RewardConfig(**{coef: getattr(default, coef) * m})


def sensitivity(data: Sequence[L.ConvData], rows: Sequence[Mapping[str, Any]], *,
                budgets: Sequence[int] = (32, 64, 128), bc_budgets: Sequence[int] = (64,),
                counter: str = "store", learn: LearnConfig | None = None,
                tick: Callable[[], None] | None = None) -> dict[str, Any]:
    """The §4.4 curves from Table 2's ``rows`` (run with the default coefficients, with
    their ``terms``), the BC-learner retrained at ``bc_budgets``.

    Returns:
        ``{"budgets", "bc_budgets", "multipliers", "coefficients", "shift", "curves":
        {budget: {coefficient: {method: [shifted reward per multiplier]}}}, "top":
        {budget: {coefficient: [best method per multiplier]}}}``.
    """
    base = {(r["method"], r["budget"]): r for r in rows if r["counter"] == counter}
    anchor = base.get(("recency", 128))
    shift = -anchor["reward_raw"] if anchor is not None else LOCOMO_SHIFT
    curves: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for b in budgets:
        per: dict[str, dict[str, list[float]]] = {}
        best: dict[str, list[str]] = {}
        for coef in COEFFICIENTS:
            series: dict[str, list[float]] = {m: [] for m in SERIES}
            for mult in MULTIPLIERS:
                cfg = _scaled(coef, mult)
                for method in SERIES:
                    terms = base[(method, b)]["terms"]
                    if method == "bc-learner" and b in bc_budgets and mult != 1.0:
                        [again] = table2(data, budgets=(b,), counters=(counter,),
                                         methods=("bc-learner",), diagnostics=False,
                                         reward=cfg, learn=learn)
                        terms = again["terms"]
                    series[method].append(round(reward_of(terms, cfg) + shift, 3))
                if tick is not None:
                    tick()
            per[coef] = series
            best[coef] = [_best(series, k) for k in range(len(MULTIPLIERS))]
        curves[str(b)], top[str(b)] = per, best
    return {"budgets": list(budgets), "bc_budgets": list(bc_budgets),
            "multipliers": list(MULTIPLIERS), "coefficients": list(COEFFICIENTS),
            "series": list(SERIES), "shift": round(shift, 3), "counter": counter,
            "curves": curves, "top": top}


def _best(series: Mapping[str, Sequence[float]], k: int) -> str:
    """The method with the highest reward at the ``k``-th multiplier (ties: the first)."""
    return max(SERIES, key=lambda method: series[method][k])


def prior_variants(data: Sequence[L.ConvData], rows: Sequence[Mapping[str, Any]], *,
                   budgets: Sequence[int] = (32, 64, 128), counter: str = "store",
                   learn: LearnConfig | None = None) -> list[dict[str, Any]]:
    """The Mixed-Score, the BC-learner and OSL-MR under each freshness of
    :data:`VARIANTS` (the first is Table 2's own rows), and OSL-MR without the prior."""
    out: list[dict[str, Any]] = []
    keep = ("mixed-score", "bc-learner", "osl-mr")
    for name, variant in VARIANTS.items():
        got = rows if variant == L.MixedVariant() else table2(
            data, budgets=budgets, counters=(counter,), methods=keep, diagnostics=False,
            mixed=variant, learn=learn)
        out += [{**_slim(r), "variant": name} for r in got
                if r["counter"] == counter and r["method"] in keep and r["budget"] in budgets]
    out += [{**_slim(r), "variant": "(no prior)"} for r in rows
            if r["counter"] == counter and r["method"] == "osl-mr-no-prior"
            and r["budget"] in budgets]
    return out


def _slim(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("method", "budget", "precision", "recall", "f1", "f1_ci",
                                "occupancy", "retained", "reward_raw") if k in row}


def plot_sensitivity(result: Mapping[str, Any], out: Path, prefix: str = "oslmr_sensitivity"
                     ) -> list[Path]:
    """One PNG per budget: a panel per coefficient (reward against its multiplier, log
    scale), a line per method in its own colour and marker, the legend in a panel of its
    own (Figs 2, 4, 5 of seed 001)."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    mults = result["multipliers"]
    colours = {m: f"C{k}" for k, m in enumerate(result["series"])}
    markers = dict(zip(result["series"], ("o", "s", "^", "D", "v", "P"), strict=False))
    paths = []
    for b in result["budgets"]:
        fig, axes = plt.subplots(2, 3, figsize=(13, 7.5))
        flat = list(axes.flat)
        for ax, coef in zip(flat, result["coefficients"], strict=False):
            for method in result["series"]:
                ax.plot(mults, result["curves"][str(b)][coef][method], label=method,
                        color=colours[method], marker=markers[method], markersize=4,
                        linewidth=1.4)
            ax.set_xscale("log")
            ax.set_xticks(mults, [f"{m:g}" for m in mults])
            ax.minorticks_off()
            ax.set_xlabel(f"multiplier of {_SYMBOL[coef]}")
            ax.set_ylabel("average reward (shifted)")
            ax.grid(alpha=0.3)
            ax.set_title(_SYMBOL[coef], fontsize=10)
        legend = flat[-1]
        legend.axis("off")
        handles, labels = flat[0].get_legend_handles_labels()
        bc = " (BC-learner retrained per multiplier)" if b in result["bc_budgets"] else \
            " (BC-learner: default teacher)"
        legend.legend(handles, labels, loc="center", title=f"budget {b}{bc}",
                      fontsize=9, title_fontsize=9)
        fig.suptitle(f"Reward sensitivity on LoCoMo, budget {b} ({result['counter']} tokens; "
                     "α_store = 1)", fontsize=11)
        paths.append(save(fig, out / f"{prefix}_b{b}.png"))
    return paths


def variants_table(variants: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines: F1 at each budget (recall and precision at the largest) per
    freshness variant and method."""
    budgets = sorted({r["budget"] for r in variants})
    top = budgets[-1]
    by = {(r["variant"], r["method"], r["budget"]): r for r in variants}
    keys = list(dict.fromkeys((r["variant"], r["method"]) for r in variants))
    out = ["| freshness of the Mixed-Score | method | "
           + " | ".join(f"F1 {b}" for b in budgets) + f" | P {top} | R {top} |",
           "|---|---|" + "---|" * (len(budgets) + 2)]
    for v, m in keys:
        cells = [f"{by[(v, m, b)]['f1']:.3f}" for b in budgets]
        last = by[(v, m, top)]
        out.append(f"| {v} | {m} | " + " | ".join(cells)
                   + f" | {last['precision']:.3f} | {last['recall']:.3f} |")
    return out


def sensitivity_summary(result: Mapping[str, Any]) -> list[str]:
    """Markdown lines: per budget, whether OSL-MR (with or without the prior) has the
    highest reward at every multiplier of every coefficient, and each method's range."""
    out = []
    learners = {"osl-mr", "osl-mr-no-prior"}
    for b in result["budgets"]:
        tops = result["top"][str(b)]
        points = [(c, result["multipliers"][k], m) for c, ms in tops.items()
                  for k, m in enumerate(ms)]
        lost = [(c, mult, m) for c, mult, m in points if m not in learners]
        bc = "retrained per multiplier" if b in result["bc_budgets"] else "default teacher"
        line = (f"- Budget {b} (BC-learner: {bc}): an OSL-MR learner has the highest reward "
                f"at {len(points) - len(lost)} of {len(points)} points")
        if lost:
            line += "; not at " + ", ".join(f"{_SYMBOL[c]} × {mult:g} ({m})"
                                            for c, mult, m in lost)
        with_prior = sum(1 for _c, _x, m in points if m == "osl-mr")
        out.append(line + f"; with the prior at {with_prior}, without at "
                   f"{len(points) - len(lost) - with_prior}.")
    return out


def write_sensitivity(data: Sequence[L.ConvData], rows: Sequence[Mapping[str, Any]],
                      out: Path, *, counter: str = "store", bc_budgets: Sequence[int] = (64,),
                      progress: bool = False) -> dict[str, Any]:
    """Run :func:`sensitivity` and :func:`prior_variants`; write ``sensitivity.json``,
    ``sensitivity.md`` and the plots into ``out``."""
    from tqdm import tqdm  # type: ignore[import-untyped]

    budgets = sorted({r["budget"] for r in rows if r["counter"] == counter})
    with tqdm(total=len(budgets) * len(COEFFICIENTS) * len(MULTIPLIERS),
              desc="oslmr sensitivity", disable=not progress, unit="point") as bar:
        sens = sensitivity(data, rows, budgets=budgets, bc_budgets=bc_budgets,
                           counter=counter, tick=lambda: bar.update(1))
    variants = prior_variants(data, rows, budgets=budgets, counter=counter)
    (out / "sensitivity.json").write_text(
        json.dumps({"sensitivity": sens, "variants": variants}, indent=1, sort_keys=True),
        encoding="utf-8")
    md = ["# Seed 001 §4.4: reward sensitivity, and the Mixed-Score's freshness", "",
          *sensitivity_summary(sens), "", "## The Mixed-Score's freshness, side by side", "",
          *variants_table(variants)]
    (out / "sensitivity.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    plot_sensitivity(sens, out)
    return {"sensitivity": sens, "variants": variants}
