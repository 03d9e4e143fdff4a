"""``mars bench import`` in a small smoke run: the three arms each store the whole dump,
the ratios are reported, the command writes its files and reports its progress (no
assertion depends on how fast the machine is; docs/benchmarks/README.md has the
figures)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mars_core.bench import ingest
from mars_core.cli import app, main


def test_every_arm_stores_the_whole_dump_and_ratios_are_reported(tmp_path: Path) -> None:
    events: list[tuple[str, int, int]] = []
    result = ingest.run(n=60, reps=2, embedders=("hashing",), workdir=tmp_path,
                        progress=lambda *e: events.append(e))
    [row] = result["rows"]
    assert row["stored"] == {"import": 60, "import_bar": 60, "singles": 60}
    assert all(len(v) == 2 for v in row["samples_s"].values())
    assert row["singles_over_import"] > 0 and row["bar_over_import"] > 0
    assert events[0] == ("runs", 0, 6) and events[-1] == ("runs", 6, 6)
    assert list(tmp_path.iterdir()) == []  # the stores and the dump are removed
    assert "| hashing" in ingest.table(result)


def test_the_records_are_deterministic_mem0_records() -> None:
    records = ingest.mem0_records(25)
    assert records == ingest.mem0_records(25)
    assert {r["user_id"] for r in records} == {f"user-{i:02d}" for i in range(10)}
    assert len({r["id"] for r in records}) == 25


def test_the_command_writes_its_results_and_reports_progress(tmp_path: Path) -> None:
    events: list[tuple[str, int, int]] = []
    code = main(["bench", "import", "--n", "30", "--reps", "1", "--embedders", "hashing",
                 "--out", str(tmp_path / "out")], progress=lambda *e: events.append(e))
    assert code == 0
    written = json.loads((tmp_path / "out" / "ingest.json").read_text(encoding="utf-8"))
    assert written["rows"][0]["n"] == 30 and written["rows"][0]["stored"]["import"] == 30
    assert (tmp_path / "out" / "ingest.md").read_text(encoding="utf-8").startswith("| embedder")
    assert events[-1] == ("runs", 3, 3)
    bad = CliRunner().invoke(app, ["bench", "import", "--embedders", "minilm"])
    assert bad.exit_code == 2 and "hashing and semantic" in bad.output

