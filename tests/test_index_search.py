"""A search's vector queries run beside its full-text search (``IndexSync.search``).

An index that declares ``concurrent_queries`` is loaded on the caller's thread, then
queried on a second thread while the caller reads the records; the answers are those of
one query after the other, and an error of either side reaches the caller once both
ended. The overlap is forced with events, never timed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from mars_core import HashingEmbedder, MarsBackendError, MemoryStore
from mars_core.index.base import VectorQuery
from mars_core.index.numpy import NumpyIndex
from mars_core.model import MemoryStatus
from mars_core.testing import index_sync

ACTIVE = MemoryStatus.ACTIVE
WAIT = 10.0
"""Seconds an event is waited for before the test fails (never reached when it passes)."""


class _Overlapping(NumpyIndex):
    """Numpy, declared concurrent: each query first waits for ``go`` (set by the
    caller's side) and notes the thread it ran on; ``fail`` makes it raise."""

    capabilities = replace(NumpyIndex.capabilities, concurrent_queries=True)

    def __init__(self) -> None:
        super().__init__()
        self.go, self.threads, self.loaded = threading.Event(), [], []
        self.fail = False

    def _load(self, namespace: str) -> None:
        self.loaded.append(threading.current_thread())
        super()._load(namespace)

    def _query(self, *args: object, **kwargs: object) -> list[tuple[str, float]]:
        self.threads.append(threading.current_thread())
        if not self.go.wait(WAIT):
            raise AssertionError("the query ran before the caller's side began")
        if self.fail:
            raise MarsBackendError("the index is away")
        return super()._query(*args, **kwargs)  # type: ignore[arg-type]


_World = tuple[MemoryStore, _Overlapping]


@pytest.fixture
def world() -> Iterator[_World]:
    index = _Overlapping()
    index.go.set()  # the adds' own reads are not what is tested
    with MemoryStore(index=index, embedder=HashingEmbedder()) as store:
        for text in ("Ana moved to Lisbon", "Bruno plays the cello", "Ana's cat is Tom"):
            store.add(text)
        index.go.clear()
        index.threads.clear()
        yield store, index


def _asks() -> list[VectorQuery]:
    vec = np.asarray(HashingEmbedder().embed(["Where does Ana live?"])[0], dtype=np.float32)
    return [VectorQuery(status, vec, 3) for status in MemoryStatus]


def test_the_queries_run_on_a_second_thread_while_the_caller_reads(world: _World) -> None:
    store, index = world
    sync, asks = index_sync(store), _asks()
    found, mine = sync.search("default", asks, lambda: (index.go.set(),
                                                        threading.current_thread())[1])
    caller = threading.current_thread()
    assert mine is caller and index.loaded[-1] is caller  # load and beside: the caller's
    assert index.threads and all(t is not caller for t in index.threads)
    assert found == [sync.query("default", a.status, a.vector, a.k) for a in asks]
    assert found[0] and not found[1]  # the active ones answer; no archive yet


def test_an_error_of_the_queries_reaches_the_caller_after_its_side_ended(
        world: _World) -> None:
    store, index = world
    index.fail = True
    ran = []
    with pytest.raises(MarsBackendError, match="away"):
        index_sync(store).search("default", _asks(),
                                 lambda: (ran.append(1), index.go.set()))
    assert ran == [1]
    index.fail = False
    assert store.retrieve("Where does Ana live?", read_only=True)  # still usable


def test_an_error_of_the_callers_side_waits_for_the_queries(world: _World) -> None:
    store, index = world

    def boom() -> None:
        index.go.set()
        raise ValueError("the records said no")

    with pytest.raises(ValueError, match="said no"):
        index_sync(store).search("default", _asks(), boom)
    assert index.threads and not any(t.is_alive() for t in index.threads)


def test_an_index_that_searches_in_python_answers_first_on_the_callers_thread() -> None:
    index = NumpyIndex()
    assert not index.capabilities.concurrent_queries
    with MemoryStore(index=index, embedder=HashingEmbedder()) as store:
        store.add("Ana moved to Lisbon")
        order: list[str] = []
        sync = index_sync(store)
        found, _ = sync.search("default", _asks(), lambda: order.append("beside"))
        assert order == ["beside"] and found[0]
