"""The LangGraph store: :class:`MarsStore`, a LangGraph ``BaseStore`` whose items are MaRS
memories (:mod:`langchain_mars.store.mars_store` documents the contract it keeps).

The package holds the store and its pure parts: the contract checks
(:mod:`~langchain_mars.store.contract`), TTL (:mod:`~langchain_mars.store.ttl`), item
encoding (:mod:`~langchain_mars.store.items`), filters
(:mod:`~langchain_mars.store.filters`) and the index's embedder
(:mod:`~langchain_mars.store.embedding`). Importing it without LangGraph raises
:class:`~mars_core.errors.ExtraNotInstalledError` naming the ``langgraph`` extra.
"""

from __future__ import annotations

from mars_core.errors import ExtraNotInstalledError

try:
    import langgraph.store.base  # noqa: F401 - the extra, checked before the modules below
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langgraph", "langgraph") from exc

from langchain_mars.store.contract import InvalidNamespaceLabelError
from langchain_mars.store.embedding import index_embedder
from langchain_mars.store.items import MARKER as MARKER
from langchain_mars.store.mars_store import MarsStore

__all__ = ["InvalidNamespaceLabelError", "MarsStore", "index_embedder"]
