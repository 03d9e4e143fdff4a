"""The neutral filter language of ``mars_core.index``: the reference semantics
(:func:`~mars_core.index.base.matches`), its negation normal form (shared by the Chroma
and Qdrant translators), and the validators every index runs before it writes."""

from __future__ import annotations

import math
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from index_strategies import filter_strategies

from mars_core.errors import MarsError, ValidationError
from mars_core.index import NumpyIndex
from mars_core.index._filters import FALSE, TRUE, Conj, Disj, Lit, Node, normal_form
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    as_vector,
    matches,
)
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow

FIELDS: dict[str, MetaValue] = {
    "namespace": "u1",
    "type": "semantic",
    "sensitivity": 0.3,
    "count": 2,
    "pinned": True,
}


# --- the reference semantics ------------------------------------------------------------


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
    assert matches(flt, FIELDS) is expected


def test_matches_on_empty_fields() -> None:
    assert matches(Eq("a", 1), {}) is False
    assert matches(Not(Eq("a", 1)), {}) is True
    assert matches(None, {}) is True


# --- negation normal form -----------------------------------------------------------------


def holds(node: Node, fields: dict[str, MetaValue]) -> bool:
    """What a normal form means, evaluated directly."""
    if isinstance(node, Lit):
        return matches(node.leaf, fields) is not node.negated
    if isinstance(node, Conj):
        return all(holds(item, fields) for item in node.items)
    return any(holds(item, fields) for item in node.items)


def well_formed(node: Node, top: bool = True) -> bool:
    """Constants only alone at the top; and/or flattened, of two items or more."""
    if node in (TRUE, FALSE):
        return top
    if isinstance(node, Lit):
        return True
    if len(node.items) < 2 or any(type(item) is type(node) for item in node.items):
        return False
    return all(well_formed(item, top=False) for item in node.items)


KEYS = ("a", "b", "n", "#hidden")
scalars = st.one_of(st.sampled_from(["x", "y", "1", ""]), st.integers(-2, 2),
                    st.sampled_from([0.0, 1.0, 0.5, -1.5]), st.booleans())
bound = st.one_of(st.none(), st.sampled_from([-1.0, 0.0, 0.5, 1, 2.0, math.inf, -math.inf,
                                              math.nan]))
fields, filters = filter_strategies(KEYS, scalars, bound, max_in=3, max_leaves=8)


def storable(key: str) -> bool:
    return not key.startswith("#")


@settings(max_examples=400, deadline=None)
@given(flt=filters, examples=st.lists(fields, min_size=1, max_size=8))
def test_normal_form_keeps_the_meaning(flt: Filter, examples: list[dict[str, MetaValue]]
                                       ) -> None:
    node = normal_form(flt)
    assert well_formed(node), node
    for f in examples:
        assert holds(node, f) == matches(flt, f), (flt, f, node)


@settings(max_examples=200, deadline=None)
@given(flt=filters, examples=st.lists(fields, min_size=1, max_size=8))
def test_normal_form_drops_keys_no_record_can_hold(
        flt: Filter, examples: list[dict[str, MetaValue]]) -> None:
    node = normal_form(flt, storable)
    assert well_formed(node), node
    for f in examples:
        held = {k: v for k, v in f.items() if storable(k)}  # what a record can store
        assert holds(node, held) == matches(flt, held), (flt, held, node)


def test_normal_form_examples() -> None:
    a, b, c = Eq("a", 1), Eq("b", 2), Eq("c", 3)
    assert normal_form(And((a, And((b, c))))) == Conj((Lit(a), Lit(b), Lit(c)))
    assert normal_form(Not(And((a, b)))) == Disj((Lit(a, True), Lit(b, True)))
    assert normal_form(Not(Not(a))) == Lit(a)
    assert normal_form(Or((a, And(())))) == TRUE
    assert normal_form(And((a, Or(())))) == FALSE
    assert normal_form(In("a", ())) == FALSE and normal_form(Not(In("a", ()))) == TRUE
    assert normal_form(Eq("a", math.nan)) == FALSE
    assert normal_form(In("a", (math.nan, 1))) == Lit(In("a", (1,)))
    assert normal_form(Range("a", gt=math.inf)) == FALSE
    assert normal_form(Not(Range("a", lte=-math.inf))) == TRUE
    assert normal_form(Range("a", gte=-math.inf, lt=math.inf)) == Lit(Range("a"))
    assert normal_form(Eq("#k", 1), storable) == FALSE
    assert normal_form(Not(Eq("#k", 1)), storable) == TRUE


_E: Any = Eq
_I: Any = In
_R: Any = Range
_A: Any = And
_O: Any = Or
_N: Any = Not


@pytest.mark.parametrize("bad", [
    "a = 1", {"a": 1}, _E(1, "a"), _E("a", [1]), _E("a", None), _I("a", "abc"),
    _I("a", ({"x": 1},)), _R("a", gte="1"), _R("a", lt=True), _A("ab"),
    _N("a"), _O((Eq("a", 1), "b")),
])
def test_normal_form_refuses_what_is_not_a_filter(bad: Any) -> None:
    with pytest.raises(ValidationError):
        normal_form(bad)


# --- vectors and fields, as every index checks them -------------------------------------------


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
        ("ab", None),
        ([1.0, 2.0], 3),
    ],
)
def test_as_vector_rejects(values: Any, dim: int | None) -> None:
    with pytest.raises(ValidationError), np.errstate(over="ignore"):
        as_vector(values, dim)


def _bound_index() -> NumpyIndex:
    index = NumpyIndex()
    index.bind("s", 2, lambda ns: [])
    index.query("u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0]), 1)  # loaded: writes land
    return index


def _row(fields: dict[Any, Any]) -> IndexRow:
    return IndexRow(str(uuid.UUID(int=1)), "u1", MemoryStatus.ACTIVE,
                    np.array([1.0, 0.0], np.float32), fields)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"a": "x", "b": 1, "c": 1.5, "d": False},
        {"é": "unicode keys are fine", "x": -0.0, "big": 10**18, "a.b": 1, "k#": 2},
    ],
)
def test_fields_of_flat_scalars_are_accepted(fields: dict[str, MetaValue]) -> None:
    with _bound_index() as index:
        index.upsert([_row(fields)])
        assert len(index.query("u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0]), 5)) == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"": 1},
        {"$where": 1},
        {"_ns": "u2"},  # the index's own
        {'a"b': 1},
        {1: "non-string key"},
        {"nested": {"a": 1}},
        {"list": [1, 2]},
        {"none": None},
        {"nan": math.nan},
        {"inf": -math.inf},
        {"bytes": b"x"},
        {"big": 2**70},
    ],
)
def test_fields_are_validated_before_anything_is_written(fields: dict[Any, Any]) -> None:
    with _bound_index() as index:
        good = IndexRow(str(uuid.UUID(int=2)), "u1", MemoryStatus.ACTIVE,
                        np.array([0.0, 1.0], np.float32), {})
        with pytest.raises(ValidationError):
            index.upsert([good, _row(fields)])
        assert index.query("u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0]), 5) == []


def test_validation_error_is_a_value_error_and_a_mars_error() -> None:
    with _bound_index() as index:
        with pytest.raises(ValueError):
            index.upsert([_row({"x": None})])
        with pytest.raises(MarsError):
            index.upsert([_row({"x": None})])


@pytest.mark.parametrize("ids", ["abc", [""], ["x" * 65], [None]])
def test_entry_ids_are_checked(ids: Any) -> None:
    with _bound_index() as index, pytest.raises(ValidationError):
        index.delete("u1", ids)
