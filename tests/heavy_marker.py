"""The ``heavy`` marker's switch, shared by ``conftest.py`` and ``test_heavy_tests.py``
(a module of its own: ``from conftest import`` finds whichever conftest Python imported
first, the LlamaIndex tests' one included)."""

from __future__ import annotations

import os

__all__ = ["HEAVY", "HEAVY_SKIP"]

HEAVY = os.environ.get("MARS_TEST_HEAVY", "").strip() == "1"
"""``MARS_TEST_HEAVY=1`` (``make test-heavy``): run the tests marked ``heavy`` — the full
runs of the corpora, crash loops, multi-process loads and benchmark grids whose smoke
``make test`` runs (``docs/reference/testing.md`` lists each and what covers it)."""

HEAVY_SKIP = ("heavy: its full run is `make test-heavy` (MARS_TEST_HEAVY=1); "
              "the suite runs its smoke")
"""Why ``make test`` skips a test marked ``heavy``."""
