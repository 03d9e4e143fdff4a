"""The embedder of a LangGraph ``IndexConfig`` (its ``embed``: ours, a LangChain
``Embeddings``, a function or a provider string) and the fields it indexes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import (
    IndexConfig,
)
from langgraph.store.base.embed import ensure_embeddings

from mars_core.embeddings import Embedder
from mars_core.errors import (
    ConfigError,
    MarsError,
)

__all__ = ["index_embedder"]

# --- pure helpers -------------------------------------------------------------------------------


def index_embedder(index: IndexConfig | None) -> Embedder | None:
    """The embedder ``index["embed"]`` names, as LangGraph's ``IndexConfig`` takes it: a
    LangChain ``Embeddings``, a function ``texts -> vectors`` (sync or async), or a
    ``"provider:model"`` string; None without ``embed``.

    Raises:
        ConfigError: anything else, a string LangChain cannot resolve here, or a function
            whose vectors are not a ``(texts, dim)`` matrix (each message names the fix).

    Examples:
        >>> index_embedder({"embed": lambda texts: [[1.0, 0.0, 0.5] for _ in texts]}).dim
        3
        >>> index_embedder({"dims": 3}) is None
        True
    """
    if not isinstance(index, Mapping) or index.get("embed") is None:
        return None
    embed = index["embed"]
    from langchain_core.embeddings import Embeddings

    from mars_core.embedders import LangChainEmbeddings

    if isinstance(embed, Embeddings):
        return LangChainEmbeddings(embed)
    if isinstance(embed, str):
        name = f"langgraph:{embed}"
        try:
            embeddings = ensure_embeddings(embed)
        except (ValueError, ImportError) as exc:
            raise ConfigError(
                f"index['embed'] {embed!r}: {exc} Or pass an Embeddings object or a "
                "function texts -> vectors as 'embed'") from None
    elif callable(embed):
        name = "langgraph:" + _callable_name(embed)
        embeddings = ensure_embeddings(_synchronous(embed))
    else:
        raise ConfigError(f"index['embed'] must be a LangChain Embeddings, a function "
                          f"texts -> vectors or a 'provider:model' string, not "
                          f"{type(embed).__name__}")
    try:
        return LangChainEmbeddings(embeddings, name=name)
    except MarsError as exc:
        raise ConfigError(f"index['embed'] {name.removeprefix('langgraph:')}: {exc}; it "
                          "must return one vector (a list of floats) per text") from None


def _callable_name(fn: Any) -> str:
    """``module.qualname`` of a function (the embedder's name in the manifest)."""
    target = getattr(fn, "func", fn)  # a functools.partial: its function
    module = getattr(target, "__module__", None) or "?"
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{qualname}"


def _synchronous(embed: Any) -> Any:
    """A coroutine function as a synchronous one (run on a thread of its own, so it works
    whether or not the calling thread runs an event loop); others unchanged."""
    if not inspect.iscoroutinefunction(embed):
        return embed

    def run(texts: list[str]) -> Any:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, embed(texts)).result()

    run.__qualname__ = getattr(embed, "__qualname__", "embed")
    return run


def _index_fields(index: IndexConfig | None, embedder: Embedder) -> list[str]:
    if index is None:
        return ["$"]
    if not isinstance(index, Mapping):
        raise ConfigError("index must be a langgraph IndexConfig (a mapping such as "
                          "{'fields': ['text']})")
    unknown = set(index) - {"fields", "dims", "embed"}
    if unknown:
        raise ConfigError(f"unknown index keys {sorted(unknown)}; MarsStore reads 'fields', "
                          "'dims' and 'embed'")
    dims = index.get("dims")
    if dims is not None and dims != embedder.dim:
        raise ConfigError(
            f"index dims {dims!r} is not the dimension of the store's embedder "
            f"{embedder.name!r} ({embedder.dim}): set 'dims': {embedder.dim}, or give the "
            f"embedder whose vectors have {dims} dimensions — index['embed'] for a store "
            f"MarsStore makes, embedder= for MemoryStore.open, or MemoryStore.reembed(...) "
            "to move an existing store to it")
    fields = list(index.get("fields") or ["$"])
    if not all(isinstance(f, str) and f for f in fields):
        raise ConfigError("index fields must be non-empty path strings")
    return fields
