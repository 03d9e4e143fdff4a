"""The reference filter semantics and the input validators of ``mars_core.backends.base``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from mars_core.backends.base import (
    And,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    WriteBatch,
    as_vector,
    matches,
    validate_metadata,
)
from mars_core.errors import MarsError, ValidationError

META: dict[str, MetaValue] = {
    "namespace": "u1",
    "type": "semantic",
    "sensitivity": 0.3,
    "count": 2,
    "pinned": True,
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (None, True),
        (Eq("namespace", "u1"), True),
        (Eq("namespace", "u2"), False),
        (Eq("missing", "u1"), False),
        (Eq("count", 2.0), True),  # Python equality: 2 == 2.0
        (Eq("pinned", 1), True),  # True == 1
        (Eq("count", "2"), False),
        (In("type", ("episodic", "semantic")), True),
        (In("type", ("episodic",)), False),
        (In("missing", ("x",)), False),
        (In("type", ()), False),
        (Range("sensitivity", gt=0.3), False),
        (Range("sensitivity", gte=0.3), True),
        (Range("sensitivity", lt=0.3), False),
        (Range("sensitivity", lte=0.3), True),
        (Range("sensitivity", gt=0.1, lt=0.5), True),
        (Range("count", gte=3), False),
        (Range("count"), True),  # no bounds: any number
        (Range("pinned", gte=0), False),  # booleans are not numbers for Range
        (Range("namespace", gte=0), False),
        (Range("missing", gte=0), False),
        (And(()), True),
        (Or(()), False),
        (And((Eq("namespace", "u1"), Range("sensitivity", lte=0.5))), True),
        (And((Eq("namespace", "u1"), Eq("type", "episodic"))), False),
        (Or((Eq("namespace", "u2"), Eq("type", "semantic"))), True),
        (Or((Eq("namespace", "u2"), Eq("type", "episodic"))), False),
        (Not(Eq("namespace", "u1")), False),
        (Not(Eq("missing", "x")), True),  # a missing key never matches a leaf...
        (Not(Range("missing", gte=0)), True),  # ...so its negation does
        (Not(Not(Eq("namespace", "u1"))), True),
        (And((Or((Eq("count", 5), Eq("pinned", True))), Not(In("type", ("social",))))), True),
    ],
)
def test_matches(flt: Filter | None, expected: bool) -> None:
    assert matches(flt, META) is expected


def test_matches_on_empty_metadata() -> None:
    assert matches(Eq("a", 1), {}) is False
    assert matches(Not(Eq("a", 1)), {}) is True
    assert matches(None, {}) is True


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"a": "x", "b": 1, "c": 1.5, "d": False},
        {"é": "unicode keys are fine", "x": -0.0, "big": 10**18},
    ],
)
def test_validate_metadata_accepts_flat_scalars(meta: dict[str, MetaValue]) -> None:
    validate_metadata(meta)


@pytest.mark.parametrize(
    "meta",
    [
        {"": 1},
        {"$where": 1},
        {1: "non-string key"},
        {"nested": {"a": 1}},
        {"list": [1, 2]},
        {"none": None},
        {"nan": math.nan},
        {"inf": -math.inf},
        {"bytes": b"x"},
    ],
)
def test_validate_metadata_rejects(meta: dict[Any, Any]) -> None:
    with pytest.raises(ValidationError):
        validate_metadata(meta)


def test_validation_error_is_a_value_error_and_a_mars_error() -> None:
    with pytest.raises(ValueError):
        validate_metadata({"x": None})  # type: ignore[dict-item]
    with pytest.raises(MarsError):
        validate_metadata({"x": None})  # type: ignore[dict-item]


def test_as_vector_converts_to_float32() -> None:
    v = as_vector([1, 2, 3])
    assert v.dtype == np.float32 and v.tolist() == [1.0, 2.0, 3.0]
    assert as_vector(np.arange(4, dtype=np.float64), dim=4).dtype == np.float32
    assert as_vector([], dim=0).shape == (0,)


@pytest.mark.parametrize(
    ("values", "dim"),
    [
        ([1.0, math.nan], None),
        ([math.inf, 0.0], None),
        ([1e39, 0.0], None),  # overflows float32
        ([[1.0, 2.0]], None),
        (5.0, None),
        ([1.0, 2.0], 3),
    ],
)
def test_as_vector_rejects(values: Any, dim: int | None) -> None:
    with pytest.raises(ValidationError), np.errstate(over="ignore"):
        as_vector(values, dim)


def test_write_batch_skips_empty_ops_and_chains() -> None:
    batch = WriteBatch().upsert("c", []).delete("c", [])
    assert not batch
    batch.delete("c", ["a"]).delete("d", ("b", "c"))
    assert bool(batch) and [op.ids for op in batch.ops] == [("a",), ("b", "c")]  # type: ignore[union-attr]
