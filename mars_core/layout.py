"""How ``MemoryStore.open(path)`` lays a store out on disk, and which index it uses.

=========================  ==============================================================
``path/mars.sqlite3``      the record store, the system of record (and its ``-wal``,
                           ``-shm`` and ``-writer.lock`` files)
``path/index/chroma/``     the embedded Chroma index (``index="chroma"``, the default when
                           ``chromadb`` is installed)
``path/index/qdrant/``     Qdrant's local mode (``index="qdrant"``)
=========================  ==============================================================

The index is derived: deleting ``path/index/`` loses nothing (the next open rebuilds it
from the records), and opening a store with another ``index=`` rebuilds that one.
``index="numpy"`` keeps no index files (exact search in the process, read from the
records on demand); a ``read_only`` store always uses it, so readers never open the
writer's embedded index (which one process holds at a time). A server is named by a
URL: ``index="chroma://HOST:PORT"`` (a ``chroma run`` server) or
``"qdrant+http://HOST:PORT"`` / ``"qdrant+https://..."`` (API key from
``$QDRANT_API_KEY``), or passed as an index instance.

A store whose records are on a PostgreSQL server (``MemoryStore.open("postgresql://...")``,
:mod:`mars_core.storage.postgres`) has no directory, and several processes share it:
its index is the numpy one in each process (the default; it reads each namespace's
vectors from the records when first queried, and again when another process changed
the namespace), or a server (:func:`open_shared_index`). The embedded Chroma and Qdrant
kinds are refused there: their files would be one process's own.

A directory written by mars-memory 0.1 (vector collections as the system of record:
``path/chroma/``, ``path/qdrant/`` or ``snapshot.json``/``journal.log``, and no
``mars.sqlite3``) is refused with the way to move it: export it to JSON-LD with the
release that wrote it, then import that here.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> holds_store(d)
    False
    >>> index, note = open_index(d, "numpy", None, read_only=False)
    >>> index.name, note
    ('numpy', 'numpy (asked for)')
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit, urlunsplit

from mars_core._env import env
from mars_core.errors import ConfigError, CorruptStoreError
from mars_core.index.base import VectorIndex
from mars_core.index.numpy import NumpyIndex

__all__ = [
    "INDEX_DIR",
    "RECORDS_FILE",
    "IndexKind",
    "check_kind",
    "check_shared_kind",
    "holds_store",
    "index_from_url",
    "open_index",
    "open_shared_index",
    "refuse_old_layout",
]

IndexKind = Literal["auto", "chroma", "numpy", "qdrant"]
"""What ``MemoryStore.open(path, index=...)`` accepts besides an index instance and a
server's URL (:func:`index_from_url`)."""

RECORDS_FILE = "mars.sqlite3"
"""The record store of a store opened by path."""

INDEX_DIR = "index"
"""Where an embedded index keeps its files."""

_KINDS = ("auto", "chroma", "numpy", "qdrant")
_SERVERS = ("chroma", "qdrant+http", "qdrant+https")
"""The URL schemes of index servers."""
_OLD = ("chroma/chroma.sqlite3", "qdrant/meta.json", "qdrant/collection", "snapshot.json",
        "journal.log")
"""What a store of mars-memory 0.1 left at the top of its directory."""
log = logging.getLogger(__name__)


def holds_store(directory: Path) -> bool:
    """Whether ``directory`` holds a store (its record store file)."""
    return (directory / RECORDS_FILE).is_file()


def refuse_old_layout(directory: Path) -> None:
    """Refuse a directory written by mars-memory 0.1 (the vector collections were the
    system of record there).

    Also refuse a store whose record store file is gone, or empty (0 bytes), while its
    index or write-ahead log is still there: opening would create an empty store over
    the remains, and its audit would verify.

    Raises:
        CorruptStoreError: the directory holds the old layout, or the remains of a store,
            and no record store.
    """
    remains = [name for name in (INDEX_DIR, f"{RECORDS_FILE}-wal", f"{RECORDS_FILE}-shm")
               if (directory / name).exists()]
    if holds_store(directory):
        try:
            empty = (directory / RECORDS_FILE).stat().st_size == 0
        except OSError:
            empty = False
        if empty and remains:
            raise CorruptStoreError(
                f"the record store {directory / RECORDS_FILE} is empty (0 bytes), but "
                f"{directory} holds the rest of a store ({', '.join(remains)}): restore "
                f"{RECORDS_FILE} from a backup (the index is derived from it and cannot "
                "replace it); nothing was changed")
        return
    if remains:
        raise CorruptStoreError(
            f"the record store {directory / RECORDS_FILE} is missing, but {directory} holds "
            f"the rest of a store ({', '.join(remains)}): restore {RECORDS_FILE} from a "
            "backup (the index is derived from it and cannot replace it); nothing was "
            "created")
    found = [name.split("/")[0] for name in _OLD if (directory / name).exists()]
    if found:
        raise CorruptStoreError(
            f"{directory} holds a store written by mars-memory 0.1 ({', '.join(found)}), "
            "whose vector collections were its system of record; this version keeps a "
            "record store instead. Move it: with mars-memory 0.1, `mars export "
            f"memories.jsonld --path {directory}`; then, with this version, `mars import "
            "memories.jsonld --path NEW_DIRECTORY`")


def check_kind(kind: object) -> None:
    """Refuse an ``index=`` that names no index kind, no server and is no index.

    Raises:
        ConfigError: anything but a kind of :data:`IndexKind`, a server's URL or a
            ``VectorIndex``.

    Examples:
        >>> check_kind("numpy"); check_kind("chroma://localhost:8000")
    """
    if isinstance(kind, VectorIndex) or (isinstance(kind, str) and kind in _KINDS):
        return
    if isinstance(kind, str) and "://" in kind:
        _server(kind)
        return
    raise ConfigError(f"index must be one of {list(_KINDS)}, a server (chroma://HOST:PORT, "
                      f"qdrant+http://HOST:PORT) or a VectorIndex, not {kind!r}")


def _server(url: str) -> tuple[str, str, int | None, str | None]:
    """``(scheme, host, port, prefix)`` of an index server's URL (``?prefix=NAME``: the
    store's place on the server; ``None``: the index's default).

    Raises:
        ConfigError: not one.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    query = parse_qs(parts.query, keep_blank_values=True)
    prefixes = query.pop("prefix", [])
    if parts.scheme not in _SERVERS or not parts.hostname or port == -1 or query \
            or (prefixes and not prefixes[-1]):
        raise ConfigError(f"index {url!r}: a server is chroma://HOST:PORT, "
                          "qdrant+http://HOST:PORT or qdrant+https://HOST:PORT, with "
                          "?prefix=NAME for the store's place on it")
    return parts.scheme, parts.hostname, port, prefixes[-1] if prefixes else None


def index_from_url(url: str) -> VectorIndex:
    """The index on the server ``url`` names: ``chroma://HOST:PORT`` (a ``chroma run``
    server; port 8000 by default) or ``qdrant+http(s)://HOST:PORT`` (API key from
    ``$QDRANT_API_KEY``); ``?prefix=NAME`` gives the store its own place on the server
    (default ``mars_``).

    Raises:
        ConfigError: not such a URL.
        ValidationError: a prefix the index refuses.
        ExtraNotInstalledError: the server's client is not installed.
    """
    scheme, host, port, prefix = _server(url)
    prefix = prefix if prefix is not None else "mars_"
    if scheme == "chroma":
        from mars_core.index.chroma import ChromaIndex

        return ChromaIndex(host=host, port=port or 8000, prefix=prefix)
    from mars_core.index.qdrant import QdrantIndex

    parts = urlsplit(url.removeprefix("qdrant+"))
    return QdrantIndex(url=urlunsplit((*parts[:3], "", "")),
                       api_key=env("QDRANT_API_KEY"), prefix=prefix)


def open_index(directory: Path, kind: IndexKind | str | VectorIndex,
               manifest: Mapping[str, Any] | None, *,
               read_only: bool) -> tuple[VectorIndex, str]:
    """The vector index of the store at ``directory``: ``(index, note for stats())``.

    ``"auto"`` takes the index the store was last opened with, else Chroma when
    ``chromadb`` is installed, else numpy (with a warning on this module's logger).

    Raises:
        ConfigError: an unknown kind; an index for a ``read_only`` store; ``"auto"``
            for a store whose index is a server.
        ExtraNotInstalledError: the chosen index's client is not installed.
        ConflictError: another process holds the embedded index's directory.
    """
    check_kind(kind)
    if read_only:
        if kind not in ("auto", "numpy"):
            raise ConfigError("a read_only store searches the records' vectors in the "
                              f"process (numpy); pass no index, not {_shown(kind)}")
        return NumpyIndex(), "numpy (read_only: exact search over the records' vectors)"
    if not isinstance(kind, str):
        return kind, f"{kind.name} (instance passed)"
    if "://" in kind:
        return index_from_url(kind), f"{kind} (asked for)"
    concrete: str = kind
    note = f"{kind} (asked for)"
    if kind == "auto":
        concrete, note = _auto((manifest or {}).get("index") or {})
    if concrete == "chroma":
        from mars_core.index.chroma import ChromaIndex

        return ChromaIndex(path=directory / INDEX_DIR / "chroma"), note
    if concrete == "qdrant":
        from mars_core.index.qdrant import QdrantIndex

        return QdrantIndex(path=directory / INDEX_DIR / "qdrant"), note
    return NumpyIndex(), note


def open_shared_index(kind: IndexKind | str | VectorIndex,
                      manifest: Mapping[str, Any] | None, *,
                      read_only: bool) -> tuple[VectorIndex, str]:
    """The vector index of a store whose records several processes share and which has
    no directory (PostgreSQL): ``(index, note for stats())``.

    ``"auto"`` and ``"numpy"`` give each process the numpy index (no rebuild: it reads a
    namespace's vectors from the records when first queried); a server's URL or an
    index instance is taken as it is.

    Raises:
        ConfigError: an embedded Chroma or Qdrant kind (no directory to keep it in, and
            it would be one process's own), an index for a ``read_only`` store, or
            ``"auto"`` for a store whose index is a server (pass it).
        ExtraNotInstalledError: the server's client is not installed.
    """
    check_shared_kind(kind)
    if read_only or not isinstance(kind, str) or "://" in kind:
        return open_index(Path(), kind, manifest, read_only=read_only)
    if kind == "auto":
        recorded = (manifest or {}).get("index") or {}
        if recorded.get("server"):
            _auto(recorded)  # raises: name the server
        return NumpyIndex(), "numpy (auto: in each process, read from the shared records)"
    return NumpyIndex(), "numpy (asked for)"


def check_shared_kind(kind: object) -> None:
    """Refuse an ``index=`` a store without a directory cannot take (before anything is
    opened).

    Raises:
        ConfigError: what :func:`check_kind` refuses, and the embedded Chroma and
            Qdrant kinds.

    Examples:
        >>> check_shared_kind("numpy")
    """
    check_kind(kind)
    if kind in ("chroma", "qdrant"):
        raise ConfigError(
            f"index={kind!r} keeps its files in a directory, and a store on PostgreSQL has "
            "none (each process would hold an index of its own): use index=\"numpy\" (the "
            "default: each process searches the records' vectors, read on demand) or a "
            "server, index=\"chroma://HOST:PORT\" or \"qdrant+http://HOST:PORT\"")


def _shown(kind: str | VectorIndex) -> str:
    return repr(kind) if isinstance(kind, str) else f"a {type(kind).__name__}"


def _auto(recorded: Mapping[str, Any]) -> tuple[str, str]:
    """The index ``"auto"`` picks: the one the manifest records (with the reason it was
    chosen then) when its client is installed, else the embedded default.

    Raises:
        ConfigError: the store's index is a server, which a path cannot name.
    """
    name = recorded.get("name")
    if recorded.get("server"):
        raise ConfigError(
            f"this store's index is a {name} server, which its directory cannot name: pass "
            "it (index=ChromaIndex(host=...) or QdrantIndex(url=...); `mars ... --index "
            "chroma://HOST:PORT` or `--index qdrant+http://HOST:PORT`), or an embedded "
            "index=\"chroma\", \"qdrant\" or \"numpy\", which is rebuilt from the records")
    if name in ("chroma", "qdrant", "numpy"):
        package = {"chroma": "chromadb", "qdrant": "qdrant_client"}.get(str(name))
        if package is None or importlib.util.find_spec(package) is not None:
            return str(name), str(recorded.get("choice") or f"{name} (the store's last index)")
    if importlib.util.find_spec("chromadb") is not None:
        return "chroma", "chroma (auto: the embedded default)"
    log.warning("chromadb is not installed: the store searches with the in-process numpy "
                "index (pip install 'mars-memory[chroma]' for the embedded Chroma default)")
    return "numpy", "numpy (auto: chromadb is not installed)"
