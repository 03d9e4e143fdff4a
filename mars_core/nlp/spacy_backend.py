"""The trained-pipeline backend: spaCy POS tags, sentences, dependencies and NER.

Imported lazily by :class:`~mars_core.nlp.signals.Analyzer`; importing this module does
not import spaCy. It follows seed 004 §4.1/§4.3 with these documented choices:

* ``|t|`` excludes PUNCT, SYM and SPACE tokens (gap Z-E8; the DMF reference divides by
  ``len(doc)``, punctuation included);
* tokens in :data:`~mars_core.nlp.lexicons.PHATIC_WORDS` count as interjections even when
  the tagger says otherwise ("Thanks" is tagged NOUN), so that "Thanks!" gets ID = 0 as
  §4.1 intends;
* ``E`` counts every span in ``doc.ents`` (all labels, numbers and dates included);
* query-likeness follows the DMF reference: a WH opening, an auxiliary opening followed
  by an ``nsubj``/``nsubjpass``/``expl`` token, or an imperative request root (tag VB).

Examples:
    >>> from mars_core.nlp.spacy_backend import available_pipeline
    >>> available_pipeline(("no_such_pipeline_xyz",)) is None
    True
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from mars_core.errors import ConfigError, ExtraNotInstalledError
from mars_core.nlp.lexicons import (
    PHATIC_WORDS,
    QUERY_AUX_STARTERS,
    QUERY_REQUEST_ROOTS,
    QUERY_WH_STARTERS,
    SEMANTIC_POS,
)
from mars_core.nlp.rules import Parse, normalise_apostrophes

__all__ = [
    "DEFAULT_PIPELINES",
    "SpacyBackend",
    "available_pipeline",
    "spacy_installed",
]

DEFAULT_PIPELINES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_md", "en_core_web_lg")
"""Trained English pipelines tried in order when no pipeline name is given."""

_NOT_COUNTED = frozenset({"PUNCT", "SYM", "SPACE"})
_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "expl"})
_EXCLUDE = ("lemmatizer",)  # not needed: request roots are matched on base-form (VB) tokens


def spacy_installed() -> bool:
    """Whether the ``spacy`` package can be imported (without importing it)."""
    return importlib.util.find_spec("spacy") is not None


def available_pipeline(names: Sequence[str] = DEFAULT_PIPELINES) -> str | None:
    """The first of ``names`` installed as a Python package, or ``None``."""
    for name in names:
        try:
            if importlib.util.find_spec(name) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return None


@lru_cache(maxsize=4)
def _load(name: str) -> Any:
    import spacy

    return spacy.load(name, exclude=list(_EXCLUDE))


class SpacyBackend:
    """Parse texts with a trained spaCy pipeline.

    Args:
        pipeline: an installed pipeline package name, or ``None`` to take the first of
            :data:`DEFAULT_PIPELINES` that is installed.

    Raises:
        ExtraNotInstalledError: spaCy itself is not installed (extra ``nlp``).
        ConfigError: spaCy is installed but no trained pipeline is (blank pipelines
            have no tagger or NER; use the rules backend instead).

    Examples:
        >>> SpacyBackend.name
        'spacy'
    """

    name = "spacy"

    def __init__(self, pipeline: str | None = None) -> None:
        if not spacy_installed():
            raise ExtraNotInstalledError("nlp", "spacy")
        names = (pipeline,) if pipeline else DEFAULT_PIPELINES
        found = available_pipeline(names)
        if found is None:
            raise ConfigError(
                f"no trained spaCy pipeline installed (tried {', '.join(names)}); install one "
                "(python -m spacy download en_core_web_sm) or use backend='rules'"
            )
        self.pipeline = found
        self._nlp = _load(found)

    def parse(self, text: str) -> Parse:
        """Parse one text."""
        return _from_doc(self._nlp(normalise_apostrophes(text)))

    def parse_many(self, texts: Sequence[str]) -> list[Parse]:
        """Parse several texts with ``nlp.pipe`` (faster than one call per text)."""
        docs = self._nlp.pipe([normalise_apostrophes(t) for t in texts])
        return [_from_doc(d) for d in docs]


def _from_doc(doc: Any) -> Parse:
    counted = [t for t in doc if t.pos_ not in _NOT_COUNTED and not t.is_space]
    content = sum(1 for t in counted if t.pos_ in SEMANTIC_POS and t.lower_ not in PHATIC_WORDS)
    cue = _query_cue(doc)
    return Parse(
        n_tokens=len(counted),
        n_content=content,
        entities=tuple((e.text, e.label_) for e in doc.ents),
        query_like=cue is not None,
        query_cue=cue,
    )


def _query_cue(doc: Any) -> str | None:
    for sent in doc.sents:
        if sent.text.strip().endswith("?"):
            return "question_mark"
        first = next((t for t in sent if not t.is_space and not t.is_punct), None)
        if first is None:
            continue
        low = first.lower_
        if low in QUERY_WH_STARTERS:
            return f"wh:{low}"
        if low in QUERY_AUX_STARTERS and any(
            t.dep_ in _SUBJECT_DEPS and t.i > first.i for t in sent
        ):
            return f"aux_inversion:{low}"
        root = sent.root
        if root.tag_ == "VB" and root.lower_ in QUERY_REQUEST_ROOTS:
            return f"request:{root.lower_}"
    return None
