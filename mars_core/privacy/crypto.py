"""Crypto-shredding: memory text sealed under per-memory keys that erasure destroys.

Some backends cannot purge deleted data physically: Chroma keeps deleted documents in
its write-ahead queue (chroma issue #3793) and in HNSW files until a vacuum, and a
Qdrant segment keeps them until optimisation. For those, the store seals each record's
document (the node JSON: text, payload, edges) under a key of its own and, on erasure,
destroys the key. What stays behind in the backend's files is ciphertext nobody can
open any more (DESIGN §3, invariant 6).

* :class:`KeyStore` keeps the keys: 256-bit keys from ``os.urandom``, one record per key
  (id = key id, document = hex key) in the ``keys`` collection of an
  :class:`~mars_core.backends.memory.InMemoryBackend` persisted to its own directory —
  so every write is journalled atomically (``fsync`` by default: a record must never
  outlive the loss of its key), and :meth:`KeyStore.destroy` compacts it, rewriting the
  snapshot and truncating the journal so a destroyed key is in no file of the directory.
* :class:`ContentCipher` seals and opens documents with AES-256-GCM: a token is
  ``"enc1:" + base64(nonce ‖ ciphertext ‖ tag)`` with a random 96-bit nonce, and the key
  id is the associated data, so a ciphertext moved to another record does not open.

Ordering makes crashes safe: :meth:`ContentCipher.seal` creates a missing key in memory,
:meth:`ContentCipher.flush` persists the new keys *before* the records that use them are
written, and :meth:`ContentCipher.shred` runs *after* the records are deleted. A crash in
between leaves only orphan keys — keys of a batch that was never written, or of records
already deleted — which :meth:`ContentCipher.gc` removes when the store is opened again.

Keys and nonces are random, so with encryption on the bytes on disk differ between two
runs on the same inputs; the logical store (the decrypted nodes, exports, retrieval
results) stays deterministic.

What crypto-shredding does not reach: the vectors and the flat filter metadata
(namespace, type, status, sensitivity, timestamps, step, conversation id, weight) are
stored in the clear, because the backend searches and filters on them; on a backend that
cannot purge, they remain until it vacuums. Copies made outside the store (exports,
backups of the key directory) are out of its reach too.

Examples:
    >>> cipher = ContentCipher(KeyStore())  # keys in memory; give KeyStore a directory
    >>> token = cipher.seal("m1", "Ana lives on Rua Augusta")
    >>> token.startswith("enc1:") and "Ana" not in token
    True
    >>> cipher.flush()  # persist new keys before writing the records sealed with them
    1
    >>> cipher.open("m1", token)
    'Ana lives on Rua Augusta'
    >>> cipher.shred(["m1"])
    1
    >>> cipher.open("m1", token)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.CorruptStoreError: ...
    >>> cipher.close()
"""

from __future__ import annotations

import base64
import binascii
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from mars_core.backends.base import Record, WriteBatch
from mars_core.backends.memory import InMemoryBackend
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    ExtraNotInstalledError,
    ValidationError,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "KEYS",
    "KEY_BYTES",
    "SEALED_PREFIX",
    "ContentCipher",
    "KeyStore",
    "is_sealed",
]

KEYS = "keys"
"""The collection of the key directory that holds the keys."""
KEY_BYTES = 32
"""Key length: AES-256."""
SEALED_PREFIX = "enc1:"
"""Marks a sealed document (version 1: AES-256-GCM, 12-byte nonce, AAD = key id)."""

_KEYRING = "keyring"
_KEYRING_ID = "id"
_NONCE_BYTES = 12
_TAG_BYTES = 16


def is_sealed(document: str) -> bool:
    """True if ``document`` is a token made by :meth:`ContentCipher.seal`.

    Examples:
        >>> is_sealed("enc1:AAAA"), is_sealed('{"v": 1}')
        (True, False)
    """
    return document.startswith(SEALED_PREFIX)


def _aesgcm() -> tuple[type[AESGCM], type[Exception]]:
    """AES-GCM and its authentication error, from the optional ``crypto`` extra."""
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:
        raise ExtraNotInstalledError("crypto", "cryptography") from exc
    return AESGCM, InvalidTag


def _decode_key(record: Record) -> bytes:
    try:
        key = bytes.fromhex(record.document)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise CorruptStoreError(f"key {record.id} in the key directory is malformed")
    return key


class KeyStore:
    """Per-record 256-bit keys, journalled in a directory of their own.

    Args:
        path: the key directory (created if missing; locked while open). ``None`` keeps
            the keys in memory only, which is only useful for tests.
        fsync: ``fsync`` every key write (default): a record written after its key must
            not survive a power loss that the key does not.

    Raises:
        ConflictError: another process holds the directory.
        CorruptStoreError: the directory is damaged, or holds a malformed key.

    Examples:
        >>> ks = KeyStore()
        >>> ks.put({"m1": bytes(32)})
        >>> "m1" in ks, len(ks), ks.destroy(["m1", "m2"]), "m1" in ks
        (True, 1, 1, False)
        >>> ks.close()
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, fsync: bool = True) -> None:
        self._lock = threading.RLock()
        self._backend = InMemoryBackend(path, fsync=fsync)
        try:
            for name in (KEYS, _KEYRING):
                self._backend.ensure_collection(name, 0)
            self._keys = {r.id: _decode_key(r) for r in self._backend.get(KEYS)}
        except BaseException:
            self._backend.close()
            raise

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __enter__(self) -> KeyStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def ids(self) -> frozenset[str]:
        """The ids of every key held."""
        with self._lock:
            return frozenset(self._keys)

    def get(self, key_id: str) -> bytes | None:
        """The key of ``key_id``, or ``None`` (never created, or destroyed)."""
        return self._keys.get(key_id)

    def put(self, keys: Mapping[str, bytes]) -> None:
        """Persist new keys in one atomic write. Keys are immutable once written.

        Raises:
            ConflictError: a key id already has a key (nothing is written).
            ValidationError: a key is not 32 bytes.
        """
        with self._lock:
            clash = [k for k in keys if k in self._keys]
            if clash:
                raise ConflictError(f"{len(clash)} key ids already have a key")
            if any(len(v) != KEY_BYTES for v in keys.values()):
                raise ValidationError(f"keys must be {KEY_BYTES} bytes")
            if not keys:
                return
            self._backend.apply(WriteBatch().upsert(KEYS, [
                Record(k, None, v.hex(), {}) for k, v in keys.items()]))
            self._keys.update(keys)

    def destroy(self, key_ids: Iterable[str]) -> int:
        """Delete keys and compact: afterwards they are in no file of the directory.

        Missing ids are ignored. Returns how many keys were destroyed.
        """
        with self._lock:
            present = sorted({k for k in key_ids if k in self._keys})
            if not present:
                return 0
            self._backend.apply(WriteBatch().delete(KEYS, present))
            for k in present:
                del self._keys[k]
            self._backend.compact()
            return len(present)

    @property
    def keyring_id(self) -> str | None:
        """The id binding this directory to one store (``None`` until :meth:`bind`)."""
        found = self._backend.get(_KEYRING, [_KEYRING_ID])
        return found[0].document if found else None

    def bind(self, keyring_id: str | None = None) -> str:
        """Bind the directory to a store (idempotent); returns the keyring id.

        A store records the id in its manifest, so a store opened with another store's
        key directory is refused instead of having that store's keys collected.
        """
        with self._lock:
            current = self.keyring_id
            if current is None:
                current = keyring_id or uuid.uuid4().hex
                self._backend.apply(WriteBatch().upsert(_KEYRING, [
                    Record(_KEYRING_ID, None, current, {})]))
            return current

    def close(self) -> None:
        """Release the directory (idempotent)."""
        self._backend.close()


class ContentCipher:
    """Seal and open record documents under per-record keys (AES-256-GCM).

    Args:
        keystore: where the keys live; the cipher holds keys it created but has not
            persisted yet until :meth:`flush`.

    Raises:
        ExtraNotInstalledError: ``cryptography`` is not installed
            (``pip install 'mars-memory[crypto]'``).

    Examples:
        >>> c = ContentCipher(KeyStore())
        >>> t1, t2 = c.seal("m1", "same text"), c.seal("m1", "same text")
        >>> t1 != t2 and c.open("m1", t1) == c.open("m1", t2) == "same text"  # random nonces
        True
        >>> c.close()
    """

    scheme = "AES-256-GCM"

    def __init__(self, keystore: KeyStore) -> None:
        self._aead, self._invalid_tag = _aesgcm()
        self.keystore = keystore
        self._pending: dict[str, bytes] = {}

    def _key(self, key_id: str) -> bytes | None:
        return self._pending.get(key_id) or self.keystore.get(key_id)

    def seal(self, key_id: str, plaintext: str) -> str:
        """Encrypt ``plaintext`` under the key of ``key_id`` (created when missing).

        A new key is held in memory until :meth:`flush`; flush before writing the sealed
        record, or the record outlives a crash that its key does not.
        """
        key = self._key(key_id)
        if key is None:
            key = self._pending[key_id] = os.urandom(KEY_BYTES)
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead(key).encrypt(nonce, plaintext.encode("utf-8"), key_id.encode("utf-8"))
        return SEALED_PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, key_id: str, token: str) -> str:
        """Decrypt a token made by :meth:`seal` for ``key_id``.

        Raises:
            CorruptStoreError: the key is missing (crypto-shredded by an erasure, or this
                is not the key directory the store was written with), or the token is
                malformed, tampered with or sealed for another record. The message names
                the key id only, never any text.
        """
        key = self._key(key_id)
        if key is None:
            raise CorruptStoreError(
                f"the encryption key of {key_id} is missing: it was crypto-shredded by an "
                "erasure, or keys_path is not the key directory this store was written with")
        try:
            if not is_sealed(token):
                raise ValueError("no enc1 prefix")
            raw = base64.b64decode(token[len(SEALED_PREFIX):], validate=True)
            if len(raw) < _NONCE_BYTES + _TAG_BYTES:
                raise ValueError("too short")
            plain = self._aead(key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:],
                                            key_id.encode("utf-8"))
            return plain.decode("utf-8")
        except (ValueError, binascii.Error, self._invalid_tag) as exc:
            raise CorruptStoreError(
                f"the sealed document of {key_id} does not open: it is malformed, was "
                "tampered with, or was sealed for another record") from exc

    def flush(self) -> int:
        """Persist the keys created since the last flush (one atomic write); returns how many."""
        pending, self._pending = self._pending, {}
        try:
            self.keystore.put(pending)
        except BaseException:
            self._pending = {**pending, **self._pending}
            raise
        return len(pending)

    def discard(self) -> None:
        """Forget keys created but never flushed (their records were never written)."""
        self._pending.clear()

    def shred(self, key_ids: Iterable[str]) -> int:
        """Destroy keys physically, after their records were deleted; returns how many."""
        ids = list(key_ids)
        for k in ids:
            self._pending.pop(k, None)
        return self.keystore.destroy(ids)

    def gc(self, live_ids: Iterable[str]) -> int:
        """Destroy every persisted key whose id is not in ``live_ids`` (orphans); returns
        how many.

        Orphans are keys flushed for a write that then failed, or keys of records
        deleted just before a crash prevented their shredding.
        """
        return self.keystore.destroy(self.keystore.ids() - frozenset(live_ids))

    def close(self) -> None:
        """Drop unflushed keys and close the key store (idempotent)."""
        self._pending.clear()
        self.keystore.close()
