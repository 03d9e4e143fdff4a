"""Direct identifiers found and masked by the summariser's gist filter
(mars_core.knowledge.summarise)."""

from __future__ import annotations

from mars_core.knowledge.summarise import Identifier, find_identifiers, mask_identifiers


def test_a_phone_number_does_not_span_lines() -> None:
    """Numbers on two lines are two facts, not one phone number masked across the break."""
    text = "room 12\n34 56 78 is booked"
    assert mask_identifiers(text) == text
    assert find_identifiers(text) == frozenset()


def test_a_phone_number_on_one_line_is_masked_and_the_line_break_kept() -> None:
    assert mask_identifiers("call 555 123 4567\nthanks") == "call [phone]\nthanks"
    assert find_identifiers("call (555) 123-4567") == {Identifier("phone", "5551234567")}


def test_dates_and_short_numbers_stay() -> None:
    assert mask_identifiers("met on 2024-05-01, 3 times") == "met on 2024-05-01, 3 times"

