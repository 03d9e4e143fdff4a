"""FiFA, the Forgetful-but-Faithful benchmark (seed 000 §6) as a deterministic simulator.

``run_fifa(out)`` generates the worlds (five scenario types, a population with the five
archetypes, bursty scheduling, an evolving social network, goals with prerequisites and
deadlines, planted sensitive facts, adversarial prompts, TTL expiries and deletion
requests), measures what each world's agents store, sets every budget level to the same
share of it as the paper's level is of its agents' store (:mod:`~mars_core.bench.fifa.paper`),
replays each world through one store per cast agent for every policy × budget, judges every
answer with rule-based validators, runs the paper's statistics (mixed-effects ANOVA, paired
t with Hedges' d, Cliff's δ, Wilcoxon, McNemar, Holm and Benjamini–Hochberg; scipy and
statsmodels, the ``bench`` extra), sets Tables 2–4 beside the paper's, and writes
``results.json``, ``report.md``, ``timing.json`` (wall time, kept out of the scores) and two
plots.

The simulator and its metrics are frozen under :data:`FIFA_VERSION`; no policy
parameter is tuned on FiFA (every store runs its policy's defaults).

Example:
    >>> import tempfile, pathlib, json
    >>> with tempfile.TemporaryDirectory() as d:
    ...     res = run_fifa(pathlib.Path(d), seeds=(0,), budgets=(2000,), policies=("fifo",),
    ...                    scenarios=("crisis_management",), scale=0.3, progress=False,
    ...                    plots=False, workers=1)
    ...     sorted(p.name for p in pathlib.Path(d).iterdir())
    ['report.md', 'results.json', 'timing.json']
    >>> res["fifa_version"] == FIFA_VERSION
    True
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mars_core.bench.fifa.analysis import anova, mcnemar_pairs, pairwise, versus_paper
from mars_core.bench.fifa.metrics import COMPOSITE, METRICS, TASK_COMPOSITE
from mars_core.bench.fifa.paper import PAPER_STORED_TOKENS
from mars_core.bench.fifa.report import (
    aggregate,
    controls,
    plot,
    render_markdown,
    write_json,
)
from mars_core.bench.fifa.runner import (
    BUDGETS,
    DEFAULT_SCALE,
    POLICIES,
    QUICK,
    SEEDS,
    BudgetMode,
    grid_tasks,
    measure_volumes,
    run_grid,
)
from mars_core.bench.fifa.scenarios import SCENARIOS
from mars_core.bench.fifa.simulator import SENSITIVITY, RunSettings, Volume
from mars_core.bench.pages import git_commit
from mars_core.bench.report import results_dir
from mars_core.errors import ValidationError

__all__ = ["BUDGETS", "DEFAULT_SCALE", "FIFA_VERSION", "PAPER_STORED_TOKENS", "POLICIES",
           "SEEDS", "BudgetMode", "run_fifa"]

FIFA_VERSION = "fifa-1.2.0"
"""Version of the simulator, validators and metrics; written into every result."""


def run_fifa(  # noqa: PLR0917 - the signature the CLI and the issue name
    out: str | os.PathLike[str],
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    budgets: Iterable[int] | None = None,
    policies: Iterable[str] | None = None,
    progress: bool = True,
    *,
    scenarios: Iterable[str] | None = None,
    scale: float | None = None,
    workers: int | None = None,
    plots: bool = True,
    budget_mode: BudgetMode = "relative",
    paper_stored: int = PAPER_STORED_TOKENS,
) -> dict[str, Any]:
    """Run the FiFA grid and write its reports into ``out``; returns the results document.

    Args:
        out: output directory (created before the run).
        quick: the small grid (:data:`~mars_core.bench.fifa.runner.QUICK`: one seed, two
            levels, one scenario) unless axes are given.
        seeds: world seeds (default 0..9).
        budgets: budget levels, in the paper's tokens (default 2k, 4k, 8k, 16k, 32k).
        policies: policy names (default the six of seed 000 and ``meta``).
        progress: show a tqdm progress bar.
        scenarios: scenario names (default all five; quick: one).
        scale: world size multiplier (default :data:`DEFAULT_SCALE`; quick 1.0).
        workers: processes (default: the machine's cores, at most 2 tasks' worth).
        plots: write the heatmap and distribution plots (matplotlib, Agg).
        budget_mode: ``"relative"`` (a level is the same share of what the world's agents
            store as it is of ``paper_stored``) or ``"absolute"`` (a level is its tokens).
        paper_stored: tokens a paper agent stores (the reference of the relative mode).

    Raises:
        ValidationError: bad axes or budget mode (nothing is written).
    """
    q = QUICK if quick else {}
    seeds_t = tuple(seeds if seeds is not None else q.get("seeds", SEEDS))
    budgets_t = tuple(sorted(set(budgets if budgets is not None else q.get("budgets", BUDGETS))))
    pols = tuple(policies if policies is not None else POLICIES)
    scale_v = float(scale if scale is not None else q.get("scale", DEFAULT_SCALE))
    names = tuple(scenarios if scenarios is not None
                  else q.get("scenarios", tuple(s.name for s in SCENARIOS)))
    if set(names) - {s.name for s in SCENARIOS}:
        raise ValidationError(f"unknown scenarios in {names}")
    if budget_mode not in ("relative", "absolute"):
        raise ValidationError(f"budget_mode must be 'relative' or 'absolute', not {budget_mode!r}")
    if not isinstance(paper_stored, int) or paper_stored <= 0:
        raise ValidationError("paper_stored must be a positive number of tokens")
    grid_tasks(seeds_t, pols, budgets_t, scale_v, scenarios=names)  # validate before writing
    folder = results_dir(out)
    n_workers = workers or min(os.cpu_count() or 1, 2)
    commit = git_commit(Path(__file__).parent)  # the code the grid runs on, not a later one
    started = time.perf_counter()
    volumes = measure_volumes(seeds_t, names, scale_v, workers=n_workers, progress=progress) \
        if budget_mode == "relative" else None
    tasks = grid_tasks(seeds_t, pols, budgets_t, scale_v, volumes=volumes,
                       paper_stored=paper_stored, scenarios=names)
    cells = run_grid(tasks, workers=n_workers, progress=progress)
    run_wall = time.perf_counter() - started
    results = _results(cells, seeds=seeds_t, budgets=budgets_t, pols=pols, names=names,
                       scale=scale_v, mode=budget_mode, paper_stored=paper_stored,
                       volumes=volumes, workers=n_workers, commit=commit)
    wall = time.perf_counter() - started
    write_json(folder / "results.json", results)
    (folder / "report.md").write_text(render_markdown(results), encoding="utf-8")
    write_json(folder / "timing.json", {**_timing(cells, wall, len(tasks)),
                                        "run_wall_s": round(run_wall, 2),
                                        "analysis_wall_s": round(wall - run_wall, 2)})
    if plots:
        plot(results, results["cells"], folder)
    return results


def _results(cells: list[dict[str, Any]], *, seeds: tuple[int, ...],
             budgets: tuple[int, ...], pols: tuple[str, ...], names: tuple[str, ...],
             scale: float, mode: str, paper_stored: int,
             volumes: dict[tuple[int, str], Volume] | None, workers: int,
             commit: str) -> dict[str, Any]:
    clean = [{k: v for k, v in c.items() if k != "wall_s"} for c in cells]
    for c in clean:
        c["metrics"] = {k: (None if v is None else round(v, 6)) for k, v in c["metrics"].items()}
    clean.sort(key=lambda c: (c["policy"], c["budget"], c["seed"], c["scenario"]))
    summary = aggregate(clean)
    pairs = pairwise(clean, pols)
    table3 = anova(clean, workers=workers)
    return {
        "fifa_version": FIFA_VERSION,
        "commit": commit,
        "grid": {"seeds": list(seeds), "budgets": list(budgets), "policies": list(pols),
                 "scenarios": list(names), "scale": scale, "budget_mode": mode,
                 "paper_stored_tokens": paper_stored},
        "settings": {"run": vars(RunSettings()), "composite": COMPOSITE,
                     "task_composite": TASK_COMPOSITE, "metrics": list(METRICS),
                     "sensitivity_labels": {k.value: v for k, v in SENSITIVITY.items()}},
        "volumes": {f"{s}/{sc}": {"mean": round(v.mean, 1), "peaks": list(v.peaks),
                                  "heaviest": v.heaviest}
                    for (s, sc), v in sorted((volumes or {}).items())},
        "summary": summary,
        "pairwise": pairs,
        "mcnemar": mcnemar_pairs(clean, pols),
        "anova": table3,
        "paper": versus_paper(summary, pairs, table3),
        "controls": controls(clean, summary),
        "cells": clean,
    }


def _timing(cells: list[dict[str, Any]], wall: float, tasks: int) -> dict[str, Any]:
    computed = [c for c in cells if c["reused_from"] is None]
    return {"wall_s": round(wall, 2), "tasks": tasks, "cells": len(cells),
            "computed_cells": len(computed),
            "cell_wall_s_sum": round(sum(c["wall_s"] for c in computed), 2),
            "cpus": os.cpu_count(), "python": platform.python_version()}
