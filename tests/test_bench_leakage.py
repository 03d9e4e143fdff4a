"""Smoke run of the leakage benchmark: privacy on leaks less than off, utility kept."""

from __future__ import annotations

from mars_core.bench import leakage


def test_privacy_on_leaks_less_and_keeps_harmless_recall() -> None:
    off, redact, private = leakage.run(turns=60, seed=5)
    assert off["config"] == "off" and off["leaked_items"] >= 3  # the probes do pull PII
    assert redact["leaked_tokens"] < off["leaked_tokens"]
    assert private["leaked_items"] <= redact["leaked_items"]
    assert redact["useful_recall"] >= off["useful_recall"] - 1


def test_cli_runs_the_leakage_benchmark(tmp_path: object, capsys: object) -> None:
    from pathlib import Path

    from mars_core.cli import main

    out = Path(str(tmp_path))
    assert main(["bench", "leakage", "--turns", "40", "--out", str(out)]) == 0
    assert (out / "leakage.json").exists()
