"""Long jobs in the core: progress callbacks, batched embedding, all or nothing, and
imports that a re-run does not duplicate (issue 21, items 4 and 5).

Real stores (SQLite, numpy or Chroma index), the hashing embedder behind a counting
wrapper; an interruption is a callback that raises at a chosen point, not a timer.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app
from mars_core.errors import ConflictError, ValidationError
from mars_core.io.importers import import_langgraph, import_mem0, run_import
from mars_core.progress import EMBED_BATCH, progress_bar
from mars_core.testing import CountingEmbedder

Event = tuple[str, int, int]


class Interrupted(Exception):
    """What the test's callback raises to interrupt a call part-way."""


def recorder() -> tuple[list[Event], Callable[[str, int, int], None]]:
    events: list[Event] = []
    return events, lambda stage, done, total: events.append((stage, done, total))


def interrupt_at(stage: str, done: int) -> Callable[[str, int, int], None]:
    def progress(s: str, d: int, total: int) -> None:
        if (s, d) == (stage, done):
            raise Interrupted(f"{s} {d}/{total}")
    return progress


def check_stages(events: list[Event], order: list[str]) -> None:
    """Each stage starts at 0, never goes back, ends at its total; stages in ``order``."""
    seen = list(dict.fromkeys(stage for stage, _, _ in events))
    assert seen == order
    for stage in order:
        mine = [(d, t) for s, d, t in events if s == stage]
        assert mine[0][0] == 0 and mine[-1][0] == mine[-1][1]
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(mine))


def mem0_dump(n: int) -> dict[str, Any]:
    return {"results": [{"id": f"m{i}", "memory": f"fact number {i} about the garden",
                         "user_id": f"user{i % 3}"} for i in range(n)]}


def active_count(store: MemoryStore) -> int:
    return sum(ns["active"] + ns["archived"] for ns in store.stats()["namespaces"].values())


# --- add_many / observe_many ----------------------------------------------------------------


def test_add_many_embeds_in_batches_and_reports_each_stage() -> None:
    counting = CountingEmbedder()
    n = 2 * EMBED_BATCH + 88
    events, progress = recorder()
    with MemoryStore(budget=10**6, embedder=counting) as store:
        nodes = store.add_many([f"memory {i} of the bulk" for i in range(n)], progress=progress)
        assert len(nodes) == n == active_count(store)
    assert counting.batches == [EMBED_BATCH, EMBED_BATCH, 88]
    check_stages(events, ["embed", "store", "write"])
    assert [d for s, d, _ in events if s == "embed"] == [0, EMBED_BATCH, 2 * EMBED_BATCH, n]
    assert [d for s, d, _ in events if s == "store"] == list(range(n + 1))
    assert [d for s, d, _ in events if s == "write"] == [0, n]


@pytest.mark.parametrize("where", [("embed", EMBED_BATCH), ("store", 150), ("write", 0)])
def test_add_many_interrupted_anywhere_before_its_commit_stores_nothing(
        where: tuple[str, int]) -> None:
    with MemoryStore(budget=10**6, embedder=CountingEmbedder()) as store:
        store.add("kept from before")
        before = (store.export_jsonld(), store.stats()["audit_events"])
        with pytest.raises(Interrupted):
            store.add_many([f"bulk memory {i}" for i in range(300)],
                           progress=interrupt_at(*where))
        assert (store.export_jsonld(), store.stats()["audit_events"]) == before
        assert store.verify().ok
        store.add_many(["the store still writes", "and reads"])
        assert active_count(store) == 3
        assert store.retrieve("still writes", k=1)[0].node.content == "the store still writes"


def test_observe_many_reports_its_turns_and_is_all_or_nothing() -> None:
    turns = [{"role": "user", "text": f"I moved to Porto in {1990 + i}"} for i in range(20)]
    events, progress = recorder()
    with MemoryStore(budget=10**6) as store:
        out = store.observe_many(turns, progress=progress)
        assert len(out) == 20
        check_stages(events, ["embed", "store", "write"])
        assert [d for s, d, _ in events if s == "store"] == list(range(21))
        before = store.export_jsonld()
        with pytest.raises(Interrupted):
            store.observe_many(turns, progress=interrupt_at("store", 10))
        assert store.export_jsonld() == before


def test_a_progress_that_is_not_callable_is_refused_before_anything() -> None:
    with MemoryStore(budget=500) as store:
        for call in (lambda: store.add_many(["x y"], progress=True),  # type: ignore[arg-type]
                     lambda: store.observe_many([{"role": "user", "text": "hi"}],
                                                progress="bar"),  # type: ignore[arg-type]
                     lambda: store.reindex(progress=1)):  # type: ignore[arg-type]
            with pytest.raises(ValidationError, match="progress must be None or a callable"):
                call()
        assert active_count(store) == 0 and store.stats()["audit_events"] == 0


# --- reindex, reembed -----------------------------------------------------------------------


def test_reindex_of_a_persistent_index_reports_each_batch(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    with MemoryStore.open(tmp_path / "s", index="chroma", budget=10**6) as store:
        store.add_many([f"memory number {i}" for i in range(600)])
        events, progress = recorder()
        assert store.reindex(progress=progress) == 600
        assert events == [("index", 0, 600), ("index", 500, 600), ("index", 600, 600)]
        assert store.retrieve("memory number 7", k=1)[0].node.content == "memory number 7"


def test_reembed_reports_its_embedding(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "s", index="numpy", budget=10**6) as store:
        store.add_many([f"memory number {i}" for i in range(30)])
        events, progress = recorder()
        assert store.reembed(CountingEmbedder(), batch_size=8, progress=progress) == 30
    assert [d for s, d, _ in events if s == "embed"] == [0, 8, 16, 24, 30]
    assert events[-2:] == [("write", 0, 30), ("write", 30, 30)]


# --- imports: progress, all or nothing, re-runs -----------------------------------------------


def test_mem0_import_reports_progress_and_a_rerun_imports_nothing_twice() -> None:
    dump = mem0_dump(40)
    events, progress = recorder()
    with MemoryStore(budget=10**6) as store:
        assert import_mem0(store, dump, progress=progress) == 40
        check_stages(events, ["embed", "store", "write"])
        assert import_mem0(store, dump) == 0  # the same dump again: every record is there
        assert active_count(store) == 40
        ids = sorted(n.provenance.external_id or "" for ns in store.namespaces()
                     for n in store.list(ns))
        assert ids == sorted(f"m{i}" for i in range(40))
        # a record whose text changed since is new; a new record too; the rest is skipped
        changed = {"results": [{**dump["results"][0], "memory": "the garden was sold"},
                               {"id": "m99", "memory": "a new fact", "user_id": "user0"},
                               *dump["results"][1:]]}
        assert import_mem0(store, changed) == 2
        assert active_count(store) == 42


def test_an_interrupted_mem0_import_stores_nothing_and_a_rerun_stores_everything_once() -> None:
    dump = mem0_dump(300)
    with MemoryStore(budget=10**6) as store:
        with pytest.raises(Interrupted):
            import_mem0(store, dump, progress=interrupt_at("store", 200))
        assert active_count(store) == 0 and store.stats()["audit_events"] == 0
        assert import_mem0(store, dump) == 300
        assert import_mem0(store, dump) == 0
        assert active_count(store) == 300 and store.verify().ok


def test_langgraph_import_rerun_is_idempotent() -> None:
    items = [{"namespace": ["memories", "bo"], "key": f"k{i}",
              "value": {"content": f"Bo fact {i}"}} for i in range(12)]
    with MemoryStore(budget=10**6) as store:
        assert import_langgraph(store, items) == 12
        assert import_langgraph(store, items) == 0
        assert len(store.list("memories/bo")) == 12


def test_jsonld_import_skips_what_is_already_there_and_still_refuses_other_memories(
        tmp_path: Path) -> None:
    export = tmp_path / "export.jsonld"
    with MemoryStore(budget=10**6) as source:
        source.add_many([f"exported memory {i}" for i in range(10)])
        source.write_jsonld(export)
    events, progress = recorder()
    with MemoryStore(budget=10**6) as target:
        done = run_import(target, export, kind="jsonld", progress=progress)
        assert (done.imported, done.skipped) == (10, 0)
        check_stages(events, ["embed", "store", "write"])
        again = run_import(target, export, kind="jsonld")
        assert (again.imported, again.skipped) == (0, 10)
        assert active_count(target) == 10
        with pytest.raises(ConflictError):  # the library's default stays strict
            target.import_jsonld(export)
    doc = MemoryStore.from_jsonld(export).export_jsonld()
    for item in doc["@graph"]:
        if item.get("content") == "exported memory 3":
            item["content"] = "another memory under the same id"
    with MemoryStore(budget=10**6) as target:
        target.import_jsonld(export)
        before = target.export_jsonld()
        with pytest.raises(ConflictError, match="already exist"):
            target.import_jsonld(doc, existing="skip")
        assert target.export_jsonld() == before


# --- the command line and the bar -------------------------------------------------------------


def test_progress_bar_draws_every_stage() -> None:
    out = io.StringIO()
    with progress_bar(Console(file=out, width=100), title="import") as bar, \
            MemoryStore(budget=10**6) as store:
        import_mem0(store, mem0_dump(30), progress=bar)
    text = out.getvalue()
    for label in ("import: embedding", "import: storing", "import: committing"):
        assert label in text
    assert "30/30" in text


def test_cli_import_progress_flag_and_rerun_message(tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps(mem0_dump(25)))
    target = tmp_path / "store"
    runner = CliRunner()
    first = runner.invoke(app, ["import", str(dump), "--from", "mem0", "--path", str(target),
                                "--progress"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "import: storing" in first.output and "25/25" in first.output
    quiet = runner.invoke(app, ["import", str(dump), "--from", "mem0", "--path", str(target)],
                          catch_exceptions=False)  # not a terminal: no bar
    assert quiet.exit_code == 0 and "storing" not in quiet.output
    assert "imported 0 memories" in quiet.output
    assert "25 records already there (imported before) were skipped" in quiet.output
    with MemoryStore.open(target) as store:
        assert active_count(store) == 25
