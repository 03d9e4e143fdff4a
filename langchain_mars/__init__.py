"""LangChain and LangGraph adapters for mars-memory (thin: no memory logic of their own).

Everything LangChain-specific is here; the memory itself is :mod:`mars_core`.

* :class:`MarsRetriever` — a ``BaseRetriever`` over a store.
* :class:`MarsChatMessageHistory` — for ``RunnableWithMessageHistory``.
* :class:`MarsMemoryMiddleware` — recall before the model, observe and reinforce after
  (``langchain.agents.create_agent(..., middleware=[...])``).
* :func:`memory_tools` — ``remember`` / ``recall`` / ``forget`` tools.
* :class:`ChatModelSummariser` — any chat model as the store's reflection summariser.
* :class:`MarsStore` — a LangGraph ``BaseStore`` (extra ``langgraph``).
* :class:`MarsMemory` — legacy ``BaseMemory`` for classic chains (extra ``langchain-classic``).
* :mod:`langchain_mars.graph` — the Oblivion memory nodes for LangGraph (extra ``langgraph``).

Examples:
    >>> from mars_core import MemoryStore
    >>> from langchain_mars import MarsRetriever
    >>> store = MemoryStore(budget=200)
    >>> _ = store.add("Ana lives in Lisbon", type="semantic")
    >>> [d.page_content for d in MarsRetriever(store=store, k=1).invoke("Where is Ana?")]
    ['Ana lives in Lisbon']
    >>> store.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_mars._namespace import NamespaceTemplate
from langchain_mars.chat_history import MarsChatMessageHistory
from langchain_mars.middleware import MarsMemoryMiddleware, used_memories
from langchain_mars.retrievers import MarsRetriever
from langchain_mars.summariser import ChatModelSummariser
from langchain_mars.tools import memory_tools

if TYPE_CHECKING:
    from langchain_mars.classic import MarsMemory
    from langchain_mars.graph import MarsMemoryState, memory_messages, with_mars_memory
    from langchain_mars.models import decomposer_from_chat_model, judge_from_chat_model
    from langchain_mars.store import MarsStore

__all__ = [
    "ChatModelSummariser",
    "MarsChatMessageHistory",
    "MarsMemory",
    "MarsMemoryMiddleware",
    "MarsMemoryState",
    "MarsRetriever",
    "MarsStore",
    "NamespaceTemplate",
    "decomposer_from_chat_model",
    "judge_from_chat_model",
    "memory_messages",
    "memory_tools",
    "used_memories",
    "with_mars_memory",
]

_LAZY = {
    "MarsMemory": "langchain_mars.classic",
    "MarsStore": "langchain_mars.store",
    "MarsMemoryState": "langchain_mars.graph",
    "memory_messages": "langchain_mars.graph",
    "with_mars_memory": "langchain_mars.graph",
    "decomposer_from_chat_model": "langchain_mars.models",
    "judge_from_chat_model": "langchain_mars.models",
}


def __getattr__(name: str) -> Any:
    """Import the extras' classes on first use (each names its extra when missing)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'langchain_mars' has no attribute {name!r}")
