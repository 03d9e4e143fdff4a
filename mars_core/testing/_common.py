"""What the conformance suites share: fixed values and small helpers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from mars_core.model import (
    EpisodicPayload,
    MemoryStatus,
    MemoryType,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
    TaskStatus,
)

__all__ = ["Vector"]

Vector = npt.NDArray[np.float32]

ACTIVE, ARCHIVED = MemoryStatus.ACTIVE, MemoryStatus.ARCHIVED
_T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
_TYPES = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.SOCIAL, MemoryType.TASK)
_AUDIT_KEY = b"conformance-audit-key-0123456789"

def _raises(*exc: type[BaseException], match: str | None = None) -> Any:
    """``pytest.raises(exc, match=match)`` (pytest imported only when a test runs)."""
    import pytest

    return pytest.raises(exc, match=match)


def _skip(reason: str) -> NoReturn:
    import pytest

    pytest.skip(reason)


def _uid(n: int) -> str:
    """A deterministic canonical UUID string; their order is the order of ``n``."""
    return str(uuid.UUID(int=n + 1))


def _payload(mtype: MemoryType) -> EpisodicPayload | SemanticPayload | SocialPayload | TaskPayload:
    if mtype is MemoryType.EPISODIC:
        return EpisodicPayload(event="met Ana", context="café ☕", participants=("Ana", "Bo"),
                               emotional_valence=-0.25)
    if mtype is MemoryType.SEMANTIC:
        return SemanticPayload(concept="Ana", relations=(("worksAt", "Acme"),), confidence=0.75,
                               generality=0.125)
    if mtype is MemoryType.SOCIAL:
        return SocialPayload(entity="Ana", relationship_type="sister",
                             attributes={"city": "Zürich"}, interaction_history=(_uid(90),))
    return TaskPayload(goal="ship it", status=TaskStatus.ACTIVE, dependencies=(_uid(91),),
                       priority=0.875, deadline=_T0 + timedelta(days=3))


def _common_texts() -> list[str]:
    """90 texts where "Ana" is in 80 (a term held by more than an eighth of a namespace
    and by 64 memories at least: a store may sum it only for the memories the rarer terms
    find), "jazz" in 10 and "Porto" in 7; 20 say "harp", 10 of them with "Ana" twice
    (longer: their rarer term scores less, and "Ana" puts them first)."""
    words = "tea river lamp stone cloud piano garden letter".split()
    out = []
    for i in range(70):
        text = " ".join(words[j % len(words)] for j in range(i % 5, i % 5 + 2 + i % 4))
        out.append(f"Ana {text}" + " jazz" * (i % 9 == 0) + " Porto" * (i % 13 == 5))
    return out + ["harp zither"] * 10 + ["harp Ana Ana"] * 10


def _common_only_texts() -> list[str]:
    """64 short texts of "Ana" alone and 60 long ones of "zither" without it: the best
    for "Ana zither" hold the common term only."""
    return ["Ana Ana Ana"] * 64 + ["zither" + " pebble" * 30] * 60
