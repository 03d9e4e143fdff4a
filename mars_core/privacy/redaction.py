"""Two-pass redaction of text before it leaves the store (seed 000 §4.3 "Redaction").

:func:`redact` is what ``render_context`` runs over its output:

1. **Surface pass.** The detectors of :mod:`mars_core.privacy.detectors` (by default the
   pattern kinds: credentials, cards, IBANs, national ids, e-mail, phone, addresses, birth
   dates, IPs) find spans, and each is replaced by a mask such as ``[EMAIL]``.
2. **Memory pass.** The store passes the sensitive phrases of its high-sensitivity memories
   (their detected spans and rare n-grams; :func:`sensitive_phrases` extracts them). Any
   verbatim or near-verbatim reappearance is masked as ``[PRIVATE]``. "Near-verbatim"
   means equal after normalisation: case folded, accents stripped (NFKD), and every
   character that is not a letter or digit removed — so ``4111-1111 1111.1111`` matches
   ``4111 1111 1111 1111`` and ``ANA  lopez`` matches ``Ana López``. A match must start and
   end on word boundaries of the original text ("Ann" does not match inside "Annual").

Overlapping spans of both passes are merged (union), so a partial overlap never leaves a
fragment behind; the merged span takes the mask of its riskiest member. Text already
masked is left alone and the passes are repeated until nothing changes (at most three
rounds), so redaction is idempotent: ``redact(redact(t).text).text == redact(t).text``.

Examples:
    >>> r = redact("Mail ana@example.com, card 4111-1111-1111-1111.")
    >>> r.text, r.spans_redacted, [k.value for k in r.kinds]
    ('Mail [EMAIL], card [CARD].', 2, ['card', 'email'])
    >>> redact("ref 1234 5678 9012 ok", protected=["1234-5678-9012"]).text
    'ref [PRIVATE] ok'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from mars_core.errors import ValidationError
from mars_core.nlp import Analyzer
from mars_core.privacy.detectors import (
    CATEGORY_KINDS,
    DEFAULT_WEIGHTS,
    PATTERN_KINDS,
    Detection,
    Kind,
    detect,
)

__all__ = [
    "DEFAULT_MASK",
    "DEFAULT_REDACT_KINDS",
    "MAX_ROUNDS",
    "MaskLike",
    "RedactionResult",
    "find_protected",
    "normalise",
    "redact",
    "sensitive_phrases",
]

DEFAULT_MASK = "[{kind}]"
"""Mask template: ``{kind}`` becomes the kind's upper-case name (``[EMAIL]``)."""

DEFAULT_REDACT_KINDS: frozenset[Kind] = PATTERN_KINDS
"""Kinds masked by the surface pass by default: identifiers, credentials, contact details.

Category words ("diabetes") and entities (names) are not masked by default: they carry
the meaning an agent needs; pass ``kinds=`` to mask them too.
"""

MAX_ROUNDS = 3
"""Redaction repeats both passes until nothing changes, at most this many times."""

MaskLike = str | Callable[[Kind], str]
"""A template with ``{kind}`` (or a constant string), or a function of the kind."""


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """The redacted text and what was masked.

    Attributes:
        text: the redacted text.
        spans_redacted: how many spans were replaced by a mask.
        kinds: the distinct kinds masked, sorted by name.

    The repr shows the text's length, not the text.

    Examples:
        >>> redact("call 555-867-5309")
        RedactionResult(chars=12, spans_redacted=1, kinds=('phone',))
    """

    text: str
    spans_redacted: int
    kinds: tuple[Kind, ...]

    def __repr__(self) -> str:
        kinds = tuple(k.value for k in self.kinds)
        return (f"RedactionResult(chars={len(self.text)}, spans_redacted={self.spans_redacted}, "
                f"kinds={kinds!r})")

    @property
    def changed(self) -> bool:
        """Whether anything was masked."""
        return self.spans_redacted > 0


# ------------------------------------------------------------------------ normalise

_ALNUM_RUN = re.compile(r"[^\W_]+")


def _fold(ch: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", ch).casefold()
                   if c.isalnum() and not unicodedata.combining(c))


def _skeleton(text: str) -> tuple[str, list[int]]:
    chars: list[str] = []
    index: list[int] = []
    for run in _ALNUM_RUN.finditer(text):
        word, base = run.group(), run.start()
        if word.isascii():
            chars.append(word.lower())
            index.extend(range(base, base + len(word)))
            continue
        for offset, ch in enumerate(word):
            folded = _fold(ch)
            chars.append(folded)
            index.extend([base + offset] * len(folded))
    return "".join(chars), index


def normalise(text: str) -> str:
    """The matching form of the memory pass: folded letters and digits only.

    Examples:
        >>> normalise("Ana López, 4111-1111!")
        'analopez41111111'
    """
    return _skeleton(text)[0]


def _boundary_ok(text: str, index: list[int], pos: int, size: int) -> bool:
    first, last = index[pos], index[pos + size - 1]
    if pos > 0 and index[pos - 1] == first:
        return False  # starts inside an expanded character
    if pos + size < len(index) and index[pos + size] == last:
        return False
    before_ok = first == 0 or not text[first - 1].isalnum()
    after_ok = last + 1 >= len(text) or not text[last + 1].isalnum()
    return before_ok and after_ok


def find_protected(text: str, phrases: Iterable[str], *, min_chars: int = 3) -> list[Detection]:
    """Near-verbatim occurrences of ``phrases`` in ``text`` as ``PRIVATE`` detections.

    Phrases whose normalised form has fewer than ``min_chars`` characters are ignored.

    Examples:
        >>> find_protected("Ann's ANNUAL plan: ann-marie", ["ann marie", "Ann"])  # not ANNUAL
        ... # doctest: +NORMALIZE_WHITESPACE
        [Detection(kind='private', start=0, end=3, score=1.0),
         Detection(kind='private', start=19, end=22, score=1.0),
         Detection(kind='private', start=19, end=28, score=1.0)]
    """
    if min_chars < 1:
        raise ValidationError("min_chars must be at least 1")
    skeleton, index = _skeleton(text)
    found: set[Detection] = set()
    for needle in sorted({normalise(p) for p in phrases}):
        if len(needle) < min_chars:
            continue
        at = skeleton.find(needle)
        while at >= 0:
            if _boundary_ok(text, index, at, len(needle)):
                found.add(Detection(Kind.PRIVATE, index[at], index[at + len(needle) - 1] + 1, 1.0))
            at = skeleton.find(needle, at + 1)
    return sorted(found, key=lambda d: (d.start, d.end))


# --------------------------------------------------------------------------- masking


def _mask_function(mask: MaskLike) -> Callable[[Kind], str]:
    if callable(mask):
        return mask
    if not isinstance(mask, str):
        raise ValidationError("mask must be a string template or a function of the kind")
    return lambda kind: mask.replace("{kind}", kind.value.upper())


def _mask_spans(text: str, masks: Iterable[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for m in sorted({m for m in masks if m}):
        at = text.find(m)
        while at >= 0:
            spans.append((at, at + len(m)))
            at = text.find(m, at + 1)
    return spans


def _merge(detections: Sequence[Detection], weights: Mapping[Kind, float]) -> list[Detection]:
    merged: list[Detection] = []
    for d in sorted(detections, key=lambda d: (d.start, -d.end)):
        if merged and d.start < merged[-1].end:
            last = merged[-1]
            risk_d = weights.get(d.kind, 0.0) * d.score
            risk_l = weights.get(last.kind, 0.0) * last.score
            lead = d if (risk_d, d.kind.value) > (risk_l, last.kind.value) else last
            merged[-1] = Detection(lead.kind, last.start, max(last.end, d.end), lead.score)
        else:
            merged.append(d)
    return merged


def _round(
    text: str,
    detections: Sequence[Detection],
    protected: Sequence[str],
    mask_of: Callable[[Kind], str],
    min_chars: int,
) -> tuple[str, list[Detection]]:
    masked = _mask_spans(text, (mask_of(k) for k in Kind))
    candidates = [*detections, *find_protected(text, protected, min_chars=min_chars)]
    keep = [d for d in candidates
            if d.end <= len(text) and not any(d.start < b and a < d.end for a, b in masked)]
    spans = _merge(keep, DEFAULT_WEIGHTS)
    out = text
    for d in reversed(spans):
        out = out[:d.start] + mask_of(d.kind) + out[d.end:]
    return out, spans


def redact(
    text: str,
    *,
    detections: Sequence[Detection] | None = None,
    protected: Sequence[str] = (),
    mask: MaskLike = DEFAULT_MASK,
    kinds: Collection[Kind] = DEFAULT_REDACT_KINDS,
    analyzer: Analyzer | None = None,
    min_chars: int = 3,
) -> RedactionResult:
    """Mask sensitive spans of ``text`` in two passes (see the module docstring).

    Args:
        text: the text to emit.
        detections: surface detections of ``text`` already computed (from another
            engine, say); they replace the detectors in the first round only, and a
            second round runs the detectors on the result.
        protected: sensitive phrases of high-sensitivity memories (pass 2).
        mask: mask template or function (default ``"[{kind}]"``).
        kinds: kinds masked by the surface pass (default :data:`DEFAULT_REDACT_KINDS`).
        analyzer: NLP analyzer, used only when ``kinds`` includes entity kinds.
        min_chars: shortest normalised protected phrase that is matched.

    Returns:
        A :class:`RedactionResult`; its text contains no span that either pass flags.

    Raises:
        ValidationError: ``text`` is not a string, or a bad ``mask``/``min_chars``.

    Examples:
        >>> redact("pwd=Tr0ub4dor&3 and ip 10.0.0.12", mask="<{kind}>").text
        'pwd=<SECRET> and ip <IP>'
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a str, not {type(text).__name__}")
    mask_of = _mask_function(mask)
    wanted = frozenset(kinds)
    phrases = [p for p in protected if isinstance(p, str)]
    if len(phrases) != len(protected):
        raise ValidationError("protected phrases must be strings")
    current, total = text, 0
    seen: set[Kind] = set()
    for round_no in range(MAX_ROUNDS):
        if round_no == 0 and detections is not None:
            dets = [d for d in detections if d.kind in wanted]
        elif wanted:
            dets = detect(current, analyzer, kinds=wanted)
        else:
            dets = []
        current, spans = _round(current, dets, phrases, mask_of, min_chars)
        if not spans and (round_no > 0 or detections is None):
            break  # given detections stand in for round 1's detectors; round 2 still runs
        total += len(spans)
        seen.update(d.kind for d in spans)
    return RedactionResult(current, total, tuple(sorted(seen, key=lambda k: k.value)))


def sensitive_phrases(
    text: str,
    detections: Sequence[Detection],
    *,
    min_weight: float = 0.25,
    weights: Mapping[Kind, float] = DEFAULT_WEIGHTS,
    context_words: int = 1,
) -> tuple[str, ...]:
    """The phrases of a high-sensitivity memory that pass 2 should protect.

    The surface of every detection whose kind weighs at least ``min_weight`` (so people,
    identifiers and contact details, not bare dates or places). A category word (health,
    protected attribute, finance) is too common on its own, so it yields two rarer n-grams
    instead: the word with the ``context_words`` words before it, and with those after it
    ("has diabetes", "diabetes mail"); either reappearing is masked.

    Examples:
        >>> t = "Ana said her sister has diabetes, mail ana@example.com"
        >>> sensitive_phrases(t, detect(t, kinds={Kind.EMAIL, Kind.HEALTH}))
        ('has diabetes', 'diabetes, mail', 'ana@example.com')
    """
    out: list[str] = []
    for d in detections:
        if weights.get(d.kind, 0.0) < min_weight or d.end > len(text):
            continue
        if d.kind in CATEGORY_KINDS and context_words > 0:
            left, right = _context(text, d.start, d.end, context_words)
            out.extend(text[a:b].strip() for a, b in ((left, d.end), (d.start, right))
                       if (a, b) != (d.start, d.end))
        else:
            out.append(text[d.start:d.end].strip())
    return tuple(dict.fromkeys(p for p in out if p))


_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def _context(text: str, start: int, end: int, words: int) -> tuple[int, int]:
    left = [m.start() for m in _WORD.finditer(text, 0, start) if m.end() <= start]
    right = [m.end() for m in _WORD.finditer(text, end) if m.start() >= end]
    new_start = left[-words] if len(left) >= words else (left[0] if left else start)
    new_end = right[words - 1] if len(right) >= words else (right[-1] if right else end)
    return new_start, new_end
