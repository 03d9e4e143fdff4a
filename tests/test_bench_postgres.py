"""``mars bench postgres`` in a small smoke run on real servers it starts: its sections
(latency, the per-call namespace check against LISTEN/NOTIFY, writer processes) measure
something real and report their ratios (no assertion depends on how fast the machine
is)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mars_core.cli import main as cli_main

pytestmark = pytest.mark.usefixtures("bench_children")  # probes forked, see conftest


def test_the_latency_and_the_writer_sections_run_and_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("chromadb")
    pytest.importorskip("psycopg")
    from mars_core.bench.chroma_server import chroma_cli
    from mars_core.bench.postgres_server import postgres_bin

    if chroma_cli() is None or postgres_bin() is None:
        pytest.skip("needs the chroma CLI and the PostgreSQL server binaries")
    assert cli_main(["bench", "postgres", "--quick", "--writers", "1,2", "--history", "off",
                     "--out", str(tmp_path)]) == 0  # the history sections: the next test
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


PG_PLAN = {"sizes": (120,), "namespaces": 2, "turns": 60, "lifted": 150, "history": 80,
           "rounds": 4, "probes": 1}
"""Section 4's sizes here: seconds."""


def _history_on(tmp_path: Path, pg_url: str, chroma: Any, *, sections: bool,
                workers: bool, tag: str = "",
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Section 4 (bench store's sections 5-8 and the process-count row) on the
    PostgreSQL database ``pg_url`` and the Chroma server ``chroma``, at sizes of
    seconds; each store in a schema and a prefix of its own (``tag`` in their names;
    with a tag, the schemas are dropped afterwards: a shared server)."""
    from mars_core.bench import history
    from mars_core.testing.stores import drop_schema, with_schema

    schemas: list[str] = []

    def where(name: str) -> tuple[str, str]:
        schemas.append(f"h{tag}_{name}")
        return (with_schema(pg_url, schemas[-1]),
                f"chroma://{chroma.host}:{chroma.port}?prefix=h{tag}{name}_")

    grown: dict[str, Any] = {}
    try:
        if sections:
            grown = history.run(history.Plan(**PG_PLAN), workdir=tmp_path, where=where)
        if workers:
            grown["workers"] = history.workers((1, 2), 2, 40, where=where, progress=progress)
    finally:
        for schema in sorted(set(schemas)) if tag else ():
            drop_schema(pg_url, schema)
    return grown


@pytest.mark.heavy
def test_the_history_sections_run_on_postgresql(tmp_path: Path) -> None:
    """Section 4 on a durable PostgreSQL server and a Chroma server of its own, as
    ``mars bench postgres`` runs it (make test: the next two tests, the same sizes on the
    session's servers): each part reports what it is judged by."""
    pytest.importorskip("chromadb")
    pytest.importorskip("psycopg")
    from mars_core.bench import history
    from mars_core.bench.chroma_server import chroma_cli, chroma_server
    from mars_core.bench.postgres_server import postgres_bin, postgres_server

    if chroma_cli() is None or postgres_bin() is None:
        pytest.skip("needs the chroma CLI and the PostgreSQL server binaries")
    with postgres_server(durable=True) as pg, chroma_server(tmp_path) as chroma:
        grown = _history_on(tmp_path, pg.url(), chroma, sections=True, workers=True)
    text = history.table(grown)
    assert {"long_lived", "many", "lifted", "loop", "workers"} <= set(grown), set(grown)
    assert "turns" in text and grown["loop"]["store_ms"] > 0 and grown["loop"]["raw_ms"] > 0


def test_the_history_sections_report_on_the_sessions_servers(
        tmp_path: Path, postgres_server: str, chroma_server: Any) -> None:
    """Sections 5-8 of section 4 on the session's PostgreSQL and Chroma servers."""
    from mars_core.bench import history

    grown = _history_on(tmp_path, postgres_server, chroma_server, sections=True,
                        workers=False, tag=uuid.uuid4().hex[:8])
    text = history.table(grown)
    assert {"long_lived", "many", "lifted", "loop"} <= set(grown), set(grown)
    assert "turns" in text and grown["loop"]["store_ms"] > 0 and grown["loop"]["raw_ms"] > 0


def test_the_process_count_row_reports_on_the_sessions_servers(
        tmp_path: Path, postgres_server: str, chroma_server: Any) -> None:
    """The process-count row of section 4 on the session's servers; its fill reports its
    progress (``mars bench postgres --progress``)."""
    seen: list[tuple[str, int, int]] = []
    grown = _history_on(tmp_path, postgres_server, chroma_server, sections=False,
                        workers=True, tag=uuid.uuid4().hex[:8],
                        progress=lambda *step: seen.append(step))
    rows = grown["workers"]["rows"]
    assert [r["workers"] for r in rows] == [1, 2] and rows[0]["vs_one"] == 1.0
    assert seen[-1] == ("observe", 80, 80)  # two namespaces of 40 turns


def test_bad_writer_counts_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "two", ""):
        assert cli_main(["bench", "postgres", "--writers", bad]) == 2
    assert capsys.readouterr().err.count("--writers takes positive numbers") == 3
    assert cli_main(["bench", "postgres", "--worker-turns", "0"]) == 2
