"""Benchmark output directories: any path-like is accepted, and one that cannot be a
directory is refused before the benchmark runs (a full run takes minutes to an hour)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mars_core.bench import assistant, leakage, storage
from mars_core.bench.evidence import run_locomo, run_longmemeval
from mars_core.bench.fifa import run_fifa
from mars_core.bench.policies import main as run_policies
from mars_core.bench.report import results_dir
from mars_core.errors import ValidationError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_a_string_path_is_created_with_its_parents(tmp_path: Path) -> None:
    out = str(tmp_path / "a" / "b")
    result = storage.main(out, n=120, big=0, quick=True, indexes=("numpy",))
    written = json.loads((Path(out) / "storage.json").read_text(encoding="utf-8"))
    assert written["cost"] == json.loads(json.dumps(result["cost"])) and len(written["cost"]) == 1
    assert "| numpy | 120 |" in (Path(out) / "storage.md").read_text(encoding="utf-8")


RUNS: dict[str, Callable[[Path], Any]] = {
    "assistant": lambda out: assistant.main(out, embedder="hashing"),
    "leakage": lambda out: leakage.main(out=out),
    "store": lambda out: storage.main(out, n=50, big=0, quick=True, indexes=("numpy",)),
    "policies": lambda out: run_policies(out=out, quick=True, reference=False),
    "fifa": lambda out: run_fifa(out, quick=True, progress=False, plots=False),
    "locomo": lambda out: run_locomo(DATA / "locomo" / "locomo_dev7.json", out, quick=True,
                                     progress=False),
    "longmemeval": lambda out: run_longmemeval(DATA / "longmemeval" / "longmemeval_s_1q.json",
                                               out, quick=True, progress=False),
}

WORK = {  # the function that does each benchmark's measuring (imported by the case)
    "assistant": "mars_core.bench.assistant.run",
    "leakage": "mars_core.bench.leakage.run", "store": "mars_core.bench.storage.run",
    "policies": "mars_core.bench.policies._grid",
    "fifa": "mars_core.bench.fifa.run_grid", "locomo": "mars_core.bench.locomo.prepare",
    "longmemeval": "mars_core.bench.locomo.prepare",
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_output_path_that_is_a_file_is_refused_before_the_run(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if name in ("locomo", "longmemeval") and not DATA.is_dir():
        pytest.skip(f"benchmark data not found at {DATA} (../shared/data is not vendored)")
    def ran(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{name} measured before refusing its output directory")
    monkeypatch.setattr(WORK[name], ran)
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
