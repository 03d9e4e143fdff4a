"""A person's name for entity erasure: its parts, who else shares them, and what a text says.

``MemoryStore.erase(entity="Jane Doe")`` removes every memory that names the whole name.
A person is also named by parts of it — "Mr Doe phoned about the invoice", "Jane said",
"Doe's invoice" — so for a name of two or more parts the erasure also reaches those
*partial mentions*, where the namespace makes the referent unambiguous. The rules are a
pure function of the erased name and the namespace's memories (same memories, same
result, on every machine):

* **The name** is the entity without leading titles (Mr, Mrs, Ms, Dr, Prof, ...:
  :data:`~mars_core.nlp.lexicons.NAME_TITLES`), trailing suffixes (Jr, PhD, ...) and a
  possessive. Its **parts** are its words and the pieces of hyphenated ones
  ("Lima-Souza": Lima, Souza), without particles ("van", "de", ...) and initials.
* **A mention** of a part is a whole-word, case-insensitive occurrence ("Doe", "DOE",
  "Doe's", "mr doe"; not "Does" or "Doherty") outside the name of another known person.
  The whole name (any case, any spacing) is always a mention.
* **Known people** of the namespace: the multi-word names in its memories, active and
  archived — the rules backend's ``NAME`` spans of every memory's text and payload
  (:class:`~mars_core.nlp.rules.RulesBackend`, whatever NLP backend the store uses), the
  entity of social memories and the participants of episodes — without titles, and
  without a leading "Dear", "Call", "Thanks" (:data:`~mars_core.nlp.lexicons.NAME_LEADS`).
  A name that contains the erased name, or is made only of its parts ("Doe Jane"), is the
  erased person. Any other name of two or more words that shares a part is **another
  person**: "John Doe" (and, conservatively, "Doe Street": the rules cannot tell a person
  from a place). A name seen alone ("Jane", "Mr Doe") is not evidence of another person:
  it is what a partial mention looks like.
* **Ambiguous (shared)**: a part that another person shares. Its mentions are listed for
  review (``shared``), never erased silently.
* **Everyday words**: a part that is also a common word ("Rose", "Baker", "Will", "May":
  :data:`~mars_core.nlp.lexicons.COMMON_NAME_WORDS`, stopwords, months, ...). In lower
  case it is the word ("she rose early", "the baker's"): neither erased nor listed.
  Written as a name it is a mention: after a title ("Ms Rose"; "mr"/"dr"/... also in lower
  case), or capitalised inside a sentence ("I met Rose"). Capitalised at the start of a
  sentence ("Rose called", "Baker's invoice is due") it may be either: listed for review
  (``common word``), not erased.

A memory with the whole name or one unambiguous mention is erased; a memory whose only
mentions are ambiguous is listed. What is not covered: a name written only in lower case
("john doe") is not recognised as another person, nicknames and spelling variants are not
parts, and plural family forms ("the Does") are not mentions.

Examples:
    >>> name = PersonName.resolve("Jane Doe", ["John Doe called", "Jane is away"])
    >>> name.parts, sorted(name.shared)
    (('Jane', 'Doe'), ['doe'])
    >>> name.scan("Jane's invoice").erase, name.scan("Mr Doe phoned").ambiguous
    (True, (('Doe', 'shared'),))
    >>> name.scan("John Doe phoned")
    NameScan(full=False, erase=False, ambiguous=())
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal

from mars_core.nlp.lexicons import (
    COMMON_NAME_WORDS,
    DATE_UNITS,
    DATE_WORDS,
    MONTHS,
    NAME_LEADS,
    NAME_PARTICLES,
    NAME_SUFFIXES,
    NAME_TITLES,
    NUMBER_WORDS,
    PHATIC_WORDS,
    SENTIMENT_LEXICON,
    STOPWORDS,
    WEEKDAYS,
)
from mars_core.nlp.rules import RulesBackend, normalise_apostrophes

__all__ = ["NameScan", "PersonName", "Reason", "name_words"]

Reason = Literal["shared", "common word"]
"""Why a partial mention is left for review (see the module)."""

_COMMON: Final = (COMMON_NAME_WORDS | STOPWORDS | MONTHS | WEEKDAYS | DATE_UNITS | DATE_WORDS
                  | NUMBER_WORDS | PHATIC_WORDS | frozenset(SENTIMENT_LEXICON))
_LOWER_CASE_TITLES: Final = frozenset({"mr", "mrs", "ms", "mx", "dr", "prof"})
_EDGE_PUNCT: Final = ".,;:!?\"()[]{}<>*_“”‘"
_TITLE_BEFORE: Final = re.compile(r"(?<!\w)(\w+)\.?\s+\Z")
_SENTENCE_START: Final = re.compile(r"(?:\A|[.!?:\n])[\s\"'“”‘(\[*•\-–—]*\Z")
_MASK: Final = "\x00"


@dataclass(frozen=True, slots=True)
class NameScan:
    """What one text says about an erased name.

    Attributes:
        full: it names the whole name.
        erase: it names the whole name or an unambiguous part: the memory is erased.
        ambiguous: ``(part, reason)`` of the ambiguous mentions (when not ``erase``).
    """

    full: bool
    erase: bool
    ambiguous: tuple[tuple[str, Reason], ...] = ()


_FULL: Final = NameScan(full=True, erase=True)
_PART: Final = NameScan(full=False, erase=True)


def name_words(name: str) -> tuple[str, ...]:
    """A name's words without leading titles, trailing suffixes, outer punctuation and
    possessives ("Lord" stays a surname in "Jane Lord").

    Examples:
        >>> name_words("Dr. Jane Doe's"), name_words("Prof. Jane Lord Jr.")
        (('Jane', 'Doe'), ('Jane', 'Lord'))
    """
    words: list[str] = []
    for raw in normalise_apostrophes(name).split():
        word = raw.strip(_EDGE_PUNCT)
        if word.casefold().endswith("'s"):
            word = word[:-2]
        word = word.strip("'").strip(_EDGE_PUNCT)
        if word:
            words.append(word)
    start, end = 0, len(words)
    while start < end and words[start].casefold() in NAME_TITLES:
        start += 1
    while end > start and words[end - 1].casefold() in NAME_SUFFIXES:
        end -= 1
    return tuple(words[start:end])


def _parts(words: Sequence[str]) -> tuple[str, ...]:
    """The erasable parts: words and hyphen pieces, without particles and initials."""
    out: dict[str, str] = {}
    for word in words:
        for piece in re.split(r"[-‐–]", word):
            key = piece.casefold()
            if len(piece) > 1 and any(c.isalpha() for c in piece) \
                    and key not in NAME_PARTICLES:
                out.setdefault(key, piece)
    return tuple(out.values())


@lru_cache(maxsize=512)
def _phrase(words: tuple[str, ...]) -> re.Pattern[str]:
    """Whole words, in order, any case, any whitespace between them."""
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(r"(?<!\w)" + body + r"(?!\w)", re.IGNORECASE)


def _contains(words: Sequence[str], sub: Sequence[str]) -> bool:
    n = len(sub)
    return any(tuple(words[i:i + n]) == tuple(sub) for i in range(len(words) - n + 1))


def _without_leads(words: tuple[str, ...]) -> tuple[str, ...]:
    i = 0
    while i < len(words) and words[i].casefold() in NAME_LEADS:
        i += 1
    return words[i:]


def _titled(before: str) -> bool:
    """Whether a title is written just before this point ("Ms ", "dr. ")."""
    m = _TITLE_BEFORE.search(before)
    if m is None:
        return False
    title = m.group(1)
    key = title.casefold()
    return key in NAME_TITLES and (title[0].isupper() or key in _LOWER_CASE_TITLES)


def _reading(text: str, start: int, part: str) -> Literal["mention", "common word"] | None:
    """How an occurrence of a part reads: a mention, maybe the word, or just the word."""
    if part.casefold() not in _COMMON:
        return "mention"
    before = text[:start]
    if _titled(before):
        return "mention"
    if not text[start].isupper():
        return None
    return "common word" if _SENTENCE_START.search(before) else "mention"


@dataclass(frozen=True, slots=True)
class PersonName:
    """An erased person's name, resolved against the people known in a namespace.

    Build it with :meth:`resolve`; :meth:`scan` reads one text (see the module).

    Attributes:
        words: the name's words (no titles).
        parts: the parts a partial mention may use, in the name's order.
        shared: the parts (case-folded) that another known person shares.
        others: the other known people's names that share a part (never mentions).
        entity: the entity as requested; it is a whole-name mention too, as written
            ("Jane Doe (CEO)", "Dr Jane Doe").
    """

    words: tuple[str, ...]
    parts: tuple[str, ...]
    shared: frozenset[str] = frozenset()
    others: tuple[tuple[str, ...], ...] = field(default=())
    entity: str = ""

    @property
    def partial(self) -> bool:
        """Whether partial mentions exist: the name has two parts or more."""
        return len(self.parts) >= 2

    @classmethod
    def resolve(cls, entity: str, texts: Iterable[str] = (),
                names: Iterable[str] = ()) -> PersonName:
        """The name of ``entity``, with the people found in ``texts`` (memory texts,
        read for ``NAME`` spans) and ``names`` (names as such: social entities,
        participants)."""
        entity = entity.strip()
        words = name_words(entity) or tuple(entity.split())
        parts = _parts(words)
        if len(parts) < 2:
            return cls(words, parts, entity=entity)
        rules = RulesBackend()
        spans = [s for t in texts for s, label in rules.parse(t).entities if label == "NAME"]
        shared: set[str] = set()
        others: dict[tuple[str, ...], None] = {}
        for candidate in (*spans, *names):
            other = _without_leads(name_words(candidate))
            common = _another_person(other, words, parts)
            if common:
                shared |= common
                others[tuple(w.casefold() for w in other)] = None
        return cls(words, parts, frozenset(shared),
                   tuple(sorted(others, key=lambda o: (-len(o), o))), entity)

    def scan(self, text: str) -> NameScan:
        """What ``text`` says about the name (see the module for the rules)."""
        text = normalise_apostrophes(text)
        if _phrase(self.words).search(text) or (
                self.entity and _phrase((normalise_apostrophes(self.entity),)).search(text)):
            return _FULL
        if not self.partial:
            return NameScan(full=False, erase=False)
        masked = self._mask(text)
        found: dict[str, Reason] = {}
        for part in self.parts:
            shared = part.casefold() in self.shared
            for m in _phrase((part,)).finditer(masked):
                how = _reading(masked, m.start(), part)
                if how is None:
                    continue
                if not shared and how == "mention":
                    return _PART
                found.setdefault(part, "shared" if shared else "common word")
        return NameScan(full=False, erase=False, ambiguous=tuple(found.items()))

    def _mask(self, text: str) -> str:
        """Blank out other people's names (same length, so positions hold)."""
        for other in self.others:
            text = _phrase(other).sub(lambda m: _MASK * len(m.group()), text)
        return text


def _another_person(candidate: Sequence[str], words: Sequence[str],
                    parts: Sequence[str]) -> set[str]:
    """The parts (case-folded) that ``candidate`` shares as another person; empty when it
    is the erased person, a single word, or shares nothing."""
    cand_parts = {p.casefold() for p in _parts(candidate)}
    if len(candidate) < 2 or not cand_parts:
        return set()
    folded = [w.casefold() for w in candidate]
    ours = {p.casefold() for p in parts}
    if _contains(folded, [w.casefold() for w in words]) or cand_parts <= ours:
        return set()
    return cand_parts & ours
