"""The masks of the output check: what of a memory's text may leave the store.

Seed 000 §4.3 checks text "before emission" in two passes, a fast one over the surface
form and a semantic one. The store decides, per memory, *what* must not be shown
(:class:`~mars_core.engine.guard.OutputCheck`); this module says *how*: a
:class:`Masker` replaces each sensitive span — and only the span — by a typed
placeholder, so the evidence around it stays readable:

* **identifiers and contact details** (the pattern detectors: phone numbers, e-mail
  addresses, IBANs, payment cards, national ids, secrets, street addresses, birth dates,
  IP addresses), in every text: ``call me on [PHONE]``;
* **the category words** the lexicons find — health, protected attributes, finance —
  when ``categories`` is set (the memory is sensitive, or restates a sensitive one):
  ``I have type 1 [HEALTH] since spring``, not ``I [PRIVATE] type [PRIVATE] spring``;
  when none is found and ``fallback`` names a kind (the embedding-level classifier
  flagged the text: its span is the whole text), the whole text is that kind's
  placeholder, as it is whatever the text says when ``whole`` names one;
* **the words a restatement shares** with the sensitive memory it restates, beyond the
  names of its subject (``shared``, masked as ``shared_kind``): the assistant's
  "Noted: 7319 disarms the alarm at your house" after "The alarm code for the house is
  7319" becomes ``Noted: [SECRET] disarms the [SECRET] at your [SECRET]``;
* **verbatim phrases** (``phrases``: the user's private and blocked entities), as
  ``[PRIVATE]``, matched after normalisation (:func:`~mars_core.privacy.redaction.redact`'s
  memory pass).

Neighbouring placeholders of one kind merge (``[FINANCE] [FINANCE]`` → ``[FINANCE]``).
Masking is deterministic and cached per text and masker; :meth:`Masker.mask_value`
masks the string leaves of a JSON value (keys stay). :func:`shows` and
:func:`readable_share` tell whether a rendered line is a memory's text with some spans
masked, and how much of it is still readable.

Examples:
    >>> Masker().mask("call me on +44 20 7946 0958 tonight").text
    'call me on [PHONE] tonight'
    >>> Masker(categories=True).mask("I have type 1 diabetes since spring").text
    'I have type 1 [HEALTH] since spring'
    >>> m = Masker(categories=True, shared=frozenset({"month", "mortgage"}),
    ...            shared_kind=Kind.FINANCE)
    >>> m.mask("User has missed three monthly mortgage payments").text
    'User has missed three [FINANCE] payments'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from mars_core.model import JSONValue
from mars_core.privacy.detectors import CATEGORY_KINDS, PATTERN_KINDS, Detection, Kind, detect
from mars_core.privacy.redaction import RedactionResult, redact
from mars_core.privacy.semantic import word_spans
from mars_core.reading.analysis import terms as content_terms

__all__ = ["MASK", "Masker", "readable_share", "shows"]

MASK: Final = re.compile(r"\[[A-Z_]+\]")
"""A placeholder as the check writes it (``[PHONE]``, ``[HEALTH]``...)."""

_RUN: Final = re.compile(r"\[([A-Z_]+)\](?:[ \t]+\[\1\])+")


@dataclass(frozen=True, slots=True)
class Masker:
    """How the texts of one memory are masked (see the module).

    Attributes:
        categories: mask the spans of the category lexicons (health, protected
            attributes, finance).
        fallback: with ``categories``, the kind of the whole text when neither a
            category span nor a shared word is found in it (the classifier's reading of a
            sensitive text); ``None``: none.
        whole: the kind of every text of the memory, masked whole (a close restatement
            the classifier reads as sensitive); ``None``: none.
        shared: anchor forms (:meth:`~mars_core.privacy.semantic.Anchors.common`) of the
            words a restated sensitive memory says: masked wherever the text says them.
        shared_kind: the placeholder of those words (the restated memory's category).
        phrases: verbatim phrases masked as ``[PRIVATE]`` (private and blocked entities).

    Examples:
        >>> m = Masker(categories=True, fallback=Kind.HEALTH)
        >>> m.mask("I keep hearing voices").text, m.mask("My therapist called").text
        ('[HEALTH]', 'My [HEALTH] called')
    """

    categories: bool = False
    fallback: Kind | None = None
    whole: Kind | None = None
    shared: frozenset[str] = frozenset()
    shared_kind: Kind = Kind.PRIVATE
    phrases: tuple[str, ...] = ()

    def mask(self, text: str) -> RedactionResult:
        """``text`` with its sensitive spans replaced by placeholders (cached)."""
        return _mask(text, self)

    def mask_value(self, value: JSONValue) -> JSONValue:
        """A JSON value with each string leaf masked (keys and other leaves kept).

        Examples:
            >>> Masker().mask_value({"phone": "555-123-4567", "n": [1, "ok"]})
            {'phone': '[PHONE]', 'n': [1, 'ok']}
        """
        if isinstance(value, str):
            return self.mask(value).text
        if isinstance(value, dict):
            return {k: self.mask_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.mask_value(v) for v in value]
        return value

    @property
    def kinds(self) -> frozenset[Kind]:
        """The detector kinds it masks."""
        return PATTERN_KINDS | CATEGORY_KINDS if self.categories else PATTERN_KINDS


@lru_cache(maxsize=8192)
def _mask(text: str, masker: Masker) -> RedactionResult:
    if masker.whole is not None and text.strip():
        return RedactionResult(f"[{masker.whole.value.upper()}]", 1, (masker.whole,))
    found = detect(text, kinds=masker.kinds)
    spans = [Detection(masker.shared_kind, a, b, 1.0) for a, b in word_spans(text,
                                                                             masker.shared)]
    if masker.categories and masker.fallback is not None and not spans \
            and not any(d.kind in CATEGORY_KINDS for d in found) and text.strip():
        spans.append(Detection(masker.fallback, 0, len(text), 1.0))
    extra = {d.kind for d in spans}  # redact keeps given detections of these kinds only
    result = redact(text, detections=[*found, *spans], protected=masker.phrases,
                    kinds=masker.kinds | extra)
    merged = _RUN.sub(r"[\1]", result.text)
    return RedactionResult(merged, result.spans_redacted, result.kinds) \
        if merged != result.text else result


def shows(body: str, text: str) -> bool:
    """Whether a rendered line's ``body`` is ``text`` with some spans masked (whitespace
    collapsed, as the renderer writes it).

    Examples:
        >>> shows("call me on [PHONE] tonight", "call me on 555-123-4567 tonight")
        True
        >>> shows("call me on [PHONE]", "write to me tonight")
        False
    """
    flat = " ".join(text.split())
    if body == flat:
        return True
    parts = MASK.split(body)
    if len(parts) == 1 or not flat.startswith(parts[0]) or not flat.endswith(parts[-1]):
        return False
    pattern = ".+?".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, flat, flags=re.DOTALL) is not None


def _words(text: str) -> set[str]:
    """A text's content words: stop words and bare numbers left out."""
    return {t for t in content_terms(MASK.sub(" ", text)) if not t.isdigit()}


def readable_share(body: str, text: str) -> float:
    """The share of ``text``'s content words (stop words and bare numbers left out) that
    ``body`` — its line as shown — still says (1.0 for a text without content words).

    Examples:
        >>> readable_share("I moved to Lisbon, call me on [PHONE]",
        ...                "I moved to Lisbon, call me on 555-123-4567")
        1.0
        >>> round(readable_share("The [SECRET] is 7319", "The alarm code is 7319"), 3)
        0.0
    """
    want = _words(text)
    if not want:
        return 1.0
    return len(want & _words(body)) / len(want)
