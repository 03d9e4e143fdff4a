"""LangChain tools ``remember``, ``recall`` and ``forget`` over a MaRS store.

``memory_tools(store, namespace=...)`` builds the three tools for tool-calling agents
(``create_agent(model, tools=memory_tools(store))``). Each is a thin call of the
framework-free :class:`mars_core.tools.MemoryTools` (which the MCP server serves too):

* ``remember(content, memory_type="semantic")`` → ``store.add`` (source ``"agent"``);
  returns the new memory's id.
* ``recall(query)`` → ``store.retrieve(query, k=..., budget_tokens=...)``; returns one
  line per memory, ``- [<id>] (<type>) <text>``, or ``No memories found.``
* ``forget(memory_id)`` → ``store.forget`` (to the archive, still explainable), only
  for a memory of the tool's namespace (another namespace's id is "not found").

The namespace is fixed or a template filled from the run (``config["configurable"]``
and the LangGraph runtime context; see :mod:`langchain_mars._namespace`). Errors of ours
(:class:`~mars_core.errors.MarsError`) become ``ToolException`` s, which the tools hand
back to the model as their result (``handle_tool_error=True``), and so do arguments the
tool's schema refuses (``content=5``: the message names the argument); with
``raise_errors=True`` the typed error (a :class:`~mars_core.errors.ValidationError` for
bad arguments) propagates instead. Async calls run the same code in a worker thread.

Examples:
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> remember, recall, forget = memory_tools(store)
    >>> remember.invoke({"content": "Ana's flight is on Friday"}).startswith("Remembered")
    True
    >>> recall.invoke({"query": "When is Ana's flight?"}).split(") ", 1)[1]
    "Ana's flight is on Friday"
    >>> forget.invoke({"memory_id": "nope"})
    "no memory with id 'nope' in namespace 'default'"
    >>> store.close()
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from mars_core.engine.args import collection
from mars_core.errors import ExtraNotInstalledError, MarsError, ValidationError
from mars_core.store import MemoryStore
from mars_core.tools import MemoryKind, MemoryTools

try:
    import pydantic
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", "langchain-core") from exc

from langchain_mars._namespace import as_template, resolve_namespace, run_config, run_runtime

__all__ = ["memory_tools"]

TOOL_NAMES = ("remember", "recall", "forget")


class _Tools:
    """The three tool bodies: :class:`~mars_core.tools.MemoryTools` in the namespace of
    the run, errors as ``ToolException`` s."""

    def __init__(self, core: MemoryTools, namespace: Any, raise_errors: bool) -> None:
        self.core = core
        self.namespace = as_template(namespace)
        self.raise_errors = raise_errors

    def _ns(self) -> str | None:
        return resolve_namespace(self.namespace, config=run_config(), runtime=run_runtime())

    def _guard(self, fn: Callable[[], str]) -> str:
        try:
            return fn()
        except MarsError as exc:
            if self.raise_errors:
                raise
            raise ToolException(str(exc)) from exc

    def remember(self, content: str, memory_type: MemoryKind = "semantic") -> str:
        """Store a fact, preference, plan or event about the user for later conversations."""
        return self._guard(lambda: self.core.remember(content, memory_type,
                                                      namespace=self._ns()))

    def recall(self, query: str) -> str:
        """Search long-term memory for what is known about the query."""
        return self._guard(lambda: self.core.search(query, namespace=self._ns()))

    def forget(self, memory_id: str) -> str:
        """Forget a memory by its id (as shown by recall) when it is wrong or outdated."""
        return self._guard(lambda: self.core.forget(memory_id, namespace=self._ns()))


def _tool(fn: Callable[..., str], raise_errors: bool) -> StructuredTool:
    async def coroutine(*args: Any, **kwargs: Any) -> str:
        return await asyncio.to_thread(fn, *args, **kwargs)

    def bad_arguments(exc: pydantic.ValidationError | Any) -> str:
        """Arguments the tool's schema refuses: our error, or its message for the model."""
        error = ValidationError.from_pydantic(exc, f"{fn.__name__} arguments") \
            if isinstance(exc, pydantic.ValidationError) else \
            ValidationError(f"invalid {fn.__name__} arguments")
        if raise_errors:
            raise error
        return str(error)

    coroutine.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return StructuredTool.from_function(func=fn, coroutine=coroutine, name=fn.__name__,
                                        description=fn.__doc__, handle_tool_error=True,
                                        handle_validation_error=bad_arguments)


def memory_tools(store: MemoryStore, *, namespace: Any = None, k: int = 5,
                 budget_tokens: int | None = None, raise_errors: bool = False,
                 include: tuple[str, ...] = TOOL_NAMES) -> list[BaseTool]:
    """The ``remember``, ``recall`` and ``forget`` tools over ``store`` (see the module).

    Args:
        store: the memory store.
        namespace: a fixed namespace, a template such as ``("memories", "{user_id}")``,
            or None (the store's default namespace).
        k: the most memories ``recall`` returns.
        budget_tokens: the token budget of ``recall`` (None: the store's default).
        raise_errors: let typed errors propagate instead of returning them to the model.
        include: which tools, in order.

    Raises:
        ValidationError: bad ``k``, namespace or tool names.
    """
    if not isinstance(store, MemoryStore):
        raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValidationError("k must be a positive integer")
    if budget_tokens is not None and (not isinstance(budget_tokens, int)
                                      or isinstance(budget_tokens, bool) or budget_tokens <= 0):
        raise ValidationError("budget_tokens must be a positive integer or None")
    names = collection(include, "include")
    if not all(isinstance(n, str) for n in names):
        raise ValidationError(f"include must name some of {TOOL_NAMES}, got {include!r}")
    unknown = set(names) - set(TOOL_NAMES)
    if unknown or not include:
        raise ValidationError(f"include must name some of {TOOL_NAMES}, got {include!r}")
    bodies = _Tools(MemoryTools(store, k=k, budget_tokens=budget_tokens), namespace,
                    raise_errors)
    return [_tool(getattr(bodies, name), raise_errors) for name in names]
