"""Retention: Oblivion's forgetting curve with reinforcement, and seed 003's lifecycle rules.

**Oblivion** (seed 002 §2.2): the retention of a memory (or an L1 cluster) is

    R = exp(-n / S),        S = (U + F + ε) · T

* ``n`` — the number of *turns since the memory was last accessed* (§2.2 "the number of
  turns since cluster c was last accessed"); it grows by one per turn without use
  (§2.3 "unaccessed clusters naturally decay via the increment of n") — :func:`tick`.
* ``U ∈ [0, 1]`` — "a learned utility proxy"; ``F ∈ [0, 1]`` — "an access-frequency
  proxy"; ``ε > 0`` "prevents division by zero"; ``T > 0`` the decay temperature,
  default 10 (§5.1 "T=10 achieves an optimal balance"; E.2).

The seed does not give ε, F's formula or the Memory Manager's update rule (§2.3 says
only that the utility of used memories "is reinforced", and §5.1 that retention "spikes
instantly upon reinforcement events"). Our choices (digest Z-C1, Z-C3), in
:class:`OblivionConfig`: ε = 0.01; ``F = min(1, access_count/10)`` (seed 003's
10-access cap); a new memory starts at ``U = 0.5``, ``n = 0``; on *credited use* —
the Recognizer found the memory in the response, §2.3 "ties reinforcement strictly to
usage" — :func:`reinforce` sets ``n ← 0``, ``access_count += 1`` and moves
``U ← U + η·(u - U)`` with η = 0.5 toward the assessed utility ``u`` clipped to
[0.05, 0.95] (the Decayer prompt's allowed utility range, App. F). Retrieval without use
does not reinforce. This reproduces the sawtooth of §5.1.

**Seed 003** (practitioner notes) gives a relevance score, per-kind TTLs, archival and
graduated retention over *calendar days* from an injectable clock:

* ``relevance = 0.3·recency + 0.3·access_freq + 0.2·freshness + 0.2·type_weight`` with
  ``recency = 1/(1 + age_days/30)``, ``access_freq = min(count/10, 1)``,
  ``freshness = 1/(1 + last_access_days/7)``; days are whole days (``.days``, floored);
  prune (archive) below 0.2.
* ``should_expire``: ``now - created_at > ttl`` (strict: exactly at the TTL is *not*
  expired); ``None`` TTL never expires.
* ``should_archive``: never for identity and active decisions; never when relevance
  > 0.5; otherwise when idle (since last access) more than 90 whole days.
* graduated retention by age: keep everything ≤ 7 days; then keep decisions, gotchas and
  preferences and archive raw outputs; after 30 days compact findings and archive
  details; after 90 days keep only identity and decisions (:func:`graduated_action`;
  digest Z-D6: this is an alternative profile, it conflicts with the 730-day preference
  TTL).

**MaRS types onto seed 003 kinds** (:func:`kind_for`; a caller may pass an explicit kind,
e.g. from ``metadata["kind"]``, which wins):

========  ==============  ============  ===========  =====================================
MaRS      seed 003 kind   TTL           type weight  why
========  ==============  ============  ===========  =====================================
semantic  preference      730 days      0.8          durable user facts and preferences
                                                     (seed 000 §4.2 "stable user prefs")
social    finding         90 days*      0.7          social detail decays unless used
                                                     (seed 000 §4.3); 90 d = archive age
task      project_status  30 days       0.5†         goal state "changes monthly"
episodic  observation     30 days*      0.5          raw episodes; compacted after 30 d
========  ==============  ============  ===========  =====================================

\\* TTL not in seed 003 (its table lacks finding/observation, so ``TTL_CONFIG.get`` would
make them immortal, digest Z-D1): ours. † seed 003's default weight for unlisted kinds.
Expiry and archival are pure predicates: the policy that acts on them must still honour
task-safety (an open goal is not archived while active, DESIGN §3 invariant 3).

Examples:
    >>> cfg = OblivionConfig()
    >>> s = RetentionState()                     # U = 0.5, F = 0, n = 0
    >>> s = tick(s, 10); round(state_retention(s, cfg), 4)     # S = 5.1
    0.1407
    >>> s = reinforce(s, 0.9); state_retention(s, cfg)     # sawtooth: back to 1
    1.0
    >>> round(relevance_score("decision", age_days=0, access_count=0, last_access_days=0), 2)
    0.7
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core import decay
from mars_core.errors import ValidationError
from mars_core.model import MemoryType, utc

__all__ = [
    "KIND_BY_TYPE",
    "LifecycleConfig",
    "OblivionConfig",
    "PracticeKind",
    "RelevanceConfig",
    "RetentionAction",
    "RetentionState",
    "graduated_action",
    "is_low_retention",
    "kind_for",
    "oblivion_retention",
    "reinforce",
    "relevance_at",
    "relevance_score",
    "should_archive",
    "should_expire",
    "should_prune",
    "stability",
    "state_retention",
    "tick",
    "ttl_for",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)


# --- Oblivion ------------------------------------------------------------------------------


class OblivionConfig(BaseModel):
    """Constants of Oblivion's retention curve and of our reinforcement rule.

    Examples:
        >>> OblivionConfig().temperature, OblivionConfig().epsilon
        (10.0, 0.01)
    """

    model_config = _STRICT
    temperature: float = Field(
        10.0, gt=0.0, allow_inf_nan=False,
        description="Decay temperature T in S = (U + F + ε)·T; higher decays slower "
        "(seed 002 §2.2; default 10 from §5.1 and E.2).",
    )
    epsilon: float = Field(
        0.01, gt=0.0, allow_inf_nan=False,
        description="ε > 0 in S, 'prevents division by zero' (seed 002 §2.2; value SILENT, "
        "ours 0.01, digest Z-C3): small enough not to matter once U or F is positive; with "
        "U = F = 0, S = ε·T = 0.1 and R falls to e^{-10} after one turn.",
    )
    initial_utility: float = Field(
        0.5, ge=0.0, le=1.0,
        description="U of a new memory (ours, digest Z-C1): the middle of the seed's "
        "'partial' utility band 0.4–0.6 — no evidence either way yet.",
    )
    utility_rate: float = Field(
        0.5, gt=0.0, le=1.0,
        description="η in U ← U + η·(u - U) on credited use (ours, digest Z-C1; the seed "
        "says only that U 'is reinforced', §2.3).",
    )
    utility_min: float = Field(
        0.05, ge=0.0, le=1.0,
        description="Assessed utility is clipped to at least this (seed 002 App. F Decayer "
        "prompt: 'Minimum utility ... is 0.05').",
    )
    utility_max: float = Field(
        0.95, ge=0.0, le=1.0,
        description="Assessed utility is clipped to at most this (App. F: 'maximum is 0.95'); "
        "also the assessed utility assumed when a use comes without an assessment.",
    )
    frequency_ref: float = Field(
        10.0, gt=0.0, allow_inf_nan=False,
        description="F = min(1, access_count / frequency_ref) (ours; seed 003's 10-access "
        "cap — the seed calls F only 'an access-frequency proxy' in [0, 1]).",
    )
    low_retention: float = Field(
        0.1, ge=0.0, le=1.0,
        description="R below this marks a buffer item for eviction (ours, digest Z-C7; the "
        "Activator prompt's 'Low Ebbinghaus decay score (< τ)' leaves τ unstated).",
    )

    @model_validator(mode="after")
    def _band(self) -> OblivionConfig:
        if self.utility_min > self.utility_max:
            raise ValueError("utility_min must not exceed utility_max")
        return self


class RetentionState(BaseModel):
    """Per-memory (or per-cluster) Oblivion statistics: U, access count and n.

    Examples:
        >>> RetentionState(access_count=5).frequency()
        0.5
    """

    model_config = _STRICT
    utility: float = Field(0.5, ge=0.0, le=1.0, description="Learned utility proxy U.")
    access_count: int = Field(0, ge=0, description="Credited uses so far.")
    turns_since_access: int = Field(0, ge=0, description="n: turns since the last credited use.")

    def frequency(self, config: OblivionConfig | None = None) -> float:
        """F = ``min(1, access_count / frequency_ref)``."""
        ref = (config or OblivionConfig()).frequency_ref
        return min(1.0, self.access_count / ref)

    @classmethod
    def new(cls, config: OblivionConfig | None = None) -> RetentionState:
        """The state of a freshly written memory (U = initial_utility, n = 0)."""
        return cls(utility=(config or OblivionConfig()).initial_utility)


def stability(utility: float, frequency: float, config: OblivionConfig | None = None) -> float:
    """``S = (U + F + ε)·T`` (seed 002 §2.2).

    Examples:
        >>> stability(0.5, 0.5)
        10.1
    """
    cfg = config or OblivionConfig()
    for name, v in (("utility", utility), ("frequency", frequency)):
        if not 0.0 <= v <= 1.0:
            raise ValidationError(f"{name} must lie in [0, 1], got {v!r}")
    return (utility + frequency + cfg.epsilon) * cfg.temperature


def oblivion_retention(
    turns: float, utility: float, frequency: float, config: OblivionConfig | None = None
) -> float:
    """``R = exp(-n/S)`` in (0, 1]: 1 right after use, falling with every unused turn.

    Examples:
        >>> round(oblivion_retention(10, 0.5, 0.5), 4)     # digest C.5 table, T = 10, n = 10
        0.3715
    """
    return decay.exponential(turns, 1.0 / stability(utility, frequency, config))


def state_retention(state: RetentionState, config: OblivionConfig | None = None) -> float:
    """:func:`oblivion_retention` of a :class:`RetentionState`."""
    cfg = config or OblivionConfig()
    return oblivion_retention(state.turns_since_access, state.utility, state.frequency(cfg), cfg)


def is_low_retention(state: RetentionState, config: OblivionConfig | None = None) -> bool:
    """True when R < ``low_retention`` (a buffer-eviction candidate; never a deletion)."""
    cfg = config or OblivionConfig()
    return state_retention(state, cfg) < cfg.low_retention


def tick(state: RetentionState, turns: int = 1) -> RetentionState:
    """Advance ``n`` by ``turns`` turns without use (seed 002 §2.3).

    Examples:
        >>> tick(RetentionState(), 3).turns_since_access
        3
    """
    if turns < 0:
        raise ValidationError(f"turns must be >= 0, got {turns}")
    return state.model_copy(update={"turns_since_access": state.turns_since_access + turns})


def reinforce(
    state: RetentionState,
    assessed_utility: float | None = None,
    config: OblivionConfig | None = None,
) -> RetentionState:
    """The Memory Manager's update on a *credited use* (seed 002 §2.3; rule ours, Z-C1).

    ``n ← 0``, ``access_count += 1`` and ``U ← U + η·(clip(u) - U)``, ``u`` the
    Recognizer's utility assessment (``utility_max`` when none is given: being used
    in the answer is evidence of high utility). Retention never drops on reinforcement:
    with ``n = 0`` it is 1.

    Examples:
        >>> s = reinforce(RetentionState(utility=0.5), 0.9)
        >>> s.turns_since_access, s.access_count, s.utility
        (0, 1, 0.7)
    """
    cfg = config or OblivionConfig()
    u = cfg.utility_max if assessed_utility is None else float(assessed_utility)
    if math.isnan(u):
        raise ValidationError("assessed_utility must be a number")
    u = min(cfg.utility_max, max(cfg.utility_min, u))
    new_u = state.utility + cfg.utility_rate * (u - state.utility)
    return state.model_copy(update={
        "turns_since_access": 0,
        "access_count": state.access_count + 1,
        "utility": round(min(1.0, max(0.0, new_u)), 12),
    })


# --- seed 003: kinds, relevance, TTL, archival ---------------------------------------------


class PracticeKind(StrEnum):
    """Seed 003's entry kinds (TTL table, type weights, archive guard, compaction)."""

    IDENTITY = "identity"
    DECISION = "decision"
    ACTIVE_DECISION = "active_decision"
    GOTCHA = "gotcha"
    PREFERENCE = "preference"
    FINDING = "finding"
    OBSERVATION = "observation"
    TOOL_OUTPUT = "tool_output"
    SESSION_STATE = "session_state"
    PROJECT_STATUS = "project_status"
    COMPACTED_SUMMARY = "compacted_summary"


class RetentionAction(StrEnum):
    """What graduated retention does with an entry of a given kind and age."""

    KEEP = "keep"
    COMPACT = "compact"
    ARCHIVE = "archive"


KIND_BY_TYPE: Mapping[MemoryType, PracticeKind] = {
    MemoryType.SEMANTIC: PracticeKind.PREFERENCE,
    MemoryType.SOCIAL: PracticeKind.FINDING,
    MemoryType.TASK: PracticeKind.PROJECT_STATUS,
    MemoryType.EPISODIC: PracticeKind.OBSERVATION,
}
"""MaRS memory type → seed 003 kind (see the module docstring for the reasons)."""


def _seed_type_weights() -> dict[PracticeKind, float]:
    return {
        PracticeKind.DECISION: 1.0,
        PracticeKind.GOTCHA: 0.9,
        PracticeKind.PREFERENCE: 0.8,
        PracticeKind.FINDING: 0.7,
        PracticeKind.OBSERVATION: 0.5,
        PracticeKind.TOOL_OUTPUT: 0.3,
    }


def _seed_ttl() -> dict[PracticeKind, timedelta | None]:
    return {
        # seed 003 TTL_CONFIG
        PracticeKind.SESSION_STATE: timedelta(hours=24),
        PracticeKind.PROJECT_STATUS: timedelta(days=30),
        PracticeKind.TOOL_OUTPUT: timedelta(days=7),
        PracticeKind.DECISION: timedelta(days=365),
        PracticeKind.PREFERENCE: timedelta(days=730),
        PracticeKind.IDENTITY: None,
        # ours (digest Z-D1): kinds the seed's table omits
        PracticeKind.ACTIVE_DECISION: None,          # never archived by should_archive either
        PracticeKind.GOTCHA: timedelta(days=365),    # weighted like decisions (0.9)
        PracticeKind.FINDING: timedelta(days=90),    # graduated: compacted by 90 days
        PracticeKind.OBSERVATION: timedelta(days=30),  # graduated: details archived after 30
        PracticeKind.COMPACTED_SUMMARY: timedelta(days=365),  # distilled gist outlives details
    }


class RelevanceConfig(BaseModel):
    """Seed 003's relevance score constants (all from its ``relevance_score``).

    Examples:
        >>> RelevanceConfig().type_weights[PracticeKind.TOOL_OUTPUT]
        0.3
    """

    model_config = _STRICT
    recency_days: float = Field(30.0, gt=0.0, description="recency = 1/(1 + age_days/30).")
    freshness_days: float = Field(7.0, gt=0.0,
                                  description="freshness = 1/(1 + last_access_days/7).")
    frequency_cap: float = Field(10.0, gt=0.0, description="access_freq = min(count/10, 1).")
    w_recency: float = Field(0.3, ge=0.0, description="Weight of recency (0.3).")
    w_frequency: float = Field(0.3, ge=0.0, description="Weight of access frequency (0.3).")
    w_freshness: float = Field(0.2, ge=0.0, description="Weight of freshness (0.2).")
    w_type: float = Field(0.2, ge=0.0, description="Weight of the type weight (0.2).")
    type_weights: dict[PracticeKind, float] = Field(
        default_factory=_seed_type_weights,
        description="Per-kind value: decision 1.0, gotcha 0.9, preference 0.8, finding 0.7, "
        "observation 0.5, tool_output 0.3.",
    )
    default_type_weight: float = Field(0.5, ge=0.0, le=1.0,
                                       description="Weight of kinds not in the table (0.5).")
    prune_below: float = Field(0.2, ge=0.0, le=1.0,
                               description="'archive entries scoring < 0.2'.")

    def type_weight(self, kind: PracticeKind | str) -> float:
        """The type weight of ``kind`` (the default for unlisted kinds)."""
        return self.type_weights.get(PracticeKind(kind), self.default_type_weight)


class LifecycleConfig(BaseModel):
    """Seed 003's TTL table, archival rule and graduated-retention tiers.

    Examples:
        >>> LifecycleConfig().ttl[PracticeKind.PREFERENCE].days
        730
    """

    model_config = _STRICT
    relevance: RelevanceConfig = Field(default_factory=RelevanceConfig,
                                       description="The relevance score used by archival.")
    ttl: dict[PracticeKind, timedelta | None] = Field(
        default_factory=_seed_ttl,
        description="TTL per kind (seed 003 TTL_CONFIG plus ours for the kinds it omits); "
        "None = never expires.",
    )
    default_ttl: timedelta | None = Field(
        timedelta(days=30),
        description="TTL of a kind missing from `ttl` (ours, digest Z-D1: the seed's "
        "TTL_CONFIG.get() would make unknown kinds immortal).",
    )
    max_age_days: int = Field(90, ge=0,
                              description="should_archive: idle more than this many days (90).")
    keep_relevance: float = Field(0.5, ge=0.0, le=1.0,
                                  description="should_archive: relevance > this keeps (0.5).")
    never_archive: tuple[PracticeKind, ...] = Field(
        (PracticeKind.IDENTITY, PracticeKind.ACTIVE_DECISION),
        description="Kinds should_archive never archives (seed 003).",
    )
    tiers_days: tuple[int, int, int] = Field(
        (7, 30, 90),
        description="Graduated-retention boundaries in whole days: 0–7, 7–30, 30–90, 90+.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> LifecycleConfig:
        a, b, c = self.tiers_days
        if not 0 <= a <= b <= c:
            raise ValueError("tiers_days must be non-decreasing and >= 0")
        return self


def kind_for(mtype: MemoryType | str, hint: PracticeKind | str | None = None) -> PracticeKind:
    """The seed 003 kind of a MaRS memory: ``hint`` if it names a kind, else the mapping.

    Examples:
        >>> kind_for("semantic").value, kind_for("semantic", "identity").value
        ('preference', 'identity')
        >>> kind_for("episodic", "not-a-kind").value
        'observation'
    """
    if hint is not None:
        try:
            return PracticeKind(hint)
        except ValueError:
            pass
    return KIND_BY_TYPE[MemoryType(mtype)]


def relevance_score(
    kind: PracticeKind | str,
    age_days: float,
    access_count: int,
    last_access_days: float,
    config: RelevanceConfig | None = None,
) -> float:
    """Seed 003 ``relevance_score`` from ages in days (pass whole days for parity).

    Examples:
        >>> round(relevance_score("tool_output", 30, 0, 30), 4)
        0.2478
    """
    cfg = config or RelevanceConfig()
    if access_count < 0:
        raise ValidationError(f"access_count must be >= 0, got {access_count}")
    rec = decay.hyperbolic(age_days, cfg.recency_days)
    fresh = decay.hyperbolic(last_access_days, cfg.freshness_days)
    freq = min(access_count / cfg.frequency_cap, 1.0)
    return (cfg.w_recency * rec + cfg.w_frequency * freq + cfg.w_freshness * fresh
            + cfg.w_type * cfg.type_weight(kind))


def relevance_at(
    kind: PracticeKind | str,
    created_at: datetime,
    access_count: int,
    last_access_at: datetime | None,
    *,
    now: datetime,
    config: RelevanceConfig | None = None,
) -> float:
    """:func:`relevance_score` at ``now`` with whole-day ages, as seed 003 computes them.

    A memory never accessed counts as last accessed when it was created.

    Examples:
        >>> from datetime import UTC, datetime
        >>> t0 = datetime(2025, 1, 1, tzinfo=UTC)
        >>> round(relevance_at("tool_output", t0, 0, None, now=datetime(2026, 1, 1, tzinfo=UTC)), 4)
        0.0865
    """
    last = created_at if last_access_at is None else last_access_at
    return relevance_score(kind, decay.whole_days_between(created_at, now), access_count,
                           decay.whole_days_between(last, now), config)


def should_prune(score: float, config: RelevanceConfig | None = None) -> bool:
    """Seed 003's pruning rule: archive when the relevance is below 0.2 (strict).

    Examples:
        >>> should_prune(0.0865), should_prune(0.2)
        (True, False)
    """
    return score < (config or RelevanceConfig()).prune_below


def ttl_for(kind: PracticeKind | str, config: LifecycleConfig | None = None) -> timedelta | None:
    """The TTL of ``kind`` (None = never expires; missing kinds get ``default_ttl``)."""
    cfg = config or LifecycleConfig()
    k = PracticeKind(kind)
    return cfg.ttl.get(k, cfg.default_ttl)


def should_expire(
    kind: PracticeKind | str,
    created_at: datetime,
    now: datetime,
    config: LifecycleConfig | None = None,
) -> bool:
    """Seed 003 ``should_expire``: ``now - created_at > ttl`` (strict), never for None.

    Expired means *archive*, not delete ("Don't delete on expiry - archive").

    Examples:
        >>> from datetime import UTC, datetime, timedelta
        >>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
        >>> should_expire("session_state", t0, t0 + timedelta(hours=24))
        False
        >>> should_expire("session_state", t0, t0 + timedelta(hours=24, microseconds=1))
        True
    """
    ttl = ttl_for(kind, config)
    if ttl is None:
        return False
    return utc(now) - utc(created_at) > ttl


def should_archive(
    kind: PracticeKind | str,
    created_at: datetime,
    access_count: int,
    last_access_at: datetime | None,
    *,
    now: datetime,
    config: LifecycleConfig | None = None,
) -> bool:
    """Seed 003 ``should_archive``: idle > ``max_age_days`` whole days and not relevant.

    Never for identity and active decisions; never when relevance > 0.5; otherwise
    ``(now - last_accessed).days > 90`` (strict; a never-accessed memory counts from
    its creation).

    Examples:
        >>> from datetime import UTC, datetime, timedelta
        >>> t0 = datetime(2025, 1, 1, tzinfo=UTC)
        >>> should_archive("tool_output", t0, 0, None, now=t0 + timedelta(days=91))
        True
        >>> should_archive("identity", t0, 0, None, now=t0 + timedelta(days=9999))
        False
    """
    cfg = config or LifecycleConfig()
    k = PracticeKind(kind)
    if k in cfg.never_archive:
        return False
    score_now = relevance_at(k, created_at, access_count, last_access_at, now=now,
                             config=cfg.relevance)
    if score_now > cfg.keep_relevance:
        return False
    last = created_at if last_access_at is None else last_access_at
    return decay.whole_days_between(last, now) > cfg.max_age_days


_RAW = frozenset({PracticeKind.TOOL_OUTPUT, PracticeKind.SESSION_STATE})
_DURABLE = frozenset({PracticeKind.IDENTITY, PracticeKind.ACTIVE_DECISION, PracticeKind.DECISION,
                      PracticeKind.GOTCHA, PracticeKind.PREFERENCE})
_COMPACTABLE = frozenset({PracticeKind.FINDING, PracticeKind.OBSERVATION})
_FOREVER = frozenset({PracticeKind.IDENTITY, PracticeKind.ACTIVE_DECISION, PracticeKind.DECISION})


def graduated_action(
    kind: PracticeKind | str, age_days: int, config: LifecycleConfig | None = None
) -> RetentionAction:
    """Seed 003's graduated retention for an entry ``age_days`` whole days old.

    * age ≤ 7: keep everything (verbatim);
    * 7 < age ≤ 30: keep decisions, gotchas, preferences (and all but raw outputs);
      archive raw outputs (tool output, session state);
    * 30 < age ≤ 90: compact findings and observations into summaries; archive details
      (raw outputs, project status); keep durable kinds and existing summaries;
    * age > 90: keep only identity and decisions (and active decisions); archive the rest.

    Boundaries are strict like the seed's other age rules (``> ttl``, ``> 90``).

    Examples:
        >>> graduated_action("tool_output", 7).value, graduated_action("tool_output", 8).value
        ('keep', 'archive')
        >>> graduated_action("observation", 45).value, graduated_action("preference", 91).value
        ('compact', 'archive')
    """
    cfg = config or LifecycleConfig()
    k = PracticeKind(kind)
    if age_days < 0:
        raise ValidationError(f"age_days must be >= 0, got {age_days}")
    keep_all, keep_durable, compact_until = cfg.tiers_days
    if age_days <= keep_all:
        return RetentionAction.KEEP
    if age_days <= keep_durable:
        return RetentionAction.ARCHIVE if k in _RAW else RetentionAction.KEEP
    if age_days <= compact_until:
        if k in _COMPACTABLE:
            return RetentionAction.COMPACT
        if k in _DURABLE or k is PracticeKind.COMPACTED_SUMMARY:
            return RetentionAction.KEEP
        return RetentionAction.ARCHIVE
    return RetentionAction.KEEP if k in _FOREVER else RetentionAction.ARCHIVE
