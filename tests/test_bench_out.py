"""Benchmark output directories: any path-like is accepted, and one that cannot be a
directory is refused before the benchmark runs (a full run takes minutes to an hour)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mars_core.bench.backends as backends_bench
import mars_core.bench.fifa as fifa_bench
import mars_core.bench.policies as policies_bench
from mars_core.bench import leakage, throughput
from mars_core.bench import locomo as locomo_bench
from mars_core.bench.backends import run_backends
from mars_core.bench.evidence import run_locomo, run_longmemeval
from mars_core.bench.fifa import run_fifa
from mars_core.bench.policies import main as run_policies
from mars_core.bench.report import results_dir
from mars_core.errors import ValidationError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_a_string_path_is_created_with_its_parents(tmp_path: Path) -> None:
    out = str(tmp_path / "a" / "b")
    result = run_backends(sizes=(40,), backends=("inmemory",), out=out, quick=True,
                          queries=3, singles=3, embedders=False, store_n=0)
    written = json.loads((Path(out) / "backends.json").read_text(encoding="utf-8"))
    assert written["rows"] == result["rows"] and len(written["rows"]) == 1
    assert "| inmemory | 40 |" in (Path(out) / "backends.md").read_text(encoding="utf-8")


RUNS: dict[str, Callable[[Path], Any]] = {
    "backends": lambda out: run_backends(sizes=(40,), backends=("inmemory",), out=out,
                                         quick=True, embedders=False, store_n=0),
    "leakage": lambda out: leakage.main(out=out, turns=20),
    "store": lambda out: throughput.main(n=50, out=out),
    "policies": lambda out: run_policies(out=out, quick=True, reference=False),
    "fifa": lambda out: run_fifa(out, quick=True, progress=False, plots=False),
    "locomo": lambda out: run_locomo(DATA / "locomo" / "locomo_dev7.json", out, quick=True,
                                     progress=False),
    "longmemeval": lambda out: run_longmemeval(DATA / "longmemeval" / "longmemeval_s_1q.json",
                                               out, quick=True, progress=False),
}

WORK = {  # the function that does each benchmark's measuring
    "backends": (backends_bench, "_measure"), "leakage": (leakage, "run"),
    "store": (throughput, "run"), "policies": (policies_bench, "_grid"),
    "fifa": (fifa_bench, "run_grid"), "locomo": (locomo_bench, "prepare"),
    "longmemeval": (locomo_bench, "prepare"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_output_path_that_is_a_file_is_refused_before_the_run(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if name in ("locomo", "longmemeval") and not DATA.is_dir():
        pytest.skip(f"benchmark data not found at {DATA} (../shared/data is not vendored)")
    module, attr = WORK[name]

    def ran(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{name} measured before refusing its output directory")
    monkeypatch.setattr(module, attr, ran)
    blocker = tmp_path / "results"
    blocker.write_text("not a directory", encoding="utf-8")
    with pytest.raises(ValidationError, match="cannot write benchmark results"):
        RUNS[name](blocker / "out")
    assert blocker.read_text(encoding="utf-8") == "not a directory"


def test_results_dir_names_the_way_out(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(ValidationError, match="pass another --out directory"):
        results_dir(tmp_path / "f")
    assert results_dir(tmp_path / "d").is_dir()
