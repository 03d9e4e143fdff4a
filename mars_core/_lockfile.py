"""An exclusive lock on a file, held by one open descriptor, on every platform.

The operating system's own lock (``flock`` on POSIX, ``LockFileEx`` on Windows): the
kernel drops it when the holder closes the file or dies, so a crash never leaves a stale
lock behind. On POSIX it is taken with :func:`fcntl.flock` (whole file, exclusive, not
blocking) — the very call :mod:`filelock`'s descriptor functions make there, so a
process that locks through :mod:`filelock` excludes this one and the reverse — without
importing :mod:`filelock` (~36 ms of CPU in a store's first open, measured on
the shared 2-core machine); elsewhere through
:mod:`filelock`'s ``lock_descriptor`` / ``unlock_descriptor``. Two opens of one
file — in two processes, or twice in one process — exclude each other.

The holder writes who it is (``pid N on HOST``) into the file, after byte 0 (the byte
Windows locks), so a process that waits in vain can say who holds it.

Examples:
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     held = LockFile.take(pathlib.Path(d) / "x.lock", timeout=0)
    ...     try:
    ...         LockFile.take(pathlib.Path(d) / "x.lock", timeout=0)
    ...     except LockHeld as exc:
    ...         print(exc.holder.startswith("pid "))
    ...     held.release()
    True
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from pathlib import Path
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__all__ = ["LockFile", "LockHeld"]

_POLL = 0.05
_HOLDER_AT = 1  # Windows locks byte 0 only: the holder's line is readable beside it
_HOLDER_MAX = 200


class LockHeld(Exception):  # private: the callers raise ConflictError from it
    """Another descriptor holds the lock; ``holder`` is what it wrote (may be empty)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class LockFile:
    """A held lock; :meth:`release` (idempotent) unlocks and closes it."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def take(cls, path: Path, *, timeout: float) -> LockFile:
        """Lock ``path`` (created when missing), waiting up to ``timeout`` seconds.

        Raises:
            OSError: the file cannot be created or opened.
            LockHeld: another descriptor still holds it after ``timeout``.
        """
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        deadline = time.monotonic() + timeout
        try:
            while not _lock(fd):
                if time.monotonic() >= deadline:
                    raise LockHeld(_read_holder(fd))
                time.sleep(_POLL)
        except BaseException:
            os.close(fd)
            raise
        _write_holder(fd, f"pid {os.getpid()} on {socket.gethostname()}")
        return cls(fd)

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Unlock and close (the kernel would at exit; this does it now)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            _unlock(fd)
        os.close(fd)


_CONTENDED = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})
"""What ``flock`` says when another descriptor holds the lock (some file systems say
``EACCES``), as :mod:`filelock` reads it."""


def _lock(fd: int) -> bool:
    """Take the lock on ``fd`` without waiting; whether it was free.

    Raises:
        OSError: the lock cannot be taken for another reason than contention.
    """
    if fcntl is None:
        from filelock import lock_descriptor  # not POSIX: filelock's LockFileEx

        return lock_descriptor(fd, blocking=False)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _CONTENDED:
            return False
        raise
    return True


def _unlock(fd: int) -> None:
    if fcntl is None:
        from filelock import unlock_descriptor

        unlock_descriptor(fd)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        os.lseek(fd, _HOLDER_AT, os.SEEK_SET)
        return os.read(fd, _HOLDER_MAX).decode("utf-8", "replace").strip("\x00\n ")
    return ""


def _write_holder(fd: int, holder: str) -> None:
    with contextlib.suppress(OSError):  # the line is a courtesy; the lock is what counts
        os.lseek(fd, 0, os.SEEK_SET)
        line = b"\n" + holder.encode()[:_HOLDER_MAX]
        os.write(fd, line)
        os.ftruncate(fd, len(line))
