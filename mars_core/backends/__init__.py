"""Vector backends behind one small protocol (see :mod:`mars_core.backends.base`).

:class:`InMemoryBackend` is always there; ``ChromaBackend`` (extra ``chroma``) and
``QdrantBackend`` (extra ``qdrant``) are imported on first access, so importing this
package never imports a client library; without it, the access raises
:class:`~mars_core.errors.ExtraNotInstalledError` naming the extra.

Examples:
    >>> from mars_core.backends import InMemoryBackend
    >>> InMemoryBackend().name
    'inmemory'
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

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
from mars_core.errors import ExtraNotInstalledError

if TYPE_CHECKING:
    from mars_core.backends.chroma import ChromaBackend
    from mars_core.backends.qdrant import QdrantBackend

_LAZY = {"ChromaBackend": ("mars_core.backends.chroma", "chroma", "chromadb"),
         "QdrantBackend": ("mars_core.backends.qdrant", "qdrant", "qdrant_client")}

__all__ = [
    "And",
    "BackendBase",
    "ChromaBackend",
    "DeleteOp",
    "Eq",
    "Filter",
    "In",
    "InMemoryBackend",
    "Not",
    "Or",
    "QdrantBackend",
    "Range",
    "Record",
    "ScoredRecord",
    "UpsertOp",
    "VectorBackend",
    "WriteBatch",
    "matches",
]


def __getattr__(name: str) -> Any:
    """``ChromaBackend`` / ``QdrantBackend`` on first access (PEP 562).

    Raises:
        ExtraNotInstalledError: the backend's client library is not installed.
        AttributeError: any other unknown name.
    """
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra, package = _LAZY[name]
    if importlib.util.find_spec(package) is None:
        raise ExtraNotInstalledError(extra, package)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
