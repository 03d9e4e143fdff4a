"""Token counters, shares, the lexical analyser and the hashing embedder."""

from __future__ import annotations

import numpy as np
import pytest

from mars_core.budget import (
    ApproxTokenCounter,
    BudgetLedger,
    WhitespaceTokenCounter,
    make_counter,
    normalise_shares,
)
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, ValidationError
from mars_core.model import MemoryType
from mars_core.reading.analysis import terms


def test_counters_are_deterministic_and_named() -> None:
    c = ApproxTokenCounter()
    assert c.count("hello world") == 2
    assert c.count("数据库") == 3
    assert c.count("a" * 17) == 3
    assert make_counter("approx-v1").name == "approx-v1"
    assert make_counter("whitespace").count("a b  c") == 3
    assert WhitespaceTokenCounter().count("") == 0
    with pytest.raises(ConfigError):
        make_counter("nope")


def test_shares_normalise() -> None:
    eq = normalise_shares(None)
    assert sum(eq.values()) == pytest.approx(1.0)
    sh = normalise_shares({MemoryType.SEMANTIC: 0.75, MemoryType.TASK: 0.25})
    assert sh[MemoryType.SEMANTIC] == pytest.approx(0.75) and sh[MemoryType.EPISODIC] == 0
    with pytest.raises(ConfigError):
        normalise_shares({MemoryType.TASK: -1})
    with pytest.raises(ConfigError, match="add up to 1"):  # fractions of B, not weights
        normalise_shares({MemoryType.SEMANTIC: 0.6, MemoryType.TASK: 0.6})


def test_ledger() -> None:
    led = BudgetLedger()
    led.add("a", MemoryType.TASK, 5)
    led.add("a", MemoryType.EPISODIC, 2)
    led.remove("a", MemoryType.TASK, 5)
    assert led.used("a") == 2 and led.used("b") == 0 and led.namespaces() == ["a"]


def test_the_analyser_meets_the_forms_of_a_word() -> None:
    """Snowball stems: "live/lives/lived/living" meet; a possessive or a contraction
    makes no term of its own; accents fold; stop words are Snowball's."""
    assert terms("The dogs were running") == ["dog", "run"]
    assert {tuple(terms(w)) for w in ("live", "lives", "lived", "living")} == {("live",)}
    assert terms("Where does Ana live?") == ["ana", "live"]
    assert terms("Ana lives in Porto") == ["ana", "live", "porto"]
    assert terms("Ana's dog doesn't like it") == ["ana", "dog", "like"]
    assert terms("Inês, INES and ines") == ["ine"] * 3
    assert "s" not in terms("Bo's, Cy's and Di's cats")


def test_hashing_embedder() -> None:
    e = HashingEmbedder(dim=128)
    v = e.embed(["Ana likes tea", "Ana likes tea", "quantum chromodynamics", "!!!"])
    assert v.shape == (4, 128) and v.dtype == np.float32
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)
    assert float(v[0] @ v[2]) < 0.3
    assert not v[3].any()
    assert np.array_equal(HashingEmbedder(dim=128).embed(["x y"]), e.embed(["x y"]))
    with pytest.raises(ValidationError):
        HashingEmbedder(dim=2)
