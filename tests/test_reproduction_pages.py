"""The reproduction pages follow the code (issue 33, Build 1).

Every figure that claims to reproduce a paper lives in a generated block of
``docs/benchmarks/*.md``, rendered from a results file of ``docs/benchmarks/results/`` that
a shipped command wrote. Here: each block is exactly what its results file renders (so
nobody edits a figure by hand), and each quick variant — the FiFA quick grid, OSL-MR's
quick Table 2 with the sensitivity, the mechanisms' worked examples — is run again and
compared with its results file, so a change to the code that moves a figure (as the
semantic pass of ``render_context`` once did, silently) fails here and names the command
that regenerates the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mars_core.bench import mechanisms
from mars_core.bench.fifa import docs as fifa_docs
from mars_core.bench.pages import blocks_of, stale_blocks
from mars_core.bench.reproductions import SOURCES, summary_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIFA_PAGE = DOCS / "benchmarks" / "fifa.md"
REPRO_PAGE = DOCS / "benchmarks" / "reproductions.md"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev7.json"
if not LOCOMO.is_file():  # a worktree beside the main checkout
    LOCOMO = Path("/work/shared/data/locomo/locomo_dev7.json")


def _results(name: str) -> dict[str, Any]:
    from mars_core.bench.pages import read_results

    return read_results(DOCS / "benchmarks" / "results" / name)


def _stale(page: Path, bodies: dict[str, str], command: str) -> None:
    stale = stale_blocks(page.read_text(encoding="utf-8"), bodies)
    assert not stale, (f"{page.name}: the generated blocks {stale} are not what the results "
                       f"file renders; regenerate them with `{command}` (never by hand)")


def test_every_generated_block_has_a_renderer() -> None:
    """No block on a page is left without the command that fills it."""
    fifa_full, fifa_quick = fifa_docs.load(DOCS)
    from mars_core.bench import oslmr_docs

    known = {**fifa_docs.page_blocks(fifa_full, fifa_quick),
             **fifa_docs.repro_blocks(fifa_full, fifa_quick),
             **oslmr_docs.repro_blocks(*oslmr_docs.load(DOCS)),
             **mechanisms.repro_blocks(mechanisms.load(DOCS)), "repro/summary": ""}
    for page in (FIFA_PAGE, REPRO_PAGE):
        orphans = sorted(set(blocks_of(page.read_text(encoding="utf-8"))) - set(known))
        assert not orphans, f"{page.name}: blocks without a renderer: {orphans}"


def test_fifa_blocks_are_what_the_results_files_render() -> None:
    full, quick = fifa_docs.load(DOCS)
    _stale(FIFA_PAGE, fifa_docs.page_blocks(full, quick), fifa_docs.COMMAND)
    _stale(REPRO_PAGE, fifa_docs.repro_blocks(full, quick), fifa_docs.COMMAND)
    assert full["commit"] != "unknown" and "dirty" not in full["commit"]


def test_oslmr_and_mechanism_blocks_are_what_the_results_files_render() -> None:
    from mars_core.bench import oslmr_docs

    _stale(REPRO_PAGE, oslmr_docs.repro_blocks(*oslmr_docs.load(DOCS)), oslmr_docs.COMMAND)
    _stale(REPRO_PAGE, mechanisms.repro_blocks(mechanisms.load(DOCS)), mechanisms.COMMAND)


def test_the_summary_is_what_every_results_file_renders() -> None:
    docs = {name: _results(name) for _p, name, _c, _r in SOURCES}
    _stale(REPRO_PAGE, {"repro/summary": "\n".join(summary_table(docs))},
           "any --regenerate-docs command (each rewrites the summary)")


@pytest.mark.heavy
def test_fifa_quick_grid_still_gives_the_pages_figures() -> None:
    """Reruns `mars bench fifa --quick`'s grid (7 policies, 2 levels, 1 world; ~80 s of
    CPU) and compares every metric of every cell with fifa_quick.json. `make test` runs
    :func:`test_fifa_quick_grid_cell_still_gives_the_pages_figures` instead."""
    page = _results("fifa_quick.json")
    diff = fifa_docs.quick_diff(page, fifa_docs.quick_run(workers=2))
    assert not diff, (f"the FiFA quick grid no longer gives the figures of "
                      f"docs/benchmarks/fifa.md ({len(diff)} differ, e.g. {diff[:5]}); if "
                      f"the change is meant, run `{fifa_docs.COMMAND}` and explain the new "
                      "figures on the page")


def test_fifa_quick_grid_cell_still_gives_the_pages_figures() -> None:
    """The smoke of the quick grid: its world's stored volume, then one task of it (FIFO
    at the 2k level, the output check on), every metric compared with fifa_quick.json."""
    from mars_core.bench.fifa.metrics import METRICS
    from mars_core.bench.fifa.runner import QUICK, grid_tasks, measure_volumes, run_task

    page = _results("fifa_quick.json")
    seeds, scenarios, scale = QUICK["seeds"], QUICK["scenarios"], QUICK["scale"]
    vols = measure_volumes(seeds, scenarios, scale)
    (task,) = grid_tasks(seeds, ["fifo"], QUICK["budgets"][:1], scale, volumes=vols,
                         scenarios=scenarios)
    (cell,) = run_task(task)
    key = f"{cell['policy']}/{cell['budget']}/{cell['scenario']}"
    code = {m: (None if cell["metrics"][m] is None else round(cell["metrics"][m], 4))
            for m in METRICS}
    code["withheld_per_answer"] = round(
        cell["counts"]["withheld"] / max(1, cell["counts"]["answers"]), 4)
    diff = fifa_docs.quick_diff({"cells": {key: page["cells"][key]}}, {"cells": {key: code}})
    assert not diff, (f"the FiFA quick grid no longer gives the figures of "
                      f"docs/benchmarks/fifa.md ({len(diff)} differ, e.g. {diff[:5]}); if "
                      f"the change is meant, run `{fifa_docs.COMMAND}` and explain the new "
                      "figures on the page")


@pytest.mark.skipif(not LOCOMO.is_file(), reason="the LoCoMo file (../shared/data) is absent")
def test_oslmr_quick_variant_still_gives_the_pages_figures() -> None:
    from mars_core.bench import oslmr_docs

    page = _results("oslmr_quick.json")
    diff = oslmr_docs.quick_diff(page, oslmr_docs.quick_run(LOCOMO))
    assert not diff, (f"OSL-MR's quick variant no longer gives the figures of "
                      f"docs/benchmarks/reproductions.md ({diff[:5]}); if the change is "
                      f"meant, run `{oslmr_docs.COMMAND}` and explain them")


def test_mechanisms_still_give_the_pages_worked_examples() -> None:
    page = mechanisms.load(DOCS)
    fresh = mechanisms.compute()
    moved = sorted(k for k in fresh if fresh[k] != page.get(k))
    assert not moved, (f"the worked examples {moved} no longer follow from the code; if the "
                       f"change is meant, run `{mechanisms.COMMAND}` and update the prose")


def test_a_moved_figure_is_named() -> None:
    """The comparison names every cell and metric that moved (what a failure prints)."""
    page = _results("fifa_quick.json")
    key = sorted(page["cells"])[0]
    moved = {**page, "cells": {**page["cells"],
                               key: {**page["cells"][key], "composite": -1.0}}}
    assert fifa_docs.quick_diff(page, moved) == [
        f"{key} composite: page {page['cells'][key]['composite']}, code -1.0"]
    fewer = {**page, "cells": {k: v for k, v in page["cells"].items() if k != key}}
    assert fifa_docs.quick_diff(page, fewer) == [f"{key}: not run by the code"]


@pytest.mark.parametrize(("args", "says"), [
    (["--quick-only"], "go with --regenerate-docs"),
    (["--regenerate-docs", "--quick-only", "--from", "results.json"], "it takes no --from"),
    (["--regenerate-docs", "--quick"], "runs the page's protocol"),
])
def test_fifa_regeneration_refuses_what_it_cannot_do(tmp_path: Path, args: list[str],
                                                      says: str) -> None:
    """Refused before anything runs or is written (usage errors)."""
    from typer.testing import CliRunner

    from mars_core.cli import app

    before = (DOCS / "benchmarks" / "results" / "fifa_quick.json").read_bytes()
    out = CliRunner().invoke(app, ["bench", "fifa", "--out", str(tmp_path / "o"), *args])
    assert out.exit_code == 2 and says in out.output
    assert (DOCS / "benchmarks" / "results" / "fifa_quick.json").read_bytes() == before


def test_oslmr_quick_only_goes_with_regenerate_docs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mars_core.cli import app

    data = tmp_path / "locomo.json"
    data.write_text("[]", encoding="utf-8")
    out = CliRunner().invoke(app, ["bench", "oslmr", "--data", str(data),
                                   "--out", str(tmp_path / "o"), "--quick-only"])
    assert out.exit_code == 2 and "go with --regenerate-docs" in out.output
