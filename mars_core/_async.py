"""Async twins written once: ``aadd = asyncify(add)`` in a class body.

The twin runs the synchronous method in a worker thread (``asyncio.to_thread``), so the
store's lock serialises it with every other call and an event loop is never blocked.

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
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["asyncify"]

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


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
