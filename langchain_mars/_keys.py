"""Adapter bookkeeping of :class:`~langchain_mars.store.MarsStore`: namespace encoding and
the ``(namespace, key) → memory id`` index.

**Namespace encoding** lives in :mod:`mars_core.namespaces` (shared with the importers
and the LangChain namespace templates) and is re-exported here.

**Key index.** Which memory currently holds the value of ``(namespace, key)``. It is a
view, rebuilt from the store's records when a :class:`~langchain_mars.store.MarsStore`
opens (the value, key and namespace live in each memory's metadata), and kept up to
date by the store's own writes. It holds no memory logic.

Examples:
    >>> decode_namespace(encode_namespace(("users", "a/b")))
    ('users', 'a/b')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from mars_core.namespaces import (
    MAX_ENCODED,
    SEPARATOR,
    Namespace,
    decode_namespace,
    encode_namespace,
)

__all__ = [
    "MAX_ENCODED", "SEPARATOR", "KeyIndex", "Namespace", "decode_namespace", "encode_namespace",
]

@dataclass(frozen=True, slots=True)
class Entry:
    """Where an item lives: the memory holding its current value and that memory's order."""

    node_id: str
    seq: int


@dataclass
class KeyIndex:
    """``(namespace, key) → current memory`` with namespaces listed in sorted order.

    Examples:
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
