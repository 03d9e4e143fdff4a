"""Smoke run of ``mars bench activator`` on one LoCoMo conversation (real data, real store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars_core.bench.activator import bench_config, run_activator_bench
from mars_core.errors import ValidationError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / \
    "locomo_dev7.json"


@pytest.mark.data
def test_quick_run_compares_single_and_dag(tmp_path: Path) -> None:
    if not DATA.exists():
        pytest.skip(f"LoCoMo data not found at {DATA} (../shared/data is not vendored)")
    out = tmp_path / "activator.json"
    report = run_activator_bench(DATA, out, quick=True, budgets=(128, 256))
    assert json.loads(out.read_text()) == report
    n = report["all"]["questions"]
    assert n > 0 and len(report["conversations"]) == 1
    for b in ("128", "256"):
        row = report["all"][b]
        for method in ("single", "dag"):
            assert all(0.0 <= row[method][m] <= 1.0 for m in ("recall", "precision", "f1"))
        assert row["recall_gain"] == round(row["dag"]["recall"] - row["single"]["recall"], 4)
        assert 0 <= row["dag_better"] + row["dag_worse"] <= n
    assert report["test"]["questions"] == 0  # conversation 0 belongs to the tune split
    # the direction of the result (conversation 0, 256 tokens: 6 questions gain, none loses;
    # docs/concepts/control.md has the split figures)
    row = report["all"]["256"]
    assert row["recall_gain"] > 0 and row["dag_better"] > row["dag_worse"]
    assert row["dag"]["f1"] > row["single"]["f1"]
    again = run_activator_bench(DATA, None, quick=True, budgets=(128, 256))
    assert again["all"] == report["all"]  # deterministic


def test_bad_budgets_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        run_activator_bench(tmp_path / "missing.json", budgets=(0,))
    assert bench_config().retention_floor == 1.0
