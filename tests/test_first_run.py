"""A new user's first run (issue 34, item 5): no progress bar from a dependency (the
model's first load is checked in ``test_embedders``), the semantic sensitivity fit read
from the package instead of recomputed, small embeddings on one torch thread, and
``mars bench first-answer`` (a smoke run of the benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mars_core.embedders import minilm_installed
from mars_core.embeddings import HashingEmbedder
from mars_core.privacy import semantic

ROOT = Path(__file__).resolve().parents[1]


def _embedders() -> list[object]:
    found: list[object] = [HashingEmbedder()]
    if minilm_installed():
        from mars_core.embedders import SentenceTransformerEmbedder

        found.append(SentenceTransformerEmbedder())
    return found


@pytest.mark.parametrize("embedder", _embedders(), ids=lambda e: e.name)  # type: ignore[attr-defined]
def test_the_shipped_fit_is_what_a_fit_gives_now(embedder: object) -> None:
    """Fails when the examples or the fit changed and the shipped file was not written
    again (``mars_core.privacy.semantic.ship_fit`` says how)."""
    key = semantic.fit_key(embedder)  # type: ignore[arg-type]
    shipped = semantic.shipped_fit(key, semantic.probe(embedder))  # type: ignore[arg-type]
    assert shipped is not None, f"no shipped fit for {key[0]}: run ship_fit (see its doc)"
    fresh = semantic.SemanticSensitivity.fit(embedder)  # type: ignore[arg-type]
    vectors = np.eye(key[1])[:40]  # the two classifiers answer alike
    assert np.allclose(shipped.probabilities(vectors), fresh.probabilities(vectors),
                       rtol=0, atol=1e-6)
    a, b = shipped.calibration, fresh.calibration
    assert (a.enabled, a.cv_recall, a.cv_precision) == (b.enabled, b.cv_recall, b.cv_precision)
    for field in semantic.Calibration.__dataclass_fields__:  # every one: a field added to
        # the calibration and missing from the shipped file would read as its default
        if field != "center":
            assert getattr(a, field) == pytest.approx(getattr(b, field), abs=1e-5), field
    assert np.allclose(a.center, b.center, atol=1e-6)


def test_a_shipped_fit_is_found_by_a_probe_within_the_tolerance_only() -> None:
    """The same model on another machine, CPU or library release gives a probe vector a
    float's noise away: it reads the shipped fit (a digest of the rounded vector missed
    whenever a component sat on a rounding boundary). Another vector, name or dimension
    does not."""
    emb = HashingEmbedder()
    key, vector = semantic.fit_key(emb), semantic.probe(emb)
    assert semantic.shipped_fit(key, vector) is not None
    bump = np.zeros_like(vector)
    bump[0, :3] = 0.5 * semantic.PROBE_TOLERANCE
    assert semantic.shipped_fit(key, vector + bump) is not None
    assert semantic.shipped_fit(key, vector - bump) is not None
    bump[0, 7] = 3 * semantic.PROBE_TOLERANCE
    assert semantic.shipped_fit(key, vector + bump) is None
    assert semantic.shipped_fit(("another-model", key[1], key[2]), vector) is None
    short = HashingEmbedder(64)
    assert semantic.shipped_fit(semantic.fit_key(short), semantic.probe(short)) is None


FIRST = textwrap.dedent("""
    from mars_core.embeddings import HashingEmbedder
    from mars_core.privacy.semantic import TRAIN, semantic_for
    from mars_core.testing import CountingEmbedder
    shipped, other = CountingEmbedder(HashingEmbedder()), CountingEmbedder(HashingEmbedder(64))
    semantic_for(shipped)
    semantic_for(other)  # nothing shipped for it: fitted
    print(sum(shipped.batches), sum(other.batches) - len(TRAIN))
""")


def test_a_first_write_reads_the_shipped_fit_instead_of_fitting() -> None:
    done = subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
                          check=False)  # a new process: nothing fitted or cached yet
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "1"]  # the probe only; the other: probe + examples


# That loading MiniLM draws no bar and leaves transformers' bars and torch's threads as
# they were is checked in a new process by
# test_embedders.py::test_read_commands_never_import_the_model_and_its_first_load_is_quiet
# (one new process loads the model for both claims).


def test_bench_first_answer_smoke() -> None:
    from mars_core.bench import first_answer

    result = first_answer.run(baseline=ROOT, examples=("quickstart",),
                              embedders=("hashing",), reps=1)
    [row] = result["rows"]
    assert row["example"] == "quickstart" and row["embedder"] == "hashing"
    for side in ("after", "before"):
        assert 0 < row[side]["first_s"] <= row[side]["done_s"]
        assert row[side]["bars"] is False
    assert row["first_ratio"] > 0 and "| quickstart | hashing |" in first_answer.table(result)
    with pytest.raises(Exception, match="unknown quick starts"):
        first_answer.run(examples=("nope",), embedders=("hashing",), reps=1)
