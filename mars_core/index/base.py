"""The vector-index contract: derived, rebuildable, never the system of record.

A vector index holds, for each memory, its id, its vector and a few flat filter fields
(type, sensitivity, creation time, conversation: :func:`~mars_core.storage.index_fields`)
— never text. It is partitioned by namespace and status: a query searches the active
(or the archived) memories of one namespace, so a namespace filter is never sent and one
tenant's vectors never rank another's. Everything in it can be rebuilt from the record
store (:mod:`mars_core.storage`), which keeps the vectors too.

A persistent index remembers which store it belongs to (an identity naming the store and
its embedder) and carries a *stamp* (:attr:`VectorIndex.stamp`: that identity and the
epoch of its last emptying). The record store keeps the number of the last change the
index applied (its *position*) beside that stamp; :meth:`VectorIndex.bind` is handed
those positions and trusts the one recorded under its own stamp, so an open reads no
mark from the index. The store catches it up from the change log on open, or rebuilds
it when the position is missing or too old. An index that
*loads on demand* (the in-process :class:`~mars_core.index.numpy.NumpyIndex`) reads a
namespace's rows from the record store when that namespace is first queried and is
never caught up.

Filters are backend-neutral value objects (:class:`Eq`, :class:`In`, :class:`Range`,
:class:`And`, :class:`Or`, :class:`Not`) over flat scalar fields; each index translates
them with a pure function, unit-tested without a server. :func:`matches` is the
reference semantics every translation must agree with.

Examples:
    >>> f = And((Eq("type", "semantic"), Range("sensitivity", lte=0.5)))
    >>> matches(f, {"type": "semantic", "sensitivity": 0.2})
    True
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from mars_core._guard import guarded
from mars_core.errors import ConflictError, EmbeddingMismatchError, ValidationError
from mars_core.model import IndexRow, MemoryStatus

__all__ = [
    "And",
    "Eq",
    "Filter",
    "In",
    "IndexBase",
    "IndexCapabilities",
    "IndexSource",
    "MetaValue",
    "Not",
    "Or",
    "Range",
    "VectorIndex",
    "VectorQuery",
    "as_vector",
    "exact_cosines",
    "matches",
    "unit",
]

MetaValue = str | int | float | bool
"""A flat field value, the common denominator of Chroma and Qdrant payload filters."""

Vector = npt.NDArray[np.float32]

IndexSource = Callable[[str], Iterable[IndexRow]]
"""The record store's rows of one namespace (what an index that loads on demand reads)."""


# --- neutral filter language -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Eq:
    """``fields[key] == value``."""

    key: str
    value: MetaValue


@dataclass(frozen=True, slots=True)
class In:
    """``fields[key] in values`` (values non-empty)."""

    key: str
    values: tuple[MetaValue, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """Numeric range on ``fields[key]``; unset bounds are open."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


@dataclass(frozen=True, slots=True)
class And:
    """All of the clauses hold."""

    clauses: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """At least one clause holds."""

    clauses: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """The clause does not hold."""

    clause: Filter


Filter = Eq | In | Range | And | Or | Not


def matches(flt: Filter | None, fields: Mapping[str, MetaValue]) -> bool:
    """Reference semantics of the filter language (a missing key never matches a leaf)."""
    if flt is None:
        return True
    if isinstance(flt, Eq):
        return flt.key in fields and fields[flt.key] == flt.value
    if isinstance(flt, In):
        return flt.key in fields and fields[flt.key] in flt.values
    if isinstance(flt, Range):
        v = fields.get(flt.key)
        if not isinstance(v, int | float) or isinstance(v, bool):
            return False
        return (
            (flt.gt is None or v > flt.gt)
            and (flt.gte is None or v >= flt.gte)
            and (flt.lt is None or v < flt.lt)
            and (flt.lte is None or v <= flt.lte)
        )
    if isinstance(flt, And):
        return all(matches(c, fields) for c in flt.clauses)
    if isinstance(flt, Or):
        return any(matches(c, fields) for c in flt.clauses)
    return not matches(flt.clause, fields)


# --- vectors -------------------------------------------------------------------------


def as_vector(values: Sequence[float] | npt.NDArray[np.floating[Any]],
              dim: int | None = None) -> Vector:
    """A finite one-dimensional float32 vector (of dimension ``dim`` when given).

    Raises:
        ValidationError: not a finite one-dimensional vector.
        EmbeddingMismatchError: another dimension than ``dim``.
    """
    try:
        arr = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"not a vector: {exc}") from None
    if arr.ndim != 1:
        raise ValidationError(f"a vector must be one-dimensional, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValidationError("a vector must contain only finite numbers")
    if dim is not None and arr.shape[0] != dim:
        raise EmbeddingMismatchError(
            f"the index holds {dim}-dimensional vectors, got {arr.shape[0]}; embed with the "
            "model the store was built with, or move the store with store.reembed(...)")
    return arr


def unit(vec: Vector) -> Vector:
    """``vec / |vec|`` in float32 (a zero vector stays zero)."""
    wide = vec.astype(np.float64)
    norm = math.sqrt(float(wide.dot(wide)))  # np.linalg.norm's sum, without its overhead
    if norm == 0.0:
        return vec.astype(np.float32, copy=True)
    return (wide / norm).astype(np.float32)


def exact_cosines(vectors: Sequence[Vector], query: Vector) -> list[float]:
    """Cosine similarities of ``vectors`` to ``query``, each computed the same way
    whatever its neighbours (row-wise float64 products, summed pairwise along the row),
    so a memory's score never depends on which other candidates an index returned.

    Examples:
        >>> q = np.array([1.0, 0.0], np.float32)
        >>> [round(c, 3) for c in exact_cosines([np.array([3.0, 4.0], np.float32)], q)]
        [0.6]
    """
    if not len(vectors):
        return []
    rows = np.array(vectors, dtype=np.float64)  # one conversion of the whole block
    if rows.ndim != 2:
        raise ValidationError("vectors must be one-dimensional and of one length")
    q = np.asarray(query, dtype=np.float64)
    dots = (rows * q).sum(axis=1)
    norms = np.sqrt((rows * rows).sum(axis=1)) * math.sqrt(float((q * q).sum()))
    out = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return [float(x) for x in out]


# --- the protocol --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexCapabilities:
    """What a vector index is (declared by each implementation, never probed).

    Attributes:
        persistent: its entries outlive the process; the store catches it up from the
            record store's change log on open.
        loads_on_demand: it reads a namespace's rows from the record store when that
            namespace is first queried (so it is never caught up or rebuilt).
        shared: other processes may reach the same entries (a server).
        exact: exhaustive search (otherwise approximate, e.g. HNSW).
        keeps_deleted: deleted vectors stay in its files until :meth:`VectorIndex.compact`.
        columnar_filters: it evaluates filters over in-process columns, so a time range
            costs it less than an id allow-list (the store then sends a ``since``/
            ``until`` window as a ``Range``; otherwise as ``within=`` ids).
        concurrent_queries: its queries spend their time outside the interpreter
            (native code that releases it, a server's round trip), so the store runs
            them on a second thread beside its full-text search
            (:meth:`~mars_core.engine.indexing.IndexSync.search`, after
            :meth:`VectorIndex.load`); an index that searches in Python gains nothing.
    """

    persistent: bool
    loads_on_demand: bool
    shared: bool
    exact: bool
    keeps_deleted: bool
    columnar_filters: bool = False
    concurrent_queries: bool = False


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """One query of a namespace's partition, as :meth:`VectorIndex.query` takes it.

    Attributes:
        status: the partition.
        vector: the query's vector.
        k: how many entries, at most.
        where: what the entries' fields must match.
        within: the ids the entries must be among (``None``: any).

    Examples:
        >>> VectorQuery(MemoryStatus.ACTIVE, np.ones(2, dtype=np.float32), 8).k
        8
    """

    status: MemoryStatus
    vector: Vector
    k: int
    where: Filter | None = None
    within: Sequence[str] | None = None


@runtime_checkable
class VectorIndex(Protocol):
    """What the store needs from a vector index.

    Every method raises only :class:`~mars_core.errors.MarsError` subclasses; client
    errors are wrapped as :class:`~mars_core.errors.MarsBackendError`.
    """

    name: str
    """Short name recorded in the manifest (``numpy``, ``chroma``, ``qdrant``)."""

    capabilities: IndexCapabilities
    """What this index is."""

    location: str
    """Where its entries are (``memory``, a directory, a server URL)."""

    stamp: str
    """Once bound: what this index is, for the record store to keep beside its position
    — the identity it holds and a random epoch drawn each time it is emptied, so a
    position recorded for an index that was since emptied, replaced or handed to another
    store no longer matches (``""``: it keeps nothing across processes)."""

    def bind(self, identity: str, dim: int, source: IndexSource,
             recorded: Mapping[str, int] | None = None) -> int:
        """Attach the index to a store.

        Args:
            identity: ``"<store id>:<version>"`` (the version names the embedder and
                the index generation); an index holding another version's entries
                empties itself, and a shared one (a server) holding another store's
                entries refuses them (``ConflictError``) rather than wipe them.
            dim: the vector dimension.
            source: the record store's rows of a namespace (read on demand, if at all).
            recorded: the positions the record store keeps, by the stamp recorded beside
                each. When the index's own stamp is among them, it holds every change up
                to that position and reads no mark of its own.

        Returns:
            The number of the last change it applied (0: empty, or just emptied).
        """
        ...

    def upsert(self, rows: Sequence[IndexRow], *, new: bool = False) -> None:
        """Insert or replace entries (an entry moves between a namespace's partitions
        when its status changed); ``new=True`` promises the ids are not in the index yet
        (fresh inserts), which spares an index the reads a replacing write needs."""
        ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Remove entries of a namespace (missing ids are a no-op)."""
        ...

    def query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
              where: Filter | None = None, *,
              within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` entries of one partition most similar (cosine) to ``vector`` that
        ``where`` admits: ``(id, score)``, best first. With ``within``, only entries whose
        id it lists are candidates (the store passes the ids a ``since``/``until`` window
        holds, read from its temporal index)."""
        ...

    def load(self, namespace: str) -> None:
        """Make a namespace ready to query, on the caller's thread: whatever a first query
        would read from the record store or repair happens here (numpy reads the
        namespace's rows; an embedded Chroma checks the namespace's files, rebuilding
        them from the records when damaged). After it, until the namespace is forgotten
        (:meth:`forget`) or the index cleared, :meth:`query` of the namespace reads nothing
        but the index's own entries — so the store runs its queries on a second thread
        while the caller's reads the records."""
        ...

    def mark(self, applied: int) -> None:
        """Every change up to ``applied`` is in the index (called after every write
        that got it there, before the record store records that position).

        The records keep the position
        (:meth:`~mars_core.storage.base.ChangeLog.set_index_position`); this call exists
        for an index that keeps files of its own, which may keep the position with them
        as a witness: ``bind`` then says when the index is ahead of the records (they
        lost committed writes: a write-ahead log deleted, an older copy put back), and
        the store rebuilds it. The embedded Chroma index does; numpy, Qdrant and a
        Chroma server keep nothing (:class:`IndexBase`'s default)."""
        ...

    def forget(self, namespace: str) -> None:
        """Drop what is cached of a namespace in this process (not its entries)."""
        ...

    def clear(self) -> None:
        """Remove every entry of the bound store (a rebuild follows)."""
        ...

    def compact(self, namespaces: Sequence[str]) -> str:
        """Rewrite the namespaces' partitions so deleted vectors leave the files;
        returns what was done (for an erasure receipt)."""
        ...

    def close(self) -> None:
        """Release resources (idempotent)."""
        ...


class IndexBase:
    """Validation written once for every index: public methods check their arguments,
    run under the index's lock, refuse once closed, then call the ``_``-methods.

    An index implements ``_bind``, ``_upsert``, ``_delete``, ``_query``, ``_clear``,
    ``_compact`` and ``_release`` (what ``close`` frees), ``_mark`` only to keep a
    witness of its position (:meth:`VectorIndex.mark`), and ``_load`` when a query
    would otherwise read the record store (:meth:`VectorIndex.load`); it sets ``_lock`` and
    ``_closed``; ``dim`` is known once bound.
    """

    name: str
    capabilities: IndexCapabilities
    location: str
    _lock: AbstractContextManager[Any]
    _closed: bool
    dim: int | None = None
    stamp: str = ""

    @guarded
    def bind(self, identity: str, dim: int, source: IndexSource,
             recorded: Mapping[str, int] | None = None) -> int:
        """See :meth:`VectorIndex.bind`.

        Raises:
            ValidationError: an empty identity, a bad dimension or bad positions.
        """
        if not isinstance(identity, str) or not identity:
            raise ValidationError("an index identity must be a non-empty string")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValidationError(f"dim must be a positive int, not {dim!r}")
        positions: dict[str, int] = {}
        for stamp, applied in (recorded or {}).items():
            if not isinstance(stamp, str) or isinstance(applied, bool) or \
                    not isinstance(applied, int) or applied < 0:
                raise ValidationError("recorded positions map stamps to ints >= 0, not "
                                      f"{stamp!r}: {applied!r}")
            if stamp:  # an empty stamp names no index
                positions[stamp] = applied
        self.dim = dim
        return self._bind(identity, dim, source, positions)

    @staticmethod
    def _new_stamp(identity: str) -> str:
        """A stamp for ``identity`` with a fresh random epoch."""
        return f"{identity}#{os.urandom(8).hex()}"

    @staticmethod
    def _stamped(stamp: str) -> str:
        """The identity a stamp names."""
        return stamp.rpartition("#")[0]

    def _claims(self, recorded: object, identity: str) -> bool:
        """Whether the entries recorded under ``recorded`` are ``identity``'s (else the
        index empties itself).

        Raises:
            ConflictError: a shared index holds another store's entries.
        """
        if recorded == identity:
            return True
        if isinstance(recorded, str) and self.capabilities.shared and \
                recorded.split(":", 1)[0] != identity.split(":", 1)[0]:
            raise ConflictError(
                f"the {self.name} index at {self.location} holds the entries of another "
                "store; give this store an index of its own (prefix=), or, if that store "
                "is gone, delete its collections on the server")
        return False

    @guarded
    def upsert(self, rows: Sequence[IndexRow], *, new: bool = False) -> None:
        """See :meth:`VectorIndex.upsert`; rows are validated whole before any is written.

        Raises:
            ValidationError: unbound, or a bad row (id, vector, field).
            EmbeddingMismatchError: a vector of another dimension.
        """
        dim = self._bound()
        checked = []
        for row in rows:
            _check_id(row.id)
            _check_fields(row.fields)
            checked.append(IndexRow(row.id, row.namespace, MemoryStatus(row.status),
                                    unit(as_vector(row.vector, dim)), dict(row.fields)))
        if checked:
            self._upsert(list({r.id: r for r in checked}.values()), bool(new))

    @guarded
    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """See :meth:`VectorIndex.delete`."""
        self._bound()
        if isinstance(ids, str):
            raise ValidationError("ids must be a sequence of strings, not one string")
        for i in ids:
            _check_id(i)
        if ids:
            self._delete(namespace, list(dict.fromkeys(ids)))

    @guarded
    def query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
              where: Filter | None = None, *,
              within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """See :meth:`VectorIndex.query`; ties are broken by id.

        Raises:
            ValidationError: unbound, a bad ``k``, vector or ``within``.
            EmbeddingMismatchError: a vector of another dimension.
        """
        dim = self._bound()
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be an int >= 0, not {k!r}")
        allowed: tuple[str, ...] | None = None
        if within is not None:
            if isinstance(within, str):
                raise ValidationError("within must be a sequence of ids, not one string")
            for i in within:
                _check_id(i)
            allowed = tuple(dict.fromkeys(within))
        q = unit(as_vector(vector, dim))
        if k == 0 or not np.any(q) or allowed == ():
            return []
        want = k + 1  # one more than asked: tells whether entries beyond k tie with the k-th
        while True:
            hits = self._query(namespace, MemoryStatus(status), q, want, where, within=allowed)
            hits.sort(key=lambda h: (-h[1], h[0]))
            if len(hits) < want or hits[-1][1] < hits[k - 1][1]:
                return hits[:k]
            want *= 2  # a tie across the boundary: fetch more, so ids, not the backend, pick

    @guarded
    def load(self, namespace: str) -> None:
        """See :meth:`VectorIndex.load`."""
        self._bound()
        self._load(namespace)

    @guarded
    def mark(self, applied: int) -> None:
        """See :meth:`VectorIndex.mark`."""
        self._bound()
        if isinstance(applied, bool) or not isinstance(applied, int) or applied < 0:
            raise ValidationError(f"a mark must be an int >= 0, not {applied!r}")
        self._mark(applied)

    def forget(self, namespace: str) -> None:
        """See :meth:`VectorIndex.forget` (default: nothing is cached)."""

    @guarded
    def clear(self) -> None:
        """See :meth:`VectorIndex.clear`."""
        self._bound()
        self._clear()

    @guarded
    def compact(self, namespaces: Sequence[str]) -> str:
        """See :meth:`VectorIndex.compact`."""
        self._bound()
        return self._compact(list(namespaces))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the index's resources (idempotent): ``_release`` runs once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    def _release(self) -> None:  # pragma: no cover - every index defines it
        raise NotImplementedError

    def _bound(self) -> int:
        if self.dim is None:
            raise ValidationError(f"this {self.name} index is not bound to a store yet "
                                  "(a MemoryStore binds it when it opens)")
        return self.dim

    # --- what an index provides ----------------------------------------------------------

    def _bind(self, identity: str, dim: int, source: IndexSource,
              recorded: dict[str, int]) -> int:
        raise NotImplementedError  # pragma: no cover

    def _upsert(self, rows: list[IndexRow], new: bool) -> None:
        raise NotImplementedError  # pragma: no cover

    def _delete(self, namespace: str, ids: list[str]) -> None:
        raise NotImplementedError  # pragma: no cover

    def _query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
               where: Filter | None, *, within: tuple[str, ...] | None = None
               ) -> list[tuple[str, float]]:
        raise NotImplementedError  # pragma: no cover

    def _load(self, namespace: str) -> None:
        """Nothing: a query reads only the index's own entries (numpy and the embedded
        Chroma index read or check what a namespace's first query would)."""

    def _mark(self, applied: int) -> None:
        """Nothing: the record store keeps the position beside :attr:`stamp` (an index
        that keeps a witness of its own, as the embedded Chroma index does, writes it
        here)."""

    def _clear(self) -> None:
        raise NotImplementedError  # pragma: no cover

    def _compact(self, namespaces: list[str]) -> str:
        raise NotImplementedError  # pragma: no cover


def _check_id(value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ValidationError(f"an index entry id must be a string of 1-64 characters, "
                              f"not {value!r}")


def _check_fields(fields: Mapping[str, Any]) -> None:
    for key, value in fields.items():
        if not isinstance(key, str) or not key or key.startswith(("$", "_")) or '"' in key:
            raise ValidationError(f"field name {key!r} must be a non-empty string without '\"' "
                                  "that does not start with '$' or '_' (the index's own)")
        if not isinstance(value, str | int | float | bool):
            raise ValidationError(f"field {key!r} must be str, int, float or bool")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(f"field {key!r} must be finite")
        if isinstance(value, int) and not isinstance(value, bool) \
                and not -(2**63) <= value < 2**63:
            raise ValidationError(f"field {key!r} must fit in 64 bits")


def rows_by_namespace(rows: Iterable[IndexRow]) -> dict[str, list[IndexRow]]:
    """Group rows by namespace, keeping their order."""
    out: dict[str, list[IndexRow]] = {}
    for row in rows:
        out.setdefault(row.namespace, []).append(row)
    return out
