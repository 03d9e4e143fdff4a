"""Negation normal form of the neutral filter language, shared by the backend translators.

Chroma's ``where`` language has no ``$not``, and both Chroma and Qdrant mishandle empty
``$and``/``$or``/``should`` lists, so the translators first rewrite a
:class:`~mars_core.index.base.Filter` into this small intermediate form:

* :class:`Lit` — one leaf (``Eq``, ``In``, ``Range``), possibly negated;
* :class:`Conj` / :class:`Disj` — flattened ``and`` / ``or`` of at least two items;
* :data:`TRUE` (``Conj(())``) and :data:`FALSE` (``Disj(())``) — constants, which after
  :func:`normal_form` only ever appear alone, at the top.

Negation is pushed down to the leaves with De Morgan's laws; a negated leaf keeps the
reference semantics of :func:`~mars_core.index.base.matches` — ``Not(Eq(k, v))``
holds for records *without* ``k`` — and each backend is responsible for translating it
that way.

Examples:
    >>> from mars_core.index.base import Eq, Not, Or, In
    >>> normal_form(Not(Or((Eq("a", 1), In("b", ())))))
    Lit(leaf=Eq(key='a', value=1), negated=True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mars_core.errors import ValidationError
from mars_core.index.base import And, Eq, Filter, In, Not, Or, Range

__all__ = ["FALSE", "TRUE", "Conj", "Disj", "Leaf", "Lit", "Node", "equal_literals", "normal_form"]

Leaf = Eq | In | Range
_SCALARS = (str, int, float, bool)


@dataclass(frozen=True, slots=True)
class Lit:
    """A leaf filter, negated or not."""

    leaf: Leaf
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Conj:
    """All items hold (``Conj(())`` is :data:`TRUE`)."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Disj:
    """At least one item holds (``Disj(())`` is :data:`FALSE`)."""

    items: tuple[Node, ...]


Node = Lit | Conj | Disj
TRUE = Conj(())
FALSE = Disj(())


def normal_form(flt: Filter, storable: Callable[[str], bool] | None = None) -> Node:
    """Validate ``flt`` and rewrite it into simplified negation normal form.

    Args:
        flt: the filter.
        storable: which keys a record of the backend can hold; a leaf on any other key
            matches nothing (and its negation everything).

    Raises:
        ValidationError: ``flt`` is not a tree of the neutral filter nodes, or a leaf
            holds a value that is not a flat scalar.
    """
    return _nnf(flt, False, storable or (lambda key: True))


def _nnf(flt: object, negated: bool, storable: Callable[[str], bool]) -> Node:
    if isinstance(flt, Eq | In | Range):
        node = _leaf(flt, negated)
        if isinstance(node, Lit) and not storable(node.leaf.key):
            return TRUE if negated else FALSE
        return node
    if isinstance(flt, Not):
        return _nnf(flt.clause, not negated, storable)
    if isinstance(flt, And | Or):
        if not isinstance(flt.clauses, tuple | list):
            raise ValidationError(f"{type(flt).__name__}.clauses must be a tuple of filters")
        items = [_nnf(c, negated, storable) for c in flt.clauses]
        conjunctive = isinstance(flt, And) != negated
        return _conj(items) if conjunctive else _disj(items)
    raise ValidationError(
        f"{flt!r} is not a filter; build filters from Eq, In, Range, And, Or and Not"
    )


def _leaf(leaf: Leaf, negated: bool) -> Node:
    if not isinstance(leaf.key, str):
        raise ValidationError(f"filter key {leaf.key!r} must be a string")
    if isinstance(leaf, Eq):
        _check_value(leaf.value)
        if not _storable(leaf.value):
            return TRUE if negated else FALSE
    elif isinstance(leaf, In):
        if not isinstance(leaf.values, tuple | list):
            raise ValidationError("In.values must be a tuple of scalars")
        for v in leaf.values:
            _check_value(v)
        values = tuple(v for v in leaf.values if _storable(v))
        if not values:
            return TRUE if negated else FALSE
        leaf = In(leaf.key, values)
    else:
        for bound in (leaf.gt, leaf.gte, leaf.lt, leaf.lte):
            if bound is not None and (
                isinstance(bound, bool) or not isinstance(bound, int | float)
            ):
                raise ValidationError(f"Range bounds must be numbers, got {bound!r}")
        if _impossible(leaf):
            return TRUE if negated else FALSE
        leaf = Range(  # infinite bounds that every finite number satisfies say nothing
            leaf.key,
            gt=None if leaf.gt == -math.inf else leaf.gt,
            gte=None if leaf.gte == -math.inf else leaf.gte,
            lt=None if leaf.lt == math.inf else leaf.lt,
            lte=None if leaf.lte == math.inf else leaf.lte,
        )
    return Lit(leaf, negated)


def _check_value(value: object) -> None:
    if not isinstance(value, _SCALARS):
        raise ValidationError(f"filter value {value!r} must be str, int, float or bool")


def _storable(value: object) -> bool:
    """False for NaN and infinities, which no stored (finite) value ever equals."""
    return not isinstance(value, float) or math.isfinite(value)


def _impossible(r: Range) -> bool:
    """True when no finite number can satisfy the bounds (NaN or infinite the wrong way)."""
    lows = [b for b in (r.gt, r.gte) if b is not None]
    highs = [b for b in (r.lt, r.lte) if b is not None]
    return any(math.isnan(b) for b in (*lows, *highs)) or any(
        b == math.inf for b in lows
    ) or any(b == -math.inf for b in highs)


def _conj(items: Iterable[Node]) -> Node:
    flat: list[Node] = []
    for item in items:
        if item == FALSE:
            return FALSE
        flat.extend(item.items if isinstance(item, Conj) else (item,))
    if not flat:
        return TRUE
    return flat[0] if len(flat) == 1 else Conj(tuple(flat))


def _disj(items: Iterable[Node]) -> Node:
    flat: list[Node] = []
    for item in items:
        if item == TRUE:
            return TRUE
        flat.extend(item.items if isinstance(item, Disj) else (item,))
    if not flat:
        return FALSE
    return flat[0] if len(flat) == 1 else Disj(tuple(flat))


def equal_literals(value: str | int | float | bool) -> list[str | int | float | bool]:
    """The stored values ``v`` for which ``v == value`` in Python, up to int/float.

    Backends keep booleans apart from numbers, Python does not (``True == 1 == 1.0``),
    and :func:`~mars_core.index.base.matches` follows Python. Both backends compare
    ints and floats numerically, so ``1`` stands for ``1.0`` too.

    Examples:
        >>> equal_literals(True), equal_literals(0.0), equal_literals(2), equal_literals("1")
        ([True, 1], [0.0, False], [2], ['1'])
    """
    if isinstance(value, bool):
        return [value, int(value)]
    if isinstance(value, int | float) and value in (0, 1):
        return [value, bool(value)]
    return [value]
