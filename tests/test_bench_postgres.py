"""``mars bench postgres`` in a small smoke run on real servers it starts: its sections
(latency, the per-call namespace check against LISTEN/NOTIFY, writer processes) measure
something real and report their ratios (no assertion depends on how fast the machine
is)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars_core.cli import main as cli_main


@pytest.mark.slow
def test_the_latency_and_the_writer_sections_run_and_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("chromadb")
    pytest.importorskip("psycopg")
    from mars_core.bench.chroma_server import chroma_cli
    from mars_core.bench.postgres_server import postgres_bin

    if chroma_cli() is None or postgres_bin() is None:
        pytest.skip("needs the chroma CLI and the PostgreSQL server binaries")
    assert cli_main(["bench", "postgres", "--quick", "--writers", "1,2",
                     "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "postgres.json").read_text())
    latency = result["latency"]
    for kind in ("sqlite+chroma", "postgres+chroma-server"):
        assert all(latency[kind][op] > 0 for op in ("add", "retrieve", "observe"))
    assert all(latency["ratio"][op] > 0 for op in ("add", "retrieve", "observe"))
    check = result["check"]  # the per-call namespace check, and LISTEN/NOTIFY instead
    assert all(check[f"{op} {mode}"] > 0 for op in ("add", "retrieve")
               for mode in ("with", "without"))
    assert check["check"] > 0 and check["select"] > 0 and check["calls"] == 30
    assert "add cost" in check and "retrieve share" in check
    notify = check["notify"]
    assert notify["count"] == 10 and 0 < notify["lag"] <= notify["lag_p99"] <= notify["lag_max"]
    assert notify["drain"] > 0 and notify["notify"] > 0
    rows = result["throughput"]
    assert [r["writers"] for r in rows] == [1, 2]
    assert [r["adds"] for r in rows] == [10, 20] and rows[0]["vs_one"] == 1.0
    assert all(r["adds_per_s"] > 0 for r in rows)
    out = capsys.readouterr().out
    assert "| writers |" in out and "the check's share" in out and "LISTEN/NOTIFY" in out
    assert (tmp_path / "postgres.md").read_text().startswith("Latency per call")


def test_bad_writer_counts_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "two", ""):
        assert cli_main(["bench", "postgres", "--writers", bad]) == 2
    assert capsys.readouterr().err.count("--writers takes positive numbers") == 3
