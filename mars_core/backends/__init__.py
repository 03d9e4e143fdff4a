"""Vector backends behind one small protocol (see :mod:`mars_core.backends.base`).

Example:
    >>> from mars_core.backends import InMemoryBackend
    >>> InMemoryBackend().name
    'inmemory'
"""

from mars_core.backends.base import (
    And,
    BackendBase,
    DeleteOp,
    Eq,
    Filter,
    In,
    Not,
    Or,
    Range,
    Record,
    ScoredRecord,
    UpsertOp,
    VectorBackend,
    WriteBatch,
    matches,
)
from mars_core.backends.memory import InMemoryBackend

__all__ = [
    "And",
    "BackendBase",
    "DeleteOp",
    "Eq",
    "Filter",
    "In",
    "InMemoryBackend",
    "Not",
    "Or",
    "Range",
    "Record",
    "ScoredRecord",
    "UpsertOp",
    "VectorBackend",
    "WriteBatch",
    "matches",
]
