"""Write-ahead intents: all-or-nothing batches on backends that cannot apply them natively.

Chroma and Qdrant write one collection per call, so a
:class:`~mars_core.backends.base.WriteBatch` that touches the memories, the audit log and
the store state would be half-applied by a crash between two calls. A
:class:`WriteAheadLog` closes that gap with an *intent record*:

1. the backend validates the whole batch (nothing is written if any part is invalid);
2. :meth:`WriteAheadLog.begin` serialises the batch into one intent — JSON, vectors as
   base64 of little-endian float32 — and stores it in an :class:`IntentStore`: the
   backend's own hidden collection (split into parts when large), or, for an embedded
   database in a local directory, :class:`FileIntentStore` (one fsynced file per part,
   about 0.5 ms instead of two database writes);
3. the backend applies the operations in order;
4. :meth:`WriteAheadLog.commit` deletes the intent.

When a backend opens it calls :meth:`WriteAheadLog.recover`, which re-applies every
complete leftover intent, oldest first, and then deletes it.

What a crash leaves, and why that is safe:

* **before the intent is complete** (crash in step 2): nothing of the batch was applied
  and the caller got no answer; leftover parts of an incomplete intent are deleted on
  recovery, so the batch is simply lost, as an unacknowledged write may be.
* **during step 3**: a prefix of the operations is applied; recovery applies the whole
  batch again, so the store ends as if the batch had been applied once. The caller got
  no answer but the write is done — like a database commit whose acknowledgement was
  lost.
* **between steps 3 and 4**: everything is applied; recovery applies it again, which
  changes nothing.

Replaying from any prefix converges because every operation is *idempotent and
state-free*: an upsert carries the full record (document, metadata and, where the
collection has vectors, the vector) and replaces whatever is stored; a delete removes
the ids. The one exception is the "keep the stored vector" upsert (``vector=None``):
on replay, an id that no longer exists is skipped — a later delete in the same batch
removed it, and a re-creation after that delete carries its own vector.

Assumptions: one writer per set of collections (the store is single-writer, and on a
shared server only the holder of its writer lease replays intents: another process that
replayed a batch still in flight could undo the writer's later writes), and the backend's
single write calls are atomic. There is no read isolation: a reader in another process
can observe a half-applied batch (a read-only store reads again while
:meth:`WriteAheadLog.pending` lists one, see ``mars_core.core``).

Privacy: an intent holds the batch's documents and vectors until step 4 deletes it; on
backends that keep deleted data physically for a while (Chroma's own log, Qdrant's
segments before optimisation) the privacy layer's crypto-shredding is what makes the
text unrecoverable.

Examples:
    >>> import numpy as np
    >>> from mars_core.backends.base import DeleteOp, Record, UpsertOp
    >>> class Dict:  # an IntentStore over a dict
    ...     def __init__(self): self.rows = {}
    ...     def write_intent(self, records): self.rows.update((r.id, r) for r in records)
    ...     def read_intents(self): return list(self.rows.values())
    ...     def delete_intents(self, ids): [self.rows.pop(i, None) for i in ids]
    >>> wal = WriteAheadLog(Dict())
    >>> ops = [UpsertOp("mem", (Record("a", np.ones(2, np.float32), "x", {"n": 1}),)),
    ...        DeleteOp("mem", ("b",))]
    >>> intent = wal.begin(ops)             # ... and the process dies here
    >>> applied = []
    >>> wal.recover(applied.extend)         # the next open finishes the batch
    1
    >>> [type(op).__name__ for op in applied], wal.pending()
    (['UpsertOp', 'DeleteOp'], [])
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mars_core.backends.base import (
    DeleteOp,
    Op,
    Record,
    UpsertOp,
    as_vector,
    validate_metadata,
)
from mars_core.errors import CorruptStoreError

__all__ = [
    "FileIntentStore",
    "Intent",
    "IntentStore",
    "Op",
    "WriteAheadLog",
    "decode_ops",
    "encode_ops",
]


_FORMAT = "mars-wal-intent"
_VERSION = 1
_F32 = np.dtype("<f4")
_PART_IDS = uuid.UUID("8f0a4b55-5f2e-4cc8-9a51-0f3b8c4d6a10")


def encode_ops(ops: Sequence[Op]) -> str:
    """Serialise operations to one JSON text (vectors as base64 little-endian float32).

    Examples:
        >>> import numpy as np
        >>> text = encode_ops([UpsertOp("c", (Record("a", np.array([1.0, 0.5]), "d", {}),))])
        >>> decode_ops(text)[0].records[0].vector.tolist()
        [1.0, 0.5]
    """
    out: list[dict[str, Any]] = []
    for op in ops:
        if isinstance(op, UpsertOp):
            rows = [[r.id, _encode_vector(r.vector), r.document, dict(r.metadata)]
                    for r in op.records]
            out.append({"u": op.collection, "r": rows})
        else:
            out.append({"d": op.collection, "i": list(op.ids)})
    doc = {"format": _FORMAT, "version": _VERSION, "ops": out}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def decode_ops(text: str) -> list[Op]:
    """Inverse of :func:`encode_ops`.

    Raises:
        CorruptStoreError: the text is not an intent this version wrote.
    """
    try:
        doc = json.loads(text)
        if doc.get("format") != _FORMAT or doc.get("version") != _VERSION:
            raise ValueError(f"unknown intent format {doc.get('format')!r} {doc.get('version')!r}")
        return [_decode_op(op) for op in doc["ops"]]
    except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
        raise CorruptStoreError(
            f"a write-ahead intent is unreadable ({exc}); restore the store from a backup "
            "or delete the backend's hidden '_wal' collection to drop the unfinished batch"
        ) from exc


def _encode_vector(vec: Any) -> str | None:
    if vec is None:
        return None
    raw = np.ascontiguousarray(vec, dtype=_F32).tobytes()
    return base64.b64encode(raw).decode("ascii")


def _decode_op(op: Mapping[str, Any]) -> Op:
    if "d" in op:
        return DeleteOp(str(op["d"]), tuple(str(i) for i in op["i"]))
    records = []
    for rid, vec, doc, meta in op["r"]:
        if not isinstance(meta, dict):
            raise TypeError("intent metadata must be an object")
        validate_metadata(meta)
        vector = None
        if vec is not None:
            raw = base64.b64decode(vec.encode("ascii"), validate=True)
            vector = as_vector(np.frombuffer(raw, dtype=_F32))
        records.append(Record(str(rid), vector, str(doc), meta))
    return UpsertOp(str(op["u"]), tuple(records))


@dataclass(frozen=True, slots=True)
class Intent:
    """A batch recorded before it is applied.

    Attributes:
        id: the intent's id (a UUID string).
        seq: its position in time (nanoseconds, strictly increasing per process).
        ops: the operations, in order.
        record_ids: ids of the records that hold it in the intent store.
    """

    id: str
    seq: int
    ops: tuple[Op, ...]
    record_ids: tuple[str, ...]


class IntentStore(Protocol):
    """Where a :class:`WriteAheadLog` keeps its intents: a backend's hidden collection.

    Records are vector-less; the document holds (part of) the intent text, the metadata
    ``{"intent": id, "seq": int, "part": i, "parts": n}``.
    """

    def write_intent(self, records: Sequence[Record]) -> None:
        """Store the records (one atomic write where the backend can)."""
        ...

    def read_intents(self) -> list[Record]:
        """Every stored record."""
        ...

    def delete_intents(self, ids: Sequence[str]) -> None:
        """Delete records by id (missing ids are a no-op)."""
        ...


class WriteAheadLog:
    """Records a batch before it is applied, so a crash can be completed on reopen.

    Args:
        store: the backend's intent collection.
        part_chars: the largest document of one intent record; longer intents are
            split into parts and an intent counts only when all its parts are stored.

    Examples:
        See the module docstring.
    """

    def __init__(self, store: IntentStore, *, part_chars: int = 1_000_000) -> None:
        if part_chars < 1:
            raise ValueError("part_chars must be positive")
        self._store = store
        self._part_chars = part_chars
        self._lock = threading.Lock()
        self._last_seq = 0

    def _next_seq(self) -> int:
        with self._lock:
            self._last_seq = max(time.time_ns(), self._last_seq + 1)
            return self._last_seq

    def begin(self, ops: Sequence[Op]) -> Intent:
        """Store an intent for ``ops`` (already validated and normalised); returns it."""
        text = encode_ops(ops)
        intent_id, seq = str(uuid.uuid4()), self._next_seq()
        chunks = [text[i : i + self._part_chars] for i in range(0, len(text), self._part_chars)]
        records = [
            Record(
                str(uuid.uuid5(_PART_IDS, f"{intent_id}:{i}")),
                None,
                chunk,
                {"intent": intent_id, "seq": seq, "part": i, "parts": len(chunks)},
            )
            for i, chunk in enumerate(chunks)
        ]
        self._store.write_intent(records)
        return Intent(intent_id, seq, tuple(ops), tuple(r.id for r in records))

    def commit(self, intent: Intent) -> None:
        """The batch is applied: delete its intent."""
        self._store.delete_intents(intent.record_ids)

    def run(self, ops: Sequence[Op], apply: Callable[[Sequence[Op]], None]) -> None:
        """``begin``, ``apply(ops)``, ``commit``; a failing ``apply`` leaves the intent."""
        intent = self.begin(ops)
        apply(ops)
        self.commit(intent)

    def pending(self) -> list[Intent]:
        """Complete leftover intents, oldest first (incomplete ones are not listed)."""
        return self._scan()[0]

    def recover(self, apply: Callable[[Sequence[Op]], None]) -> int:
        """Apply every leftover intent (oldest first) and delete it; returns how many.

        ``apply`` must skip ``vector=None`` upserts of ids that do not exist (see the
        module docstring). Parts of incomplete intents are deleted unapplied.
        """
        complete, orphans = self._scan()
        if orphans:
            self._store.delete_intents(orphans)
        for intent in complete:
            apply(intent.ops)
            self.commit(intent)
        return len(complete)

    def _scan(self) -> tuple[list[Intent], list[str]]:
        groups: dict[str, list[Record]] = {}
        for rec in self._store.read_intents():
            groups.setdefault(str(rec.metadata.get("intent", "")), []).append(rec)
        complete: list[Intent] = []
        orphans: list[str] = []
        for intent_id, parts in groups.items():
            parts.sort(key=lambda r: _int(r.metadata.get("part")))
            expected = _int(parts[0].metadata.get("parts"))
            if [_int(r.metadata.get("part")) for r in parts] != list(range(expected)):
                orphans.extend(r.id for r in parts)
                continue
            ops = decode_ops("".join(r.document for r in parts))
            seq = _int(parts[0].metadata.get("seq"))
            complete.append(Intent(intent_id, seq, tuple(ops), tuple(r.id for r in parts)))
        complete.sort(key=lambda i: (i.seq, i.id))
        return complete, orphans


class FileIntentStore:
    """An :class:`IntentStore` in a local directory: one JSON file per intent record.

    Each record is written to a temporary file, fsynced, renamed into place, and the
    directory is fsynced, so a record is either whole or absent after a crash. Meant
    for embedded databases whose files live in the same directory tree.

    Args:
        directory: where the files go (created when missing).

    Examples:
        >>> import tempfile
        >>> store = FileIntentStore(tempfile.mkdtemp())
        >>> store.write_intent([Record("r1", None, "text", {"intent": "i", "part": 0})])
        >>> [(r.id, r.document) for r in store.read_intents()]
        [('r1', 'text')]
        >>> store.delete_intents(["r1"]); store.read_intents()
        []
    """

    _SUFFIX = ".intent.json"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, rid: str) -> Path:
        if not rid or "/" in rid or rid.startswith("."):
            raise ValueError(f"unusable intent record id {rid!r}")
        return self.directory / f"{rid}{self._SUFFIX}"

    def _sync_dir(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_intent(self, records: Sequence[Record]) -> None:
        """Write each record durably (temporary file, fsync, rename, directory fsync)."""
        for rec in records:
            final = self._path(rec.id)
            tmp = final.with_name(final.name + ".tmp")
            data = json.dumps({"id": rec.id, "document": rec.document,
                               "metadata": dict(rec.metadata)}, ensure_ascii=False)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, data.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        self._sync_dir()

    def read_intents(self) -> list[Record]:
        """Every complete record; leftover temporary files are removed."""
        out: list[Record] = []
        for path in sorted(self.directory.iterdir()):
            if path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
                continue
            if not path.name.endswith(self._SUFFIX):
                continue
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                out.append(Record(str(doc["id"]), None, str(doc["document"]),
                                  dict(doc["metadata"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptStoreError(
                    f"the write-ahead intent file {path} is unreadable ({exc}); restore the "
                    "store from a backup or delete the file to drop the unfinished batch"
                ) from exc
        return out

    def delete_intents(self, ids: Sequence[str]) -> None:
        """Remove the records' files (missing ones are a no-op)."""
        for rid in ids:
            with contextlib.suppress(FileNotFoundError):
                self._path(rid).unlink()
        self._sync_dir()


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
