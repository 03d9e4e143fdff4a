"""The ranking bound of issue 18 (``mars_core.bench.ranking_bound``) on a small synthetic
LoCoMo file: every figure is computed from a real users' path, and the bounds order as
they must (the full run's figures are in docs/benchmarks/evidence.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_locomo import write_locomo

from mars_core import HashingEmbedder
from mars_core.bench import ranking_bound as rb

CHAT = ["The weather was lovely today", "Did you watch the game last night?",
        "I made pancakes for breakfast", "Work has been busy this week"]


def test_the_bounds_come_from_the_users_path_and_order_as_they_must(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    path = write_locomo(tmp_path / "locomo.json", count=3, turns=40, fact_every=5, chat=CHAT,
                        per_session=10)
    out = rb.main(str(path), context=True, embedder=HashingEmbedder(dim=64))
    assert out["questions"] == 24  # 8 facts asked back in each of 3 conversations
    oracle = list(out["oracle_recall"].values())
    assert oracle == sorted(oracle) and 0 < oracle[-1] <= 1  # more candidates, more found
    for key in ("fitted", "fitted_in_context"):
        none = out[key][0.0]
        assert 0 < none["recall"] <= oracle[-1]  # no ranking beats the oracle
        assert all(0 <= v <= 1 for cut in out[key].values() for v in cut.values())


def test_the_oracle_takes_the_shortest_gold_turns_that_fit() -> None:
    items = [{"conv": "c", "gold": ["a", "b", "c"],
              "hits": [{"t": "x"}, {"t": "a"}, {"t": "b"}, {"t": "c"}]}]
    words = {"c": {"a": 120, "b": 20, "c": 20, "x": 5}}
    # among four: b and c (40 words) rather than a (120), which would leave room for nothing
    assert rb.oracle_recall(items, words, ks=(1, 2, 4)) == {1: 0.0, 2: 0.3333, 4: 0.6667}
