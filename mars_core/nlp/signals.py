"""Deterministic text signals of DMF (seed 004 §4): ID, |S|, E, and conversational cues.

:func:`analyze` turns one text into a frozen :class:`TextSignals`; an :class:`Analyzer`
chooses its backends once and reuses them. Nothing here calls a model over the network
and the same text always gives the same signals on the same backends.

**Parsing backend** (``backend=``): ``"spacy"`` uses a trained spaCy pipeline (POS tags,
sentences, dependencies, NER), as the paper does; ``"rules"`` uses regexes and word lists
and never imports spaCy; ``"auto"`` takes spaCy when spaCy *and* a trained English
pipeline are installed, the rules otherwise. What changes on the rules path:

* **ID** (eq 1): the share of content words among word tokens, where a content word
  is anything that is not a stopword, a phatic word, a number or a lower-case "-ly"
  adverb, instead of POS in {NOUN, VERB, ADJ, PROPN}. Main-verb "be/have/do" are not
  content (a tagger would call "have" in "I have a dog" a VERB).
* **E** (eq 3): capitalised-span, number and date rules instead of NER. A single
  capitalised word at the start of a sentence is not counted (it cannot be told from an
  ordinary sentence-initial word), so "Melanie went home" gives E = 0 where NER gives 1.
* **query_like**: the inverted-auxiliary rule checks that the next word looks like a
  subject instead of finding an ``nsubj`` in the parse; the imperative rule checks the
  first word instead of the parse root; sentences are split on ``.!?…`` and newlines.
* Both paths: ``|t|`` excludes punctuation and symbols; phatic words ("thanks", "ok",
  ...) are never content; every cue except the structural part of ``query_like`` is
  matched identically (:mod:`mars_core.nlp.cues`).

**Sentiment** (``sentiment=``): ``"vader"`` is ``|VADER compound|`` as in eq (2);
``"lexicon"`` is a tiny VADER-like scorer (about 120 words with VADER's own valences,
negation, boosters, "but" and "!"): it agrees with VADER on the sign of plain
sentences but misses most words, emoticons, capitalisation emphasis and idioms.
``"auto"`` takes VADER when ``vaderSentiment`` is installed.

Examples:
    >>> from mars_core.nlp import Analyzer
    >>> a = Analyzer(backend="rules", sentiment="lexicon")
    >>> s = a.analyze("Do not use external APIs.")
    >>> a.backend_name, s.constraint, s.preference, round(s.info_density, 2)
    ('rules', True, False, 0.6)
    >>> a.analyze("Thanks!").social
    True
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Protocol

from mars_core.errors import ConfigError, ExtraNotInstalledError, ValidationError
from mars_core.nlp.cues import ack_like, lexical_cues, social_gate
from mars_core.nlp.rules import LexiconSentiment, Parse, RulesBackend

__all__ = [
    "DEFAULT_E_CAP",
    "SOCIAL_MAX_WORDS",
    "Analyzer",
    "BackendChoice",
    "SentimentChoice",
    "TextSignals",
    "analyze",
    "default_analyzer",
    "entity_norm",
]

log = logging.getLogger("mars_core.nlp")

INSTALL_HINT = ("install spaCy and a trained English pipeline for POS tags and NER: "
                "pip install 'mars-memory[nlp]' and the en_core_web_sm wheel "
                "(offline: docs/concepts/memory.md#text-signals-spacy-or-rules)")
"""What a rules fallback of ``"auto"`` tells the user to do."""

BackendChoice = Literal["auto", "rules", "spacy"]
SentimentChoice = Literal["auto", "vader", "lexicon"]

DEFAULT_E_CAP = 5
"""[seed §4.4 Table 1] Entity cap E_cap of eq (4)."""

SOCIAL_MAX_WORDS = 6
"""[seed §8.2 eq 28] Longest text (whitespace words) that can be social."""


def entity_norm(count: int, cap: int = DEFAULT_E_CAP) -> float:
    """Saturating entity normalisation of eq (4): ``min(E, E_cap) / E_cap``.

    Examples:
        >>> entity_norm(2), entity_norm(9)
        (0.4, 1.0)
    """
    if cap <= 0:
        raise ValidationError("E_cap must be positive")
    if count < 0:
        raise ValidationError("entity count must be >= 0")
    return min(count, cap) / cap


@dataclass(frozen=True, slots=True)
class TextSignals:
    """The DMF signals of one text (seed 004 §4, eqs 1–5 and 28).

    Attributes:
        n_tokens: ``|t|``, tokens excluding punctuation, symbols and spaces.
        n_content: information-bearing tokens (numerator of eq 1).
        info_density: ``ID = n_content / n_tokens`` in [0, 1] (0 for empty text).
        sentiment: signed compound sentiment in [-1, 1]; ``|S|`` is its magnitude.
        entity_count: ``E``, the number of entity spans.
        entities: ``(surface, label)`` of each entity, for audit.
        word_count: whitespace words, as eq (28) counts them.
        social_keyword: some word is in K_social (eq 28).
        constraint: a constraint cue fired ("do not", "never", ...).
        preference: a preference cue fired ("I prefer", "my favorite", ...).
        current_state: a current-state cue fired ("currently", "now", ...).
        past_state: a past-state cue fired ("used to", "previously", ...).
        correction: a correction cue fired ("actually", "I mean", ...).
        replacement: the "not x but y" pattern matched.
        query_like: the text is a question or a request.
        ack_like: the text opens as an acknowledgement and is not query-like.
        cues: auditable evidence, ``"signal:cue"`` strings.
        backend: ``"rules"`` or ``"spacy:<pipeline>"``.
        sentiment_backend: ``"vader"`` or ``"lexicon"``.

    Examples:
        >>> s = Analyzer("rules", sentiment="lexicon").analyze("I used to live in Rome")
        >>> s.past_state, s.entity_count, s.entity_norm()
        (True, 1, 0.2)
    """

    n_tokens: int
    n_content: int
    info_density: float
    sentiment: float
    entity_count: int
    entities: tuple[tuple[str, str], ...]
    word_count: int
    social_keyword: bool
    constraint: bool
    preference: bool
    current_state: bool
    past_state: bool
    correction: bool
    replacement: bool
    query_like: bool
    ack_like: bool
    cues: tuple[str, ...]
    backend: str
    sentiment_backend: str

    @property
    def sentiment_magnitude(self) -> float:
        """``|S|`` of eq (2)."""
        return abs(self.sentiment)

    @property
    def social(self) -> bool:
        """``is_social`` of eq (28) with the paper's six-word cap."""
        return self.is_social()

    def is_social(self, max_words: int = SOCIAL_MAX_WORDS) -> bool:
        """``is_social`` of eq (28): short (``<= max_words``) and has a K_social word."""
        return self.social_keyword and self.word_count <= max_words

    def entity_norm(self, cap: int = DEFAULT_E_CAP) -> float:
        """``E_norm`` of eq (4)."""
        return entity_norm(self.entity_count, cap)


class _Parser(Protocol):
    name: str

    def parse(self, text: str) -> Parse: ...

    def parse_many(self, texts: Sequence[str]) -> list[Parse]: ...


class _Sentiment(Protocol):
    name: str

    def compound(self, text: str) -> float: ...


class _Vader:
    """VADER's compound score; its analyzer (an import and a 7,500-word lexicon read from
    disk) is built at the first text scored, not when a store opens: reads never score."""

    name = "vader"

    def __init__(self) -> None:
        self._sia: Any = None

    def compound(self, text: str) -> float:
        if not text.strip():
            return 0.0
        if self._sia is None:
            self._sia = _vader_analyzer()
        return float(self._sia.polarity_scores(text)["compound"])


@lru_cache(maxsize=1)
def _vader() -> _Vader:
    if not _vader_installed():
        raise ExtraNotInstalledError("nlp", "vaderSentiment")
    return _Vader()


@lru_cache(maxsize=1)
def _vader_analyzer() -> Any:
    try:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    except ImportError as exc:
        raise ExtraNotInstalledError("nlp", "vaderSentiment") from exc
    return SentimentIntensityAnalyzer()


def _vader_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vaderSentiment") is not None


def _make_parser(backend: str, pipeline: str | None) -> tuple[_Parser, str | None, str]:
    """The parser, its spaCy pipeline, and why it was chosen (for stats and logs)."""
    if backend == "rules":
        return RulesBackend(), None, "rules as asked"
    from mars_core.nlp.spacy_backend import (
        DEFAULT_PIPELINES,
        SpacyBackend,
        available_pipeline,
        spacy_installed,
    )

    why = "as asked"
    if backend == "auto":
        names = (pipeline,) if pipeline else DEFAULT_PIPELINES
        if not spacy_installed():
            return RulesBackend(), None, f"auto: spaCy is not installed, so rules; {INSTALL_HINT}"
        found = available_pipeline(names)
        if not found:
            return RulesBackend(), None, (
                f"auto: spaCy is installed but no trained English pipeline "
                f"({', '.join(names)}), so rules; {INSTALL_HINT}")
        why = f"auto: found the trained pipeline {found}"
    spacy_backend = SpacyBackend(pipeline)
    return spacy_backend, spacy_backend.pipeline, f"spacy:{spacy_backend.pipeline} ({why})"


def _make_sentiment(choice: str) -> tuple[_Sentiment, str]:
    if choice == "lexicon":
        return LexiconSentiment(), "lexicon as asked"
    if choice == "auto" and not _vader_installed():
        return LexiconSentiment(), "auto: vaderSentiment is not installed, so the lexicon"
    return _vader(), "vader" + (" (auto: vaderSentiment is installed)" if choice == "auto"
                                else " as asked")


class Analyzer:
    """Extract :class:`TextSignals` with a fixed choice of backends.

    Args:
        backend: ``"auto"`` (spaCy with a trained pipeline when installed, else rules),
            ``"rules"`` or ``"spacy"``.
        sentiment: ``"auto"`` (VADER when installed, else the lexicon), ``"vader"`` or
            ``"lexicon"``.
        pipeline: spaCy pipeline package to load (default: the first installed of
            ``en_core_web_sm``, ``en_core_web_md``, ``en_core_web_lg``).

    Raises:
        ConfigError: an unknown backend or sentiment choice, or ``backend="spacy"``
            with spaCy installed but no trained pipeline.
        ExtraNotInstalledError: ``backend="spacy"`` without spaCy, or
            ``sentiment="vader"`` without vaderSentiment (extra ``nlp``).

    Examples:
        >>> a = Analyzer(backend="rules", sentiment="lexicon")
        >>> a.backend_name, a.pipeline_name, a.sentiment_name
        ('rules', None, 'lexicon')
        >>> a.analyze("What time is it?").query_like
        True
    """

    def __init__(
        self,
        backend: BackendChoice = "auto",
        *,
        sentiment: SentimentChoice = "auto",
        pipeline: str | None = None,
    ) -> None:
        if backend not in ("auto", "rules", "spacy"):
            raise ConfigError(f"unknown NLP backend {backend!r}; use 'auto', 'rules' or 'spacy'")
        if sentiment not in ("auto", "vader", "lexicon"):
            raise ConfigError(
                f"unknown sentiment backend {sentiment!r}; use 'auto', 'vader' or 'lexicon'"
            )
        self._parser, self._pipeline, parser_why = _make_parser(backend, pipeline)
        self._sentiment, sentiment_why = _make_sentiment(sentiment)
        self._choice = f"{parser_why}; sentiment: {sentiment_why}"
        if backend == "auto" or sentiment == "auto":
            log.info("text signals: %s", self._choice)

    @property
    def backend_name(self) -> str:
        """``"rules"`` or ``"spacy"``: the parsing backend actually in use."""
        return self._parser.name

    @property
    def pipeline_name(self) -> str | None:
        """The loaded spaCy pipeline package, or ``None`` on the rules backend."""
        return self._pipeline

    @property
    def choice(self) -> str:
        """Which backends are in use and why (what ``"auto"`` found or did not find), for
        ``MemoryStore.stats()["signals_choice"]`` and the ``mars_core.nlp`` log.

        Examples:
            >>> Analyzer("rules", sentiment="lexicon").choice
            'rules as asked; sentiment: lexicon as asked'
        """
        return self._choice

    @property
    def sentiment_name(self) -> str:
        """``"vader"`` or ``"lexicon"``: the sentiment backend actually in use."""
        return self._sentiment.name

    def __repr__(self) -> str:
        pipe = f", pipeline={self._pipeline!r}" if self._pipeline else ""
        return f"Analyzer(backend={self.backend_name!r}, sentiment={self.sentiment_name!r}{pipe})"

    def analyze(self, text: str) -> TextSignals:
        """Extract the signals of one text."""
        _check_text(text)
        return self._build(text, self._parser.parse(text))

    def analyze_many(self, texts: Sequence[str]) -> list[TextSignals]:
        """Extract the signals of several texts (batched through spaCy when it is used)."""
        for text in texts:
            _check_text(text)
        parses = self._parser.parse_many(list(texts))
        return [self._build(t, p) for t, p in zip(texts, parses, strict=True)]

    def _build(self, text: str, parse: Parse) -> TextSignals:
        lexical = lexical_cues(text)
        query_cue = "question_mark" if text.strip().endswith("?") else parse.query_cue
        ack = ack_like(text, query_cue is not None)
        word_count, social_keyword = social_gate(text)
        flags = lexical.flags
        evidence = list(lexical.evidence)
        if query_cue is not None:
            evidence.append(f"query_like:{query_cue}")
        if ack is not None:
            evidence.append(f"ack_like:{ack}")
        backend = self.backend_name + (f":{self._pipeline}" if self._pipeline else "")
        return TextSignals(
            n_tokens=parse.n_tokens,
            n_content=parse.n_content,
            info_density=parse.n_content / parse.n_tokens if parse.n_tokens else 0.0,
            sentiment=self._sentiment.compound(text),
            entity_count=len(parse.entities),
            entities=parse.entities,
            word_count=word_count,
            social_keyword=social_keyword,
            constraint=flags["constraint"],
            preference=flags["preference"],
            current_state=flags["current_state"],
            past_state=flags["past_state"],
            correction=flags["correction"],
            replacement=flags["replacement"],
            query_like=query_cue is not None,
            ack_like=ack is not None,
            cues=tuple(dict.fromkeys(evidence)),
            backend=backend,
            sentiment_backend=self.sentiment_name,
        )


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, not {type(text).__name__}")


@lru_cache(maxsize=1)
def default_analyzer() -> Analyzer:
    """The shared ``Analyzer("auto")`` used by :func:`analyze` (created on first use)."""
    return Analyzer()


def analyze(text: str) -> TextSignals:
    """Extract the signals of ``text`` with :func:`default_analyzer`.

    The backends are those of ``Analyzer("auto")``, so results depend on whether spaCy
    (with a trained pipeline) and vaderSentiment are installed; pass an explicit
    :class:`Analyzer` where that must not vary.

    Examples:
        >>> analyze("Hi!").social
        True
    """
    return default_analyzer().analyze(text)
