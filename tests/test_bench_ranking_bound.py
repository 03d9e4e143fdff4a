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


def test_the_rules_weights_are_chosen_on_the_other_conversations(tmp_path: Path) -> None:
    """Issue 31's two rules re-scored offline: the candidates come with both rules off,
    every grid pair is read on all conversations, and the held-out figure reads each
    conversation with the pair chosen on the others."""
    pytest.importorskip("sklearn")
    path = write_locomo(tmp_path / "locomo.json", count=3, turns=30, fact_every=5, chat=CHAT,
                        per_session=10)
    out = rb.main(str(path), with_rules=True, embedder=HashingEmbedder(dim=64))["rules"]
    assert set(out["dev"]) == {f"{s}/{d}" for s, d in rb.RULE_GRID}
    assert set(out["picks"]) == {"c0", "c1", "c2"}
    assert all(p in out["dev"] for p in out["picks"].values())
    best = max(v["f1"] for v in out["dev"].values())
    assert 0 < out["held_out"]["f1"] <= best + 1e-9  # held out never beats the best in-sample


def test_the_rescoring_adds_each_rules_weight_where_it_applies() -> None:
    from datetime import UTC, datetime

    item = {"q": "What did Ana paint in July 2023?", "hits": [
        {"t": "a", "s": 1.0, "who": "Bo", "at": datetime(2023, 5, 1, tzinfo=UTC)},
        {"t": "b", "s": 0.8, "who": "Ana", "at": datetime(2023, 5, 1, tzinfo=UTC)},
        {"t": "c", "s": 0.6, "who": "Bo", "at": datetime(2023, 7, 9, tzinfo=UTC)}]}
    assert rb._rescored(item, 0.0, 0.0) == [(1.0, "a"), (0.8, "b"), (0.6, "c")]
    ranked = rb._rescored(item, 0.25, 0.5)
    assert [t for _, t in ranked] == ["c", "b", "a"]
    assert [s for s, _ in ranked] == pytest.approx([1.1, 1.05, 1.0])


def test_the_rules_latency_reads_every_question_with_the_rules_and_without(
        tmp_path: Path) -> None:
    path = write_locomo(tmp_path / "locomo.json", count=3, turns=30, fact_every=5, chat=CHAT,
                        per_session=10)
    out = rb.latency_main(str(path), embedder=HashingEmbedder(dim=64))
    assert out["questions"] == 12  # the first two conversations' 6 questions each
    med = out["median_ms"]
    assert set(med) == {"retrieve_rules", "retrieve_off", "render_rules", "render_off"}
    assert all(v > 0 for v in med.values())
    assert out["ratio"] == {c: round(med[f"{c}_rules"] / med[f"{c}_off"], 3)
                            for c in ("retrieve", "render")}
