"""One lock-and-closed guard for every object with a lifecycle (store, backends).

Examples:
    >>> import threading
    >>> class Thing:
    ...     def __init__(self) -> None:
    ...         self._lock, self._closed = threading.RLock(), False
    ...     @guarded
    ...     def ping(self) -> str:
    ...         return "pong"
    >>> t = Thing(); t.ping()
    'pong'
    >>> t._closed = True; t.ping()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.StoreClosedError: this Thing is closed; open it again to continue
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from mars_core.errors import StoreClosedError

__all__ = ["Guarded", "guarded"]


class Guarded(Protocol):
    """Has a re-entrant lock and a closed flag."""

    @property
    def _lock(self) -> AbstractContextManager[Any]:
        """The re-entrant lock."""
        ...

    @property
    def _closed(self) -> bool:
        """Whether the object was closed."""
        ...


G = TypeVar("G", bound=Guarded)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` under ``self._lock``; refuse with StoreClosedError once closed."""

    @functools.wraps(method)
    def wrapper(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            if self._closed:
                raise StoreClosedError(
                    f"this {type(self).__name__} is closed; open it again to continue")
            return method(self, *args, **kwargs)

    return wrapper
