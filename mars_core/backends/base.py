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
from dataclasses import dataclass, field
from typing import Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

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
    """Shared behaviour for backends: a sequential ``apply``, a context manager.

    ``apply`` runs the batch's operations in order. It is atomic only for backends that
    override it (the in-memory backend journals a batch as one record). For the others,
    the store writes in an order that makes any prefix recoverable (see ``store.py``).
    """

    shared: bool = False
    """True when other processes may reach the same collections (a server, or a client
    passed in): nothing local guards them, so the store takes a writer lease."""

    def upsert(self, collection: str, records: Sequence[Record]) -> None:  # pragma: no cover
        raise NotImplementedError

    def delete(self, collection: str, ids: Sequence[str]) -> None:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def apply(self, batch: WriteBatch) -> None:
        """Apply the batch's operations in order."""
        for op in batch.ops:
            if isinstance(op, UpsertOp):
                self.upsert(op.collection, op.records)
            else:
                self.delete(op.collection, op.ids)
