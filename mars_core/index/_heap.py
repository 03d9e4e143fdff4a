"""The process's C heap (glibc), as an embedded index that loads and frees whole graphs
needs it: :func:`trim` gives free pages back, :func:`cap_arenas` bounds how many heaps
threads spread their memory over.

An embedded Chroma loads a collection's HNSW graph on its own threads and frees it when
its client is reopened (``ChromaIndex(max_loaded_vectors=)``). glibc gives each thread
that allocates while the others hold theirs an arena of its own, up to eight per core,
and an arena's freed pages stay resident as fragments: a process that served namespaces
of long histories in turn kept growing by what each graph left behind in some arena.
Section 6 of ``mars bench store`` measures it (docs/benchmarks/storage.md).

Examples:
    >>> cap_arenas(0)
    Traceback (most recent call last):
        ...
    mars_core.errors.ValidationError: malloc arenas must be a positive int or None, not 0
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

from mars_core.errors import ValidationError

__all__ = ["ARENAS", "cap_arenas", "check_arenas", "trim"]

ARENAS = 2
"""The arenas :func:`cap_arenas` allows by default."""

_M_ARENA_MAX = -8  # glibc's mallopt parameter
_lock = threading.Lock()
_capped: list[int] = []  # the cap this process set, once


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError):
        return ctypes.CDLL("libc.so.6")
    return None


def check_arenas(value: object) -> int | None:
    """``value`` as an arena cap (a positive int, or None: no cap).

    Raises:
        ValidationError: anything else.
    """
    if value is None or (isinstance(value, int) and not isinstance(value, bool)
                         and value >= 1):
        return value
    raise ValidationError(f"malloc arenas must be a positive int or None, not {value!r}")


def cap_arenas(arenas: int | None = ARENAS) -> int | None:
    """Cap glibc's malloc arenas for the whole process (``mallopt(M_ARENA_MAX)``), once:
    the first call that asks sets it, later calls change nothing. Nothing is set when
    ``arenas`` is None, when the environment sets ``MALLOC_ARENA_MAX`` (it decides), or
    off glibc. Arenas made before stay; the cap bounds those made after.

    Returns:
        the cap this process set (now or before), or None.

    Raises:
        ValidationError: ``arenas`` is not a positive int or None.
    """
    arenas = check_arenas(arenas)
    with _lock:
        if _capped or arenas is None or "MALLOC_ARENA_MAX" in os.environ:
            return _capped[0] if _capped else None
        libc = _libc()
        with contextlib.suppress(AttributeError):
            if libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1:
                _capped.append(arenas)
        return _capped[0] if _capped else None


def trim() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing
    elsewhere). What a reopened client freed otherwise stays resident in the heap's
    fragments: a process serving 75 namespaces in turn peaked at 254 MB without it,
    191 MB with it (section 6 of ``mars bench store``)."""
    libc = _libc()
    with contextlib.suppress(AttributeError):
        if libc is not None:
            libc.malloc_trim(0)
