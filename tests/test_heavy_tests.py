"""The heavy tests: ``docs/reference/testing.md`` names exactly the tests marked ``heavy``,
and ``make test`` skips them (saying where they run) while ``MARS_TEST_HEAVY=1`` runs them.

Read from this session's own collection (``make test`` collects every test file; a
second ``pytest --collect-only`` in a subprocess cost 18–45 s for the same list)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from heavy_marker import HEAVY, HEAVY_SKIP

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "testing.md"


def _page_tests() -> set[str]:
    """The tests the page's table names (``tests/...::name``, first column)."""
    rows = re.findall(r"^\| `(tests/[^`]+)`", PAGE.read_text(encoding="utf-8"), re.M)
    return set(rows)


def _marking() -> set[str]:
    """The test files that mark a test heavy, or import what marks it from one that does
    (test_policy_hybrid takes test_properties' sizes), relative to the root."""
    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py")}
    found = {p for p, text in sources.items() if "mark.heavy" in text}
    while True:
        more = {p for p, text in sources.items() if p not in found
                and any(re.search(rf"^from {m.stem} import", text, re.M) for m in found)}
        if not more:
            return {str(p.relative_to(ROOT)) for p in found}
        found |= more


def test_the_page_names_exactly_the_tests_marked_heavy_and_they_skip_without_the_switch(
        request: pytest.FixtureRequest) -> None:
    items = request.session.items
    collected = {item.nodeid.split("::")[0] for item in items}
    missing = _marking() - collected
    if missing:  # a run of some files only (make test collects them all)
        pytest.skip(f"needs every file that marks a test heavy collected: {sorted(missing)}")
    heavy = [item for item in items if item.get_closest_marker("heavy") is not None]
    marked = {re.sub(r"\[.*\]$", "", item.nodeid) for item in heavy}
    assert marked, "no test is marked heavy"
    named = _page_tests()
    assert marked - named == set(), "marked heavy, not on docs/reference/testing.md"
    assert named - marked == set(), "on docs/reference/testing.md, not marked heavy"
    for item in heavy:  # skipped without the switch, saying where they run; run with it
        skips = [m.kwargs.get("reason", "") for m in item.iter_markers("skip")]
        assert skips == ([] if HEAVY else [HEAVY_SKIP]), (item.nodeid, skips)
    assert "make test-heavy" in HEAVY_SKIP
