"""The in-process vector index: exact search over numpy matrices, loaded on demand.

:class:`NumpyIndex` keeps no file. A partition (the active or the archived memories of one
namespace) is a matrix of unit vectors read from the record store the first time that
namespace is queried (:data:`~mars_core.index.base.IndexSource`), then kept up to date by
the store's writes until the store drops the namespace from its cache
(:meth:`NumpyIndex.forget`). So it holds only the namespaces a process serves, its
search is exact (a matrix-vector product), and it is what ``MemoryStore()`` and every
``read_only`` store over a file use; ``MemoryStore.open(path, index="numpy")`` chooses it
for a writer too.

Examples:
    >>> import numpy as np
    >>> from mars_core.model import MemoryStatus
    >>> from mars_core.storage.base import IndexRow
    >>> rows = [IndexRow("a", "u1", MemoryStatus.ACTIVE, np.array([1, 0], np.float32), {}),
    ...         IndexRow("b", "u1", MemoryStatus.ACTIVE, np.array([0, 1], np.float32), {}),
    ...         IndexRow("c", "u2", MemoryStatus.ACTIVE, np.array([1, 0], np.float32), {})]
    >>> index = NumpyIndex()
    >>> index.bind("store", 2, lambda ns: [r for r in rows if r.namespace == ns])
    0
    >>> index.query("u1", MemoryStatus.ACTIVE, np.array([1, 0.2], np.float32), k=5)[0][0]
    'a'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from mars_core.index.base import (
    Filter,
    IndexBase,
    IndexCapabilities,
    IndexSource,
    MetaValue,
    Vector,
    matches,
    unit,
)
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow

__all__ = ["NumpyIndex"]


class _Partition:
    """One namespace-and-status partition: unit rows, their ids and fields."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.fields: list[dict[str, MetaValue]] = []
        self.mat = np.zeros((8, dim), dtype=np.float32)

    def put(self, row: IndexRow) -> None:
        at = self.pos.get(row.id)
        if at is None:
            at = len(self.ids)
            if at == len(self.mat):
                self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
            self.ids.append(row.id)
            self.fields.append(dict(row.fields))
            self.pos[row.id] = at
        else:
            self.fields[at] = dict(row.fields)
        self.mat[at] = row.vector

    def drop(self, memory_id: str) -> None:
        at = self.pos.pop(memory_id, None)
        if at is None:
            return
        last = len(self.ids) - 1
        if at != last:  # the last row fills the hole
            self.ids[at], self.fields[at] = self.ids[last], self.fields[last]
            self.mat[at] = self.mat[last]
            self.pos[self.ids[at]] = at
        self.ids.pop()
        self.fields.pop()

    def search(self, q: Vector, k: int, where: Filter | None) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0:
            return []
        scores = self.mat[:n] @ q
        if where is not None:
            allowed = np.fromiter((matches(where, f) for f in self.fields), dtype=bool, count=n)
            scores = np.where(allowed, scores, -np.inf)
        if k < n:
            top = np.argpartition(-scores, k - 1)[:k]
            kth = scores[top].min()
            top = np.flatnonzero(scores >= kth)  # ties at the boundary: ids decide
        else:
            top = np.arange(n)
        return [(self.ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]


class NumpyIndex(IndexBase):
    """Exact, in-process, loaded on demand from the record store (see the module).

    Examples:
        >>> NumpyIndex().capabilities.exact
        True
    """

    name = "numpy"
    capabilities = IndexCapabilities(persistent=False, loads_on_demand=True, shared=False,
                                     exact=True, keeps_deleted=False)
    location = "memory"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._source: IndexSource | None = None
        self._parts: dict[str, dict[MemoryStatus, _Partition]] = {}

    def __repr__(self) -> str:
        return f"NumpyIndex({len(self._parts)} namespaces loaded)"

    def _bind(self, identity: str, dim: int, source: IndexSource) -> int:
        self._source, self._parts = source, {}
        return 0

    def _namespace(self, namespace: str) -> dict[MemoryStatus, _Partition]:
        parts = self._parts.get(namespace)
        if parts is None:
            assert self._source is not None and self.dim is not None
            parts = {s: _Partition(self.dim) for s in MemoryStatus}
            for row in self._source(namespace):
                parts[row.status].put(IndexRow(row.id, row.namespace, row.status,
                                               unit(row.vector), row.fields))
            self._parts[namespace] = parts
        return parts

    def _upsert(self, rows: list[IndexRow], new: bool) -> None:
        for row in rows:
            parts = self._parts.get(row.namespace)
            if parts is None:  # not loaded here: it is read fresh when first queried
                continue
            for status, part in parts.items():
                if status is row.status:
                    part.put(row)
                else:
                    part.drop(row.id)

    def _delete(self, namespace: str, ids: list[str]) -> None:
        for part in self._parts.get(namespace, {}).values():
            for memory_id in ids:
                part.drop(memory_id)

    def _query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
               where: Filter | None) -> list[tuple[str, float]]:
        return self._namespace(namespace)[status].search(vector, k, where)

    def _mark(self, applied: int) -> None:
        """Nothing to remember: the index is read from the records, never caught up."""

    def forget(self, namespace: str) -> None:
        """Drop a namespace's matrices (read again when next queried)."""
        with self._lock:
            self._parts.pop(namespace, None)

    def _clear(self) -> None:
        self._parts = {}

    def _compact(self, namespaces: list[str]) -> str:
        for ns in namespaces:
            self._parts.pop(ns, None)
        return "numpy: in memory only, nothing on disk"

    def _release(self) -> None:
        """Drop every loaded matrix."""
        self._parts = {}

    def loaded(self) -> Sequence[str]:
        """The namespaces whose matrices this process holds (for tests and stats)."""
        return sorted(self._parts)
