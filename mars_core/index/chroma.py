"""A Chroma vector index: embedded (in memory or on disk) or a ``chroma run`` server.

:class:`ChromaIndex` keeps each partition of the index protocol — the active or the
archived memories of one namespace — as a Chroma collection of its own, named
``prefix + "a"`` (active) or ``prefix + "x"`` (archived) ``+`` a 32-hex-digit hash of the
namespace; Chroma recommends a collection per tenant, so a query never sends a namespace
filter (Chroma evaluates filters in SQLite, ~35 ms at 10,000 matching records, while an
unfiltered query is its fast path) and only the namespaces a process serves are loaded.
Collections are created by their first write, with ``sync_threshold`` (see
:class:`ChromaIndex`). The index's stamp (its identity and the epoch of its last emptying)
is the *metadata* of the empty collection ``prefix + "state"``, which Chroma reads from
its catalogue without loading the collection; its position in the change log is kept by
the record store beside that stamp, so an open queries only the namespace it serves
(:mod:`mars_core.engine.indexing`). Chroma is given our own unit embeddings in cosine space
(it never embeds anything, so it works offline); scores are ``1 - cosine distance``.

* **Fields.** An entry's fields are Chroma metadata. Chroma's ``upsert`` merges metadata
  into a stored record, so a replacing write sends ``None`` for the keys the entry no
  longer has. Chroma cannot say "the key is missing or not a number", which a negated
  ``Range`` needs, so an entry with a numeric value under ``k`` also carries the hidden
  flag ``"_mars_num:k": True``.
* **Filters.** :func:`to_chroma_where` translates the neutral filters (see there for
  Chroma 1.5's integer comparisons, which it repairs).
* **What stays on disk.** Chroma keeps a deleted vector in its HNSW files and its own
  write log until it rebuilds them: :meth:`ChromaIndex.compact` rebuilds a namespace's
  collections from the record store (erasure does), and an embedded index deletes the
  segment directories Chroma leaves behind a dropped collection
  (:func:`~mars_core.index._scrub.remove_orphans`). An embedded Chroma also saves its
  HNSW files at their whole allocated capacity, whose never-used slots hold fragments of
  this process's freed memory — which may be a memory's text, though Chroma is never
  sent any: :mod:`mars_core.index._scrub` zeroes them when the index closes and before
  it opens a directory that a crash left unscrubbed.

* **The active partition is rebuilt as it churns.** Chroma never reuses a deleted
  vector's HNSW slot, and the active partition of a namespace whose budget is full loses
  an entry to the archive for nearly every one it gains: at 100,000 observed turns its
  graph held 50,558 slots for 511 live entries (85 MB, loaded whole by its first query,
  searched through the dead ones). An embedded index rebuilds an active partition from
  its own live entries once its dead slots outnumber ``max(2,048, its live entries)``
  (checked at a process's first removal from it, then every that many removals):
  :meth:`ChromaIndex._rebuild_active`.

One process at a time uses a directory (a lock file guards it). Queries above Chroma's
brute-force threshold use HNSW and are approximate: the store rescores what they find
from the exact vectors in the record store.

Examples:
    >>> import numpy as np
    >>> from mars_core.model import MemoryStatus
    >>> from mars_core.model import IndexRow
    >>> index = ChromaIndex()                          # ephemeral, private to this object
    >>> index.bind("store-1", 2, lambda ns: [])
    0
    >>> index.upsert([IndexRow("a", "u1", MemoryStatus.ACTIVE, np.array([1.0, 0.0]),
    ...                        {"type": "semantic"})], new=True)
    >>> [i for i, _ in index.query("u1", MemoryStatus.ACTIVE, np.array([1.0, 0.1]), k=3)]
    ['a']
    >>> index.close()
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import re
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

import numpy as np

from mars_core._lockfile import LockFile, LockHeld
from mars_core.errors import (
    ConflictError,
    ExtraNotInstalledError,
    MarsBackendError,
    MarsError,
    ValidationError,
)
from mars_core.index._filters import FALSE, TRUE, Conj, Leaf, Lit, Node, equal_literals
from mars_core.index._filters import normal_form as _normal_form
from mars_core.index._heap import ARENAS, cap_arenas, check_arenas, trim
from mars_core.index._hnsw import check_segment, element_count, record_sums, recorded_sums
from mars_core.index._scrub import (
    ScrubReport,
    mark_closed,
    read_catalogue,
    remove_orphans,
    scrub_index_files,
    take_closed,
)
from mars_core.index.base import (
    Eq,
    Filter,
    In,
    IndexBase,
    IndexCapabilities,
    IndexSource,
    MetaValue,
    Vector,
    rows_by_namespace,
)
from mars_core.model import IndexRow, MemoryStatus

__all__ = ["NUMERIC_FLAG", "RESERVED_PREFIX", "ChromaIndex", "to_chroma_where"]

_T = TypeVar("_T")

Where = dict[str, Any]

RESERVED_PREFIX = "_mars_"
"""Metadata keys starting with this are the index's own."""

NUMERIC_FLAG = "_mars_num:"
"""Prefix of the hidden flags: ``NUMERIC_FLAG + k`` is True when ``k`` holds a number."""

_NEVER = "_mars_never"
_LOCK = "mars-index.lock"
_STAMP = "mars_stamp"
_PAGE = 2_000
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")
_LETTER = {MemoryStatus.ACTIVE: "a", MemoryStatus.ARCHIVED: "x"}
_log = logging.getLogger(__name__)
_APPLIED = "mars-applied"
_REBUILDING = "mars-rebuilding"
"""Beside the segments while a namespace's collections are dropped and written again:
the partitions concerned, so that an open after a crash rebuilds them from the records."""
_CHURN = 2_048
"""Dead HNSW slots an active partition may hold beyond its live entries (or as many as
those, when more) before it is rebuilt."""


# --- filter translation ----------------------------------------------------------------


def to_chroma_where(flt: Filter | None) -> Where | None:
    """Translate a neutral filter into Chroma's ``where`` language.

    Returns ``None`` for "everything". A filter no record can match becomes
    ``{"_mars_never": {"$eq": True}}`` (a reserved key no record holds); the backend
    short-cuts it without asking Chroma.

    Raises:
        ValidationError: ``flt`` is not a well-formed filter.

    Examples:
        >>> from mars_core.index.base import Not, Range
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


# --- the index -------------------------------------------------------------------------


def _import_chromadb() -> Any:
    try:
        import chromadb
    except ImportError as exc:
        raise ExtraNotInstalledError("chroma", "chromadb") from exc
    return chromadb


@functools.cache
def _base_settings() -> Any:
    """Chroma's settings with its telemetry off, read from the environment once."""
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def _settings(**fields: Any) -> Any:
    """A fresh copy of :func:`_base_settings` with ``fields`` set: Chroma's clients write
    into the settings they are given, and building them anew (reading every ``CHROMA_*``
    variable through pydantic-settings) cost ~7 ms at each open."""
    return _base_settings().model_copy(update=fields, deep=True)


@contextlib.contextmanager
def _client_errors(action: str) -> Iterator[None]:
    """Wrap anything the Chroma client raises as :class:`MarsBackendError`."""
    try:
        yield
    except MarsError:
        raise
    except Exception as exc:
        raise MarsBackendError(
            f"Chroma could not {action}: {exc}. Check that the directory is writable or the "
            "server is reachable, then retry: the store catches the index up from its "
            "records (or run `mars reindex`)") from exc


def partition_name(prefix: str, namespace: str, status: MemoryStatus) -> str:
    """The Chroma collection of a namespace's active or archived entries.

    Examples:
        >>> name = partition_name("mars_", "maya", MemoryStatus.ACTIVE)
        >>> name[:6], len(name)
        ('mars_a', 38)
    """
    digest = hashlib.blake2b(namespace.encode("utf-8"), digest_size=16).hexdigest()
    return f"{prefix}{_LETTER[status]}{digest}"


class ChromaIndex(IndexBase):
    """The :class:`~mars_core.index.base.VectorIndex` protocol over Chroma.

    Pick one way to reach Chroma (none: an ephemeral in-memory database private to this
    object):

    Args:
        client: an existing ``chromadb`` client (not closed by :meth:`close`).
        path: a directory for an embedded persistent database (``PersistentClient``).
        host: a Chroma server (``chroma run --path DIR --port N``), via ``HttpClient``.
        port: the server's port (default 8000).
        prefix: starts every collection name (1-41 characters from ``[A-Za-z0-9._-]``,
            the first a letter or digit), so several stores can share one server.
        max_loaded_collections: on disk (``path=``) only: how many collections the
            process may have used before the index reopens its client, which frees
            what Chroma holds of each (2-6 MB measured even for a handful of entries;
            Chroma's own cache is bounded only by the open-files limit ÷ 5, and
            shrinking it loses entries in chromadb 1.5).
            Checked before each call, so one call may exceed it. A reopen costs tens of
            milliseconds, and a collection used again is read back from its files.
            Measured on a writer adding to 2,000 namespaces in turn: resident memory
            levels off near 0.7 GB at 32 (0.3 GB at 16), where without the bound it
            grew by 2.6 MB per namespace.
        max_loaded_vectors: on disk (``path=``) only: how many vectors the collections
            the process has used may hold together before the index reopens its client
            (as ``max_loaded_collections`` does; Chroma holds a loaded collection's
            whole HNSW graph, about 4.6 KB a 384-dimension vector, measured: 4.6 MB for
            1,000 — so a namespace's archive weighs with its history). Not when only the
            namespaces of the call at hand are loaded: one namespace larger than the
            bound stays loaded while it is the only one used. A collection's vectors
            are counted from its HNSW header when the process first uses it (Chroma's
            ``count()`` reads its whole catalogue: 0.3 s at 100,000), then by what the
            process adds. Default 4,096 (about 20 MB).
        sync_threshold: HNSW ``sync_threshold`` of the collections this index creates
            (Chroma's minimum, 2, by default; Chroma's own default is 1,000). An
            embedded Chroma keeps every write in its log (``embeddings_queue`` in
            ``chroma.sqlite3``) until the collection's HNSW files are saved, which
            happens once ``sync_threshold`` records arrived since the last save; the
            first read of a collection in a process then replays its log with a query
            that scans the whole table (it has no index on the collection). With the
            default, a namespace of fewer than 1,000 memories never saves, so every
            namespace's first query in a process scanned the log of all of them (0.2-
            0.3 s at 100,000 vectors, growing with the store) and every first write into
            a new collection did too. At 2 the log is purged at nearly every write; a
            write into a large collection costs more (it saves the HNSW files and the
            collection's id map: 77 against 51 ms for one vector into 10,000, measured
            on raw chromadb), which the write-behind buffer spreads over a batch.
            Collections made before keep the threshold they were made with (``mars
            reindex`` makes them anew).
        malloc_arenas: on disk (``path=``) only, and on glibc: the first such index to
            open its client caps the process's malloc arenas at this many
            (``mallopt(M_ARENA_MAX)``, :func:`mars_core.index._heap.cap_arenas`; default 2),
            so that the graphs Chroma's threads load and free do not stay resident in
            one heap per thread. Process-wide and once; ``None`` leaves the arenas as
            they are, and ``MALLOC_ARENA_MAX`` in the environment wins. Measured by
            section 6 of ``mars bench store`` (docs/benchmarks/storage.md).

    Raises:
        ExtraNotInstalledError: ``chromadb`` is not installed.
        ConflictError: another process uses ``path``.
        MarsBackendError: Chroma could not be opened or reached.

    Examples:
        >>> ChromaIndex(prefix="app1_").capabilities.keeps_deleted
        True
    """

    name = "chroma"

    def __init__(self, client: Any = None, *, path: str | os.PathLike[str] | None = None,
                 host: str | None = None, port: int | None = None,
                 prefix: str = "mars_", max_loaded_collections: int = 32,
                 max_loaded_vectors: int = 4096, sync_threshold: int = 2,
                 malloc_arenas: int | None = ARENAS) -> None:
        if sum(x is not None for x in (client, path, host)) > 1:
            raise ValidationError("pass at most one of client=, path= and host=")
        if port is not None and host is None:
            raise ValidationError("port= needs host=")
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValidationError("prefix must be 1-41 characters from [A-Za-z0-9._-] starting "
                                  f"with a letter or digit, not {prefix!r}")
        if isinstance(max_loaded_collections, bool) or not isinstance(
                max_loaded_collections, int) or max_loaded_collections < 1:
            raise ValidationError("max_loaded_collections must be a positive int, not "
                                  f"{max_loaded_collections!r}")
        if isinstance(max_loaded_vectors, bool) or not isinstance(
                max_loaded_vectors, int) or max_loaded_vectors < 1:
            raise ValidationError("max_loaded_vectors must be a positive int, not "
                                  f"{max_loaded_vectors!r}")
        if isinstance(sync_threshold, bool) or not isinstance(sync_threshold, int) or \
                sync_threshold < 2:
            raise ValidationError(f"sync_threshold must be an int >= 2 (Chroma's minimum), "
                                  f"not {sync_threshold!r}")
        self._sync_threshold = sync_threshold
        self._arenas = check_arenas(malloc_arenas)
        self._lock = threading.RLock()
        self._closed = False
        self._prefix = prefix
        self._max_loaded = max_loaded_collections
        self._max_vectors = max_loaded_vectors
        self._handles: dict[str, Any] = {}
        self._used: dict[str, int] = {}  # collections used since the client opened: vectors
        self.reopens = 0
        """How often the client was reopened to free loaded collections."""
        self._lock_file: LockFile | None = None
        self._database: str | None = None
        self._owns_client = client is None
        self._scrub_dir: Path | None = None
        self._sums: dict[str, dict[str, list[int]]] | None = None
        self._checked: set[str] = set()
        self._removed: dict[str, int] = {}  # active partition: entries removed since rebuilt
        self._check_at: dict[str, int] = {}  # ... when its dead slots are next counted
        self._cut_short: set[str] = set()  # partitions whose rebuild a crash interrupted
        self.repaired: list[str] = []
        """Namespaces whose damaged files this index found and rebuilt from the records
        (see :mod:`mars_core.index._hnsw`)."""
        self.open_scrub: ScrubReport | None = None
        """What the scrub before opening a directory did (``None``: none was needed,
        the last close scrubbed; see :mod:`mars_core.index._scrub`)."""
        self._source: IndexSource | None = None
        self._identity = ""
        self._client: Any = None
        shared = path is None and (host is not None or client is not None)
        self.capabilities = IndexCapabilities(
            persistent=path is not None or shared, loads_on_demand=False, shared=shared,
            exact=False, keeps_deleted=True, concurrent_queries=True)
        self.location = "client" if client is not None else "memory"
        try:
            self._client = client if client is not None else self._connect(path, host, port)
            with _client_errors("read its batch size limit"):
                self._max_batch = max(1, int(self._client.get_max_batch_size()))
        except BaseException:
            self._release()
            raise

    def _connect(self, path: str | os.PathLike[str] | None, host: str | None,
                 port: int | None) -> Any:
        chromadb = _import_chromadb()
        if path is not None:
            directory = Path(path)
            self._take_lock(directory)
            self.location = str(directory)
            self._scrub_dir = directory
            self._cut_short = self._read_rebuilding()
            if take_closed(directory):  # untouched since a close: its checksums hold
                self._sums = recorded_sums(directory)
            else:  # a crash skipped the last close's scrub (and its removal of orphans)
                remove_orphans(directory)
                self.open_scrub = scrub_index_files(directory)
            return self._persistent_client()
        if host is not None:
            self.location = f"http://{host}:{port or 8000}"
            # plain HTTP (ssl=False): no certificate is ever checked, so the client need
            # not load the machine's CA bundle into TLS contexts it never uses (httpx
            # does for verify=True: two a client, 65-130 ms each here, at every open)
            plain = _settings(chroma_server_ssl_verify=False)
            with _client_errors(f"reach the server at {self.location} (start one with "
                                "`chroma run --path DIR --port N`)"):
                client = chromadb.HttpClient(host=host, port=port or 8000, ssl=False,
                                             settings=plain)
                client.heartbeat()
            return client
        self._database = f"mars_{uuid.uuid4().hex}"
        with _client_errors("create an ephemeral database"):
            chromadb.AdminClient(_settings(is_persistent=False)
                                 ).create_database(self._database)
            return chromadb.EphemeralClient(settings=_settings(), database=self._database)

    def _persistent_client(self) -> Any:
        cap_arenas(self._arenas)  # before Chroma's threads allocate (see mars_core.index._heap)
        chromadb = _import_chromadb()
        with _client_errors(f"open the database at {self.location}"):
            return chromadb.PersistentClient(path=self.location, settings=_settings())

    def _free_loaded(self, keep: Collection[str] = ()) -> None:
        """Reopen an on-disk client that has used more than ``max_loaded_collections``
        collections, or collections of more than ``max_loaded_vectors`` vectors together
        of namespaces beside ``keep`` (those of the call; called at its start, so no
        handle is in use)."""
        if self._scrub_dir is None:
            return
        if len(self._used) <= self._max_loaded and (
                sum(self._used.values()) <= self._max_vectors
                or not self._used.keys() - self._partitions(keep)):
            return
        with contextlib.suppress(Exception):  # closing is best effort
            self._client.close()
        self._handles.clear()
        self._used.clear()
        self._client = self._persistent_client()
        self.reopens += 1
        trim()

    def _take_lock(self, directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock_file = LockFile.take(directory / _LOCK, timeout=0)
        except LockHeld as held:
            raise ConflictError(f"another process ({held.holder or 'unknown'}) has the "
                                f"Chroma index at {directory} open; one process at a time "
                                "uses an embedded index") from None
        except OSError as exc:
            raise MarsBackendError(f"cannot use {directory} for a Chroma index: {exc}; pass a "
                                   "writable directory") from exc

    def __repr__(self) -> str:
        return f"ChromaIndex({self.location!r}, prefix={self._prefix!r})"

    # --- collections -------------------------------------------------------------------

    def _collection(self, name: str, *, create: bool = False) -> Any:
        handle = self._handles.get(name)
        if handle is not None:
            return handle
        from chromadb.errors import NotFoundError as ChromaNotFound

        with _client_errors(f"open collection {name!r}"):
            try:
                handle = self._client.get_collection(name, embedding_function=None)
            except ChromaNotFound:
                if not create:
                    return None
                handle = self._client.get_or_create_collection(
                    name, configuration={"hnsw": {"space": "cosine",
                                                  "sync_threshold": self._sync_threshold}},
                    metadata={"mars_dim": self.dim or 1}, embedding_function=None)
        self._handles[name] = handle
        if self._scrub_dir is not None and name not in self._used:
            # a bound's estimate, never what fails a call: the vectors of the collection's
            # HNSW graph, read from its header (Chroma's count() reads every row of its
            # catalogue: 0.3 s at 100,000), without those not yet flushed to the graph
            self._used[name] = sum(element_count(s) for s in self._segments(name))
        return handle

    def _partitions(self, namespaces: Collection[str]) -> set[str]:
        """The collection names of ``namespaces``' partitions."""
        return {partition_name(self._prefix, ns, status) for ns in namespaces
                for status in MemoryStatus}

    def _using(self, name: str, action: str, use: Callable[[Any], _T], *,
               create: bool = False) -> _T | None:
        """``use(collection)``, or ``None`` when the collection does not exist (and
        ``create`` is false). A call the server refuses (a cached handle of a
        collection that another process dropped and made again, or one caught while it
        is being dropped: an erasure's compaction on a shared server) is made once more
        on the collection opened anew."""
        from chromadb.errors import ChromaError as ChromaNotFound

        for attempt in (1, 2):
            col = self._collection(name, create=create)
            if col is None:
                return None
            try:
                with _client_errors(action):
                    return use(col)
            except MarsBackendError as exc:
                if attempt == 2 or not isinstance(exc.__cause__, ChromaNotFound):
                    raise
                self._handles.pop(name, None)
        raise AssertionError("unreachable")  # pragma: no cover

    def _ours(self) -> list[str]:
        """Names of every partition collection of this prefix."""
        names: list[str] = []
        offset = 0
        with _client_errors("list collections"):
            while True:
                page = self._client.list_collections(limit=1000, offset=offset)
                names += [c.name for c in page]
                if len(page) < 1000:
                    break
                offset += 1000
        state = self._prefix + "state"
        return sorted(n for n in names if n.startswith(self._prefix) and n != state
                      and len(n) == len(self._prefix) + 33)

    def _state_collection(self) -> Any:
        """The state collection as the server has it now (never a cached handle: another
        process may have made it anew), or ``None``."""
        from chromadb.errors import NotFoundError as ChromaNotFound

        with _client_errors("read the index state"):
            try:
                return self._client.get_collection(self._prefix + "state",
                                                   embedding_function=None)
            except ChromaNotFound:
                return None

    # --- protocol ----------------------------------------------------------------------

    def _bind(self, identity: str, dim: int, source: IndexSource,
              recorded: dict[str, int]) -> int:
        """Trust the position recorded under this index's stamp (a read of Chroma's
        catalogue, no collection loaded), else 0 (the store rebuilds it); an index of
        another identity, or without a stamp, is emptied."""
        self._source, self._identity = source, identity
        state = self._state_collection()
        stamp = (state.metadata or {}).get(_STAMP) if state is not None else None
        if isinstance(stamp, str) and self._claims(self._stamped(stamp), identity):
            self.stamp = stamp
            if stamp not in recorded:  # no position the records vouch for
                return 0
            return max(recorded[stamp], self._own_mark())
        self._clear()
        return 0

    def _upsert(self, rows: list[IndexRow], new: bool) -> None:
        self._free_loaded({r.namespace for r in rows})
        for row in rows:  # before anything is written, as IndexBase.upsert promises
            for key in row.fields:
                if not _storable_key(key):
                    raise ValidationError(f"field name {key!r} cannot be stored in Chroma "
                                          "(it reserves keys starting with '#' or 'chroma:')")
        for ns, group in rows_by_namespace(rows).items():
            self._guard(ns)
            for status in MemoryStatus:
                part = [r for r in group if r.status is status]
                if not part:
                    continue
                ids = [r.id for r in part]
                if not new:  # an entry whose status changed leaves the other partition
                    self._using(partition_name(self._prefix, ns, _flip(status)),
                                "move entries between partitions",
                                lambda col, ids=ids: col.delete(ids=ids))  # type: ignore[misc]
                self._put(partition_name(self._prefix, ns, status), part, new)
                if not new and status is not MemoryStatus.ACTIVE:
                    self._churned(ns, len(ids))

    def _put(self, name: str, rows: list[IndexRow], new: bool) -> None:
        for i in range(0, len(rows), self._max_batch):
            chunk = rows[i:i + self._max_batch]

            def write(col: Any, chunk: list[IndexRow] = chunk) -> None:
                ids = [r.id for r in chunk]
                stored: dict[str, Any] = {}
                if not new:
                    res = col.get(ids=ids, include=["metadatas"])
                    stored = dict(zip(res["ids"], res["metadatas"], strict=True))
                col.upsert(ids=ids, embeddings=[r.vector.tolist() for r in chunk],
                           metadatas=[_write_meta(r.fields, stored.get(r.id)) for r in chunk])
                if name in self._used:  # at most: some may have replaced stored ones
                    self._used[name] += len(chunk)

            self._using(name, f"write collection {name!r}", write, create=True)

    def _delete(self, namespace: str, ids: list[str]) -> None:
        self._load(namespace)
        for status in MemoryStatus:
            for i in range(0, len(ids), self._max_batch):
                chunk = ids[i:i + self._max_batch]
                self._using(partition_name(self._prefix, namespace, status),
                            "delete entries",
                            lambda col, chunk=chunk: col.delete(ids=chunk))  # type: ignore[misc]
        self._churned(namespace, len(ids))

    def _load(self, namespace: str) -> None:
        """Check the namespace's files (rebuilt from the records when damaged) and make
        room for its collections: a query of it then touches nothing but Chroma."""
        self._free_loaded((namespace,))
        self._guard(namespace)

    def _query(self, namespace: str, status: MemoryStatus, vector: Vector, k: int,
               where: Filter | None, *, within: tuple[str, ...] | None = None
               ) -> list[tuple[str, float]]:
        node = TRUE if where is None else _normal_form(where, _storable_key)
        if node == FALSE:
            return []
        self._load(namespace)  # nothing left to do after IndexSync.search's load

        def ask(col: Any) -> Any:
            from chromadb.errors import ChromaError

            n = max(1, min(k, int(col.count()))) if k > _PAGE else k
            if within is None:
                return col.query(query_embeddings=[vector.tolist()], n_results=n,
                                 where=_emit(node), include=["distances"])
            # an id allow-list (a time window's ids): far cheaper in Chroma than a
            # metadata range; Chroma refuses one naming an id it does not hold, so the
            # list is then narrowed to the ids it holds (one lookup) and asked again
            ids = list(within)
            try:
                return col.query(query_embeddings=[vector.tolist()],
                                 n_results=min(n, len(ids)), where=_emit(node),
                                 include=["distances"], ids=ids)
            except ChromaError:
                ids = list(col.get(ids=ids, include=[])["ids"])
            if not ids:
                return None
            return col.query(query_embeddings=[vector.tolist()], n_results=min(n, len(ids)),
                             where=_emit(node), include=["distances"], ids=ids)

        res = self._using(partition_name(self._prefix, namespace, status),
                          f"query namespace {namespace!r}", ask)
        if res is None:
            return []
        return [(rid, 1.0 - float(dist))
                for rid, dist in zip(res["ids"][0], res["distances"][0], strict=True)]

    def _mark(self, applied: int) -> None:
        """The record store keeps the position, beside :attr:`stamp`; an index on disk
        also keeps the last position it was told of in its directory (``mars-applied``,
        with its stamp), so that an open finds it *ahead* of the records when they lost
        committed writes (their write-ahead log deleted, an older copy put back): the
        store then rebuilds it from the records and says so
        (:meth:`~mars_core.engine.indexing.IndexSync.bind`)."""
        if self._scrub_dir is None or not self.stamp:
            return
        tmp = self._scrub_dir / (_APPLIED + ".tmp")
        try:
            tmp.write_text(f"{self.stamp} {int(applied)}", encoding="utf-8")
            os.replace(tmp, self._scrub_dir / _APPLIED)
        except OSError:  # only a witness: the records keep the position
            _log.warning("could not write the index's position in %s", self._scrub_dir)

    def _own_mark(self) -> int:
        """The position this directory says the index reached under its stamp (0: none)."""
        if self._scrub_dir is None:
            return 0
        try:
            stamp, _, applied = (self._scrub_dir / _APPLIED).read_text(
                encoding="utf-8").partition(" ")
        except (OSError, ValueError):
            return 0
        return int(applied) if stamp == self.stamp and applied.isdigit() else 0

    def forget(self, namespace: str) -> None:
        """Drop the cached collection handles of a namespace."""
        with self._lock:
            for status in MemoryStatus:
                self._handles.pop(partition_name(self._prefix, namespace, status), None)

    def _clear(self) -> None:
        """Drop every partition, then the state collection (with any mark an older
        layout kept in it) and make it anew under a fresh stamp."""
        from chromadb.errors import NotFoundError as ChromaNotFound

        state = self._prefix + "state"
        with _client_errors("empty the index"):
            for name in self._ours():
                self._client.delete_collection(name)
            self._handles.clear()
            with contextlib.suppress(ChromaNotFound):
                self._client.delete_collection(state)
            fresh = self._new_stamp(self._identity)
            made = self._client.get_or_create_collection(  # another process may be first
                state, configuration={"hnsw": {"space": "cosine"}},
                metadata={"mars_dim": 1, _STAMP: fresh}, embedding_function=None)
            got = (made.metadata or {}).get(_STAMP)
            if isinstance(got, str) and self._stamped(got) == self._identity:
                self.stamp = got
            else:
                self.stamp = fresh
                made.modify(metadata={"mars_dim": 1, _STAMP: fresh})

    def _compact(self, namespaces: list[str]) -> str:
        """Drop each namespace's collections and write them again from the records."""
        self._free_loaded()
        for ns in namespaces:
            self._rewrite(ns)
        return (f"chroma: {len(namespaces)} namespace collection(s) rebuilt from the records, "
                "without the erased vectors")

    def _rewrite(self, ns: str) -> None:
        """Drop a namespace's collections (Chroma drops one without loading its files)
        and write them again from the records."""
        assert self._source is not None
        with self._rebuilding(ns, self._partitions((ns,))):
            for status in MemoryStatus:
                self._drop(partition_name(self._prefix, ns, status))
            self._checked.add(ns)  # new files, written by this process
            rows = list(self._source(ns))
            for status in MemoryStatus:
                part = [r for r in rows if r.status is status]
                if part:
                    self._put(partition_name(self._prefix, ns, status), part, True)

    def _drop(self, name: str) -> None:
        """Drop a collection, if it exists."""
        self._handles.pop(name, None)  # another process may have made it anew
        if self._collection(name) is not None:
            self._handles.pop(name, None)
            with _client_errors(f"rebuild collection {name!r}"):
                self._client.delete_collection(name)

    def _churned(self, ns: str, removed: int) -> None:
        """Count entries removed from a namespace's active partition, and rebuild it
        when its dead HNSW slots have come to outnumber ``max(_CHURN, live entries)``
        (on disk only, where its header says how many slots it has)."""
        name = partition_name(self._prefix, ns, MemoryStatus.ACTIVE)
        done = self._removed[name] = self._removed.get(name, 0) + removed
        if self._scrub_dir is None or done < self._check_at.get(name, 0):
            return  # (the first removal of a process looks: what did earlier ones leave?)
        slots = sum(element_count(s) for s in self._segments(name))
        live = slots if slots <= _CHURN else self._using(
            name, "count entries", lambda col: int(col.count())) or 0
        if slots - live > max(_CHURN, live):
            self._rebuild_active(ns)
            self._removed[name], self._check_at[name] = 0, _CHURN
        else:
            self._check_at[name] = done + max(_CHURN, live)

    def _rebuild_active(self, ns: str) -> None:
        """Write a namespace's active partition again from its own live entries (their
        stored vectors and metadata), without the slots of those it lost."""
        name = partition_name(self._prefix, ns, MemoryStatus.ACTIVE)
        rows = self._stored_rows(name, ns)
        with self._rebuilding(ns, {name}):
            self._drop(name)
            self._put(name, rows, True)
        self._used[name] = len(rows)

    def _stored_rows(self, name: str, ns: str) -> list[IndexRow]:
        """An active partition's entries as Chroma holds them (vectors, and metadata with
        its hidden flags, which :func:`_write_meta` writes back unchanged)."""
        rows: list[IndexRow] = []
        while True:
            def page(col: Any, offset: int = len(rows)) -> Any:
                return col.get(limit=self._max_batch, offset=offset,
                               include=["embeddings", "metadatas"])

            got = self._using(name, f"read collection {name!r}", page)
            if not got or not got["ids"]:
                return rows
            rows += [IndexRow(i, ns, MemoryStatus.ACTIVE, np.asarray(v, dtype=np.float32),
                              m or {})
                     for i, v, m in zip(got["ids"], got["embeddings"], got["metadatas"],
                                        strict=True)]

    @contextlib.contextmanager
    def _rebuilding(self, ns: str, names: set[str]) -> Iterator[None]:
        """Say beside the segments, durably, that these partitions of ``ns`` are being
        dropped and written again, until they are (on disk only): a crash in between
        leaves them short, and the next process to use the namespace rebuilds it from the
        records (:meth:`_guard`); so does this process's next call after an error."""
        if self._scrub_dir is None:
            yield
            return
        self._write_rebuilding(self._cut_short | names)
        try:
            yield
        except BaseException:
            self._cut_short |= names
            self._checked.discard(ns)
            raise
        self._cut_short -= names
        self._write_rebuilding(self._cut_short)
        remove_orphans(self._scrub_dir)  # the dropped files, now rather than at close

    def _read_rebuilding(self) -> set[str]:
        assert self._scrub_dir is not None
        try:
            text = (self._scrub_dir / _REBUILDING).read_text(encoding="utf-8")
        except OSError:
            return set()
        return set(text.split())

    def _write_rebuilding(self, names: set[str]) -> None:
        assert self._scrub_dir is not None
        path = self._scrub_dir / _REBUILDING
        with _client_errors("record a rebuild in progress"):  # OSError: refused, before
            if not names:
                path.unlink(missing_ok=True)
                return
            with path.open("w", encoding="utf-8") as fh:
                fh.write("\n".join(sorted(names)))
                fh.flush()
                os.fsync(fh.fileno())

    def _guard(self, ns: str) -> None:
        """Check a namespace's HNSW files the first time this process uses them, before
        Chroma loads them (:mod:`mars_core.index._hnsw`), and rebuild its collections from
        the records when they are damaged: a flipped byte would otherwise crash the
        process on the first query."""
        if self._scrub_dir is None or ns in self._checked:
            return
        found = []
        for status in MemoryStatus:
            for segment in self._segments(partition_name(self._prefix, ns, status)):
                recorded = self._sums.get(segment.name) if self._sums is not None else None
                why = check_segment(segment, recorded)
                if why is not None:
                    found.append(f"{segment.name}: {why}")
        if self._partitions((ns,)) & self._cut_short:
            found.append("a rebuild of its collections was cut short")
        if found:
            _log.warning("damaged index files in %s (%s): the namespace's collections are "
                         "rebuilt from the records", self.location, "; ".join(found))
            self._rewrite(ns)
            self.repaired.append(ns)
        self._checked.add(ns)

    def _segments(self, name: str) -> list[Path]:
        """The HNSW directories of a collection, from Chroma's catalogue (read as a file:
        no collection is loaded); every segment directory when the catalogue cannot be
        read that way (another Chroma version)."""
        assert self._scrub_dir is not None
        directory = self._scrub_dir
        rows = read_catalogue(
            directory, "SELECT s.id FROM segments s JOIN collections c ON c.id = "
            "s.collection WHERE c.name = ? AND s.scope = 'VECTOR'", (name,))
        if rows is None:
            return [h.parent for h in sorted(directory.glob("*/header.bin"))]
        return [directory / str(r[0]) for r in rows
                if (directory / str(r[0]) / "header.bin").is_file()]

    def _release(self) -> None:
        """Close the client (if this index created it) and the directory's lock."""
        client = self._client
        if self._owns_client and client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                if self._database is not None:
                    from chromadb import AdminClient

                    AdminClient(_settings(is_persistent=False)).delete_database(self._database)
            with contextlib.suppress(Exception):
                client.close()
            if self._scrub_dir is not None:  # the client is closed, the lock still held
                remove_orphans(self._scrub_dir)
                scrub_index_files(self._scrub_dir)
                record_sums(self._scrub_dir)
                mark_closed(self._scrub_dir)
        self._handles.clear()
        if self._lock_file is not None:
            self._lock_file.release()
            self._lock_file = None


def _flip(status: MemoryStatus) -> MemoryStatus:
    return MemoryStatus.ARCHIVED if status is MemoryStatus.ACTIVE else MemoryStatus.ACTIVE


def _write_meta(fields: Mapping[str, MetaValue], stored: Mapping[str, Any] | None
                ) -> dict[str, Any]:
    """Chroma metadata replacing ``stored``: the fields, hidden numeric flags, and
    ``None`` for the keys the entry no longer has."""
    out: dict[str, Any] = dict(fields)
    for k, v in fields.items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            out[NUMERIC_FLAG + k] = True
    for key in stored or {}:
        out.setdefault(key, None)
    return out or {"_mars_empty": True}
