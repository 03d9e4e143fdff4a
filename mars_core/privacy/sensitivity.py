"""Sensitivity ``s ∈ [0, 1]`` of a memory at ingestion (seed 000 §4.3, §5.4).

The seed initialises ``s_i`` from surface patterns, named-entity categories and category
detectors, adjusts it by provenance (source, consent, jurisdiction) and type, and lets user
preferences raise or lower it; it is silent on how the parts combine. The rule here, in
order, each step a small pure function:

1. **Risks.** Each detection has risk ``r = min(1, weight[kind] * m_J(kind)) * score``
   where ``m_J`` is the multiplier of the memory's jurisdiction (1 by default; "EU" and
   "UK" raise health and protected attributes, GDPR art. 9). The embedding-level
   classifier (:mod:`mars_core.privacy.semantic`), when it flags the text, counts as one
   more detection of its category's kind (health, finance, protected, secret for
   credentials, address for exact whereabouts) scored by its probability — but it never
   sets the floor of step 4, and where the lexicons already found that kind the larger
   risk is kept (step 2 takes each kind's maximum).
2. **Noisy-OR over kinds.** ``s = 1 - Π_k (1 - max_{d of kind k} r_d)``: every kind is an
   independent chance that the text is sensitive; repeating one kind (three names, two
   dates) does not add up, two different kinds do. Adding a detection never lowers ``s``.
3. **Shifts** for the source, the source's reliability, consent and memory type. A shift
   ``δ ≥ 0`` raises, ``s ← 1 - (1 - s)(1 - δ)``; ``δ < 0`` lowers, ``s ← s (1 + δ)``. Both
   keep ``s`` in [0, 1] and are non-decreasing in ``s``, so they preserve step 2's order.
   Reliability ``ρ`` lowers by ``reliability_discount * (1 - ρ)``: an unreliable source's
   claims are less likely to be true facts about a person.
4. **Floor.** ``s`` is at least the risk of the worst hard identifier (credential, card,
   IBAN, national id): no source, consent or type adjustment hides a leaked password.
5. **Preferences** (a :class:`SensitivityPreferences` or a plain callable) get the last
   word, clamped to [0, 1] — they are the user's explicit choice.

The :class:`SensitivityReport` lists reasons as kinds, counts and adjustment names; it never
holds text.

Examples:
    >>> from mars_core.model import Consent, MemoryType, Provenance
    >>> from mars_core.nlp import Analyzer
    >>> scorer = SensitivityScorer(analyzer=Analyzer("rules", sentiment="lexicon"))
    >>> r = scorer.score("my card is 4111 1111 1111 1111", provenance=Provenance())
    >>> round(r.score, 2), r.reasons
    (0.95, ('card×1',))
    >>> scorer.score("I was diagnosed with diabetes", type=MemoryType.SOCIAL,
    ...              provenance=Provenance(jurisdiction="EU", consent=Consent.DENIED)).score
    1.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mars_core.errors import ValidationError
from mars_core.model import Consent, MemoryType, Provenance
from mars_core.nlp import Analyzer, TextSignals
from mars_core.privacy.detectors import (
    DEFAULT_WEIGHTS,
    IDENTIFIER_KINDS,
    Detection,
    Kind,
    detect,
)
from mars_core.privacy.semantic import SemanticVerdict

__all__ = [
    "EntityPreferences",
    "PreferencesLike",
    "SensitivityConfig",
    "SensitivityPreferences",
    "SensitivityReport",
    "SensitivityScorer",
    "combine_risks",
    "detection_risk",
    "jurisdiction_multipliers",
    "shift",
]

_ART9 = {Kind.HEALTH: 1.25, Kind.PROTECTED: 1.25}


def _default_weights() -> dict[Kind, float]:
    return dict(DEFAULT_WEIGHTS)


def _default_jurisdictions() -> dict[str, dict[Kind, float]]:
    return {
        "EU": dict(_ART9),
        "UK": dict(_ART9),
        "US-CA": {Kind.HEALTH: 1.1, Kind.PROTECTED: 1.1, Kind.FINANCE: 1.2},
    }


def _default_sources() -> dict[str, float]:
    return {"user": 0.0, "summary": 0.0, "assistant": -0.1, "tool": -0.1,
            "document": -0.2, "system": -0.2}


def _default_consent() -> dict[Consent, float]:
    return {Consent.DENIED: 0.3, Consent.UNKNOWN: 0.0, Consent.GRANTED: -0.1}


def _default_types() -> dict[MemoryType, float]:
    return {MemoryType.SOCIAL: 0.1, MemoryType.EPISODIC: 0.0, MemoryType.SEMANTIC: 0.0,
            MemoryType.TASK: 0.0}


def _check_shifts(values: Mapping[object, float]) -> None:
    for v in values.values():
        if not (math.isfinite(v) and -1.0 <= v <= 1.0):
            raise ValueError("every shift must lie in [-1, 1]")


class SensitivityConfig(BaseModel):
    """How detections and provenance become one sensitivity (see the module docstring).

    Examples:
        >>> cfg = SensitivityConfig(weights={"person": 0.5})
        >>> cfg.weights[Kind.PERSON], cfg.weights[Kind.SECRET]
        (0.5, 1.0)
        >>> try:
        ...     SensitivityConfig(colour="red")
        ... except ValueError as exc:
        ...     print(exc.errors()[0]["type"])
        extra_forbidden
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights: dict[Kind, float] = Field(
        default_factory=_default_weights,
        description="Risk weight of each kind in [0, 1]; kinds not given keep their default "
        "(DEFAULT_WEIGHTS: secret 1.0, card/IBAN/national id 0.95, health/protected 0.8, "
        "e-mail/phone/address 0.7, ... person 0.3, date 0.05).",
    )
    jurisdiction_multipliers: dict[str, dict[Kind, float]] = Field(
        default_factory=_default_jurisdictions,
        description="Per jurisdiction, multipliers of kind weights (weights are capped at 1). "
        "A jurisdiction 'EU-DE' uses 'EU-DE', else 'EU'. Defaults: EU and UK ×1.25 on health "
        "and protected attributes (GDPR art. 9); US-CA ×1.1 on those and ×1.2 on finance "
        "(CPRA sensitive personal information).",
    )
    source_shifts: dict[str, float] = Field(
        default_factory=_default_sources,
        description="Shift by provenance source in [-1, 1] (negative lowers, positive raises): "
        "user/summary 0, assistant/tool -0.1, document/system -0.2; unknown sources 0.",
    )
    reliability_discount: float = Field(
        0.1, ge=0.0, le=1.0,
        description="Lowering by (1 - reliability) × this: a fully unreliable source's text is "
        "at most this much less sensitive.",
    )
    consent_shifts: dict[Consent, float] = Field(
        default_factory=_default_consent,
        description="Shift by consent status in [-1, 1]: denied +0.3, unknown 0, granted -0.1.",
    )
    type_shifts: dict[MemoryType, float] = Field(
        default_factory=_default_types,
        description="Shift by memory type in [-1, 1]: social +0.1 (it is about a person), "
        "others 0.",
    )
    floor_kinds: frozenset[Kind] = Field(
        IDENTIFIER_KINDS,
        description="Kinds whose risk is a floor after provenance and type shifts "
        "(credentials and hard identifiers).",
    )

    @field_validator("weights", mode="after")
    @classmethod
    def _merge_weights(cls, v: dict[Kind, float]) -> dict[Kind, float]:
        for w in v.values():
            if not (math.isfinite(w) and 0.0 <= w <= 1.0):
                raise ValueError("every kind weight must lie in [0, 1]")
        return {**DEFAULT_WEIGHTS, **v}

    @field_validator("jurisdiction_multipliers", mode="after")
    @classmethod
    def _check_multipliers(cls, v: dict[str, dict[Kind, float]]) -> dict[str, dict[Kind, float]]:
        for table in v.values():
            for m in table.values():
                if not (math.isfinite(m) and 0.0 <= m <= 4.0):
                    raise ValueError("jurisdiction multipliers must lie in [0, 4]")
        return {k.upper(): t for k, t in v.items()}

    @field_validator("source_shifts", "consent_shifts", "type_shifts", mode="after")
    @classmethod
    def _check_shift_tables(cls, v: dict[object, float]) -> dict[object, float]:
        _check_shifts(v)
        return v


@runtime_checkable
class SensitivityPreferences(Protocol):
    """User preferences as seen by the scorer: one method, the last word on ``s``.

    ``adjust`` receives the score after every other step, the detections and the text, and
    returns the new score (clamped to [0, 1]). It may read the text (to find entities the
    user marked private) but must not store or log it.
    """

    def adjust(self, score: float, detections: Sequence[Detection], text: str) -> float:
        """Return the adjusted sensitivity."""
        ...


PreferencesLike = SensitivityPreferences | Callable[[float, Sequence[Detection], str], float]
"""A :class:`SensitivityPreferences` object or a plain ``(score, detections, text) -> float``."""


@dataclass(frozen=True, slots=True)
class EntityPreferences:
    """A minimal preference profile: private terms, and a global raise or lowering.

    Attributes:
        private: terms (names, places, conditions) the user marked private; a whole-word,
            case-insensitive occurrence lifts the score to at least ``private_score``.
        private_score: the floor for a text that mentions a private term.
        offset: a shift in [-1, 1] applied first (see :func:`shift`).

    The repr shows how many terms there are, not the terms.

    Examples:
        >>> prefs = EntityPreferences(private=("Dr. Lee",), offset=-0.5)
        >>> prefs.adjust(0.4, [], "I saw dr. lee today"), prefs.adjust(0.4, [], "hello")
        (0.9, 0.2)
        >>> prefs
        EntityPreferences(private=<1 terms>, private_score=0.9, offset=-0.5)
    """

    private: tuple[str, ...] = ()
    private_score: float = 0.9
    offset: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.private_score) and 0.0 <= self.private_score <= 1.0):
            raise ValidationError("private_score must lie in [0, 1]")
        if not (math.isfinite(self.offset) and -1.0 <= self.offset <= 1.0):
            raise ValidationError("offset must lie in [-1, 1]")

    def __repr__(self) -> str:
        return (f"EntityPreferences(private=<{len(self.private)} terms>, "
                f"private_score={self.private_score}, offset={self.offset})")

    def mentions_private(self, text: str) -> bool:
        """Whether ``text`` mentions one of the private terms (whole words, any case)."""
        low = text.casefold()
        return any(
            re.search(r"(?<!\w)" + re.escape(term.casefold()) + r"(?!\w)", low)
            for term in self.private if term.strip()
        )

    def adjust(self, score: float, detections: Sequence[Detection], text: str) -> float:
        """Apply the offset, then lift to ``private_score`` if a private term occurs."""
        out = shift(score, self.offset)
        return max(out, self.private_score) if self.mentions_private(text) else out


@dataclass(frozen=True, slots=True)
class SensitivityReport:
    """The sensitivity of one text and why.

    Attributes:
        score: ``s`` in [0, 1].
        detections: the detections it was computed from (offsets only).
        reasons: kinds with counts (``"email×2"``) and the adjustments applied
            (``"consent:denied+0.30"``, ``"semantic:health 0.93"``), never text.
        semantic: the embedding-level classifier's verdict, when it was consulted.

    Examples:
        >>> SensitivityReport(0.7, (Detection(Kind.EMAIL, 0, 9, 1.0),), ("email×1",)).kinds
        ('email',)
    """

    score: float
    detections: tuple[Detection, ...]
    reasons: tuple[str, ...]
    semantic: SemanticVerdict | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The distinct kinds detected, in order of first appearance."""
        return tuple(dict.fromkeys(d.kind.value for d in self.detections))

    def counts(self) -> dict[str, int]:
        """How many detections of each kind."""
        out: dict[str, int] = {}
        for d in self.detections:
            out[d.kind.value] = out.get(d.kind.value, 0) + 1
        return out


def shift(score: float, delta: float) -> float:
    """Raise (``delta >= 0``) or lower (``delta < 0``) a score, staying in [0, 1].

    ``1 - (1 - s)(1 - δ)`` for a raise, ``s (1 + δ)`` for a lowering; both are
    non-decreasing in ``s``.

    Examples:
        >>> shift(0.5, 0.2), shift(0.5, -0.2), shift(0.0, 0.1)
        (0.6, 0.4, 0.1)
    """
    if delta >= 0.0:
        return score + delta * (1.0 - score)
    return score * (1.0 + delta)


def jurisdiction_multipliers(
    config: SensitivityConfig, jurisdiction: str | None
) -> dict[Kind, float]:
    """The kind multipliers of a jurisdiction: exact match, else its prefix before ``-``.

    Examples:
        >>> jurisdiction_multipliers(SensitivityConfig(), "eu-de")[Kind.HEALTH]
        1.25
        >>> jurisdiction_multipliers(SensitivityConfig(), None)
        {}
    """
    if not jurisdiction:
        return {}
    key = jurisdiction.strip().upper()
    table = config.jurisdiction_multipliers
    if key in table:
        return dict(table[key])
    return dict(table.get(key.split("-")[0], {}))


def detection_risk(
    d: Detection, weights: Mapping[Kind, float], multipliers: Mapping[Kind, float] | None = None
) -> float:
    """``min(1, weight * multiplier) * score`` of one detection.

    Examples:
        >>> detection_risk(Detection(Kind.HEALTH, 0, 4, 0.5), DEFAULT_WEIGHTS)
        0.4
    """
    m = 1.0 if multipliers is None else multipliers.get(d.kind, 1.0)
    return min(1.0, weights.get(d.kind, 0.0) * m) * d.score


def combine_risks(
    detections: Sequence[Detection],
    weights: Mapping[Kind, float] = DEFAULT_WEIGHTS,
    multipliers: Mapping[Kind, float] | None = None,
) -> float:
    """Noisy-OR over kinds of each kind's highest risk.

    Examples:
        >>> dets = [Detection(Kind.PERSON, 0, 3, 1.0), Detection(Kind.PERSON, 5, 8, 1.0),
        ...         Detection(Kind.EMAIL, 9, 20, 1.0)]
        >>> round(combine_risks(dets), 2)  # 1 - (1 - 0.3)(1 - 0.7)
        0.79
    """
    best: dict[Kind, float] = {}
    for d in detections:
        r = detection_risk(d, weights, multipliers)
        if r > best.get(d.kind, 0.0):
            best[d.kind] = r
    keep = 1.0
    for kind in sorted(best):
        keep *= 1.0 - best[kind]
    return 1.0 - keep


def _apply(score: float, delta: float, label: str, reasons: list[str]) -> float:
    if delta == 0.0:
        return score
    reasons.append(f"{label}{delta:+.2f}")
    return shift(score, delta)


def _call_preferences(prefs: PreferencesLike, score: float, dets: Sequence[Detection],
                      text: str) -> float:
    out: object = (prefs.adjust(score, dets, text) if isinstance(prefs, SensitivityPreferences)
                   else prefs(score, dets, text))
    if not isinstance(out, int | float) or isinstance(out, bool) or math.isnan(out):
        raise ValidationError("preferences.adjust must return a number in [0, 1]")
    return min(1.0, max(0.0, float(out)))


class SensitivityScorer:
    """Compute :class:`SensitivityReport` s from text, provenance, type and preferences.

    Args:
        config: weights and adjustments (default :class:`SensitivityConfig`).
        analyzer: the NLP analyzer for personal entities (default: the shared
            ``Analyzer("auto")``, created on first use).
        preferences: default preferences applied by every :meth:`score` call that does
            not pass its own.

    Examples:
        >>> from mars_core.nlp import Analyzer
        >>> scorer = SensitivityScorer(analyzer=Analyzer("rules", sentiment="lexicon"))
        >>> scorer.score("See you at the bank holiday picnic!").score
        0.0
        >>> doc = Provenance(source="document")
        >>> r = scorer.score("Email me at ana@example.com", provenance=doc)
        >>> round(r.score, 2), r.reasons
        (0.56, ('email×1', 'source:document-0.20'))
    """

    def __init__(
        self,
        config: SensitivityConfig | None = None,
        *,
        analyzer: Analyzer | None = None,
        preferences: PreferencesLike | None = None,
    ) -> None:
        self.config = config or SensitivityConfig()
        self._analyzer = analyzer
        self._preferences = preferences

    def __repr__(self) -> str:
        return f"SensitivityScorer(analyzer={self._analyzer!r})"

    def detect(self, text: str, *, signals: TextSignals | None = None) -> list[Detection]:
        """The detections :meth:`score` uses (all kinds but ``PRIVATE``)."""
        return detect(text, self._analyzer, signals=signals, weights=self.config.weights)

    def score(
        self,
        text: str,
        *,
        provenance: Provenance | None = None,
        type: MemoryType = MemoryType.EPISODIC,
        preferences: PreferencesLike | None = None,
        detections: Sequence[Detection] | None = None,
        signals: TextSignals | None = None,
        semantic: SemanticVerdict | None = None,
    ) -> SensitivityReport:
        """Score one text (see the module docstring for the rule).

        Args:
            text: the memory's content.
            provenance: its provenance (default ``Provenance()``: user, unknown consent).
            type: its memory type.
            preferences: user preferences for this call (default: the scorer's).
            detections: precomputed detections (skip detection; e.g. from another engine).
            signals: precomputed NLP signals of ``text`` (entities are reused).
            semantic: the embedding-level classifier's verdict on ``text``
                (:meth:`mars_core.privacy.semantic.SemanticSensitivity.verdict`); a
                flagged verdict is one more risk (step 1), never a floor.

        Raises:
            ValidationError: ``text`` is not a string, or preferences returned a non-number.

        Examples:
            >>> from mars_core.nlp import Analyzer
            >>> from mars_core.privacy.semantic import SemanticVerdict
            >>> scorer = SensitivityScorer(analyzer=Analyzer("rules", sentiment="lexicon"))
            >>> text = "the oncologist found a lump"
            >>> scorer.score(text).score
            0.0
            >>> r = scorer.score(text, semantic=SemanticVerdict(0.9, "health", True))
            >>> round(r.score, 2), r.reasons
            (0.72, ('semantic:health 0.90',))
        """
        if not isinstance(text, str):
            raise ValidationError(f"text must be a str, not {text.__class__.__name__}")
        cfg = self.config
        prov = provenance or Provenance()
        dets = tuple(self.detect(text, signals=signals) if detections is None else detections)
        mult = jurisdiction_multipliers(cfg, prov.jurisdiction)
        counts: dict[str, int] = {}
        for d in dets:
            counts[d.kind.value] = counts.get(d.kind.value, 0) + 1
        reasons = [f"{k}×{n}" for k, n in counts.items()]
        extra = semantic.detection(len(text)) if semantic is not None else None
        if extra is not None and semantic is not None:
            reasons.append(f"semantic:{semantic.category} {semantic.probability:.2f}")
        risky = (*dets, extra) if extra is not None else dets
        if mult and any(d.kind in mult for d in risky):
            reasons.append(f"jurisdiction:{prov.jurisdiction}")
        s = combine_risks(risky, cfg.weights, mult)
        s = _apply(s, cfg.source_shifts.get(prov.source, 0.0), f"source:{prov.source}", reasons)
        s = _apply(s, -cfg.reliability_discount * (1.0 - prov.reliability), "reliability",
                   reasons)
        s = _apply(s, cfg.consent_shifts.get(prov.consent, 0.0),
                   f"consent:{prov.consent.value}", reasons)
        s = _apply(s, cfg.type_shifts.get(MemoryType(type), 0.0),
                   f"type:{MemoryType(type).value}", reasons)
        floor = max((detection_risk(d, cfg.weights, mult) for d in dets
                     if d.kind in cfg.floor_kinds), default=0.0)
        if floor > s:
            reasons.append("floor:identifier")
            s = floor
        prefs = preferences if preferences is not None else self._preferences
        if prefs is not None:
            adjusted = _call_preferences(prefs, s, dets, text)
            if adjusted != s:
                reasons.append(f"preferences{adjusted - s:+.2f}")
            s = adjusted
        return SensitivityReport(min(1.0, max(0.0, s)), dets, tuple(reasons), semantic)
