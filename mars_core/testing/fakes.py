"""Counting fakes: :class:`CountingRecords` (a record store that counts its reads) and
:class:`CountingEmbedder` (an embedder that records how it was called)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mars_core.model import (
    MemoryNode,
)
from mars_core.storage.base import (
    RecordStore,
    RecordTxn,
)
from mars_core.testing._common import Vector

__all__ = ["CountingEmbedder", "CountingRecords"]

_COUNTED = frozenset({"memories", "memories_by_id", "memory"})
"""The reads of a record store that return memories (what :class:`CountingRecords`
counts)."""


class _CountingTxn:
    """A transaction that hands every call to another one, counting the memories its
    reads return."""

    def __init__(self, inner: RecordTxn, owner: CountingRecords) -> None:
        self._inner, self._owner = inner, owner

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in _COUNTED:
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = found(*args, **kwargs)
            self._owner.memories_read += 0 if out is None else 1 if isinstance(
                out, MemoryNode) else len(out)
            return out
        return counted


class CountingRecords:
    """A record store that hands everything to another one and counts the memories its
    reads return: how much of a namespace's history a call read.

    Args:
        inner: the record store that keeps the rows (default: SQLite in RAM).

    Attributes:
        memories_read: memories returned by reads so far (set it to 0 to start again).

    Examples:
        >>> from mars_core import MemoryStore
        >>> records = CountingRecords()
        >>> with MemoryStore(records=records) as store:
        ...     _ = store.add("Ana likes tea")
        ...     records.memories_read = 0
        ...     _ = store.retrieve("tea", read_only=True)
        >>> records.memories_read
        0
    """

    def __init__(self, inner: RecordStore | None = None) -> None:
        from mars_core.storage import SQLiteRecordStore

        self.inner = inner if inner is not None else SQLiteRecordStore()
        self.name, self.location = self.inner.name, self.inner.location
        self.capabilities = self.inner.capabilities
        self.memories_read = 0

    @contextlib.contextmanager
    def _counting(self, opened: contextlib.AbstractContextManager[RecordTxn]
                  ) -> Iterator[RecordTxn]:
        with opened as tx:
            yield _CountingTxn(tx, self)

    def read(self) -> contextlib.AbstractContextManager[RecordTxn]:
        """The inner store's snapshot, counted."""
        return self._counting(self.inner.read())

    def write(self, *, durable: bool = True) -> contextlib.AbstractContextManager[RecordTxn]:
        """The inner store's transaction, counted."""
        return self._counting(self.inner.write(durable=durable))

    def next_counter(self) -> int:
        """The inner store's counter."""
        return self.inner.next_counter()

    def purge(self) -> str:
        """The inner store's purge."""
        return self.inner.purge()

    def close(self) -> None:
        """Close the inner store."""
        self.inner.close()


class CountingEmbedder:
    """An embedder that hands the work to another one and records each call's batch.

    Args:
        inner: the embedder that computes the vectors (default: the hashing embedder);
            its ``name`` and ``dim`` are this one's, so a store sees no difference.

    Attributes:
        batches: the number of texts of each ``embed`` call, in order.

    Examples:
        >>> from mars_core import MemoryStore
        >>> counting = CountingEmbedder()
        >>> with MemoryStore(budget=500, embedder=counting) as store:
        ...     _ = store.add_many(["Ana likes tea", "Bo plays jazz", "Cy runs"])
        >>> counting.batches
        [3]
    """

    def __init__(self, inner: Any = None) -> None:
        from mars_core.embeddings import HashingEmbedder

        self.inner = inner if inner is not None else HashingEmbedder()
        self.name: str = self.inner.name
        self.dim: int = self.inner.dim
        self.batches: list[int] = []

    @property
    def calls(self) -> int:
        """How many times ``embed`` was called."""
        return len(self.batches)

    def embed(self, texts: Sequence[str]) -> Vector:
        """The inner embedder's vectors (the call is recorded first)."""
        self.batches.append(len(texts))
        out: Vector = np.asarray(self.inner.embed(texts), dtype=np.float32)
        return out
