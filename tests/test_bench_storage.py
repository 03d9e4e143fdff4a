"""``mars bench store`` in a small smoke run: every section measures something real and
reports the ratios the full run is judged by (docs/benchmarks/storage.md has the full
figures; no assertion here depends on how fast the machine is). Sections 1-4 in one run
are ``heavy``; ``make test`` runs them as three tests at the same sizes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pngs import assert_plots

from mars_core.bench import history, storage
from mars_core.bench.replot import replot
from mars_core.cli import main as cli_main

pytestmark = pytest.mark.usefixtures("bench_children")  # probes forked, see conftest

BIG, NAMESPACES = 400, 4
"""The scale section's large store: 400 memories over 4 namespaces."""


def _run(tmp_path: Path, *, big: int) -> tuple[dict[str, Any], Any]:
    """Sections 1-4 at smoke sizes on both indexes, with another embedder standing for
    MiniLM (``big=0``: without the scale section); the result and that embedder."""
    pytest.importorskip("chromadb")
    model = storage.HashingEmbedder(dim=48)  # stands for MiniLM: another embedder
    result = storage.run(n=120, block=4, rounds=2, big=big, namespaces=NAMESPACES,
                         indexes=("chroma", "numpy"), quick=True, workdir=tmp_path,
                         model=model)
    return result, model


def _check_cost_bulk_memory(result: dict[str, Any], model: Any) -> None:
    assert [c["index"] for c in result["cost"]] == ["chroma", "numpy"]
    for c in result["cost"]:
        assert c["samples"] == 8 and c["n"] == 120
        for key in ("add_ratio", "read_only_ratio", "access_ratio", "observe_ratio",
                    "mix_ratio"):
            assert c[key] > 0, (c["index"], key)
    assert [(b["index"], b["embedder"], b["n"]) for b in result["bulk"]] == [
        ("chroma", "precomputed", 30), ("numpy", "precomputed", 30),
        ("chroma", model.name, 24), ("numpy", model.name, 24)]
    assert all(b["throughput_ratio"] > 0 for b in result["bulk"])
    # raw chromadb adding the same vectors in bulk bounds add_many into Chroma; with a
    # model, its one batched call does (on either index)
    assert [("raw_bulk_per_s" in b, "embed_batch_per_s" in b) for b in result["bulk"]] == [
        (True, False), (False, False), (False, True), (False, True)]
    assert result["bulk"][0]["ceiling"] > 0 and result["bulk"][0]["raw_bulk_per_s"] > 0
    assert all(b["ceiling"] > 0 and len(b["runs_s"]["embed"]) == 1 for b in result["bulk"][2:])
    memory = result["memory"]
    assert memory["store"]["hits"] > 0 and memory["raw"]["hits"] > 0  # real retrievals
    assert memory["rss_ratio"] > 0
    assert memory["observe"]["hits"] > 0 and memory["observe_rss_ratio"] > 0  # the users' fill
    text = storage.table(result)
    assert "| chroma | 120 |" in text and "ceiling" in text


def _check_scale(scale: list[dict[str, Any]], rounds: int) -> None:
    for s in scale:
        assert s["large"]["hits"] > 0 and s["small"]["hits"] > 0
        assert s["open_ratio"] > 0 and s["rss_ratio"] > 0
        assert len(s["large"]["runs_s"]) == s["rounds"] == rounds
    for s in scale:
        if s["index"] == "chroma":
            # raw chromadb on the directory the store wrote: a real query of the same
            # collection
            assert s["raw_large"]["hits"] > 0 and s["raw_small"]["hits"] > 0
            assert s["floor_ratio"] > 0 and s["floor_ratio_small"] > 0
        else:
            assert "raw_large" not in s
    text = storage.table({"cost": [], "bulk": [], "scale": scale})
    assert "namespaces" in text
    assert ("raw chromadb on the same directories" in text) == any(
        s["index"] == "chroma" for s in scale)


@pytest.mark.heavy
def test_every_section_runs_and_reports_its_ratios(tmp_path: Path) -> None:
    """Sections 1-4 in one quick run on both indexes (make test: the next two tests, at
    the same sizes)."""
    result, model = _run(tmp_path, big=BIG)
    _check_cost_bulk_memory(result, model)
    assert [s["index"] for s in result["scale"]] == ["chroma", "numpy"]
    _check_scale(result["scale"], rounds=1)
    text = storage.table(result)
    assert "| chroma | 120 |" in text and "namespaces" in text
    assert "raw chromadb on the same directories" in text and "ceiling" in text


def test_the_sections_before_scale_run_and_report_their_ratios(tmp_path: Path) -> None:
    """Sections 1, 2 and 4 as the whole run has them (``big=0`` skips section 3)."""
    result, model = _run(tmp_path, big=0)
    assert "scale" not in result
    _check_cost_bulk_memory(result, model)


def test_the_scale_section_probes_each_store_and_reports_its_ratios(tmp_path: Path) -> None:
    """Section 3 at the whole run's sizes on Chroma, each store probed once (the whole
    run: 3); on numpy: the quick run below, which draws it."""
    pytest.importorskip("chromadb")
    scale = storage.scale(BIG, NAMESPACES, index="chroma", workdir=tmp_path, rounds=1)
    assert (scale["index"], scale["big"], scale["namespaces"]) == ("chroma", BIG, NAMESPACES)
    _check_scale([scale], rounds=1)


def test_the_table_embedder_hands_back_the_hashing_vectors() -> None:
    texts = storage.make_texts(5)
    emb = storage.TableEmbedder(texts, dim=32)
    assert emb.embed(texts).tolist() == storage.HashingEmbedder(dim=32).embed(texts).tolist()
    assert emb.embed(["not in the table"]).shape == (1, 32)


def test_a_quick_run_with_out_writes_its_plots_and_the_json_redraws_them(
        tmp_path: Path) -> None:
    """``mars bench store --quick --out`` draws the cost ratios and the scale section
    against size; ``mars bench plot`` redraws the same bytes from storage.json, also from
    a file written before the small store's size was recorded (the fallback: 1,000)."""
    out = tmp_path / "run"
    assert cli_main(["bench", "store", "--quick", "--n", "120", "--big", "400",
                     "--namespaces", "4", "--indexes", "numpy", "--history", "off",
                     "--out", str(out)]) == 0
    names = ("storage_cost.png", "storage_scale.png")
    assert_plots(out, names)
    md = (out / "storage.md").read_text()
    assert all(f"]({name})" in md for name in names)
    doc = json.loads((out / "storage.json").read_text())
    assert [s["small_n"] for s in doc["scale"]] == [1_000]
    assert [(s["index"], s["big"], s["namespaces"]) for s in doc["scale"]] == [
        ("numpy", BIG, NAMESPACES)]
    _check_scale(doc["scale"], rounds=1)  # section 3 on numpy (the test above: Chroma)
    redrawn = replot(out / "storage.json", tmp_path / "img")
    assert [p.name for p in redrawn] == list(names)
    for name in names:
        assert (tmp_path / "img" / name).read_bytes() == (out / name).read_bytes(), name
    for s in doc["scale"]:
        del s["small_n"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    replot(tmp_path / "old.json", tmp_path / "old")
    assert (tmp_path / "old" / "storage_scale.png").read_bytes() == (
        out / "storage_scale.png").read_bytes()


PLAN = history.Plan(sizes=(150, 450), namespaces=2, turns=120, lifted=300, history=200,
                    rounds=4, probes=1)
"""Sections 5-8 of ``mars bench store`` (mars_core.bench.history), tiny."""


def test_the_long_lived_section_runs_and_reports_what_it_is_judged_by(
        tmp_path: Path) -> None:
    """Section 5 of the tiny plan (the next test: 6-8): real stores and real raw
    chromadb, in fresh processes, report their ratios."""
    pytest.importorskip("chromadb")
    plan = dataclasses.replace(PLAN, namespaces=0, lifted=0, history=0)
    result = history.run(plan, workdir=tmp_path)
    assert set(result) == {"plan", "long_lived"}
    rows = result["long_lived"]["rows"]
    assert [r["turns"] for r in rows] == [150, 450]
    assert rows[1]["archived"] > rows[0]["archived"] > 0  # the history grew, forgotten
    for r in rows:
        assert r["time_ratio"] > 0 and r["rss_ratio"] > 0 and r["peak_rss_mb"] > 0
    assert result["long_lived"]["rss_flat"] > 0
    assert "| 450 |" in history.table(result)


def test_the_history_sections_run_and_report_what_they_are_judged_by(tmp_path: Path) -> None:
    """Sections 6-8 of the tiny plan (5: the test above): each runs real stores and
    real raw chromadb, in fresh processes, and reports its ratios."""
    pytest.importorskip("chromadb")
    plan = dataclasses.replace(PLAN, sizes=())
    result = history.run(plan, workdir=tmp_path)
    assert set(result) == {"plan", "many", "lifted", "loop"}
    many = result["many"]
    assert many["after_all_mb"] >= many["after_one_mb"] > 0 and many["namespaces"] == 2
    lifted = result["lifted"]
    assert lifted["active"] == 300 and lifted["time_ratio"] > 0
    loop = result["loop"]
    assert loop["rounds"] == 4 and loop["store_ms"] > 0 and loop["raw_ms"] > 0
    text = history.table(result)
    assert "Agent loop on 200 turns" in text and "Budget lifted" in text


@pytest.mark.parametrize("command", ["store", "postgres"])
def test_an_unknown_history_plan_is_a_usage_error(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before any server starts or anything is measured."""
    from mars_core.bench.history import Plan

    assert cli_main(["bench", command, "--history", "huge" * 30]) == 2
    assert "a history plan is full, medium, quick or off" in capsys.readouterr().err
    assert Plan.named("medium") == Plan.medium() and Plan.named("off") is None


def test_sections_runs_only_those_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    """``mars bench store --sections loop`` runs the agent loop alone (at the plan's
    sizes: how the issue's full sizes are run one section at a time) and writes only its
    line, its progress shown as it goes; an unknown section is refused, and nothing
    runs."""
    pytest.importorskip("chromadb")
    out = tmp_path / "run"
    assert cli_main(["bench", "store", "--quick", "--indexes", "numpy", "--history", "quick",
                     "--sections", "loop", "--progress", "--out", str(out)]) == 0
    shown = capsys.readouterr().err
    assert "loop 20/20" in shown and "sections" not in shown  # no empty count of 1-4
    doc = json.loads((out / "storage.json").read_text())
    assert set(doc) == {"machine", "history", "peak_rss_mb_of_the_run"}
    assert set(doc["history"]) == {"plan", "loop"} and doc["history"]["loop"]["rounds"] == 20
    md = (out / "storage.md").read_text()
    assert md.startswith("Agent loop on 600 turns") and "add_many" not in md
    assert not list(out.glob("*.png"))  # the cost figure needs sections 1 and 2
    assert cli_main(["bench", "store", "--sections", "loop,speed", "--out",
                     str(tmp_path / "no")]) != 0
    assert "--sections takes cost, bulk, memory, scale, long-lived, many, lifted, loop" in \
        capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_a_plan_keeps_only_the_sections_named() -> None:
    only = history.Plan().only({"long-lived", "lifted"})
    assert (only.sizes, only.namespaces, only.lifted, only.rounds) == \
        ((1_000, 20_000, 100_000), 0, 50_000, 0)
    assert history.Plan().only(set(history.SECTIONS)) == history.Plan()
