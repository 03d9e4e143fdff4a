"""How a :class:`~mars_core.store.MemoryStore` comes to be: the parts of ``MemoryStore()``
and of ``MemoryStore.open(path)``, each checked before anything is created, and the engine
built over them.

The store's constructor and :meth:`~mars_core.store.MemoryStore.open` validate, delegate
here and keep what they get; nothing here is public API.
"""

from __future__ import annotations

import builtins
import numbers
import os
from pathlib import Path
from typing import Any, Literal, cast

from mars_core import layout
from mars_core.clock import Clock, SystemClock
from mars_core.config import StoreConfig
from mars_core.embeddings import Embedder
from mars_core.engine import args
from mars_core.engine.engine import Engine, build_policy
from mars_core.errors import ConfigError
from mars_core.index.base import VectorIndex
from mars_core.index.numpy import NumpyIndex
from mars_core.knowledge.summarise import Summariser
from mars_core.storage.base import NamespaceRecord, RecordStore
from mars_core.storage.postgres import PostgresRecordStore, is_postgres_url
from mars_core.storage.sqlite import SQLiteRecordStore

__all__ = ["open_engine", "open_parts"]


def _default_index() -> VectorIndex:
    """The index of ``MemoryStore()`` without one: numpy, in the process."""
    return NumpyIndex()


def _default_records() -> RecordStore:
    """The records of ``MemoryStore()`` without any: SQLite in RAM."""
    return SQLiteRecordStore()


def _path_records(directory: Path, *, read_only: bool, lock_timeout: float,
                  synchronous: Literal["full", "normal"]) -> RecordStore:
    """The records of ``MemoryStore.open(directory)``: SQLite in ``directory``."""
    return SQLiteRecordStore(directory / layout.RECORDS_FILE, read_only=read_only,
                             lock_timeout=lock_timeout, synchronous=synchronous)


def open_parts(path: str | os.PathLike[str], *,
               index: layout.IndexKind | str | VectorIndex, embedder: Embedder | None,
               read_only: bool, lock_timeout: float, synchronous: Literal["full", "normal"],
               **kwargs: Any) -> tuple[RecordStore, VectorIndex, str]:
    """The records, the index and the index's note of ``MemoryStore.open(path, ...)``
    (its arguments as :meth:`~mars_core.store.MemoryStore.open` documents them).

    Raises:
        ConfigError, CorruptStoreError, ExtraNotInstalledError, ConflictError,
        StorageUnavailableError: as :meth:`~mars_core.store.MemoryStore.open` says.
    """
    args.flag(read_only, "read_only")
    fields = {k: v for k, v in kwargs.items() if k in StoreConfig.model_fields}
    if fields or kwargs.get("config") is not None:  # refuse before touching the disk
        given = args.configure(kwargs.get("config"), fields)
        build_policy(given, NamespaceRecord(given.default_namespace))
    directory = None if is_postgres_url(path) else _directory(path)
    if directory is None:
        layout.check_shared_kind(index)
    else:
        layout.check_kind(index)
    _precheck(embedder, **kwargs)
    records: RecordStore
    if directory is None:
        records = PostgresRecordStore(str(path), read_only=read_only,
                                      lock_timeout=lock_timeout, synchronous=synchronous)
    else:
        layout.refuse_old_layout(directory)
        records = _path_records(directory, read_only=read_only, lock_timeout=lock_timeout,
                                synchronous=synchronous)
    try:
        with records.read() as tx:
            manifest = tx.manifest()
        if read_only and manifest is None:
            raise ConfigError(f"read_only=True opens an existing store, and there is none "
                              f"at {records.location}; open it once without read_only")
        chosen, note = layout.open_index(directory, index, manifest, read_only=read_only) \
            if directory is not None else \
            layout.open_shared_index(index, manifest, read_only=read_only)
    except BaseException:
        records.close()
        raise
    return records, chosen, note


def open_engine(records: RecordStore | None, index: VectorIndex | None,
                embedder: Embedder | None, *, config: StoreConfig | None, clock: Clock | None,
                audit_key: bytes | None, summariser: Summariser | None, read_only: bool,
                cache_namespaces: int, cache_memories: int, _note: str | None,
                overrides: dict[str, Any]) -> Engine:
    """The engine of ``MemoryStore(...)``: the parts checked, the defaults taken for those
    not given, the embedder chosen; on a failure the parts given are closed.

    Raises:
        ConfigError: a part of the wrong kind, a refused configuration, an index given to
            a read_only store.
    """
    args.flag(read_only, "read_only")
    _check_parts(records=records, index=index, embedder=embedder, clock=clock,
                 summariser=summariser)
    records = records if records is not None else _default_records()
    try:
        embedder, embedder_note = _choose_embedder(records, embedder)
    except BaseException:
        if index is not None:
            index.close()
        records.close()
        raise
    if read_only and index is not None and not isinstance(index, NumpyIndex):
        records.close()
        raise ConfigError("a read_only store searches the records' vectors in the "
                          "process (NumpyIndex); pass no index")
    note = _note or (f"{index.name} (passed)" if index is not None
                     else "numpy (the default of MemoryStore(): in the process)")
    index = index if index is not None else _default_index()
    try:
        return Engine(
            records, index, embedder, embedder_note=embedder_note,
            config=args.configure(config, overrides),
            explicit=config is not None or bool(overrides),
            clock=clock if clock is not None else SystemClock(), audit_key=audit_key,
            summariser=summariser, read_only=bool(read_only),
            cache_namespaces=cache_namespaces, cache_memories=cache_memories, note=note,
            overrides=dict(overrides) if config is None and overrides else None)
    except BaseException:
        index.close()
        records.close()
        raise


def _choose_embedder(records: RecordStore, embedder: Embedder | None
                     ) -> tuple[Embedder, str]:
    """The embedder of ``MemoryStore(...)`` and why (``stats()["embedder_choice"]``): the
    one passed, else the one the records' manifest names, else for a new store the one
    ``MemoryStore.open`` takes (:func:`~mars_core.embedders.default_embedder`).

    Raises:
        ConfigError, ExtraNotInstalledError: the recorded embedder (or the one
            ``MARS_EMBEDDER`` asks for) is not installed.
    """
    from mars_core import embedders

    if embedder is not None:
        return embedder, "passed"
    with records.read() as tx:
        manifest = tx.manifest()
    name = (manifest or {}).get("embedder", {}).get("name")
    if isinstance(name, str):
        chosen = embedders.embedder_for(name)
        return chosen, "recorded by the store"
    chosen = embedders.default_embedder()
    return chosen, "the default of a new store"


def _directory(path: object) -> Path:
    """The directory ``MemoryStore.open`` takes, checked before anything is created.

    Raises:
        ConfigError: not a path, empty, holding a NUL, or a file (or under one).
    """
    directory = args.path(path, "a store path", ConfigError)
    for where in (directory, *directory.parents):
        if where.exists():
            if not where.is_dir():
                raise ConfigError(f"cannot open a store at {directory}: {where} is a file, "
                                  "not a directory; pass a directory")
            break
    return directory


def _precheck(embedder: object, *, clock: object = None, audit_key: object = None,
              summariser: object = None, **_: Any) -> None:
    """What ``MemoryStore.open`` checks before it creates a directory, besides the
    configuration: the collaborators and the audit key the constructor would refuse.

    Raises:
        ConfigError: a bad one.
    """
    from mars_core.keys import check_key

    _check_parts(records=None, index=None, embedder=embedder, clock=clock,
                 summariser=summariser)
    if audit_key is not None:
        check_key(audit_key)


def _embedder(value: object) -> Embedder:
    """An embedder, checked (``name``, a positive ``dim``, a callable ``embed``).

    Raises:
        ConfigError: anything else.
    """
    name, dim = getattr(value, "name", None), getattr(value, "dim", None)
    if not callable(getattr(value, "embed", None)) or not isinstance(name, str) or not name \
            or isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim <= 0:
        raise ConfigError(f"embedder must be an Embedder (a name, a positive dim and "
                          f"embed(texts)), such as mars_core.HashingEmbedder(), not "
                          f"{builtins.type(value).__name__}")
    return cast(Embedder, value)


def _check_parts(*, records: object, index: object, embedder: object, clock: object,
                 summariser: object) -> None:
    """Refuse a collaborator of the wrong kind before anything is built.

    Raises:
        ConfigError: a collaborator that lacks what the store calls.
    """
    wanted = {"records": (records, ("read", "write", "close")),
              "index": (index, ("bind", "upsert", "query", "close")),
              "clock": (clock, ("now",))}
    for what, (value, methods) in wanted.items():
        if value is not None and not all(callable(getattr(value, m, None)) for m in methods):
            raise ConfigError(f"{what} must provide {', '.join(methods)}(), not a "
                              f"{builtins.type(value).__name__}")
    if embedder is not None:
        _embedder(embedder)
    if summariser is not None and not callable(summariser):
        raise ConfigError(f"summariser must be callable (texts, *, target_tokens) -> str, "
                          f"not {builtins.type(summariser).__name__}")
