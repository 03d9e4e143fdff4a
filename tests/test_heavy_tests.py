"""The heavy tests: ``docs/reference/testing.md`` names exactly the tests marked ``heavy``,
and ``make test`` skips them while ``MARS_TEST_HEAVY=1`` runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from heavy_marker import HEAVY_SKIP

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "testing.md"


def _page_tests() -> set[str]:
    """The tests the page's table names (``tests/...::name``, first column)."""
    rows = re.findall(r"^\| `(tests/[^`]+)`", PAGE.read_text(encoding="utf-8"), re.M)
    return set(rows)


def _marking() -> list[Path]:
    """The test files that mark a test heavy, or import what marks it from one that does
    (test_policy_hybrid takes test_properties' sizes)."""
    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py")}
    found = {p for p, text in sources.items() if "mark.heavy" in text}
    while True:
        more = {p for p, text in sources.items() if p not in found
                and any(re.search(rf"^from {m.stem} import", text, re.M) for m in found)}
        if not more:
            return sorted(found)
        found |= more


def _collected(heavy: bool) -> list[str]:
    """Node ids ``pytest --collect-only -m heavy`` lists, on the files that use the marker."""
    files = sorted(str(p.relative_to(ROOT)) for p in _marking())
    env = {**os.environ, "MARS_TEST_HEAVY": "1" if heavy else ""}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "heavy",
         "-p", "no:cacheprovider", *files],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode in (0, 5), out.stdout[-2000:] + out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_the_page_names_exactly_the_tests_marked_heavy_and_they_skip_without_the_switch(
        ) -> None:
    """One test, so that the collection (~10 s: it imports every marking file) runs once."""
    heavy = _collected(heavy=True)
    marked = {re.sub(r"\[.*\]$", "", node) for node in heavy}
    assert marked, "no test is marked heavy"
    named = _page_tests()
    assert marked - named == set(), "marked heavy, not on docs/reference/testing.md"
    assert named - marked == set(), "on docs/reference/testing.md, not marked heavy"

    env = {**os.environ, "MARS_TEST_HEAVY": ""}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", heavy[0]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout[-2000:]
    assert re.search(r"\b1 skipped\b", out.stdout), out.stdout[-2000:]
    assert "make test-heavy" in out.stdout and HEAVY_SKIP.split(";")[0] in out.stdout
