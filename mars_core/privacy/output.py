"""The semantic pass of ``render_context`` and the rephrase-or-confirm hook (seed 000 §4.3, §5.4).

Seed 000 §4.3: "Before emission, a lightweight redaction layer performs a two-pass check:
a fast pass over the surface form using detectors and templates, followed by a semantic
pass that validates that no high-risk facts are being disclosed outside policy. If the
checker identifies a likely violation, the system either rephrases to a safer
abstraction or requests explicit confirmation from the user."

The surface pass and the verbatim protection of sensitive phrases are
:func:`mars_core.privacy.redaction.redact`. The semantic pass is here. Before a memory is
shown, :func:`find_flagged` asks whether it **restates** a memory that must not be
restated (:func:`mars_core.privacy.semantic.restates`: embedding similarity and a shared
word beyond the subject's name, or a lower similarity when both fall in the same
sensitive category):

* a **sensitive** memory — sensitivity ≥ 0.7, active or archived — other than itself,
  unless the shown memory is itself sensitive and older (then it is the original, shown
  with its sensitive phrases masked, and the newer one is the restatement);
* an **erased** memory: an erasure marks the surviving memories that restate what it
  erased (their ``restates_erased`` signal holds the similarity), since the erased
  vectors themselves are gone.

A flagged memory is **withheld**, unless the store has a ``rephrase_or_confirm`` hook
(:class:`~mars_core.config.StoreConfig`): :func:`ask` then calls it with a
:class:`FlaggedText` and it answers with a safer rephrasing (a ``str``, which must pass
the semantic check again, and is withheld if it does not), ``True`` (the user confirmed:
shown as it is) or ``False`` (withheld). Every shown text then goes through the surface
pass. Anything else from the hook — another type, a blank text, an exception — raises
:class:`~mars_core.errors.PrivacyHookError`, and the call changes nothing.

Examples:
    >>> f = FlaggedText("tested positive for HIV", "n2", "evidence", "sensitive",
    ...                 "paraphrase", 0.81, "health")
    >>> f  # the repr holds no text
    FlaggedText(node_id='n2', section='evidence', reason='sensitive', route='paraphrase', \
similarity=0.81, category='health', chars=23)
    >>> ask(lambda flagged: "a health matter", f)
    'a health matter'
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from mars_core.errors import PrivacyHookError
from mars_core.privacy.detectors import Kind
from mars_core.privacy.semantic import Anchors, Calibration, restates

__all__ = [
    "ERASED_SIGNAL",
    "SENSITIVE_THRESHOLD",
    "Candidate",
    "Flag",
    "FlaggedText",
    "Reference",
    "RephraseOrConfirm",
    "ask",
    "find_flagged",
]

SENSITIVE_THRESHOLD: Final = 0.7
"""Sensitivity from which a memory's restatements are withheld (the threshold of the
verbatim protection of its sensitive phrases too)."""

ERASED_SIGNAL: Final = "restates_erased"
"""The signal an erasure sets on a surviving memory that restates an erased one (its
value: the cosine similarity)."""

Section = Literal["evidence", "support", "active"]


@dataclass(frozen=True, slots=True)
class FlaggedText:
    """What the rephrase-or-confirm hook receives: a memory about to be shown.

    Attributes:
        text: the memory's text, as it would be shown (before the surface pass). The
            hook may read it (to rephrase it, or to show it to the user for
            confirmation) but must not log or store it.
        node_id: the memory.
        section: where it would be shown: ``evidence``, ``support`` (a raw turn behind
            evidence) or ``active`` (the visible conversation).
        reason: ``sensitive`` (it restates a memory of sensitivity ≥ 0.7) or ``erased``
            (it restates an erased one).
        route: ``paraphrase`` (close in embedding space), ``topic`` (the same sensitive
            category, and closer than ordinary statements usually are) or ``marked``
            (marked at erasure).
        similarity: the cosine similarity to the restated memory.
        category: the restated memory's sensitive kind (``health``, ``finance``,
            ``protected``...), when it has one.
    """

    text: str
    node_id: str | None
    section: Section
    reason: Literal["sensitive", "erased"]
    route: str
    similarity: float
    category: str | None

    def __repr__(self) -> str:
        return (f"FlaggedText(node_id={self.node_id!r}, section={self.section!r}, "
                f"reason={self.reason!r}, route={self.route!r}, "
                f"similarity={self.similarity}, category={self.category!r}, "
                f"chars={len(self.text)})")


RephraseOrConfirm = Callable[[FlaggedText], str | bool]
"""The hook: a rephrasing (``str``), ``True`` (confirmed) or ``False`` (withhold)."""


@dataclass(frozen=True, slots=True)
class Reference:
    """A memory whose restatements must not be shown.

    Attributes:
        node_id: the memory.
        seq: its creation sequence (who is older).
        kinds: its sensitive kinds (classifier and lexicons).
        anchors: the words a restatement of it must share (``None``: not asked for).
    """

    node_id: str
    seq: int
    kinds: frozenset[Kind]
    anchors: Anchors | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory about to be shown.

    Attributes:
        node_id: the memory.
        seq: its creation sequence.
        kinds: its sensitive kinds (classifier and lexicons).
        marked: the similarity an erasure recorded (``restates_erased``), or 0.
        anchors: its words beyond its subject's name (``None``: not asked for).
    """

    node_id: str
    seq: int
    kinds: frozenset[Kind]
    marked: float = 0.0
    anchors: Anchors | None = None


@dataclass(frozen=True, slots=True)
class Flag:
    """Why a candidate is flagged.

    Attributes:
        reason: ``sensitive`` or ``erased``.
        route: ``paraphrase``, ``topic`` or ``marked``.
        similarity: the cosine to the restated memory.
        category: the restated memory's riskiest sensitive kind, if any.
        reference: the restated memory (``None``: an erased one, or not known).
    """

    reason: Literal["sensitive", "erased"]
    route: str
    similarity: float
    category: str | None
    reference: str | None = None


_ORDER: Final = ("secret", "health", "protected", "finance", "address")


def _category(kinds: Collection[Kind]) -> str | None:
    names = {k.value for k in kinds}
    return next((n for n in _ORDER if n in names), min(names) if names else None)


def find_flagged(
    candidates: Sequence[Candidate],
    vectors: npt.ArrayLike,
    references: Sequence[Reference],
    reference_vectors: npt.ArrayLike,
    calibration: Calibration,
    *,
    paraphrase_threshold: float | None = None,
) -> dict[str, Flag]:
    """The candidates that must not be shown as they are, by node id (see the module).

    Args:
        candidates: memories about to be shown.
        vectors: their embeddings, one row each.
        references: the sensitive memories of the namespace.
        reference_vectors: their embeddings.
        calibration: the embedder's thresholds.
        paraphrase_threshold: the store's override of the calibrated one.

    Examples:
        >>> cal = Calibration(0.5, 1.0, 1.0, 0.0, True, 0.8, 0.3)
        >>> refs = [Reference("s", 1, frozenset({Kind.HEALTH}))]
        >>> cands = [Candidate("s", 1, frozenset()), Candidate("p", 5, frozenset()),
        ...          Candidate("q", 6, frozenset(), marked=0.9)]
        >>> find_flagged(cands, [[1, 0], [0.95, 0.3], [0, 1]], refs, [[1, 0]], cal)
        ... # doctest: +NORMALIZE_WHITESPACE
        {'p': Flag(reason='sensitive', route='paraphrase', similarity=0.953583,
                   category='health', reference='s'),
         'q': Flag(reason='erased', route='marked', similarity=0.9, category=None,
                   reference=None)}
    """
    x = np.asarray(vectors, dtype=np.float64)
    refs = np.asarray(reference_vectors, dtype=np.float64)
    by_id = {r.node_id: r for r in references}
    out: dict[str, Flag] = {}
    for i, cand in enumerate(candidates):
        if cand.marked > 0.0:
            out[cand.node_id] = Flag("erased", "marked", round(cand.marked, 6), None)
            continue
        mine = by_id.get(cand.node_id)
        keep = [j for j, r in enumerate(references)
                if r.node_id != cand.node_id and (mine is None or r.seq < mine.seq)]
        if not keep:
            continue
        found = restates(x[i:i + 1], [cand.kinds], refs[keep],
                         [references[j].kinds for j in keep], calibration,
                         paraphrase_threshold=paraphrase_threshold, anchors=[cand.anchors],
                         reference_anchors=[references[j].anchors for j in keep])[0]
        if found is not None:
            ref = references[keep[found.index]]
            out[cand.node_id] = Flag("sensitive", found.route, found.similarity,
                                     _category(ref.kinds), ref.node_id)
    return out


def ask(hook: RephraseOrConfirm, flagged: FlaggedText) -> str | bool:
    """Call the hook and check its answer.

    Returns:
        A non-blank rephrasing, ``True`` (confirmed) or ``False`` (withhold).

    Raises:
        PrivacyHookError: the hook raised, or returned anything else (the message
            names the type, never the text).

    Examples:
        >>> f = FlaggedText("x", None, "active", "erased", "marked", 0.9, None)
        >>> ask(lambda _: True, f), ask(lambda _: False, f)
        (True, False)
        >>> ask(lambda _: 3, f)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.PrivacyHookError: rephrase_or_confirm returned int ...
    """
    try:
        answer: object = hook(flagged)
    except Exception as exc:
        raise PrivacyHookError(
            f"rephrase_or_confirm raised {type(exc).__name__}; nothing was shown or "
            "recorded") from exc
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str) and answer.strip() and "\x00" not in answer:
        return answer
    raise PrivacyHookError(
        f"rephrase_or_confirm returned {type(answer).__name__}"
        f"{' (blank)' if isinstance(answer, str) else ''}; it must return a non-blank "
        "rephrasing (str), True (confirmed) or False (withhold)")
