"""``mars bench window`` in a small run: it measures real windowed retrievals on each index
and reports the ratios and the quality the full run is judged by (no assertion depends on
how fast the machine is)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars_core.bench import window
from mars_core.cli import main as cli_main


def test_each_index_gets_a_row_with_ratios_hits_and_the_exact_overlap(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    result = window.run(n=600, days=12, indexes=("numpy", "chroma"), rounds=2,
                        workdir=tmp_path)
    assert [r["index"] for r in result["rows"]] == ["numpy", "chroma"]
    for r in result["rows"]:
        assert r["samples"] == 2 * len(window.QUERIES) and r["n"] == 600
        assert r["ratio_30d"] > 0 and r["ratio_1d"] > 0
        assert r["hits_none"] > 0 and r["hits_1d"] > 0
        assert r["overlap_1d"] == 1.0  # the window ranks as if it were all there is
    assert "| numpy | 600 |" in window.table(result)


def test_the_command_writes_its_results(tmp_path: Path) -> None:
    code = cli_main(["bench", "window", "--quick", "--n", "400", "--days", "8", "--indexes",
                     "numpy", "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    doc = json.loads((tmp_path / "window.json").read_text())
    assert doc["rows"][0]["index"] == "numpy"
    assert (tmp_path / "window.md").read_text().startswith("| index |")
