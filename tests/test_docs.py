"""Every code file the documentation includes runs, offline, and prints what it shows.

The docs include examples with ``--8<-- "examples/....py"`` (pymdownx.snippets), so a
quick start shown on the site is exactly a file this test executes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_INCLUDE = re.compile(r'--8<--\s+"([^"]+)"')


def _included() -> list[str]:
    found = {m.group(1) for page in (ROOT / "docs").rglob("*.md")
             for m in _INCLUDE.finditer(page.read_text(encoding="utf-8"))}
    return sorted(found)


def test_docs_include_examples() -> None:
    assert "examples/quickstart.py" in _included()


@pytest.mark.parametrize("path", [p for p in _included() if p.endswith(".py")])
def test_included_example_runs(path: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MARS_PATH": str(tmp_path / "store")}
    out = subprocess.run([sys.executable, str(ROOT / path)], check=False, cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), f"{path} printed nothing"


def test_quickstart_shows_forgetting_and_erasure(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples/quickstart.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "allergic to peanuts" in out
    assert "why: " in out and ("evicted by hybrid" in out or "consolidated" in out)
    assert "erasure (entity)" in out and "audit chain ok: True" in out
