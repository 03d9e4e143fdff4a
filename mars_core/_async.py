"""Async twins written once: ``aadd = asyncify(add)`` in a class body, and the guard
that refuses the synchronous method on a thread that runs an event loop.

The twin runs the synchronous method in a worker thread (``asyncio.to_thread``), so the
store's lock serialises it with every other call and an event loop is never blocked.
No loop runs in that worker thread, so :func:`refuse_in_loop` lets the twin through.

Examples:
    >>> import asyncio
    >>> class C:
    ...     def double(self, x: int) -> int:
    ...         return 2 * x
    ...     adouble = asyncify(double)
    >>> asyncio.run(C().adouble(21))
    42
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

from mars_core.errors import SyncInAsyncError

__all__ = ["asyncify", "refuse_in_loop", "sync_in_loop_allowed"]

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")

_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("mars_sync_in_loop",
                                                               default=False)


def asyncify(
    fn: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """Make the async twin of a method (same signature, awaited in a worker thread)."""

    @functools.wraps(fn)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, self, *args, **kwargs)

    twin.__name__ = twin.__qualname__ = "a" + fn.__name__
    twin.__doc__ = f"Async twin of :meth:`{fn.__name__}` (runs it in a worker thread)."
    return twin


def refuse_in_loop(owner: str, method: str, opt_out: str) -> None:
    """Refuse a synchronous call made on a thread whose event loop is running.

    Args:
        owner: the class the user called (for the message).
        method: the synchronous method; its twin is ``"a" + method``.
        opt_out: how to allow such calls anyway (for the message).

    Raises:
        SyncInAsyncError: an event loop runs on this thread.

    Examples:
        >>> refuse_in_loop("MemoryStore", "add", "")  # no loop here: nothing happens
        >>> async def inside() -> None:
        ...     refuse_in_loop("MemoryStore", "add", "")
        >>> try:
        ...     asyncio.run(inside())
        ... except SyncInAsyncError as exc:
        ...     print(str(exc).split("; ")[1])
        use `await store.aadd(...)`
    """
    if _ALLOWED.get():
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise SyncInAsyncError(
        f"synchronous {owner}.{method}(...) called inside a running event loop, which it "
        f"would block; use `await store.a{method}(...)`{opt_out}")


@contextlib.contextmanager
def sync_in_loop_allowed() -> Iterator[None]:
    """Let synchronous store calls through inside this block, loop or not.

    For the adapters' constructors, which cannot await and read the store once (a
    LangGraph ``MarsStore`` builds its key index; a LlamaIndex memory finds its
    conversation number).

    Examples:
        >>> async def inside() -> str:
        ...     with sync_in_loop_allowed():
        ...         refuse_in_loop("MemoryStore", "add", "")
        ...     return "allowed"
        >>> asyncio.run(inside())
        'allowed'
    """
    token = _ALLOWED.set(True)
    try:
        yield
    finally:
        _ALLOWED.reset(token)
