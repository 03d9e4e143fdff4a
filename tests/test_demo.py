"""The demo of `make demo`: a LangGraph agent (create_agent + MarsMemoryMiddleware) over
three sessions on a store on disk (the default backend), end to end."""

from __future__ import annotations

import io
from pathlib import Path

from mars_core import demo


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
    # ...and the FiFA table compares policies
    assert "FiFA" in text and all(p in text for p in ("fifo", "lru", "hybrid"))
    store = tmp_path / "store"  # the default of open(): Chroma on disk, encrypted
    assert (store / "chroma").is_dir() and (store / "keys").is_dir()
    files = [f for f in store.rglob("*") if f.is_file()]
    assert any(f.name == "chroma.sqlite3" for f in files)
    for f in files:  # the erased person left no bytes behind
        assert b"Ines" not in f.read_bytes(), f.relative_to(store)
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
