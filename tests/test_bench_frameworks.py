"""``mars bench frameworks``: every framework exit measured on synthetic LoCoMo
conversations ingested through its own adapter (smoke test; the full run's figures are in
docs/benchmarks/evidence.md, from docs/benchmarks/results/frameworks.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic_locomo import write_locomo
from typer.testing import CliRunner

from mars_core.bench import frameworks
from mars_core.cli import app

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    return write_locomo(tmp_path / "locomo.json", 2, turns=40, fact_every=5, per_session=10,
                        chat=["haha ok", "thanks!", "sounds good to me", "wow cool"])


def test_every_exit_is_measured_beside_retrieve(locomo_file: Path, tmp_path: Path) -> None:
    out = frameworks.main(locomo_file, tmp_path / "out", quick=True, embedder="hashing")
    rows = {r["method"]: r for r in out["rows"] if r["category"] == "all"}
    assert set(rows) == {frameworks.BASELINE, *frameworks.EXITS}
    base = rows[frameworks.BASELINE]
    assert base["n"] == 16 and 0.5 < base["recall"] <= 1.0  # the facts are easy to find
    for name in frameworks.EXITS:
        assert rows[name]["n"] == base["n"]
        assert rows[name]["ratio"] == pytest.approx(rows[name]["recall"] / base["recall"])
        # the block shows only what LlamaIndex's Memory flushed: nothing of 40 short turns
        assert rows[name]["words"] > 0 or name == "li-block", name
    # k means k: the retrievers show k=4 turns' worth, more than retrieve's cut leaves
    assert rows["lc-retriever"]["recall"] >= base["recall"] * frameworks.GOAL
    written = json.loads((tmp_path / "out" / "frameworks.json").read_text())
    assert written["table"] == frameworks.frameworks_section(written["rows"])
    assert (tmp_path / "out" / "frameworks.md").read_text().splitlines() == written["table"]
    with pytest.raises(ValueError, match="unknown framework exits"):
        frameworks.frameworks_task([], None, exits=["nope"])  # type: ignore[arg-type]


def test_the_command_and_its_errors(locomo_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["bench", "frameworks", "--data", str(locomo_file), "--quick",
                               "--embedder", "hashing", "--json"])
    assert done.exit_code == 0, done.output
    assert "| `lc-middleware` |" in done.stderr
    bad = runner.invoke(app, ["bench", "frameworks", "--data", str(tmp_path / "none.json")])
    assert bad.exit_code != 0 and "no data file" in bad.stderr
    bad = runner.invoke(app, ["bench", "frameworks", "--data", str(locomo_file),
                              "--embedder", "bert"])
    assert bad.exit_code != 0 and "--embedder" in bad.stderr


def test_the_docs_table_is_the_results_file() -> None:
    """The page's table is what the shipped command wrote (re-run it to refresh both)."""
    results = json.loads((ROOT / "docs/benchmarks/results/frameworks.json").read_text())
    page = (ROOT / "docs/benchmarks/evidence.md").read_text()
    table = "\n".join(frameworks.frameworks_section(results["rows"]))
    assert table in page
    assert not results["quick"] and results["embedder"] in page
