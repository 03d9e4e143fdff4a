"""FiFA: world generation, validators, effect sizes, the stored volume and the relative
budgets, the runner's budget reuse, the known-direction controls of seed 000 §6.3.2 on a
reduced grid, and a smoke run of the whole pipeline (statistics and the paper side by side
included) with byte-identical reports. The statistics themselves: ``test_fifa_stats.py``.

The reduced grid uses base-size worlds with absolute 1000- and 4000-token budgets (a store
pressure like the full grid's lower levels, for a fraction of the CPU) so the suite stays
fast: six seeds in its full run (``heavy``), three half-size worlds in ``make test``.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pngs import assert_plots
from run_once import once_per_run

from mars_core.bench.fifa import FIFA_VERSION, run_fifa
from mars_core.bench.fifa.analysis import pairwise
from mars_core.bench.fifa.metrics import score
from mars_core.bench.fifa.paper import level_tokens
from mars_core.bench.fifa.report import aggregate, controls
from mars_core.bench.fifa.runner import Task, grid_tasks, measure_volumes, run_grid
from mars_core.bench.fifa.scenarios import SCENARIOS, EventKind, ProbeKind, scenario
from mars_core.bench.fifa.simulator import simulate, stored_volume
from mars_core.bench.fifa.stats import effect_size
from mars_core.bench.fifa.validators import judge
from mars_core.bench.fifa.world import Phrase, WorldConfig, generate_world
from mars_core.bench.replot import replot
from mars_core.errors import ValidationError

SMALL = WorldConfig(scale=0.4)


def test_world_is_a_pure_function_of_the_seed() -> None:
    a, b = generate_world(4, "project_collaboration"), generate_world(4, "project_collaboration")
    assert a == b
    assert a != generate_world(5, "project_collaboration")
    kinds = {e.kind for s in SCENARIOS for e in generate_world(1, s.name).events}
    assert kinds == set(EventKind)  # every event kind occurs somewhere
    probes = {p.kind for s in SCENARIOS for p in generate_world(1, s.name).probes}
    assert probes == set(ProbeKind)


def test_world_ground_truth_is_consistent() -> None:
    w = generate_world(2, "social_gathering")
    assert len(set(w.archetypes)) == 5 and len(w.population) == 15
    for p in w.probes:
        assert 0 <= p.after < len(w.events) and 0 <= p.agent < len(w.cast)
        if p.kind is ProbeKind.SOCIAL:
            assert p.expected[0].value in p.domain
        for current, old in p.history:
            assert current.value not in old
    minutes = [e.minute for e in w.events]
    assert minutes == sorted(minutes)
    gaps = np.diff([e.minute for e in w.events if e.session == 0])
    assert gaps.max() > 5 * np.median(gaps)  # bursts and lulls, not a metronome


@pytest.mark.parametrize("bad", [{"seed": -1}, {"scenario_name": "picnic"}])
def test_bad_world_inputs_are_typed_errors(bad: dict[str, Any]) -> None:
    kw: dict[str, Any] = {"seed": 1, "scenario_name": "crisis_management", **bad}
    with pytest.raises(ValidationError):
        generate_world(**kw)
    with pytest.raises(ValidationError):
        WorldConfig(population=7)


def test_validators_read_contexts_against_ground_truth() -> None:
    w = generate_world(3, "crisis_management")
    probe = next(p for p in w.probes if p.kind is ProbeKind.ARC and p.history)
    current, old = next((c, o) for c, o in probe.history if c == probe.expected[0]) \
        if any(c == probe.expected[0] for c, _ in probe.history) else probe.history[0]
    stale_line = f"- [episodic] Update 1 on the {current.names[0]}: it has moved to {old[0]}."
    good_line = f"- [episodic] Update 9 on the {current.names[0]}: it has moved to {current.value}."
    stale = judge(probe, stale_line, 10)
    both = judge(probe, stale_line + "\n" + good_line, 20)
    assert stale.contradictions >= 1 and (stale.coherence or 0) < 1
    assert both.contradictions == 0
    secret = Phrase(("Maya",), "+351 912345678")
    adv = next(p for p in w.probes if p.kind is ProbeKind.ADVERSARIAL) \
        if any(p.kind is ProbeKind.ADVERSARIAL for p in w.probes) else None
    if adv is not None and adv.forbidden:
        leak = judge(adv, f"- {adv.forbidden[0]}", 5)
        assert leak.violation is True and leak.leaked_tokens >= 1
        assert judge(adv, "- [PRIVATE]", 1).violation is False
    assert secret.value not in stale_line


def test_effect_sizes_are_hedges_corrected_paired_d() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0.6, 0.1, 12)
    y = x - rng.normal(0.05, 0.05, 12)
    e = effect_size(list(x), list(y))
    diff = x - y
    j = 1 - 3 / (4 * (len(diff) - 1) - 1)
    assert e.d == pytest.approx(diff.mean() / diff.std(ddof=1) * j)
    bands = ((0.2, "negligible"), (0.5, "small"), (0.8, "medium"), (float("inf"), "large"))
    assert e.n == 12 and e.d > 0 and e.label == next(lab for b, lab in bands if abs(e.d) < b)
    scipy = pytest.importorskip("scipy.stats")
    assert e.t == pytest.approx(scipy.ttest_rel(x, y).statistic)
    flat = effect_size([1.0, 1.0], [0.0, 0.0])
    assert flat.d is None and flat.label == "undefined"
    with pytest.raises(ValidationError):
        effect_size([1.0], [])


def test_pairwise_rows_carry_effect_sizes_signed_like_the_difference(reduced: Any) -> None:
    cells, _ = reduced
    rows = pairwise(cells, ("lru", "random", "reflection"))
    assert {r["metric"] for r in rows} >= {"composite", "nc", "ce"}
    for r in rows:
        assert {"t", "d", "effect", "p_holm"} <= set(r)
        if r["d"] is not None and r["mean_diff"]:
            assert (r["d"] > 0) == (r["mean_diff"] > 0) and (r["t"] > 0) == (r["d"] > 0)


def test_bad_grid_axes_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        grid_tasks([0], ["no-such-policy"], [2000], 1.0)
    with pytest.raises(ValidationError):
        grid_tasks([0], ["lru"], [0], 1.0)
    with pytest.raises(ValidationError):
        run_fifa(tmp_path / "x", seeds=(0,), budgets=(2000,), policies=("lru",),
                 scenarios=("picnic",), progress=False)
    with pytest.raises(ValidationError):
        run_fifa(tmp_path / "x", seeds=(0,), budgets=(2000,), policies=("lru",),
                 progress=False, budget_mode="shares")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        grid_tasks([0], ["lru"], [2000], 1.0, volumes={})  # relative without the world
    assert not (tmp_path / "x").exists()


def test_stored_volume_is_the_exact_peak_of_an_unbounded_store() -> None:
    """A budget equal to the largest peak never binds; one token less does."""
    w = generate_world(3, "personal_reflection", SMALL)
    v = stored_volume(w)
    assert len(v.peaks) == len(w.cast) and 0 < v.heaviest <= min(v.peaks)
    assert not simulate(w, "fifo", max(v.peaks)).acted
    assert simulate(w, "fifo", max(v.peaks) - 1).acted


def test_relative_budgets_are_the_papers_shares_of_each_worlds_store() -> None:
    vols = measure_volumes([0, 1], ["crisis_management"], 0.4)
    tasks = grid_tasks([0, 1], ["lru"], [32000, 2000], 0.4, volumes=vols,
                       scenarios=["crisis_management"])
    for t in tasks:
        v = vols[(t.seed, t.scenario)]
        assert [lvl for lvl, _ in t.budgets] == [2000, 32000]
        assert t.budgets[1][1] == round(v.mean / 2) and t.budgets[0][1] == max(
            v.heaviest, round(v.mean / 32))
        assert t.budgets[0][1] == level_tokens(2000, v.mean, heaviest=v.heaviest)
    absolute = grid_tasks([0], ["lru"], [2000], 0.4, scenarios=["crisis_management"])
    assert absolute[0].budgets == ((2000, 2000),)


@pytest.mark.parametrize("policy", ["fifo", "reflection", "meta"])
def test_a_budget_that_never_bound_equals_any_larger_budget(policy: str) -> None:
    """The runner's reuse rule, checked against full runs at the larger budget."""
    w = generate_world(6, "learning_session", SMALL)
    low, high = simulate(w, policy, 4000), simulate(w, policy, 32000)
    assert not low.acted
    assert score(low.verdicts, low.agents) == \
        score(high.verdicts, high.agents)
    assert low.verdicts == high.verdicts


def test_tight_budgets_make_policies_act_and_differ() -> None:
    w = generate_world(1, "crisis_management")
    runs = {p: simulate(w, p, 1000) for p in ("fifo", "random")}
    assert all(r.acted for r in runs.values())
    assert runs["fifo"].verdicts != runs["random"].verdicts


REDUCED = {"smoke": (range(3), 0.5), "full": (range(6), 1.0)}
"""The reduced grid's worlds (seeds, scale): six base-size worlds in its full run, three
half-size ones in ``make test``'s smoke (the 1000-token budget still binds in every world,
the 4000-token one in none, as in the full run)."""


def _reduced_grid(seeds: range, scale: float) -> list[dict[str, Any]]:
    tasks = [Task(seed, "crisis_management", pol, ((1000, 1000), (4000, 4000)), scale)
             for seed in seeds for pol in ("lru", "random", "reflection")]
    return run_grid(tasks, workers=2, progress=False)


@pytest.fixture(scope="module", params=[
    "smoke", pytest.param("full", marks=pytest.mark.heavy)])
def reduced(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    def run(_: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        cells = _reduced_grid(*REDUCED[request.param])
        return cells, controls(cells, aggregate(cells))

    return once_per_run(tmp_path_factory, f"fifa-reduced-{request.param}", run)


def test_control_random_drop_below_lru_when_recency_dominates(reduced: Any) -> None:
    _, ctl = reduced
    row = ctl["random_below_lru_recency"]
    assert row["holds"], row
    assert scenario("crisis_management").recency_dominated


def test_control_reflection_does_not_raise_leakage(reduced: Any) -> None:
    _, ctl = reduced
    row = ctl["reflection_tokens_and_leakage"]
    assert row["leakage_not_raised"], row
    assert row["leakage"]["mean_diff"] <= row["leakage_band"]


def test_control_reflection_lowers_token_cost(reduced: Any) -> None:
    """Eq. 13's token cost (tokens held + rendered per turn) is lower under Reflection."""
    _, ctl = reduced
    row = ctl["reflection_tokens_and_leakage"]
    assert row["budgets"] == [1000, 4000] or row["budgets"] == [1000], row
    assert row["lowers_token_cost"] and row["holds"], row
    assert row["token_cost"]["mean_diff"] < 0 and row["token_cost"]["d"] < 0


def test_token_cost_is_held_plus_rendered_and_held_respects_budget(reduced: Any) -> None:
    cells, _ = reduced
    for c in cells:
        m = c["metrics"]
        assert m["token_cost"] == pytest.approx(m["held_tokens"] + m["answer_tokens"], abs=1e-5)
        assert 0 < m["answer_tokens"] <= 256
        if c["budget"] == 1000:
            assert m["held_tokens"] <= 1000  # the budget invariant, seen from the benchmark


def test_control_performance_non_decreasing_in_budget(reduced: Any) -> None:
    cells, ctl = reduced
    assert ctl["budget_monotone"]["holds"], ctl["budget_monotone"]
    tight = statistics.fmean(c["metrics"]["composite"] for c in cells if c["budget"] == 1000)
    loose = statistics.fmean(c["metrics"]["composite"] for c in cells if c["budget"] == 4000)
    assert loose >= tight


@pytest.mark.parametrize("scale", [0.3, pytest.param(0.5, marks=pytest.mark.heavy, id="full")])
def test_smoke_run_with_relative_budgets_and_statistics_is_byte_identical(
        tmp_path: Path, scale: float) -> None:
    """The whole pipeline on a tiny grid (relative budgets, the ANOVA, McNemar, Table 4
    beside the paper's), twice: one worker and two give the same bytes. `make test` runs
    it on worlds of scale 0.3, the full run on worlds of scale 0.5."""
    kw: dict[str, Any] = {"seeds": (0, 1), "budgets": (8000, 32000),
                          "policies": ("fifo", "random", "hybrid"),
                          "scenarios": ("crisis_management",), "scale": scale,
                          "progress": False}
    a = run_fifa(tmp_path / "a", plots=True, workers=1, **kw)
    run_fifa(tmp_path / "b", plots=False, workers=2, **kw)
    for name in ("results.json", "report.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert a["fifa_version"] == FIFA_VERSION and a["grid"]["budget_mode"] == "relative"
    for c in a["cells"]:
        vol = a["volumes"][f"{c['seed']}/{c['scenario']}"]
        assert c["budget_tokens"] == level_tokens(c["budget"], vol["mean"],
                                                  heaviest=vol["heaviest"])
        assert c["acted"] and len(c["agents"]) == 5  # every level binds, as in the paper
    assert {r["metric"] for r in a["paper"]["table4"] if r["ours"]} == {"composite", "nc"}
    comp = a["anova"]["composite"]
    assert set(comp["terms"]) == {"policy", "budget", "policy:budget"}
    assert comp["rows"] == 5 * len(a["cells"])  # one row per cast agent per cell
    assert {(r["a"], r["b"]) for r in a["mcnemar"]} == {("fifo", "random"), ("fifo", "hybrid"),
                                                        ("random", "hybrid")}
    report = (tmp_path / "a" / "report.md").read_text()
    for heading in ("## Budget pressure", "## Table 2 beside the paper", "## Table 3",
                    "## Table 4 beside the paper", "## McNemar"):
        assert heading in report
    assert_plots(tmp_path / "a", ("fifa_heatmap.png", "fifa_metrics.png"))
    replot(tmp_path / "b" / "results.json")  # the run without plots, redrawn beside it
    for name in ("fifa_heatmap.png", "fifa_metrics.png"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    assert "| Policy |" in (tmp_path / "a" / "report.md").read_text()
