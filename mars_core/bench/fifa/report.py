"""Aggregate FiFA cells into results: intervals, controls, tables and plots (the paired
tests, the ANOVA and the paper side by side are in :mod:`~mars_core.bench.fifa.analysis`).

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
from itertools import pairwise as pairwise_
from pathlib import Path
from typing import Any

from mars_core.bench.fifa.analysis import paired
from mars_core.bench.fifa.metrics import METRICS
from mars_core.bench.fifa.scenarios import SCENARIOS
from mars_core.bench.fifa.stats import bootstrap_ci
from mars_core.bench.plots import pyplot, save

__all__ = ["aggregate", "by_budget_table", "controls", "mcnemar_table", "plot", "pressure",
           "pressure_table", "render_markdown", "significant_pairs_table", "table2_paper_table",
           "table2_table", "table3_table", "table4_table", "write_json"]

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


def controls(cells: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The known-direction controls of seed 000 §6.3.2, each with its evidence and verdict."""
    out: dict[str, Any] = {}
    policies = {c["policy"] for c in cells}
    recency = [s.name for s in SCENARIOS if s.recency_dominated]
    tight = sorted({c["budget"] for c in cells if c["acted"] and c["policy"] in ("lru", "random")})
    if {"lru", "random"} <= policies and tight:
        row = paired(cells, "lru", "random", "composite", scenarios=recency, budgets=tight)
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
    tok = paired(cells, "reflection", "lru", "token_cost", budgets=tight or None)
    leak = paired(cells, "reflection", "lru", "leakage", budgets=tight or None)
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


def _f(x: float | None, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def _p(x: float | None) -> str:
    if x is None:
        return "–"
    return "< 0.0001" if x < 1e-4 else f"{x:.4f}"


_NAMES = {"composite": "Composite", "nc": "NC", "gcr": "GCR", "sra": "SRA", "pp": "PP",
          "ce": "CE"}


_COLS = ("composite", "nc", "gcr", "sra", "pp", "ce", "composite_task", "sra_opp", "leakage")


def _order(results: Mapping[str, Any]) -> list[str]:
    ov = results["summary"]["overall"]
    return sorted(ov, key=lambda p: -(ov[p]["composite"]["mean"] or 0.0))


def table2_table(results: Mapping[str, Any]) -> list[str]:
    """Table 2 of every policy run (markdown lines), best composite first."""
    ov = results["summary"]["overall"]
    return (["| Policy | " + " | ".join(_COLS) + " |", "|---" * (len(_COLS) + 1) + "|"]
            + [f"| {p} | " + " | ".join(_pm(ov[p][c]) for c in _COLS) + " |"
               for p in _order(results)])


def by_budget_table(results: Mapping[str, Any], metric: str = "composite") -> list[str]:
    """A metric by policy and budget level (Fig. 4's numbers), markdown lines."""
    budgets = results["grid"]["budgets"]
    by = results["summary"]["by_budget"]
    return (["| Policy | " + " | ".join(str(b) for b in budgets) + " |",
             "|---" * (len(budgets) + 1) + "|"]
            + [f"| {p} | " + " | ".join(_pm(by[f'{p}@{b}'][metric]) for b in budgets) + " |"
               for p in _order(results)])


def render_markdown(results: Mapping[str, Any]) -> str:
    """The markdown report: budget pressure, Table 2 (ours, then beside the paper's),
    composite by budget, Table 3, Table 4 beside the paper's, McNemar on goals, controls and
    the significant pairs."""
    grid = results["grid"]
    mode = grid.get("budget_mode", "absolute")
    lines = [f"# FiFA results ({results['fifa_version']})", "",
             f"Grid: {len(grid['policies'])} policies × budget levels {grid['budgets']} × "
             f"seeds {grid['seeds']} × {len(grid['scenarios'])} scenarios (world scale "
             f"{grid['scale']}), budgets {mode}"
             + (f" (each level a share of the world's stored tokens, as it is of the paper's "
                f"{grid['paper_stored_tokens']})" if mode == "relative" else "")
             + ". Means with 95% bootstrap half-widths over seeds.", ""]
    lines += _pressure(results)
    lines += ["", "## Table 2 (all policies)", "", *table2_table(results)]
    lines += _table2_vs(results)
    lines += ["", "## Composite by budget level", "", *by_budget_table(results)]
    lines += _table3(results) + _table4_vs(results) + _mcnemar(results)
    lines += ["", "## Known-direction controls (seed 000 §6.3.2)", ""]
    lines += [f"- **{k}**: holds = {v['holds']}; "
              + json.dumps({x: y for x, y in v.items() if x != "holds"}, sort_keys=True)
              for k, v in sorted(results["controls"].items())]
    lines += ["", "## Significant pairs (paired t, Holm within each metric, p_Holm < 0.05)", "",
              "Paired by seed × scenario, averaged over budgets; d is Cohen's d_z with Hedges' "
              "correction (positive favours a), δ is Cliff's δ; the Wilcoxon signed-rank p "
              "(Holm) is the non-parametric check. Every pair is in `results.json`.", "",
              *significant_pairs_table(results)]
    return "\n".join(lines) + "\n"


def significant_pairs_table(results: Mapping[str, Any]) -> list[str]:
    """The pairs with p_Holm < 0.05 (markdown lines)."""
    return (["| metric | a | b | mean a−b | t | p_Holm | p_BH | d | δ | Wilcoxon p_Holm |",
             "|---|---|---|---|---|---|---|---|---|---|"]
            + [f"| {r['metric']} | {r['a']} | {r['b']} | {r['mean_diff']} | {r['t']} | "
               f"{_p(r['p_holm'])} | {_p(r['p_bh'])} | {r['d']} | {r['delta']} | "
               f"{_p(r['p_wilcoxon_holm'])} |"
               for r in results["pairwise"] if r["p_holm"] is not None and r["p_holm"] < 0.05])


def table2_paper_table(results: Mapping[str, Any]) -> list[str]:
    """Table 2 beside the paper's: its five policies ranked among themselves, each cell
    ours / paper (mean ± 95% half-width); markdown lines ([] without the paper's rows)."""
    t2 = (results.get("paper") or {}).get("table2") or {}
    if not t2:
        return []
    out = ["| Policy | rank (ours / paper) | " + " | ".join(_NAMES[m] for m in _NAMES) + " |",
           "|---" * (len(_NAMES) + 2) + "|"]
    for p in sorted(t2, key=lambda p: t2[p]["rank"]):
        row = t2[p]
        cells = [f"{_f(row[m]['ours'][0])} ± {_f(row[m]['ours'][1])} / "
                 f"{row[m]['paper'][0]:.3f} ± {row[m]['paper'][1]:.3f}" for m in _NAMES]
        out.append(f"| {p} | {row['rank']} / {row['paper_rank']} | " + " | ".join(cells) + " |")
    return out


def _table2_vs(results: Mapping[str, Any]) -> list[str]:
    lines = table2_paper_table(results)
    if not lines:
        return []
    tau = (results.get("paper") or {}).get("kendall_tau")
    return ["", "## Table 2 beside the paper (the paper's five policies, ranked by composite)",
            "", "Each cell: ours / paper (mean ± 95% half-width)."
            + (f" Kendall's τ between the two composite orders: {tau['tau']} "
               f"(p = {tau['p']})." if tau else ""), "", *lines]


def table3_table(results: Mapping[str, Any]) -> list[str]:
    """Table 3 (the mixed-effects ANOVA per metric, the paper's Policy row beside it);
    markdown lines ([] without fits)."""
    t3 = results.get("anova") or {}
    if not t3:
        return []
    paper = (results.get("paper") or {}).get("table3") or {}
    out = ["| metric | rows | Policy F (df) | p | η² | partial η² | Budget F | p | "
           "Policy×Budget F | p | paper F | paper p | paper η² |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in ("nc", "gcr", "sra", "pp", "ce", "composite"):
        fit = t3.get(m)
        if fit is None:
            continue
        terms = fit["terms"]
        pol, bud = terms.get("policy") or {}, terms.get("budget") or {}
        inter = terms.get("policy:budget") or {}
        pp = (paper.get(m) or {}).get("paper") or {}
        out.append(f"| {_NAMES[m]} | {fit['rows']} | {_f(pol.get('F'), 2)} ({pol.get('df')}) | "
                   f"{_p(pol.get('p'))} | {_f(pol.get('eta2'))} | "
                   f"{_f(pol.get('partial_eta2'))} | {_f(bud.get('F'), 2)} | "
                   f"{_p(bud.get('p'))} | {_f(inter.get('F'), 2)} | {_p(inter.get('p'))} | "
                   f"{pp.get('F', '–')} | {pp.get('p', '–')} | {pp.get('eta2', '–')} |")
    return out


def _table3(results: Mapping[str, Any]) -> list[str]:
    lines = table3_table(results)
    if not lines:
        return []
    return ["", "## Table 3: mixed-effects ANOVA (seed 000 §6.4.2)", "",
            "Per metric, on agent–scenario–seed units: fixed Policy, Budget and Policy × Budget "
            "(sum-to-zero contrasts), random intercepts for Scenario and Seed (statsmodels "
            "`mixedlm`, REML). F = Wald χ² / df, p from χ²; η² and partial η² from type-III "
            "sums of squares with Scenario and Seed as blocks. The paper's columns are its "
            "Policy row.", "", *lines]


def table4_table(results: Mapping[str, Any]) -> list[str]:
    """Table 4 beside the paper's (markdown lines; [] without our pairs)."""
    t4 = (results.get("paper") or {}).get("table4") or []
    rows = [r for r in t4 if r["ours"] is not None]
    if not rows:
        return []
    out = ["| comparison | metric | paper t | paper p_adj | paper d | ours mean diff | t | "
           "p_Holm | p_BH | d | δ | same sign |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o, pp = r["ours"], r["paper"]
        out.append(f"| {r['a']} vs {r['b']} | {_NAMES[r['metric']]} | {pp['t']} | "
                   f"{pp['p_adj']} | {pp['d']} | {o['mean_diff']} | {o['t']} | "
                   f"{_p(o['p_holm'])} | {_p(o['p_bh'])} | {o['d']} | {o['delta']} | "
                   f"{'yes' if r['same_sign'] else 'no' if r['same_sign'] is False else '–'} |")
    return out


def _table4_vs(results: Mapping[str, Any]) -> list[str]:
    lines = table4_table(results)
    if not lines:
        return []
    return ["", "## Table 4 beside the paper", "",
            "Paper: t, Holm-adjusted p and Hedges' d as published. Ours: paired by seed × "
            "scenario (averaged over budgets), paired t with Holm and BH over the pairs of the "
            "metric, Hedges-corrected d_z, Cliff's δ.", "", *lines]


def mcnemar_table(results: Mapping[str, Any]) -> list[str]:
    """McNemar on paired goal outcomes, every pair (markdown lines; [] without goals)."""
    rows = results.get("mcnemar") or []
    if not rows:
        return []
    return (["| a | b | goals | completed a | completed b | only a | only b | p | p_Holm | "
             "p_BH |", "|---|---|---|---|---|---|---|---|---|---|"]
            + [f"| {r['a']} | {r['b']} | {r['goals']} | {r['rate_a']} | {r['rate_b']} | "
               f"{r['table'][0][1]} | {r['table'][1][0]} | {_p(r['p'])} | {_p(r['p_holm'])} | "
               f"{_p(r['p_bh'])} |" for r in rows])


def _mcnemar(results: Mapping[str, Any]) -> list[str]:
    lines = mcnemar_table(results)
    if not lines:
        return []
    return ["", "## McNemar on paired goal outcomes (seed 000 §6.3.2)", "",
            "The same goal of the same world and budget under two policies; exact test on the "
            "discordant goals, Holm and BH over the pairs.", "", *lines]


def pressure(results: Mapping[str, Any]) -> dict[str, Any]:
    """Per budget level: its share of the stored tokens, the tokens it gave (median and
    range over worlds), and the share of runs (and of agents) in which the budget bound
    (the policy evicted or summarised). A compact results document carries it already."""
    if "pressure" in results:
        return dict(results["pressure"])
    budgets = results["grid"]["budgets"]
    acted: dict[int, list[bool]] = defaultdict(list)
    agents: dict[int, list[float]] = defaultdict(list)
    tokens: dict[int, list[int]] = defaultdict(list)
    for c in results["cells"]:
        acted[c["budget"]].append(bool(c["acted"]))
        agents[c["budget"]].append(c.get("bound_agents", 0) / max(1, len(c.get("agents") or [])))
        tokens[c["budget"]].append(int(c.get("budget_tokens", c["budget"])))
    ref = results["grid"].get("paper_stored_tokens")
    relative = bool(ref) and results["grid"].get("budget_mode") == "relative"
    return {str(b): {"share": f"1/{round(ref / b)}" if relative else "–",
                     "tokens_median": statistics.median(tokens[b]),
                     "tokens_min": min(tokens[b]), "tokens_max": max(tokens[b]),
                     "runs_bound": round(statistics.fmean(acted[b]), 4),
                     "agents_bound": round(statistics.fmean(agents[b]), 4)}
            for b in budgets}


def pressure_table(results: Mapping[str, Any]) -> list[str]:
    """The budget-pressure table (markdown lines) of :func:`pressure`."""
    budgets = results["grid"]["budgets"]
    p = pressure(results)
    return ["| level | " + " | ".join(str(b) for b in budgets) + " |",
            "|---" * (len(budgets) + 1) + "|",
            "| share of stored | " + " | ".join(p[str(b)]["share"] for b in budgets) + " |",
            "| tokens (median, range over worlds) | " + " | ".join(
                f"{p[str(b)]['tokens_median']:.0f} ({p[str(b)]['tokens_min']}–"
                f"{p[str(b)]['tokens_max']})" for b in budgets) + " |",
            "| runs bound | " + " | ".join(f"{p[str(b)]['runs_bound']:.2f}"
                                           for b in budgets) + " |",
            "| agents bound | " + " | ".join(f"{p[str(b)]['agents_bound']:.2f}"
                                             for b in budgets) + " |"]


def _pressure(results: Mapping[str, Any]) -> list[str]:
    return ["## Budget pressure", "",
            "Tokens each level gave (median, range over worlds) and the share of runs and of "
            "agents whose store evicted or summarised (the budget bound).", "",
            *pressure_table(results)]


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
    ax.set_xlabel("budget level (paper tokens; a share of what agents store)"
                  if results["grid"].get("budget_mode") == "relative" else "budget (tokens)")
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
