"""LlamaIndex adapters over :mod:`mars_core` (the ``llamaindex`` extra).

* :class:`MarsMemory` — a ``BaseMemory`` for ``agent.run(..., memory=m)`` and chat engines;
* :class:`MarsMemoryBlock` — a ``BaseMemoryBlock`` for ``Memory(memory_blocks=[...])``;
* :class:`MarsRetriever` — a ``BaseRetriever`` whose nodes carry memory type, sensitivity, ids;
* :func:`embedder_from`, :func:`summariser_from`, :func:`open_store` — your LlamaIndex
  embedding model and LLM as the store's embedder and summariser.

Importing this package without ``llama-index-core`` raises
:class:`~mars_core.errors.ExtraNotInstalledError` naming the extra.

Examples:
    >>> import llamaindex_mars
    >>> sorted(llamaindex_mars.__all__)[:3]
    ['MarsMemory', 'MarsMemoryBlock', 'MarsRetriever']
"""

from llamaindex_mars.block import MarsMemoryBlock
from llamaindex_mars.hooks import embedder_from, open_store, summariser_from
from llamaindex_mars.memory import MarsMemory
from llamaindex_mars.retriever import MarsRetriever

__all__ = [
    "MarsMemory",
    "MarsMemoryBlock",
    "MarsRetriever",
    "embedder_from",
    "open_store",
    "summariser_from",
]
