"""Vector indexes: derived from the record store, rebuildable (see :mod:`mars_core.index.base`).

:class:`NumpyIndex` is always there; ``ChromaIndex`` (extra ``chroma``) and
``QdrantIndex`` (extra ``qdrant``) are imported on first access, so importing this
package never imports a client library; without it, the access raises
:class:`~mars_core.errors.ExtraNotInstalledError` naming the extra.

Examples:
    >>> from mars_core.index import NumpyIndex
    >>> NumpyIndex().name
    'numpy'
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from mars_core.errors import ExtraNotInstalledError
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexBase,
    IndexCapabilities,
    IndexSource,
    Not,
    Or,
    Range,
    VectorIndex,
    matches,
)
from mars_core.index.numpy import NumpyIndex

if TYPE_CHECKING:
    from mars_core.index.chroma import ChromaIndex
    from mars_core.index.qdrant import QdrantIndex

_LAZY = {"ChromaIndex": ("mars_core.index.chroma", "chroma", "chromadb"),
         "QdrantIndex": ("mars_core.index.qdrant", "qdrant", "qdrant_client")}

__all__ = [
    "And",
    "ChromaIndex",
    "Eq",
    "Filter",
    "In",
    "IndexBase",
    "IndexCapabilities",
    "IndexSource",
    "Not",
    "NumpyIndex",
    "Or",
    "QdrantIndex",
    "Range",
    "VectorIndex",
    "matches",
]


def __getattr__(name: str) -> Any:
    """``ChromaIndex`` / ``QdrantIndex`` on first access (PEP 562).

    Raises:
        ExtraNotInstalledError: the index's client library is not installed.
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
