"""Stores for tests, over every kind of record store and vector index.

A *kind* is a record store with a vector index (:data:`KINDS`):

* ``ram`` — SQLite in RAM with the numpy index (``MemoryStore()``'s default; for stores
  opened by path, SQLite on disk with the numpy index);
* ``sqlite`` — SQLite in a file with the numpy index;
* ``chroma`` — SQLite in a file with the embedded Chroma index (``MemoryStore.open``'s
  default);
* ``chroma-http`` — the index on a ``chroma run`` server, each store under a prefix of
  its own;
* ``qdrant`` — Qdrant's local mode (in memory for ``MemoryStore()``, a directory for
  stores opened by path); ``qdrant-url`` — a Qdrant server (``QDRANT_URL``);
* ``postgres`` — the records on a PostgreSQL server, each store in a schema of its own (a
  store opened by path: the schema named after the path, so it reopens), with the numpy
  index;
* ``postgres-chroma`` — the same records with the index on a ``chroma run`` server.

:func:`kind_parts` makes the stores built without parts inside a block of that kind
(``MemoryStore()``, and ``MemoryStore.open(path)`` with ``index="auto"``), through
:func:`~mars_core.testing.default_parts`: one test suite runs on every kind by entering it
once per kind (mars-memory's own suite does so from ``tests/conftest.py``).
:class:`StoreFactory` opens stores with a test's defaults (a fresh
:class:`~mars_core.clock.FakeClock` each, a fixed audit key) and closes them all at the
end.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from mars_core.testing import StoreFactory, kind_parts, record_store
    >>> with tempfile.TemporaryDirectory() as scratch:
    ...     with kind_parts("sqlite", scratch=Path(scratch)), \\
    ...             StoreFactory(audit_key=bytes(32), nlp="rules") as make:
    ...         store = make(budget=100)
    ...         _ = store.add("Ana moved to Lisbon")
    ...         stats = store.stats()
    ...         (record_store(store).path.parent.parent == Path(scratch), stats["records"],
    ...          stats["index"], stats["namespaces"]["default"]["active"])
    (True, 'sqlite', 'numpy', 1)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mars_core.errors import ConfigError
from mars_core.testing.seams import default_parts

if TYPE_CHECKING:
    from mars_core.bench.chroma_server import ChromaServer
    from mars_core.index.base import VectorIndex
    from mars_core.storage.base import RecordStore
    from mars_core.store import MemoryStore

__all__ = ["KINDS", "POSTGRES_KINDS", "SERVER_ONLY", "StoreFactory", "drop_schema",
           "kind_parts", "prefix_for", "server_index", "with_schema"]

POSTGRES_KINDS = ("postgres", "postgres-chroma")
"""The kinds whose records are on a PostgreSQL server."""

SERVER_ONLY = ("chroma-http", "qdrant-url")
"""The kinds whose index keeps its entries on a server, not in the store's directory."""

KINDS = ("ram", "sqlite", "chroma", "chroma-http", "qdrant", "qdrant-url", *POSTGRES_KINDS)
"""Every kind of store :func:`kind_parts` makes."""


def prefix_for(path: pathlib.Path) -> str:
    """A collection prefix unique to ``path``, so tests sharing the server are isolated."""
    return "t" + hashlib.sha1(str(path).encode()).hexdigest()[:12] + "_"


def server_index(kind: str, server: ChromaServer | None, prefix: str) -> VectorIndex:
    """A vector index on the test session's server of ``kind`` (``chroma-http``, or
    ``qdrant-url``: the server at ``QDRANT_URL``)."""
    if kind == "chroma-http":
        from mars_core.index.chroma import ChromaIndex

        assert server is not None
        return ChromaIndex(host=server.host, port=server.port, prefix=prefix)
    from mars_core.index.qdrant import QdrantIndex

    return QdrantIndex(url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"),
                       prefix=prefix)


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``?schema=`` (or ``&schema=``) added."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def drop_schema(url: str, schema: str) -> None:
    """Drop ``schema`` and everything in it (a test's leftovers)."""
    import psycopg

    from mars_core.storage.postgres import _split

    libpq, _ = _split(url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextlib.contextmanager
def kind_parts(kind: str, *, scratch: Path, chroma: ChromaServer | None = None,
               postgres_url: str | None = None) -> Iterator[None]:
    """Within the block, the stores built without parts are of ``kind`` (see the module).

    Args:
        kind: one of :data:`KINDS`.
        scratch: the directory the files of stores made without a path go under (each
            in a directory of its own, removed when the block ends).
        chroma: the ``chroma run`` server of ``chroma-http`` and ``postgres-chroma``
            (:func:`mars_core.bench.chroma_server.chroma_server` starts one).
        postgres_url: the database of the PostgreSQL kinds; each store's schema in it is
            dropped when the block ends.

    Raises:
        ConfigError: an unknown kind, or a kind without the server it needs.

    Close the stores made inside before the block ends: their files and schemas go then.
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown store kind {kind!r}: one of {', '.join(KINDS)}")
    if kind in ("chroma-http", "postgres-chroma") and chroma is None:
        raise ConfigError(f"store kind {kind!r} needs a chroma run server (chroma=...)")
    if kind in POSTGRES_KINDS and not postgres_url:
        raise ConfigError(f"store kind {kind!r} needs a PostgreSQL URL (postgres_url=...)")
    if kind == "qdrant-url" and not os.environ.get("QDRANT_URL"):
        raise ConfigError("store kind 'qdrant-url' needs QDRANT_URL set to a Qdrant server")
    from mars_core import layout

    original = layout.open_index
    if kind == "ram":  # MemoryStore() as it is; MemoryStore.open(path) with numpy
        with default_parts(path_index=lambda directory, asked="auto", *a, **kw: original(
                directory, "numpy" if asked == "auto" else asked, *a, **kw)):
            yield
        return
    if kind in POSTGRES_KINDS:
        assert postgres_url is not None
        with _on_postgres(kind, postgres_url, chroma):
            yield
        return
    with _embedded(kind, scratch, chroma):
        yield


@contextlib.contextmanager
def _embedded(kind: str, scratch: Path, server: ChromaServer | None) -> Iterator[None]:
    from mars_core import layout
    from mars_core.index.numpy import NumpyIndex
    from mars_core.storage import SQLiteRecordStore

    original = layout.open_index
    made: list[Path] = []

    def place() -> Path:
        where = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=scratch))
        made.append(where)
        return where

    def records() -> RecordStore:
        if kind in ("sqlite", "chroma"):
            return SQLiteRecordStore(place() / layout.RECORDS_FILE)
        return SQLiteRecordStore()

    def index() -> VectorIndex:
        from mars_core.index.chroma import ChromaIndex
        from mars_core.index.qdrant import QdrantIndex

        if kind in SERVER_ONLY:
            return server_index(kind, server, f"t{uuid.uuid4().hex[:12]}_")
        if kind == "chroma":
            return ChromaIndex(path=place())
        return NumpyIndex() if kind == "sqlite" else QdrantIndex()

    def by_path(directory: Path, asked: Any = "auto", manifest: Any = None, *,
                read_only: bool = False) -> tuple[VectorIndex, str]:
        if read_only or not isinstance(asked, str) or asked != "auto":
            return original(directory, asked, manifest, read_only=read_only)
        if kind in SERVER_ONLY:
            return server_index(kind, server, prefix_for(directory)), f"{kind} (test matrix)"
        concrete = {"sqlite": "numpy", "chroma": "chroma", "qdrant": "qdrant"}[kind]
        return original(directory, concrete, manifest, read_only=False)

    with default_parts(records=records, index=index, path_index=by_path):
        yield
    for where in made:  # the block's stores are closed
        shutil.rmtree(where, ignore_errors=True)


@contextlib.contextmanager
def _on_postgres(kind: str, base: str, server: ChromaServer | None) -> Iterator[None]:
    """The PostgreSQL kinds: a schema per store (per path for stores opened by path), the
    numpy index or one on the Chroma server; the schemas dropped at the end."""
    from mars_core import layout
    from mars_core.index.numpy import NumpyIndex
    from mars_core.storage import PostgresRecordStore

    original = layout.open_index
    schemas: list[str] = []
    server = server if kind == "postgres-chroma" else None

    def records_in(schema: str, **kw: Any) -> RecordStore:
        if schema not in schemas:
            schemas.append(schema)
        return PostgresRecordStore(with_schema(base, schema), **kw)

    def index(prefix: str) -> VectorIndex:
        return NumpyIndex() if server is None else server_index("chroma-http", server, prefix)

    def by_path(directory: Path, asked: Any = "auto", manifest: Any = None, *,
                read_only: bool = False) -> tuple[VectorIndex, str]:
        if read_only or not isinstance(asked, str) or asked != "auto":
            return original(directory, asked, manifest, read_only=read_only)
        return index(prefix_for(directory)), f"{kind} (test matrix)"

    with default_parts(records=lambda: records_in(f"t_{uuid.uuid4().hex[:16]}"),
                       index=lambda: index(f"t{uuid.uuid4().hex[:12]}_"),
                       path_records=lambda directory, **kw: records_in(
                           "t_" + prefix_for(directory.resolve())[1:-1], **kw),
                       path_index=by_path):
        yield
    for schema in schemas:  # the block's stores are closed
        drop_schema(base, schema)


class StoreFactory:
    """Opens stores with a test's defaults and closes them all at the end.

    ``make(budget=None, *, path=None, **kw)`` returns ``MemoryStore(budget=budget, **kw)``,
    or ``MemoryStore.open(path, ...)`` when ``path`` is given, with the factory's defaults
    under ``kw`` (a ``budget`` of None is not passed: the store's default, or what a
    reopened store recorded). Each store gets a fresh
    :class:`~mars_core.clock.FakeClock` unless ``clock=`` is given.

    Args:
        audit_key: the stores' audit key (a fixed one makes keyed hashes and the audit
            chain reproducible); None: the store's own key ring.
        **defaults: keyword arguments of every store (``nlp="rules"``, ``policy=...``).

    Example:
        >>> from mars_core.testing import StoreFactory
        >>> with StoreFactory(audit_key=bytes(32), nlp="rules", policy="fifo") as make:
        ...     small = make(budget=60)
        ...     lru = make.with_defaults(policy="lru")(budget=60)
        ...     small.config.policy, lru.config.policy, small.clock is lru.clock
        ('fifo', 'lru', False)
        >>> small.closed
        True
    """

    def __init__(self, *, audit_key: bytes | None = None, **defaults: Any) -> None:
        self._defaults: dict[str, Any] = {"audit_key": audit_key, **defaults}
        self._made: list[MemoryStore] = []

    def __call__(self, budget: int | None = None, *, path: str | os.PathLike[str] | None = None,
                 **kw: Any) -> MemoryStore:
        """A new store (see the class)."""
        from mars_core.clock import FakeClock
        from mars_core.store import MemoryStore

        args = {**self._defaults, **kw}
        args.setdefault("clock", FakeClock())
        if budget is not None:
            args["budget"] = budget
        store = MemoryStore.open(path, **args) if path is not None else MemoryStore(**args)
        self._made[:] = [made for made in self._made if not made.closed]  # many examples
        self._made.append(store)
        return store

    def with_defaults(self, **defaults: Any) -> StoreFactory:
        """A factory with more defaults whose stores this one closes too."""
        child = StoreFactory(**{**self._defaults, **defaults})
        child._made = self._made
        return child

    def close(self) -> None:
        """Close every store made (closing a closed store does nothing)."""
        for store in self._made:
            store.close()

    def __enter__(self) -> StoreFactory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
