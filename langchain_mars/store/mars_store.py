"""``MarsStore``: a LangGraph ``BaseStore`` whose items are MaRS memories.

Give it to a graph (``builder.compile(store=...)``) or to ``create_agent(..., store=...)``
and every ``put`` becomes a budgeted, audited, erasable memory, while the graph keeps
LangGraph's key-value contract:

* **Namespaces.** A tuple maps onto one MaRS namespace string by the core's reversible
  encoding (:mod:`mars_core.namespaces`: labels joined by ``/``; ``%`` and ``/`` escaped).
  Budgets and statistics are per tuple. A plain string (``put("users", ...)``) is refused
  with a :class:`~mars_core.errors.ValidationError` and changes nothing: LangGraph would
  read it label by label, as ``("u", "s", "e", "r", "s")``. ``search(namespace_prefix)``
  is the only read that spans namespaces, and only because LangGraph's contract asks
  for it.
* **Items.** ``put(namespace, key, value, index=...)`` stores one memory whose text is the
  indexed fields of the value (LangGraph's ``fields`` paths; default ``["$"]``, the whole
  value as JSON) and whose metadata keeps the value, the key and the namespace. A put on
  an existing key writes a new memory that ``derivesFrom`` and ``supersedes`` the old one,
  which goes to the archive; a put of an unchanged value stores nothing new (an item the
  budget had archived is restored to the active store).
  ``put(..., value=None)`` and ``delete`` are **erasures** (right to be forgotten): every
  version of the item leaves the active store, the archive, the record store, the vector
  index and the exports; :meth:`MarsStore.erase` returns the receipts.
* **Forgetting underneath.** The MaRS budget and policy evict as usual. An evicted item is
  archived, not lost: ``get`` reads it through, and ``search`` ranks the items the budget
  archived with the active ones on one scale (``retrieve``'s second tier; before issue 31
  every active hit came first, and a search missed the evidence the budget had archived);
  other archived items follow the hits.
* **Search.** With a ``query``: MaRS hybrid retrieval (dense + BM25) in each namespace under
  the prefix; items sharing nothing with the query follow with score ``0.0``, then items
  put with ``index=False`` (score ``None``), so every matching item is reachable by
  pagination. Without a query: most recently written first. ``filter`` compares value
  fields for equality or with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``.
* **Privacy.** ``get`` and ``search`` return each item's value as the store's output
  check lets it out (:meth:`MemoryStore.check_output`, the check of ``retrieve``): the
  sensitive spans of its string values masked by typed placeholders (``[PHONE]``,
  ``[HEALTH]``...), keys and other values kept; an item that restates an erased memory
  has every string value masked. ``MarsStore(..., redact=False)`` returns the stored
  values (``None``, the default, follows ``StoreConfig.redact``). Filters compare the
  stored values. In a namespace in private mode (``PrivacyPreferences.private_mode``),
  ``search`` hides sensitive items without a consent grant, as MaRS retrieval does;
  ``get`` by key still reads them.
* **Access.** ``get`` and listing are not accesses. A query search *is* one (it is how an
  agent uses its memories): it counts an access of the returned items — and of any item of
  the same namespace ranked above them — in MaRS statistics and the audit, which feeds
  LRU and the decay policies. ``MarsStore(..., search_access=False)`` makes searches
  read-only for inspection.
* **TTL.** Supported (``supports_ttl = True``), in LangGraph's units and defaults:
  ``put(..., ttl=minutes)`` (else ``TTLConfig.default_ttl`` of
  ``MarsStore(..., ttl=TTLConfig(...))``; ``ttl=None``: never) sets the memory's
  ``expires_at`` to the store clock's now + ttl, and keeps the ttl in the item's metadata
  (``metadata["langgraph"]["ttl"]``) so that a ``get`` or ``search`` with ``refresh_ttl``
  (default: ``TTLConfig.refresh_on_read``, else True) moves the expiry of what it returns to
  now + ttl. A put refreshes too, even of an unchanged value. Once the clock is *past*
  ``expires_at`` the item is gone for LangGraph: ``get`` returns None, ``search`` and
  ``list_namespaces`` leave it out, and a ``put`` on its key starts a fresh item — whether or
  not a sweep has run yet. :meth:`MarsStore.sweep_ttl` (or a
  :meth:`MarsStore.start_ttl_sweeper` thread) then **erases** expired items, as ``delete``
  does; ``delete`` and :meth:`MarsStore.erase` erase them at any time. Until then
  ``MemoryStore.maintain`` may only *archive* them (core expiry), and they stay readable
  through the core API (``memory.get``, ``explain``) — not through this adapter.
  MaRS's own type retention (``maintain`` archives old memories) is separate: archived is
  not expired, and ``get`` reads archived items through.
* **Batches** are validated as a whole before any operation runs (a bad op, or a value
  heavier than its namespace's whole budget, changes nothing), then run in order; puts
  of new keys that follow one another are stored together, in one ``add_many`` (one
  transaction, one embedding call per batch of texts). ``abatch`` is the same code in a
  worker thread.

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> store = MarsStore(MemoryStore(budget=200, clock=FakeClock()))
    >>> store.put(("users", "ana"), "drink", {"text": "Ana drinks green tea"})
    >>> store.get(("users", "ana"), "drink").value
    {'text': 'Ana drinks green tea'}
    >>> [item.key for item in store.search(("users",), query="what does Ana drink?")]
    ['drink']
    >>> store.delete(("users", "ana"), "drink")
    >>> store.get(("users", "ana"), "drink") is None
    True
    >>> store.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, cast

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langchain_mars._keys import KeyIndex, Namespace, encode_namespace
from langchain_mars.store.contract import (
    _as_tuple,
    _check,
    _key,
    _langgraph_errors,
    _optional_tuple,
    _tuple_namespaces,
)
from langchain_mars.store.embedding import _index_fields, index_embedder
from langchain_mars.store.filters import _list_namespaces, _matches
from langchain_mars.store.items import (
    MARKER,
    _item,
    _json,
    _new_record,
    _provenance,
    _record,
    _record_or_empty,
    _search_item,
    _text,
)
from langchain_mars.store.ttl import (
    _SWEEP_MINUTES,
    _expired,
    _expiry,
    _interval,
    _is_ttl,
    _ttl_config,
)
from mars_core._async import refuse_in_loop, sync_in_loop_allowed
from mars_core.budget import MAX_BUDGET
from mars_core.engine.guard import Shown
from mars_core.errors import (
    BudgetExceededError,
    ConfigError,
    NotFoundError,
    ValidationError,
)
from mars_core.model import MemoryNode, MemoryType
from mars_core.privacy.receipts import ErasureReceipt
from mars_core.reading.retrieval import Hit
from mars_core.store import MemoryStore

__all__ = ["MarsStore"]


log = logging.getLogger(__name__)

_ALL_TOKENS = MAX_BUDGET  # a retrieval budget that never binds: search ranks, not packs


class MarsStore(BaseStore):
    """A LangGraph store over a :class:`~mars_core.store.MemoryStore` (see the module doc).

    Args:
        memory: the MaRS store that holds the items (budgets, policies, embedder, index);
            default: a new one in RAM (``MemoryStore()``, as LangGraph's
            ``InMemoryStore()``), closed with this store.
        index: LangGraph's ``IndexConfig``: ``fields`` (default ``["$"]``), ``dims`` (when
            given, the embedder's dimension) and ``embed`` as LangGraph takes it — a
            LangChain ``Embeddings``, a function ``texts -> vectors`` (sync or async), or
            a ``"provider:model"`` string (``init_embeddings``). ``embed`` chooses the
            embedder of a store this object makes (no ``memory``, or :meth:`open` of a
            new directory); a ``memory`` given must already embed with it (the
            embedder's name is ``langgraph:<module>.<function>`` for a function,
            ``langgraph:<provider:model>`` for a string). Without ``embed``, the
            store's own embedder.
        memory_type: the MaRS type of the memories (default ``semantic``).
        search_access: whether a query search counts as an access (default True).
        redact: the store's output check over the values ``get`` and ``search`` return
            (None: the store's ``StoreConfig.redact``; False: the stored values).
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes; what ``put`` uses when
            no ``ttl`` is given), ``refresh_on_read`` (the default of ``refresh_ttl`` in
            ``get`` and ``search``; default True) and ``sweep_interval_minutes`` (for
            :meth:`start_ttl_sweeper`). Expired items are always omitted from reads, so
            ``omit_expired`` may only be True.

    Raises:
        ConfigError: unknown ``index`` keys, an ``embed`` that is none of those or that
            the given ``memory`` does not embed with, a ``dims`` that is not the
            embedder's, an unknown memory type, or a bad ``ttl`` config; each message
            names the fix.

    Examples:
        >>> from mars_core import FakeClock, MemoryStore
        >>> with MarsStore(MemoryStore(clock=FakeClock())) as store:
        ...     store.put(("docs",), "a", {"title": "Lisbon guide"}, index=["title"])
        ...     store.put(("docs", "old"), "b", {"title": "Porto guide"})
        ...     print(store.list_namespaces(), store.supports_ttl)
        [('docs',), ('docs', 'old')] True
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: MemoryStore | None = None,
        *,
        index: IndexConfig | None = None,
        memory_type: MemoryType | str = MemoryType.SEMANTIC,
        search_access: bool = True,
        redact: bool | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if memory is not None and not isinstance(memory, MemoryStore):
            raise ConfigError("MarsStore needs a mars_core.MemoryStore (or none: a new one "
                              "in RAM)")
        if not isinstance(search_access, bool):
            raise ConfigError("search_access must be True or False")
        if redact is not None and not isinstance(redact, bool):
            raise ConfigError("redact must be True, False or None")
        self.redact = redact
        try:
            self.memory_type = MemoryType(memory_type)
        except ValueError:
            raise ConfigError(f"unknown memory type {memory_type!r}") from None
        embedder = index_embedder(index)
        owned = memory is None
        if memory is None:
            memory = MemoryStore(embedder=embedder)
        elif embedder is not None and embedder.name != memory.embedder.name:
            raise ConfigError(
                f"index['embed'] is the embedder {embedder.name!r}, but this MemoryStore "
                f"embeds with {memory.embedder.name!r}: leave 'embed' out to use the "
                "store's, build the MemoryStore with embedder=mars_core.embedders."
                "LangChainEmbeddings(...), or let MarsStore make the store "
                "(MarsStore(index=...) in RAM, MarsStore.open(path, index=...) on disk)")
        self.memory = memory
        try:
            self.fields = _index_fields(index, memory.embedder)
        except BaseException:
            if owned:
                memory.close()
            raise
        self.search_access = search_access
        self.ttl_config = _ttl_config(ttl)
        self._owned = owned
        self._lock = threading.RLock()
        self._index = KeyIndex()
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        self._sweeper_future: concurrent.futures.Future[None] | None = None
        with sync_in_loop_allowed():  # a constructor cannot await; built once
            self.reindex()

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, index: IndexConfig | None = None,
             memory_type: MemoryType | str = MemoryType.SEMANTIC, search_access: bool = True,
             redact: bool | None = None, ttl: TTLConfig | None = None,
             **store_kwargs: Any) -> MarsStore:
        """Open (or create) a persistent store under ``path``; ``close()`` closes it.

        ``store_kwargs`` go to :meth:`MemoryStore.open` (``budget``, ``policy``, ``embedder``...).
        ``index={"embed": ...}`` is the embedder of a new store (and must be the one a
        store reopened was built with: the manifest keeps its name).
        """
        embedder = index_embedder(index)
        if embedder is not None:
            if store_kwargs.get("embedder") is not None:
                raise ConfigError("give index['embed'] or embedder=, not both")
            store_kwargs = {**store_kwargs, "embedder": embedder}
        memory = MemoryStore.open(path, **store_kwargs)
        try:
            store = cls(memory, index=index, memory_type=memory_type,
                        search_access=search_access, redact=redact, ttl=ttl)
        except BaseException:
            memory.close()
            raise
        store._owned = True
        return store

    # --- LangGraph contract ----------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph operations in order, after validating all of them.

        Like LangGraph's stores, a batch may write under the reserved root label
        ``"langgraph"`` (only the public ``put`` refuses it).

        Puts of keys that hold no item, one after another, are stored together: one
        ``MemoryStore.add_many`` (one transaction, the texts embedded in one call),
        exactly as they would one by one (each budget is enforced after each put).

        Raises:
            InvalidNamespaceError: a bad namespace label (LangGraph's error).
            ValidationError: any other bad operation (a namespace that is a string, not
                a tuple, and a ``ttl`` that is not a number of minutes in ``[0, 1e9]``
                included); nothing ran.
            BudgetExceededError: a put whose text is heavier than its namespace's whole
                budget; nothing ran.
        """
        self._refuse_in_loop("batch")
        if isinstance(ops, str | bytes | Mapping) or not isinstance(ops, Iterable):
            raise ValidationError(f"a batch is a list of store operations (GetOp, PutOp, "
                                  f"SearchOp, ListNamespacesOp), not {type(ops).__name__}")
        todo = [_tuple_namespaces(op) for op in ops]
        with _langgraph_errors():
            for op in todo:
                _check(op)
                if isinstance(op, PutOp) and op.value is not None:
                    self._check_weight(op)
        with self._lock:
            results: list[Result] = []
            new: list[PutOp] = []  # puts of new keys, stored together when the run ends
            for op in todo:
                if self._is_new(op, new):
                    new.append(cast(PutOp, op))
                    results.append(None)
                    continue
                self._put_new(new)
                new = []
                if self._is_new(op, new):
                    new.append(cast(PutOp, op))
                    results.append(None)
                else:
                    results.append(self._run(op))
            self._put_new(new)
            return results

    # --- the public calls: a namespace of the wrong kind is our error, not a TypeError ----

    def get(self, namespace: tuple[str, ...], key: str, *,
            refresh_ttl: bool | None = None) -> Item | None:
        """LangGraph's ``get`` (see :class:`~langgraph.store.base.BaseStore`)."""
        self._refuse_in_loop("get")
        with _langgraph_errors():
            return super().get(_as_tuple(namespace), _key(key), refresh_ttl=refresh_ttl)

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
               refresh_ttl: bool | None = None) -> list[SearchItem]:
        """LangGraph's ``search`` (see :class:`~langgraph.store.base.BaseStore`)."""
        self._refuse_in_loop("search")
        with _langgraph_errors():
            return super().search(_as_tuple(namespace_prefix, "namespace prefix"), query=query,
                                  filter=filter, limit=limit, offset=offset,
                                  refresh_ttl=refresh_ttl)

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
            index: Literal[False] | list[str] | None = None, *,
            ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """LangGraph's ``put`` (see :class:`~langgraph.store.base.BaseStore`)."""
        self._refuse_in_loop("put")
        with _langgraph_errors():
            super().put(_as_tuple(namespace), _key(key), value, index, ttl=ttl)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """LangGraph's ``delete``: an erasure (see the module)."""
        self._refuse_in_loop("delete")
        with _langgraph_errors():
            super().delete(_as_tuple(namespace), _key(key))

    def list_namespaces(self, *, prefix: NamespacePath | None = None,
                        suffix: NamespacePath | None = None, max_depth: int | None = None,
                        limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """LangGraph's ``list_namespaces`` (see :class:`~langgraph.store.base.BaseStore`)."""
        self._refuse_in_loop("list_namespaces")
        with _langgraph_errors():
            return super().list_namespaces(
                prefix=_optional_tuple(prefix, "prefix"), suffix=_optional_tuple(suffix, "suffix"),
                max_depth=max_depth, limit=limit, offset=offset)

    def _refuse_in_loop(self, method: str) -> None:
        """LangGraph's check: a synchronous call on the event loop's thread raises
        (:class:`~mars_core.errors.SyncInAsyncError`, an ``asyncio.InvalidStateError``
        as LangGraph's async stores raise) naming the async method, unless the
        :class:`MemoryStore` was built with ``allow_sync_in_loop=True``."""
        if not self.memory.allow_sync_in_loop:
            refuse_in_loop("MarsStore", method, " (or build the MemoryStore with "
                           "allow_sync_in_loop=True)")

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """Async :meth:`get`."""
        with _langgraph_errors():
            return await super().aget(_as_tuple(namespace), _key(key),
                                      refresh_ttl=refresh_ttl)

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0,
                      refresh_ttl: bool | None = None) -> list[SearchItem]:
        """Async :meth:`search`."""
        with _langgraph_errors():
            return await super().asearch(
                _as_tuple(namespace_prefix, "namespace prefix"), query=query, filter=filter,
                limit=limit, offset=offset, refresh_ttl=refresh_ttl)

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        """Async :meth:`put`."""
        with _langgraph_errors():
            await super().aput(_as_tuple(namespace), _key(key), value, index, ttl=ttl)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async :meth:`delete`."""
        with _langgraph_errors():
            await super().adelete(_as_tuple(namespace), _key(key))

    async def alist_namespaces(self, *, prefix: NamespacePath | None = None,
                               suffix: NamespacePath | None = None,
                               max_depth: int | None = None, limit: int = 100,
                               offset: int = 0) -> list[tuple[str, ...]]:
        """Async :meth:`list_namespaces`."""
        with _langgraph_errors():
            return await super().alist_namespaces(
                prefix=_optional_tuple(prefix, "prefix"), suffix=_optional_tuple(suffix, "suffix"),
                max_depth=max_depth, limit=limit, offset=offset)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async twin of :meth:`batch` (the same code, in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- TTL sweeps (LangGraph's SqliteStore / PostgresStore names) ---------------------------

    def sweep_ttl(self) -> int:
        """Erase every expired item (all its versions, as ``delete`` does); returns how many.

        An item is expired once the store clock is past its memory's ``expires_at``.
        Items are erased in namespace then key order; the audit keeps one ``erase`` event
        per memory. Without expired items nothing is written.
        """
        self._refuse_in_loop("sweep_ttl")
        with self._lock:
            now = self.memory.clock.now()
            expired = [(ns, key) for ns in self._index.namespaces()
                       for key, _ in sorted(self._index.items(ns))
                       if (node := self._node(ns, key)) is not None and _expired(node, now)]
            for ns, key in expired:
                self._erase(ns, key)
            return len(expired)

    async def asweep_ttl(self) -> int:
        """The async twin of :meth:`sweep_ttl` (the same code, in a worker thread)."""
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                          ) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` in a daemon thread.

        The interval (wall-clock time, between the end of a sweep and the next) is the
        argument, else ``TTLConfig.sweep_interval_minutes``, else 5 minutes; what is
        expired is decided by the store's clock. A sweep that fails is logged and the next
        one runs. The returned future completes when the sweeper stops
        (:meth:`stop_ttl_sweeper`, :meth:`close`, or cancelling the future); while one
        runs, a second call returns the same future.

        Raises:
            ValidationError: an interval that is not a positive number of minutes.
        """
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        interval = _interval(sweep_interval_minutes if sweep_interval_minutes is not None
                             else configured if configured is not None else _SWEEP_MINUTES)
        with self._lock:
            if self._sweeper is not None and self._sweeper.is_alive():
                assert self._sweeper_future is not None
                return self._sweeper_future
            stop = self._sweeper_stop = threading.Event()
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.add_done_callback(lambda f: stop.set() if f.cancelled() else None)

            def loop() -> None:
                while not stop.wait(interval * 60):
                    try:
                        swept = self.sweep_ttl()
                    except Exception:  # a sweeper outlives a failed sweep
                        log.exception("MarsStore TTL sweep failed")
                    else:
                        if swept:
                            log.info("MarsStore TTL sweep erased %d expired items", swept)
                with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled
                    future.set_result(None)

            self._sweeper_future = future
            self._sweeper = threading.Thread(target=loop, name="mars-ttl-sweeper", daemon=True)
            self._sweeper.start()
            return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped (or was not running), False
        when ``timeout`` seconds passed first (e.g. during a long sweep)."""
        with self._lock:
            thread = self._sweeper
            self._sweeper_stop.set()
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        with self._lock:
            if self._sweeper is thread:
                self._sweeper = None
        return True

    # --- beyond the contract ------------------------------------------------------------------

    def erase(self, namespace: tuple[str, ...], key: str) -> tuple[ErasureReceipt, ...]:
        """Erase an item and all its versions (what ``delete`` does); returns the receipts.

        A missing item erases nothing and returns ``()``.
        """
        namespace = _as_tuple(namespace)
        with _langgraph_errors():
            _check(PutOp(namespace, key, None))
        with self._lock:
            return self._erase(namespace, key)

    @staticmethod
    def mars_namespace(namespace: tuple[str, ...]) -> str:
        """The MaRS namespace string of a LangGraph namespace (for budgets, receipts, stats).

        Examples:
            >>> MarsStore.mars_namespace(("memories", "ana"))
            'memories/ana'
        """
        return encode_namespace(_as_tuple(namespace))

    def node_id(self, namespace: tuple[str, ...], key: str) -> str | None:
        """The id of the memory holding an item's current value (for ``explain``) — also of
        an expired item, until a sweep or a delete erases it."""
        namespace = _as_tuple(namespace)
        with self._lock:
            node = self._node(namespace, key)
            return None if node is None else node.id

    def reindex(self) -> int:
        """Rebuild the key index from the store's records; returns how many items it holds.

        Done on open; call it after the underlying store was changed by other means.
        """
        with self._lock:
            self._index.clear()
            for ns in self.memory.namespaces():
                for node in self.memory.list(ns, status=None):
                    rec = _record(node)
                    if rec is not None:
                        self._index.set(tuple(rec["namespace"]), rec["key"], node.id,
                                        seq=node.seq)
            return len(self._index)

    def close(self) -> None:
        """Stop the TTL sweeper, if any; close the underlying store when this object
        opened it (see :meth:`open`)."""
        self.stop_ttl_sweeper()
        if self._owned:
            self.memory.close()

    def __enter__(self) -> MarsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- operations ---------------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            now = self.memory.clock.now()
            node = self._live(op.namespace, op.key, now)
            if node is not None and op.refresh_ttl:
                node = self._refresh(node, now)
            return None if node is None else _item(node, self._shown([node])[0])
        if isinstance(op, PutOp):
            if op.value is None:  # erases an expired item too: delete is the right to forget
                self._erase(op.namespace, op.key)
            else:
                self._put(op.namespace, op.key, op.value, op.index, op.ttl)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        assert isinstance(op, ListNamespacesOp)
        now = self.memory.clock.now()
        return _list_namespaces([ns for ns in self._index.namespaces() if any(
            self._live(ns, key, now) is not None for key, _ in self._index.items(ns))], op)

    def _node(self, namespace: Namespace, key: str) -> MemoryNode | None:
        node_id = self._index.get(namespace, key)
        if node_id is None:
            return None
        try:
            return self.memory.get(node_id, namespace=encode_namespace(namespace))
        except NotFoundError:  # erased by another path (an entity erasure, a cascade)
            self._index.drop(namespace, key)
            return None

    def _live(self, namespace: Namespace, key: str, now: datetime) -> MemoryNode | None:
        """The memory of an item that LangGraph can see: present and not expired."""
        node = self._node(namespace, key)
        return None if node is None or _expired(node, now) else node

    def _refresh(self, node: MemoryNode, now: datetime) -> MemoryNode:
        """Move an item's expiry to ``now`` + its ttl (items without a ttl: unchanged).

        One ``metadata`` audit event when the expiry moves; nothing is written when it would
        not move, nor in a store opened read-only (a reader never writes).
        """
        ttl = _record_or_empty(node).get("ttl")
        if not _is_ttl(ttl) or self.memory.read_only:
            return node
        expires = _expiry(now, ttl)
        if node.expires_at == expires:
            return node
        return self.memory.set_metadata(node.id, expires_at=expires, namespace=node.namespace)

    def _check_weight(self, op: PutOp) -> None:
        """A put's text must fit its namespace's whole budget (checked before any op)."""
        text, _ = _text(_json(op.value or {}), self.fields if op.index is None else op.index)
        ns = encode_namespace(op.namespace)
        budget = self.memory.config.budget_for(ns)
        if self.memory.token_counter.count(text) > budget:
            raise BudgetExceededError(
                f"the value of key {op.key!r} needs more than the {budget} tokens of "
                f"namespace {op.namespace!r}; nothing of the batch ran")

    def _is_new(self, op: Op, pending: list[PutOp]) -> bool:
        """A put of a key that holds no item (none stored, none pending)."""
        return isinstance(op, PutOp) and op.value is not None \
            and all((p.namespace, p.key) != (op.namespace, op.key) for p in pending) \
            and self._node(op.namespace, op.key) is None

    def _put_new(self, ops: list[PutOp]) -> None:
        """Store puts of new keys in one ``add_many`` (one transaction)."""
        if not ops:
            return
        now = self.memory.clock.now()
        items = []
        for op in ops:
            assert op.value is not None
            fields = self.fields if op.index is None else op.index
            text, rec = _new_record(op.namespace, op.key, _json(op.value), fields,
                                    ttl=op.ttl, created=now.isoformat())
            items.append({"text": text, "type": self.memory_type,
                          "namespace": encode_namespace(op.namespace),
                          "metadata": {MARKER: rec}, "expires_at": _expiry(now, op.ttl),
                          "provenance": _provenance(op.key)})
        for op, node in zip(ops, self.memory.add_many(items), strict=True):
            self._index.replace(op.namespace, op.key, node.id, seq=node.seq)

    def _put(self, namespace: Namespace, key: str, value: Mapping[str, Any],
             index: Literal[False] | list[str] | None, ttl: float | None) -> None:
        now = self.memory.clock.now()
        fields = self.fields if index is None else index
        data = _json(value)
        old = self._node(namespace, key)
        if old is not None and _expired(old, now):
            self._erase(namespace, key)  # what a sweep would do: the put starts a new item
            old = None
        old_rec = None if old is None else _record(old)
        expires = _expiry(now, ttl)
        if old is not None and old_rec is not None and \
                (old_rec["value"], old_rec["index"]) == (data, fields):
            if not old.is_active:  # put again: the item is current, bring it back
                old = self.memory.restore(old.id, namespace=old.namespace)
            if old_rec.get("ttl") != ttl:  # a put sets (or clears) the ttl, and refreshes it
                rec = {k: v for k, v in old_rec.items() if k != "ttl"}
                if ttl is not None:
                    rec["ttl"] = ttl
                self.memory.set_metadata(old.id, {**old.metadata, MARKER: rec},
                                         expires_at=expires, namespace=old.namespace)
            elif old.expires_at != expires:
                self.memory.set_metadata(old.id, expires_at=expires, namespace=old.namespace)
            return  # unchanged: content is immutable, a new version would only grow the archive
        created = old_rec["created_at"] if old_rec else now.isoformat()
        text, rec = _new_record(namespace, key, data, fields, ttl=ttl, created=created)
        if old is not None:  # one transaction: new version derivesFrom + supersedes the old
            node = self.memory.update(old.id, text, metadata={MARKER: rec}, expires_at=expires,
                                      namespace=old.namespace)
        else:
            node = self.memory.add(
                text, type=self.memory_type, namespace=encode_namespace(namespace),
                metadata={MARKER: rec}, expires_at=expires, provenance=_provenance(key))
        self._index.replace(namespace, key, node.id, seq=node.seq)

    def _erase(self, namespace: Namespace, key: str) -> tuple[ErasureReceipt, ...]:
        node = self._node(namespace, key)
        if node is None:
            return ()
        receipts = []
        # oldest first: erasure cascades forward
        for version in self.memory.history(node.id, namespace=node.namespace):
            rec = _record(version)
            if rec is None or (tuple(rec["namespace"]), rec["key"]) != (namespace, key):
                continue  # a dedup link to another item: not ours to erase
            try:
                receipts.append(self.memory.erase(node_id=version.id,
                                                  namespace=version.namespace))
            except NotFoundError:
                continue  # already gone with an earlier version's cascade
        self._index.drop(namespace, key)
        return tuple(receipts)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        now = self.memory.clock.now()
        found = [c for ns in self._index.namespaces() if ns[:len(prefix)] == prefix
                 for c in self._candidates(ns, op.filter or {}, now)]
        if not (op.query and op.query.strip()):
            found.sort(key=lambda c: (not c[2].is_active, -c[2].seq))
            page: list[tuple[MemoryNode, float | None]] = [
                (node, None) for _, _, node in found[op.offset:op.offset + op.limit]]
        else:
            ranked, hit_lists = self._rank(op.query, found)
            page = ranked[op.offset:op.offset + op.limit]
            if self.search_access:
                self._access([node for node, _ in page], hit_lists)
        if op.refresh_ttl:  # what a search returns has been read: its ttl starts again
            for node, _ in page:
                self._refresh(node, now)
        shown = self._shown([node for node, _ in page])
        return [_search_item(node, score, s) for (node, score), s in zip(page, shown, strict=True)]

    def _shown(self, nodes: list[MemoryNode]) -> list[Shown]:
        """The output check over items about to be returned (one call per namespace)."""
        out: dict[str, Shown] = {}
        for ns in dict.fromkeys(n.namespace for n in nodes):
            mine = [n for n in nodes if n.namespace == ns]
            out.update((n.id, s) for n, s in zip(
                mine, self.memory.check_output(mine, namespace=ns, redact=self.redact),
                strict=True))
        return [out[n.id] for n in nodes]

    def _candidates(self, ns: Namespace, flt: Mapping[str, Any], now: datetime
                    ) -> list[tuple[Namespace, str, MemoryNode]]:
        """The live items of a namespace that pass the filter and its privacy preferences
        (private mode hides sensitive items without consent, as ``retrieve`` does)."""
        prefs = self.memory.preferences(encode_namespace(ns))
        return [(ns, key, node) for key, _ in self._index.items(ns)
                if (node := self._live(ns, key, now)) is not None
                and prefs.recallable(node, now)
                and _matches(_record_or_empty(node)["value"], flt)]

    def _rank(self, query: str, found: list[tuple[Namespace, str, MemoryNode]]
              ) -> tuple[list[tuple[MemoryNode, float | None]], dict[str, list[Hit]]]:
        """Order candidates: hits (active and archived on one scale, as ``retrieve``'s
        second tier), non-hits, unindexed items."""
        mine = {node.id: node for _, _, node in found}
        hit_lists: dict[str, list[Hit]] = {}
        scored: dict[str, tuple[int, float]] = {}
        for ns in sorted({n.namespace for n in mine.values()}):
            # pages through every match; only ids and scores are read here (what a search
            # returns goes through the output check in _search)
            hits = self.memory.retrieve(query, namespace=ns, budget_tokens=_ALL_TOKENS,
                                        include_archive=None, read_only=True,
                                        relative_cutoff=0.0, redact=False)
            hit_lists[ns] = hits
            for h in hits:
                if h.id in mine and _record_or_empty(mine[h.id]).get("indexed"):
                    scored[h.id] = (0, h.score)  # one scale: the second tier

        def order(node: MemoryNode) -> tuple[int, float, int]:
            if node.id in scored:
                tier, score = scored[node.id]
                return tier, -score, -node.seq
            indexed = bool(_record_or_empty(node).get("indexed"))
            return (2 if node.is_active else 3) if indexed else 4, 0.0, -node.seq

        nodes = sorted(mine.values(), key=order)
        return [(n, scored[n.id][1] if n.id in scored else
                 (0.0 if _record_or_empty(n).get("indexed") else None)) for n in nodes], hit_lists

    def _access(self, page: list[MemoryNode], hit_lists: dict[str, list[Hit]]) -> None:
        """Count the search as an access of exactly the returned active hits (one event per
        namespace; a read, not a credited use)."""
        wanted = {n.id for n in page if n.is_active}
        for ns, hits in hit_lists.items():
            ids = [h.id for h in hits if h.id in wanted]
            if ids:
                self.memory.reinforce(ids, namespace=ns, reason="LangGraph store search",
                                      credit=False)
