"""Where a store's audit key lives: never beside the chain it signs.

The audit chain (:mod:`mars_core.audit`) is an HMAC chain: whoever holds its key can
rewrite history and re-chain it. So the key is never written into the store's own files
(the manifest records only a key *id*, an HMAC of a constant, to refuse a wrong key):

* ``audit_key=`` given by the caller (or ``$MARS_AUDIT_KEY``, hex): used, never
  persisted. Whoever can forge is whoever holds that secret.
* otherwise, for a durable store, a random key in the key directory
  (``$MARS_KEY_DIR``, else ``$XDG_DATA_HOME/mars-memory/keys``, else
  ``~/.local/share/mars-memory/keys``): one file ``<store id>.key`` per store, mode 0600
  in a directory of mode 0700. Whoever can read that file — the OS user that created the
  store, and root — can forge; someone who can only write the store's directory (a shared
  volume, a copied backup) cannot.
* a store in RAM keeps its random key in RAM.

Even a key holder cannot rewrite what was anchored: keep ``store.audit.head`` outside
the store and check it later with ``store.verify(expected_head=...)`` (``mars verify
--head``).

Examples:
    >>> import tempfile
    >>> ring = KeyRing(tempfile.mkdtemp())
    >>> key = ring.create("a1b2c3d4")
    >>> ring.load("a1b2c3d4") == key and len(key) == 32
    True
    >>> key_id(key) == key_id(key) != key_id(bytes(32))
    True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from pathlib import Path

from mars_core._env import env
from mars_core.errors import ConfigError

__all__ = ["KEY_ENV", "KeyRing", "check_key", "default_key_dir", "env_key", "key_id"]

KEY_ENV = "MARS_AUDIT_KEY"
"""The environment variable that may hold the audit key (hex)."""

_STORE_ID = re.compile(r"[0-9a-f]{8,64}")


def key_id(key: bytes) -> str:
    """A public identifier of a key (it reveals nothing of the key).

    Examples:
        >>> len(key_id(b"k" * 32))
        32
    """
    return hmac.new(key, b"mars-memory audit key id", hashlib.sha256).hexdigest()[:32]


def check_key(key: object) -> bytes:
    """A caller's audit key, checked.

    Raises:
        ConfigError: not bytes, or fewer than 16 of them.
    """
    if not isinstance(key, bytes) or len(key) < 16:
        raise ConfigError("audit_key must be bytes, at least 16 of them "
                          "(e.g. os.urandom(32), kept in your secrets manager)")
    return key


def env_key() -> bytes | None:
    """The key in ``$MARS_AUDIT_KEY`` (hex), if set.

    Raises:
        ConfigError: the variable is set but is not hex of at least 16 bytes.
    """
    value = env(KEY_ENV)
    if value is None:
        return None
    try:
        return check_key(bytes.fromhex(value.strip()))
    except ValueError:
        raise ConfigError(f"${KEY_ENV} must hold the audit key as hex (at least 32 hex "
                          "digits)") from None


def default_key_dir() -> Path:
    """``$MARS_KEY_DIR``, else ``$XDG_DATA_HOME/mars-memory/keys``, else
    ``~/.local/share/mars-memory/keys``."""
    explicit = env("MARS_KEY_DIR")
    if explicit is not None:
        return Path(explicit)
    base = env("XDG_DATA_HOME", str(Path.home() / ".local" / "share"))
    return Path(base) / "mars-memory" / "keys"


class KeyRing:
    """The key directory: one 0600 file of 32 random bytes per store.

    Args:
        directory: where the key files live (default: :func:`default_key_dir`).

    Examples:
        >>> import tempfile
        >>> ring = KeyRing(tempfile.mkdtemp())
        >>> ring.load("ffff0000") is None
        True
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_key_dir()

    def path(self, store_id: str) -> Path:
        """The key file of a store."""
        if not _STORE_ID.fullmatch(store_id):
            raise ConfigError(f"not a store id: {store_id!r}")
        return self.directory / f"{store_id}.key"

    def load(self, store_id: str) -> bytes | None:
        """A store's key, or None when its file is missing.

        Raises:
            ConfigError: the file exists but is not a key.
        """
        try:
            key = self.path(store_id).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"the audit key file {self.path(store_id)} cannot be read "
                              f"({exc.strerror})") from None
        if len(key) < 16:
            raise ConfigError(f"the audit key file {self.path(store_id)} is damaged")
        return key

    def create(self, store_id: str) -> bytes:
        """Draw a new key for a store and write it (never over an existing file).

        Raises:
            ConfigError: the directory cannot be written, or the file exists.
        """
        return self.save(store_id, os.urandom(32))

    def save(self, store_id: str, key: bytes) -> bytes:
        """Write a store's key: a new 0600 file, synced (never over an existing one).

        Raises:
            ConfigError: the directory cannot be written, or the file exists.
        """
        path = self.path(store_id)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot write the audit key to {path} ({exc.strerror}); set "
                              "$MARS_KEY_DIR to a writable directory or pass audit_key=") \
                from None
        with os.fdopen(fd, "wb") as out:
            out.write(key)
            out.flush()
            os.fsync(out.fileno())
        return key
