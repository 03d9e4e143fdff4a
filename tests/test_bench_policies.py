"""Smoke test of ``mars bench policies --quick`` (a benchmark, not a timed test).

It runs the quick grid once (n = 500 and 2,000, every policy, shared fills) and checks the
output files, the keys of every row, the budget invariant at the end of each run and that
the measured numbers are positive. It never asserts a speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pngs import assert_plots
from run_once import once_per_run

from mars_core.bench import policies as bench
from mars_core.cli import main as cli_main
from mars_core.errors import ValidationError
from mars_core.policies import available

PLOTS = ("policies_per_add.png", "policies_per_trigger.png", "policies_rss.png")

KEYS = {"policy", "n", "nlp", "params", "fill", "fill_s", "warmup_adds", "first_trigger_us",
        "steady_requested", "steady_adds", "capped", "steady_s", "per_add_us",
        "per_add_cpu_us", "per_trigger_us", "outside_policy_us_mean",
        "policy_per_add_us_mean", "gc_per_add_us_mean", "full_gcs", "full_gc_ms",
        "per_add_cpu_no_full_gc_us_mean", "triggers", "evictions_per_trigger", "summaries",
        "active", "archived", "tokens", "budget", "budget_ok", "peak_rss_mb"}
STATS = {"median", "p99", "mean"}


SMOKE_POLICIES = ("fifo", "dmf", "reflection")
"""The smoke's grid: two goal policies and a slow one (the full run: every policy)."""


@pytest.fixture(scope="module", params=[
    "smoke", pytest.param("full", marks=pytest.mark.heavy)])
def quick(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``mars bench policies --quick`` (``full``), or the same on a few policies (``smoke``)."""
    chosen = ["--policies", ",".join(SMOKE_POLICIES)] if request.param == "smoke" else []

    def run(out: Path) -> tuple[Path, dict[str, Any]]:
        assert cli_main(["bench", "policies", "--quick", "--out", str(out), *chosen]) == 0
        return out, json.loads((out / "policies.json").read_text())

    return once_per_run(tmp_path_factory, f"bench-policies-{request.param}", run)


def _asked(request: pytest.FixtureRequest) -> set[str]:
    """The policies the run of ``quick`` was asked for: every one but ``learned`` (it needs
    a trained model), or the smoke's."""
    if request.node.callspec.params["quick"] == "smoke":
        return set(SMOKE_POLICIES)
    return {p for p in available() if p != "learned"}


def test_files_exist(quick: tuple[Path, dict[str, Any]]) -> None:
    out, doc = quick
    md = (out / "policies.md").read_text()
    assert "| policy | n |" in md and "Table 1" in md
    assert doc["meta"]["quick"] is True


def test_grid_covers_every_policy_at_both_sizes(quick: tuple[Path, dict[str, Any]],
                                                request: pytest.FixtureRequest) -> None:
    rows = [r for r in quick[1]["rows"] if not r.get("reference")]
    assert {(r["policy"], r["n"]) for r in rows} == {
        (p, n) for p in _asked(request) for n in (500, 2000)}
    refs = {r["reference"] for r in quick[1]["rows"] if r.get("reference")}
    assert refs == {"nlp on", "default Ω_kill"}


def test_rows_have_keys_invariant_and_positive_numbers(
        quick: tuple[Path, dict[str, Any]]) -> None:
    for r in quick[1]["rows"]:
        assert set(r) >= KEYS, (r["policy"], KEYS - set(r))
        assert r["budget_ok"] and 0 < r["tokens"] <= r["budget"]
        assert r["steady_adds"] > 0 and r["fill_s"] > 0 and r["peak_rss_mb"] > 0
        assert set(r["per_add_us"]) == STATS
        assert all(r["per_add_us"][k] > 0 for k in STATS)
        if r.get("reference") == "default Ω_kill":
            assert r["active"] < r["n"]  # the hard-kill sweep keeps the store small
            continue
        assert r["triggers"] == r["steady_adds"]  # every steady add goes over budget
        if r["summaries"] == 0:  # ten-token memories: one out for every one in
            assert r["active"] == r["n"] and r["evictions_per_trigger"] == 1.0
        assert all(r["per_trigger_us"][k] > 0 for k in STATS)
        assert r["per_add_us"]["mean"] > r["policy_per_add_us_mean"] > 0


def test_goal_is_judged_for_the_goal_policies_only(
        quick: tuple[Path, dict[str, Any]]) -> None:
    for r in quick[1]["rows"]:
        if r.get("reference"):
            continue
        judged = r["policy"] in bench.GOAL_POLICIES and r["n"] == 2000
        assert (r["goal_2x"] is not None) == judged
        assert r["add_ratio"] > 0 and r["base_n"] == 500


def test_merge_joins_runs_and_recomputes_ratios(quick: tuple[Path, dict[str, Any]],
                                                tmp_path: Path) -> None:
    """Two runs (here: the quick grid split by policy) merge into one annotated table."""
    _out, doc = quick
    grid = [r for r in doc["rows"] if not r.get("reference")]
    parts = []
    for k, names in enumerate((set(bench.GOAL_POLICIES), set(available()) - set(
            bench.GOAL_POLICIES))):
        part = tmp_path / f"part{k}"
        part.mkdir()
        rows = [{**r, "add_ratio": None} for r in grid if r["policy"] in names]
        (part / "policies.json").write_text(json.dumps({"meta": doc["meta"], "rows": rows}))
        parts.append(part / "policies.json")
    merged = bench.merge_results(parts, tmp_path / "merged", {"1": "goal", "2": "slow"})
    assert len(merged) == len(grid) and {r["run"] for r in merged} == {1, 2}
    assert all(r["add_ratio"] is not None and r["add_ratio"] > 0 for r in merged)
    written = json.loads((tmp_path / "merged" / "policies.json").read_text())
    assert written["meta"]["runs"] == {"1": "goal", "2": "slow"}
    assert "run 2: slow" in (tmp_path / "merged" / "policies.md").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValidationError, match=r"not a policies\.json"):
        bench.merge_results([bad], tmp_path / "x")


def test_the_run_writes_its_plots_and_links_them(quick: tuple[Path, dict[str, Any]]) -> None:
    out, _doc = quick
    assert_plots(out, PLOTS)
    md = (out / "policies.md").read_text()
    assert all(f"]({name})" in md for name in PLOTS)


def test_mars_bench_plot_redraws_the_runs_plots_byte_for_byte(
        quick: tuple[Path, dict[str, Any]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The docs' images are redrawn from a committed policies.json with the run's code."""
    out, _doc = quick
    again = tmp_path / "img"
    assert cli_main(["bench", "plot", str(out / "policies.json"), "--out", str(again)]) == 0
    assert sorted(p.name for p in again.iterdir()) == sorted(PLOTS)
    for name in PLOTS:
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    assert f"wrote {again / PLOTS[0]}" in capsys.readouterr().out
