"""The ranking rules of issue 31 (item 3), each on a small synthetic conversation: the
speaker a question names (possessives included), and the calendar time it names.

Each test shows the rule deciding the order: the same store with the rule's weight at 0
ranks the other way.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from mars_core import RetrievalConfig
from mars_core.reading.frame import TimeWindow, time_window
from mars_core.reading.retrieval import answerability
from mars_core.store import MemoryStore


def _at(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 15, tzinfo=UTC)


# --- the speaker a question names ----------------------------------------------------------

@pytest.mark.parametrize("query", ["What is Nate's favourite dish?",
                                   "What is Nate\u2019s favourite dish?",
                                   "What did Nate cook?"])
def test_a_possessive_names_the_speaker(query: str) -> None:
    """"Nate's" (straight or typographic apostrophe) names Nate as "Nate" does."""
    a = answerability(query, "Coconut milk ice cream, every time!", "Nate")
    assert a.speaker == 1.0
    assert answerability(query, "Coconut milk ice cream, every time!", "Ana").speaker == 0.0


def test_a_possessive_in_the_memory_counts_as_the_entity() -> None:
    a = answerability("What breed is James' dog?", "Ana: James's dog is a beagle")
    assert a.entity == 1.0


def _cooks(make_store: Callable[..., MemoryStore], **kw: object) -> MemoryStore:
    store = make_store(**kw)
    store.observe("user", "I cooked a big pot of curry for the party", speaker="Ana",
                  conversation_id="c")
    store.observe("user", "I made pasta, it was a hit at the party", speaker="Nate",
                  conversation_id="c")
    return store


def test_the_named_speakers_turn_stands_alone_above_the_cutoff(make_store) -> None:
    """"What did Nate cook for the party?": Nate's own turn answers it, Ana's shares as
    many of its words. With the speaker weight Nate's turn clears the relative cut-off
    alone; without it Ana's turn is within 0.85 of it and comes along."""
    question = "What did Nate cook for the party?"
    hits = _cooks(make_store).retrieve(question, read_only=True)
    assert [h.text for h in hits] == ["I made pasta, it was a hit at the party"]
    plain = _cooks(make_store, retrieval={"speaker_weight": 0.0})
    assert [h.node.speaker for h in plain.retrieve(question, read_only=True)] == ["Nate", "Ana"]


def test_a_question_lends_its_score_to_the_reply_but_not_its_speaker_term(make_store) -> None:
    """Ana asks, Bo replies (one unit: the reply scores at least as the question). The
    question names Ana: her turn gains the speaker term; Bo's reply borrows her score
    without it — who asked is not who answered — so on LoCoMo the other speaker's replies
    to the named speaker's questions do not come along above the cut-off."""
    store = make_store()
    store.observe("user", "I went hiking in the hills last week, have you been hiking?",
                  speaker="Ana", conversation_id="c")
    store.observe("user", "Not lately, work is busy", speaker="Bo", conversation_id="c")
    hits = {h.node.speaker: h.score for h in store.retrieve(
        "Where did Ana go hiking?", relative_cutoff=0, read_only=True)}
    weight = store.config.retrieval.speaker_weight
    assert hits["Bo"] == pytest.approx(hits["Ana"] - weight)
    assert [h.node.speaker for h in store.retrieve("Where did Ana go hiking?",
                                                   read_only=True)] == ["Ana"]


# --- the calendar time a question names ----------------------------------------------------

@pytest.mark.parametrize(("query", "start", "end", "month"), [
    ("What did Ana paint in July 2023?", _at(2023, 7, 1), _at(2023, 8, 1), None),
    ("What did Gina find on 1 February, 2023?", _at(2023, 2, 1), _at(2023, 2, 2), None),
    ("What painting did Mel show on October 13, 2023?", _at(2023, 10, 13), _at(2023, 10, 14),
     None),
    ("What happened on 2023-10-13?", _at(2023, 10, 13), _at(2023, 10, 14), None),
    ("Where did Bo go in Sept. 2022?", _at(2022, 9, 1), _at(2022, 10, 1), None),
    ("How often did Ana swim in 2023?", _at(2023, 1, 1), _at(2024, 1, 1), None),
    ("When did Melanie go camping in June?", None, None, 6),
])
def test_the_time_a_question_names(query: str, start: datetime | None, end: datetime | None,
                                   month: int | None) -> None:
    w = time_window(query)
    assert w is not None
    assert (w.start, w.end, w.month) == (
        start and start.replace(hour=0), end and end.replace(hour=0), month)


@pytest.mark.parametrize("query", ["What did Gina find last week?", "Is Mayday near?",
                                   "We met in Marseille", "on 31 February, 2023",
                                   "What may I do?", "in 12345", "May " * 5000])
def test_no_time_named_or_no_such_day_is_no_window(query: str) -> None:
    assert time_window(query) is None


def test_a_window_holds_the_week_after_it() -> None:
    """What happened in June is often told in early July; a month of any year is that
    month in every year."""
    july = TimeWindow(_at(2023, 7, 1), _at(2023, 8, 1))
    assert july.holds(_at(2023, 7, 31)) and july.holds(_at(2023, 8, 7))
    assert not july.holds(_at(2023, 8, 9)) and not july.holds(_at(2023, 6, 30))
    june = TimeWindow(None, None, 6)
    assert june.holds(_at(2021, 6, 2)) and june.holds(_at(2024, 7, 6))
    assert not june.holds(_at(2024, 7, 9)) and not june.holds(_at(2024, 5, 31))


def _paints(make_store: Callable[..., MemoryStore], **kw: object) -> MemoryStore:
    store = make_store(**kw)
    for text, when in (("I painted a horse in the meadow, my best painting so far",
                        _at(2023, 5, 2)),
                       ("I painted a sunset over the lake", _at(2023, 7, 4)),
                       ("I painted a horse again, a small one", _at(2023, 9, 20))):
        store.observe("user", text, speaker="Ana", at=when, conversation_id="c")
    return store


def test_the_memory_made_in_the_named_month_outranks_the_others(make_store) -> None:
    question = "What did Ana paint in July 2023?"
    hits = _paints(make_store).retrieve(question, relative_cutoff=0, read_only=True)
    assert hits[0].text == "I painted a sunset over the lake"
    plain = _paints(make_store, retrieval=RetrievalConfig(date_weight=0.0))
    assert plain.retrieve(question, relative_cutoff=0, read_only=True)[0].text != \
        "I painted a sunset over the lake"
    # a question that names no time: the rule changes nothing
    q = "What did Ana paint?"
    assert [h.text for h in _paints(make_store).retrieve(q, relative_cutoff=0, read_only=True)] \
        == [h.text for h in plain.retrieve(q, relative_cutoff=0, read_only=True)]
