"""A Qdrant vector index: local mode (in memory or a directory) or a server / cluster.

:class:`QdrantIndex` keeps every entry of a store in one Qdrant collection,
``prefix + "entries"``, as a point whose payload is the entry's fields plus the reserved
keys ``_ns`` (the namespace) and ``_st`` (``active`` or ``archived``); a query always
filters on both, which is Qdrant's own recipe for many tenants in one collection (a
server gets a tenant payload index on ``_ns``, so a tenant's points are stored together
and found without a scan). Vectors are our unit vectors under dot-product distance, so
a score is the cosine similarity (not Qdrant's ``Cosine``: qdrant-client's local mode
renormalises stored vectors in place on every search, and scores would drift). The
index's stamp (its identity and the epoch of its last emptying) lives in a one-point
collection ``prefix + "state"``; its position in the change log is kept by the record
store beside that stamp (:mod:`mars_core.engine.indexing`). Point ids must be canonical
UUID strings, which is what the store uses.

* **Filters.** :func:`to_qdrant_filter` translates the neutral filters into
  ``must``/``should``/``must_not``. Qdrant keeps booleans, integers and floats apart in
  exact matches and never matches a float exactly, so ``Eq(k, 1)`` becomes
  ``range 1..1`` or ``True``, as Python compares; ``must_not`` already holds for points
  without the key, as ``Not`` must. Keys other than ``[A-Za-z0-9_-]+`` are quoted.
* **Clusters.** ``collection_options`` pass through to ``create_collection`` (shards,
  replication, write consistency, ...), ``write_ordering`` to every write.
* **What stays on disk.** A server drops a deleted point from search at once but keeps
  its bytes until the optimiser rewrites the segment; local mode with ``path`` keeps
  them in free SQLite pages. No text is ever sent. :meth:`QdrantIndex.compact` leaves
  this to Qdrant's optimiser and says so in the erasure receipt.

Local mode is an exhaustive scan in Python and loads the whole collection when it opens:
fine for tests and small stores; use a server beyond that.

Examples:
    >>> import numpy as np, uuid
    >>> from mars_core.model import MemoryStatus
    >>> from mars_core.model import IndexRow
    >>> a = str(uuid.UUID(int=1))
    >>> index = QdrantIndex()                          # location=":memory:"
    >>> index.bind("store-1", 2, lambda ns: [])
    0
    >>> index.upsert([IndexRow(a, "u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0]), {})])
    >>> index.query("u1", MemoryStatus.ACTIVE, np.array([1.0, 0.1]), k=3)[0][0] == a
    True
    >>> index.close()
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from mars_core.errors import (
    ConflictError,
    ExtraNotInstalledError,
    MarsBackendError,
    MarsError,
    ValidationError,
)
from mars_core.index._filters import FALSE, TRUE, Conj, Leaf, Lit, Node, equal_literals
from mars_core.index._filters import normal_form as _normal_form
from mars_core.index.base import (
    Eq,
    Filter,
    In,
    IndexBase,
    IndexCapabilities,
    IndexSource,
    Vector,
)
from mars_core.model import IndexRow, MemoryStatus

__all__ = ["COLLECTION_OPTIONS", "QdrantIndex", "to_qdrant_filter"]

_NS, _ST = "_ns", "_st"
_STATE_ID = str(uuid.UUID(int=1))
_CHUNK = 256
_PAGE = 1_000
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,100}$")

COLLECTION_OPTIONS = ("shard_number", "sharding_method", "replication_factor",
                      "write_consistency_factor", "on_disk_payload", "hnsw_config",
                      "optimizers_config", "wal_config", "quantization_config",
                      "strict_mode_config", "timeout")
"""The ``create_collection`` arguments ``collection_options`` may set."""


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError as exc:
        raise ExtraNotInstalledError("qdrant", "qdrant-client") from exc
    return models


# --- filter translation ----------------------------------------------------------------


def to_qdrant_filter(flt: Filter | None) -> Any:
    """Translate a neutral filter into a ``qdrant_client.models.Filter`` (or ``None``).

    ``None`` means "everything"; a filter no point can match becomes
    ``Filter(must=[HasIdCondition(has_id=[])])`` (the backend short-cuts it).

    Raises:
        ValidationError: ``flt`` is not a well-formed filter.
        ExtraNotInstalledError: ``qdrant-client`` is not installed.

    Examples:
        >>> from mars_core.index.base import Not
        >>> f = to_qdrant_filter(Not(Eq("namespace", "u1")))
        >>> f.must_not[0].key, f.must_not[0].match.value
        ('namespace', 'u1')
    """
    if flt is None:
        return None
    return _emit(_normal_form(flt, _storable_key))


def _emit(node: Node) -> Any:
    m = _models()
    if node == TRUE:
        return None
    if node == FALSE:
        return m.Filter(must=[m.HasIdCondition(has_id=[])])
    cond = _node(node)
    return cond if isinstance(cond, m.Filter) else m.Filter(must=[cond])


def _node(node: Node) -> Any:
    m = _models()
    if isinstance(node, Lit):
        cond = _leaf(node.leaf)
        return m.Filter(must_not=[cond]) if node.negated else cond
    items = [_node(item) for item in node.items]
    return m.Filter(must=items) if isinstance(node, Conj) else m.Filter(should=items)


def _leaf(leaf: Leaf) -> Any:
    """The condition for a positive leaf (a ``FieldCondition`` or a ``should`` filter)."""
    m = _models()
    key = _path(leaf.key)
    if isinstance(leaf, Eq | In):
        values = (leaf.value,) if isinstance(leaf, Eq) else tuple(leaf.values)
        strings: list[str] = []
        conds: list[Any] = []
        for value in values:
            for lit in equal_literals(value):
                if isinstance(lit, str):
                    strings.append(lit)
                elif isinstance(lit, bool):
                    conds.append(m.FieldCondition(key=key, match=m.MatchValue(value=lit)))
                else:  # ints and floats compare numerically; exact match never sees floats
                    conds.append(m.FieldCondition(key=key, range=m.Range(gte=lit, lte=lit)))
        if strings:
            match = (m.MatchValue(value=strings[0]) if len(strings) == 1
                     else m.MatchAny(any=list(dict.fromkeys(strings))))
            conds.insert(0, m.FieldCondition(key=key, match=match))
        return conds[0] if len(conds) == 1 else m.Filter(should=conds)
    if all(b is None for b in (leaf.gt, leaf.gte, leaf.lt, leaf.lte)):  # "is a number"
        return m.Filter(should=[m.FieldCondition(key=key, range=m.Range(gte=0)),
                                m.FieldCondition(key=key, range=m.Range(lt=0))])
    return m.FieldCondition(
        key=key, range=m.Range(gt=leaf.gt, gte=leaf.gte, lt=leaf.lt, lte=leaf.lte)
    )


def _path(key: str) -> str:
    """Qdrant reads ``a.b`` as a nested path: quote keys that are not plain names."""
    return key if _PLAIN_KEY.match(key) else f'"{key}"'


def _storable_key(key: str) -> bool:
    return bool(key) and key not in (_NS, _ST) and '"' not in key


# --- the index -------------------------------------------------------------------------


@contextlib.contextmanager
def _client_errors(action: str) -> Iterator[None]:
    """Wrap anything the Qdrant client raises as :class:`MarsBackendError`."""
    try:
        yield
    except MarsError:
        raise
    except Exception as exc:
        raise MarsBackendError(
            f"Qdrant could not {action}: {exc}. Check that the directory is writable or the "
            "server is reachable (url, api_key), then retry: the store catches the index up "
            "from its records (or run `mars reindex`)") from exc


class QdrantIndex(IndexBase):
    """The :class:`~mars_core.index.base.VectorIndex` protocol over Qdrant.

    Pick one way to reach Qdrant (none: ``location=":memory:"``):

    Args:
        client: an existing ``QdrantClient`` (not closed by :meth:`close`).
        location: ``":memory:"`` for local in-memory mode.
        path: a directory for local persistent mode (one client at a time).
        url: a Qdrant server or cluster, e.g. ``http://localhost:6333``.
        api_key: the server's API key.
        prefix: starts both collection names, so several stores can share a server.
        prefer_grpc: talk gRPC to the server.
        collection_options: keyword arguments for ``create_collection`` on a server or
            cluster, from :data:`COLLECTION_OPTIONS` — e.g. ``{"shard_number": 6,
            "replication_factor": 2, "write_consistency_factor": 2}``.
        write_ordering: ``"weak"``, ``"medium"`` or ``"strong"`` (``ordering=`` of every
            write on a cluster); ``None`` leaves Qdrant's default.

    Raises:
        ExtraNotInstalledError: ``qdrant-client`` is not installed.
        ConflictError: another client holds ``path``.
        MarsBackendError: Qdrant could not be opened or reached.

    Examples:
        >>> QdrantIndex(prefix="app1_").capabilities.shared
        False
    """

    name = "qdrant"

    def __init__(self, client: Any = None, *, location: str | None = None,
                 path: str | os.PathLike[str] | None = None, url: str | None = None,
                 api_key: str | None = None, prefix: str = "mars_", prefer_grpc: bool = False,
                 collection_options: Mapping[str, Any] | None = None,
                 write_ordering: Literal["weak", "medium", "strong"] | None = None) -> None:
        if write_ordering not in (None, "weak", "medium", "strong"):
            raise ValidationError("write_ordering must be 'weak', 'medium', 'strong' or None, "
                                  f"not {write_ordering!r}")
        if sum(x is not None for x in (client, location, path, url)) > 1:
            raise ValidationError("pass at most one of client=, location=, path= and url=")
        unknown = sorted(set(collection_options or {}) - set(COLLECTION_OPTIONS))
        if unknown:
            raise ValidationError(f"unknown collection_options {unknown}; use any of "
                                  f"{list(COLLECTION_OPTIONS)}")
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValidationError(f"prefix must be 1-100 characters from [A-Za-z0-9_-], not "
                                  f"{prefix!r}")
        self._lock = threading.RLock()
        self._closed = False
        self._ordering = write_ordering
        self._options = dict(collection_options or {})
        self._entries, self._state_name = prefix + "entries", prefix + "state"
        self._owns_client = client is None
        self._client: Any = None
        self._identity = ""
        self._source: IndexSource | None = None
        self._made = False
        remote = url is not None
        if client is not None:
            remote = type(getattr(client, "_client", None)).__name__ != "QdrantLocal"
        self.location = url or (str(path) if path is not None else "client" if client
                                else ":memory:")
        self.capabilities = IndexCapabilities(
            persistent=path is not None or remote, loads_on_demand=False, shared=remote,
            exact=not remote, keeps_deleted=True, concurrent_queries=remote)
        try:
            self._client = client if client is not None else self._connect(
                location, path, url, api_key, prefer_grpc)
        except BaseException:
            self._release()
            raise

    def _connect(self, location: str | None, path: str | os.PathLike[str] | None,
                 url: str | None, api_key: str | None, prefer_grpc: bool) -> Any:
        try:
            from qdrant_client import QdrantClient
        except ImportError as exc:
            raise ExtraNotInstalledError("qdrant", "qdrant-client") from exc
        if path is not None:
            try:
                return QdrantClient(path=str(path))
            except RuntimeError as exc:
                if "already accessed" in str(exc):
                    raise ConflictError(f"another Qdrant client has {path} open; close it "
                                        "first (or use a Qdrant server)") from exc
                raise MarsBackendError(f"Qdrant could not open {path}: {exc}") from exc
            except Exception as exc:
                raise MarsBackendError(f"Qdrant could not open {path}: {exc}; pass a writable "
                                       "directory") from exc
        with _client_errors(f"connect to {url or location or ':memory:'}"):
            if url is not None:
                client = QdrantClient(url=url, api_key=api_key, prefer_grpc=prefer_grpc)
                client.get_collections()  # fail now, not on the first write
                return client
            return QdrantClient(location=location or ":memory:")

    def __repr__(self) -> str:
        return f"QdrantIndex({self.location!r}, collection={self._entries!r})"

    def _write(self) -> dict[str, Any]:
        """Keyword arguments of every write (``ordering``, when set)."""
        if self._ordering is None:
            return {}
        return {"ordering": _models().WriteOrdering(self._ordering)}

    # --- collections -------------------------------------------------------------------

    def _ensure(self, name: str, dim: int) -> None:
        m = _models()
        with _client_errors(f"create collection {name!r}"):
            if self._client.collection_exists(name):
                return
            try:
                self._client.create_collection(
                    name, vectors_config=m.VectorParams(size=dim, distance=m.Distance.DOT),
                    **self._options)
            except Exception:  # created concurrently by someone else?
                if not self._client.collection_exists(name):
                    raise
                return
            if self.capabilities.shared and name == self._entries:
                self._client.create_payload_index(name, field_name=_NS, field_schema=(
                    m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True)))
                self._client.create_payload_index(name, field_name=_ST,
                                                  field_schema=m.PayloadSchemaType.KEYWORD)

    def _partition(self, namespace: str, status: MemoryStatus) -> list[Any]:
        m = _models()
        return [m.FieldCondition(key=_NS, match=m.MatchValue(value=namespace)),
                m.FieldCondition(key=_ST, match=m.MatchValue(value=status.value))]

    # --- protocol ----------------------------------------------------------------------

    def _bind(self, identity: str, dim: int, source: IndexSource,
              recorded: dict[str, int]) -> int:
        """Trust the position recorded under this index's stamp, else 0 (the store
        rebuilds it); an index of another identity, or without a stamp, is emptied."""
        self._identity, self._source = identity, source
        self._ensure(self._state_name, 1)
        with _client_errors("read the index state"):
            found = self._client.retrieve(self._state_name, ids=[_STATE_ID], with_payload=True)
        payload = dict((found[0].payload if found else None) or {})
        self._ensure(self._entries, dim)
        stamp = payload.get("stamp")
        if self._claims(payload.get("identity"), identity) and isinstance(stamp, str):
            self.stamp = stamp
            return recorded.get(stamp, 0)
        self._clear()
        return 0

    def _put_state(self, payload: dict[str, Any]) -> None:
        m = _models()
        with _client_errors("write the index state"):
            self._client.upsert(self._state_name, points=[m.PointStruct(
                id=_STATE_ID, vector=[1.0], payload=payload)], **self._write())

    def _upsert(self, rows: list[IndexRow], new: bool) -> None:
        m = _models()
        for r in rows:
            _check_uuid(r.id)
        with _client_errors("write entries"):
            for i in range(0, len(rows), _CHUNK):
                points = [m.PointStruct(id=r.id, vector=r.vector.tolist(), payload={
                    **r.fields, _NS: r.namespace, _ST: r.status.value})
                    for r in rows[i:i + _CHUNK]]
                self._client.upsert(self._entries, points=points, **self._write())

    def _delete(self, namespace: str, ids: list[str]) -> None:
        m = _models()
        for memory_id in ids:
            _check_uuid(memory_id)
        with _client_errors("delete entries"):
            for i in range(0, len(ids), _CHUNK):
                self._client.delete(self._entries, points_selector=m.FilterSelector(
                    filter=m.Filter(must=[m.HasIdCondition(has_id=ids[i:i + _CHUNK]),
                                          m.FieldCondition(key=_NS, match=m.MatchValue(
                                              value=namespace))])), **self._write())

    def _query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
               where: Filter | None, *, within: tuple[str, ...] | None = None
               ) -> list[tuple[str, float]]:
        m = _models()
        node = TRUE if where is None else _normal_form(where, _storable_key)
        if node == FALSE:
            return []
        extra = _emit(node)
        ids = []
        if within is not None:  # only UUIDs can be points here: other ids match nothing
            points = [i for i in within if _is_uuid(i)]
            if not points:
                return []
            ids = [m.HasIdCondition(has_id=points)]
        flt = m.Filter(must=[*self._partition(namespace, status), *ids,
                             *([extra] if extra is not None else [])])
        with _client_errors(f"query namespace {namespace!r}"):
            points = self._client.query_points(self._entries, query=vector.tolist(), limit=k,
                                               query_filter=flt, with_payload=False,
                                               with_vectors=False).points
        return [(str(p.id), float(p.score)) for p in points]

    def _clear(self) -> None:
        """Drop the entries and restamp the state point."""
        with _client_errors("empty the index"):
            self._client.delete_collection(self._entries)
        assert self.dim is not None
        self._ensure(self._entries, self.dim)
        self.stamp = self._new_stamp(self._identity)
        self._put_state({"identity": self._identity, "stamp": self.stamp})

    def _compact(self, namespaces: list[str]) -> str:
        """Qdrant vacuums deleted points itself (server) or keeps them in free SQLite
        pages (local mode): nothing to rewrite here."""
        return ("qdrant: erased points deleted; their vectors leave the files when Qdrant "
                "vacuums the segment")

    def _release(self) -> None:
        """Close the client (if this index created it)."""
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                self._client.close()


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _check_uuid(value: str) -> None:
    try:
        ok = str(uuid.UUID(value)) == value
    except ValueError:
        ok = False
    if not ok:
        raise ValidationError(f"Qdrant ids must be canonical UUID strings (like "
                              f"{uuid.UUID(int=1)}), not {value!r}")
