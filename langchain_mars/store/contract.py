"""LangGraph's store contract, checked before a batch runs: namespaces as tuples, keys,
ops, puts and pages."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)

from langchain_mars._keys import Namespace, encode_namespace
from langchain_mars.store.filters import _check_filter
from langchain_mars.store.items import _json
from langchain_mars.store.ttl import _MAX_TTL, _is_ttl
from mars_core.engine.args import collection, phrase
from mars_core.errors import (
    MarsError,
    ValidationError,
)

__all__ = ["InvalidNamespaceLabelError"]


class InvalidNamespaceLabelError(ValidationError, InvalidNamespaceError):
    """A namespace label LangGraph's rules refuse (empty, not a string, holding a ``.`` or
    a NUL, or the reserved root ``"langgraph"`` in a put): LangGraph's
    ``InvalidNamespaceError`` and our :class:`~mars_core.errors.ValidationError` at once,
    so either ``except`` clause catches it."""


@contextlib.contextmanager
def _langgraph_errors() -> Iterator[None]:
    """LangGraph's namespace refusals, raised as :class:`InvalidNamespaceLabelError`."""
    try:
        yield
    except InvalidNamespaceError as exc:
        if isinstance(exc, MarsError):
            raise
        raise InvalidNamespaceLabelError(f"{exc} Use labels such as ('memories', 'ana').") \
            from None


def _as_tuple(namespace: object, what: str = "namespace") -> Namespace:
    """A LangGraph namespace as a tuple (a list is accepted); a string is refused.

    LangGraph's stores take tuples; a string would be read label by label (``"users"``
    as ``("u", "s", "e", "r", "s")``), so it is refused before anything runs.
    """
    if isinstance(namespace, tuple | list):
        labels = tuple(namespace)
        for label in labels:  # before LangGraph's message prints a label of any size
            if not isinstance(label, str):
                raise InvalidNamespaceLabelError(
                    f"a MarsStore {what}'s labels must be strings, not "
                    f"{type(label).__name__}. Use labels such as ('memories', 'ana').")
        return labels
    if isinstance(namespace, str):
        raise ValidationError(f"a MarsStore {what} is a tuple of labels, not the string "
                              f"{namespace[:60]!r}: pass a tuple such as {(namespace[:60],)!r} "
                              "or ('memories', 'ana')")
    raise ValidationError(f"a MarsStore {what} is a tuple of string labels such as "
                          f"('memories', 'ana'), not {type(namespace).__name__}")


def _key(key: object) -> str:
    """An item key as a caller gives it: a non-empty string. LangGraph's ``get``/``put``/
    ``delete`` would store ``str(key)`` (``put(key=5)`` as ``"5"``, ``get(key=None)``
    reading ``"None"``), which a batch of the same operations refuses.

    Raises:
        ValidationError: anything else.
    """
    if not isinstance(key, str) or not key:
        raise ValidationError(f"an item key must be a non-empty string, not "
                              f"{type(key).__name__ if not isinstance(key, str) else 'empty'}")
    return key


def _optional_tuple(namespace: object, what: str) -> Namespace | None:
    return None if namespace is None else _as_tuple(namespace, what)


def _tuple_namespaces(op: Op) -> Op:
    """``op`` with its namespaces as tuples (see :func:`_as_tuple`)."""
    if isinstance(op, GetOp | PutOp):
        return op._replace(namespace=_as_tuple(op.namespace))
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=_as_tuple(op.namespace_prefix, "namespace prefix"))
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        if not all(isinstance(c, MatchCondition)
                   for c in collection(op.match_conditions, "match_conditions")):
            raise ValidationError("match_conditions must be MatchCondition objects")
        return op._replace(match_conditions=tuple(
            c._replace(path=_as_tuple(c.path, f"{c.match_type} path"))
            for c in op.match_conditions))
    return op


def _check(op: object) -> None:
    """Validate one operation before anything runs (LangGraph's namespace rules included)."""
    if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
        raise ValidationError(f"unknown store operation {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, GetOp | PutOp):
        if not isinstance(op.key, str) or not op.key:
            raise ValidationError("an item key must be a non-empty string")
        encode_namespace(op.namespace)
    if isinstance(op, PutOp):
        _check_put(op)
    elif isinstance(op, SearchOp):
        _check_page(op.limit, op.offset)
        if op.query is not None and not isinstance(op.query, str):
            raise ValidationError("a search query must be a string")
        if op.query and op.query.strip():  # what MemoryStore.retrieve takes
            phrase(op.query, "a search query")
        _check_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        _check_page(op.limit, op.offset)
        if op.max_depth is not None and (isinstance(op.max_depth, bool)
                                         or not isinstance(op.max_depth, int) or op.max_depth < 1):
            raise ValidationError("max_depth must be a positive integer")
        if any(c.match_type not in ("prefix", "suffix") for c in op.match_conditions or ()):
            raise ValidationError("a namespace match type is 'prefix' or 'suffix'")


def _check_put(op: PutOp) -> None:
    if op.ttl is not None and not _is_ttl(op.ttl):
        raise ValidationError(f"ttl must be None or a number of minutes in [0, {_MAX_TTL:.0e}]")
    if op.value is None:
        return
    if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
        raise ValidationError("an item value must be a mapping with string keys")
    _json(op.value)
    if op.index is not None and op.index is not False and (
            not isinstance(op.index, list) or not all(isinstance(f, str) and f for f in op.index)):
        raise ValidationError("index must be False, None or a list of field paths")


def _check_page(limit: object, offset: object) -> None:
    for name, v in (("limit", limit), ("offset", offset)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValidationError(f"{name} must be a non-negative integer")
