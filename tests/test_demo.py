"""The demo of `make demo` runs end to end on a store on disk."""

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
    for f in (tmp_path / "store").iterdir():  # the erased person left no bytes behind
        assert b"Ines" not in f.read_bytes(), f.name
    assert demo.main(["--path", str(tmp_path / "again"), "--fresh"]) == 0
