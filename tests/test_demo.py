"""The demo of `make demo`: a LangGraph agent (create_agent + MarsMemoryMiddleware) over
three sessions on a store on disk (the default backend), end to end."""

from __future__ import annotations

import io
import re
from pathlib import Path

from mars_core import demo
from mars_core.store import MemoryStore


def test_demo_runs_and_verifies(tmp_path: Path) -> None:
    out = io.StringIO()
    counts = demo.run(tmp_path / "store", out=out)
    text = out.getvalue()
    assert counts["verified"] == 1 and counts["erased"] >= 1
    assert counts["archived"] > 0  # something was forgotten under the budget
    assert "=== STRUCTURED EVIDENCE ===" in text and "why: " in text
    assert "erasure (entity)" in text
    # what session 1 told the agent reaches the model in session 1's question...
    first = text.split("── session 2")[0]
    assert "The user works at Tidewave" in first.split("the model received:")[1]
    # reflection consolidated session 2's three traffic complaints, shown with its reason
    assert counts["summarised"] >= 1
    session2 = text.split("── session 2")[1].split("── session 3")[0]
    assert "store.maintain(): 1 summarised" in session2
    assert "⇢ summary of 3 episodes: The traffic on the bridge" in session2
    summarised = text.split("── summarised")[1].split("── forgotten")[0]
    assert summarised.count("from: The traffic on the bridge") == 3
    assert "why: consolidated 3 redundant episodes" in summarised
    tokens = re.search(r"distortion [\d.]+ ≤ τ_util [\d.]+; .*; (\d+) → (\d+) tokens", summarised)
    assert tokens and int(tokens[2]) < int(tokens[1])  # the summary is smaller than its members
    # ...and the FiFA table compares policies
    assert "FiFA" in text and all(p in text for p in ("fifo", "lru", "hybrid"))
    store = tmp_path / "store"  # the default of open(): SQLite records, Chroma index
    assert (store / "mars.sqlite3").is_file() and (store / "index" / "chroma").is_dir()
    files = [f for f in store.rglob("*") if f.is_file()]
    assert any(f.name == "chroma.sqlite3" for f in files)
    for f in files:  # the erased person left no bytes behind
        assert b"Ines" not in f.read_bytes(), f.relative_to(store)
    with MemoryStore.open(store, read_only=True) as opened:  # the summary is the store's own
        [summary] = [n for n in opened.list(demo.NAMESPACE, status=None)
                     if n.provenance.source == "summary"]
        members = [opened.get(i, namespace=demo.NAMESPACE) for i in summary.provenance.derived_from]
        assert summary.depth == 1 and len(members) == 3
        assert all(m.status.value == "archived" and "traffic" in m.content for m in members)
        events = [e for e in opened.explain(summary.id, namespace=demo.NAMESPACE).events
                  if e.op.value == "summarise"]
        assert len(events) == 1 and set(events[0].node_ids) == {summary.id, *[
            m.id for m in members]}
    assert demo.main(["--path", str(tmp_path / "again"), "--fresh", "--no-fifa"]) == 0
    # what the agent stored is shown redacted, as `mars inspect` shows it
    archive = text.split("── forgotten")[1].split("── right to be forgotten")[0]
    assert "4111" not in archive and "4111" not in text.split("── remembered")[1]


def test_fresh_deletes_only_a_demo_store(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "precious.json").write_text("{}")
    assert demo.main(["--path", str(real), "--fresh", "--no-fifa"]) == 2
    assert (real / "precious.json").read_text() == "{}"  # untouched
