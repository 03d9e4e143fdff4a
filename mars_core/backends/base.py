"""The vector-backend contract: value objects, a neutral filter language, the protocol.

A backend is a set of named collections of :class:`Record` s. A collection has a fixed
vector dimension, or dimension 0 for records without vectors (the audit log, the store
manifest). Ids are strings (UUIDs, because Qdrant accepts nothing else), scores follow
"higher is more similar", ``upsert`` is idempotent, deleting a missing id is a no-op.

Filters are backend-neutral value objects (:class:`Eq`, :class:`In`, :class:`Range`,
:class:`And`, :class:`Or`, :class:`Not`) over flat scalar metadata; each backend
translates them with a pure function, unit-tested without a server.
:func:`matches` is the reference semantics every translation must agree with.

Examples:
    >>> f = And((Eq("namespace", "u1"), Range("sensitivity", lte=0.5)))
    >>> matches(f, {"namespace": "u1", "sensitivity": 0.2})
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from mars_core._guard import guarded
from mars_core.errors import ValidationError

__all__ = [
    "And",
    "BackendBase",
    "DeleteOp",
    "Eq",
    "Filter",
    "In",
    "MetaValue",
    "Not",
    "Op",
    "Or",
    "Range",
    "Record",
    "ScoredRecord",
    "UpsertOp",
    "VectorBackend",
    "WriteBatch",
    "as_vector",
    "matches",
    "validate_metadata",
]

MetaValue = str | int | float | bool
"""A flat metadata value, the common denominator of Chroma and Qdrant payload filters."""

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Record:
    """One stored record.

    Attributes:
        id: string id (a UUID for memories).
        vector: the embedding, or ``None`` (dimension-0 collections, or an upsert that
            keeps the existing vector of an existing record).
        document: an opaque text blob (the store keeps its JSON codec here).
        metadata: flat scalar metadata used by filters.
    """

    id: str
    vector: Vector | None = None
    document: str = ""
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScoredRecord:
    """A query result: the record and its similarity (higher is more similar)."""

    record: Record
    score: float


# --- neutral filter language -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Eq:
    """``metadata[key] == value``."""

    key: str
    value: MetaValue


@dataclass(frozen=True, slots=True)
class In:
    """``metadata[key] in values`` (values non-empty)."""

    key: str
    values: tuple[MetaValue, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """Numeric range on ``metadata[key]``; unset bounds are open."""

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


def matches(flt: Filter | None, metadata: Mapping[str, MetaValue]) -> bool:
    """Reference semantics of the filter language (a missing key never matches a leaf)."""
    if flt is None:
        return True
    if isinstance(flt, Eq):
        return flt.key in metadata and metadata[flt.key] == flt.value
    if isinstance(flt, In):
        return flt.key in metadata and metadata[flt.key] in flt.values
    if isinstance(flt, Range):
        v = metadata.get(flt.key)
        if not isinstance(v, int | float) or isinstance(v, bool):
            return False
        return (
            (flt.gt is None or v > flt.gt)
            and (flt.gte is None or v >= flt.gte)
            and (flt.lt is None or v < flt.lt)
            and (flt.lte is None or v <= flt.lte)
        )
    if isinstance(flt, And):
        return all(matches(c, metadata) for c in flt.clauses)
    if isinstance(flt, Or):
        return any(matches(c, metadata) for c in flt.clauses)
    return not matches(flt.clause, metadata)


def validate_metadata(metadata: Mapping[str, MetaValue]) -> None:
    """Reject metadata a backend could not store (nested values, NaN, odd keys)."""
    for k, v in metadata.items():
        if not isinstance(k, str) or not k or k.startswith("$"):
            raise ValidationError(f"metadata key {k!r} must be a non-empty string not starting '$'")
        if not isinstance(v, str | int | float | bool):
            raise ValidationError(f"metadata value for {k!r} must be str/int/float/bool")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValidationError(f"metadata value for {k!r} must be finite")


def as_vector(values: Sequence[float] | npt.NDArray[np.floating], dim: int | None = None) -> Vector:
    """Convert to a float32 vector, checking finiteness and (optionally) the dimension."""
    arr = np.asarray(values, dtype=np.float32)
    if arr.ndim != 1:
        raise ValidationError(f"a vector must be one-dimensional, got shape {arr.shape}")
    if dim is not None and arr.shape[0] != dim:
        raise ValidationError(f"vector has dimension {arr.shape[0]}, the collection expects {dim}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError("a vector must contain only finite numbers")
    return arr


# --- write batches -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpsertOp:
    """Upsert records into a collection."""

    collection: str
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class DeleteOp:
    """Delete ids from a collection (missing ids are ignored)."""

    collection: str
    ids: tuple[str, ...]


Op = UpsertOp | DeleteOp
"""One write of a batch."""


@dataclass(slots=True)
class WriteBatch:
    """An ordered list of writes that belong to one store operation.

    Backends that can, apply a batch atomically (all or nothing, even across a crash);
    :meth:`BackendBase.apply` documents what the others guarantee.
    """

    ops: list[UpsertOp | DeleteOp] = field(default_factory=list)

    def upsert(self, collection: str, records: Iterable[Record]) -> WriteBatch:
        """Append an upsert; returns self for chaining."""
        recs = tuple(records)
        if recs:
            self.ops.append(UpsertOp(collection, recs))
        return self

    def delete(self, collection: str, ids: Iterable[str]) -> WriteBatch:
        """Append a delete; returns self for chaining."""
        idt = tuple(ids)
        if idt:
            self.ops.append(DeleteOp(collection, idt))
        return self

    def __bool__(self) -> bool:
        return bool(self.ops)


# --- the protocol --------------------------------------------------------------------


@runtime_checkable
class VectorBackend(Protocol):
    """What the store needs from a vector database.

    Every method raises only :class:`~mars_core.errors.MarsError` subclasses; client
    errors are wrapped as :class:`~mars_core.errors.MarsBackendError`.
    """

    name: str
    """Short backend name recorded in the manifest (``inmemory``, ``chroma``, ``qdrant``)."""

    def ensure_collection(self, collection: str, dim: int) -> None:
        """Create ``collection`` with vector dimension ``dim`` (0: no vectors) if missing.

        Raises:
            EmbeddingMismatchError: the collection exists with another dimension.
        """
        ...

    def upsert(self, collection: str, records: Sequence[Record]) -> None:
        """Insert or replace records; ``vector=None`` keeps an existing record's vector."""
        ...

    def query(
        self, collection: str, vector: Vector, k: int, where: Filter | None = None
    ) -> list[ScoredRecord]:
        """The ``k`` records most similar to ``vector`` (cosine) that match ``where``."""
        ...

    def get(
        self,
        collection: str,
        ids: Sequence[str] | None = None,
        where: Filter | None = None,
        *,
        with_vectors: bool = False,
    ) -> list[Record]:
        """Records by id (missing ids skipped) and/or filter; all records if both are None."""
        ...

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete records by id; missing ids are a no-op."""
        ...

    def apply(self, batch: WriteBatch) -> None:
        """Apply a batch of writes (atomically where the backend can)."""
        ...

    def close(self) -> None:
        """Release resources; further calls raise ``StoreClosedError``."""
        ...


class BackendBase:
    """The public write methods of every backend, written once, and a context manager.

    ``ensure_collection``, ``upsert``, ``delete`` and ``apply`` validate their arguments
    and hand a list of operations to the backend's ``_write`` — validated whole before
    anything changes, then applied (atomically for the in-memory backend, which journals
    a batch as one record; through a write-ahead intent for Chroma and Qdrant). Each is
    guarded by the backend's lock and refused once it is closed
    (:func:`mars_core._guard.guarded`). A backend implements ``_ensure`` and ``_write``
    and may narrow ``_check_name`` and ``_check_ids``; it needs ``_lock`` and ``_closed``.
    """

    shared: bool = False
    """True when other processes may reach the same collections (a server, or a client
    passed in): nothing local guards them, so the store takes a writer lease."""

    _lock: AbstractContextManager[Any]
    _closed: bool

    @guarded
    def ensure_collection(self, collection: str, dim: int) -> None:
        """Create ``collection`` with dimension ``dim`` (0: no vectors) if it is missing.

        Raises:
            ValidationError: bad dimension, or a name the backend cannot hold.
            EmbeddingMismatchError: the collection exists with another dimension.
        """
        self._check_name(collection)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
            raise ValidationError(f"dim must be an int >= 0, got {dim!r}")
        self._ensure(collection, dim)

    @guarded
    def upsert(self, collection: str, records: Sequence[Record]) -> None:
        """Insert or replace records; ``vector=None`` keeps an existing record's vector.

        Validated whole first (on any error nothing changes); the same id twice: the
        last one wins.

        Raises:
            NotFoundError: unknown collection.
            EmbeddingMismatchError: a vector of the wrong dimension.
            ValidationError: a bad record (non-finite vector, bad metadata, an id the
                backend cannot hold, a new id without a vector in a collection with vectors).
        """
        self._write([UpsertOp(collection, tuple(records))])

    @guarded
    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete records by id; missing ids are a no-op.

        Raises:
            NotFoundError: unknown collection.
            ValidationError: ids the backend cannot hold.
        """
        self._write([DeleteOp(collection, tuple(self._check_ids(ids)))])

    @guarded
    def apply(self, batch: WriteBatch) -> None:
        """Apply a batch all-or-nothing: validated whole, then written.

        Raises:
            NotFoundError, EmbeddingMismatchError, ValidationError: as for ``upsert``;
                nothing of the batch is applied.
            MarsBackendError: a server failed part-way; the batch is completed by this
                backend's next write, or after a crash by the next open (on a shared
                server: by the store that takes the writer lease, or :meth:`recover`).
        """
        if not isinstance(batch, WriteBatch):
            raise ValidationError(f"apply() takes a WriteBatch, got {type(batch).__name__}")
        self._write(batch.ops)

    def recover(self) -> int:
        """Complete the batches a writer left unfinished; returns how many (here: none).

        Backends that write through write-ahead intents (Chroma, Qdrant) do this when
        they open, unless they are :attr:`shared`: there the intents may be a live
        writer's, so only the store that holds the writer lease replays them, right
        after taking it (a reader never does).
        """
        return 0

    def pending_batches(self) -> int:
        """How many batches are begun and not finished here (a writer at work, or one
        that crashed); readers retry while there are any (here: none)."""
        return 0

    def close(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what a backend provides ------------------------------------------------------------

    def _check_name(self, collection: object) -> None:
        """Refuse a collection name the backend cannot hold (default: any non-empty str)."""
        if not isinstance(collection, str) or not collection:
            raise ValidationError("a collection name must be a non-empty string")

    def _check_ids(self, ids: Sequence[str]) -> Sequence[str]:
        """Refuse ids the backend cannot hold (default: non-empty strings)."""
        if isinstance(ids, str) or not all(isinstance(i, str) and i for i in ids):
            raise ValidationError("ids must be a sequence of non-empty strings")
        return ids

    def _ensure(self, collection: str, dim: int) -> None:  # pragma: no cover
        raise NotImplementedError

    def _write(self, ops: Sequence[Op]) -> None:  # pragma: no cover
        raise NotImplementedError
