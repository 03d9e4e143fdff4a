"""Fixtures of the LangChain adapter tests (helpers live in ``lc_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lc_helpers import ModelInputs

from mars_core import FakeClock, HashingEmbedder, MemoryStore


@pytest.fixture
def recorder() -> ModelInputs:
    return ModelInputs()


@pytest.fixture
def lc_store() -> Iterator[MemoryStore]:
    """A fast in-memory store with the hashing embedder and a fake clock."""
    store = MemoryStore(budget=4000, embedder=HashingEmbedder(), clock=FakeClock(),
                        audit_key=bytes(range(32)))
    yield store
    store.close()
