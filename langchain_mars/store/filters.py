"""LangGraph's search filters (equality, nested equality, ``$``-operators) and namespace
listing conditions, as pure functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import (
    ListNamespacesOp,
    MatchCondition,
)

from langchain_mars._keys import Namespace
from mars_core.errors import (
    ValidationError,
)
from mars_core.io.checks import check_nesting

__all__: list[str] = []

_COMPARISONS = frozenset({"$gt", "$gte", "$lt", "$lte"})
_OPERATORS = _COMPARISONS | {"$eq", "$ne"}
_MAX_FILTER_NESTING = 32
"""Deepest search filter (a value's own nesting bounds what a filter can match)."""


def _check_filter(flt: object) -> None:
    if flt is None:
        return
    check_nesting(flt, "a search filter", _MAX_FILTER_NESTING, ValidationError)
    if not isinstance(flt, Mapping) or not all(isinstance(k, str) for k in flt):
        raise ValidationError("a search filter must be a mapping of value fields (string keys)")
    for cond in flt.values():
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):
            for op, operand in cond.items():
                if op not in _OPERATORS:
                    raise ValidationError(f"unsupported filter operator {op!r}; "
                                          f"use one of {sorted(_OPERATORS)}")
                if op in _COMPARISONS and (isinstance(operand, bool)
                                           or not isinstance(operand, int | float)):
                    raise ValidationError(f"filter operator {op} needs a number")
        elif isinstance(cond, Mapping):
            _check_filter(cond)


def _matches(value: Any, flt: Mapping[str, Any]) -> bool:
    """LangGraph's filter semantics: equality, nested equality, and ``$``-operators."""
    return all(_compare(value.get(k) if isinstance(value, dict) else None, cond)
               for k, cond in flt.items())


def _compare(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if any(str(k).startswith("$") for k in cond):
            return all(_operator(actual, op, operand) for op, operand in cond.items())
        return isinstance(actual, dict) and _matches(actual, cond)
    if isinstance(cond, list | tuple):
        return isinstance(actual, list) and len(actual) == len(cond) and \
            all(_compare(a, c) for a, c in zip(actual, cond, strict=True))
    return bool(actual == cond)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False  # a missing or non-numeric field is never greater or smaller
    return bool({"$gt": actual > operand, "$gte": actual >= operand,
                 "$lt": actual < operand, "$lte": actual <= operand}[op])


def _list_namespaces(spaces: list[Namespace], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """LangGraph's namespace listing: match conditions, depth truncation, pagination."""
    kept = [ns for ns in spaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        kept = sorted({ns[:op.max_depth] for ns in kept})
    return kept[op.offset:op.offset + op.limit]


def _does_match(cond: MatchCondition, ns: Namespace) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    part = ns[:len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))
