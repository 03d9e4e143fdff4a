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
    >>> from mars_core.model import IndexRow
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
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexBase,
    IndexCapabilities,
    IndexSource,
    MetaValue,
    Not,
    Or,
    Range,
    Vector,
    matches,
    unit,
)
from mars_core.model import IndexRow, MemoryStatus

__all__ = ["NumpyIndex"]


_ABSENT = object()
"""The value of a field a row does not hold (equal to nothing)."""

_EXACT = 2.0 ** 53
"""Integers beyond this are not exact as float64: a column holding one is filtered by
:func:`~mars_core.index.base.matches` row by row."""


class _Columns:
    """The rows' fields as arrays, one per key, aligned with the partition's matrix.

    A filter is then one array expression over the rows (:meth:`mask`), with the
    reference semantics of :func:`~mars_core.index.base.matches`: a missing key matches
    no leaf, ``Range`` holds only for numbers (not booleans), ``Not`` of a leaf holds for
    rows without the key. The time column ``created_ts`` is seed 000 §3.2.5's temporal
    index for this exact index: a ``since``/``until`` window is one vectorised
    comparison over it, and only the rows inside are scored.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.values: dict[str, npt.NDArray[np.object_]] = {}
        self.numbers: dict[str, npt.NDArray[np.float64]] = {}
        self.inexact: set[str] = set()

    def grow(self, capacity: int) -> None:
        """Room for ``capacity`` rows."""
        for key, col in self.values.items():
            more = np.full(capacity - self.capacity, _ABSENT, dtype=object)
            self.values[key] = np.concatenate([col, more])
            self.numbers[key] = np.concatenate([self.numbers[key],
                                                np.full(capacity - self.capacity, np.nan)])
        self.capacity = capacity

    def set(self, at: int, fields: Mapping[str, MetaValue]) -> None:
        """Row ``at`` holds ``fields`` (keys it lacks are absent)."""
        for key in fields.keys() - self.values.keys():
            self.values[key] = np.full(self.capacity, _ABSENT, dtype=object)
            self.numbers[key] = np.full(self.capacity, np.nan)
        for key, col in self.values.items():
            value = fields.get(key, _ABSENT)
            col[at] = value
            number = np.nan
            if isinstance(value, int | float) and not isinstance(value, bool):
                number = float(value)
                if isinstance(value, int) and abs(value) > _EXACT:
                    self.inexact.add(key)
            self.numbers[key][at] = number

    def move(self, src: int, dst: int) -> None:
        """Row ``src`` moves to ``dst`` (a drop fills its hole with the last row)."""
        for key, col in self.values.items():
            col[dst] = col[src]
            self.numbers[key][dst] = self.numbers[key][src]
            col[src] = _ABSENT

    def exact(self, flt: Filter) -> bool:
        """Whether :meth:`mask` evaluates ``flt`` exactly (no key holds a huge integer)."""
        if isinstance(flt, Eq | In | Range):
            return flt.key not in self.inexact
        if isinstance(flt, Not):
            return self.exact(flt.clause)
        return all(self.exact(c) for c in flt.clauses)

    def mask(self, flt: Filter, n: int) -> npt.NDArray[np.bool_]:
        """Which of the first ``n`` rows ``flt`` admits."""
        if isinstance(flt, Eq):
            return self._equal(flt.key, flt.value, n)
        if isinstance(flt, In):
            out = np.zeros(n, dtype=bool)
            for value in flt.values:
                out |= self._equal(flt.key, value, n)
            return out
        if isinstance(flt, Range):
            nums = self.numbers.get(flt.key)
            if nums is None:
                return np.zeros(n, dtype=bool)
            col = nums[:n]
            with np.errstate(invalid="ignore"):
                out = ~np.isnan(col)
                for bound, op in ((flt.gt, np.greater), (flt.gte, np.greater_equal),
                                  (flt.lt, np.less), (flt.lte, np.less_equal)):
                    if bound is not None:
                        out &= op(col, bound)
            return out
        if isinstance(flt, And):
            out = np.ones(n, dtype=bool)
            for clause in flt.clauses:
                out &= self.mask(clause, n)
            return out
        if isinstance(flt, Or):
            out = np.zeros(n, dtype=bool)
            for clause in flt.clauses:
                out |= self.mask(clause, n)
            return out
        return ~self.mask(flt.clause, n)

    def _equal(self, key: str, value: MetaValue, n: int) -> npt.NDArray[np.bool_]:
        col = self.values.get(key)
        if col is None:
            return np.zeros(n, dtype=bool)
        # element-wise ``==`` of Python objects, in numpy's loop (the sentinel equals nothing)
        return np.asarray(col[:n] == value, dtype=bool)


class _Partition:
    """One namespace-and-status partition: unit rows, their ids and fields."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.fields: list[dict[str, MetaValue]] = []
        self.mat = np.zeros((8, dim), dtype=np.float32)
        self.columns = _Columns(len(self.mat))

    def put(self, row: IndexRow) -> None:
        at = self.pos.get(row.id)
        if at is None:
            at = len(self.ids)
            if at == len(self.mat):
                self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
                self.columns.grow(len(self.mat))
            self.ids.append(row.id)
            self.fields.append(dict(row.fields))
            self.pos[row.id] = at
        else:
            self.fields[at] = dict(row.fields)
        self.mat[at] = row.vector
        self.columns.set(at, row.fields)

    def drop(self, memory_id: str) -> None:
        at = self.pos.pop(memory_id, None)
        if at is None:
            return
        last = len(self.ids) - 1
        if at != last:  # the last row fills the hole
            self.ids[at], self.fields[at] = self.ids[last], self.fields[last]
            self.mat[at] = self.mat[last]
            self.columns.move(last, at)
            self.pos[self.ids[at]] = at
        else:
            self.columns.set(at, {})
        self.ids.pop()
        self.fields.pop()

    def search(self, q: Vector, k: int, where: Filter | None,
               within: tuple[str, ...] | None = None) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0:
            return []
        rows = np.arange(n)
        if within is not None:
            found = (self.pos.get(i) for i in within)
            rows = np.unique(np.fromiter((p for p in found if p is not None), dtype=np.int64))
        if where is not None and rows.size:
            if self.columns.exact(where):
                rows = rows[self.columns.mask(where, n)[rows]]
            else:
                rows = rows[np.fromiter((matches(where, self.fields[r]) for r in rows),
                                        dtype=bool, count=rows.size)]
        if rows.size == 0:
            return []
        scores = (self.mat[:n] if rows.size == n else self.mat[rows]) @ q
        if k < rows.size:
            top = np.argpartition(-scores, k - 1)[:k]
            kth = scores[top].min()
            top = np.flatnonzero(scores >= kth)  # ties at the boundary: ids decide
        else:
            top = np.arange(rows.size)
        return [(self.ids[rows[i]], float(scores[i])) for i in top if np.isfinite(scores[i])]


class NumpyIndex(IndexBase):
    """Exact, in-process, loaded on demand from the record store (see the module).

    Examples:
        >>> NumpyIndex().capabilities.exact
        True
    """

    name = "numpy"
    capabilities = IndexCapabilities(persistent=False, loads_on_demand=True, shared=False,
                                     exact=True, keeps_deleted=False, columnar_filters=True)
    location = "memory"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._source: IndexSource | None = None
        self._parts: dict[str, dict[MemoryStatus, _Partition]] = {}

    def __repr__(self) -> str:
        return f"NumpyIndex({len(self._parts)} namespaces loaded)"

    def _bind(self, identity: str, dim: int, source: IndexSource,
              recorded: dict[str, int]) -> int:
        """Nothing outlives the process: no stamp, and ``recorded`` does not apply."""
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

    def _load(self, namespace: str) -> None:
        self._namespace(namespace)

    def _query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
               where: Filter | None, *, within: tuple[str, ...] | None = None
               ) -> list[tuple[str, float]]:
        return self._namespace(namespace)[status].search(vector, k, where, within)

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
