"""A Qdrant vector backend: local mode (in memory or a directory) or a server / cluster.

:class:`QdrantBackend` stores each collection of the protocol as one Qdrant collection
named ``collection_prefix + name`` with dot-product distance over the unit vectors the
backend writes and queries with, so the score is the cosine similarity. Not Qdrant's
``Cosine``: it would normalise what is already normalised, and qdrant-client's local mode
does so again in place on every search (the stored float32 vectors move in the last bit,
some back and forth), so scores would depend on how many searches ran before — a
reopened or replayed store could rank differently. A dot product of the vectors as sent
is exact and repeatable; on a server the two are the same search (Qdrant computes cosine
as a dot product of normalised vectors). Collections created with ``Cosine`` before this
keep working as they are. A point's payload is the record's metadata plus ``_doc`` (the
document). Point ids must be UUID strings in canonical form (lower-case, hyphenated),
which is what the store uses; anything else is a :class:`~mars_core.errors.ValidationError`
rather than a silent rewrite.

* **Dimension.** Recorded in the collection's metadata (``{"mars_dim": dim}``, falling
  back to the vector size on servers without collection metadata). Dimension-0
  collections are created without vectors (``vectors_config={}``).
* **Upserts.** A point with a vector is upserted whole (payload replaced); a
  ``vector=None`` record becomes an ``overwrite_payload`` operation, so its vector stays.
  Each protocol upsert is one ``batch_update_points`` request per chunk of 256 points.
* **Filters.** :func:`to_qdrant_filter` translates the neutral filters into
  ``must``/``should``/``must_not``. Qdrant keeps booleans, integers and floats apart in
  exact matches and never matches a float exactly, so ``Eq(k, 1)`` becomes
  ``range 1..1`` or ``True``, as Python compares; ``must_not`` already holds for points
  without the key, as ``Not`` must. Keys other than ``[A-Za-z0-9_-]+`` are quoted.
* **Indexes.** Against a server, keyword payload indexes are created on ``namespace``,
  ``type`` and ``status`` (the store's filters); local mode has no indexes and scans.
* **Batches.** As for Chroma: :meth:`QdrantBackend.apply` validates the whole batch and,
  when it takes more than one request, records a write-ahead intent
  (:mod:`mars_core.backends.wal`) in ``<prefix>_wal`` first; leftovers are replayed on
  open (on a server: once the store's writer holds the lease, never from a reader), so
  a batch is all-or-nothing across crashes (no read isolation).

What Qdrant keeps physically after a delete: a server marks the point deleted in its
segment and drops it from the index at once, but the bytes stay in the segment files
until the optimiser rewrites that segment (vacuum, after ``deleted_threshold`` of a
segment is deleted), and the collection's write-ahead log keeps the original upsert
until it is truncated; snapshots keep everything. Local mode with ``path`` appends
every change to a SQLite table and deletes the row, so the text can survive in free
SQLite pages until ``VACUUM``. The privacy layer's crypto-shredding covers this.

Local mode is an exhaustive scan in Python: fine for tests and small stores, slow for
filtered queries on tens of thousands of points; use a server beyond that. Local mode
with ``path`` also normalises the stored vectors again when it reloads them, so after a
reopen a similarity can move in its 8th-9th digit (a decision does not, short of an
exact tie).

Examples:
    >>> import numpy as np, uuid
    >>> from mars_core.backends.base import Eq, Record
    >>> a, b_ = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    >>> b = QdrantBackend()                      # location=":memory:"
    >>> b.ensure_collection("mem", 3)
    >>> b.upsert("mem", [Record(a, np.array([1.0, 0.0, 0.0]), "tea", {"namespace": "u1"}),
    ...                  Record(b_, np.array([0.0, 1.0, 0.0]), "coffee", {"namespace": "u2"})])
    >>> hits = b.query("mem", np.array([1.0, 0.1, 0.0]), k=5, where=Eq("namespace", "u1"))
    >>> [(h.record.document, round(h.score, 3)) for h in hits]
    [('tea', 0.995)]
    >>> b.close()
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from mars_core._guard import guarded
from mars_core.backends._filters import FALSE, TRUE, Conj, Leaf, Lit, Node, equal_literals
from mars_core.backends._filters import normal_form as _normal_form
from mars_core.backends._intent import IntentBackend
from mars_core.backends._records import (
    checked_vector,
    merge_records,
    normalised,
)
from mars_core.backends.base import (
    DeleteOp,
    Eq,
    Filter,
    In,
    Record,
    ScoredRecord,
    matches,
)
from mars_core.backends.wal import Op, WriteAheadLog
from mars_core.errors import (
    ConflictError,
    EmbeddingMismatchError,
    ExtraNotInstalledError,
    MarsBackendError,
    MarsError,
    NotFoundError,
    ValidationError,
)

__all__ = ["COLLECTION_OPTIONS", "DOC_KEY", "QdrantBackend", "to_qdrant_filter"]

Vector = npt.NDArray[np.float32]
_P = ParamSpec("_P")
_R = TypeVar("_R")

DOC_KEY = "_doc"
"""Payload key of the record's document."""

_DIM_KEY = "mars_dim"
_WAL = "_wal"
_CHUNK = 256
_PAGE = 1_000
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_INDEXED = ("namespace", "type", "status")

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
        >>> from mars_core.backends.base import Not
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
    return bool(key) and key != DOC_KEY and '"' not in key


# --- the backend -----------------------------------------------------------------------


_guarded = guarded


@contextlib.contextmanager
def _client_errors(action: str) -> Iterator[None]:
    """Wrap anything the Qdrant client raises as :class:`MarsBackendError`."""
    try:
        yield
    except MarsError:
        raise
    except Exception as exc:
        raise MarsBackendError(
            f"Qdrant could not {action}: {exc}. Check that the directory is writable or "
            "the server is reachable (url, api_key), then retry; an unfinished batch is "
            "completed by this backend's next write (after a crash: see recover)"
        ) from exc


class QdrantBackend(IntentBackend):
    """The :class:`~mars_core.backends.base.VectorBackend` protocol over Qdrant.

    Pick one way to reach Qdrant (none: ``location=":memory:"``):

    Args:
        client: an existing ``QdrantClient`` (not closed by :meth:`close`).
        location: ``":memory:"`` for local in-memory mode (or a URL, as the client takes).
        path: a directory for local persistent mode (one client at a time).
        url: a Qdrant server or cluster, e.g. ``http://localhost:6333``.
        api_key: the server's API key.
        collection_prefix: prepended to every collection name.
        prefer_grpc: talk gRPC to the server.
        payload_indexes: keyword payload indexes to create on new collections (default:
            ``namespace``, ``type``, ``status`` against a server, none in local mode).
        collection_options: keyword arguments for ``create_collection`` on a server or
            cluster, from :data:`COLLECTION_OPTIONS` — e.g. ``{"shard_number": 6,
            "replication_factor": 2, "write_consistency_factor": 2,
            "on_disk_payload": True}``; applied to collections this backend creates
            (existing ones keep theirs); local mode ignores them.
        write_ordering: ``"weak"`` (Qdrant's default), ``"medium"`` or ``"strong"``: the
            ordering guarantee of every write on a cluster (``ordering=`` of Qdrant's
            update calls); ``None`` leaves Qdrant's default.
        recover: replay write-ahead intents left by a crash when opening (default:
            unless the backend is shared, where they may be a live writer's: the
            store that takes the writer lease replays them, a reader never). A
            shared backend used without a store replays them only when you call
            :meth:`recover`, once you know no other client is writing.

    Raises:
        ExtraNotInstalledError: ``qdrant-client`` is not installed.
        ConflictError: another client holds ``path``.
        MarsBackendError: Qdrant could not be opened or reached.

    Examples:
        >>> import uuid
        >>> from mars_core.backends.base import Record
        >>> with QdrantBackend() as b:
        ...     b.ensure_collection("audit", 0)
        ...     b.upsert("audit", [Record(str(uuid.UUID(int=7)), None, "created", {"op": "add"})])
        ...     [r.document for r in b.get("audit")]
        ['created']
    """

    name = "qdrant"

    def __init__(
        self,
        client: Any = None,
        *,
        location: str | None = None,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection_prefix: str = "mars_",
        prefer_grpc: bool = False,
        payload_indexes: Sequence[str] | None = None,
        collection_options: Mapping[str, Any] | None = None,
        write_ordering: Literal["weak", "medium", "strong"] | None = None,
        recover: bool | None = None,
    ) -> None:
        if write_ordering not in (None, "weak", "medium", "strong"):
            raise ValidationError("write_ordering must be 'weak', 'medium', 'strong' or None, "
                                  f"not {write_ordering!r}")
        self._ordering = write_ordering
        if sum(x is not None for x in (client, location, path, url)) > 1:
            raise ValidationError("pass at most one of client=, location=, path= and url=")
        unknown = sorted(set(collection_options or {}) - set(COLLECTION_OPTIONS))
        if unknown:
            raise ValidationError(f"unknown collection_options {unknown}; use any of "
                                  f"{list(COLLECTION_OPTIONS)}")
        self._options = dict(collection_options or {})
        if not isinstance(collection_prefix, str):
            raise ValidationError("collection_prefix must be a string")
        self._lock = threading.RLock()
        self._closed = False
        self._prefix = collection_prefix
        self._dims: dict[str, int] = {}
        self._owns_client = client is None
        self._dirty = False
        self._client: Any = None
        remote = url is not None or (location not in (None, ":memory:") and path is None)
        if client is not None:
            remote = type(getattr(client, "_client", None)).__name__ != "QdrantLocal"
        self.location = url or (str(path) if path is not None else location or ":memory:")
        self.shared = remote or client is not None
        self._indexes = tuple(payload_indexes if payload_indexes is not None
                              else (_INDEXED if remote else ()))
        try:
            self._client = client if client is not None else self._connect(
                location, path, url, api_key, prefer_grpc)
            self._wal = WriteAheadLog(_IntentCollection(self))  # made by the first intent
            with self._lock:
                self._recover_on_open(recover)
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
                    raise ConflictError(
                        f"another Qdrant client has {path} open; close it first (or use a "
                        "Qdrant server for concurrent access)"
                    ) from exc
                raise MarsBackendError(f"Qdrant could not open {path}: {exc}") from exc
            except Exception as exc:
                raise MarsBackendError(
                    f"Qdrant could not open {path}: {exc}; pass a writable directory"
                ) from exc
        with _client_errors(f"connect to {url or location or ':memory:'}"):
            if url is not None:
                client = QdrantClient(url=url, api_key=api_key, prefer_grpc=prefer_grpc)
                client.get_collections()  # fail now, not on the first write
                return client
            return QdrantClient(location=location or ":memory:", api_key=api_key,
                                prefer_grpc=prefer_grpc)

    def write_options(self) -> dict[str, Any]:
        """Keyword arguments every write passes to the client (``ordering``, when set)."""
        if self._ordering is None:
            return {}
        return {"ordering": _models().WriteOrdering(self._ordering)}

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._dims)} collections"
        return f"QdrantBackend({self.location!r}, prefix={self._prefix!r}, {state})"


    # --- protocol ---------------------------------------------------------------------

    # ensure_collection, upsert, delete, apply: BackendBase; the write path: IntentBackend

    @_guarded
    def query(
        self,
        collection: str,
        vector: Vector | Sequence[float],
        k: int,
        where: Filter | None = None,
    ) -> list[ScoredRecord]:
        """The ``k`` records most similar (cosine) to ``vector`` that match ``where``.

        Sorted by score descending, then id ascending. Records carry no vector.

        Raises:
            NotFoundError: unknown collection.
            EmbeddingMismatchError: ``vector`` has the wrong dimension.
            ValidationError: bad ``k``, vector or filter, or a collection without vectors.
        """
        dim = self._dim(collection)
        if dim == 0:
            raise ValidationError(
                f"collection {collection!r} has no vectors; use get(where=...) instead"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be an int >= 0, got {k!r}")
        q = normalised(checked_vector(vector, dim, collection))
        node = TRUE if where is None else _normal_form(where, _storable_key)
        if k == 0 or node == FALSE:
            return []
        full = self._prefix + collection
        with _client_errors(f"query collection {collection!r}"):
            if k > _PAGE:
                k = max(1, min(k, int(self._client.count(full, exact=True).count)))
            points = self._client.query_points(
                full, query=q.tolist(), limit=k, query_filter=_emit(node),
                with_payload=True, with_vectors=False,
            ).points
        hits = [ScoredRecord(_record(p.id, p.payload, None), float(p.score)) for p in points]
        hits.sort(key=lambda h: (-h.score, h.record.id))
        return hits

    @_guarded
    def get(
        self,
        collection: str,
        ids: Sequence[str] | None = None,
        where: Filter | None = None,
        *,
        with_vectors: bool = False,
    ) -> list[Record]:
        """Records by id (in the order given, missing and repeated ids skipped) and/or filter.

        Without ``ids`` the records come in id order (Qdrant's scroll order).

        Raises:
            NotFoundError: unknown collection.
            ValidationError: bad ids or filter.
        """
        dim = self._dim(collection)
        node = TRUE if where is None else _normal_form(where, _storable_key)
        if node == FALSE:
            return []
        with_vec = with_vectors and dim > 0
        if ids is not None:
            wanted = list(dict.fromkeys(self._check_ids(ids)))
            found = {r.id: r for r in self._retrieve(collection, wanted, with_vec)}
            return [found[i] for i in wanted
                    if i in found and (where is None or matches(where, found[i].metadata))]
        return self._scroll(collection, _emit(node), with_vec)

    def close(self) -> None:
        """Release the client (if this backend created it); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    def _release(self) -> None:
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                self._client.close()
        self._dims.clear()

    # --- collections -------------------------------------------------------------------

    def _ensure(self, collection: str, dim: int) -> None:
        existing = self._lookup(collection)
        if existing is None:
            self._create(collection, dim)
            existing = dim
        if existing != dim:
            raise EmbeddingMismatchError(
                f"collection {collection!r} has dimension {existing}, not {dim}; use the "
                "embedder the store was built with, or re-embed into a new store "
                "(store.reembed(...)) or another collection_prefix"
            )

    def _create(self, collection: str, dim: int) -> None:
        m = _models()
        full = self._prefix + collection
        vectors = m.VectorParams(size=dim, distance=m.Distance.DOT) if dim else {}
        with _client_errors(f"create collection {full!r}"):
            try:
                self._client.create_collection(full, vectors_config=vectors,
                                               metadata={_DIM_KEY: dim}, **self._options)
            except Exception:  # created concurrently by someone else?
                if self._lookup(collection) is None:
                    raise
                return
            for field in self._indexes if collection != _WAL else ():
                self._client.create_payload_index(
                    full, field_name=_path(field), field_schema=m.PayloadSchemaType.KEYWORD)
        self._dims[collection] = dim

    def _lookup(self, collection: str) -> int | None:
        if collection in self._dims:
            return self._dims[collection]
        full = self._prefix + collection
        with _client_errors(f"open collection {full!r}"):
            if not self._client.collection_exists(full):
                return None
            config = self._client.get_collection(full).config
        dim = (getattr(config, "metadata", None) or {}).get(_DIM_KEY)
        if isinstance(dim, bool) or not isinstance(dim, int):
            vectors = config.params.vectors
            dim = int(getattr(vectors, "size", 0) or 0)
        self._dims[collection] = dim
        return dim

    def _dim(self, collection: str) -> int:
        if not isinstance(collection, str) or not collection or collection == _WAL:
            raise NotFoundError(f"collection {collection!r} does not exist")
        dim = self._lookup(collection)
        if dim is None:
            raise NotFoundError(
                f"collection {collection!r} does not exist; call ensure_collection() first"
            )
        return dim

    # --- reads -------------------------------------------------------------------------

    def _retrieve(self, collection: str, ids: Sequence[str], with_vectors: bool) -> list[Record]:
        out: list[Record] = []
        with _client_errors(f"read collection {collection!r}"):
            for i in range(0, len(ids), _PAGE):
                points = self._client.retrieve(self._prefix + collection, ids=ids[i:i + _PAGE],
                                               with_payload=True, with_vectors=with_vectors)
                out += [_record(p.id, p.payload, p.vector if with_vectors else None)
                        for p in points]
        return out

    def _scroll(self, collection: str, flt: Any, with_vectors: bool) -> list[Record]:
        out: list[Record] = []
        offset: Any = None
        with _client_errors(f"read collection {collection!r}"):
            while True:
                points, offset = self._client.scroll(
                    self._prefix + collection, scroll_filter=flt, limit=_PAGE, offset=offset,
                    with_payload=True, with_vectors=with_vectors)
                out += [_record(p.id, p.payload, p.vector if with_vectors else None)
                        for p in points]
                if offset is None:
                    return out

    # --- writes ------------------------------------------------------------------------

    _reserved_keys = f"{DOC_KEY!r}, or a key containing '\"'"

    def _request_size(self) -> int:
        return _CHUNK

    def _errors(self, action: str) -> AbstractContextManager[None]:
        return _client_errors(action)

    def _fetch_ids(self, collection: str, ids: list[str]) -> list[Record]:
        return self._retrieve(collection, ids, False)

    @staticmethod
    def _may_exist(rid: object) -> bool:
        return _is_uuid(rid)

    @staticmethod
    def _check_id(rid: object) -> None:
        _check_id(rid)

    @staticmethod
    def _storable_key(key: str) -> bool:
        return _storable_key(key)

    def _check_name(self, collection: object) -> None:
        _check_name(collection)

    def _check_ids(self, ids: Sequence[str]) -> Sequence[str]:
        for i in super()._check_ids(ids):
            _check_id(i)
        return ids

    def _apply(self, ops: Sequence[Op], *, replay: bool) -> None:
        m = _models()
        for op in ops:
            dim = self._lookup(op.collection)
            if dim is None:  # dropped since the intent was written: nothing left to change
                continue
            full = self._prefix + op.collection
            with _client_errors(f"write collection {op.collection!r}"):
                if isinstance(op, DeleteOp):
                    for i in range(0, len(op.ids), _CHUNK):
                        self._client.delete(full, points_selector=m.PointIdsList(
                            points=list(op.ids[i:i + _CHUNK])), **self.write_options())
                    continue
                rows = merge_records(op.records)
                for i in range(0, len(rows), _CHUNK):
                    self._put(op.collection, dim, rows[i:i + _CHUNK], replay=replay)

    def _put(self, collection: str, dim: int, rows: list[Record], *, replay: bool) -> None:
        m = _models()
        keep = [r.id for r in rows if dim and r.vector is None]
        present = set()
        if keep and replay:
            present = {r.id for r in self._retrieve(collection, keep, False)}
        updates: list[Any] = []
        for rec in rows:
            payload = {**rec.metadata, DOC_KEY: rec.document}
            if dim and rec.vector is None:
                if replay and rec.id not in present:
                    continue  # deleted later in the replayed batch (see wal.py)
                updates.append(m.OverwritePayloadOperation(
                    overwrite_payload=m.SetPayload(payload=payload, points=[rec.id])))
            else:
                vector: Any = rec.vector.tolist() if rec.vector is not None else {}
                updates.append(m.UpsertOperation(upsert=m.PointsList(
                    points=[m.PointStruct(id=rec.id, vector=vector, payload=payload)])))
        if updates:
            self._client.batch_update_points(self._prefix + collection, update_operations=updates,
                                             **self.write_options())


class _IntentCollection:
    """The :class:`~mars_core.backends.wal.IntentStore` of a :class:`QdrantBackend`."""

    def __init__(self, backend: QdrantBackend) -> None:
        self._backend = backend

    def write_intent(self, records: Sequence[Record]) -> None:
        self._backend._ensure(_WAL, 0)
        m = _models()
        points = [m.PointStruct(id=r.id, vector={}, payload={**r.metadata, DOC_KEY: r.document})
                  for r in records]
        self._backend._client.upsert(self._backend._prefix + _WAL, points=points, wait=True,
                                     **self._backend.write_options())

    def read_intents(self) -> list[Record]:
        if self._backend._lookup(_WAL) is None:  # no intent was ever written
            return []
        return self._backend._scroll(_WAL, None, False)

    def delete_intents(self, ids: Sequence[str]) -> None:
        if self._backend._lookup(_WAL) is None:
            return
        m = _models()
        self._backend._client.delete(self._backend._prefix + _WAL,
                                     points_selector=m.PointIdsList(points=list(ids)),
                                     **self._backend.write_options())


# --- record conversion -------------------------------------------------------------------


def _check_name(collection: object) -> None:
    if not isinstance(collection, str) or not collection:
        raise ValidationError("a collection name must be a non-empty string")
    if collection == _WAL:
        raise ValidationError(f"collection name {_WAL!r} is reserved for write-ahead intents")
    if "/" in collection or len(collection) > 200:
        raise ValidationError(
            f"Qdrant cannot name a collection {collection!r}: no '/', at most 200 characters"
        )


def _is_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _check_id(rid: object) -> None:
    if not isinstance(rid, str) or not _is_uuid(rid):
        raise ValidationError(
            f"Qdrant ids must be canonical UUID strings (like {uuid.UUID(int=1)}), "
            f"got {rid!r}; use str(uuid.uuid4()) or uuid5 ids"
        )


def _record(pid: Any, payload: Mapping[str, Any] | None, vector: Any) -> Record:
    data = dict(payload or {})
    doc = data.pop(DOC_KEY, "")
    vec = None if vector is None or isinstance(vector, dict) else np.array(vector, np.float32)
    return Record(str(pid), vec, str(doc), data)
