"""Namespaces from what the framework already knows (LangMem-style templates).

A :class:`NamespaceTemplate` is a tuple of parts such as ``("memories", "{user_id}")``;
its ``{placeholders}`` are filled, per call, from the LangGraph runtime context
(``runtime.context``: a mapping, a dataclass or a pydantic model) and from the run
config (``config["configurable"]``), the context winning when both give a key.
``thread_id`` also comes from ``runtime.execution_info`` when a checkpointer is used.

The filled parts are joined into one MaRS namespace string by the core's encoding
(:mod:`mars_core.namespaces`): ``/`` between parts, and ``%`` and ``/`` percent-encoded
inside a part, so two different tuples never map to the same string (``("a/b",)`` →
``"a%2Fb"``, ``("a", "b")`` → ``"a/b"``). A filled value is always *inside* one part: a
``user_id`` of ``"bo/2"`` gives ``"memories/bo%2F2"``, never a third part. A string
template is a namespace path like any namespace string: ``"memories/{user_id}"`` is the
template ``("memories", "{user_id}")``. A placeholder with no value is a
:class:`~mars_core.errors.ValidationError` naming the key and where to set it.

Examples:
    >>> t = NamespaceTemplate(("memories", "{user_id}"))
    >>> t.format({"user_id": "ana"})
    'memories/ana'
    >>> t.resolve(config={"configurable": {"user_id": "bo/2"}})
    'memories/bo%2F2'
    >>> t.keys
    ('user_id',)
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from mars_core.errors import ValidationError
from mars_core.namespaces import canonical_namespace, decode_namespace, encode_namespace

__all__ = [
    "NamespaceLike",
    "NamespaceTemplate",
    "as_template",
    "join_namespace",
    "lookup",
    "resolve_namespace",
    "run_config",
    "run_runtime",
]


def join_namespace(parts: Sequence[str]) -> str:
    """Join namespace parts into one MaRS namespace string.

    The core's encoding (:func:`mars_core.namespaces.encode_namespace`), which
    :class:`~langchain_mars.store.MarsStore` uses for LangGraph namespace tuples too, so
    a template and the store name the same namespace alike.

    Raises:
        ValidationError: no parts, a part that is empty, only whitespace or holds a
            control character, or longer than 256 characters encoded.

    Examples:
        >>> join_namespace(("memories", "ana"))
        'memories/ana'
    """
    if isinstance(parts, str):
        raise ValidationError("namespace parts must be a tuple such as ('memories', 'ana')")
    return encode_namespace(tuple(parts))


def _fields(part: str) -> list[str]:
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(part) if name is not None]
    except ValueError as exc:
        raise ValidationError(f"bad namespace template part {part!r}: {exc}") from None
    for name in names:
        if not name.isidentifier():
            raise ValidationError(f"namespace placeholders must be plain names like "
                                  f"'{{user_id}}', not {{{name}}} in {part!r}")
    return names


def lookup(source: object, key: str) -> object:
    """``source[key]`` or ``source.key`` (mappings, dataclasses, models); None if absent."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(key)
    if dataclasses.is_dataclass(source) or hasattr(source, key):
        return getattr(source, key, None)
    return None


class NamespaceTemplate:
    """Maps framework identifiers (``user_id``, ``thread_id``, ...) to a MaRS namespace.

    Args:
        template: the parts, e.g. ``("memories", "{user_id}")``; a string is a namespace
            path (``"memories/{user_id}"`` is the same template; ``%2F`` writes a ``/``
            inside a part, ``%25`` a ``%``).

    Raises:
        ValidationError: an empty template, an empty part, a string that is not a valid
            namespace path, or a malformed placeholder.

    Examples:
        >>> NamespaceTemplate("chat-{thread_id}").resolve(
        ...     context={"thread_id": "t1"}, config={"configurable": {"thread_id": "t9"}})
        'chat-t1'
        >>> NamespaceTemplate("memories/{user_id}").parts
        ('memories', '{user_id}')
    """

    def __init__(self, template: str | Sequence[str] = ("memories", "{user_id}")) -> None:
        parts = decode_namespace(template) if isinstance(template, str) else tuple(template)
        if not parts or not all(isinstance(p, str) and p for p in parts):
            raise ValidationError("a namespace template needs non-empty string parts")
        self.parts: tuple[str, ...] = parts
        self.keys: tuple[str, ...] = tuple(dict.fromkeys(k for p in parts for k in _fields(p)))
        try:  # the fixed text must follow the part rules too (no NUL, not blank ...)
            sample = tuple(p.format(**dict.fromkeys(self.keys, "x")) for p in parts)
        except (ValueError, IndexError, KeyError) as exc:
            raise ValidationError(f"bad namespace template {parts!r}: {exc}") from None
        encode_namespace(sample)

    def __repr__(self) -> str:
        return f"NamespaceTemplate({self.parts!r})"

    def format(self, values: Mapping[str, object]) -> str:
        """Fill the placeholders from ``values`` and join the parts.

        Raises:
            ValidationError: a placeholder has no (or an empty) value.
        """
        filled: dict[str, str] = {}
        for key in self.keys:
            value = values.get(key)
            if value is None or not str(value):
                raise ValidationError(
                    f"namespace template {self.parts!r} needs {key!r}: pass it in the run "
                    f"config (config={{'configurable': {{'{key}': ...}}}}) or in the "
                    "runtime context (context={...})")
            filled[key] = str(value)
        return join_namespace([p.format(**filled) for p in self.parts])

    def resolve(self, *, config: Mapping[str, Any] | None = None, context: object = None,
                runtime: object = None) -> str:
        """The namespace for one call (see the module for the precedence).

        Args:
            config: a LangChain ``RunnableConfig``; its ``configurable`` is read.
            context: a runtime context object (mapping, dataclass or model).
            runtime: a LangGraph ``Runtime``; its ``context`` and ``execution_info``
                are read (``context`` wins over it when both are given).
        """
        configurable = (config or {}).get("configurable") or {}
        ctx = context if context is not None else getattr(runtime, "context", None)
        info = getattr(runtime, "execution_info", None)
        values: dict[str, object] = {}
        for key in self.keys:
            for source in (ctx, configurable, info):
                value = lookup(source, key)
                if value is not None:
                    values[key] = value
                    break
        return self.format(values)


NamespaceLike: TypeAlias = "str | NamespaceTemplate | tuple[str, ...] | None"
"""A fixed namespace string, a template (or the tuple of one), or None (the store's default)."""


def as_template(namespace: object) -> NamespaceTemplate | str | None:
    """Normalise a :data:`NamespaceLike`: tuples, lists and strings with placeholders
    become templates; other strings are fixed namespaces, checked here (a namespace
    string is a path: :mod:`mars_core.namespaces`).

    Raises:
        ValidationError: an invalid namespace string, or anything else.

    Examples:
        >>> as_template(("memories", "{user_id}"))
        NamespaceTemplate(('memories', '{user_id}'))
        >>> as_template("memories/ana")
        'memories/ana'
    """
    if isinstance(namespace, str):
        return NamespaceTemplate(namespace) if _fields(namespace) else \
            canonical_namespace(namespace)
    if namespace is None or isinstance(namespace, NamespaceTemplate):
        return namespace
    if isinstance(namespace, tuple | list):
        return NamespaceTemplate(tuple(namespace))
    raise ValidationError("namespace must be a string, a NamespaceTemplate, a tuple of "
                          f"template parts or None, not {type(namespace).__name__}")


def resolve_namespace(namespace: NamespaceTemplate | str | None, *,
                      config: Mapping[str, Any] | None = None, context: object = None,
                      runtime: object = None) -> str | None:
    """The namespace of one call: a fixed string as is, a template resolved.

    Examples:
        >>> resolve_namespace(as_template("u-{user_id}"), context={"user_id": 7})
        'u-7'
    """
    if isinstance(namespace, NamespaceTemplate):
        return namespace.resolve(config=config, context=context, runtime=runtime)
    return namespace


def run_config() -> Mapping[str, Any]:
    """The current LangChain/LangGraph run's config (empty outside a run).

    Examples:
        >>> run_config()
        {}
    """
    try:
        from langchain_core.runnables.config import var_child_runnable_config
    except ImportError:  # pragma: no cover - langchain-core is always there with us
        return {}
    return var_child_runnable_config.get() or {}


def run_runtime() -> object:
    """The current LangGraph run's ``Runtime`` (None outside a graph run).

    Examples:
        >>> run_runtime() is None
        True
    """
    try:
        from langgraph.runtime import get_runtime
    except ImportError:
        return None
    try:
        return get_runtime()
    except (RuntimeError, KeyError):  # not inside a graph run
        return None
