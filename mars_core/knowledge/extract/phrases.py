"""Speakers, subjects and the phrase helpers the rules cut objects with."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from mars_core.knowledge.extract.lexicon import (
    _ARTICLES,
    _CLAUSE_CUT,
    _CLAUSE_OPENERS,
    _CONDITIONALS,
    _HYPOTHETICAL,
    _NON_NAMES,
    _NOT_SPEAKERS,
    _NP_STOP,
    _OBJECT_BAD_WORDS,
    _PREPS,
    _QUESTION_START,
    _SPEAKER,
    _TRAILING,
    _WORD,
)
from mars_core.knowledge.extract.topics import _norm
from mars_core.nlp.lexicons import STOPWORDS

__all__ = ["split_speaker"]

# --- speakers and subjects -----------------------------------------------------------------


def split_speaker(text: str) -> tuple[str | None, str]:
    """Split a LoCoMo-style ``"Speaker: text"`` turn into ``(speaker, text)``.

    Examples:
        >>> split_speaker("Caroline: I went to a support group.")
        ('Caroline', 'I went to a support group.')
        >>> split_speaker("Note: buy milk")
        (None, 'Note: buy milk')
    """
    m = _SPEAKER.match(text)
    if m is None or m.group(1).casefold().rstrip(".") in _NOT_SPEAKERS:
        return None, text
    return m.group(1), text[m.end():]


@dataclass(frozen=True, slots=True)
class _Subject:
    name: str  # as stored in payloads ("user" or the speaker)
    direct: bool  # talking to the agent (no named speaker)

    @property
    def key(self) -> str:
        return _norm(self.name)

    @property
    def display(self) -> str:
        return "The user" if self.direct else self.name

    @property
    def possessive(self) -> str:
        return "the user's" if self.direct else f"{self.name}'s"


def _third_person(text: str, who: _Subject) -> str:
    """Rewrite first-person words of a clause about ``who`` into the third person."""
    poss = who.possessive
    obj = "the user" if who.direct else who.name
    reps: list[tuple[str, str]] = [
        (r"\bI'm\b|\bI am\b", f"{obj} is"), (r"\bI've\b", f"{obj} has"),
        (r"\bI'll\b", f"{obj} will"), (r"\bI'd\b", f"{obj} would"), (r"\bI\b", obj),
        (r"\b[Mm]y\b", poss), (r"\b[Mm]ine\b", poss), (r"\b[Mm]yself\b", obj),
        (r"\b[Mm]e\b", obj),
    ]
    for pattern, rep in reps:
        text = re.sub(pattern, rep, text)
    return text


# --- phrases ------------------------------------------------------------------------------


_CLAUSE_CHARS: Final = 400
"""How far a phrase is looked for after its cue (every phrase taken is a few words), so
that a long sentence with many cues costs linear time, not quadratic."""


def _clause(tail: str) -> str:
    m = _CLAUSE_CUT.search(tail, 0, _CLAUSE_CHARS)
    return tail[: m.start()] if m else tail[:_CLAUSE_CHARS]


def _take(tail: str, max_words: int, stop: frozenset[str] = _NP_STOP, *,
          verb_first: bool = False) -> str | None:
    """The noun phrase opening ``tail``; ``None`` if empty, too long or unfinished.

    It ends at punctuation or a stop word, except that a lone gerund keeps its
    preposition ("going on road trips") and a short coordination is kept ("action and
    sci-fi movies"). Trailing "too", "itself", ... are dropped.
    """
    words = _WORD.findall(_clause(tail))
    out: list[str] = []
    i = 0
    while i < len(words):
        low = words[i].casefold()
        if low in stop:
            gerund = len(out) == 1 and low in _PREPS and (
                verb_first or out[0].casefold().endswith("ing"))
            rest = _until_stop(words[i + 1:], stop)
            coord = low in ("and", "or") and out and 0 < len(rest) <= 3 and \
                len(out) + 1 + len(rest) <= max_words
            if not (gerund or coord):
                break
        out.append(words[i])
        i += 1
    while out and out[-1].casefold() in _TRAILING:
        out.pop()
    if not out or len(out) > max_words or out[-1].casefold() in STOPWORDS:
        return None
    return " ".join(out)


def _until_stop(words: list[str], stop: frozenset[str]) -> list[str]:
    out = []
    for w in words:
        if w.casefold() in stop:
            break
        out.append(w)
    return out


_PLACE_CONNECTORS: Final = frozenset({"of", "de", "da", "del", "upon", "on"})


def _proper(tail: str, max_words: int = 5) -> str | None:
    """A capitalised span at the start of ``tail`` (optionally after "the")."""
    words = _WORD.findall(_clause(tail))
    if words and words[0] == "the":
        words = words[1:]
    out: list[str] = []
    for w in words:
        name = w[:1].isupper() and w.casefold() not in _NON_NAMES
        if name or (out and w in _PLACE_CONNECTORS and len(out) < max_words):
            out.append(w)
        else:
            break
    while out and not out[-1][:1].isupper():
        out.pop()
    return " ".join(out) if out and len(out) <= max_words else None


def _strip_article(text: str) -> str:
    low = text.casefold()
    for art in _ARTICLES:
        if low.startswith(art):
            return text[len(art):]
    return text


def _clean_object(obj: str | None, *, allow_article: bool = False) -> str | None:
    """``obj`` unless it points at the conversation or opens with a function word."""
    if obj is None:
        return None
    words = [w.strip("'") for w in obj.casefold().split()]
    if any(w in _OBJECT_BAD_WORDS or w.removesuffix("'s") in _OBJECT_BAD_WORDS
           for w in words[1 if allow_article and words[0] in ("a", "an", "the") else 0:]):
        return None
    first = words[0]
    if first in STOPWORDS and not (allow_article and first in ("a", "an", "the", "my")):
        return None
    return obj


_FIRST_WORD = re.compile(r"[^\w']*([\w']+)")


def _blocked(sentence: str, start: int) -> bool:
    """The cue at ``start`` is hypothetical ("if I ...", "If ..., I'll ...") or inside a
    relative clause.

    A main-clause "I" follows the start of the sentence, punctuation or a clause opener
    ("and", "but", "so", "yeah", "I think", ...); after any other word ("something I
    love", "the job I enjoy") it is a relative clause and says little about the speaker.
    """
    head = sentence[max(0, start - _CLAUSE_CHARS):start].rstrip()  # bounded: see _clause
    before = re.findall(r"[\w']+", head.casefold())[-3:]
    first = _FIRST_WORD.match(sentence, 0, start)
    if any(w in _HYPOTHETICAL for w in before) or (
            first is not None and first.group(1).casefold() in _CONDITIONALS):
        return True
    if not head or not (head[-1].isalnum() or head[-1] == "'"):
        return False
    if before[-1] == "that" and len(before) > 1:  # "I meant that I ...": a complement
        return before[-2] not in _CLAUSE_OPENERS
    return before[-1] not in _CLAUSE_OPENERS


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))
