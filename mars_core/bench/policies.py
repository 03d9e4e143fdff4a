"""``mars bench policies``: per-add and per-trigger cost of every policy against store size n.

Each configuration builds a store whose budget is exactly the tokens of ``n`` memories
(fixed-seed texts of :func:`make_texts`: ten short words, so every memory weighs the same
ten tokens), fills it with those ``n`` memories, then measures ``steady_adds`` further
public ``add`` calls at steady state: every one of them goes over budget by one memory, so
every one *triggers* the policy and evicts one memory (k = 1). Reported:

* **per add** — wall time of ``add`` (median, p99 and mean), and its mean CPU time with
  and without the pauses of full garbage collections (``gc.callbacks``); the ≤ 2× goal is
  judged on the amortised (mean) CPU cost, see :func:`annotate`;
* **per trigger** — the time spent inside the policy's ``sweep`` + ``apply`` during that
  add (a timing proxy wraps the store's policy instance), and the memories evicted (or
  summarised) per trigger;
* the fill time, the first trigger after the fill (when lazy indices catch up), the
  budget invariant at the end (Σw ≤ B) and the process's peak RSS.

The benchmark measures the *policy*, not NLP: stores run with ``nlp="off"`` and
``sensitivity_scoring=False`` (one reference row with both on is reported apart), the
in-memory backend, the 384-d hashing embedder and a fake clock. Two conditions are the
benchmark's, stated in every report:

* **DMF runs with Ω_kill = 0** (no hard-kill). With ``nlp="off"`` every memory has the
  neutral Ω ≈ 0.18 and the sweep archives it after about 41 steps, so a default DMF
  store never holds more than a few dozen memories whatever the budget; with the sweep
  off it holds n and its budget-pressure path (the S_prune heap) is what is measured. A
  reference row measures the default configuration.
* **Shared fills** (``fill="shared"``, from 100k on and in ``--quick``): one store is filled
  once by ``add`` and handed from policy to policy by :func:`hand_over`, which does what
  reopening a store with another ``policy=`` does (the new policy replaces the old one and
  ``Policy.rebuild`` replays the active memories into its indices). Steady-state adds still
  go through the public ``add``. Fresh fills (one store per policy) are used otherwise.

Policies whose triggers cost O(n) or more (reflection, hybrid, meta) get at most
``slow_steady`` measured adds from n = 10k on, and every configuration stops measuring once
``max_steady_s`` seconds were spent; a capped row says how many adds it measured. Their
first trigger fills the working-set cache of :mod:`mars_core.scoring.working_set` and is
the one warm-up add (reported as the first trigger). These
machines are shared and noisy: read ratios measured in one run, not absolute numbers.

Examples:
    >>> r = run("fifo", 200, steady_adds=20, warmup=5)
    >>> r["n"], r["active"], r["budget_ok"], r["triggers"], r["evictions_per_trigger"]
    (200, 200, True, 20, 1.0)
    >>> r["per_add_us"]["mean"] > r["per_trigger_us"]["mean"] > 0
    True
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import platform
import random
import resource
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mars_core.bench.plots import plot_policies, pyplot
from mars_core.bench.report import results_dir
from mars_core.bench.storage import WORDS as _WORDS
from mars_core.budget import make_counter
from mars_core.clock import FakeClock
from mars_core.config import StoreConfig
from mars_core.errors import ValidationError
from mars_core.policies import Plan, Policy, available, make_policy
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = [
    "BENCH_PARAMS",
    "EXPECTED",
    "GOAL_POLICIES",
    "SLOW_POLICIES",
    "annotate",
    "format_table",
    "hand_over",
    "main",
    "make_texts",
    "merge_results",
    "run",
    "run_shared",
    "write_results",
]

GOAL_POLICIES: tuple[str, ...] = ("fifo", "lru", "priority", "dmf")
"""Policies held to the goal: amortised per-add cost at most 2× from 1k to 1M memories."""

SLOW_POLICIES: frozenset[str] = frozenset({"reflection", "hybrid", "meta"})
"""Policies whose triggers cost O(n) or more: capped steady adds at large n."""

BENCH_PARAMS: dict[str, dict[str, Any]] = {"dmf": {"dmf": {"omega_kill": 0.0}}}
"""Policy parameters of the benchmark (module docstring: why DMF runs without hard-kill)."""

EXPECTED: dict[str, tuple[str, str]] = {
    "fifo": ("O(k)", "O(1)"),
    "lru": ("O(k)", "O(1)"),
    "priority": ("O(k log n)", "O(log n)"),
    "random": ("O(k)", "O(1)"),
    "reflection": ("O(n log n + n α(n))", "O(log n + α(n))"),
    "hybrid": ("O(k + k log n + n α(n))", "O(log n + α(n))"),
    "dmf": ("O(k log n) [not in Table 1: Priority's heap]", "O(log n)"),
    "meta": ("the chosen arm's [not in Table 1]", "the chosen arm's"),
}
"""Seed 000 Table 1: (per trigger, amortised per arrival) of each policy (k = evictions)."""

_SHORT = tuple(w for w in _WORDS if len(w) <= 8)  # one token each for the approx counter


def make_texts(n: int, seed: int = 7, words: int = 10) -> list[str]:
    """``n`` deterministic sentences of ``words`` short words (one token each).

    Examples:
        >>> texts = make_texts(3)
        >>> len(texts), {len(t.split()) for t in texts}, texts == make_texts(3)
        (3, {10}, True)
    """
    rng = random.Random(seed)
    return [" ".join(rng.choice(_SHORT) for _ in range(words)) for _ in range(n)]


# --- timing proxy --------------------------------------------------------------------------


@dataclass
class _Sample:
    """One measured add."""

    wall_s: float
    cpu_s: float
    policy_s: float
    triggered: bool
    evicted: int
    summaries: int
    gc_s: float = 0.0
    full_gc_s: float = 0.0
    full_gcs: int = 0


@dataclass
class _GcClock:
    """CPU time of the cyclic garbage collector's pauses (``gc.callbacks``), all and full
    (gen 2). CPU, not wall time: the figure is subtracted from CPU time per add, and a
    wall-clock pause stretched by preemption once made that difference negative."""

    started: float = 0.0
    total_s: float = 0.0
    full_s: float = 0.0
    full: int = 0

    def __call__(self, phase: str, info: Mapping[str, Any]) -> None:
        if phase == "start":
            self.started = time.process_time()
            return
        pause = time.process_time() - self.started
        self.total_s += pause
        if info.get("generation") == 2:
            self.full_s += pause
            self.full += 1


@dataclass
class _Meter:
    """Times the policy instance's ``sweep`` and ``apply`` (instance attributes shadow the
    class's methods, so the store's ``self.policy.sweep(...)`` calls go through here)."""

    policy: Policy
    policy_s: float = 0.0
    triggered: bool = False
    evicted: int = 0
    summaries: int = 0
    names: tuple[str, ...] = field(default=("sweep", "apply"))
    gc: _GcClock = field(default_factory=_GcClock)

    def attach(self) -> _Meter:
        for name in self.names:
            setattr(self.policy, name, self._timed(name, getattr(self.policy, name)))
        gc.callbacks.append(self.gc)
        return self

    def detach(self) -> None:
        gc.callbacks.remove(self.gc)
        for name in self.names:
            delattr(self.policy, name)

    def _timed(self, name: str, inner: Callable[..., Plan]) -> Callable[..., Plan]:
        def timed(*args: Any, **kwargs: Any) -> Plan:
            t0 = time.perf_counter()
            plan = inner(*args, **kwargs)
            self.policy_s += time.perf_counter() - t0
            self.triggered = self.triggered or name == "apply"
            self.evicted += len(plan.evictions) + sum(len(s.member_ids) for s in plan.summaries)
            self.summaries += len(plan.summaries)
            return plan

        return timed

    def add(self, store: MemoryStore, text: str) -> _Sample:
        """One public ``add``, timed whole and inside the policy."""
        self.policy_s, self.triggered, self.evicted, self.summaries = 0.0, False, 0, 0
        g = self.gc
        g0 = (g.total_s, g.full_s, g.full)
        c0, t0 = time.process_time(), time.perf_counter()
        store.add(text)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return _Sample(wall, cpu, self.policy_s, self.triggered, self.evicted, self.summaries,
                       g.total_s - g0[0], g.full_s - g0[1], g.full - g0[2])


# --- building and filling -------------------------------------------------------------------


def _budget_of(texts: Iterable[str]) -> int:
    """Tokens of ``texts`` as memories (the store's default counter): the budget of n."""
    counter = make_counter(StoreConfig().token_counter)
    return sum(max(1, counter.count(t)) for t in texts)


def _new_store(policy: str, params: Mapping[str, Any], budget: int, nlp: str) -> MemoryStore:
    return MemoryStore(budget=budget, policy=policy, policy_params=dict(params), nlp=nlp,
                       sensitivity_scoring=nlp != "off", clock=FakeClock(), seed=7)


def _fill(store: MemoryStore, texts: Sequence[str]) -> float:
    """Add ``texts`` (no trigger fires: they fit the budget exactly); seconds taken."""
    t0 = time.perf_counter()
    for text in texts:
        store.add(text)
    return time.perf_counter() - t0


def hand_over(store: MemoryStore, policy: str, params: Mapping[str, Any] | None = None
              ) -> Policy:
    """Give a filled store a new policy, as reopening it with ``policy=`` would.

    The configuration names the new policy and the cached namespaces are dropped, so the
    next call loads them again with it: :meth:`~mars_core.policies.base.Policy.rebuild`
    replays the active memories into its indices, as ``MemoryStore.open`` does. A
    benchmark helper, not public API.

    Examples:
        >>> store = MemoryStore(budget=100, policy="fifo")
        >>> _ = store.add("one memory")
        >>> hand_over(store, "lru").name, store.policy_for().name
        ('lru', 'lru')
    """
    make_policy(policy, **dict(params or {}))  # refuse a bad one before anything changes
    with store._lock:
        engine = store._engine
        engine.config = engine.config.model_copy(
            update={"policy": policy, "policy_params": dict(params or {})})
        for state in engine.cache.states():
            engine.cache.drop(state.name)
        return store.policy_for()


# --- measuring ------------------------------------------------------------------------------


def _summary(samples: Sequence[float]) -> dict[str, float]:
    """Median, p99 and mean of durations in seconds, in microseconds (zeros when empty)."""
    if not samples:
        return {"median": 0.0, "p99": 0.0, "mean": 0.0}
    ordered = sorted(samples)
    return {"median": 1e6 * statistics.median(ordered),
            "p99": 1e6 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "mean": 1e6 * statistics.fmean(ordered)}


def _peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if platform.system() == "Darwin" else peak / 1024


def _steady_plan(policy: str, n: int, steady_adds: int, slow_steady: int, slow_from: int
                 ) -> int:
    """Adds to measure: ``steady_adds``, capped for the slow policies at n ≥ ``slow_from``."""
    return min(steady_adds, slow_steady) if policy in SLOW_POLICIES and n >= slow_from \
        else steady_adds


def _measure(store: MemoryStore, texts: Sequence[str], warmup: int,
             max_steady_s: float | None) -> tuple[list[_Sample], list[_Sample]]:
    """Warm-up adds (the first triggers after a fill), then timed steady-state adds."""
    meter = _Meter(store.policy_for()).attach()
    try:
        warm = [meter.add(store, t) for t in texts[:warmup]]
        steady: list[_Sample] = []
        t0 = time.perf_counter()
        for text in texts[warmup:]:
            steady.append(meter.add(store, text))
            if max_steady_s is not None and time.perf_counter() - t0 > max_steady_s:
                break
    finally:
        meter.detach()
    return warm, steady


def _row(store: MemoryStore, policy: str, n: int, *, warm: Sequence[_Sample],
         steady: Sequence[_Sample], requested: int) -> dict[str, Any]:
    """The result record of one configuration."""
    ns = store.stats()["namespaces"][store.config.default_namespace]
    trig = [s for s in steady if s.triggered]
    return {
        "policy": policy, "n": n, "nlp": store.config.nlp, "signals": store.stats()["signals"],
        "params": dict(store.config.policy_params),
        "warmup_adds": len(warm),
        "first_trigger_us": 1e6 * warm[0].policy_s if warm else 0.0,
        "steady_requested": requested, "steady_adds": len(steady),
        "capped": len(steady) < requested,
        "steady_s": sum(s.wall_s for s in steady),
        "per_add_us": _summary([s.wall_s for s in steady]),
        "per_add_cpu_us": _summary([s.cpu_s for s in steady]),
        "per_trigger_us": _summary([s.policy_s for s in trig]),
        "outside_policy_us_mean": _summary([s.wall_s - s.policy_s for s in steady])["mean"],
        "policy_per_add_us_mean": _summary([s.policy_s for s in steady])["mean"],
        "gc_per_add_us_mean": _summary([s.gc_s for s in steady])["mean"],
        "full_gcs": sum(s.full_gcs for s in steady),
        "full_gc_ms": 1000 * sum(s.full_gc_s for s in steady),
        "per_add_cpu_no_full_gc_us_mean": _summary(
            [s.cpu_s - s.full_gc_s for s in steady])["mean"],
        "triggers": len(trig),
        "evictions_per_trigger": sum(s.evicted for s in trig) / len(trig) if trig else None,
        "summaries": sum(s.summaries for s in steady),
        "active": ns["active"], "archived": ns["archived"], "tokens": ns["tokens"],
        "budget": ns["budget"], "budget_ok": ns["tokens"] <= ns["budget"],
        "peak_rss_mb": _peak_rss_mb(),
    }


def _warmup_for(policy: str, n: int, steady: int, warmup: int | None) -> int:
    """Default warm-up: a tenth of the measured adds (≤ 200); one add for the slow
    policies, whose first trigger fills their working-set cache (every vector fetched,
    novelty against the whole window: O(n·W·d)) and is reported as the first trigger."""
    if warmup is not None:
        return warmup
    if policy in SLOW_POLICIES:
        return 1
    return min(200, max(1, steady // 10))


def run(policy: str, n: int, *, steady_adds: int = 2000, seed: int = 7,
        warmup: int | None = None, nlp: str = "off", max_steady_s: float | None = None,
        slow_steady: int = 50, slow_from: int = 10_000,
        policy_params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Measure one policy at size ``n`` in a fresh store filled by ``add``.

    Args:
        policy: a registered policy name.
        n: memories held at steady state (the budget is exactly their tokens).
        steady_adds: adds to measure after the warm-up.
        seed: seed of the texts.
        warmup: adds before measuring (default: a tenth of ``steady_adds``, at most 200;
            one for the slow policies at n ≥ 10k).
        nlp: the store's ``nlp`` (``"off"`` also turns sensitivity scoring off).
        max_steady_s: stop measuring once this many seconds were spent (None: no cap).
        slow_steady: cap of measured adds for the slow policies at n ≥ ``slow_from``.
        slow_from: the size from which the slow policies are capped.
        policy_params: the policy's parameters (default :data:`BENCH_PARAMS`).

    Returns:
        One result record (see the module docstring).
    """
    params = dict(BENCH_PARAMS.get(policy, {}) if policy_params is None else policy_params)
    steady = _steady_plan(policy, n, steady_adds, slow_steady, slow_from)
    warm = _warmup_for(policy, n, steady, warmup)
    texts = make_texts(n + warm + steady, seed)
    with _new_store(policy, params, _budget_of(texts[:n]), nlp) as store:
        fill_s = _fill(store, texts[:n])
        warm_s, samples = _measure(store, texts[n:], warm, max_steady_s)
        return {**_row(store, policy, n, warm=warm_s, steady=samples, requested=steady),
                "fill": "fresh", "fill_s": fill_s}


def run_shared(policies: Sequence[str], n: int, *, steady_adds: int = 2000, seed: int = 7,
               warmup: int | None = None, max_steady_s: float | None = None,
               slow_steady: int = 50, slow_from: int = 10_000) -> list[dict[str, Any]]:
    """Measure several policies at size ``n`` on one store filled once (:func:`hand_over`).

    Policies run in the order given; put the ones that write summaries (reflection,
    hybrid, meta) last, so the others see a store of plain episodes.

    Examples:
        >>> rows = run_shared(["fifo", "priority"], 100, steady_adds=10, warmup=2)
        >>> [(r["policy"], r["active"], r["budget_ok"]) for r in rows]
        [('fifo', 100, True), ('priority', 100, True)]
    """
    plans = [(p, _steady_plan(p, n, steady_adds, slow_steady, slow_from)) for p in policies]
    warms = [_warmup_for(p, n, s, warmup) for p, s in plans]
    texts = make_texts(n + sum(warms) + sum(s for _, s in plans), seed)
    first = policies[0]
    rows: list[dict[str, Any]] = []
    with _new_store(first, BENCH_PARAMS.get(first, {}), _budget_of(texts[:n]), "off") as store:
        fill_s = _fill(store, texts[:n])
        at = n
        for (policy, steady), warm in zip(plans, warms, strict=True):
            t0 = time.perf_counter()
            if rows:
                hand_over(store, policy, BENCH_PARAMS.get(policy, {}))
            handover_s = time.perf_counter() - t0
            warm_s, samples = _measure(store, texts[at:at + warm + steady], warm, max_steady_s)
            at += warm + steady
            row = _row(store, policy, n, warm=warm_s, steady=samples, requested=steady)
            rows.append({**row, "fill": "shared", "fill_s": fill_s, "handover_s": handover_s})
    return rows


# --- the grid -------------------------------------------------------------------------------


def _isolated(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` in a fresh interpreter (its own peak RSS; memory returned afterwards)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1, maxtasksperchild=1) as pool:
        return pool.apply(fn, args, kwargs)


def _order(policies: Sequence[str]) -> list[str]:
    """Summary-writing policies last (see :func:`run_shared`)."""
    return sorted(policies, key=lambda p: (p in SLOW_POLICIES, p))


def _mean(row: Mapping[str, Any], key: str) -> float | None:
    """The mean of a summary field, or a plain field (None when the row lacks it)."""
    value = row.get(key)
    return float(value["mean"]) if isinstance(value, Mapping) else value


def _ratio(row: Mapping[str, Any], base: Mapping[str, Any] | None, key: str) -> float | None:
    top, bottom = _mean(row, key), None if base is None else _mean(base, key)
    return None if top is None or not bottom or bottom <= 0 else top / bottom


_RATIOS = {"add_ratio": "per_add_us", "add_cpu_ratio": "per_add_cpu_us",
           "add_cpu_no_full_gc_ratio": "per_add_cpu_no_full_gc_us_mean",
           "trigger_ratio": "per_trigger_us"}


def annotate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ratios vs the smallest n of the same policy and the ≤ 2× goal verdicts.

    ``goal_2x`` judges the mean CPU time per add without full (generation-2) garbage
    collections; ``goal_2x_with_full_gc`` the mean CPU time with everything. Both are set
    for the goal policies at the largest n only.
    """
    grid = [r for r in rows if not r.get("reference")]
    base: dict[str, dict[str, Any]] = {}
    for r in sorted(grid, key=lambda r: r["n"]):
        base.setdefault(r["policy"], r)
    top = max((r["n"] for r in grid), default=0)
    for r in grid:
        b = base[r["policy"]]
        r["base_n"] = b["n"]
        r.update({name: _ratio(r, b, key) for name, key in _RATIOS.items()})
        judged = r["policy"] in GOAL_POLICIES and r["n"] == top and r["n"] > b["n"]
        for verdict, ratio in (("goal_2x", r["add_cpu_no_full_gc_ratio"]),
                               ("goal_2x_with_full_gc", r["add_cpu_ratio"])):
            r[verdict] = None if not judged or ratio is None else ratio <= 2.0
    return rows


def _cell(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if x is None else fmt.format(x)


def _label(r: Mapping[str, Any]) -> str:
    return str(r["policy"]) + (f" ({r['reference']})" if r.get("reference") else "")


def _ordered(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: (bool(r.get("reference")), str(r.get("reference")),
                                       r["policy"], r["n"]))


def _goal(r: Mapping[str, Any]) -> str:
    goal, with_gc = r.get("goal_2x"), r.get("goal_2x_with_full_gc")
    if goal is None:
        return "—"
    text = "yes" if goal else "**NO**"
    if with_gc is not None and with_gc != goal:
        text += f" ({r['add_cpu_ratio']:.2f}× with full GCs)"
    return text


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The markdown results table (grid rows, then reference rows)."""
    head = ("| policy | n | measured adds | per-add median µs | per-add mean µs | per-add p99 µs "
            "| per-add CPU mean µs | CPU mean w/o full GC µs | per-trigger median µs "
            "| per-trigger mean µs | evictions / trigger | add ratio wall / CPU / CPU w/o "
            "full GC | trigger ratio | expected trigger / arrival (Table 1) | ≤ 2× goal |")
    lines = [head, "|" + "---|" * 15]
    for r in _ordered(rows):
        adds = f"{r['steady_adds']:,}" + (f" of {r['steady_requested']:,}" if r["capped"]
                                          else "")
        exp = EXPECTED.get(r["policy"], ("?", "?"))
        trig = {k: (f"{v:,.0f}" if r["triggers"] else "—") for k, v in r["per_trigger_us"].items()}
        ratio = " / ".join(_cell(r.get(k), "{:.2f}×") for k in (
            "add_ratio", "add_cpu_ratio", "add_cpu_no_full_gc_ratio"))
        lines.append(
            f"| {_label(r)} | {r['n']:,} | {adds} | {r['per_add_us']['median']:,.0f} "
            f"| {r['per_add_us']['mean']:,.0f} | {r['per_add_us']['p99']:,.0f} "
            f"| {r['per_add_cpu_us']['mean']:,.0f} "
            f"| {_cell(r.get('per_add_cpu_no_full_gc_us_mean'))} | {trig['median']} "
            f"| {trig['mean']} | {_cell(r['evictions_per_trigger'], '{:.2f}')} | {ratio} "
            f"| {_cell(r.get('trigger_ratio'), '{:.2f}×')} | {exp[0]} / {exp[1]} "
            f"| {_goal(r)} |")
    return "\n".join(lines)


def _details(rows: Sequence[Mapping[str, Any]]) -> str:
    head = ("| policy | n | fill | fill s | first trigger ms | policy µs per add (mean) "
            "| outside policy µs (mean) | GC µs per add (mean) | full GCs (ms) | triggers "
            "| active | tokens ≤ budget | summaries | peak RSS MB |")
    lines = [head, "|" + "---|" * 14]
    for r in _ordered(rows):
        full = "—" if "full_gcs" not in r else f"{r['full_gcs']} ({r['full_gc_ms']:,.0f})"
        lines.append(
            f"| {_label(r)} | {r['n']:,} | {r['fill']} | {r['fill_s']:,.1f} "
            f"| {r['first_trigger_us'] / 1000:,.1f} | {r['policy_per_add_us_mean']:,.0f} "
            f"| {r['outside_policy_us_mean']:,.0f} | {_cell(r.get('gc_per_add_us_mean'))} "
            f"| {full} | {r['triggers']:,} | {r['active']:,} "
            f"| {r['tokens']:,} ≤ {r['budget']:,}: "
            f"{'yes' if r['budget_ok'] else '**NO**'} | {r['summaries']} "
            f"| {r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines)


_NOTES = """\
Per add: wall time of the public `add` at steady state (every add goes over budget and
triggers the policy). Per trigger: time inside the policy's `sweep` + `apply` during that
add. Ratios: mean at n / mean at the policy's smallest n. The goal (amortised per-add cost
at most 2× from the smallest to the largest n) applies to FIFO, LRU, Priority and DMF. It
is judged on the mean *CPU* time per add (`time.process_time`: preemption by the other
processes of a shared machine inflates wall-time means and p99s at random) without the
pauses of full (generation-2) garbage collections, which are reported apart: a full
collection walks every tracked object (seconds at 1M memories) and comes once every
≈ 25% growth of the long-lived objects, so its amortised cost per add is constant, but a
window of a few thousand adds either catches one or does not. The verdict says when
counting them would change it.
Stores run with `nlp="off"` and `sensitivity_scoring=False` (the benchmark measures the
policy, not NLP; the `nlp on` reference row shows the write-time signals' cost), the
in-memory backend, the 384-d hashing embedder and a fake clock. DMF runs with Ω_kill = 0
(no hard-kill: with `nlp="off"` the default sweep keeps only a few dozen memories; the
`default Ω_kill` reference row shows it). "shared" fills: one store filled once by `add`,
handed from policy to policy as a reopen would (`hand_over`; the `shared fill` reference
rows check it against fresh fills). Reflection, hybrid and meta are capped (50 adds from
n = 10k on, after one warm-up add that fills their working-set cache), and every row stops
after the time cap; capped rows say "measured of requested"."""


def _markdown(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any],
              plots: Sequence[str] = ()) -> str:
    runs = "".join(f"\n- run {k}: {v}" for k, v in dict(meta.get("runs", {})).items())
    images = "".join(f"![{name.removesuffix('.png').replace('_', ' ')}]({name})\n\n"
                     for name in plots)
    return (f"# Policy cost against store size\n\n{_NOTES}\n\nMachine: {meta['machine']}; "
            f"Python {meta['python']}; {meta['cpus']} CPUs; steady adds {meta['steady_adds']}, "
            f"time cap {meta['max_steady_s']} s per row.{runs}\n\n{format_table(rows)}\n\n"
            + (f"## Plots (grid rows; reference rows are in the tables)\n\n{images}"
               if images else "")
            + f"## Fill, invariant and memory\n\n{_details(rows)}\n")


def _grid(ns: Sequence[int], big: int | None, policies: Sequence[str], *, quick: bool,
          shared_from: int, progress: ProgressFn | None = None,
          extra: int = 0, **kw: Any) -> list[dict[str, Any]]:
    """The grid's rows (``progress``: stage ``runs``, counting ``extra`` more to come)."""
    rows: list[dict[str, Any]] = []
    sizes = [(n, list(policies)) for n in ns]
    if big:
        sizes.append((big, [p for p in policies if p in GOAL_POLICIES]))
    total = sum(len(names) for _, names in sizes) + extra
    report(progress, "runs", 0, total)
    for n, names in sizes:
        if not names:
            continue
        if quick:
            rows += run_shared(names, n, **kw)
        elif n >= shared_from:
            rows += _isolated(run_shared, names, n, **kw)
        else:
            for p in names:
                rows.append(_isolated(run, p, n, **kw))
                report(progress, "runs", len(rows), total)
        report(progress, "runs", len(rows), total)
        for r in rows[-len(names):]:
            print(f"n={n:,} {r['policy']}: {r['steady_adds']} adds, per add "
                  f"{r['per_add_us']['mean']:,.0f} µs (CPU {r['per_add_cpu_us']['mean']:,.0f}), "
                  f"per trigger {r['per_trigger_us']['mean']:,.0f} µs", flush=True)
    return rows


def _reference_count(quick: bool) -> int:
    """How many reference rows :func:`_references` adds."""
    return 2 if quick else 2 + len(GOAL_POLICIES)


def _references(n: int, *, quick: bool, **kw: Any) -> list[dict[str, Any]]:
    """Reference rows: FIFO with NLP on, DMF with its default hard-kill and (full runs
    only) the goal policies on a shared fill, to check :func:`hand_over` against fresh
    fills of the same n."""
    def call(*args: Any, **more: Any) -> Any:
        return run(*args, **more) if quick else _isolated(run, *args, **more)

    rows = [{**call("fifo", n, nlp="auto", **kw), "reference": "nlp on"},
            {**call("dmf", n, policy_params={}, **kw), "reference": "default Ω_kill"}]
    if not quick:
        shared = _isolated(run_shared, list(GOAL_POLICIES), n, **kw)
        rows += [{**r, "reference": "shared fill"} for r in shared]
    return rows


def write_results(rows: list[dict[str, Any]], meta: Mapping[str, Any],
                  out: str | os.PathLike[str]) -> None:
    """Annotate ``rows`` and write ``policies.json``, the plots of
    :func:`mars_core.bench.plots.plot_policies` and ``policies.md`` under ``out``."""
    annotate(rows)
    folder = results_dir(out)
    (folder / "policies.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    plots = [p.name for p in plot_policies(rows, folder, goal_policies=GOAL_POLICIES)]
    (folder / "policies.md").write_text(_markdown(rows, meta, plots))


def merge_results(parts: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
                  runs: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Merge the ``policies.json`` of several runs (e.g. the goal policies up to 1M and
    the slow ones up to 100k, run apart to bound memory) into one table under ``out``.

    Rows keep their values; each gets the number of the run it came from, and ratios
    and verdicts are recomputed over the merged grid. ``runs`` describes each run.

    Raises:
        ValidationError: a part that is not a results file.
    """
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    for k, part in enumerate(parts, 1):
        try:
            doc = json.loads(Path(part).read_text())
            part_rows, part_meta = list(doc["rows"]), dict(doc["meta"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValidationError(f"{part} is not a policies.json results file: {exc}") from None
        meta = meta or part_meta
        rows += [{**r, "run": r.get("run", k) if len(parts) == 1 else k} for r in part_rows]
    meta["runs"] = dict(runs or {str(k): str(p) for k, p in enumerate(parts, 1)})
    write_results(rows, meta, out)
    return rows


def main(ns: Sequence[int] = (1000, 10_000, 100_000), big: int | None = 1_000_000,
         policies: Sequence[str] | None = None, out: str | os.PathLike[str] | None = None, *,
         quick: bool = False, steady_adds: int = 2000, max_steady_s: float | None = 180.0,
         shared_from: int = 100_000, reference: bool = True,
         progress: ProgressFn | None = None) -> list[dict[str, Any]]:
    """Run the grid, print the table and write ``policies.json`` and ``policies.md``.

    Args:
        ns: sizes at which every policy runs.
        big: the size at which FIFO, LRU, Priority and DMF also run (None: skip).
        policies: policy names (default: every registered policy).
        out: directory for ``policies.json``, ``policies.md`` and the plots, made before
            the run (None: print only).
        quick: the smoke configuration: n = 500 and 2,000, 200 steady adds (10 for the
            slow policies), a 5 s cap per row, no 1M, shared fills, all in this process.
        steady_adds: adds measured per configuration.
        max_steady_s: per-configuration cap on the measured phase (seconds).
        shared_from: sizes at or above this use one shared fill (:func:`run_shared`);
            below it every policy gets a fresh store, each in its own process.
        reference: add the reference rows (NLP on, default DMF, shared-fill check).
        progress: ``progress("runs", done, total)`` as the rows are measured.

    Returns:
        The result records.
    """
    if out is not None:
        results_dir(out)  # refused now rather than after the run
        pyplot()  # and the plots' library (the bench extra) checked
    kw: dict[str, Any] = {"steady_adds": steady_adds, "max_steady_s": max_steady_s}
    if quick:
        ns, big = (500, 2000), None
        kw = {"steady_adds": 200, "max_steady_s": 5.0, "slow_steady": 10, "slow_from": 0}
    names = _order(policies or [p for p in available() if p != "learned"])  # needs a model
    extra = _reference_count(quick) if reference else 0
    rows = _grid(ns, big, names, quick=quick, shared_from=shared_from, progress=progress,
                 extra=extra, **kw)
    if reference:
        rows += _references(min(ns) if quick else min(max(ns), 10_000), quick=quick, **kw)
        report(progress, "runs", len(rows), len(rows))
    annotate(rows)
    meta = {"machine": platform.platform(), "python": platform.python_version(),
            "cpus": multiprocessing.cpu_count(), "quick": quick, **kw}
    print(format_table(rows))
    if out is not None:
        write_results(rows, meta, out)
    return rows
