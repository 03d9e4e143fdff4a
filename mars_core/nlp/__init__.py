"""Deterministic NLP signals for DMF scoring (seed 004 §4); no LLM, no network.

The heavy dependencies (spaCy, vaderSentiment; extra ``nlp``) are imported lazily and
are optional: without them a rules backend gives the same kinds of signals.

Examples:
    >>> from mars_core.nlp import Analyzer
    >>> Analyzer(backend="rules", sentiment="lexicon").analyze("I prefer green tea").preference
    True
"""

from mars_core.nlp.signals import (
    DEFAULT_E_CAP,
    SOCIAL_MAX_WORDS,
    Analyzer,
    BackendChoice,
    SentimentChoice,
    TextSignals,
    analyze,
    default_analyzer,
    entity_norm,
)

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
