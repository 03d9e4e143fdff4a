"""Deterministic text signals of the control loop: content words, coverage, entities,
query decomposition and cosine similarity. No model, no randomness.

Examples:
    >>> sorted(content_words("Where did Ana and Bo go hiking?"))
    ['ana', 'bo', 'go', 'hike']
    >>> coverage("Where did Ana go hiking?", ["Ana went hiking in Sintra"])
    0.6667
    >>> decompose("What does Ana like and where does Bo work?")
    ['What does Ana like and where does Bo work?', 'What does Ana like', 'where does Bo work']
    >>> speaker_of("Ana: I moved to Lisbon"), speaker_of("Ana moved to Lisbon")
    ('Ana', None)
    >>> subject_of("What does Ana's sister do?", {"Ana", "Bo"})
    'Ana'
    >>> in_own_voice("What activities does Ana partake in?", "Ana")
    'What activities do I partake in?'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from mars_core.reading.analysis import terms

__all__ = [
    "FILLER_WORDS",
    "content_words",
    "cosines",
    "coverage",
    "decompose",
    "document_frequencies",
    "entities",
    "in_own_voice",
    "salient_terms",
    "speaker_of",
    "subject_of",
]

_SPLIT = re.compile(r"\s*(?:,|;|\band\b|\bor\b|\bas well as\b|\bthen\b)\s*", re.IGNORECASE)
_SPEAKER = re.compile(r"^\s*([A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?):\s")
_CAP = re.compile(r"\b([A-Z][a-z]+(?:[-'][A-Za-z]+)?)\b")
_QUESTION_WORDS = frozenset(
    "what when where who whom which why how does did do is are was were can could would "
    "should will has have had the a an in on at i my you your yes no hi hey hello also "
    "not but so just it this that there they he she we".split())
FILLER_WORDS = frozenset(
    "like likely go went get got make made really thing things lot time one some much "
    "very well good great yeah yes ye oh ok okay wow thank thanks sure know think see feel "
    "not no don t sorry maybe perhap about around just also".split())
"""Conversational filler: never salient, never proof that an answer used a memory."""
_FILLER = FILLER_WORDS


def content_words(text: str) -> set[str]:
    """The terms of ``text`` (:func:`mars_core.reading.analysis.terms`: folded, Snowball-stemmed,
    without stop words) as a set: "live"/"lives" and "hike"/"hiking" meet."""
    return set(terms(text))


def coverage(query: str, texts: Iterable[str]) -> float:
    """Share of the query's content words found in ``texts`` (1.0 for an empty query).

    Rounded to 4 decimals so equal inputs give equal floats everywhere.
    """
    wanted = content_words(query)
    if not wanted:
        return 1.0
    seen: set[str] = set()
    for t in texts:
        seen |= content_words(t)
    return round(len(wanted & seen) / len(wanted), 4)


def entities(text: str) -> list[str]:
    """Capitalised words that are not question or function words, in order, deduplicated."""
    out: list[str] = []
    for m in _CAP.finditer(text):
        word = m.group(1)
        if word.lower() not in _QUESTION_WORDS and word not in out:
            out.append(word)
    return out


def speaker_of(text: str) -> str | None:
    """The speaker a memory's text opens with (``"Ana: ..."`` → ``"Ana"``), else None.

    The same ``"Name:"`` convention the store's answerability rerank reads (a turn stored
    as ``"speaker: text"``, as the LoCoMo loader and many chat exports write it).
    """
    m = _SPEAKER.match(text)
    return m.group(1) if m else None


def subject_of(query: str, speakers: Iterable[str]) -> str | None:
    """The one speaker ``query`` names (a whole, capitalised word; ``"Ana's"`` counts).

    None when it names none of ``speakers`` or several (then no single subject's
    statements can hold the answer).
    """
    named = [s for s in sorted(set(speakers))
             if re.search(rf"(?<![\w'-]){re.escape(s)}(?![\w-])", query)]
    return named[0] if len(named) == 1 else None


_AUX_FIRST = {"does": "do", "has": "have", "is": "am", "was": "was", "did": "did",
              "will": "will", "would": "would", "can": "can", "could": "could",
              "should": "should", "might": "might", "may": "may"}


def in_own_voice(query: str, subject: str) -> str:
    """``query`` rewritten as ``subject`` would ask it about themself.

    Turns are first-person ("I signed up for a pottery class"), so "What activities does
    Ana partake in?" becomes "What activities do I partake in?": ``subject's`` → "my",
    ``subject`` after an auxiliary or opening the query → "I" (the auxiliary conjugated),
    elsewhere → "me". A query that does not name ``subject`` comes back unchanged.
    """
    name = re.escape(subject)
    out = re.sub(rf"(?<![\w'-]){name}'s(?![\w-])", "my", query)

    def aux(m: re.Match[str]) -> str:
        verb = m.group(1)
        first = _AUX_FIRST[verb.lower()]
        return (first.capitalize() if verb[0].isupper() else first) + " I"

    words = "|".join(_AUX_FIRST)
    out = re.sub(rf"\b((?i:{words}))\s+{name}(?![\w'-])", aux, out)
    out = re.sub(rf"^{name}(?![\w'-])", "I", out)
    return re.sub(rf"(?<![\w'-]){name}(?![\w'-])", "me", out)


def decompose(query: str, split: bool = True) -> list[str]:
    """The default sub-query roots: the query, then its conjunction-separated parts.

    A part keeps only when it has at least two content words; a part that lost all the
    query's entities gets them back (so "What does Ana like and enjoy" gives "Ana enjoy").
    """
    out = [query]
    if not split:
        return out
    names = entities(query)
    for raw in _SPLIT.split(query.strip(" ?!.")):
        part = raw.strip()
        if len(content_words(part)) < 2 and not (names and content_words(part)):
            continue
        missing = [n for n in names if n not in part]
        sub = " ".join([*missing, part]) if missing and not entities(part) else part
        if sub and sub not in out:
            out.append(sub)
    return out if len(out) > 2 else out[:1]


def salient_terms(texts: Sequence[str], exclude: Iterable[str], limit: int,
                  df: Mapping[str, int] | None = None, docs: int = 0) -> list[str]:
    """The words of ``texts`` most specific to them, not in ``exclude``.

    Score: occurrences in ``texts`` × inverse document frequency ``log(1 + docs/df)``
    over the namespace (``df``/``docs``; without them every word weighs 1). Names found
    mid-sentence keep their capital; other words are stems. Ties break alphabetically.
    """
    skip = {w.lower() for w in exclude} | content_words(" ".join(exclude))
    counts = Counter(w for t in texts for w in content_words(t)
                     if w not in skip and w not in _FILLER and len(w) > 2 and not w.isdigit())
    names = {e.lower(): e for t in texts for e in _mid_sentence_names(t)}

    def weight(w: str) -> float:
        if df is None or docs <= 0:
            return 1.0
        return math.log(1 + docs / max(1, df.get(w, 1)))

    ranked = sorted(counts, key=lambda w: (-counts[w] * weight(w), w))
    return [names.get(w, w) for w in ranked[:limit]]


def _mid_sentence_names(text: str) -> list[str]:
    """Capitalised words not opening a sentence or a ``speaker:`` turn."""
    out = []
    for m in _CAP.finditer(text):
        before = text[: m.start()].rstrip()
        if before and before[-1] not in ".!?:" and m.group(1).lower() not in _QUESTION_WORDS:
            out.append(m.group(1))
    return out


def cosines(query: npt.NDArray[np.float32], rows: npt.NDArray[np.float32]) -> list[float]:
    """Cosine of ``query`` with each row (0.0 for a zero vector)."""
    if rows.size == 0:
        return []
    qn = float(np.linalg.norm(query))
    norms = np.linalg.norm(rows, axis=1) * qn
    dots = rows @ query
    return [float(d / n) if n > 0 else 0.0 for d, n in zip(dots, norms, strict=True)]


def document_frequencies(texts: Iterable[str]) -> tuple[dict[str, int], int]:
    """Content-word document frequencies of ``texts`` and how many texts there were."""
    df: Counter[str] = Counter()
    n = 0
    for t in texts:
        df.update(content_words(t))
        n += 1
    return dict(df), n
