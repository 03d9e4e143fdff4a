"""The FiFA pages, generated from results files the shipped command writes.

``mars bench fifa --regenerate-docs`` (or ``make fifa-docs``) runs the full grid and the
quick grid, writes ``docs/benchmarks/results/fifa.json`` (the full grid without its cells:
summaries, statistics, the paper side by side, budget pressure; the command and the commit
it ran on) and ``docs/benchmarks/results/fifa_quick.json`` (every metric of every cell of
the quick grid), redraws Fig. 3 and Fig. 4 into ``docs/benchmarks/img/``, and rewrites the
generated blocks of ``docs/benchmarks/fifa.md`` and ``docs/benchmarks/reproductions.md``
(:mod:`mars_core.bench.pages`). ``--from DIR`` takes the full grid of an earlier run's
``results.json`` instead of running it again. ``tests/test_reproduction_pages.py`` reruns
the quick grid and fails when its figures differ from the page's.

Example:
    >>> cells = {"fifo/2000/x": {"composite": 0.5}}
    >>> quick_diff({"cells": cells}, {"cells": {"fifo/2000/x": {"composite": 0.51}}})
    ['fifo/2000/x composite: page 0.5, code 0.51']
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mars_core.bench.fifa.metrics import METRICS
from mars_core.bench.fifa.paper import PAPER_TABLE2, PAPER_TABLE3
from mars_core.bench.fifa.report import (
    _NAMES,
    _f,
    _p,
    by_budget_table,
    mcnemar_table,
    plot,
    pressure,
    pressure_table,
    table2_paper_table,
    table2_table,
    table3_table,
    table4_table,
)
from mars_core.bench.fifa.runner import POLICIES, QUICK, grid_tasks, measure_volumes, run_grid
from mars_core.bench.pages import RESULTS, provenance, read_results, splice, write_results

__all__ = ["COMMAND", "DIAGNOSTIC_POLICIES", "FULL_FILE", "NO_CHECK", "QUICK_FILE", "compact",
           "page_blocks", "quick_diff",
           "quick_run", "regenerate_docs", "repro_blocks", "summary_rows"]

COMMAND = "mars bench fifa --regenerate-docs"
"""The one command that regenerates every FiFA figure of the documentation."""
FULL_FILE = RESULTS / "fifa.json"
QUICK_FILE = RESULTS / "fifa_quick.json"
PAGE = Path("benchmarks") / "fifa.md"
REPRO = Path("benchmarks") / "reproductions.md"
DIAGNOSTIC_POLICIES: tuple[str, ...] = ("fifo", "hybrid")
"""Policies the quick grid also runs with answers that skip the output check."""
NO_CHECK = "/no-output-check"
_KEEP = ("fifa_version", "grid", "settings", "summary", "pairwise", "mcnemar", "anova",
         "paper", "controls")
_ND = 4


def compact(results: Mapping[str, Any]) -> dict[str, Any]:
    """A full run's results without its cells (what the pages show), with budget pressure
    and the range of the worlds' stored volumes."""
    doc = {k: results[k] for k in _KEEP}
    doc["pressure"] = pressure(results)
    vols = list((results.get("volumes") or {}).values())
    if vols:
        peaks = [p for v in vols for p in v["peaks"]]
        doc["volumes"] = {"worlds": len(vols), "mean_min": min(v["mean"] for v in vols),
                          "mean_max": max(v["mean"] for v in vols), "peak_min": min(peaks),
                          "peak_max": max(peaks), "heaviest": max(v["heaviest"] for v in vols)}
    return doc


def quick_run(*, workers: int = 1, progress: bool = False) -> dict[str, Any]:
    """The quick grid (:data:`~mars_core.bench.fifa.runner.QUICK`, every policy), every
    metric of every cell rounded to 4 decimals: what the page's quick table shows and what
    the test compares."""
    from mars_core.bench.fifa import FIFA_VERSION

    seeds, budgets, scale = QUICK["seeds"], QUICK["budgets"], QUICK["scale"]
    scenarios = QUICK["scenarios"]
    vols = measure_volumes(seeds, scenarios, scale, workers=workers)
    tasks = grid_tasks(seeds, POLICIES, budgets, scale, volumes=vols, scenarios=scenarios)
    tasks += [t._replace(redact=False) for t in tasks if t.policy in DIAGNOSTIC_POLICIES]
    cells = iter(run_grid(tasks, workers=workers, progress=progress))
    out = {}
    for task in tasks:
        for _level in task.budgets:
            c = next(cells)
            key = f"{c['policy']}/{c['budget']}/{c['scenario']}" + (
                "" if task.redact else NO_CHECK)
            out[key] = {m: (None if c["metrics"][m] is None else round(c["metrics"][m], _ND))
                        for m in METRICS}
            out[key]["withheld_per_answer"] = round(
                c["counts"]["withheld"] / max(1, c["counts"]["answers"]), _ND)
    return {"fifa_version": FIFA_VERSION,
            "grid": {"seeds": list(seeds), "budgets": list(budgets), "scale": scale,
                     "scenarios": list(scenarios), "policies": list(POLICIES),
                     "diagnostic_policies": list(DIAGNOSTIC_POLICIES)},
            "cells": dict(sorted(out.items()))}


def quick_diff(page: Mapping[str, Any], code: Mapping[str, Any]) -> list[str]:
    """Where the quick figures of a results file differ from a fresh run's (empty: none)."""
    out = []
    a, b = page.get("cells") or {}, code.get("cells") or {}
    for key in sorted(set(a) | set(b)):
        ma, mb = a.get(key), b.get(key)
        if ma is None or mb is None:
            out.append(f"{key}: {'missing on the page' if ma is None else 'not run by the code'}")
            continue
        out += [f"{key} {m}: page {ma.get(m)}, code {mb.get(m)}"
                for m in sorted(set(ma) | set(mb)) if ma.get(m) != mb.get(m)]
    return out


# --- rendering ---------------------------------------------------------------------------


def _stamp(full: Mapping[str, Any], quick: Mapping[str, Any] | None = None) -> str:
    g = full["grid"]
    line = (f"*Generated by `{full['command']}` ({full['fifa_version']}) at commit "
            f"`{full['commit']}` from `docs/benchmarks/results/fifa.json`: "
            f"{len(g['policies'])} policies × levels {g['budgets']} × seeds "
            f"{g['seeds'][0]}–{g['seeds'][-1]} × {len(g['scenarios'])} scenarios, world scale "
            f"{g['scale']}, {g['budget_mode']} budgets")
    if quick is not None:
        line += (f"; the quick grid from `docs/benchmarks/results/fifa_quick.json` at commit "
                 f"`{quick['commit']}`")
    return line + ".*"


def _iv(doc: Mapping[str, Any], policy: str, metric: str, budget: int | None = None
        ) -> Mapping[str, Any]:
    s = doc["summary"]
    iv: Mapping[str, Any] = (s["overall"][policy][metric] if budget is None
                             else s["by_budget"][f"{policy}@{budget}"][metric])
    return iv


def _mean(doc: Mapping[str, Any], policy: str, metric: str, budget: int | None = None
          ) -> float:
    v = _iv(doc, policy, metric, budget)["mean"]
    return float("nan") if v is None else float(v)


def _range(values: Sequence[float]) -> str:
    return f"{min(values):.3f}–{max(values):.3f}"


def _inside(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per metric, the paper's policies whose Table 2 mean lies in our 95 % interval."""
    out: dict[str, list[str]] = {}
    for m in _NAMES:
        out[m] = [p for p in PAPER_TABLE2 if p in doc["summary"]["overall"]
                  and (iv := _iv(doc, p, m))["low"] is not None
                  and iv["low"] <= PAPER_TABLE2[p][m][0] <= iv["high"]]
    return out


def _facts(doc: Mapping[str, Any]) -> list[str]:
    """The comparisons the page's explanations rely on, computed from the results file."""
    pols = list(doc["summary"]["overall"])
    budgets = doc["grid"]["budgets"]
    lo, hi = budgets[0], budgets[-1]
    t2 = doc["paper"]["table2"]
    ours_order = sorted(t2, key=lambda p: t2[p]["rank"])
    paper_order = sorted(t2, key=lambda p: t2[p]["paper_rank"])
    tau = doc["paper"].get("kendall_tau") or {}
    inside = _inside(doc)
    comp = doc["anova"].get("composite") or {"terms": {}}
    pol_f = (comp["terms"].get("policy") or {}).get("F")
    bud_f = (comp["terms"].get("budget") or {}).get("F")
    answer = {b: statistics.fmean(_mean(doc, p, "answer_tokens", b) for p in pols)
              for b in budgets}
    held = {b: statistics.fmean(_mean(doc, p, "held_tokens", b) for p in pols) for b in budgets}
    paper_comp = [v["composite"][0] for v in PAPER_TABLE2.values()]
    return [
        f"- Composite: ours {_range([_mean(doc, p, 'composite') for p in pols])} over "
        f"{len(pols)} policies, the paper {_range(paper_comp)} over its five.",
        f"- Order of the paper's five by composite: ours {' > '.join(ours_order)}; the paper "
        f"{' > '.join(paper_order)}; Kendall's τ {tau.get('tau', '–')} (p = "
        f"{tau.get('p', '–')}).",
        "- Paper Table 2 means inside our 95 % interval: " + "; ".join(
            f"{_NAMES[m]} {len(v)} of {len(PAPER_TABLE2)}" + (f" ({', '.join(v)})" if v else "")
            for m, v in inside.items()) + ".",
        f"- Composite at level {lo} / {hi}: " + ", ".join(
            f"{p} {_mean(doc, p, 'composite', lo):.3f} / {_mean(doc, p, 'composite', hi):.3f}"
            for p in pols) + f"; on the composite, Budget F = {_f(bud_f, 1)} against Policy "
        f"F = {_f(pol_f, 1)} (the paper: budget p > 0.27, Policy F "
        f"{PAPER_TABLE3['composite']['F']}).",
        "- Tokens per answer (of 256), mean over policies, by level: " + ", ".join(
            f"{b} {answer[b]:.1f}" for b in budgets) + "; tokens the store held when it "
        "answered: " + ", ".join(f"{b} {held[b]:.0f}" for b in budgets) + ".",
        "- " + "; ".join(f"{_NAMES[m]} ours {_range([_mean(doc, p, m) for p in pols])}, paper "
                         f"{_range([v[m][0] for v in PAPER_TABLE2.values()])}"
                         for m in ("nc", "gcr", "sra", "pp", "ce")) + ".",
        "- SRA_opp (opportunity-normalised social recall): " + ", ".join(
            f"{p} {_mean(doc, p, 'sra_opp'):.3f}" for p in pols) + "; leakage (sensitive "
        "tokens per answer): " + ", ".join(f"{p} {_mean(doc, p, 'leakage'):.3f}"
                                           for p in pols) + "."]


def _controls(doc: Mapping[str, Any]) -> list[str]:
    c = doc["controls"]
    out = []
    r = c.get("random_below_lru_recency")
    if r is not None:
        out.append(f"- *Random-Drop below LRU when recency dominates* ({', '.join(r['scenarios'])}"
                   f"): {'holds' if r['holds'] else 'fails'} — composite LRU − Random "
                   f"{r['mean_diff']:+.4f}, d = {r['d']}, Wilcoxon p = {_p(r['p_wilcoxon'])} "
                   f"over {r['pairs']} seeds.")
    r = c.get("reflection_tokens_and_leakage")
    if r is not None:
        tok, leak = r["token_cost"], r["leakage"]
        out.append(f"- *Reflection lowers token cost without raising leakage* (against LRU): "
                   f"{'holds' if r['holds'] else 'fails'} — token cost "
                   f"{tok['mean_diff']:+.2f} tokens per turn (d = {tok['d']}, paired t p = "
                   f"{_p(tok['p_t'])}: {'lower' if r['lowers_token_cost'] else 'not lower'}); "
                   f"leakage {leak['mean_diff']:+.4f} (d = {leak['d']}, p = {_p(leak['p_t'])}: "
                   f"{'not raised' if r['leakage_not_raised'] else 'raised'}).")
    r = c.get("budget_monotone")
    if r is not None:
        bad = ", ".join(f"{v[0]} {v[1]}→{v[2]} ({v[3]:.3f}→{v[4]:.3f})" for v in r["violations"])
        out.append("- *Performance non-decreasing in budget*: " + (
            "holds for every policy." if r["holds"] else f"fails: {bad}."))
    return out


def _mcnemar_summary(doc: Mapping[str, Any]) -> list[str]:
    rows = doc.get("mcnemar") or []
    if not rows:
        return ["No goal reached its deadline in this grid."]
    rate: dict[str, float] = {}
    for r in rows:
        rate[r["a"]], rate[r["b"]] = r["rate_a"], r["rate_b"]
    ns = [f"{r['a']} vs {r['b']}" for r in rows if r["p_holm"] >= 0.05]
    return [f"McNemar on goals ({rows[0]['goals']:,} paired goal outcomes per pair, every "
            "world and level). Goals completed: " + ", ".join(
                f"{p} {v:.3f}" for p, v in sorted(rate.items(), key=lambda kv: -kv[1]))
            + f". {len(rows) - len(ns)} of {len(rows)} pairs differ at p_Holm < 0.05"
            + (f"; not significant: {', '.join(ns)}." if ns else "."),
            "", "<details><summary>Every pair</summary>", "", *mcnemar_table(doc), "",
            "</details>"]


def _quick_table(quick: Mapping[str, Any]) -> list[str]:
    g = quick["grid"]
    cols = [(sc, b) for sc in g["scenarios"] for b in g["budgets"]]
    head = "| policy | " + " | ".join(f"{sc.replace('_', ' ')} {b}" for sc, b in cols) + " |"
    lines = [head, "|---" * (len(cols) + 1) + "|"]
    rows = [(p, "") for p in g["policies"]] + [
        (p, NO_CHECK) for p in g.get("diagnostic_policies", ())]
    for p, tail in rows:
        vals = []
        for sc, b in cols:
            m = quick["cells"][f"{p}/{b}/{sc}{tail}"]
            vals.append(f"{_f(m['composite'])} ({_f(m['nc'], 2)} / {_f(m['gcr'], 2)} / "
                        f"{_f(m['pp'], 2)}); {_f(m['answer_tokens'], 1)} tokens, "
                        f"{_f(m['withheld_per_answer'], 1)} withheld")
        label = p if not tail else f"{p}, answers without the output check (diagnostic)"
        lines.append(f"| {label} | " + " | ".join(vals) + " |")
    return lines


def page_blocks(full: Mapping[str, Any], quick: Mapping[str, Any]) -> dict[str, str]:
    """The generated blocks of ``docs/benchmarks/fifa.md``."""
    tau = full["paper"].get("kendall_tau") or {}
    g = quick["grid"]
    return {
        "fifa/provenance": _stamp(full, quick),
        "fifa/pressure": "\n".join(pressure_table(full)),
        "fifa/table2": "\n".join(table2_table(full)),
        "fifa/table2-paper": "\n".join(table2_paper_table(full)) + (
            f"\n\nKendall's τ between the two composite orders: {tau['tau']} "
            f"(p = {tau['p']})." if tau else ""),
        "fifa/fig4": "\n".join(by_budget_table(full)),
        "fifa/table3": "\n".join(table3_table(full)),
        "fifa/table4": "\n".join(table4_table(full)),
        "fifa/mcnemar": "\n".join(_mcnemar_summary(full)),
        "fifa/controls": "\n".join(_controls(full)),
        "fifa/facts": "\n".join(_facts(full)),
        "fifa/quick": "\n".join([
            f"*Quick grid (`mars bench fifa --quick`; {full['fifa_version']}, commit "
            f"`{quick['commit']}`): every policy, seed {g['seeds'][0]}, levels {g['budgets']}, "
            f"{' and '.join(g['scenarios'])}, scale {g['scale']}. Each cell: composite (NC / "
            "GCR / PP); tokens per answer (of 256); memories the output check's semantic "
            "pass withheld per answer. Every metric of every cell is in `docs/benchmarks/"
            "results/fifa_quick.json`, and `tests/test_reproduction_pages.py` reruns the grid "
            "and fails when one differs.*", "", *_quick_table(quick)]),
    }


def _table3_short(doc: Mapping[str, Any]) -> list[str]:
    out = ["| metric | F ours / paper | p ours / paper | η² ours / paper |",
           "|---|---|---|---|"]
    for m in ("nc", "gcr", "sra", "pp", "ce", "composite"):
        fit = doc["anova"].get(m)
        pol = (fit or {"terms": {}})["terms"].get("policy") or {}
        pp = PAPER_TABLE3[m]
        out.append(f"| {_NAMES[m]} | {_f(pol.get('F'), 1)} / {pp['F']} | {_p(pol.get('p'))} / "
                   f"{'< ' if pp['p'] <= 0.001 else ''}{pp['p']} | {_f(pol.get('eta2'))} / "
                   f"{pp['eta2']} |")
    return out


def _table4_short(doc: Mapping[str, Any]) -> list[str]:
    out = ["| comparison | metric | d paper | d ours (p_Holm) | Cliff's δ ours | same sign |",
           "|---|---|---|---|---|---|"]
    for r in doc["paper"]["table4"]:
        o = r["ours"]
        if o is None:
            continue
        ns = " n.s." if o["p_holm"] is None or o["p_holm"] >= 0.05 else ""
        out.append(f"| {r['a']} vs {r['b']} | {_NAMES[r['metric']]} | {r['paper']['d']:+.2f} | "
                   f"{o['d']:+.2f} ({_p(o['p_holm'])}{ns}) | {o['delta']:+.2f} | "
                   f"{'yes' if r['same_sign'] else 'no'} |")
    return out


def repro_blocks(full: Mapping[str, Any], quick: Mapping[str, Any]) -> dict[str, str]:
    """The generated blocks of the FiFA section of ``docs/benchmarks/reproductions.md``."""
    tau = full["paper"].get("kendall_tau") or {}
    return {
        "repro/fifa-provenance": _stamp(full, quick),
        "repro/fifa-table2": "\n".join(table2_paper_table(full)) + (
            f"\n\nKendall's τ between the two composite orders: {tau['tau']}." if tau else ""),
        "repro/fifa-table3": "\n".join(_table3_short(full)),
        "repro/fifa-table4": "\n".join(_table4_short(full)),
        "repro/fifa-facts": "\n".join(_facts(full)),
    }


def summary_rows(full: Mapping[str, Any]) -> list[dict[str, str]]:
    """FiFA's rows of the reproductions summary: paper item, paper value, ours, verdict."""
    rows: list[dict[str, str]] = []
    t2 = full["paper"]["table2"]
    for p in sorted(t2, key=lambda p: t2[p]["paper_rank"]):
        ours, paper = t2[p]["composite"]["ours"], t2[p]["composite"]["paper"]
        inside = ours[0] is not None and abs(ours[0] - paper[0]) <= (ours[1] or 0.0)
        rows.append({"item": f"Table 2, {p} composite (rank)",
                     "paper": f"{paper[0]:.3f} ({t2[p]['paper_rank']})",
                     "ours": f"{_f(ours[0])} ± {_f(ours[1])} ({t2[p]['rank']})",
                     "verdict": ("agrees" if inside else "differs")
                     + ("" if t2[p]["rank"] == t2[p]["paper_rank"] else ", rank differs")})
    for m in ("nc", "gcr", "sra", "pp", "ce", "composite"):
        pol = ((full["anova"].get(m) or {"terms": {}})["terms"].get("policy") or {})
        pp = PAPER_TABLE3[m]
        sig = pol.get("p") is not None and pol["p"] < 0.05
        rows.append({"item": f"Table 3, Policy effect on {_NAMES[m]} (F, η²)",
                     "paper": f"{pp['F']}, {pp['eta2']}",
                     "ours": f"{_f(pol.get('F'), 1)}, {_f(pol.get('eta2'))}",
                     "verdict": ("same significance" if sig == bool(pp["significant"])
                                 else "significance differs")
                     + "; magnitudes not comparable (the paper's is a one-way ANOVA)"})
    for r in full["paper"]["table4"]:
        o = r["ours"]
        if o is None:
            continue
        rows.append({"item": f"Table 4, {r['a']} vs {r['b']} on {_NAMES[r['metric']]} (d)",
                     "paper": f"{r['paper']['d']:+.2f}", "ours": f"{o['d']:+.2f}",
                     "verdict": "same sign" if r["same_sign"] else "opposite sign"})
    budgets = full["grid"]["budgets"]
    bud = ((full["anova"].get("composite") or {"terms": {}})["terms"].get("budget") or {})
    pols = list(full["summary"]["overall"])
    lo = statistics.fmean(_mean(full, p, "composite", budgets[0]) for p in pols)
    hi = statistics.fmean(_mean(full, p, "composite", budgets[-1]) for p in pols)
    rows.append({"item": "Fig. 4, composite by budget (mean over policies, lowest → highest "
                         "level)", "paper": "flat (budget p > 0.27)",
                 "ours": f"{lo:.3f} → {hi:.3f} (Budget F {_f(bud.get('F'), 1)})",
                 "verdict": "differs: budget matters here"
                 if bud.get("p") is not None and bud["p"] < 0.05 else "agrees"})
    return rows


# --- regeneration ------------------------------------------------------------------------


def regenerate_docs(docs: Path, *, full_results: Mapping[str, Any] | None = None,
                    workers: int | None = None, progress: bool = True,
                    out: Path | None = None, command: str = COMMAND,
                    quick_only: bool = False) -> dict[str, Any]:
    """Run (or take) the full grid, run the quick grid, write both results files, redraw the
    figures and rewrite the pages' generated blocks.

    Args:
        docs: the ``docs/`` directory of a checkout.
        full_results: an earlier full run's ``results.json`` (with its cells); None runs
            the full grid now (into ``out``, or a temporary directory).
        workers: processes (default: the machine's cores, at most 2).
        progress: tqdm bars.
        out: where the full run writes its own files.
        command: recorded in the results files.
        quick_only: keep the full grid's results file as it is (its commit says when it
            ran; its figures are not redrawn) and run the quick grid only — when the full
            grid (hours on two cores) cannot run again now.

    Returns:
        ``{"full": compact results, "quick": quick results, "pages": [pages written]}``.
    """
    from mars_core.bench.fifa import run_fifa

    stamp = provenance(command, docs)
    if quick_only:
        return _regenerate_quick(docs, stamp, workers or 2, progress)
    if full_results is None:
        with tempfile.TemporaryDirectory() as tmp:
            full_results = run_fifa(out or Path(tmp), progress=progress, workers=workers,
                                    plots=False)
    n = workers or 2
    full = {**compact(full_results), **stamp,
            "commit": str(full_results.get("commit") or stamp["commit"])}
    quick = {**quick_run(workers=n, progress=progress), **stamp}
    full = write_results(docs / FULL_FILE, full)
    quick = write_results(docs / QUICK_FILE, quick)
    img = docs / "benchmarks" / "img"
    plot(full_results, full_results["cells"], img)
    return _render(docs, full, quick)


def _regenerate_quick(docs: Path, stamp: Mapping[str, Any], workers: int,
                      progress: bool) -> dict[str, Any]:
    """The quick grid run again and the pages rendered with the full grid kept."""
    full = read_results(docs / FULL_FILE)
    quick = write_results(docs / QUICK_FILE,
                          {**quick_run(workers=workers, progress=progress), **stamp})
    return _render(docs, full, quick)


def _render(docs: Path, full: dict[str, Any], quick: dict[str, Any]) -> dict[str, Any]:
    """Rewrite the generated blocks of both pages from the results (the caller rewrites
    the summary)."""
    pages = []
    for page, blocks in ((PAGE, page_blocks(full, quick)), (REPRO, repro_blocks(full, quick))):
        path = docs / page
        path.write_text(splice(path.read_text(encoding="utf-8"), blocks), encoding="utf-8")
        pages.append(str(page))
    return {"full": full, "quick": quick, "pages": pages}


def load(docs: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two FiFA results files of a checkout's ``docs/``."""
    return read_results(docs / FULL_FILE), read_results(docs / QUICK_FILE)
