"""Which backend a store directory uses, and how ``MemoryStore.open(path)`` lays it out.

``MemoryStore.open(path, backend=...)`` keeps everything of a store under one directory:

=================  ===============================================================
``path/chroma/``   the embedded Chroma database (``backend="chroma"``, the default)
``path/qdrant/``   Qdrant's local persistent mode (``backend="qdrant"``)
``path/*.json``    the in-memory backend's ``snapshot.json`` + ``journal.log``
                   (``backend="inmemory"``; at the top level, as before backends
                   could be chosen, so older directories keep opening)
``path/keys/``     the encryption keys, when the store is encrypted
=================  ===============================================================

:func:`detect_backend` reads the layout, so a directory that already holds a store
reopens with the backend it was created with whatever ``"auto"`` would pick today;
asking for another kind is a :class:`~mars_core.errors.ConfigError`.
:func:`choose_backend` resolves ``"auto"``: Chroma when ``chromadb`` is installed, else
the in-memory journal backend, with a WARNING on logger ``mars_core.backends.layout``
and a ``backend_choice`` line in ``store.stats()``.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> detect_backend(d) is None
    True
    >>> backend, note = open_backend(d, "inmemory")
    >>> backend.name, note, detect_backend(d)
    ('inmemory', 'inmemory (asked for)', 'inmemory')
    >>> backend.close()
    >>> import shutil; shutil.rmtree(d)
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Literal

from mars_core.backends.base import VectorBackend
from mars_core.errors import ConfigError, CorruptStoreError

__all__ = ["KEYS_DIR", "BackendKind", "choose_backend", "detect_backend", "no_store",
           "open_backend", "purges_physically"]

BackendKind = Literal["auto", "chroma", "inmemory", "qdrant"]
"""What ``MemoryStore.open(path, backend=...)`` accepts besides a backend instance."""

KEYS_DIR = "keys"
"""The key directory of an encrypted store opened by path: ``path/keys``."""

_KINDS = ("auto", "chroma", "inmemory", "qdrant")
_INMEMORY_FILES = ("snapshot.json", "journal.log")
log = logging.getLogger(__name__)


def detect_backend(directory: Path) -> str | None:
    """The backend kind a store directory was created with, or ``None`` (no store yet).

    Raises:
        CorruptStoreError: the directory holds the files of more than one backend.
    """
    found = [kind for kind in ("chroma", "qdrant") if (directory / kind).is_dir()]
    if any((directory / name).exists() for name in _INMEMORY_FILES):
        found.append("inmemory")
    if len(found) > 1:
        raise CorruptStoreError(
            f"{directory} holds the files of several backends ({', '.join(found)}); move all "
            "but one away, or export the store you want and import it into a new directory")
    return found[0] if found else None


def choose_backend(kind: str, directory: Path) -> tuple[str, str]:
    """Resolve ``kind`` for ``directory``: ``(concrete kind, a note saying why)``.

    Raises:
        ConfigError: an unknown kind, or one that differs from the directory's.
    """
    if kind not in _KINDS:
        raise ConfigError(f"backend must be one of {list(_KINDS)} or a backend instance, "
                          f"not {kind!r}")
    existing = detect_backend(directory)
    if existing is not None:
        if kind not in ("auto", existing):
            raise ConfigError(
                f"{directory} already holds a {existing!r} store; open it with "
                f"backend={existing!r} (or 'auto'), or export it and import the JSON-LD into "
                f"a new directory opened with backend={kind!r}")
        return existing, f"{existing} (found in the directory)"
    if kind != "auto":
        return kind, f"{kind} (asked for)"
    if importlib.util.find_spec("chromadb") is not None:
        return "chroma", "chroma (auto: the embedded default)"
    log.warning("chromadb is not installed: the store at %s uses the in-memory journal "
                "backend (pip install 'mars-memory[chroma]' for the embedded Chroma default)",
                directory)
    return "inmemory", ("inmemory (auto: chromadb is not installed; "
                        "pip install 'mars-memory[chroma]' for Chroma)")


def no_store(where: object) -> ConfigError:
    """The error of a reader (``read_only=True``) that finds no store at ``where``."""
    return ConfigError(f"read_only=True opens an existing store, and there is none at {where}; "
                       "open it once without read_only to create it")


def open_backend(directory: Path, kind: str = "auto", *,
                 create: bool = True) -> tuple[VectorBackend, str]:
    """Open the backend of the store at ``directory``: ``(backend, note for stats())``.

    With ``create=False`` (a reader) a directory that holds no store is refused before
    anything is made in it.

    Raises:
        ConfigError: see :func:`choose_backend`; or no store here and not ``create``.
        ExtraNotInstalledError: the chosen backend's client is not installed.
        ConflictError: another process holds the directory.
    """
    if not create and detect_backend(directory) is None:
        raise no_store(directory)
    concrete, note = choose_backend(kind, directory)
    directory.mkdir(parents=True, exist_ok=True)
    if concrete == "chroma":
        from mars_core.backends.chroma import ChromaBackend

        return ChromaBackend(path=directory / "chroma"), note
    if concrete == "qdrant":
        from mars_core.backends.qdrant import QdrantBackend

        return QdrantBackend(path=directory / "qdrant"), note
    from mars_core.backends.memory import InMemoryBackend

    return InMemoryBackend(directory), note


def purges_physically(backend: VectorBackend) -> bool:
    """Whether a delete removes the bytes from disk (the in-memory backend compacts);
    Chroma and Qdrant keep them until they vacuum, so erasure there needs encryption."""
    return callable(getattr(backend, "compact", None))
