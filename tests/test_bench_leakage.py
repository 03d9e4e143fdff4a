"""Smoke run of the leakage benchmark: privacy on leaks less than off, utility kept."""

from __future__ import annotations

from mars_core.bench import leakage


def test_privacy_on_leaks_less_and_keeps_harmless_recall() -> None:
    off, redact, private = leakage.run(turns=60, seed=5)
    assert off["config"] == "off" and off["leaked_items"] >= 3  # the probes do pull PII
    assert redact["leaked_tokens"] < off["leaked_tokens"]
    assert private["leaked_items"] <= redact["leaked_items"]
    assert redact["useful_recall"] >= off["useful_recall"] - 1
