"""The user's own LlamaIndex models as the store's embedder and model hooks.

* :func:`embedder_from` turns any LlamaIndex ``BaseEmbedding`` into the store's
  :class:`~mars_core.embeddings.Embedder` (it is
  :class:`mars_core.embedders.LlamaIndexEmbedding`; the manifest records its name).
* :func:`summariser_from` turns any LlamaIndex ``LLM`` into the reflection summariser
  (:class:`mars_core.knowledge.summarise.CallableSummariser`: the seed's prompt, identifiers
  masked again in the reply). It is only called when a forgetting policy
  consolidates memories; the write and read paths stay LLM-free.
* :func:`open_store` builds a :class:`~mars_core.store.MemoryStore` from both (on disk
  when given a path).

Examples:
    >>> from llama_index.core.embeddings import MockEmbedding
    >>> from llama_index.core.llms import MockLLM
    >>> store = open_store(embed_model=MockEmbedding(embed_dim=8), llm=MockLLM(), budget=500)
    >>> store.embedder.dim, store.stats()["embedder"]
    (8, 'llamaindex:MockEmbedding:unknown')
    >>> store.close()
    >>> summariser_from(MockLLM()).name  # what open_store(llm=...) makes the summariser
    'llamaindex:MockLLM'
"""

from __future__ import annotations

import os
from typing import Any

from mars_core.embedders import LlamaIndexEmbedding
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.summarise import CallableSummariser
from mars_core.store import MemoryStore

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms.llm import LLM
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc

__all__ = ["embedder_from", "open_store", "summariser_from"]


def embedder_from(embed_model: BaseEmbedding, *, name: str | None = None) -> LlamaIndexEmbedding:
    """A LlamaIndex embedding model as the store's embedder.

    Args:
        embed_model: any ``BaseEmbedding`` (e.g. ``Settings.embed_model``).
        name: recorded in the store manifest (default ``llamaindex:<class>:<model>``).

    Raises:
        ValidationError: ``embed_model`` is not a LlamaIndex ``BaseEmbedding``.

    Examples:
        >>> from llama_index.core.embeddings import MockEmbedding
        >>> embedder_from(MockEmbedding(embed_dim=4)).embed(["hi"]).shape
        (1, 4)
    """
    return LlamaIndexEmbedding(embed_model, name=name)


def summariser_from(llm: LLM, *, name: str | None = None) -> CallableSummariser:
    """A LlamaIndex LLM as the reflection summariser (``llm.complete(prompt).text``).

    Args:
        llm: any LlamaIndex ``LLM``.
        name: recorded in the audit parameters (default ``llamaindex:<class>``).

    Raises:
        ValidationError: ``llm`` is not a LlamaIndex ``LLM``.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> s = summariser_from(MockLLM(max_tokens=2))
        >>> s(["We meet on Monday.", "Standup is Monday."], target_tokens=5)
        'text text'
    """
    if not isinstance(llm, LLM):
        raise ValidationError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")

    def complete(prompt: str) -> str:
        return llm.complete(prompt).text

    return CallableSummariser(complete, name=name or f"llamaindex:{type(llm).__name__}")


def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    embed_model: BaseEmbedding | None = None,
    llm: LLM | None = None,
    **kwargs: Any,
) -> MemoryStore:
    """A store using the user's LlamaIndex models (on disk under ``path`` when given).

    Args:
        path: a directory for ``MemoryStore.open``; ``None``: an in-memory store.
        embed_model: the embedder (default: the store's default, ``HashingEmbedder``).
        llm: the reflection summariser (default: the deterministic extractive one).
        **kwargs: passed to ``MemoryStore`` (``budget=``, ``policy=``, ``clock=``, ...).

    Raises:
        ValidationError: a model of the wrong kind.
    """
    if embed_model is not None:
        kwargs["embedder"] = embedder_from(embed_model)
    if llm is not None:
        kwargs["summariser"] = summariser_from(llm)
    return MemoryStore(**kwargs) if path is None else MemoryStore.open(path, **kwargs)
