"""Record validation and normalisation shared by the Chroma and Qdrant backends.

Both backends validate a whole write before sending anything (so a bad record changes
nothing), store L2-normalised float32 vectors, keep metadata values as plain
``str``/``int``/``float``/``bool`` (integers within 64 bits, what both servers store),
and fold repeated ids of one upsert into one record (the last wins, keeping an earlier
vector when the last has none).

Examples:
    >>> import numpy as np
    >>> from mars_core.backends.base import Record
    >>> [r.document for r in merge_records([Record("a", np.ones(2), "first"),
    ...                                      Record("a", None, "last")])]
    ['last']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from mars_core.backends.base import (
    DeleteOp,
    MetaValue,
    Record,
    UpsertOp,
    as_vector,
    validate_metadata,
)
from mars_core.errors import EmbeddingMismatchError, ValidationError

__all__ = [
    "Alive",
    "checked_vector",
    "coalesce",
    "distinct_ids",
    "merge_records",
    "normalised",
    "plain_metadata",
    "prepare_record",
]

Vector = npt.NDArray[np.float32]
Alive = dict[tuple[str, str], bool]
"""``(collection, id) -> exists``, followed through a batch as it is validated."""

_I64 = (-(2**63), 2**63 - 1)


def normalised(vec: Vector) -> Vector:
    """``vec / |vec|`` in float32 (zero vectors stay zero)."""
    norm = float(np.linalg.norm(vec.astype(np.float64)))
    if norm == 0.0:
        return vec.astype(np.float32, copy=True)
    return (vec.astype(np.float64) / norm).astype(np.float32)


def checked_vector(values: object, dim: int, collection: str) -> Vector:
    """A finite float32 vector of dimension ``dim``.

    Raises:
        ValidationError: not a finite one-dimensional vector.
        EmbeddingMismatchError: another dimension.
    """
    try:
        arr = as_vector(values)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError(f"not a vector: {exc}") from exc
    if arr.shape[0] != dim:
        raise EmbeddingMismatchError(
            f"collection {collection!r} holds {dim}-dimensional vectors, got "
            f"{arr.shape[0]}; embed with the model the store was built with "
            "(or open a new store for the new model)"
        )
    return arr


def plain_metadata(metadata: Mapping[str, MetaValue]) -> dict[str, MetaValue]:
    """A copy with plain scalar values; integers must fit in 64 bits."""
    out: dict[str, MetaValue] = {}
    for key, value in metadata.items():
        if isinstance(value, bool):
            out[key] = bool(value)
        elif isinstance(value, str):
            out[key] = str(value)
        elif isinstance(value, int):
            if not _I64[0] <= value <= _I64[1]:
                raise ValidationError(f"metadata integer {value} does not fit in 64 bits")
            out[key] = int(value)
        else:
            out[key] = float(value)
    return out


def prepare_record(
    rec: object,
    *,
    dim: int,
    collection: str,
    alive: Alive,
    check_id: Callable[[object], None],
    storable_key: Callable[[str], bool],
    reserved: str,
) -> Record:
    """Validate and normalise one record of an upsert (``alive`` is updated).

    Args:
        rec: the record.
        dim: the collection's dimension.
        collection: its name (for messages).
        alive: which ids exist at this point of the batch.
        check_id: raises ValidationError for an id the backend cannot store.
        storable_key: whether the backend lets a record hold a metadata key.
        reserved: names the reserved keys in the error message.
    """
    if not isinstance(rec, Record):
        raise ValidationError(f"expected a Record, got {type(rec).__name__}")
    check_id(rec.id)
    if not isinstance(rec.document, str):
        raise ValidationError(f"record {rec.id!r}: document must be a string")
    if not isinstance(rec.metadata, Mapping):
        raise ValidationError(f"record {rec.id!r}: metadata must be a mapping")
    validate_metadata(rec.metadata)
    for key in rec.metadata:
        if not storable_key(key):
            raise ValidationError(f"record {rec.id!r}: metadata key {key!r} is reserved "
                                  f"({reserved})")
    meta = plain_metadata(rec.metadata)
    exists = alive.get((collection, rec.id), False)
    alive[(collection, rec.id)] = True
    vec: Vector | None = None
    if rec.vector is not None:
        vec = normalised(checked_vector(rec.vector, dim, collection))
    elif dim and not exists:
        raise ValidationError(
            f"record {rec.id!r} is new in collection {collection!r} and has no vector; "
            f"pass its {dim}-dimensional embedding"
        )
    return Record(rec.id, vec if dim else None, rec.document, meta)


def distinct_ids(op: UpsertOp | DeleteOp) -> int:
    """How many different ids an operation touches."""
    if isinstance(op, DeleteOp):
        return len(op.ids)
    return len({r.id for r in op.records})


def coalesce(ops: Sequence[UpsertOp | DeleteOp]) -> list[UpsertOp | DeleteOp]:
    """Join neighbouring operations of one kind on one collection, in order.

    Upserting ``a`` and then ``b`` into a collection is one upsert of ``(a, b)`` (records
    keep their order, so :func:`merge_records` still lets the last of an id win), and two
    deletes are one delete, so a batch that touches many records one operation at a time
    costs one request per collection instead of one per record. Operations on different
    collections, or an upsert and a delete, keep their order and stay apart.

    Examples:
        >>> a, b = Record("a", None, "x"), Record("b", None, "y")
        >>> ops = [UpsertOp("m", (a,)), UpsertOp("m", (b,)), DeleteOp("m", ("c",)),
        ...        DeleteOp("m", ("d",)), UpsertOp("audit", ())]
        >>> [(type(o).__name__, o.collection, len(o.records if isinstance(o, UpsertOp) else o.ids))
        ...  for o in coalesce(ops)]
        [('UpsertOp', 'm', 2), ('DeleteOp', 'm', 2), ('UpsertOp', 'audit', 0)]
    """
    out: list[UpsertOp | DeleteOp] = []
    for op in ops:
        last = out[-1] if out else None
        if isinstance(op, UpsertOp) and isinstance(last, UpsertOp) \
                and last.collection == op.collection:
            out[-1] = UpsertOp(op.collection, last.records + op.records)
        elif isinstance(op, DeleteOp) and isinstance(last, DeleteOp) \
                and last.collection == op.collection:
            out[-1] = DeleteOp(op.collection, last.ids + op.ids)
        else:
            out.append(op)
    return out


def merge_records(records: Sequence[Record]) -> list[Record]:
    """One record per id (ordered by last occurrence): the last wins, keeping an earlier vector."""
    merged: dict[str, Record] = {}
    for rec in records:
        prev = merged.pop(rec.id, None)
        vec = rec.vector if rec.vector is not None or prev is None else prev.vector
        merged[rec.id] = Record(rec.id, vec, rec.document, rec.metadata)
    return list(merged.values())
