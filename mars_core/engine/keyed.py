"""The vector index as the store hands it names: by keyed tokens, never by the names.

A vector index keeps, besides vectors, the namespace of each entry (a Chroma collection
per namespace, a Qdrant payload field) and a conversation id to filter on. Those are
names a user can ask to erase, and an index cannot be trusted to forget what it was
sent: Chroma keeps deleted metadata in its own write log and free pages until it
compacts, Qdrant's local files likewise. So :class:`KeyedIndex`, which the store puts
around every index, sends it neither: a namespace is its keyed token
(:meth:`~mars_core.audit.AuditChain.namespace_token`, the audit's), a conversation id its
keyed hash (:meth:`~mars_core.audit.AuditChain.field_token`; ``""`` stays ``""``), in
every entry written, every query's partition and filter, every delete and compaction.
What the index's files hold then names nothing without the audit key, and an erased
namespace or conversation is in them under no name at all.

An erased namespace's stored name (``erased//<token>//<n>``,
:func:`~mars_core.audit.erased_name`) maps to the token it holds: its partitions are
the ones it had while it had its name.

Examples:
    >>> import numpy as np
    >>> from mars_core.audit import AuditChain, erased_token
    >>> from mars_core.index.base import Eq
    >>> from mars_core.index.numpy import NumpyIndex
    >>> from mars_core.model import MemoryStatus
    >>> from mars_core.storage.base import IndexRow
    >>> index = KeyedIndex(NumpyIndex())
    >>> index.use(AuditChain(b"k" * 32))
    >>> row = IndexRow("a", "users/ana", MemoryStatus.ACTIVE, np.array([1.0, 0.0]),
    ...                {"conversation": "chat-with-ana"})
    >>> index.bind("store-1", 2, lambda ns: [row])
    0
    >>> index.query("users/ana", MemoryStatus.ACTIVE, np.array([1.0, 0.0]), 1,
    ...             Eq("conversation", "chat-with-ana"))
    [('a', 1.0)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mars_core.audit import AuditChain, erased_token
from mars_core.errors import ConfigError
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexCapabilities,
    IndexSource,
    Not,
    Or,
    Vector,
    VectorIndex,
)
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow

__all__ = ["KEYED_FIELDS", "KeyedIndex"]

KEYED_FIELDS = frozenset({"conversation"})
"""The filter fields an index receives as keyed hashes."""
_CACHED = 4096
"""Tokens kept per kind (a store's namespaces and conversations in use)."""
_NAMED = 65536
"""Namespaces whose name a token is read back to (an index reading a namespace's rows
asks by token, during a call that passed the name)."""


class KeyedIndex:
    """A :class:`~mars_core.index.base.VectorIndex` that hands ``inner`` keyed tokens
    for namespaces and conversation ids (see the module); ``use`` gives it the key.

    Args:
        inner: the index the store was given or chose.
    """

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.capabilities: IndexCapabilities = inner.capabilities
        self.location: str = inner.location
        self._chain: AuditChain | None = None
        self._names: dict[str, str] = {}  # token -> the name last seen with it
        self._tokens: dict[str, str] = {}  # name -> token (an HMAC each: kept)
        self._fields: dict[tuple[str, str], str] = {}

    def use(self, chain: AuditChain) -> None:
        """Key the tokens with the store's audit key (before the index is bound)."""
        self._chain = chain

    # --- what the index is -----------------------------------------------------------

    @property
    def stamp(self) -> str:
        """The inner index's stamp (it changes when the index is bound or emptied)."""
        return self.inner.stamp

    @stamp.setter
    def stamp(self, value: str) -> None:
        self.inner.stamp = value

    # --- tokens ----------------------------------------------------------------------

    def _key(self) -> AuditChain:
        if self._chain is None:
            raise ConfigError("the index was used before the store gave it its key")
        return self._chain

    def token(self, namespace: str) -> str:
        """The partition a namespace's entries are in."""
        token = self._tokens.get(namespace)
        if token is None:
            token = self._key().namespace_token(namespace)
            if len(self._tokens) >= _CACHED:
                self._tokens.clear()
            self._tokens[namespace] = token
        if erased_token(namespace) is None:  # an erased namespace has no rows to read
            if len(self._names) >= _NAMED and token not in self._names:
                self._names.clear()  # names come back with the next call that uses them
            self._names[token] = namespace
        return token

    def _row(self, row: IndexRow) -> IndexRow:
        fields = {k: self._field(k, v) for k, v in row.fields.items()}
        return IndexRow(row.id, self.token(row.namespace), row.status, row.vector, fields)

    def _field(self, key: str, value: str | int | float | bool) -> str | int | float | bool:
        if key not in KEYED_FIELDS or not isinstance(value, str):
            return value
        cached = self._fields.get((key, value))
        if cached is None:
            cached = self._key().field_token(key, value)
            if len(self._fields) >= _CACHED:
                self._fields.clear()
            self._fields[(key, value)] = cached
        return cached

    def _filter(self, flt: Filter | None) -> Filter | None:
        if flt is None:
            return None
        if isinstance(flt, Eq):
            return Eq(flt.key, self._field(flt.key, flt.value))
        if isinstance(flt, In):
            return In(flt.key, tuple(self._field(flt.key, v) for v in flt.values))
        if isinstance(flt, And | Or):
            return type(flt)(tuple(self._filtered(flt.clauses)))
        if isinstance(flt, Not):
            inner = self._filter(flt.clause)
            assert inner is not None
            return Not(inner)
        return flt

    def _filtered(self, clauses: Iterable[Filter]) -> Iterable[Filter]:
        for clause in clauses:
            out = self._filter(clause)
            assert out is not None
            yield out

    def _source(self, source: IndexSource) -> IndexSource:
        def rows(token: str) -> list[IndexRow]:
            name = self._names.get(token)
            return [] if name is None else [self._row(r) for r in source(name)]
        return rows

    # --- the protocol ------------------------------------------------------------------

    def bind(self, identity: str, dim: int, source: IndexSource,
             recorded: Mapping[str, int] | None = None) -> int:
        return self.inner.bind(identity, dim, self._source(source), recorded)

    def upsert(self, rows: Sequence[IndexRow], *, new: bool = False) -> None:
        self.inner.upsert([self._row(r) for r in rows], new=new)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        self.inner.delete(self.token(namespace), ids)

    def query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
              where: Filter | None = None, *,
              within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        return self.inner.query(self.token(namespace), status, vector, k,
                                self._filter(where), within=within)

    def load(self, namespace: str) -> None:
        self.inner.load(self.token(namespace))

    def mark(self, applied: int) -> None:
        self.inner.mark(applied)

    def forget(self, namespace: str) -> None:
        self.inner.forget(self.token(namespace))

    def clear(self) -> None:
        self.inner.clear()

    def compact(self, namespaces: Sequence[str]) -> str:
        return self.inner.compact([self.token(ns) for ns in namespaces])

    def close(self) -> None:
        self.inner.close()
