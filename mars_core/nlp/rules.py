"""The rule-based backend: regex tokens, a stopword content ratio and rule entities.

It never imports spaCy, so its output is the same whether spaCy is installed or not,
on every machine. It stands in for the trained pipeline as follows:

* **tokens**: a regex tokenizer that splits clitics the way spaCy does ("don't" ->
  "do", "n't"; "I'm" -> "I", "'m"); punctuation and symbols are not counted in ``|t|``.
* **information density**: a token is content when it has a letter and is not a stopword,
  a phatic word, a number word or a lower-case "-ly" adverb (outside a small list of
  "-ly" nouns and adjectives). Auxiliaries count as function words even when they are
  main verbs ("I *have* a dog"), unlike a tagger.
* **entities**: maximal spans of (a) capitalised words that are not stopwords or phatic
  words, joined by "of"/"&"/"de"...; a sentence-initial word counts only inside a
  multi-word span or as an acronym; (b) numbers, number words, weekdays, capitalised
  months, "yesterday"/"today"/..., "last/next/this" + a date unit, "<number> <unit>
  ago". Labels are ``NAME``, ``DATE`` and ``NUMBER``.
* **query-likeness**: the inverted-auxiliary test looks at the next word (a pronoun,
  a determiner or a capitalised name) instead of the parse's ``nsubj``; the imperative
  test looks at the first word (after an optional "please").

Examples:
    >>> from mars_core.nlp.rules import RulesBackend
    >>> p = RulesBackend().parse("Ana moved to Paris in May 2021.")
    >>> p.n_tokens, p.n_content, [e for e, _ in p.entities]
    (7, 4, ['Paris', 'May 2021'])
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from mars_core.nlp.lexicons import (
    DATE_MODIFIERS,
    DATE_UNITS,
    DATE_WORDS,
    LY_NOT_ADVERBS,
    MONTHS,
    NAME_CONNECTORS,
    NEGATION_WORDS,
    NUMBER_WORDS,
    PHATIC_WORDS,
    QUERY_AUX_STARTERS,
    QUERY_REQUEST_ROOTS,
    QUERY_WH_STARTERS,
    SENTIMENT_BOOSTERS,
    SENTIMENT_LEXICON,
    STOPWORDS,
    SUBJECT_WORDS,
    WEEKDAYS,
)

__all__ = [
    "LexiconSentiment",
    "Parse",
    "RulesBackend",
    "content_word",
    "query_like_rules",
    "split_sentences",
    "token_spans",
    "tokenize",
]

_TOKEN = re.compile(
    r"\d+(?:[.,:/]\d+)+"  # 1,000 / 3.5 / 10:30 / 7/5
    r"|n't\b"  # clitic negation
    r"|'(?:s|m|re|ve|ll|d)\b"  # other clitics
    r"|[^\W_]+?(?=n't\b)"  # the stem before n't ("do", "ca", "wo")
    r"|[^\W_]+(?:-[^\W_]+)*"  # words, with inner hyphens
    r"|\S",  # any other non-space character is one punctuation/symbol token
    re.UNICODE,
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|\n+")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})

_WORD_CACHE = 4096
"""Tokens whose word tests (:func:`content_word`, :func:`_capitalised_candidate`) are
remembered: pure functions of the token, asked again for every common word."""

_BOOST = 0.293  # VADER's B_INCR
_NEGATE = -0.74  # VADER's N_SCALAR
_EXCLAIM = 0.292  # VADER's per-"!" emphasis, up to four marks
_ALPHA = 15.0  # VADER's compound normalisation constant


class Parse(NamedTuple):
    """What a parsing backend extracts from one text.

    Attributes:
        n_tokens: ``|t|``, tokens excluding punctuation, symbols and spaces.
        n_content: tokens whose POS is in {NOUN, VERB, ADJ, PROPN} (or the rules stand-in).
        entities: ``(surface, label)`` pairs.
        query_like: the structural part of the query-like signal.
        query_cue: the rule that fired, for audit (``None`` when not query-like).
    """

    n_tokens: int
    n_content: int
    entities: tuple[tuple[str, str], ...]
    query_like: bool
    query_cue: str | None


def normalise_apostrophes(text: str) -> str:
    """Replace typographic apostrophes by ``'`` so cue and clitic rules see one form."""
    return text.translate(_APOSTROPHES)


def split_sentences(text: str) -> list[str]:
    """Split on sentence-final punctuation followed by space, and on newlines."""
    return [s for s in (p.strip() for p in _SENTENCE_BREAK.split(text)) if s]


def tokenize(text: str) -> list[str]:
    """Split one text into word, clitic and punctuation tokens.

    Examples:
        >>> tokenize("I don't like O(n) code!")
        ['I', 'do', "n't", 'like', 'O', '(', 'n', ')', 'code', '!']
    """
    return _TOKEN.findall(normalise_apostrophes(text))


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """:func:`tokenize`'s tokens with their offsets in ``text``: ``(start, end, token)``.

    Examples:
        >>> token_spans("Ana’s cat")
        [(0, 3, 'Ana'), (3, 5, "'s"), (6, 9, 'cat')]
    """
    return [(m.start(), m.end(), m.group())
            for m in _TOKEN.finditer(normalise_apostrophes(text))]


def _is_word(tok: str) -> bool:
    # the tokenizer's multi-character tokens are all words, numbers or clitics
    return len(tok) > 1 or tok.isalnum()


@lru_cache(maxsize=_WORD_CACHE)
def content_word(tok: str) -> bool:
    """Whether a token counts as information-bearing in the rules backend.

    Examples:
        >>> [content_word(t) for t in ["Paris", "the", "quickly", "family", "2021", "thanks"]]
        [True, False, False, True, False, False]
    """
    low = tok.lower()
    if not any(ch.isalpha() for ch in low):
        return False
    if tok[:1].isupper() and low in MONTHS:
        return True
    if low in STOPWORDS or low in PHATIC_WORDS or low in NUMBER_WORDS:
        return False
    return not (
        tok[:1].islower() and low.endswith("ly") and len(low) > 4 and low not in LY_NOT_ADVERBS
    )


# --- entities ---------------------------------------------------------------------------

_NAME, _DATE, _NUM, _YEAR = "NAME", "DATE", "NUMBER", "YEAR"
_NUMS = (_NUM, _YEAR)
_YEAR_SHAPE = re.compile(r"(?:1[89]|20)\d\d")


@lru_cache(maxsize=_WORD_CACHE)
def _capitalised_candidate(tok: str) -> bool:
    low = tok.lower()
    shaped = (tok[:1].isupper() and len(tok) > 1) or (
        tok[:1].islower() and any(ch.isupper() for ch in tok[1:])  # camelCase: iPhone, eBay
    )
    return (
        shaped
        and low not in STOPWORDS
        and low not in PHATIC_WORDS
        and low not in WEEKDAYS
        and low not in MONTHS
    )


def _acronym(tok: str) -> bool:
    return len(tok) >= 2 and tok.isupper() and tok.isalpha() and tok.lower() not in PHATIC_WORDS


def _base_label(words: Sequence[str], i: int) -> str | None:
    tok = words[i]
    low = tok.lower()
    if _YEAR_SHAPE.fullmatch(tok):
        return _YEAR
    if tok[:1].isdigit() or low in NUMBER_WORDS:
        return _NUM
    if low in WEEKDAYS or low in DATE_WORDS:
        return _DATE
    if low in MONTHS and tok[:1].isupper():
        nxt = words[i + 1] if i + 1 < len(words) else ""
        return _DATE if i > 0 or nxt[:1].isdigit() else None
    if not _capitalised_candidate(tok):
        return None
    if i > 0 or _acronym(tok):
        return _NAME
    nxt = words[i + 1] if i + 1 < len(words) else ""
    return _NAME if _capitalised_candidate(nxt) else None


def _label_tokens(words: Sequence[str]) -> list[str | None]:
    labels = [_base_label(words, i) for i in range(len(words))]
    for i, tok in enumerate(words):
        low = tok.lower()
        prev = labels[i - 1] if i else None
        if low in DATE_UNITS and i and (words[i - 1].lower() in DATE_MODIFIERS or prev in _NUMS):
            labels[i] = _DATE
            if words[i - 1].lower() in DATE_MODIFIERS:
                labels[i - 1] = _DATE
        elif low == "ago" and prev == _DATE:
            labels[i] = _DATE
    return labels


def _gap(tok: str) -> str | None:
    low = tok.lower()
    return low if low == "," or low in NAME_CONNECTORS else None


def _joins(prev: str, cur: str, gap: str | None) -> bool:
    """Whether a token labelled ``cur`` continues a span ending in ``prev``.

    ``gap`` is the connector between them ("of", "&", ","), or ``None`` when adjacent.
    """
    if gap is not None:
        if gap == ",":
            return prev in (_DATE, _NUM) and cur == _YEAR
        return prev == _NAME and cur == _NAME
    if prev == _NAME:
        return cur in (_NAME, _NUM, _YEAR)
    return cur in (_DATE, _NUM, _YEAR)


def _sentence_entities(tokens: Sequence[str]) -> list[tuple[str, str]]:
    words = [t for t in tokens if _is_word(t) or t in {",", "&"}]
    labels = _label_tokens(words)
    spans: list[tuple[list[str], list[str]]] = []  # (surface words, labels)
    last = -2  # index of the last word added to a span
    i = 0
    while i < len(words):
        lab = labels[i]
        adjacent = bool(spans) and last == i - 1
        if lab is None:
            nxt = labels[i + 1] if i + 1 < len(words) else None
            gap = _gap(words[i])
            if adjacent and nxt is not None and gap and _joins(_head(spans[-1][1]), nxt, gap):
                spans[-1][0].extend(words[i : i + 2])
                spans[-1][1].append(nxt)
                last = i + 1
                i += 2
                continue
            i += 1
            continue
        if adjacent and _joins(_head(spans[-1][1]), lab, None):
            spans[-1][0].append(words[i])
            spans[-1][1].append(lab)
        else:
            spans.append(([words[i]], [lab]))
        last = i
        i += 1
    return [(_surface(ws), _span_label(ls)) for ws, ls in spans]


def _head(labels: Sequence[str]) -> str:
    """The label that decides joins: NAME spans stay names, others follow their last token."""
    return _NAME if labels[0] == _NAME else labels[-1]


def _surface(words: Sequence[str]) -> str:
    return " ".join(words).replace(" ,", ",")


def _span_label(labels: Sequence[str]) -> str:
    if labels[0] == _NAME:
        return _NAME
    return _DATE if _DATE in labels or _YEAR in labels else _NUM


# --- query-likeness ---------------------------------------------------------------------


def query_like_rules(sentences: Sequence[Sequence[str]]) -> str | None:
    """Return the structural query cue of tokenised sentences, or ``None``.

    Examples:
        >>> query_like_rules([tokenize("Can you summarize the report")])
        'aux_inversion:can'
        >>> query_like_rules([tokenize("Do not use external APIs")]) is None
        True
    """
    for sent in sentences:
        words = [t for t in sent if _is_word(t)]
        if sent and sent[-1] == "?":
            return "question_mark"
        if not words:
            continue
        first = words[0].lower()
        if first in QUERY_WH_STARTERS:
            return f"wh:{first}"
        if first in QUERY_AUX_STARTERS and len(words) > 1 and _subject_like(words[1]):
            return f"aux_inversion:{first}"
        verb = words[1].lower() if first == "please" and len(words) > 1 else first
        if verb in QUERY_REQUEST_ROOTS:
            return f"request:{verb}"
    return None


def _subject_like(tok: str) -> bool:
    return tok.lower() in SUBJECT_WORDS or _capitalised_candidate(tok)


# --- the backend ------------------------------------------------------------------------


class RulesBackend:
    """Deterministic regex backend (no third-party dependency).

    Examples:
        >>> RulesBackend().parse("Thanks!").n_content
        0
    """

    name = "rules"

    def parse(self, text: str) -> Parse:
        """Tokenise ``text`` and extract the counts, entities and the query cue."""
        sentences = [tokenize(s) for s in split_sentences(text)]
        words = [t for sent in sentences for t in sent if _is_word(t)]
        entities = tuple(e for sent in sentences for e in _sentence_entities(sent))
        cue = query_like_rules(sentences)
        return Parse(
            n_tokens=len(words),
            n_content=sum(1 for w in words if content_word(w)),
            entities=entities,
            query_like=cue is not None,
            query_cue=cue,
        )

    def parse_many(self, texts: Sequence[str]) -> list[Parse]:
        """Parse several texts (no batching benefit for rules; kept for symmetry)."""
        return [self.parse(t) for t in texts]


class LexiconSentiment:
    """A tiny VADER-like sentiment scorer: valence lexicon, negation, boosters, "but", "!".

    The compound score is ``s / sqrt(s² + 15)`` as in VADER, rounded to 4 places.

    Examples:
        >>> LexiconSentiment().compound("I love it!"), LexiconSentiment().compound("not good")
        (0.6696, -0.3412)
    """

    name = "lexicon"

    def compound(self, text: str) -> float:
        """Signed compound sentiment of ``text`` in [-1, 1]."""
        tokens = [t.lower() for t in tokenize(text)]
        words = [t for t in tokens if _is_word(t)]
        values = [(i, v) for i in range(len(words)) if (v := _valence(words, i)) != 0.0]
        if "but" in words:
            cut = words.index("but")
            values = [(i, v * (0.5 if i < cut else 1.5)) for i, v in values]
        total = sum(v for _, v in values)
        if total:
            total += math.copysign(min(tokens.count("!"), 4) * _EXCLAIM, total)
        score = total / math.sqrt(total * total + _ALPHA)
        return round(max(-1.0, min(1.0, score)), 4)


def _valence(words: Sequence[str], i: int) -> float:
    v = SENTIMENT_LEXICON.get(words[i], 0.0)
    if v == 0.0:
        return 0.0
    if i and words[i - 1] in SENTIMENT_BOOSTERS:
        v += math.copysign(_BOOST, v)
    if any(w in NEGATION_WORDS for w in words[max(0, i - 3) : i]):
        v *= _NEGATE
    return v
