"""An exclusive lock on a file, held by one open descriptor, on every platform.

The operating system's own lock (``flock`` on POSIX, ``LockFileEx`` on Windows), taken
through :mod:`filelock`'s descriptor functions: the kernel drops it when the holder
closes the file or dies, so a crash never leaves a stale lock behind. Two opens of one
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
import os
import socket
import time
from pathlib import Path

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
        from filelock import lock_descriptor  # imported when a store is opened to write

        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        deadline = time.monotonic() + timeout
        try:
            while not lock_descriptor(fd, blocking=False):
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
        from filelock import unlock_descriptor

        with contextlib.suppress(OSError):
            unlock_descriptor(fd)
        os.close(fd)


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
