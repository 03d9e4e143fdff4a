"""A Chroma vector backend: embedded (in memory or on disk) or a ``chroma run`` server.

:class:`ChromaBackend` stores each collection of the protocol as one Chroma collection
named ``collection_prefix + name``, in cosine space, with our own (L2-normalised)
embeddings — Chroma is never asked to embed anything, so it works offline. Scores are
``1 - cosine distance``.

* **Dimension.** A collection's dimension is kept in its Chroma metadata
  (``{"mars_dim": dim}``); ``ensure_collection`` with another dimension raises
  :class:`~mars_core.errors.EmbeddingMismatchError`. Dimension-0 collections (the audit
  log, the manifest) hold a constant 1-dimensional dummy embedding, and flush their HNSW
  index every 10 records (:data:`_DOC_SYNC`).
* **The text is metadata.** A record's document is the metadata value ``_mars_doc``;
  Chroma's document field stays empty (:data:`_DOC_KEY` says why; older records are read
  and moved over).
* **Replace, not merge.** Chroma's ``upsert`` and ``update`` *merge* metadata into a
  stored record; we send ``None`` for every stored key the new metadata lacks, so a write
  replaces the record, as the protocol says. A ``vector=None`` record is an ``update`` of
  its metadata alone, so its stored vector is neither re-sent nor re-indexed.
* **Filters.** :func:`to_chroma_where` translates the neutral filters. Chroma's
  ``$ne``/``$nin`` already match records *without* the key (as ``Not`` must), and keep
  booleans apart from numbers (we expand ``Eq(k, 1)`` to ``1`` or ``True``, as Python
  compares). Chroma cannot say "the key is missing or not a number", which a negated
  ``Range`` needs, so a record with a numeric value under ``k`` also carries the hidden
  flag ``"_mars_num:k": True`` (stripped on read), and "not a number" is
  ``{"_mars_num:k": {"$ne": True}}``. Scalar flags rather than one list-valued key: list
  metadata needs Chroma >= 1.1 and, in 1.5.9, a list of a deleted collection resurfaces
  on a new record that reuses its row (found by this module's property tests).
  Metadata keys starting with ``_mars_`` are reserved. Chroma 1.5.9 also compares an
  integer value with a fractional operand as if the operand were truncated
  (``0 >= 0.5`` is true); :func:`to_chroma_where` adds integral comparisons that undo it.
* **Batches.** :meth:`ChromaBackend.apply` validates the whole batch, then, when it
  needs more than one Chroma write, records a write-ahead intent
  (:mod:`mars_core.backends.wal`) — in fsynced files under the database directory for
  an embedded database, else in the hidden collection ``<prefix>_wal`` — before
  applying it, and replays leftover intents on open (on a server: once the store's
  writer holds the lease, never from a reader): a batch is all-or-nothing across crashes
  (no read isolation). A failure in the middle of a batch leaves its intent; the same
  backend's next write completes it first (another process's: its open, or on a server
  the writer that takes the lease).

What Chroma keeps physically after a delete: the record leaves the results at once,
but the bytes stay on disk for a while.

1. Chroma's own write-ahead log, the ``embeddings_queue`` table of ``chroma.sqlite3``,
   keeps every submitted record — document, metadata, embedding — in plain text
   (chroma issue #3793). A delete only appends a ``DELETE`` row; the old ``ADD`` rows
   are purged only after the collection's HNSW segment has persisted past them, which
   happens every ``sync_threshold`` writes (chroma issue #7659): Chroma's default 1000
   for collections with vectors, 10 for the vector-less ones.
2. The HNSW segment files keep a deleted vector's bytes, marked deleted, until the index
   is rebuilt.
3. SQLite reuses freed pages without zeroing them, so purged rows stay readable in the
   file until a ``VACUUM`` (``chroma vacuum``).
4. ``delete_collection`` does not cascade to every table in 1.x (chroma issues #4885,
   #5520); this backend deletes none (the ephemeral one drops its whole database) and
   keeps no list-valued metadata, which we saw resurface on new records after a drop.

So a delete is not an erasure on disk. The privacy layer adds crypto-shredding on top
(store ciphertext, destroy the key); this module does not pretend otherwise.

An embedded Chroma saves its HNSW segments at their allocated capacity, never-used slots
included, and those hold this process's freed memory — possibly plaintext from before it
was sealed. A persistent backend zeroes them when it closes and before it opens
(:mod:`mars_core.backends._scrub`).

Other limits: one writer per collection set (a lock file guards a persistent
directory; on a server, or with a client passed in, :attr:`shared` is true and the store
takes a writer lease, see :mod:`mars_core.core`); queries above Chroma's brute-force threshold use
HNSW and are approximate; integers must fit in 64 bits.

Examples:
    >>> import numpy as np
    >>> from mars_core.backends.base import Eq, Record
    >>> b = ChromaBackend()                       # ephemeral, private to this instance
    >>> b.ensure_collection("mem", 3)
    >>> b.upsert("mem", [Record("a", np.array([1.0, 0.0, 0.0]), "tea", {"namespace": "u1"}),
    ...                  Record("b", np.array([0.0, 1.0, 0.0]), "coffee", {"namespace": "u2"})])
    >>> hits = b.query("mem", np.array([1.0, 0.1, 0.0]), k=5, where=Eq("namespace", "u1"))
    >>> [(h.record.id, h.record.document, round(h.score, 3)) for h in hits]
    [('a', 'tea', 0.995)]
    >>> b.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeGuard, TypeVar

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
from mars_core.backends._scrub import scrub_index_files
from mars_core.backends.base import (
    DeleteOp,
    Eq,
    Filter,
    In,
    MetaValue,
    Record,
    ScoredRecord,
    UpsertOp,
)
from mars_core.backends.wal import FileIntentStore, IntentStore, Op, WriteAheadLog
from mars_core.errors import (
    ConflictError,
    EmbeddingMismatchError,
    ExtraNotInstalledError,
    MarsBackendError,
    MarsError,
    NotFoundError,
    ValidationError,
)

__all__ = ["NUMERIC_FLAG", "RESERVED_PREFIX", "ChromaBackend", "to_chroma_where"]

Vector = npt.NDArray[np.float32]
Where = dict[str, Any]
_P = ParamSpec("_P")
_R = TypeVar("_R")

RESERVED_PREFIX = "_mars_"
"""Metadata keys starting with this are the backend's own."""

NUMERIC_FLAG = "_mars_num:"
"""Prefix of the hidden flags: ``NUMERIC_FLAG + k`` is True when ``k`` holds a number."""

_NEVER = "_mars_never"

_DOC_KEY = "_mars_doc"
"""The metadata key that holds a record's document; Chroma's own document field stays empty.

Chroma re-indexes a document for full-text search on every write and cannot change a
document without re-sending the vector (without an embedding function it refuses), so
keeping the text in a metadata value lets a write that changes a record's document and
metadata but not its vector (recording an access) update the metadata alone: ~14 ms for
40 records at 10k instead of ~130 ms. Records written before this (text in the document
field) are still read, and the first write that keeps their vector moves the text over
and empties the field.
"""

_DIM_KEY = "mars_dim"
_WAL = "_wal"
_LOCK = "mars-backend.lock"
_PAGE = 2_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_DUMMY = [1.0]

_DOC_SYNC = 10
"""HNSW ``sync_threshold`` (and ``batch_size``) of the vector-less collections (audit,
state, archive, write-ahead intents), whose index holds only the 1-d placeholder vector.

Chroma's local engine purges its write log only up to what the HNSW index has flushed,
every ``sync_threshold`` records (default 1,000), and each write costs time in proportion
to the unpurged log: a collection that took a few large write-ahead intents (an import)
spent ~100 ms on every later one-record write. Flushing a placeholder index every 10
records keeps the log short for a few milliseconds per flush.
"""

_DOC_HNSW = {"sync_threshold": _DOC_SYNC, "batch_size": _DOC_SYNC}
"""The HNSW settings of a vector-less collection beyond the space."""


# --- filter translation ----------------------------------------------------------------


def to_chroma_where(flt: Filter | None) -> Where | None:
    """Translate a neutral filter into Chroma's ``where`` language.

    Returns ``None`` for "everything". A filter no record can match becomes
    ``{"_mars_never": {"$eq": True}}`` (a reserved key no record holds); the backend
    short-cuts it without asking Chroma.

    Raises:
        ValidationError: ``flt`` is not a well-formed filter.

    Examples:
        >>> from mars_core.backends.base import Not, Range
        >>> to_chroma_where(Not(Eq("pinned", True)))
        {'$and': [{'pinned': {'$ne': True}}, {'pinned': {'$ne': 1}}]}
        >>> to_chroma_where(Not(Range("count", gte=1)))
        {'$or': [{'_mars_num:count': {'$ne': True}}, {'count': {'$lt': 1}}]}
    """
    if flt is None:
        return None
    return _emit(_normal_form(flt, _storable_key))


_NOTHING: Where = {_NEVER: {"$eq": True}}


def _emit(node: Node) -> Where | None:
    if node == TRUE:
        return None
    if node == FALSE:
        return dict(_NOTHING)
    return _node(node)


def _node(node: Node) -> Where:
    if isinstance(node, Lit):
        return _negative(node.leaf) if node.negated else _positive(node.leaf)
    parts = [_node(item) for item in node.items]
    return _join("$and" if isinstance(node, Conj) else "$or", parts)


def _join(op: str, parts: list[Where]) -> Where:
    flat: list[Where] = []
    for part in parts:
        flat.extend(part[op] if set(part) == {op} else [part])
    return flat[0] if len(flat) == 1 else {op: flat}


def _groups(values: Sequence[MetaValue]) -> list[list[MetaValue]]:
    """Literals equal to any of ``values``, grouped by Chroma type (``$in`` needs one)."""
    by_type: dict[type, list[MetaValue]] = {}
    for value in values:
        for lit in equal_literals(value):
            bucket = by_type.setdefault(type(lit), [])
            if lit not in bucket:  # one type per bucket, so `in` cannot mix True and 1
                bucket.append(lit)
    return [by_type[t] for t in (str, bool, int, float) if t in by_type]


def _fractional(value: MetaValue) -> TypeGuard[float]:
    return isinstance(value, float) and not value.is_integer()


def _positive(leaf: Leaf) -> Where:
    key = leaf.key
    if isinstance(leaf, Eq | In):
        values = (leaf.value,) if isinstance(leaf, Eq) else tuple(leaf.values)
        exact = [v for v in values if not _fractional(v)]
        parts = [
            {key: {"$eq": g[0]}} if len(g) == 1 else {key: {"$in": g}} for g in _groups(exact)
        ]
        for v in values:  # v == 0.5 as 0.5 <= v <= 0.5, with the comparisons repaired
            if _fractional(v):
                parts.append(_join("$and", [_compare(key, "$gte", v), _compare(key, "$lte", v)]))
        return _join("$or", parts)
    bounds = [(op, b) for op, b in (("$gt", leaf.gt), ("$gte", leaf.gte),
                                    ("$lt", leaf.lt), ("$lte", leaf.lte)) if b is not None]
    if not bounds:  # "is a number": every number is >= 0 or < 0
        return {"$or": [{key: {"$gte": 0}}, {key: {"$lt": 0}}]}
    return _join("$and", [_compare(key, op, b) for op, b in bounds])


def _negative(leaf: Leaf) -> Where:
    key = leaf.key
    not_number: Where = {NUMERIC_FLAG + key: {"$ne": True}}
    if isinstance(leaf, Eq | In):
        values = (leaf.value,) if isinstance(leaf, Eq) else tuple(leaf.values)
        exact = [v for v in values if not _fractional(v)]
        parts: list[Where] = [
            {key: {"$ne": g[0]}} if len(g) == 1 else {key: {"$nin": g}} for g in _groups(exact)
        ]
        for v in values:
            if _fractional(v):
                parts.append(_join("$or", [not_number, _compare(key, "$lt", v),
                                           _compare(key, "$gt", v)]))
        return _join("$and", parts)
    parts = [not_number]
    for op, b in (("$lte", leaf.gt), ("$lt", leaf.gte), ("$gte", leaf.lt), ("$gt", leaf.lte)):
        if b is not None:
            parts.append(_compare(key, op, b))
    return _join("$or", parts)


def _compare(key: str, op: str, bound: float) -> Where:
    """``key <op> bound``, repairing Chroma 1.5's comparison of integers with fractions.

    Chroma compares an *integer* value with a fractional operand as if the operand were
    truncated toward zero (``0 >= 0.5`` holds, ``0 < 0.5`` does not). Where that changes
    the answer we add a comparison with an integral operand, which Chroma gets right for
    integers and floats alike, chosen so that floats keep the exact answer.
    """
    raw: Where = {key: {op: bound}}
    if not _fractional(bound):
        return raw
    floor = math.floor(bound)
    ceil = floor + 1
    positive = bound > 0  # Chroma uses floor for positive operands, ceil for negative
    if op == "$gte" and positive:  # ints got v >= floor; want v > floor
        return {"$and": [raw, {key: {"$gt": floor}}]}
    if op == "$lte" and not positive:  # ints got v <= ceil; want v < ceil
        return {"$and": [raw, {key: {"$lt": ceil}}]}
    if op == "$gt" and not positive:  # ints got v > ceil; want v >= ceil
        return {"$or": [raw, {key: {"$eq": ceil}}]}
    if op == "$lt" and positive:  # ints got v < floor; want v <= floor
        return {"$or": [raw, {key: {"$eq": floor}}]}
    return raw


def _storable_key(key: str) -> bool:
    """Whether a record can hold ``key`` (the others match no positive leaf)."""
    return bool(key) and not key.startswith(("$", "#", "chroma:", RESERVED_PREFIX))


# --- the backend -----------------------------------------------------------------------


def _import_chromadb() -> Any:
    try:
        import chromadb
    except ImportError as exc:
        raise ExtraNotInstalledError("chroma", "chromadb") from exc
    return chromadb


_guarded = guarded


@contextlib.contextmanager
def _client_errors(action: str) -> Iterator[None]:
    """Wrap anything the Chroma client raises as :class:`MarsBackendError`."""
    try:
        yield
    except MarsError:
        raise
    except Exception as exc:
        raise MarsBackendError(
            f"Chroma could not {action}: {exc}. Check that the Chroma directory is "
            "writable or the server is reachable, then retry; an unfinished batch is "
            "completed by this backend's next write (after a crash: see recover)"
        ) from exc


class _Coll:
    """A cached Chroma collection handle and its dimension."""

    __slots__ = ("dim", "handle")

    def __init__(self, handle: Any, dim: int) -> None:
        self.handle = handle
        self.dim = dim


class ChromaBackend(IntentBackend):
    """The :class:`~mars_core.backends.base.VectorBackend` protocol over Chroma.

    Pick one way to reach Chroma (none: an ephemeral in-memory database private to this
    instance):

    Args:
        client: an existing ``chromadb`` client (not closed by :meth:`close`).
        path: a directory for an embedded persistent database (``PersistentClient``);
            guarded by a lock file, so one backend at a time uses it.
        host: a Chroma server (``chroma run --path DIR --port N``), via ``HttpClient``.
        port: the server's port (default 8000).
        collection_prefix: prepended to every collection name, so several stores can
            share one server.
        intents: where write-ahead intents go: ``"file"`` (fsynced files in
            ``path/<prefix>wal-intents``, the default with ``path=``; about 0.5 ms per
            batch), or ``"collection"`` (the hidden ``<prefix>_wal`` collection, the
            default otherwise; two more Chroma writes, ~15 ms, per batch).
        recover: replay write-ahead intents left by a crash when opening (default:
            unless the backend is shared, where they may be a live writer's: the
            store that takes the writer lease replays them, a reader never). A
            shared backend used without a store replays them only when you call
            :meth:`recover`, once you know no other client is writing.

    Raises:
        ExtraNotInstalledError: ``chromadb`` is not installed.
        ConflictError: another backend holds ``path``.
        MarsBackendError: Chroma could not be opened or reached.

    Examples:
        >>> from mars_core.backends.base import Record
        >>> with ChromaBackend() as b:
        ...     b.ensure_collection("audit", 0)
        ...     b.upsert("audit", [Record("e1", None, "created", {"op": "add"})])
        ...     [r.document for r in b.get("audit")]
        ['created']
    """

    name = "chroma"

    def __init__(
        self,
        client: Any = None,
        *,
        path: str | os.PathLike[str] | None = None,
        host: str | None = None,
        port: int | None = None,
        collection_prefix: str = "mars_",
        intents: Literal["auto", "collection", "file"] = "auto",
        recover: bool | None = None,
    ) -> None:
        if sum(x is not None for x in (client, path, host)) > 1:
            raise ValidationError("pass at most one of client=, path= and host=")
        if port is not None and host is None:
            raise ValidationError("port= needs host=")
        if intents not in ("auto", "collection", "file") or (intents == "file" and path is None):
            raise ValidationError("intents must be 'auto', 'collection' or 'file' (needs path=)")
        if not isinstance(collection_prefix, str):
            raise ValidationError("collection_prefix must be a string")
        self._lock = threading.RLock()
        self._closed = False
        self._prefix = collection_prefix
        self._cols: dict[str, _Coll] = {}
        self._lock_fd: int | None = None
        self._database: str | None = None
        self._owns_client = client is None
        self._dirty = False
        self._scrub_dir: Path | None = None
        self.shared = path is None and (host is not None or client is not None)
        self.location = "client"
        try:
            self._client = client if client is not None else self._connect(path, host, port)
            with _client_errors("read its batch size limit"):
                self._max_batch = max(1, int(self._client.get_max_batch_size()))
            self._check_name(_WAL, reserved_ok=True)
            with self._lock:
                if path is not None and intents != "collection":
                    with _client_errors("open the write-ahead directory"):
                        store: IntentStore = FileIntentStore(
                            Path(path) / f"{self._prefix}wal-intents")
                else:  # made by the first intent: a reader's client creates nothing
                    store = _IntentCollection(self)
                self._wal = WriteAheadLog(store)
                self._recover_on_open(recover)
        except BaseException:
            self._release()
            raise

    def _connect(self, path: str | os.PathLike[str] | None, host: str | None,
                 port: int | None) -> Any:
        chromadb = _import_chromadb()
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if path is not None:
            directory = Path(path)
            self._take_lock(directory)
            self.location = str(directory)
            self._scrub_dir = directory
            scrub_index_files(directory)  # a crash skipped the last close's scrub
            with _client_errors(f"open the database at {directory}"):
                return chromadb.PersistentClient(path=str(directory), settings=settings)
        if host is not None:
            self.location = f"http://{host}:{port or 8000}"
            with _client_errors(
                f"reach the server at {self.location} (start one with "
                "`chroma run --path DIR --port N`)"
            ):
                client = chromadb.HttpClient(host=host, port=port or 8000, settings=settings)
                client.heartbeat()
            return client
        self.location = "memory"
        self._database = f"mars_{uuid.uuid4().hex}"
        with _client_errors("create an ephemeral database"):
            chromadb.AdminClient(Settings(anonymized_telemetry=False, is_persistent=False)
                                 ).create_database(self._database)
            return chromadb.EphemeralClient(settings=settings, database=self._database)

    def _take_lock(self, directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise MarsBackendError(
                f"cannot use {directory} for a Chroma database: {exc}; pass a writable directory"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise ConflictError(
                f"another Chroma backend has {directory} open; close it first"
            ) from exc
        self._lock_fd = fd

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._cols)} collections"
        return f"ChromaBackend({self.location!r}, prefix={self._prefix!r}, {state})"


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
        col = self._collection(collection)
        if col.dim == 0:
            raise ValidationError(
                f"collection {collection!r} has no vectors; use get(where=...) instead"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be an int >= 0, got {k!r}")
        q = normalised(checked_vector(vector, col.dim, collection))
        node = TRUE if where is None else _normal_form(where, _storable_key)
        if k == 0 or node == FALSE:
            return []
        with _client_errors(f"query collection {collection!r}"):
            if k > _PAGE:
                k = max(1, min(k, int(col.handle.count())))
            res = col.handle.query(
                query_embeddings=[q.tolist()], n_results=k, where=_emit(node),
                include=["documents", "metadatas", "distances"],
            )
        hits = [
            ScoredRecord(Record(rid, None, _document(doc, meta), _read_meta(meta)),
                         1.0 - float(dist))
            for rid, doc, meta, dist in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0],
                strict=True,
            )
        ]
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

        Without ``ids`` the records come in Chroma's storage order (insertion order
        until deletes reuse space).

        Raises:
            NotFoundError: unknown collection.
            ValidationError: bad ids or filter.
        """
        col = self._collection(collection)
        node = TRUE if where is None else _normal_form(where, _storable_key)
        wanted = None if ids is None else list(dict.fromkeys(self._check_ids(ids)))
        if node == FALSE or wanted == []:
            return []
        include = ["documents", "metadatas"] + (["embeddings"] if with_vectors else [])
        found = self._fetch(col, collection, wanted, _emit(node), include)
        if wanted is None:
            return found
        by_id = {r.id: r for r in found}
        return [by_id[i] for i in wanted if i in by_id]

    def close(self) -> None:
        """Release the client (if this backend created it) and the lock; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    def _release(self) -> None:
        client = getattr(self, "_client", None)
        if self._owns_client and client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                if self._database is not None:
                    from chromadb import AdminClient
                    from chromadb.config import Settings

                    AdminClient(Settings(anonymized_telemetry=False, is_persistent=False)
                                ).delete_database(self._database)
            with contextlib.suppress(Exception):
                client.close()
            if self._scrub_dir is not None:  # the client is closed, the lease still held
                scrub_index_files(self._scrub_dir)
        self._cols.clear()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- collections -------------------------------------------------------------------

    def _check_name(self, collection: object, *, reserved_ok: bool = False) -> None:
        if not isinstance(collection, str) or not collection:
            raise ValidationError("a collection name must be a non-empty string")
        if collection == _WAL and not reserved_ok:
            raise ValidationError(f"collection name {_WAL!r} is reserved for write-ahead intents")
        if not _NAME.match(self._prefix + collection):
            raise ValidationError(
                f"Chroma cannot name a collection {self._prefix + collection!r}: use 3-512 "
                "characters from [A-Za-z0-9._-] that start and end with a letter or digit"
            )

    def _ensure(self, collection: str, dim: int) -> None:
        existing = self._lookup(collection)
        if existing is None:
            full = self._prefix + collection
            with _client_errors(f"create collection {full!r}"):
                try:
                    handle = self._client.create_collection(
                        full, metadata={_DIM_KEY: dim}, configuration=_hnsw_config(dim),
                        embedding_function=None,
                    )
                except Exception:  # created concurrently by someone else?
                    if self._lookup(collection) is None:
                        raise
                else:
                    self._cols[collection] = _Coll(handle, dim)
            existing = self._cols[collection]
        elif dim == 0:
            self._tune(existing.handle)
        if existing.dim != dim:
            raise EmbeddingMismatchError(
                f"collection {collection!r} has dimension {existing.dim}, not {dim}; use the "
                "embedder the store was built with, or re-embed into a new store "
                "(store.reembed(...)) or another collection_prefix"
            )

    @staticmethod
    def _tune(handle: Any) -> None:
        """Give a vector-less collection made before :data:`_DOC_SYNC` its sync interval.

        Chroma applies it once the collection is loaded again (the next process, or the
        server's next start); until then the old interval holds.
        """
        hnsw = (getattr(handle, "configuration_json", None) or {}).get("hnsw") or {}
        if hnsw.get("sync_threshold", _DOC_SYNC) != _DOC_SYNC:
            with _client_errors(f"configure collection {handle.name!r}"), \
                    warnings.catch_warnings():  # Chroma warns about its own legacy config
                warnings.simplefilter("ignore", DeprecationWarning)
                handle.modify(configuration={"hnsw": _DOC_HNSW})

    def _lookup(self, collection: str) -> _Coll | None:
        cached = self._cols.get(collection)
        if cached is not None:
            return cached
        from chromadb.errors import NotFoundError as ChromaNotFound

        full = self._prefix + collection
        with _client_errors(f"open collection {full!r}"):
            try:
                handle = self._client.get_collection(full, embedding_function=None)
            except ChromaNotFound:
                return None
        dim = (handle.metadata or {}).get(_DIM_KEY)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise MarsBackendError(
                f"Chroma collection {full!r} was not created by mars-memory (no {_DIM_KEY!r} "
                "in its metadata); choose another collection_prefix"
            )
        self._cols[collection] = _Coll(handle, dim)
        return self._cols[collection]

    def _collection(self, collection: str) -> _Coll:
        if not isinstance(collection, str) or not collection or collection == _WAL:
            raise NotFoundError(f"collection {collection!r} does not exist")
        col = self._lookup(collection)
        if col is None:
            raise NotFoundError(
                f"collection {collection!r} does not exist; call ensure_collection() first"
            )
        return col

    # --- reads -------------------------------------------------------------------------

    def _fetch(self, col: _Coll, collection: str, ids: list[str] | None, where: Where | None,
               include: list[str]) -> list[Record]:
        out: list[Record] = []
        with _client_errors(f"read collection {collection!r}"):
            if ids is not None:
                for i in range(0, len(ids), self._max_batch):
                    res = col.handle.get(ids=ids[i:i + self._max_batch], where=where,
                                         include=include)
                    out += _records(res, col.dim)
                return out
            offset = 0
            while True:
                res = col.handle.get(where=where, include=include, limit=_PAGE, offset=offset)
                page = _records(res, col.dim)
                out += page
                if len(page) < _PAGE:
                    return out
                offset += _PAGE

    # --- writes ------------------------------------------------------------------------

    _reserved_keys = f"keys starting with '#', 'chroma:' or {RESERVED_PREFIX!r}"

    def _request_size(self) -> int:
        return self._max_batch

    def _errors(self, action: str) -> AbstractContextManager[None]:
        return _client_errors(action)

    def _dim(self, collection: str) -> int:
        return self._collection(collection).dim

    def _fetch_ids(self, collection: str, ids: list[str]) -> list[Record]:
        return self._fetch(self._collection(collection), collection, ids, None, [])

    @staticmethod
    def _may_exist(rid: object) -> bool:
        return isinstance(rid, str) and bool(rid)

    @staticmethod
    def _check_id(rid: object) -> None:
        if not isinstance(rid, str) or not rid:
            raise ValidationError(f"record id {rid!r} must be a non-empty string")

    @staticmethod
    def _storable_key(key: str) -> bool:
        return _storable_key(key)

    def _apply(self, ops: Sequence[Op], *, replay: bool) -> None:
        for op in ops:
            col = self._lookup(op.collection)
            if col is None:  # dropped since the intent was written: nothing left to change
                continue
            with _client_errors(f"write collection {op.collection!r}"):
                if isinstance(op, DeleteOp):
                    for i in range(0, len(op.ids), self._max_batch):
                        col.handle.delete(ids=list(op.ids[i:i + self._max_batch]))
                else:
                    self._put(col, op.records, replay=replay)

    def _put(self, col: _Coll, records: Sequence[Record], *, replay: bool) -> None:
        rows = merge_records(records)
        for i in range(0, len(rows), self._max_batch):
            self._put_chunk(col, rows[i:i + self._max_batch], replay=replay)

    def _requests(self, op: Op) -> int:
        """Two requests per chunk when an upsert has records that keep their vector.

        Such a chunk may need an upsert (new vectors, or a record in the older layout whose
        text moves out of the document field) and a metadata update; which one is known
        only after the read in :meth:`_put_chunk`, so both are counted.
        """
        n = super()._requests(op)
        if isinstance(op, UpsertOp) and any(r.vector is None for r in op.records) \
                and self._dim(op.collection):
            return 2 * n
        return n

    def _put_chunk(self, col: _Coll, rows: list[Record], *, replay: bool) -> None:
        """Upsert what needs a vector; update only the metadata of the rest.

        A record that keeps its stored vector (``vector=None``) goes through
        ``Collection.update`` with metadata alone (its document is a metadata value,
        :data:`_DOC_KEY`), so HNSW does not re-link a vector that did not change (re-sending
        it cost ~3 ms per record at 10k memories). A record written before that layout
        (text in Chroma's document field) is upserted once with its stored vector, which
        empties the field.
        """
        res = col.handle.get(ids=[r.id for r in rows], include=["metadatas", "documents"])
        stored = dict(zip(res["ids"], res["metadatas"], strict=True))
        docs = dict(zip(res["ids"], res["documents"], strict=True))
        put: list[Record] = []
        meta_only: list[Record] = []
        for rec in rows:
            if col.dim == 0 or rec.vector is not None:
                put.append(rec)
            elif rec.id not in stored:
                if not replay:
                    raise MarsBackendError(
                        f"record {rec.id!r} was deleted by someone else while this write "
                        "ran; retry the operation"
                    )  # on replay: deleted later in the replayed batch (see wal.py)
            elif not docs[rec.id]:
                meta_only.append(rec)
            else:
                put.append(rec)
        if put:
            col.handle.upsert(ids=[r.id for r in put], embeddings=self._vectors(col, put),
                              documents=[""] * len(put),
                              metadatas=[_write_meta(r, stored.get(r.id)) for r in put])
        if meta_only:
            col.handle.update(ids=[r.id for r in meta_only],
                              metadatas=[_write_meta(r, stored[r.id]) for r in meta_only])

    @staticmethod
    def _vectors(col: _Coll, rows: list[Record]) -> list[Any]:
        """The vectors to upsert ``rows`` with: their own, else the stored ones."""
        if col.dim == 0:
            return [_DUMMY] * len(rows)
        missing = [r.id for r in rows if r.vector is None]
        stored: dict[str, Any] = {}
        if missing:
            res = col.handle.get(ids=missing, include=["embeddings"])
            stored = dict(zip(res["ids"], res["embeddings"], strict=True))
        return [r.vector.tolist() if r.vector is not None
                else np.asarray(stored[r.id], dtype=np.float32).tolist() for r in rows]


def _hnsw_config(dim: int) -> dict[str, Any]:
    """The ``configuration`` a collection of dimension ``dim`` (0: no vectors) is made with.

    Collections with vectors keep Chroma's HNSW defaults (a shorter sync interval measured
    within noise there, at the price of more index flushes).
    """
    return {"hnsw": {"space": "cosine", **(_DOC_HNSW if dim == 0 else {})}}


class _IntentCollection:
    """The :class:`~mars_core.backends.wal.IntentStore` of a :class:`ChromaBackend`."""

    def __init__(self, backend: ChromaBackend) -> None:
        self._backend = backend

    def _handle(self) -> Any:
        """The ``_wal`` collection's handle, or ``None`` before the first intent."""
        col = self._backend._lookup(_WAL)
        return None if col is None else col.handle

    def write_intent(self, records: Sequence[Record]) -> None:
        self._backend._ensure(_WAL, 0)
        handle, step = self._handle(), self._backend._max_batch
        for i in range(0, len(records), step):
            part = records[i:i + step]
            handle.upsert(ids=[r.id for r in part], embeddings=[_DUMMY] * len(part),
                          documents=[""] * len(part),
                          metadatas=[_write_meta(r, None) for r in part])

    def read_intents(self) -> list[Record]:
        handle = self._handle()
        return [] if handle is None else _records(
            handle.get(include=["documents", "metadatas"]), 0)

    def delete_intents(self, ids: Sequence[str]) -> None:
        handle, step = self._handle(), self._backend._max_batch
        for i in range(0, len(ids) if handle is not None else 0, step):
            handle.delete(ids=list(ids[i:i + step]))


# --- record conversion -------------------------------------------------------------------


def _write_meta(rec: Record, stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """Chroma metadata replacing ``stored``: the record's keys, its document, hidden
    flags, and ``None`` for the keys it no longer has."""
    out: dict[str, Any] = {**rec.metadata, _DOC_KEY: rec.document}
    for k, v in rec.metadata.items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            out[NUMERIC_FLAG + k] = True
    for key in stored or {}:
        out.setdefault(key, None)
    return out


def _read_meta(meta: Mapping[str, Any] | None) -> dict[str, MetaValue]:
    return {k: v for k, v in (meta or {}).items()
            if not k.startswith(RESERVED_PREFIX) and v is not None}


def _document(field: str | None, meta: Mapping[str, Any] | None) -> str:
    """A record's document: its :data:`_DOC_KEY` value, else (older records) the field."""
    doc = (meta or {}).get(_DOC_KEY)
    return doc if isinstance(doc, str) else field or ""


def _records(res: Mapping[str, Any], dim: int) -> list[Record]:
    ids = res["ids"]
    docs = res.get("documents") or [None] * len(ids)
    metas = res.get("metadatas") or [None] * len(ids)
    embs = res.get("embeddings")
    out = []
    for i, rid in enumerate(ids):
        vec = None
        if dim and embs is not None:
            vec = np.array(embs[i], dtype=np.float32)
        out.append(Record(rid, vec, _document(docs[i], metas[i]), _read_meta(metas[i])))
    return out
