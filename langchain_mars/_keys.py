"""Adapter bookkeeping of :class:`~langchain_mars.store.MarsStore`: namespace encoding and
the ``(namespace, key) → memory id`` index.

**Namespace encoding.** A LangGraph namespace is a tuple of non-empty labels; a MaRS
namespace is one string. The encoding escapes ``%`` as ``%25`` and the separator ``/``
as ``%2F`` in every label, then joins the labels with ``/``. It is reversible for any
tuple of non-empty labels, and it keeps the tuple order, so ``("users", "a/b")``
and ``("users", "a", "b")`` never collide.

**Key index.** Which memory currently holds the value of ``(namespace, key)``. It is a
view, rebuilt from the store's records when a :class:`~langchain_mars.store.MarsStore`
opens (the value, key and namespace live in each memory's metadata), and kept up to
date by the store's own writes. It holds no memory logic.

Example:
    >>> encode_namespace(("users", "a/b", "100%"))
    'users/a%2Fb/100%25'
    >>> decode_namespace("users/a%2Fb/100%25")
    ('users', 'a/b', '100%')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from mars_core.errors import ValidationError

__all__ = ["KeyIndex", "Namespace", "decode_namespace", "encode_namespace"]

SEPARATOR = "/"
"""Joins the encoded labels of a namespace."""

MAX_ENCODED = 256
"""Longest MaRS namespace string (``MemoryNode.namespace``)."""

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


@dataclass(frozen=True, slots=True)
class Entry:
    """Where an item lives: the memory holding its current value and that memory's order."""

    node_id: str
    seq: int


@dataclass
class KeyIndex:
    """``(namespace, key) → current memory`` with namespaces listed in sorted order.

    Example:
        >>> ix = KeyIndex()
        >>> ix.set(("docs",), "a", "id-1", seq=1)
        >>> ix.set(("docs",), "a", "id-0", seq=0)  # an older version never wins
        >>> ix.get(("docs",), "a"), ix.namespaces()
        ('id-1', [('docs',)])
    """

    _by_ns: dict[Namespace, dict[str, Entry]] = field(default_factory=dict)

    def get(self, namespace: Namespace, key: str) -> str | None:
        """The memory id of an item, or None."""
        entry = self._by_ns.get(namespace, {}).get(key)
        return None if entry is None else entry.node_id

    def set(self, namespace: Namespace, key: str, node_id: str, *, seq: int) -> None:
        """Point an item at a memory, unless a newer memory (higher ``seq``) holds it."""
        keys = self._by_ns.setdefault(namespace, {})
        old = keys.get(key)
        if old is None or seq >= old.seq:
            keys[key] = Entry(node_id, seq)

    def replace(self, namespace: Namespace, key: str, node_id: str, *, seq: int) -> None:
        """Point an item at a memory unconditionally (after a write of ours)."""
        self._by_ns.setdefault(namespace, {})[key] = Entry(node_id, seq)

    def drop(self, namespace: Namespace, key: str) -> None:
        """Forget an item (missing: no-op); a namespace left empty disappears."""
        keys = self._by_ns.get(namespace)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del self._by_ns[namespace]

    def items(self, namespace: Namespace) -> Iterator[tuple[str, str]]:
        """``(key, memory id)`` pairs of one namespace."""
        return ((k, e.node_id) for k, e in list(self._by_ns.get(namespace, {}).items()))

    def namespaces(self) -> list[Namespace]:
        """Namespaces holding at least one item, sorted."""
        return sorted(self._by_ns)

    def clear(self) -> None:
        """Empty the index (before a rebuild)."""
        self._by_ns.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_ns.values())
