"""User privacy preferences and consent, as first-class, audited data (seed 000 §4.3, §5.4).

A namespace's :class:`PrivacyPreferences` let its user

* raise or lower sensitivity (globally or per entity) and mark entities **private**
  (memories mentioning them get at least ``private_floor``; memories derived from a
  private memory inherit it through ``derivesFrom``);
* **block** entities or conversations from long-term storage (such turns are not stored);
* set **retention horizons** per memory type (maintenance archives older memories);
* turn on **private mode**: memories above ``private_threshold`` are not recalled
  unless a :class:`ConsentGrant` covers them (by type or entity, until it expires or is
  revoked).

Examples:
    >>> prefs = PrivacyPreferences(private_entities=("Ines",), private_mode=True)
    >>> prefs.mentions_private("My sister Ines is a nurse"), prefs.blocks("hello", None)
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mars_core.model import MemoryNode, MemoryType, utc

__all__ = ["ConsentGrant", "PrivacyPreferences"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _pattern(terms: Sequence[str]) -> re.Pattern[str] | None:
    words = sorted({t.strip().casefold() for t in terms if t.strip()}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)")


class ConsentGrant(BaseModel):
    """A user's consent to recall private memories, scoped and revocable.

    Attributes:
        id: the grant's id (to revoke it).
        types: memory types it covers (empty: all types).
        entities: entities it covers (empty: any memory of the covered types).
        purpose: why it was granted (free text, kept with the preferences, not audited).
        granted_at: when.
        expires_at: until when (None: until revoked).
    """

    model_config = _STRICT
    id: str = Field(..., min_length=1, max_length=64, description="Grant id.")
    types: tuple[MemoryType, ...] = Field((), description="Covered types (empty: all).")
    entities: tuple[str, ...] = Field((), description="Covered entities (empty: any).")
    purpose: str = Field("", max_length=500, description="Stated purpose of the grant.")
    granted_at: datetime = Field(..., description="When consent was given (UTC).")
    expires_at: datetime | None = Field(None, description="Expiry (UTC); None: until revoked.")

    @field_validator("granted_at", "expires_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else utc(v)

    def covers(self, node: MemoryNode, now: datetime) -> bool:
        """Whether this grant allows recalling ``node`` at ``now``."""
        if self.expires_at is not None and now >= self.expires_at:
            return False
        if self.types and node.type not in self.types:
            return False
        pattern = _pattern(self.entities)
        return pattern is None or bool(pattern.search(node.content.casefold()))


class PrivacyPreferences(BaseModel):
    """A namespace's privacy preferences (every field optional; defaults change nothing).

    It also implements the sensitivity scorer's preferences hook (:meth:`adjust`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, ignored_types=(cached_property,))
    sensitivity_offset: float = Field(
        0.0, ge=-1.0, le=1.0, description="Raise (>0) or lower (<0) every new memory's "
        "sensitivity: s + δ(1−s) for δ > 0, s(1+δ) for δ < 0.")
    entity_offsets: dict[str, float] = Field(
        default_factory=dict, description="Per-entity offsets, applied like sensitivity_offset "
        "to memories mentioning the entity (whole words, case-insensitive).")
    private_entities: tuple[str, ...] = Field(
        (), description="Entities whose memories are private: sensitivity ≥ private_floor, "
        "inherited by memories derived from them.")
    private_floor: float = Field(0.9, ge=0.0, le=1.0,
                                 description="Sensitivity of private memories.")
    blocked_entities: tuple[str, ...] = Field(
        (), description="Memories mentioning these are never stored.")
    blocked_conversations: tuple[str, ...] = Field(
        (), description="Turns of these conversations are never stored.")
    retention_days: dict[MemoryType, int] = Field(
        default_factory=dict, description="Per-type retention horizon in days: maintenance "
        "archives older memories of that type.")
    private_mode: bool = Field(False, strict=True, description="Hide memories above "
                               "private_threshold from retrieval and recall unless a consent "
                               "grant covers them.")
    private_threshold: float = Field(0.5, ge=0.0, le=1.0,
                                     description="σ of private mode.")
    consents: tuple[ConsentGrant, ...] = Field((), description="Active consent grants.")

    @field_validator("entity_offsets")
    @classmethod
    def _offsets(cls, v: dict[str, float]) -> dict[str, float]:
        if any(not -1.0 <= x <= 1.0 for x in v.values()):
            raise ValueError("entity offsets must lie in [-1, 1]")
        return v

    @field_validator("retention_days")
    @classmethod
    def _days(cls, v: dict[MemoryType, int]) -> dict[MemoryType, int]:
        if any(d <= 0 for d in v.values()):
            raise ValueError("retention horizons must be positive numbers of days")
        return v

    @cached_property
    def _private(self) -> re.Pattern[str] | None:
        return _pattern(self.private_entities)

    @cached_property
    def _blocked(self) -> re.Pattern[str] | None:
        return _pattern(self.blocked_entities)

    def mentions_private(self, text: str) -> bool:
        """Whether ``text`` mentions a private entity."""
        return self._private is not None and bool(self._private.search(text.casefold()))

    def blocks(self, text: str, conversation: str | None) -> bool:
        """Whether a memory with this text/conversation must not be stored."""
        if conversation is not None and conversation in self.blocked_conversations:
            return True
        return self._blocked is not None and bool(self._blocked.search(text.casefold()))

    @staticmethod
    def _shift(s: float, delta: float) -> float:
        return s + delta * (1.0 - s) if delta >= 0 else s * (1.0 + delta)

    def adjust(self, score: float, detections: object, text: str) -> float:
        """The scorer hook: offsets, then the private floor."""
        s = self._shift(score, self.sensitivity_offset)
        folded = text.casefold()
        for entity, delta in sorted(self.entity_offsets.items()):
            if (p := _pattern([entity])) is not None and p.search(folded):
                s = self._shift(s, delta)
        if self.mentions_private(text):
            s = max(s, self.private_floor)
        return min(1.0, max(0.0, s))

    def recallable(self, node: MemoryNode, now: datetime) -> bool:
        """Private mode: may ``node`` be recalled now?"""
        if not self.private_mode or node.sensitivity <= self.private_threshold:
            return True
        return any(c.covers(node, now) for c in self.consents)
