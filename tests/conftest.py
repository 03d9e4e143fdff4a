"""Shared fixtures: a fake clock, a fixed audit key and store factories."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from mars_core.clock import FakeClock
from mars_core.store import MemoryStore

# CI runs must not depend on luck: every property test explores the same examples each
# run (set HYPOTHESIS_PROFILE=explore locally to search new ones).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

AUDIT_KEY = bytes(range(32))
"""A fixed 32-byte audit key, so keyed hashes and the audit chain are reproducible."""


@pytest.fixture
def clock() -> FakeClock:
    """A fresh fake clock at 2026-01-01T00:00:00Z."""
    return FakeClock()


@pytest.fixture
def key() -> bytes:
    """The fixed audit key."""
    return AUDIT_KEY


@pytest.fixture
def make_store(key: bytes) -> Iterator[Callable[..., MemoryStore]]:
    """Factory of in-memory stores: ``make_store(budget=..., **config_or_ctor_kwargs)``.

    Every store gets its own ``FakeClock`` (unless ``clock=`` is given) and the fixed key;
    all are closed at teardown.
    """
    made: list[MemoryStore] = []

    def factory(budget: int = 8000, **kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        kw.setdefault("audit_key", key)
        store = MemoryStore(budget=budget, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def open_store(key: bytes) -> Iterator[Callable[..., MemoryStore]]:
    """Factory of persisted stores: ``open_store(path, **kw)`` via ``MemoryStore.open``."""
    made: list[MemoryStore] = []

    def factory(path: str | os.PathLike[str], **kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        kw.setdefault("audit_key", key)
        store = MemoryStore.open(path, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()
