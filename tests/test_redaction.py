"""Two-pass redaction: surface masks, the memory pass, merging and idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars_core.errors import ValidationError
from mars_core.nlp import Analyzer
from mars_core.privacy import (
    Detection,
    Kind,
    RedactionResult,
    SensitivityScorer,
    detect,
    find_protected,
    redact,
    sensitive_phrases,
)
from mars_core.privacy.redaction import normalise

RULES = Analyzer("rules", sentiment="lexicon")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail ana@example.com now", "mail [EMAIL] now"),
        ("call +44 20 7946 0958.", "call [PHONE]."),
        ("card 4111 1111 1111 1111 ok", "card [CARD] ok"),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN [IBAN]"),
        ("SSN 536-22-1234", "SSN [NATIONAL_ID]"),
        ("password: hunter2", "password: [SECRET]"),
        ("host 192.168.1.24 down", "host [IP] down"),
        ("I live at 221B Baker Street", "I live at [ADDRESS]"),
        ("born on 12/03/1990", "born on [BIRTHDATE]"),
        ("I was diagnosed with lupus", "I was diagnosed with lupus"),  # categories kept
        ("nothing to see here", "nothing to see here"),
    ],
)
def test_surface_pass(text: str, expected: str) -> None:
    assert redact(text).text == expected


def test_kinds_and_masks() -> None:
    text = "Ana has diabetes, mail ana@example.com"
    assert redact(text, kinds={Kind.HEALTH}).text == "Ana has [HEALTH], mail ana@example.com"
    assert redact(text, mask="***").text == "Ana has diabetes, mail ***"
    assert redact(text, mask=lambda k: f"<{k.value}>").text == "Ana has diabetes, mail <email>"
    named = redact("Caroline met Melanie", kinds={Kind.NAME}, analyzer=RULES)
    assert named.text == "Caroline met [NAME]"  # a lone sentence-initial word is no rules entity
    assert redact(text, kinds=()).text == text
    with pytest.raises(ValidationError):
        redact(text, mask=3)  # type: ignore[arg-type]


def test_given_detections_are_used_first() -> None:
    text = "ref ABC and ana@example.com"
    result = redact(text, detections=[Detection(Kind.NATIONAL_ID, 4, 7, 1.0)])
    assert result.text == "ref [NATIONAL_ID] and [EMAIL]"  # round 2 still runs the detectors
    assert redact(text, detections=[]).text == "ref ABC and [EMAIL]"
    ignored = redact(text, detections=[Detection(Kind.PERSON, 4, 7, 1.0)], kinds={Kind.EMAIL})
    assert ignored.text == "ref ABC and [EMAIL]"


def test_result_counts_and_repr() -> None:
    r = redact("a@example.com b@example.com 4111 1111 1111 1111")
    assert r.spans_redacted == 3 and r.kinds == (Kind.CARD, Kind.EMAIL) and r.changed
    assert "example" not in repr(r) and "4111" not in repr(r)
    assert isinstance(r, RedactionResult)
    assert not redact("plain").changed


# -------------------------------------------------------------------------- pass 2


def test_reformatted_card_is_caught_by_the_memory_pass() -> None:
    phrase = "4111 1111 1111 1111"
    for text in ("pay with 4111-1111-1111-1111 today", "pay with 4111111111111111 today",
                 "pay with 41 11 11 11 11 11 11 11 today", "pay with 4111.1111.1111.1111 today"):
        result = redact(text, protected=[phrase], kinds=())  # surface pass off: pass 2 alone
        assert result.text == "pay with [PRIVATE] today", text
        assert result.kinds == (Kind.PRIVATE,)


def test_non_luhn_reference_reformatted() -> None:
    # not a valid card, so only the memory pass can catch it
    assert redact("ref 1234-5678-9012-3456", protected=["1234 5678 9012 3456"]).text == \
        "ref [PRIVATE]"
    assert redact("ref 12345678 90123456", protected=["1234 5678 9012 3456"]).text == \
        "ref [PRIVATE]"


def test_near_verbatim_phrases() -> None:
    protected = ["Ana López", "was diagnosed with lupus"]
    text = "ANA  lopez said she WAS diagnosed -- with Lupus! Ana-Lopez agreed."
    assert redact(text, protected=protected).text == \
        "[PRIVATE] said she [PRIVATE]! [PRIVATE] agreed."


def test_word_boundaries_and_min_chars() -> None:
    assert redact("Annual report by Ann", protected=["Ann"]).text == "Annual report by [PRIVATE]"
    assert redact("Jo and Joe", protected=["Jo"]).text == "Jo and Joe"  # below min_chars
    assert redact("Jo and Joe", protected=["Jo"], min_chars=2).text == "[PRIVATE] and Joe"
    assert redact("Straße", protected=["strasse"]).text == "[PRIVATE]"
    assert find_protected("Strasse", ["ss"], min_chars=2) == []
    with pytest.raises(ValidationError):
        find_protected("x", ["x"], min_chars=0)
    with pytest.raises(ValidationError):
        redact("x", protected=[b"x"])  # type: ignore[list-item]


def test_overlapping_spans_are_merged() -> None:
    text = "contact Ana at ana@example.com please"
    result = redact(text, protected=["Ana at ana"])
    assert result.text in {"contact [EMAIL] please", "contact [PRIVATE] please"}
    assert result.spans_redacted == 1
    assert "ana" not in result.text.lower()


def test_existing_masks_are_left_alone() -> None:
    text = "card [CARD] and [EMAIL]"
    assert redact(text, protected=["card", "email"]).text == "[PRIVATE] [CARD] and [EMAIL]"


def test_normalise() -> None:
    assert normalise("José-María  GARCÍA!") == "josemariagarcia"
    assert normalise("") == ""


# ----------------------------------------------------------------------- idempotence

FRAGMENTS = [
    "Ana", "López", "ana@example.com", "4111 1111 1111 1111", "4111-1111-1111-1111",
    "+44 20 7946 0958", "DE89 3704 0044 0532 0130 00", "password: hunter2", "Tr0ub4dor&3",
    "221B Baker Street", "diagnosed with lupus", "[CARD]", "[PRIVATE]", "card", "private",
    "2024-05-17", "$1,299.99", "v1.2.3", "192.168.1.24", "SSN 536-22-1234", ",", ".", "-",
    "12", "call me", "at", "born on 12/03/1990", "AKIAIOSFODNN7EXAMPLE", "\n",
]
PROTECTED = ["Ana López", "4111 1111 1111 1111", "diagnosed with lupus", "card", "hunter2"]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12), st.sampled_from([" ", "", " - "]),
       st.lists(st.sampled_from(PROTECTED), max_size=3))
def test_redaction_is_idempotent(parts: list[str], sep: str, protected: list[str]) -> None:
    text = sep.join(parts)
    once = redact(text, protected=protected)
    twice = redact(once.text, protected=protected)
    assert twice.text == once.text
    assert twice.spans_redacted == 0
    for phrase in protected:
        assert find_protected(once.text, [phrase]) == [] or "[" in once.text


@pytest.mark.parametrize("text", [
    "mail ana@example.com, card 4111-1111-1111-1111.",
    "pwd=Secr3t! and token 9fK2xQ7pLmZ4vR8tY1wB3nC6",
    "I live at 12 rue de la Paix; tel 06 12 34 56 78",
    "Ana López was diagnosed with lupus",
])
def test_idempotent_examples(text: str) -> None:
    once = redact(text, protected=PROTECTED).text
    assert redact(once, protected=PROTECTED).text == once


# -------------------------------------------------------------- the store's pipeline


def test_store_pipeline_high_sensitivity_memories_are_not_echoed() -> None:
    scorer = SensitivityScorer(analyzer=RULES)
    memories = [
        "Caroline said her card is 4111 1111 1111 1111",
        "Melanie was diagnosed with lupus in May",
        "We had pizza on Friday",
    ]
    protected: list[str] = []
    for text in memories:
        report = scorer.score(text)
        if report.score >= 0.7:
            protected.extend(sensitive_phrases(text, report.detections))
    assert "We had pizza" not in " ".join(protected)
    context = ("- card on file: 4111.1111.1111.1111\n"
               "- Melanie: was diagnosed with lupus.\n- pizza on Friday")
    out = redact(context, protected=protected)
    assert "4111" not in out.text and "lupus" not in out.text and "pizza on Friday" in out.text


def test_sensitive_phrases() -> None:
    text = "Ana Ruiz has diabetes, mail ana@example.com on 2024-05-01"
    dets = detect(text, RULES)
    phrases = sensitive_phrases(text, dets)
    assert "ana@example.com" in phrases and "has diabetes" in phrases
    assert "diabetes, mail" in phrases
    assert "2024-05-01" not in phrases  # dates weigh less than min_weight
    assert sensitive_phrases(text, dets, context_words=0, min_weight=0.9) == ()
    assert "diabetes" in sensitive_phrases(text, dets, context_words=0)
    assert sensitive_phrases("x", [Detection(Kind.EMAIL, 5, 9, 1.0)]) == ()


def test_errors_do_not_echo_text() -> None:
    with pytest.raises(ValidationError) as info:
        redact(12345)  # type: ignore[arg-type]
    assert "12345" not in str(info.value)
