"""Smoke run of the evidence benchmarks on small synthetic LoCoMo/LongMemEval files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pngs import assert_plots
from synthetic_locomo import write_locomo

from mars_core.bench import locomo as L
from mars_core.bench.evidence import run_locomo, run_longmemeval
from mars_core.bench.locomo_data import load_locomo
from mars_core.bench.peers import rank_scores
from mars_core.bench.replot import replot
from mars_core.bench.users_path import USERS_BUDGETS, users_path_task
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ValidationError
from mars_core.knowledge.learn import asks_question


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    return write_locomo(tmp_path / "locomo.json", turns=40, fact_every=5,
                        chat=["haha ok", "thanks!", "sounds good to me", "wow cool"],
                        date="1 pm on 8 May, 2023")


def test_run_locomo_writes_results_report_and_plots(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_locomo(locomo_file, out, quick=True, progress=False,
                     methods=["recency", "bm25-cutoff", "dense", "ours", "mars-store",
                              "mars-store-plain", "users-path"],
                     peers=["langgraph-store", "chroma"], policies=("fifo", "learned"))
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert (out / "report.md").exists() and (out / "evidence_retrieval_words.png").exists()
    plots = ("evidence_retrieval_words.png", "evidence_retrieval_store.png",
             "evidence_retention.png")
    assert_plots(out, plots)
    report = (out / "report.md").read_text()
    assert all(f"![]({name})" in report for name in plots)  # beside their tables
    redrawn = replot(out / "results.json", tmp_path / "img")
    assert sorted(p.name for p in redrawn) == sorted(plots)
    assert all((tmp_path / "img" / n).read_bytes() == (out / n).read_bytes() for n in plots)
    assert res["meta"]["peer_errors"] == {}

    def get(method: str, task: str = "retrieval", budget: float = 128) -> dict[str, Any]:
        row: dict[str, Any]
        (row,) = [r for r in rows if r["method"] == method and r["task"] == task and
                  r["budget"] == budget and r["category"] == "all" and
                  r["counter"] in ("words", "store") and
                  (task != "retrieval" or r["counter"] == "words")]
        return row

    assert {"method", "task", "budget", "precision", "recall", "f1", "occupancy",
            "latency_ms"} <= set(get("ours"))
    # the evidence turns are the only ones naming the pet: lexical methods find them
    assert get("bm25-cutoff")["recall"] == 1.0 and get("ours")["f1"] > get("recency")["f1"]
    assert get("ours")["f1"] >= get("dense")["f1"]
    # store.retrieve itself, as shipped and as the old fill (store token counter)
    shipped, plain = (next(r for r in rows if r["method"] == m and r["budget"] == 128
                           and r["category"] == "all") for m in ("mars-store", "mars-store-plain"))
    assert shipped["counter"] == plain["counter"] == "store"
    assert shipped["recall"] > 0 and shipped["precision"] > plain["precision"]
    # peers rank by the same embedder as brute-force dense search
    assert get("chroma")["recall"] == pytest.approx(get("dense")["recall"])
    assert get("langgraph-store")["f1"] == pytest.approx(get("dense")["f1"])
    assert 0 < get("fifo", "retention", 0.25)["survival"] < 1
    assert get("learned", "retention", 0.25)["survival"] > get("fifo", "retention", 0.25)[
        "survival"]
    assert res["meta"]["latency"]["store_retrieve_p50_ms"] > 0
    _check_users_path(rows, budgets=(64, 128, 256))
    report = (out / "report.md").read_text()
    assert "## The users' path (headline)" in report and "idealised" in report


def _check_users_path(rows: list[dict[str, Any]], budgets: tuple[int, ...]) -> None:
    """The users' path rows: every budget × category × counter, values in [0, 1], the gold
    turns' active and archived shares adding up, ``render_context``'s row and latency."""
    users = [r for r in rows if r["method"] == "users-path" and r["task"] == "retrieval"]
    cats = {"all", 1, 2, 3, 4}  # the synthetic conversations ask questions of each category
    for counter in ("words", "store"):
        for b in budgets:
            got = {r["category"] for r in users if r["counter"] == counter and r["budget"] == b}
            assert got == cats
    render = [r for r in rows if r["method"] == "users-path-render"]
    assert {r["category"] for r in render} == cats and render[0]["budget"] == 512
    for r in users + render:
        for key in ("precision", "recall", "f1", "session_recall", "active_share",
                    "archived_share"):
            assert 0.0 <= r[key] <= 1.0, (key, r)
        assert r["active_share"] + r["archived_share"] == pytest.approx(1.0)
        assert r["f1"] <= max(r["precision"], r["recall"]) + 1e-12
    (lat,) = [r for r in rows if r["method"] == "users-path" and r["task"] == "latency"]
    assert lat["observe_p50_ms"] > 0 and lat["render_p50_ms"] > 0 and lat["retrieve_p50_ms"] > 0


def test_users_path_counts_archived_evidence_and_finds_it(locomo_file: Path) -> None:
    """With a budget too small for the conversation the policy archives most turns; the
    shares say so, and the second tier still finds the evidence."""
    emb = L.CachedEmbedder(HashingEmbedder(dim=64))
    data = L.prepare(load_locomo(locomo_file), emb)
    rows = users_path_task(data, emb, store_kwargs={"budget": 60})
    _check_users_path(rows, budgets=USERS_BUDGETS)
    (row,) = [r for r in rows if r["method"] == "users-path" and r["counter"] == "words"
              and r["budget"] == 128 and r["category"] == "all"]
    assert row["archived_share"] > 0.5 and row["recall"] > 0.5


def test_retention_task_is_deterministic_and_sees_the_previous_turn(locomo_file: Path) -> None:
    raw = json.loads(locomo_file.read_text())
    for conv in raw:  # every evidence turn now answers a question
        turns = conv["conversation"]["session_1"]
        for i in range(4, len(turns), 5):
            turns[i]["text"] = "where did you go?"
    locomo_file.write_text(json.dumps(raw))
    emb = L.CachedEmbedder(HashingEmbedder(dim=64))
    data = L.prepare(load_locomo(locomo_file), emb)
    cd = data[0]
    assert [b["after_question"] for b in cd.base] == [
        float(i > 0 and asks_question(cd.texts[i - 1])) for i in range(len(cd.texts))]
    assert cd.base[5]["after_question"] == 1.0 and cd.base[6]["after_question"] == 0.0

    def run() -> list[dict[str, Any]]:
        rows = L.retention_task(data, emb, policies=("fifo", "learned"), shares=(0.25,))
        return [{k: v for k, v in r.items() if k != "latency_ms"} for r in rows]

    first = run()
    assert first == run()  # same data, same seed: same numbers
    learned, fifo = (next(r for r in first if r["method"] == m and r["category"] == "all")
                     for m in ("learned", "fifo"))
    assert learned["survival"] > fifo["survival"]


def test_longmemeval_run_and_bad_paths(tmp_path: Path) -> None:
    rec = {"question_id": "q1", "question": "Which degree did I get?", "answer": "BA",
           "answer_session_ids": ["s2"], "haystack_session_ids": ["s1", "s2"],
           "haystack_dates": ["d1", "d2"],
           "haystack_sessions": [[{"role": "user", "content": "I like jazz"}],
                                 [{"role": "user", "content": "I got a BA degree",
                                   "has_answer": True},
                                  {"role": "assistant", "content": "Congrats"}]]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([rec]), encoding="utf-8")
    res = run_longmemeval(path, tmp_path / "lme", quick=True, progress=False)
    bm25 = [r for r in res["rows"] if r["method"] == "bm25" and r["budget"] == 256
            and r["category"] == "all" and r["counter"] == "words"]
    assert bm25[0]["recall"] == 1.0
    with pytest.raises(ValidationError, match="not found"):
        run_locomo(tmp_path / "absent.json", tmp_path / "x", quick=True, progress=False)
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ValidationError):
        run_longmemeval(tmp_path / "bad.json", tmp_path / "y", progress=False)


def test_budget_selection_and_metrics() -> None:
    scores = np.array([0.9, 0.85, 0.5, -np.inf])
    cost = np.array([10, 100, 10, 1])
    assert L.select_budget(scores, cost, 50, 0.0) == [0, 2]  # skips what does not fit
    assert L.select_budget(scores, cost, 500, 0.9) == [0, 1]  # relative cut-off
    assert L.select_budget(scores, cost, 500, 0.0) == [0, 1, 2]  # -inf never selected
    m = L.question_metrics(["a"], ["a", "b"], 10, 40)
    assert (m["precision"], m["recall"], m["occupancy"]) == (1.0, 0.5, 0.25)
    assert L.question_metrics([], ["a"], 0, 10)["f1"] == 0.0
    assert rank_scores(["x"], ["x", "y"]).tolist() == [1.0, -np.inf]


def test_users_path_in_memory_gives_the_figures_of_the_store_on_disk(locomo_file: Path) -> None:
    """The ablations run the users' path in RAM (``in_memory=True``); the headline runs
    ``MemoryStore.open`` on disk. Same code path: the same figures, latency aside."""
    emb = L.CachedEmbedder(HashingEmbedder(dim=64))
    data = L.prepare(load_locomo(locomo_file), emb)

    def figures(**kw: Any) -> list[dict[str, Any]]:
        rows = users_path_task(data, emb, store_kwargs={"budget": 60}, **kw)
        return [{k: v for k, v in r.items() if "ms" not in k} for r in rows
                if r["task"] != "latency"]

    assert figures(in_memory=True) == figures()
