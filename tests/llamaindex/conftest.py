"""Fixtures of the LlamaIndex adapter tests: fast stores and a recording mock LLM."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")

from llama_index.core.llms import MockFunctionCallingLLM
from llamaindex_helpers import Recorder

from mars_core import FakeClock, HashingEmbedder, MemoryStore


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def llm(recorder: Recorder) -> MockFunctionCallingLLM:
    return MockFunctionCallingLLM(response_generator=recorder)


@pytest.fixture
def mstore(key: bytes) -> Iterator[Callable[..., MemoryStore]]:
    """Factory of fast in-memory stores (hashing embedder, fake clock, fixed key)."""
    made: list[MemoryStore] = []

    def factory(budget: int = 4000, **kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        kw.setdefault("audit_key", key)
        kw.setdefault("embedder", HashingEmbedder())
        store = MemoryStore(budget=budget, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()
