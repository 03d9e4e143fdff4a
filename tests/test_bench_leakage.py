"""The leakage benchmark: the privacy corpus through the store's exits with the output
check off and on, and what the check costs in evidence (issue 30).

The hashing embedder keeps it fast; it finds only the restatements that share words with
what they restate (MiniLM finds them all: ``tests/test_output_check_exits.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic_locomo import write_locomo

from mars_core.bench import leakage
from mars_core.bench.privacy_corpus import DETECTOR_POSITIVES, PROTECTED_STATEMENTS
from mars_core.errors import ValidationError


@pytest.fixture(scope="module")
def corpus_rows() -> list[dict[str, object]]:
    return leakage.run_corpus(seed=5, embedder="hashing")


def test_the_corpus_leaks_with_the_check_off_and_not_under_the_defaults(
        corpus_rows: list[dict[str, object]]) -> None:
    by = {(r["config"], r["exit"]): r for r in corpus_rows}
    assert set(by) == {(c, e) for c in leakage.CONFIGS for e in leakage.EXITS}
    for e in leakage.EXITS:
        off, on, private = by["off", e], by["on", e], by["private", e]
        assert off["identifiers"] == len(DETECTOR_POSITIVES)
        assert off["statements"] == len(PROTECTED_STATEMENTS)
        # off: every planted item reaches the reader, so the probes do reach them
        assert off["identifiers_leaked"] == off["identifiers"]
        assert off["statements_leaked"] == off["statements"]
        assert off["restatements_leaked"] == off["restatements"] == 10
        for row in (on, private):  # the defaults, and private mode on top
            assert row["identifiers_leaked"] == 0 and row["statements_leaked"] == 0, row
            # the hashing embedder sees half the restatements (MiniLM: all)
            assert row["restatements_leaked"] <= 5
        assert on["useful_recall"] == off["useful_recall"] == 4


def test_leaks_compares_identifiers_digit_by_digit_and_words_as_words() -> None:
    assert leakage.leaks("my card 4111-1111-1111-1111", "4111 1111 1111 1111")
    assert not leakage.leaks("my card [CARD]", "4111 1111 1111 1111")
    assert leakage.leaks("I am bisexual.", "bisexual", identifier=False)
    assert not leakage.leaks("the Muslims' festival", "Muslim", identifier=False)
    assert not leakage.leaks("menu", "men", identifier=False)


def test_the_table_and_the_costs_on_synthetic_conversations(
        tmp_path: Path, corpus_rows: list[dict[str, object]]) -> None:
    data = write_locomo(tmp_path / "locomo.json", 2, turns=40, fact_every=5,
                        chat=["hello there", "how was your day", "nice weather today"])
    loco = leakage.run_locomo(data, embedder="hashing", quick=True)
    assert loco["questions"] > 0
    for name in ("render", "retrieve"):
        assert 0.0 < loco[name]["off"] <= 1.0
        assert loco[name]["ratio"] == pytest.approx(loco[name]["on"] / loco[name]["off"])
        assert loco[name]["ratio"] >= 0.9  # nothing sensitive in them: the check costs ~0
    text = leakage.table({"corpus": corpus_rows, "locomo": loco,
                          "assistant": {"questions": 2, "embedder": "x",
                                        "off": {"answered": 2, "passed": 1},
                                        "on": {"answered": 2, "passed": 1}}})
    assert "| corpus | identifiers leaked: retrieve | 84 / 84 | 0 / 84 | 0 / 84 |" in text
    assert "evidence recall: render_context" in text and "questions passed | 1 / 2" in text


def test_the_assistant_part_reads_the_script_off_and_on() -> None:
    out = leakage.run_assistant(embedder="hashing")
    assert out["questions"] > 20
    assert out["on"]["answered"] >= out["off"]["answered"] - 2


def test_unknown_embedder_is_refused() -> None:
    with pytest.raises(ValidationError):
        leakage.run_corpus(embedder="word2vec")


def test_cli_runs_the_leakage_benchmark(tmp_path: Path) -> None:
    from mars_core.cli import main

    assert main(["bench", "leakage", "--embedder", "hashing", "--no-assistant",
                 "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "leakage.json").read_text())
    assert {r["config"] for r in result["corpus"]} == set(leakage.CONFIGS)
    assert (tmp_path / "leakage.md").read_text().count("| corpus |") == 13
    assert main(["bench", "leakage", "--embedder", "nope"]) != 0
    assert main(["bench", "leakage", "--data", str(tmp_path / "missing.json")]) != 0
