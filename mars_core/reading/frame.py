"""Query frames and the symbolic card channel (DMF §9.3 steps 1 and 3).

DMF answers a question from two kinds of evidence: the raw turns and *cards*, the
deterministic, source-linked projections of those turns into ``(subject, predicate,
object)``. In this store the cards are the semantic and social memories the extractor
draws from each turn ("The user works at Northwind Labs", "Pepper is the user's dog, a
rescue greyhound"), each linked to its turn by ``derivesFrom``.

A question is parsed into a :class:`QueryFrame` (step 1: its subjects, the predicates it
asks about, the type of answer it wants, whether it asks about the past), and every card
of the searched memories is scored against it (step 3, "card symbolic retrieval: lookup
by query entities, subject focus, predicate focus, answer type, and card fields") with
the weights of DMF Table 4, ``(0.9, 0.55, 1.2, 1.35, 0.2) / 4.2``:

``S(card, Q) = (0.9·entity + 0.55·subject + 1.2·predicate + 1.35·answer + 0.2·fields) / 4.2``

A card whose subject and predicate both match the frame *answers* it
(:func:`answers`): retrieval ranks it with ``S`` added to its hybrid score and never cuts
it off (:mod:`mars_core.reading.retrieval`). The vocabulary below is the extractor's own
(:mod:`mars_core.knowledge.extract`): a frame can only ask for what a card can say.

Examples:
    >>> f = parse_query("What's my dog's name?")
    >>> sorted(f.subjects), sorted(f.predicates), f.answer
    (['user'], ['attr:name', 'rel:dog'], 'name')
    >>> from mars_core.knowledge.extract import NON_NAMES, RELATION_WORDS, Topic
    >>> card = Topic("pepper", "relationshipTo:user", "dog|kind=rescue greyhound")
    >>> round(symbolic_score(f, card, "Pepper is the user's dog, a rescue greyhound"), 3)
    0.786
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Final

from mars_core.knowledge.extract import NON_NAMES, RELATION_WORDS, Topic
from mars_core.nlp.rules import normalise_apostrophes
from mars_core.reading.analysis import STOPWORDS

__all__ = ["CARD_WEIGHTS", "WINDOW_SLACK", "QueryFrame", "TimeWindow", "answers",
           "card_classes", "parse_query", "symbolic_score", "time_window"]

CARD_WEIGHTS: Final = (0.9, 0.55, 1.2, 1.35, 0.2)
"""DMF Table 4's symbolic card weights: entity, subject, predicate, answer type, fields
(divided by their sum, 4.2)."""

_USER: Final = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
_CUES: Final = {  # query word -> card classes it asks about (the extractor's predicates)
    **dict.fromkeys(("work", "works", "working", "worked", "employer", "employed",
                     "company", "office", "firm"), ("worksAt",)),
    **dict.fromkeys(("job", "jobs", "profession", "occupation", "career", "living",
                     "title", "role"), ("worksAs",)),
    **dict.fromkeys(("live", "lives", "living", "lived", "city", "town", "based", "reside",
                     "moved", "move", "home", "country"), ("livesIn",)),
    **dict.fromkeys(("originally", "hometown", "grew", "born"), ("isFrom",)),
    **dict.fromkeys(("diet", "vegan", "vegetarian", "pescatarian"), ("diet",)),
    **dict.fromkeys(("allergic", "allergy", "allergies"), ("allergicTo",)),
    **dict.fromkeys(("like", "likes", "love", "loves", "enjoy", "enjoys", "fan", "support",
                     "supports", "into"), ("likes",)),
    **dict.fromkeys(("hate", "hates", "dislike", "dislikes", "stand", "avoid", "avoids"),
                    ("dislikes",)),
    **dict.fromkeys(("prefer", "prefers", "preference", "rather"), ("prefers",)),
    **dict.fromkeys(("name", "called", "named"), ("attr:name",)),
    **dict.fromkeys(("breed", "kind", "type", "species"), ("kind",)),
    **dict.fromkeys(("birthday", "born"), ("attr:birthday",)),
    **dict.fromkeys(("age", "aged"), ("attr:age",)),
}
_SAME: Final = {"mom": "mum", "mother": "mum", "father": "dad", "neighbor": "neighbour",
                "puppy": "dog", "kitten": "cat", "boss": "manager", "coworker": "colleague"}
_PAST: Final = re.compile(r"\b(before|used to|previous(?:ly)?|former(?:ly)?|anymore|"
                          r"no longer)\b", re.I)
_WH: Final = (("where", "place"), ("who", "person"), ("whom", "person"),
              ("when", "time"), ("how old", "age"))
_PLACES: Final = frozenset({"livesIn", "isFrom", "worksAt", "formerlyWorkedAt"})
_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NAME: Final = re.compile(r"\b([A-Z][a-z][\w-]*)")


_ASKS: Final = frozenset({"what", "when", "where", "who", "whom", "whose", "why", "how",
                         "which", "do", "does", "did", "is", "are", "was", "were", "can",
                         "could", "have", "has", "tell", "remind"})
"""First words that make a query a question without a question mark."""
_NOT_SUBJECTS: Final = NON_NAMES | _ASKS
"""Capitalised words that are not a question's subject."""


@dataclass(frozen=True, slots=True)
class QueryFrame:
    """What a question asks, parsed deterministically (DMF §9.3 step 1).

    Attributes:
        subjects: whom it is about: ``"user"`` for I/my/we/our, and the names it uses.
        predicates: the card classes it asks about (see :func:`card_classes`).
        answer: the type of answer wanted (``place``, ``person``, ``name``, ``time``,
            ``age``, ``job``) or ``None``.
        past: it asks about a former state ("before", "used to", "previously").
        words: its content words (lower-cased, no stop words).
    """

    subjects: frozenset[str]
    predicates: frozenset[str]
    answer: str | None
    past: bool
    words: frozenset[str]


@lru_cache(maxsize=4096)
def parse_query(query: str) -> QueryFrame:
    """The frame of ``query`` (pure, cached). Only a question has one (a question mark, or
    a first word that asks: "where do I work"); a statement used as a query ("My sister
    lives in Lisbon") has an empty frame, and no card answers it.

    Examples:
        >>> f = parse_query("Where did I work before my current job?")
        >>> sorted(f.predicates), f.answer, f.past
        (['formerlyWorkedAt', 'worksAs', 'worksAt'], 'place', True)
        >>> sorted(parse_query("What does Alex teach?").subjects)
        ['alex']
        >>> parse_query("My sister Ana lives in Lisbon.").predicates
        frozenset()
    """
    text = normalise_apostrophes(query)
    low = text.casefold()
    tokens = [t.removesuffix("'s") for t in _WORD.findall(low)]
    if "?" not in text and (not tokens or tokens[0] not in _ASKS):
        return QueryFrame(frozenset(), frozenset(), None, False, frozenset())
    subjects = {"user"} if _USER & set(tokens) else set()
    subjects |= {n.casefold() for n in _NAME.findall(text)
                 if n.casefold() not in STOPWORDS and n.casefold() not in _NOT_SUBJECTS}
    past = _PAST.search(low) is not None
    preds: set[str] = set()
    for t in tokens:
        preds.update(_CUES.get(t, ()))
        if t in RELATION_WORDS:
            preds.add(f"rel:{_SAME.get(t, t)}")
    if "worksAt" in preds and past:
        preds.add("formerlyWorkedAt")
    if "favourite" in tokens or "favorite" in tokens:
        preds |= {f"favourite:{t}" for t in tokens if t not in STOPWORDS
                  and t not in ("favourite", "favorite")}
    return QueryFrame(frozenset(subjects), frozenset(preds), _answer_type(low, preds), past,
                      frozenset(t for t in tokens if t not in STOPWORDS and t not in _USER))





def _answer_type(low: str, preds: set[str]) -> str | None:
    for wh, kind in _WH:
        if re.search(rf"\b{wh}\b", low):
            return kind
    if "attr:name" in preds:
        return "name"
    if "worksAs" in preds and re.search(r"\bwhat\b", low):
        return "job"
    return None


@lru_cache(maxsize=65_536)
def card_classes(topic: Topic) -> frozenset[str]:
    """The classes a card's topic answers for (its predicate, coarsened).

    Examples:
        >>> sorted(card_classes(Topic("user", "attitude:olives", "-")))
        ['dislikes']
        >>> sorted(card_classes(Topic("tom", "relationshipTo:user",
        ...                           "best friend|livesin=manchester")))
        ['livesIn', 'rel:friend']
    """
    pred = topic.predicate
    if pred.startswith("relationshipTo:"):
        rel, _, attrs = topic.value.partition("|")
        out = {f"rel:{_SAME.get(w, w)}" for w in rel.split() if w in RELATION_WORDS}
        keys = {kv.split("=", 1)[0] for kv in attrs.split(";") if "=" in kv}
        out |= {"kind"} if "kind" in keys else set()
        out |= {"livesIn"} if "livesin" in keys else set()
        return frozenset(out)
    head = pred.partition(":")[0]
    if head == "attitude":
        return frozenset({"likes"} if topic.value == "+" else
                         {"dislikes"} if topic.value == "-" else {"formerlyLiked"})
    if head == "favourite":
        return frozenset({"likes", pred})
    if head == "prefers":
        return frozenset({"prefers", "likes"})
    if head == "avoids":
        return frozenset({"avoids", "dislikes", "diet"})
    if head == "attr":
        return frozenset({pred})
    return frozenset({head})


def _answer_fits(answer: str | None, classes: frozenset[str]) -> bool:
    if answer == "place":
        return bool(classes & _PLACES)
    if answer in ("person", "name"):
        return "attr:name" in classes or any(c.startswith("rel:") for c in classes)
    if answer == "job":
        return "worksAs" in classes
    if answer == "age":
        return "attr:age" in classes
    return False


def _subject_matches(frame: QueryFrame, topic: Topic) -> bool:
    if topic.predicate.startswith("relationshipTo:"):
        related = topic.predicate.partition(":")[2]
        return related in frame.subjects or topic.subject in frame.subjects
    return topic.subject in frame.subjects


def symbolic_score(frame: QueryFrame, topic: Topic, text: str) -> float:
    """``S(card, Q)`` in [0, 1], with DMF Table 4's weights (:data:`CARD_WEIGHTS`).

    Args:
        frame: the parsed question.
        topic: the card's topic (:func:`mars_core.knowledge.extract.topic_of`).
        text: the card's content (for the entity and field overlaps).
    """
    classes = card_classes(topic)
    words = frozenset(t.removesuffix("'s") for t in _WORD.findall(text.casefold()))
    names = frame.subjects - {"user"}
    entity = len(names & words) / len(names) if names else 0.0
    value_words = frozenset(_WORD.findall(topic.value.casefold()))
    parts = (entity, float(_subject_matches(frame, topic)),
             float(bool(frame.predicates & classes)),
             float(_answer_fits(frame.answer, classes) and bool(frame.predicates & classes
                                                               or frame.answer == "place")),
             float(bool(frame.words & value_words)))
    return sum(w * p for w, p in zip(CARD_WEIGHTS, parts, strict=True)) / sum(CARD_WEIGHTS)


_MANY: Final = frozenset({"likes", "dislikes", "prefers", "avoids", "allergicTo", "has",
                          "isA", "formerlyLiked"})
"""Classes a subject holds many of (what they like): a card of these alone is one of a
set, not *the* answer."""


def answers(frame: QueryFrame, topic: Topic, *, specific: bool = False) -> bool:
    """The card answers the frame: its subject and one of its predicates both match
    (``specific``: a single-valued predicate — where they work, not what they like).

    Examples:
        >>> answers(parse_query("Where do I work now?"),
        ...         Topic("user", "worksAt", "northwind labs"))
        True
        >>> answers(parse_query("Where does Tom work?"), Topic("user", "worksAt", "acme"))
        False
    """
    matched = frame.predicates & card_classes(topic)
    return _subject_matches(frame, topic) and bool(matched - _MANY if specific else matched)


# --- the time a question names -------------------------------------------------------------

WINDOW_SLACK: Final = timedelta(days=7)
"""How long after a named time a memory still counts as told in it: what happened "in
June" is often told in the first days of July ("last week")."""

_MONTHS: Final = ("january", "february", "march", "april", "may", "june", "july", "august",
                  "september", "october", "november", "december")
_MONTH: Final = r"(" + "|".join(m[:3] + f"(?:{m[3:]})?" if len(m) > 3 else m for m in _MONTHS
                                ).replace("sep(?:", "sep(?:t|") + r")\.?"
_WINDOWS: Final = (  # (kind, pattern), most specific first
    ("mdy", re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)),
    ("dmy", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b",
                       re.I)),
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("my", re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", re.I)),
    ("m", re.compile(rf"\b(?:in|during|since|throughout)\s+(?:early\s+|late\s+|mid-?)?{_MONTH}"
                     r"(?![\w-])", re.I)),
    ("y", re.compile(r"\b(?:in|during|throughout)\s+((?:19|20)\d\d)\b", re.I)),
)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A time a question names, resolved to a span of the calendar.

    Attributes:
        start: the first instant (aware UTC), or None for a month of any year.
        end: the instant after the last (exclusive).
        month: the month (1–12) when the question names one without a year ("in June").

    Examples:
        >>> w = time_window("What did Ana paint in July 2023?")
        >>> w.start.isoformat(), w.end.isoformat()
        ('2023-07-01T00:00:00+00:00', '2023-08-01T00:00:00+00:00')
        >>> w.holds(datetime(2023, 8, 3, tzinfo=UTC)), w.holds(datetime(2023, 9, 1, tzinfo=UTC))
        (True, False)
    """

    start: datetime | None
    end: datetime | None
    month: int | None = None

    def holds(self, when: datetime, slack: timedelta = WINDOW_SLACK) -> bool:
        """Whether a memory made at ``when`` was made in the window or up to ``slack``
        after it."""
        if self.month is not None:
            return (when.month == self.month or (when - slack).month == self.month)
        assert self.start is not None and self.end is not None
        return self.start <= when < self.end + slack


def _month(name: str) -> int:
    return [m[:3] for m in _MONTHS].index(name[:3].lower()) + 1


@lru_cache(maxsize=4096)
def time_window(query: str) -> TimeWindow | None:
    """The calendar time ``query`` names — a day ("on 13 October, 2023", "October 13,
    2023", "2023-10-13"), a month ("in July 2023", "in June": that month of any year) or a
    year ("in 2022") — or None. Relative times ("last week") are not resolved: a question
    has no date of its own to resolve them against.

    Examples:
        >>> time_window("When did Melanie go camping in June?").month
        6
        >>> time_window("What did Gina find on 1 February, 2023?").start.day
        1
        >>> time_window("What did Gina find last week?") is None
        True
    """
    for kind, rx in _WINDOWS:
        if (m := rx.search(query)) is None:
            continue
        try:
            if kind in ("mdy", "dmy", "iso"):
                y, mo, d = ((int(m[3]), _month(m[1]), int(m[2])) if kind == "mdy" else
                            (int(m[3]), _month(m[2]), int(m[1])) if kind == "dmy" else
                            (int(m[1]), int(m[2]), int(m[3])))
                day = datetime(y, mo, d, tzinfo=UTC)
                return TimeWindow(day, day + timedelta(days=1))
        except ValueError:  # "February 30, 2023": no such day
            return None
        if kind == "my":
            y, mo = int(m[2]), _month(m[1])
            first = datetime(y, mo, 1, tzinfo=UTC)
            return TimeWindow(first, first + timedelta(days=calendar.monthrange(y, mo)[1]))
        if kind == "m":
            return TimeWindow(None, None, _month(m[1]))
        y = int(m[1])
        return TimeWindow(datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC))
    return None
