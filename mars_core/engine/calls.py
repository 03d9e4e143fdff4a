"""The guard every public call of a :class:`~mars_core.store.MemoryStore` runs under:
refused on an event loop's thread (its async twin runs it in a worker), under the
store's lock, refused once closed, and run again when another process changed a
namespace it read (:func:`public_call`).

Examples:
    On an event loop's thread a call names its async twin, which runs it in a worker;
    a closed store refuses every call:

    >>> import asyncio
    >>> from mars_core import FakeClock, MemoryStore, StoreClosedError, SyncInAsyncError
    >>> store = MemoryStore(clock=FakeClock())
    >>> async def main() -> tuple[str, str]:
    ...     try:
    ...         store.add("Ana moved to Lisbon")
    ...     except SyncInAsyncError as exc:
    ...         refused = str(exc).split("; ")[1].split(" (")[0]
    ...     return refused, (await store.aadd("Ana moved to Lisbon")).content
    >>> asyncio.run(main())
    ('use `await store.aadd(...)`', 'Ana moved to Lisbon')
    >>> store.close()
    >>> store.add("too late")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.StoreClosedError: this MemoryStore is closed; open it again to continue
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

from mars_core._async import refuse_in_loop
from mars_core.errors import ConcurrentWriteError, StoreClosedError

if TYPE_CHECKING:
    from mars_core.engine.engine import Engine

__all__ = ["ATTEMPTS", "Guarded", "public_call"]


class Guarded(Protocol):
    """What :func:`public_call` needs of the object whose method it guards."""

    _allow_sync_in_loop: bool
    _lock: threading.RLock
    _closed: bool
    _depth: int
    _engine: Engine


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=Guarded)


_OPT_OUT = " (or build the store with MemoryStore(..., allow_sync_in_loop=True))"


ATTEMPTS = 5
"""How many times a call runs when another process keeps changing a namespace it read
(:class:`~mars_core.errors.ConcurrentWriteError`; only a record store several
processes write raises it)."""


def public_call(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A public call: refused on a thread that runs an event loop (unless the store
    allows it; its async twin runs it in a worker thread), under the store's lock,
    refused once closed; the outermost call lets the namespace cache drop what it holds
    beyond its capacity and check versions, and runs again (up to :data:`ATTEMPTS`
    times) when another process changed a namespace it read before it committed: the
    failed run wrote nothing and its views were dropped."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if not self._allow_sync_in_loop:
            refuse_in_loop("MemoryStore", method.__name__, _OPT_OUT)
        with self._lock:
            if self._closed:
                raise StoreClosedError("this MemoryStore is closed; open it again to continue")
            outermost = not self._depth
            for attempt in range(1, ATTEMPTS + 1):
                if outermost:
                    self._engine.cache.new_call()
                self._depth += 1
                try:
                    return method(self, *args, **kwargs)
                except ConcurrentWriteError:
                    if not outermost or attempt == ATTEMPTS:
                        raise
                finally:
                    self._depth -= 1
            raise AssertionError("unreachable")  # pragma: no cover

    wrapper.__mars_call__ = True  # type: ignore[attr-defined]  # guarded, has a twin
    return wrapper
