"""Namespace tuples ↔ MaRS namespace strings (the encoding every adapter shares).

A LangGraph namespace (or a LangMem template's result) is a tuple of non-empty labels; a
MaRS namespace is one string. The encoding escapes ``%`` as ``%25`` and the separator
``/`` as ``%2F`` in every label, then joins the labels with ``/``. It is reversible for
any tuple of non-empty labels and keeps the order, so ``("users", "a/b")`` and
``("users", "a", "b")`` never collide.

Examples:
    >>> encode_namespace(("users", "a/b", "100%"))
    'users/a%2Fb/100%25'
    >>> decode_namespace("users/a%2Fb/100%25")
    ('users', 'a/b', '100%')
"""

from __future__ import annotations

from mars_core.errors import ValidationError

__all__ = ["ITEM_KEY", "MAX_ENCODED", "SEPARATOR", "Namespace", "decode_namespace",
           "encode_namespace"]

SEPARATOR = "/"
"""Joins the encoded labels of a namespace."""

MAX_ENCODED = 256
"""Longest MaRS namespace string (``MemoryNode.namespace``)."""
ITEM_KEY = "langgraph"
"""Metadata key under which a memory keeps the LangGraph item it holds (namespace, key,
value): written by ``langchain_mars.MarsStore`` and by
:func:`mars_core.importers.import_langgraph`."""

Namespace = tuple[str, ...]


def _escape(label: str) -> str:
    return label.replace("%", "%25").replace(SEPARATOR, "%2F")


def _unescape(label: str) -> str:
    return label.replace("%2F", SEPARATOR).replace("%25", "%")


def encode_namespace(namespace: Namespace) -> str:
    """The MaRS namespace string of a LangGraph namespace tuple.

    Raises:
        ValidationError: an empty tuple, an empty or non-string label, or an encoded
            form longer than 256 characters.
    """
    if not namespace or any(not isinstance(x, str) or not x for x in namespace):
        raise ValidationError("a namespace is a non-empty tuple of non-empty strings")
    encoded = SEPARATOR.join(_escape(x) for x in namespace)
    if len(encoded) > MAX_ENCODED:
        raise ValidationError(f"namespace {len(encoded)} characters long once encoded; "
                              f"the limit is {MAX_ENCODED}: use shorter labels")
    return encoded


def decode_namespace(encoded: str) -> Namespace:
    """The LangGraph namespace tuple of an encoded MaRS namespace string."""
    return tuple(_unescape(x) for x in encoded.split(SEPARATOR))
