"""Lexical conversational cues shared by both backends (seed 004 §4.5, §8 eq 28).

Cue phrases are matched on the lower-cased text (typographic apostrophes normalised)
at word boundaries, so "now" does not fire inside "know" and "don't" matches "don't"
but not "do not". This is the same for the spaCy and the rules backend: only the
structural part of ``query_like`` depends on the backend (see :mod:`.rules` and
:mod:`.spacy_backend`).

Examples:
    >>> from mars_core.nlp.cues import lexical_cues, social_gate
    >>> sorted(k for k, v in lexical_cues("Actually, I prefer tea now.").flags.items() if v)
    ['correction', 'current_state', 'preference']
    >>> social_gate("Thanks!")
    (1, True)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mars_core.nlp.lexicons import (
    ACK_LIKE_STARTERS,
    CONSTRAINT_CUES,
    CORRECTION_CUES,
    CURRENT_STATE_CUES,
    PAST_STATE_CUES,
    PREFERENCE_CUES,
    SOCIAL_KEYWORDS,
    SOCIAL_STRIP_CHARS,
)
from mars_core.nlp.rules import normalise_apostrophes

__all__ = ["LEXICAL_CUES", "LexicalCues", "ack_like", "lexical_cues", "social_gate"]

LEXICAL_CUES: tuple[str, ...] = (
    "constraint", "preference", "current_state", "past_state", "correction", "replacement",
)
"""The signals of eq (5) decided by phrase matching alone, in a fixed order."""


def _phrase_pattern(cues: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted(cues, key=len, reverse=True)  # longest first: "i prefer" > "prefer"
    body = "|".join(re.escape(c).replace(r"\ ", r"\s+") for c in alternatives)
    return re.compile(rf"(?<![\w'])(?:{body})(?![\w'])")


_PATTERNS: dict[str, re.Pattern[str]] = {
    "constraint": _phrase_pattern(CONSTRAINT_CUES),
    "preference": _phrase_pattern(PREFERENCE_CUES),
    "current_state": _phrase_pattern(CURRENT_STATE_CUES),
    "past_state": _phrase_pattern(PAST_STATE_CUES),
    "correction": _phrase_pattern(CORRECTION_CUES),
    "replacement": re.compile(r"\bnot\s+.+?\s+but\s+.+", re.IGNORECASE | re.DOTALL),
}
_ACK = _phrase_pattern(ACK_LIKE_STARTERS)


@dataclass(frozen=True, slots=True)
class LexicalCues:
    """The phrase-matched signals of one text and the evidence that fired them.

    Attributes:
        flags: signal name -> fired, for every name in :data:`LEXICAL_CUES`.
        evidence: ``"signal:cue"`` strings in text order within each signal.
    """

    flags: dict[str, bool]
    evidence: tuple[str, ...]


def _lower(text: str) -> str:
    return normalise_apostrophes(text).lower()


def lexical_cues(text: str) -> LexicalCues:
    """Match the constraint/preference/state/correction cues and the replacement pattern."""
    low = _lower(text)
    flags: dict[str, bool] = {}
    evidence: list[str] = []
    for name in LEXICAL_CUES:
        hits = [m.group(0) for m in _PATTERNS[name].finditer(low)]
        flags[name] = bool(hits)
        label = "not x but y" if name == "replacement" else None
        evidence.extend(f"{name}:{label or ' '.join(h.split())}" for h in hits)
    return LexicalCues(flags=flags, evidence=tuple(dict.fromkeys(evidence)))


def ack_like(text: str, query_like: bool) -> str | None:
    """The acknowledgement opening of ``text`` (never for a query-like turn), or ``None``.

    Unlike the DMF reference's plain ``startswith``, the opening must end at a word
    boundary ("noted" fires, "notedly" does not).

    Examples:
        >>> ack_like("Got it, I'll use Postgres.", query_like=False)
        'got it'
    """
    if query_like:
        return None
    match = _ACK.match(_lower(text).strip())
    return " ".join(match.group(0).split()) if match else None


def social_gate(text: str) -> tuple[int, bool]:
    """Word count and K_social membership of eq (28).

    Words are the whitespace-separated parts of the lower-cased text, each stripped of
    ``.,!?;:'"()-…–—`` before the membership test.

    Returns:
        ``(word_count, has_social_keyword)``; ``is_social`` is
        ``word_count <= 6 and has_social_keyword``.
    """
    words = text.lower().split()
    return len(words), any(w.strip(SOCIAL_STRIP_CHARS) in SOCIAL_KEYWORDS for w in words)
