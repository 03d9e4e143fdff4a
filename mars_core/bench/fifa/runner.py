"""Run the FiFA grid: policies × budgets × seeds × the five scenarios, in parallel.

Budgets are named by the paper's levels (2k … 32k tokens). In the ``relative`` mode (the
default, :mod:`mars_core.bench.fifa.paper`) a level becomes the same share of what the
world's agents store as it is of the paper's agents' store: :func:`measure_volumes` replays
each world once into unbounded stores, and :func:`grid_tasks` turns levels into tokens per
world. In the ``absolute`` mode a level is its own token count.

One task is one ``(seed, scenario, policy)``: it generates the world and runs the budgets
in ascending order. A budget that never bound (no policy eviction or summary in the run,
``RunResult.acted`` False) gives the same run at every larger budget — budgets enter a
store only through eviction — so larger budgets reuse that run and say so
(``reused_from``); ``tests/test_fifa.py`` checks the equivalence against full runs.

Example:
    >>> cells = run_task(Task(0, "crisis_management", "fifo", ((2000, 2000), (4000, 4000)), 0.3))
    >>> [c["budget"] for c in cells], cells[1]["reused_from"]
    ([2000, 4000], 2000)
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from mars_core.bench.fifa.metrics import score, score_agents
from mars_core.bench.fifa.paper import PAPER_STORED_TOKENS, level_tokens
from mars_core.bench.fifa.scenarios import SCENARIOS
from mars_core.bench.fifa.simulator import (
    RunSettings,
    Volume,
    mutation_ops,
    simulate,
    stored_volume,
)
from mars_core.bench.fifa.world import WorldConfig, generate_world
from mars_core.errors import ValidationError
from mars_core.policies import available_policies

__all__ = ["BUDGETS", "DEFAULT_SCALE", "POLICIES", "QUICK", "SEEDS", "BudgetMode", "Task",
           "grid_tasks", "measure_volumes", "run_grid", "run_task"]

POLICIES: tuple[str, ...] = ("fifo", "lru", "priority", "reflection", "random", "hybrid", "meta")
"""The six policies of seed 000 §6.4.1, then the meta-controller as a seventh row."""

BUDGETS: tuple[int, ...] = (2000, 4000, 8000, 16000, 32000)
"""The paper's budget levels (tokens of its agents' stores; see ``BudgetMode``)."""
SEEDS: tuple[int, ...] = tuple(range(10))
DEFAULT_SCALE = 2.0
"""World size of the full grid: twice the scenarios' base length, so a cast agent stores
1.4–7.1k tokens at its peak and the 2k level (1/32 of the cast's mean) still holds one to four
memories (``docs/benchmarks/fifa.md``)."""

QUICK: dict[str, Any] = {"seeds": (0,), "budgets": (2000, 8000), "scale": DEFAULT_SCALE,
                         "scenarios": ("personal_reflection",)}
"""The ``--quick`` grid: every policy, one seed, two budget levels, one scenario — a personal
reflection (sensitive facts, deletions, TTL facts, a few goals with prerequisites). Small
enough that ``tests/test_reproduction_pages.py`` reruns it in about half a minute on two
loaded cores and compares it with the figures of ``docs/benchmarks/fifa.md``."""

BudgetMode = Literal["relative", "absolute"]
"""``relative``: a level is a share of what the world's agents store (the paper's protocol,
:mod:`~mars_core.bench.fifa.paper`); ``absolute``: a level is its own token count."""


class Task(NamedTuple):
    """One ``(seed, scenario, policy)`` with its budgets as ``(level, tokens)`` pairs in
    ascending order, and the world scale; ``redact`` False is the reproduction pages'
    diagnostic (answers without the store's output check, :class:`RunSettings`)."""

    seed: int
    scenario: str
    policy: str
    budgets: tuple[tuple[int, int], ...]
    scale: float
    redact: bool = True


_T = TypeVar("_T")
_R = TypeVar("_R")


def _pool_map(fn: Callable[[_T], _R], items: Sequence[_T], *, workers: int,
              progress: bool, desc: str) -> list[_R]:
    """``fn`` over ``items`` in order (in ``workers`` processes when > 1) with a tqdm bar."""
    from tqdm import tqdm  # type: ignore[import-untyped]

    bar = tqdm(total=len(items), desc=desc, unit="run", disable=not progress)
    out: list[_R] = []
    try:
        if workers <= 1:
            for item in items:
                out.append(fn(item))
                bar.update()
        else:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for res in pool.imap(fn, items, chunksize=1):
                    out.append(res)
                    bar.update()
    finally:
        bar.close()
    return out


def _volume(world: tuple[int, str, float]) -> Volume:
    seed, scen, scale = world
    return stored_volume(generate_world(seed, scen, WorldConfig(scale=scale)))


def measure_volumes(seeds: Iterable[int], scenarios: Iterable[str], scale: float, *,
                    workers: int = 1, progress: bool = False) -> dict[tuple[int, str], Volume]:
    """What each world's agents store with no budget (one replay per world, no probes)."""
    worlds = [(s, sc, scale) for s in seeds for sc in scenarios]
    vols = _pool_map(_volume, worlds, workers=workers, progress=progress, desc="FiFA stores")
    return {(s, sc): v for (s, sc, _), v in zip(worlds, vols, strict=True)}


def grid_tasks(seeds: Iterable[int], policies: Iterable[str], budgets: Iterable[int],
               scale: float, *, volumes: Mapping[tuple[int, str], Volume] | None = None,
               paper_stored: int = PAPER_STORED_TOKENS,
               scenarios: Iterable[str] | None = None) -> list[Task]:
    """The tasks of a grid, validated, in a fixed order. With ``volumes`` (one per world),
    each budget level is converted to that world's tokens (``relative`` mode); without,
    levels are tokens.

    Raises:
        ValidationError: unknown policy, non-positive budget, negative seed, empty axis, or
            a world missing from ``volumes``.
    """
    s, p, b = list(seeds), list(policies), sorted(set(budgets))
    names = list(scenarios) if scenarios is not None else [sc.name for sc in SCENARIOS]
    if not s or not p or not b or not names:
        raise ValidationError("seeds, policies, budgets and scenarios must each be non-empty")
    unknown = [x for x in p if x not in available_policies()]
    if unknown:
        raise ValidationError(f"unknown policies {unknown}; known: {available_policies()}")
    if any(not isinstance(x, int) or isinstance(x, bool) or x <= 0 for x in b):
        raise ValidationError("budgets must be positive integers (tokens)")
    if any(not isinstance(x, int) or x < 0 for x in s):
        raise ValidationError("seeds must be non-negative integers")
    tasks = []
    for seed in s:
        for scen in names:
            levels = _levels(b, None if volumes is None else volumes.get((seed, scen)),
                             relative=volumes is not None, paper_stored=paper_stored)
            tasks += [Task(seed, scen, pol, levels, scale) for pol in p]
    return tasks


def _levels(levels: Sequence[int], volume: Volume | None, *, relative: bool,
            paper_stored: int) -> tuple[tuple[int, int], ...]:
    if not relative:
        return tuple((b, b) for b in levels)
    if volume is None:
        raise ValidationError("relative budgets need the volume of every world of the grid")
    return tuple((b, level_tokens(b, volume.mean, heaviest=volume.heaviest,
                                  paper_stored=paper_stored)) for b in levels)


def run_task(task: Task) -> list[dict[str, Any]]:
    """Run one ``(seed, scenario, policy)`` over its budgets; one cell per budget level."""
    world = generate_world(task.seed, task.scenario, WorldConfig(scale=task.scale))
    settings = RunSettings(redact=task.redact)
    cells: list[dict[str, Any]] = []
    reuse: dict[str, Any] | None = None
    for level, tokens in task.budgets:
        if reuse is not None:
            cells.append({**reuse, "budget": level, "budget_tokens": tokens,
                          "reused_from": reuse["budget"]})
            continue
        started = time.perf_counter()
        run = simulate(world, task.policy, tokens, settings)
        cell = {"seed": task.seed, "scenario": task.scenario, "policy": task.policy,
                "budget": level, "budget_tokens": tokens, "acted": run.acted,
                "bound_agents": sum(1 for a in run.agents if a.policy_actions),
                "reused_from": None,
                "metrics": score(run.verdicts, run.agents),
                "agents": score_agents(run.verdicts, run.agents),
                "goals": "".join("1" if v.completed else "0" for v in run.verdicts
                                 if v.completed is not None),
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
            "withheld": sum(a.withheld for a in agents),
            "mutations": sum(mutation_ops(a) for a in agents),
            "policy_actions": sum(a.policy_actions for a in agents),
            **{f"op_{k}": v for k, v in sorted(ops.items())}}


def run_grid(tasks: Sequence[Task], *, workers: int, progress: bool) -> list[dict[str, Any]]:
    """Run tasks (in ``workers`` processes when > 1) with a tqdm bar; cells in task order."""
    per_task = _pool_map(run_task, tasks, workers=workers, progress=progress, desc="FiFA")
    return [c for cells in per_task for c in cells]
