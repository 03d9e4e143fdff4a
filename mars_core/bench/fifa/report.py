"""Aggregate FiFA cells into results: intervals, paired tests, controls, tables and plots.

Everything here is deterministic: cells are sorted, bootstrap generators are seeded,
floats are rounded before they are written, and wall times stay out of ``results.json``
and the markdown report (they go to ``timing.json``), so the same grid gives
byte-identical files.

Example:
    >>> cells = [{"seed": s, "scenario": "x", "policy": p, "budget": 2000, "metrics":
    ...           {m: (0.5 if p == "lru" else 0.4) for m in METRICS}} for s in range(3)
    ...          for p in ("lru", "random")]
    >>> table = aggregate(cells)["overall"]
    >>> table["lru"]["composite"]["mean"] > table["random"]["composite"]["mean"]
    True
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from itertools import pairwise as pairwise_
from pathlib import Path
from typing import Any

from mars_core.bench.fifa.metrics import METRICS
from mars_core.bench.fifa.scenarios import SCENARIOS
from mars_core.bench.fifa.stats import bootstrap_ci, effect_size, holm, wilcoxon
from mars_core.bench.plots import pyplot, save

__all__ = ["TESTED", "aggregate", "controls", "pairwise", "plot", "render_markdown",
           "write_json"]

TESTED: tuple[str, ...] = ("composite", "nc", "gcr", "sra", "pp", "ce")
"""Metric families of the paired tests (Holm–Bonferroni within each)."""

_ND = 4


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), _ND)


def _per_seed(cells: Iterable[Mapping[str, Any]], metric: str) -> dict[int, float]:
    """Mean of a metric per seed (over scenarios and budgets), skipping undefined values."""
    acc: dict[int, list[float]] = defaultdict(list)
    for c in cells:
        v = c["metrics"].get(metric)
        if v is not None:
            acc[c["seed"]].append(float(v))
    return {s: statistics.fmean(v) for s, v in sorted(acc.items())}


def _interval(cells: Sequence[Mapping[str, Any]], metric: str) -> dict[str, float | None]:
    per = list(_per_seed(cells, metric).values())
    if not per:
        return {"mean": None, "low": None, "high": None, "half": None}
    ci = bootstrap_ci(per, seed=0)
    return {"mean": _r(ci.mean), "low": _r(ci.low), "high": _r(ci.high),
            "half": _r(ci.half_width)}


def _group(cells: Iterable[Mapping[str, Any]], *keys: str) -> dict[tuple[Any, ...],
                                                                   list[Mapping[str, Any]]]:
    out: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for c in cells:
        out[tuple(c[k] for k in keys)].append(c)
    return dict(sorted(out.items()))


def aggregate(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means with 95% bootstrap intervals over seeds: overall per policy, per policy ×
    budget, and per policy × scenario."""
    overall = {p: {m: _interval(cs, m) for m in METRICS}
               for (p,), cs in _group(cells, "policy").items()}
    by_budget = {f"{p}@{b}": {m: _interval(cs, m) for m in METRICS}
                 for (p, b), cs in _group(cells, "policy", "budget").items()}
    by_scenario = {f"{p}@{s}": {m: _interval(cs, m) for m in ("composite", "nc", "gcr", "pp")}
                   for (p, s), cs in _group(cells, "policy", "scenario").items()}
    return {"overall": overall, "by_budget": by_budget, "by_scenario": by_scenario}


def _units(cells: Iterable[Mapping[str, Any]], policy: str, metric: str,
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


def _paired(cells: Sequence[Mapping[str, Any]], a: str, b: str, metric: str,
            **kw: Any) -> dict[str, Any]:
    ua, ub = _units(cells, a, metric, **kw), _units(cells, b, metric, **kw)
    keys = sorted(set(ua) & set(ub))
    xa, xb = [ua[k] for k in keys], [ub[k] for k in keys]
    res, eff = wilcoxon(xa, xb), effect_size(xa, xb)
    diff = statistics.fmean(ua[k] - ub[k] for k in keys) if keys else 0.0
    return {"a": a, "b": b, "metric": metric, "pairs": len(keys), "mean_diff": _r(diff),
            "median_diff": _r(res.median_diff), "w_plus": res.w_plus, "n": res.n,
            "p": _r(res.p), "method": res.method, "t": _r(eff.t), "d": _r(eff.d),
            "effect": eff.label}


def pairwise(cells: Sequence[Mapping[str, Any]], policies: Sequence[str]) -> list[dict[str, Any]]:
    """Wilcoxon signed-rank between every policy pair, paired by seed × scenario, per metric
    family, with Holm–Bonferroni adjusted p-values within each family."""
    out = []
    for metric in TESTED:
        fam = [_paired(cells, a, b, metric) for a, b in combinations(policies, 2)]
        for row, adj in zip(fam, holm([float(r["p"]) for r in fam]), strict=True):
            row["p_holm"] = _r(adj)
            out.append(row)
    return out


def controls(cells: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The known-direction controls of seed 000 §6.3.2, each with its evidence and verdict."""
    out: dict[str, Any] = {}
    policies = {c["policy"] for c in cells}
    recency = [s.name for s in SCENARIOS if s.recency_dominated]
    tight = sorted({c["budget"] for c in cells if c["acted"] and c["policy"] in ("lru", "random")})
    if {"lru", "random"} <= policies and tight:
        row = _paired(cells, "lru", "random", "composite", scenarios=recency, budgets=tight)
        out["random_below_lru_recency"] = {**row, "scenarios": recency, "budgets": tight,
                                           "holds": bool(row["mean_diff"] and row["mean_diff"] > 0)}
    if {"lru", "reflection"} <= policies:
        out["reflection_tokens_and_leakage"] = _reflection(cells, summary)
    out["budget_monotone"] = _monotone(summary)
    return out


def _reflection(cells: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Any]:
    """Reflection's token cost below LRU's, and its leakage not above LRU's band — paired by
    seed × scenario at the budgets where Reflection acted (all budgets if it never did)."""
    tight = sorted({c["budget"] for c in cells if c["acted"] and c["policy"] == "reflection"})
    tok = _paired(cells, "reflection", "lru", "token_cost", budgets=tight or None)
    leak = _paired(cells, "reflection", "lru", "leakage", budgets=tight or None)
    band = summary["overall"]["lru"]["leakage"]["half"] or 0.0
    lowers = tok["mean_diff"] is not None and tok["mean_diff"] < 0
    no_leak = leak["mean_diff"] is not None and leak["mean_diff"] <= band
    return {"baseline": "lru", "budgets": tight, "token_cost": tok, "leakage": leak,
            "leakage_band": _r(band), "lowers_token_cost": lowers,
            "leakage_not_raised": no_leak, "holds": lowers and no_leak}


def _monotone(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Composite non-decreasing in budget per policy, within the intervals' half-widths."""
    by = summary["by_budget"]
    out: dict[str, Any] = {"violations": [], "holds": True}
    per: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for key, row in by.items():
        p, b = key.split("@")
        per[p].append((int(b), row["composite"]))
    for p, rows in sorted(per.items()):
        rows.sort(key=lambda r: r[0])
        for (b0, lo), (b1, hi) in pairwise_(rows):
            band = max(lo["half"] or 0.0, hi["half"] or 0.0)
            if hi["mean"] is not None and lo["mean"] is not None and hi["mean"] < lo["mean"] - band:
                out["violations"].append([p, b0, b1, lo["mean"], hi["mean"], _r(band)])
                out["holds"] = False
    return out


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write ``doc`` as sorted, indented JSON (byte-stable)."""
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def _pm(iv: Mapping[str, Any]) -> str:
    return "–" if iv["mean"] is None else f"{iv['mean']:.3f} ± {iv['half']:.3f}"


def render_markdown(results: Mapping[str, Any]) -> str:
    """The markdown report: Table 2 analogue, budget table, controls, pairwise tests."""
    ov = results["summary"]["overall"]
    order = sorted(ov, key=lambda p: -(ov[p]["composite"]["mean"] or 0.0))
    cols = ("composite", "nc", "gcr", "sra", "pp", "ce", "composite_task", "sra_opp", "leakage")
    lines = [f"# FiFA results ({results['fifa_version']})", "",
             f"Grid: {len(results['grid']['policies'])} policies × budgets "
             f"{results['grid']['budgets']} × seeds {results['grid']['seeds']} × "
             f"{len(results['grid']['scenarios'])} scenarios (world scale "
             f"{results['grid']['scale']}). Means with 95% bootstrap half-widths over seeds.", "",
             "| Policy | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    lines += [f"| {p} | " + " | ".join(_pm(ov[p][c]) for c in cols) + " |" for p in order]
    lines += ["", "## Composite by budget", "",
              "| Policy | " + " | ".join(str(b) for b in results["grid"]["budgets"]) + " |",
              "|---" * (len(results["grid"]["budgets"]) + 1) + "|"]
    by = results["summary"]["by_budget"]
    lines += [f"| {p} | " + " | ".join(_pm(by[f'{p}@{b}']["composite"])
                                      for b in results["grid"]["budgets"]) + " |" for p in order]
    lines += _pressure(results)
    lines += ["", "## Known-direction controls (seed 000 §6.3.2)", ""]
    lines += [f"- **{k}**: holds = {v['holds']}; "
              + json.dumps({x: y for x, y in v.items() if x != "holds"}, sort_keys=True)
              for k, v in sorted(results["controls"].items())]
    lines += ["", "## Paired Wilcoxon tests (seed × scenario; Holm–Bonferroni per metric)", "",
              "Significant pairs (p_Holm < 0.05); d is Cohen's d_z with Hedges' correction "
              "(positive favours a), t the paired t. Every pair is in `results.json`.", "",
              "| metric | a | b | mean a−b | t | d | effect | n | p | p (Holm) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['metric']} | {r['a']} | {r['b']} | {r['mean_diff']} | {r['t']} | {r['d']} | "
              f"{r['effect']} | {r['n']} | {r['p']} | {r['p_holm']} |"
              for r in results["pairwise"] if r["p_holm"] is not None and r["p_holm"] < 0.05]
    return "\n".join(lines) + "\n"


def _pressure(results: Mapping[str, Any]) -> list[str]:
    """Share of runs per budget in which the policy evicted or summarised (the budget bound)."""
    budgets = results["grid"]["budgets"]
    acted: dict[int, list[bool]] = defaultdict(list)
    for c in results["cells"]:
        acted[c["budget"]].append(bool(c["acted"]))
    return ["", "## Budget pressure", "",
            "Share of (seed, scenario, policy) runs in which the budget bound (the policy "
            "evicted or summarised); a budget that never binds repeats the run below it.", "",
            "| budget | " + " | ".join(str(b) for b in budgets) + " |",
            "|---" * (len(budgets) + 1) + "|",
            "| bound | " + " | ".join(f"{statistics.fmean(acted[b]):.2f}" for b in budgets) + " |"]


def plot(results: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """Fig. 4 (budget × policy heatmap of the composite) and Fig. 3 (per-metric
    distributions by policy with 95% intervals), as PNG files in ``out``."""
    plt = pyplot()
    ov, by = results["summary"]["overall"], results["summary"]["by_budget"]
    pols = sorted(ov, key=lambda p: -(ov[p]["composite"]["mean"] or 0.0))
    budgets = results["grid"]["budgets"]
    grid = [[by[f"{p}@{b}"]["composite"]["mean"] or 0.0 for b in budgets] for p in pols]
    fig, ax = plt.subplots(figsize=(1.4 * len(budgets) + 2, 0.5 * len(pols) + 1.5))
    im = ax.imshow(grid, cmap="Blues", aspect="auto")
    ax.set_xticks(range(len(budgets)), [f"{b // 1000}k" for b in budgets])
    ax.set_yticks(range(len(pols)), pols)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=8)
    ax.set_xlabel("budget (tokens)")
    ax.set_title("FiFA composite by policy and budget")
    fig.colorbar(im)
    heat = save(fig, out / "fifa_heatmap.png")
    return [heat, _distributions(plt, results, cells, pols, out)]


def _distributions(plt: Any, results: Mapping[str, Any], cells: Sequence[Mapping[str, Any]],
                   pols: Sequence[str], out: Path) -> Path:
    metrics = ("composite", "nc", "gcr", "sra", "pp", "ce")
    fig, axes = plt.subplots(1, len(metrics), figsize=(3 * len(metrics), 3.6), sharey=False)
    for ax, m in zip(axes, metrics, strict=True):
        data = [list(_per_seed([c for c in cells if c["policy"] == p], m).values()) or [0.0]
                for p in pols]
        ax.boxplot(data, showfliers=False)
        iv = [results["summary"]["overall"][p][m] for p in pols]
        ax.errorbar(range(1, len(pols) + 1), [i["mean"] or 0.0 for i in iv],
                    yerr=[i["half"] or 0.0 for i in iv], fmt="o", color="crimson", ms=3)
        ax.set_xticks(range(1, len(pols) + 1), pols, rotation=60, fontsize=7)
        ax.set_title(m)
    return save(fig, out / "fifa_metrics.png")
