"""A synchronous store call made on a thread that runs an event loop is refused.

It would block the loop for the whole call (an embedding, a transaction); the error
names the async twin to await instead, as LangGraph's stores do. The twins run the
synchronous method in a worker thread, where no loop runs, so they pass; so does a store
built with ``allow_sync_in_loop=True``, and every call made outside a loop.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

from mars_core import MarsError, MemoryStore, SyncInAsyncError
from mars_core.testing import StoreFactory

KEY = b"k" * 32


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=KEY)


def test_a_sync_call_inside_a_running_loop_names_its_async_twin(mk: StoreFactory) -> None:
    store = mk()

    async def go() -> None:
        with pytest.raises(SyncInAsyncError, match=r"await store\.aadd\(\.\.\.\)"):
            store.add("Ana moved to Lisbon")
        with pytest.raises(SyncInAsyncError, match=r"await store\.aretrieve\(\.\.\.\)"):
            store.retrieve("Ana")
        node = await store.aadd("Ana moved to Lisbon")  # the twin runs in a worker thread
        assert [h.id for h in await store.aretrieve("where is Ana")] == [node.id]

    asyncio.run(go())
    assert [n.content for n in store.list()] == ["Ana moved to Lisbon"]  # nothing added twice
    store.close()


def test_the_error_is_ours_and_asyncios() -> None:
    assert issubclass(SyncInAsyncError, MarsError)
    assert issubclass(SyncInAsyncError, asyncio.InvalidStateError)  # what LangGraph raises
    assert issubclass(SyncInAsyncError, RuntimeError)


def test_every_guarded_method_has_the_twin_it_names(mk: StoreFactory) -> None:
    store = mk()
    guarded = [name for name, fn in inspect.getmembers(MemoryStore, inspect.isfunction)
               if getattr(fn, "__mars_call__", False) and not inspect.iscoroutinefunction(fn)]
    assert "add" in guarded and "namespaces" in guarded
    for name in guarded:
        assert inspect.iscoroutinefunction(getattr(MemoryStore, "a" + name)), name

    async def go() -> None:
        for name in guarded:
            with pytest.raises(SyncInAsyncError, match=rf"store\.a{name}\("):
                getattr(store, name)()  # refused before the arguments are even read

    asyncio.run(go())
    store.close()


def test_allow_sync_in_loop_opts_out(mk: StoreFactory) -> None:
    store = mk(allow_sync_in_loop=True)

    async def go() -> str:
        return store.add("blocking on purpose").content

    assert asyncio.run(go()) == "blocking on purpose"
    store.close()


def test_the_opt_out_must_be_a_bool(mk: StoreFactory) -> None:
    from mars_core import ConfigError

    with pytest.raises(ConfigError, match="allow_sync_in_loop"):
        mk(allow_sync_in_loop="yes")


def test_outside_a_loop_and_in_other_threads_nothing_changes(mk: StoreFactory) -> None:
    store = mk()
    store.add("plain synchronous code")

    async def go() -> int:
        return len(await asyncio.to_thread(store.list))  # a worker thread runs no loop

    assert asyncio.run(go()) == 1
    store.close()
