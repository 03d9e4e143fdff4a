"""The OSL-MR Table 2 run (``mars bench oslmr``): the table of :mod:`mars_core.bench.oslmr`
and, with ``sensitivity``, the sensitivity of :mod:`mars_core.bench.oslmr_sensitivity`,
written to a results directory. Above both modules, so neither imports the other back.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mars_core.bench import locomo as L
from mars_core.bench.locomo_data import load_locomo
from mars_core.bench.oslmr import format_table2, retention_prior_ablation, table2
from mars_core.bench.oslmr_sensitivity import write_sensitivity
from mars_core.bench.report import results_dir
from mars_core.embeddings import Embedder
from mars_core.knowledge.learn import FeatureLog

__all__ = ["run_table2"]


def run_table2(data: str | os.PathLike[str], out: str | os.PathLike[str], *,
               quick: bool = False, counters: Sequence[str] = ("store", "words"),
               embedder: Embedder | None = None, progress: bool = True,
               sensitivity: bool = False, bc_budgets: Sequence[int] | None = None
               ) -> dict[str, Any]:
    """Run Table 2 on a LoCoMo file; write ``table2.json``, ``table2.md``, ``trace.jsonl``.

    Args:
        data: the LoCoMo JSON file (never vendored).
        out: output directory (refused before the run if it cannot be one).
        quick: 3 conversations × 150 turns × 25 questions, hashing embedder.
        counters: token counters of the budgets (store tokens first: the headline).
        embedder: override the embedder (default MiniLM, hashing when ``quick``).
        progress: a tqdm bar.
        sensitivity: also §4.4's reward sensitivity and the Mixed-Score freshness
            variants (:mod:`mars_core.bench.oslmr_sensitivity`): ``sensitivity.json``,
            ``sensitivity.md`` and one ``oslmr_sensitivity_b{B}.png`` per budget.
        bc_budgets: budgets at which the sensitivity retrains the BC-learner per
            multiplier (default 64, the budget of Fig. 2; none when ``quick``).

    Returns:
        ``{"meta": ..., "rows": [...], "table": markdown of the first counter}`` (and
        ``"sensitivity"``, ``"variants"`` with ``sensitivity``).

    Raises:
        ValidationError: a missing or malformed data file, or an unusable ``out``.
    """
    from mars_core.bench.evidence import _bar, _quick, default_bench_embedder

    convs = load_locomo(data)
    where = results_dir(out)
    if quick:
        convs = _quick(convs, 3, 150, 25)
    emb = L.CachedEmbedder(embedder or default_bench_embedder(quick))
    t0 = time.perf_counter()
    prepared = L.prepare(convs, emb)
    t_prep = time.perf_counter() - t0
    trace = FeatureLog()
    with _bar(len(prepared) * len(counters), "oslmr table 2", progress) as bar:
        rows = table2(prepared, counters=counters, trace=trace, tick=lambda: bar.update(1))
    ablation = retention_prior_ablation(convs)
    meta = {"data": Path(data).name, "conversations": len(prepared),
            "questions": sum(len(cd.questions) for cd in prepared),
            "turns": sum(len(cd.ids) for cd in prepared), "embedder": emb.name,
            "quick": quick, "counters": list(counters),
            "seconds_prepare": round(t_prep, 1),
            "seconds_table": round(time.perf_counter() - t0 - t_prep, 1),
            "retention_prior_ablation": ablation}
    (where / "table2.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1),
                                       encoding="utf-8")
    trace.save(where / "trace.jsonl")
    md = [f"# Seed 001 Table 2 on {meta['data']} ({meta['conversations']} conversations, "
          f"{meta['questions']} questions, {meta['embedder']})", ""]
    for c in counters:
        md += [f"## Budgets in {c} tokens", "", format_table2(rows, c), ""]
    md += ["## The store's retention learner with a write-time Mixed-Score feature", "",
           "| features | held-out ROC AUC | average precision |", "|---|---|---|"]
    md += [f"| {k} | {v['auc']:.3f} ± {v['auc_std']:.3f} | {v['ap']:.3f} ± {v['ap_std']:.3f} |"
           for k, v in ablation.items()]
    (where / "table2.md").write_text("\n".join(md), encoding="utf-8")
    result = {"meta": meta, "rows": rows, "table": format_table2(rows, counters[0])}
    if sensitivity:
        result.update(write_sensitivity(prepared, rows, where, counter=counters[0],
                                        bc_budgets=(() if quick else (64,))
                                        if bc_budgets is None else bc_budgets,
                                        progress=progress))
    return result
