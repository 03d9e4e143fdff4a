"""The output check's masks (mars_core.privacy.masking): typed placeholders on the
sensitive span only, never on its neighbours."""

from __future__ import annotations

import pytest

from mars_core.bench.privacy_corpus import DETECTOR_NEGATIVES, DETECTOR_POSITIVES
from mars_core.privacy.detectors import Kind
from mars_core.privacy.masking import MASK, Masker, readable_share, shows
from mars_core.privacy.semantic import Anchors


@pytest.mark.parametrize(("text", "kind", "value"), DETECTOR_POSITIVES)
def test_every_identifier_of_the_corpus_is_masked_by_its_kind(text: str, kind: Kind,
                                                               value: str) -> None:
    masked = Masker().mask(text)
    assert value not in masked.text and f"[{kind.value.upper()}]" in masked.text


def test_ordinary_numbers_are_left_alone() -> None:
    kept = [t for t in DETECTOR_NEGATIVES if Masker().mask(t).text == t]
    assert len(kept) == len(DETECTOR_NEGATIVES)


@pytest.mark.parametrize(("text", "masked"), [
    ("I have type 1 diabetes since spring", "I have type 1 [HEALTH] since spring"),
    ("My HIV test came back positive", "My [HEALTH] test came back positive"),
    ("I came out as gay to my parents last weekend",
     "I [PROTECTED] as [PROTECTED] to my parents last weekend"),
    ("I went to the LGBTQ support group yesterday",
     "I went to the [PROTECTED] support group yesterday"),
    ("We are three months behind on the mortgage",
     "We are three months behind on the [FINANCE]"),
    ("I was diagnosed with bipolar disorder in May", "I was [HEALTH] with [HEALTH] in May"),
])
def test_category_words_are_masked_by_kind_and_the_rest_stays(text: str, masked: str) -> None:
    assert Masker(categories=True).mask(text).text == masked
    assert Masker().mask(text).text == text  # not a sensitive memory: the words stay


def test_a_fallback_masks_the_whole_text_only_when_no_span_is_found() -> None:
    m = Masker(categories=True, fallback=Kind.HEALTH)
    assert m.mask("I keep hearing voices when I'm alone").text == "[HEALTH]"
    assert m.mask("My therapist moved to Porto").text == "My [HEALTH] moved to Porto"
    assert Masker(fallback=Kind.HEALTH).mask("I keep hearing voices").text == \
        "I keep hearing voices"  # a fallback belongs to the category pass


def test_whole_masks_every_text_and_a_blank_stays_blank() -> None:
    m = Masker(whole=Kind.FINANCE)
    assert m.mask("User has missed three monthly mortgage payments").text == "[FINANCE]"
    assert m.mask("   ").text == "   "


def test_shared_words_are_masked_wherever_the_text_says_them() -> None:
    restated = "Noted: 7319 disarms the alarm at your house"
    shared = Anchors.of(restated).common(Anchors.of("The alarm code for the house is 7319"))
    assert shared == Anchors.of("7319 alarm house").words  # the anchor forms (stems)
    m = Masker(categories=True, shared=shared, shared_kind=Kind.SECRET)
    assert m.mask(restated).text == "Noted: [SECRET] disarms the [SECRET] at your [SECRET]"
    # the subject's name is not a shared word: it stays readable
    assert Anchors.of("Ana's code is 4417").common(Anchors.of("Ana's PIN is 4417")) == {"4417"}


def test_neighbouring_placeholders_of_one_kind_merge() -> None:
    m = Masker(shared=Anchors.of("house alarm code").words)
    assert m.mask("The user's house alarm code is ready").text == "The user's [PRIVATE] is ready"


def test_phrases_are_masked_as_private_after_normalisation() -> None:
    m = Masker(phrases=("Ana López",))
    assert m.mask("I met ANA  lopez and Annabel").text == "I met [PRIVATE] and Annabel"


def test_masking_is_idempotent_and_values_keep_their_shape() -> None:
    m = Masker(categories=True, phrases=("Ines",))
    text = "Ines has diabetes, call 555-123-4567"
    once = m.mask(text).text
    assert m.mask(once).text == once and once == "[PRIVATE] has [HEALTH], call [PHONE]"
    value = {"who": "Ines", "calls": ["555-123-4567", 3], "ok": True, "n": None}
    assert m.mask_value(value) == {"who": "[PRIVATE]", "calls": ["[PHONE]", 3], "ok": True,
                                   "n": None}
    assert value["who"] == "Ines"  # a new value, the given one untouched
    assert Masker().kinds < m.kinds


def test_shows_and_readable_share_tell_a_masked_line_from_another() -> None:
    text = "I have type 1 diabetes since spring"
    body = "I have type 1 [HEALTH] since spring"
    assert shows(body, text) and shows(text, text) and not shows(body, "I have a cat")
    assert not shows("[HEALTH]", "")
    assert readable_share(body, text) == pytest.approx(3 / 4)  # type, since, spring
    assert readable_share("[HEALTH]", text) == 0.0
    assert readable_share("anything", "the of and") == 1.0
    assert MASK.fullmatch("[NATIONAL_ID]")
