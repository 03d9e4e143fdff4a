"""The default retrieval pipeline: the one measured best on LoCoMo, and its per-call cut-off.

``RetrievalConfig()`` = 0.3 · cosine + 0.7 · BM25 + 0.3 · answerability, then a relative
cut-off at 0.85 of the best score, applied per unit of evidence (a turn and the facts
derived from it stand or fall together); ``retrieve(relative_cutoff=0)`` is "the k best".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mars_core import RetrievalConfig, ValidationError
from mars_core.store import MemoryStore

FACTS = ["Ana moved to Lisbon in May", "Ana works as a nurse in Lisbon",
         "the weather was mild on Tuesday", "Bruno plays the cello", "Ana's cat is called Tom",
         "we talked about trains", "Lisbon has many hills"]


def _filled(make_store: Callable[..., MemoryStore], **kw: object) -> MemoryStore:
    store = make_store(**kw)
    for text in FACTS:
        store.add(text)
    return store


@pytest.mark.backend_neutral
def test_the_defaults_are_the_measured_pipeline() -> None:
    cfg = RetrievalConfig()
    assert (cfg.dense_weight, cfg.cue_weight, cfg.relative_cutoff) == (0.3, 0.3, 0.85)


def test_the_cutoff_drops_weak_matches_and_zero_gives_the_k_best(make_store) -> None:
    store = _filled(make_store)
    cut = store.retrieve("where did Ana move to?", k=5, read_only=True)
    full = store.retrieve("where did Ana move to?", k=5, read_only=True, relative_cutoff=0)
    assert cut and cut[0].text == "Ana moved to Lisbon in May"
    assert len(cut) < len(full) == 5
    assert [h.id for h in cut] == [h.id for h in full[:len(cut)]]  # a prefix of the ranking
    assert all(h.score >= 0.85 * cut[0].score for h in cut)
    plain = _filled(make_store, retrieval=RetrievalConfig(relative_cutoff=0))
    assert len(plain.retrieve("where did Ana move to?", k=5, read_only=True)) == 5


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, float("nan")])
def test_a_bad_per_call_cutoff_is_refused_and_changes_nothing(make_store, bad: object) -> None:
    store = _filled(make_store)
    before = store.audit.head
    with pytest.raises(ValidationError, match="relative_cutoff"):
        store.retrieve("Ana", relative_cutoff=bad)  # type: ignore[arg-type]
    assert store.audit.head == before


def test_a_turn_and_the_facts_drawn_from_it_are_cut_together(make_store) -> None:
    store = make_store()
    turn = store.observe("user", "I live in Porto and I work at Tidewave.", speaker="Maya")
    for text in ("Nice weather today.", "Let us talk about trains."):
        store.observe("user", text, speaker="Maya")
    derived = [n for n in store.list() if turn[0].id in n.provenance.derived_from]
    assert derived  # the rule-based extractor drew facts from the turn
    hits = store.retrieve("Where does Maya live?", read_only=True)
    ids = {h.id for h in hits}
    assert turn[0].id in ids and {n.id for n in derived} <= ids


def test_render_context_never_offers_the_question_as_its_own_evidence(make_store) -> None:
    store = make_store()
    store.observe("user", "My locker code is behind the blue door.", conversation_id="monday")
    store.observe("user", "Where is my locker code?",  # the question, stored before the render
                  conversation_id="friday")
    text = store.render_context("Where is my locker code?", conversation="friday",
                                evidence_only=True)
    assert "blue door" in text
    assert "Where is my locker code?" not in text
