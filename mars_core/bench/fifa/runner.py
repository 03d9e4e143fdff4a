"""Run the FiFA grid: policies × budgets × seeds × the five scenarios, in parallel.

One task is one ``(seed, scenario, policy)``: it generates the world and runs the budgets
in ascending order. A budget that never bound (no policy eviction or summary in the run,
``RunResult.acted`` False) gives the same run at every larger budget — budgets enter a
store only through eviction — so larger budgets reuse that run and say so
(``reused_from``); ``tests/test_fifa.py`` checks the equivalence against full runs.

Example:
    >>> cells = run_task((0, "crisis_management", "fifo", (2000, 4000), 0.3))
    >>> [c["budget"] for c in cells], cells[1]["reused_from"]
    ([2000, 4000], 2000)
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterable, Sequence
from typing import Any

from mars_core.bench.fifa.metrics import score
from mars_core.bench.fifa.scenarios import SCENARIOS
from mars_core.bench.fifa.simulator import RunSettings, mutation_ops, simulate
from mars_core.bench.fifa.world import WorldConfig, generate_world
from mars_core.errors import ValidationError
from mars_core.policies import available_policies

__all__ = ["BUDGETS", "DEFAULT_SCALE", "POLICIES", "QUICK", "SEEDS", "Task", "grid_tasks",
           "run_grid", "run_task"]

POLICIES: tuple[str, ...] = ("fifo", "lru", "priority", "reflection", "random", "hybrid", "meta")
"""The six policies of seed 000 §6.4.1, then the meta-controller as a seventh row."""

BUDGETS: tuple[int, ...] = (2000, 4000, 8000, 16000, 32000)
SEEDS: tuple[int, ...] = tuple(range(10))
DEFAULT_SCALE = 2.0
"""World size of the full grid: twice the scenarios' base length, so a cast agent writes
2.1–6.6k tokens (seed 0): 2k binds in every run and 4k in 88% of the full grid (see
``docs/benchmarks/fifa.md`` for why 8k–32k cannot bind within the time budget)."""

QUICK: dict[str, Any] = {"seeds": (0,), "budgets": (2000, 8000), "scale": 1.0}
"""The ``--quick`` grid: every policy and scenario, one seed, two budgets, base-size worlds."""

Task = tuple[int, str, str, tuple[int, ...], float]
"""(seed, scenario, policy, budgets ascending, world scale)."""


def grid_tasks(seeds: Iterable[int], policies: Iterable[str], budgets: Iterable[int],
               scale: float) -> list[Task]:
    """The tasks of a grid, validated, in a fixed order.

    Raises:
        ValidationError: unknown policy, non-positive budget, negative seed, empty axis.
    """
    s, p, b = list(seeds), list(policies), sorted(set(budgets))
    if not s or not p or not b:
        raise ValidationError("seeds, policies and budgets must each be non-empty")
    unknown = [x for x in p if x not in available_policies()]
    if unknown:
        raise ValidationError(f"unknown policies {unknown}; known: {available_policies()}")
    if any(not isinstance(x, int) or x <= 0 for x in b):
        raise ValidationError("budgets must be positive integers (tokens)")
    if any(not isinstance(x, int) or x < 0 for x in s):
        raise ValidationError("seeds must be non-negative integers")
    return [(seed, sc.name, pol, tuple(b), scale) for seed in s for sc in SCENARIOS for pol in p]


def run_task(task: Task) -> list[dict[str, Any]]:
    """Run one ``(seed, scenario, policy)`` over its budgets; one cell per budget."""
    seed, scen, policy, budgets, scale = task
    world = generate_world(seed, scen, WorldConfig(scale=scale))
    settings = RunSettings()
    cells: list[dict[str, Any]] = []
    reuse: dict[str, Any] | None = None
    for budget in budgets:
        if reuse is not None:
            cells.append({**reuse, "budget": budget, "reused_from": reuse["budget"]})
            continue
        started = time.perf_counter()
        run = simulate(world, policy, budget, settings)
        cell = {"seed": seed, "scenario": scen, "policy": policy, "budget": budget,
                "acted": run.acted, "reused_from": None,
                "metrics": score(run.verdicts, run.agents),
                "counts": _counts(run.agents, len(run.verdicts)),
                "wall_s": time.perf_counter() - started}
        cells.append(cell)
        if not run.acted:
            reuse = cell
    return cells


def _counts(agents: Sequence[Any], answers: int) -> dict[str, int]:
    ops: dict[str, int] = {}
    for a in agents:
        for op, n in a.ops.items():
            ops[op] = ops.get(op, 0) + n
    return {"answers": answers, "written": sum(a.written for a in agents),
            "mutations": sum(mutation_ops(a) for a in agents),
            "policy_actions": sum(a.policy_actions for a in agents),
            **{f"op_{k}": v for k, v in sorted(ops.items())}}


def run_grid(tasks: Sequence[Task], *, workers: int, progress: bool) -> list[dict[str, Any]]:
    """Run tasks (in ``workers`` processes when > 1) with a tqdm bar; cells in task order."""
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(total=len(tasks), desc="FiFA", unit="run", disable=not progress)
    out: list[dict[str, Any]] = []
    try:
        if workers <= 1:
            for t in tasks:
                out += run_task(t)
                bar.update()
        else:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for cells in pool.imap(run_task, tasks, chunksize=1):
                    out += cells
                    bar.update()
    finally:
        bar.close()
    return out
