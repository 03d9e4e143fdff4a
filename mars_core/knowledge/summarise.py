"""Summarisers for Reflection-Summary: a protocol, a deterministic default, an LLM plug-in.

Seed 000 §5.3 has a summariser propose a semantic note ``c̄`` for a cluster of episodes,
"with prompts requesting abstraction of identifiers and preservation of task-relevant
gist"; the seed names no algorithm, and mars-memory calls no LLM by default. So:

* :class:`Summariser` is the protocol: ``summariser(texts, target_tokens=n) -> str``.
* :class:`ExtractiveSummariser` (the default) is deterministic and offline. It is
  *centroid-based extraction* (Radev et al., 2004) without a background corpus: the
  sentences of the cluster are bags of content words (lower-cased letters, a small
  English stop-word list removed, sub-linear term frequency, L2-normalised); the cluster
  centroid is their mean, so words that recur across the members — the gist a redundant
  cluster repeats — weigh most. Sentences are taken in decreasing cosine to the centroid
  (ties: earlier first), skipping any whose cosine to an already chosen sentence is
  ≥ ``dedup_similarity`` (a near-repeat adds tokens, not information), until the next one
  would pass ``target_tokens`` (the best sentence is always kept). The chosen sentences
  are emitted in their original order, de-duplicated, then masked.
* :class:`CallableSummariser` wraps any ``Callable[[str], str]`` (an LLM) with the
  seed's prompt, and masks its output too (a safety net: an LLM may ignore the prompt).
* :class:`FakeSummariser` returns a fixed or computed text and records its calls (tests).

**Masking.** This module does not depend on the privacy detectors
(:mod:`mars_core.privacy`, written alongside it); direct identifiers are found by three
simple regular expressions (:func:`find_identifiers`) and replaced by
placeholders (:func:`mask_identifiers`): e-mail addresses → ``[email]``; phone numbers
(7–15 digits, optionally with ``+``, spaces, dots, dashes or parentheses) → ``[phone]``;
other runs of 6 or more digits (account, card, id numbers) → ``[number]``. Names,
addresses and free-text facts are *not* detected: the reflection privacy gate credits
only the removal it can verify (see :mod:`mars_core.policies.reflection`).

Examples:
    >>> s = ExtractiveSummariser()
    >>> s(["The coffee machine on floor 3 is broken. Call 555-123-4567.",
    ...    "The coffee machine on floor 3 is broken again."], target_tokens=12)
    'The coffee machine on floor 3 is broken.'
    >>> mask_identifiers("mail ana@example.org or call +1 (555) 123-4567")
    'mail [email] or call [phone]'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from mars_core.budget import ApproxTokenCounter
from mars_core.errors import PolicyError, ValidationError

__all__ = [
    "CallableSummariser",
    "ExtractiveSummariser",
    "FakeSummariser",
    "Identifier",
    "Summariser",
    "find_identifiers",
    "key_terms",
    "mask_identifiers",
]

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d \t().-]{5,}\d(?!\w)")  # within one line
_DIGITS = re.compile(r"\d{6,}")
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PHONE_DIGITS = (7, 15)
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")

_STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
yes ok okay oh hi hey hello thanks thank really got get gets going go went im ive dont
""".split())


@runtime_checkable
class Summariser(Protocol):
    """Turns the texts of a cluster into one summary of about ``target_tokens`` tokens.

    Implementations should be deterministic for replays (FiFA runs compare identical
    replays, digest Z-A29) and may raise a :class:`~mars_core.errors.MarsError` when they
    cannot summarise; the reflection policy then skips the cluster.
    """

    def __call__(self, texts: Sequence[str], *, target_tokens: int) -> str:
        """Summarise ``texts`` (oldest first) into at most about ``target_tokens`` tokens."""
        ...


@dataclass(frozen=True, slots=True)
class Identifier:
    """A direct identifier found in a text: its kind and a normalised value.

    ``value`` is lower-cased for e-mails and digits-only for numbers, so the same phone
    number written two ways compares equal.
    """

    kind: str
    value: str


def find_identifiers(text: str) -> frozenset[Identifier]:
    """Direct identifiers (e-mails, phone numbers, long digit runs) in ``text``.

    Examples:
        >>> sorted(i.kind for i in find_identifiers("a@b.io, 555 123 4567, id 12345678"))
        ['email', 'number', 'phone']
    """
    found: set[Identifier] = set()
    rest = _EMAIL.sub(lambda m: _collect(found, "email", m.group().lower()), text)
    rest = _PHONE.sub(lambda m: _phone(found, m.group()), rest)
    _DIGITS.sub(lambda m: _collect(found, "number", m.group()), rest)
    return frozenset(found)


def mask_identifiers(text: str) -> str:
    """Replace direct identifiers by ``[email]``, ``[phone]`` and ``[number]``.

    Examples:
        >>> mask_identifiers("order 99887766 for bob@shop.com")
        'order [number] for [email]'
    """
    out = _EMAIL.sub("[email]", text)
    out = _PHONE.sub(lambda m: _placeholder(m.group()), out)
    return _DIGITS.sub("[number]", out)


def _placeholder(candidate: str) -> str:
    kind = _number_kind(candidate)
    return candidate if kind is None else f"[{kind}]"


def _collect(found: set[Identifier], kind: str, value: str) -> str:
    found.add(Identifier(kind, value))
    return " "


def _number_kind(candidate: str) -> str | None:
    """``phone`` for 7–15 digits written with a separator or ``+``, ``number`` for longer
    runs or plain digit runs (those ≥ 6 digits are caught by the digit-run pattern), None
    for dates and short numbers."""
    text = candidate.strip()
    if _DATE.fullmatch(text):
        return None  # a date is task-relevant gist, not an identifier
    digits = sum(ch.isdigit() for ch in text)
    if digits > _PHONE_DIGITS[1]:
        return "number"
    if digits >= _PHONE_DIGITS[0] and not text.isdigit():
        return "phone"
    return None


def _phone(found: set[Identifier], candidate: str) -> str:
    kind = _number_kind(candidate)
    if kind is None:
        return candidate
    return _collect(found, kind, "".join(ch for ch in candidate if ch.isdigit()))


def _content_words(text: str) -> list[str]:
    return [w for w in (t.lower() for t in _WORD.findall(text))
            if len(w) > 1 and w not in _STOPWORDS]


def key_terms(texts: Sequence[str], k: int = 3) -> list[str]:
    """The ``k`` content words shared by most texts (then most frequent, then alphabetical).

    Used as the summary's ``concept``; words with digits never qualify, so no number
    leaks into it.

    Examples:
        >>> key_terms(["The coffee machine broke", "coffee machine fixed", "tea"], k=2)
        ['coffee', 'machine']
    """
    doc_freq: Counter[str] = Counter()
    freq: Counter[str] = Counter()
    for text in texts:
        words = [w for w in _content_words(text) if len(w) > 2]
        freq.update(words)
        doc_freq.update(set(words))
    ranked = sorted(freq, key=lambda w: (-doc_freq[w], -freq[w], w))
    return ranked[:k]


def _bag(words: Sequence[str]) -> dict[str, float]:
    counts = Counter(words)
    vec = {w: 1.0 + math.log(c) for w, c in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {w: v / norm for w, v in vec.items()} if norm > 0 else {}


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


def _sentences(texts: Sequence[str]) -> list[str]:
    return [s.strip() for text in texts for s in _SENTENCE.split(text) if s.strip()]


class ExtractiveSummariser:
    """Deterministic centroid-based extractive summariser (the default; no model, no LLM).

    Args:
        counter: counts tokens against ``target_tokens`` (default: the store's default
            :class:`~mars_core.budget.ApproxTokenCounter`).
        dedup_similarity: a sentence whose bag-of-words cosine to an already chosen one
            is at least this is a repeat and is skipped (0.7: sentences sharing most of their
            content words, e.g. the same fact with another subject phrase).
        mask: replace direct identifiers in the output (default True; see the module
            docstring).

    Examples:
        >>> ExtractiveSummariser()(["Bus 12 is late. It rained.", "Bus 12 is late today."],
        ...                        target_tokens=5)
        'Bus 12 is late today.'
    """

    name = "extractive-centroid-v1"

    def __init__(self, counter: Callable[[str], int] | None = None, *,
                 dedup_similarity: float = 0.7, mask: bool = True) -> None:
        if not 0.0 < dedup_similarity <= 1.0:
            raise ValidationError("dedup_similarity must lie in (0, 1]")
        self._count = counter or ApproxTokenCounter().count
        self.dedup_similarity = dedup_similarity
        self.mask = mask

    def __call__(self, texts: Sequence[str], *, target_tokens: int) -> str:
        """Pick central, non-repeated sentences until ``target_tokens`` (see the class)."""
        sentences = list(dict.fromkeys(_sentences(texts)))
        if not sentences:
            return ""
        bags = [_bag(_content_words(s)) for s in sentences]
        centroid: dict[str, float] = {}
        for bag in bags:
            for w, v in bag.items():
                centroid[w] = centroid.get(w, 0.0) + v
        order = sorted(range(len(sentences)), key=lambda i: (-_dot(bags[i], centroid), i))
        chosen: list[int] = []
        used = 0
        for i in order:
            if any(_dot(bags[i], bags[j]) >= self.dedup_similarity for j in chosen):
                continue
            cost = self._count(sentences[i])
            if chosen and used + cost > target_tokens:
                continue
            chosen.append(i)
            used += cost
        text = " ".join(sentences[i] for i in sorted(chosen))
        return mask_identifiers(text) if self.mask else text


_PROMPT = """You maintain the long-term memory of an assistant. Merge the {n} related \
memories below into ONE short note of at most {target} tokens.
- Keep the task-relevant gist: facts, decisions, preferences, open issues, dates.
- Abstract identifiers: replace names of private people, e-mail addresses, phone numbers, \
account or card numbers and street addresses by generic descriptions ("a colleague", \
"their phone number").
- Do not add anything that is not in the memories. Answer with the note only.

Memories (oldest first):
{items}
"""


class CallableSummariser:
    """An LLM (any ``Callable[[str], str]``) as a summariser, with the seed's prompt.

    The prompt asks for abstraction of identifiers and preservation of the task-relevant
    gist (seed 000 §5.3). The reply is stripped and, by default, masked again.

    Args:
        llm: called with one prompt string; returns the summary text.
        prompt: a template with ``{n}``, ``{target}`` and ``{items}`` fields.
        mask: mask direct identifiers in the reply (default True).
        name: recorded in the audit parameters of the policy using it.

    Raises:
        PolicyError: the LLM raised or returned something that is not a string (the
            reflection policy catches it and skips the cluster).

    Examples:
        >>> s = CallableSummariser(lambda prompt: "The team meets on Mondays.")
        >>> s(["We meet Monday.", "Standup is on Mondays."], target_tokens=10)
        'The team meets on Mondays.'
    """

    def __init__(self, llm: Callable[[str], str], *, prompt: str = _PROMPT,
                 mask: bool = True, name: str = "llm") -> None:
        self.llm = llm
        self.prompt = prompt
        self.mask = mask
        self.name = name

    def build_prompt(self, texts: Sequence[str], target_tokens: int) -> str:
        """The prompt sent to the LLM for ``texts``."""
        items = "\n".join(f"{k}. {' '.join(t.split())}" for k, t in enumerate(texts, 1))
        return self.prompt.format(n=len(texts), target=target_tokens, items=items)

    def __call__(self, texts: Sequence[str], *, target_tokens: int) -> str:
        """Ask the LLM for a summary (see the class)."""
        try:
            reply = self.llm(self.build_prompt(texts, target_tokens))
        except Exception as exc:  # a user-supplied callable: any failure skips the cluster
            raise PolicyError(f"summariser {self.name!r} failed: {exc}") from exc
        if not isinstance(reply, str):
            raise PolicyError(f"summariser {self.name!r} returned {type(reply).__name__}, "
                              "not str")
        text = reply.strip()
        return mask_identifiers(text) if self.mask else text


@dataclass
class FakeSummariser:
    """A test double: returns ``text`` (or ``text(texts)``) and records every call.

    Without ``text`` it returns the first sentence of the first text, unmasked — so a
    test can show the privacy gate rejecting a summary that keeps an identifier.

    Examples:
        >>> fake = FakeSummariser("all about coffee")
        >>> fake(["a", "b"], target_tokens=3), fake.calls
        ('all about coffee', [(('a', 'b'), 3)])
    """

    text: str | Callable[[Sequence[str]], str] | None = None
    calls: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    name: str = "fake"

    def __call__(self, texts: Sequence[str], *, target_tokens: int) -> str:
        """Record the call and return the configured text."""
        self.calls.append((tuple(texts), target_tokens))
        if self.text is None:
            first = _sentences(texts[:1])
            return first[0] if first else ""
        return self.text(texts) if callable(self.text) else self.text
