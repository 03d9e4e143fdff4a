"""One namespace model for every layer: a namespace is a path of parts.

A MaRS namespace is stored as one string, a *path*: its parts joined by ``/``, with
``%`` written ``%25`` and ``/`` written ``%2F`` inside each part. Every call that takes a
namespace accepts either form:

* a **tuple** of parts, e.g. ``("memories", "ana/b")``: encoded here
  (:func:`encode_namespace`), so any text can be a part;
* a **string**, which must already be a valid path (:func:`canonical_namespace`):
  ``"memories/ana"`` *is* ``("memories", "ana")``, and ``"users"`` *is* ``("users",)``.
  A ``%`` not followed by ``25`` or ``2F``, an empty part (``"a//b"``, a leading or
  trailing ``/``) or a part of whitespace only is a
  :class:`~mars_core.errors.ValidationError` that says how to write it.

Every part follows the rules of memory text: not empty, not whitespace only, no NUL or
other control character (U+0000–U+001F, U+007F–U+009F), no lone surrogate. The encoded
string is at most :data:`MAX_ENCODED` (256) characters. What the store hands back
(``MemoryNode.namespace``, ``namespaces()``, the keys of ``stats()``) is this canonical
string, and it re-enters unchanged.

The encoding is injective on tuples (two different tuples never share a string) and
every valid string decodes to exactly one tuple, so no two framework values alias
unless they are the same path. Adapters whose argument is an *opaque identifier* (a
LlamaIndex ``session_id``, a mem0 ``user_id``) use it as **one part**
(:func:`id_namespace`): ``"memories/bob"`` becomes ``"memories%2Fbob"``, never the
LangGraph namespace ``("memories", "bob")``.

Examples:
    >>> encode_namespace(("users", "a/b", "100%"))
    'users/a%2Fb/100%25'
    >>> decode_namespace("users/a%2Fb/100%25")
    ('users', 'a/b', '100%')
    >>> canonical_namespace("memories/bob") == canonical_namespace(("memories", "bob"))
    True
    >>> id_namespace("memories/bob")
    'memories%2Fbob'
    >>> canonical_namespace("100%")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.ValidationError: namespace '100%' has a '%' that is not %25 or %2F
"""

from __future__ import annotations

import re
from typing import TypeAlias

from mars_core.errors import ValidationError

__all__ = [
    "ITEM_KEY",
    "MAX_ENCODED",
    "SEPARATOR",
    "Namespace",
    "NamespaceArg",
    "canonical_namespace",
    "decode_namespace",
    "encode_namespace",
    "id_namespace",
]

SEPARATOR = "/"
"""Joins the encoded parts of a namespace."""

MAX_ENCODED = 256
"""Longest MaRS namespace string (``MemoryNode.namespace``)."""

ITEM_KEY = "langgraph"
"""Metadata key under which a memory keeps the LangGraph item it holds (namespace, key,
value): written by ``langchain_mars.MarsStore`` and by
:func:`mars_core.io.importers.import_langgraph`."""

Namespace: TypeAlias = tuple[str, ...]
"""A namespace as a tuple of parts (a LangGraph namespace)."""

NamespaceArg: TypeAlias = str | tuple[str, ...]
"""What a call may pass as a namespace: a path string or a tuple of parts."""

_BAD_ESCAPE = re.compile(r"%(?!25|2F)")
_ESCAPE = re.compile(r"%(25|2F)")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HOW = ("pass a tuple such as ('memories', 'ana') and MaRS encodes it, or write the string "
        "as parts joined by '/' with '%' escaped as %25 and '/' as %2F inside a part")


def _show(value: object) -> str:
    """A short ``repr`` of a namespace for an error message."""
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _check_part(part: str, index: int, whole: object) -> None:
    """Refuse a part that memory text would refuse (the part as decoded)."""
    where = f"part {index} of namespace {_show(whole)}"
    if not part.strip():
        how = _HOW if isinstance(whole, str) else "every part needs visible text"
        raise ValidationError(f"{where} is empty or only whitespace: {how}")
    if (bad := _CONTROL.search(part)) is not None:
        raise ValidationError(f"{where} contains the control character "
                              f"U+{ord(bad.group()):04X}: namespace parts follow the rules "
                              "of memory text (no NUL or other control characters)")
    if _SURROGATE.search(part) is not None:
        raise ValidationError(f"{where} is not valid Unicode (a lone surrogate)")


def _check_length(encoded: str) -> str:
    if len(encoded) > MAX_ENCODED:
        raise ValidationError(f"namespace {len(encoded)} characters long once encoded; "
                              f"the limit is {MAX_ENCODED}: use shorter parts")
    return encoded


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace(SEPARATOR, "%2F")


def _unescape(part: str) -> str:
    return _ESCAPE.sub(lambda m: "%" if m.group(1) == "25" else SEPARATOR, part)


def encode_namespace(namespace: Namespace) -> str:
    """The MaRS namespace string of a tuple of parts.

    Raises:
        ValidationError: not a non-empty tuple of strings, a part that breaks the part
            rules (see the module), or an encoded form longer than 256 characters.

    Examples:
        >>> encode_namespace(("a/b",)), encode_namespace(("a", "b"))
        ('a%2Fb', 'a/b')
    """
    if not isinstance(namespace, tuple) or not namespace:
        raise ValidationError("a namespace tuple needs at least one part, such as "
                              "('memories', 'ana')")
    for i, part in enumerate(namespace):
        if not isinstance(part, str):
            raise ValidationError(f"namespace part {i} is a {type(part).__name__}: the parts "
                                  "of a namespace tuple are strings")
    for i, part in enumerate(namespace):
        _check_part(part, i, namespace)
    return _check_length(SEPARATOR.join(_escape(x) for x in namespace))


def decode_namespace(encoded: str) -> Namespace:
    """The tuple of parts of a MaRS namespace string.

    Raises:
        ValidationError: ``encoded`` is not a valid namespace string.

    Examples:
        >>> decode_namespace("memories/a%2Fb")
        ('memories', 'a/b')
    """
    return tuple(_unescape(x) for x in canonical_namespace(encoded).split(SEPARATOR))


def canonical_namespace(value: object) -> str:
    """The stored namespace string of a call's namespace (a path string or a tuple).

    A string is returned unchanged once checked: valid strings are canonical, and
    ``encode_namespace(decode_namespace(s)) == s``.

    Raises:
        ValidationError: anything but a string or a tuple, a string that is not a valid
            path, or a tuple :func:`encode_namespace` refuses. The message says how to
            write the namespace.

    Examples:
        >>> canonical_namespace(("users",)), canonical_namespace("users")
        ('users', 'users')
        >>> canonical_namespace("a%2Fb") == canonical_namespace(("a/b",))
        True
    """
    if isinstance(value, tuple):
        return encode_namespace(value)
    if not isinstance(value, str):
        raise ValidationError("a namespace is a string such as 'memories/ana' or a tuple "
                              f"such as ('memories', 'ana'), not {type(value).__name__}")
    if not value:
        raise ValidationError(f"a namespace cannot be empty: {_HOW}")
    if _BAD_ESCAPE.search(value) is not None:
        raise ValidationError(f"namespace {_show(value)} has a '%' that is not %25 or %2F: "
                              f"{_HOW}")
    for i, part in enumerate(value.split(SEPARATOR)):
        _check_part(_unescape(part), i, value)
    return _check_length(value)


def id_namespace(identifier: object, *, what: str = "session_id") -> str:
    """The namespace of an opaque identifier (a session, thread or user id): one part.

    ``/`` and ``%`` in the identifier are escaped, so ``"memories/bob"`` never names the
    namespace ``("memories", "bob")``.

    Raises:
        ValidationError: not a string, or a string the part rules refuse (the message
            names ``what``).

    Examples:
        >>> id_namespace("alice"), id_namespace("memories/bob"), id_namespace("50%")
        ('alice', 'memories%2Fbob', '50%25')
    """
    if not isinstance(identifier, str):
        raise ValidationError(f"{what} must be a string, not {type(identifier).__name__}")
    try:
        return encode_namespace((identifier,))
    except ValidationError as exc:
        raise ValidationError(f"{what} cannot name a namespace: {exc}") from None
