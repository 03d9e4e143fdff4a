"""An in-process vector backend: numpy cosine search, a posting index, a crash-safe journal.

:class:`InMemoryBackend` is the default backend of mars-memory. It needs nothing but
numpy, answers queries with one matrix-vector product, and, when given a directory,
persists every write before acknowledging it.

In memory, each collection keeps:

* its records' ids in insertion order (``get`` without ids returns that order);
* their vectors, L2-normalised, as rows of a dense float32 matrix that grows by doubling;
  a delete moves the last row into the hole, so the matrix never has gaps;
* a posting index ``key -> value -> ids`` over string and boolean metadata, so that
  ``Eq``/``In`` (and ``And``/``Or`` of them) on e.g. ``namespace`` and ``type`` do not
  scan every record. Everything else falls back to :func:`~mars_core.backends.base.matches`
  per candidate; the result is always exactly what ``matches`` says.

Query results are sorted by score (cosine, higher is more similar) descending, then by
id ascending, so ties are deterministic. Zero vectors are stored as-is and score 0.
``get(..., with_vectors=True)`` returns the stored (L2-normalised) vector, as Qdrant does;
``query`` results carry no vector (ask ``get`` for them).

Persistence format (when ``path`` is given), all in that directory:

``LOCK``
    Empty file; an exclusive ``fcntl.flock`` on it is held while the backend is open.
``snapshot.json``
    The full state at the last compaction, one UTF-8 JSON object::

        {"format": "mars-inmemory-snapshot", "version": 1, "gen": <int>,
         "collections": {"<name>": {"dim": <int>, "ids": [...], "docs": [...],
                                    "metas": [{...}, ...], "vectors": "<base64>"}}}

    ``ids``/``docs``/``metas`` are parallel lists in insertion order; ``vectors`` is the
    base64 of the raw little-endian float32 matrix (``len(ids) x dim``, same order), so
    vectors round-trip bit for bit. Written to ``snapshot.json.tmp``, fsynced,
    ``os.replace``-d over the old one, then the directory is fsynced.
``journal.log``
    Append-only, one entry per line: ``<crc32 of the JSON, 8 hex digits> <JSON>\\n``,
    written with a single ``os.write`` on an ``O_APPEND`` descriptor (then ``fsync`` if
    ``fsync=True``). The first entry is a header ``{"t": "h", "gen": N}``; the others are
    ``{"t": "c", "n": name, "d": dim}`` (a new collection) or ``{"t": "b", "ops": [...]}``
    (one whole write call or :class:`~mars_core.backends.base.WriteBatch`, already
    validated and normalised), where an op is ``{"u": collection, "r": [[id, vector
    base64 or null, document, metadata], ...]}`` or ``{"d": collection, "i": [ids]}``.

Opening loads the snapshot and replays the journal if its header ``gen`` equals the
snapshot's (an older ``gen`` is a journal already folded into the snapshot by a
compaction that crashed before truncating it, and is discarded). A garbled or partial
*last* line is a write torn by a crash: it is ignored and truncated away. A garbled line
anywhere else raises :class:`~mars_core.errors.CorruptStoreError`. Compaction (every
``compact_every`` journal entries, or :meth:`InMemoryBackend.compact`) writes a new
snapshot with ``gen + 1`` and then truncates the journal, so deleted records are no longer
in any file of the directory; a leftover ``snapshot.json.tmp`` is removed on open.

Examples:
    >>> import numpy as np
    >>> from mars_core.backends.base import Eq, Record
    >>> b = InMemoryBackend()
    >>> b.ensure_collection("mem", 3)
    >>> b.upsert("mem", [Record("a", np.array([1.0, 0.0, 0.0]), "tea", {"namespace": "u1"}),
    ...                  Record("b", np.array([0.0, 1.0, 0.0]), "coffee", {"namespace": "u2"})])
    >>> hits = b.query("mem", np.array([1.0, 0.1, 0.0]), k=5, where=Eq("namespace", "u1"))
    >>> [(h.record.id, h.record.document, round(h.score, 3)) for h in hits]
    [('a', 'tea', 0.995)]
    >>> b.close()
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import json
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from mars_core._guard import guarded
from mars_core.backends.base import (
    And,
    BackendBase,
    DeleteOp,
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Or,
    Range,
    Record,
    ScoredRecord,
    UpsertOp,
    as_vector,
    matches,
    validate_metadata,
)
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    MarsBackendError,
    NotFoundError,
    ValidationError,
)

__all__ = ["InMemoryBackend"]

Vector = npt.NDArray[np.float32]
_P = ParamSpec("_P")
_R = TypeVar("_R")

_SNAPSHOT = "snapshot.json"
_SNAPSHOT_TMP = "snapshot.json.tmp"
_JOURNAL = "journal.log"
_LOCK = "LOCK"
_FORMAT = "mars-inmemory-snapshot"
_VERSION = 1
_F32 = np.dtype("<f4")
_MIN_CAPACITY = 16


# --- codecs ---------------------------------------------------------------------------


def _encode_vector(vec: Vector) -> str:
    return base64.b64encode(np.ascontiguousarray(vec, dtype=_F32).tobytes()).decode("ascii")


def _decode_matrix(text: str, rows: int, dim: int) -> Vector:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != rows * dim * 4:
        raise ValueError(f"vector data has {len(raw)} bytes, expected {rows * dim * 4}")
    return np.frombuffer(raw, dtype=_F32).astype(np.float32).reshape(rows, dim)


def _encode_line(entry: Mapping[str, Any]) -> bytes:
    payload = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def _decode_line(line: bytes) -> dict[str, Any] | None:
    """The entry of one journal line (without its newline), or None if it is garbled."""
    crc, sep, payload = line.partition(b" ")
    if not sep or len(crc) != 8:
        return None
    try:
        if int(crc, 16) != zlib.crc32(payload):
            return None
        entry = json.loads(payload)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _normalised(vec: Vector) -> Vector:
    norm = float(np.linalg.norm(vec.astype(np.float64)))
    if norm == 0.0:
        return vec.astype(np.float32, copy=True)
    return (vec.astype(np.float64) / norm).astype(np.float32)


def _plain_metadata(metadata: Mapping[str, MetaValue]) -> dict[str, MetaValue]:
    """A copy with plain ``str``/``int``/``float``/``bool`` values (no subclasses)."""
    out: dict[str, MetaValue] = {}
    for k, v in metadata.items():
        if isinstance(v, bool):
            out[k] = bool(v)
        elif isinstance(v, str):
            out[k] = str(v)
        elif isinstance(v, int):
            out[k] = int(v)
        else:
            out[k] = float(v)
    return out


def _check_filter(flt: object) -> None:
    """Reject anything that is not a tree of the neutral filter nodes."""
    if isinstance(flt, Eq | In | Range):
        if not isinstance(flt.key, str):
            raise ValidationError(f"filter key {flt.key!r} must be a string")
        return
    if isinstance(flt, And | Or):
        for clause in flt.clauses:
            _check_filter(clause)
        return
    if isinstance(flt, Not):
        _check_filter(flt.clause)
        return
    raise ValidationError(
        f"{flt!r} is not a filter; build filters from Eq, In, Range, And, Or and Not"
    )


# --- one collection -------------------------------------------------------------------


class _Entry:
    __slots__ = ("doc", "meta", "row", "seq")

    def __init__(self, row: int, seq: int, doc: str, meta: dict[str, MetaValue]) -> None:
        self.row = row
        self.seq = seq
        self.doc = doc
        self.meta = meta


_Plan = tuple[set[str], bool]
"""Candidate ids for a filter and whether they are exactly the matching ids."""

_SCALARS = (str, int, float, bool)


class _Collection:
    """The records of one collection: rows of a dense matrix plus a posting index."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.entries: dict[str, _Entry] = {}
        self.row_ids: list[str] = []
        self.matrix: Vector = np.zeros((_MIN_CAPACITY, dim), dtype=np.float32)
        self.postings: dict[str, dict[MetaValue, set[str]]] = {}
        self.numeric: dict[str, int] = {}
        self.next_seq = 0

    # writes (inputs are validated and normalised by the caller)

    def put(self, rid: str, vec: Vector | None, doc: str, meta: dict[str, MetaValue]) -> None:
        entry = self.entries.get(rid)
        if entry is None:
            entry = _Entry(self._append_row(rid), self.next_seq, doc, meta)
            self.next_seq += 1
            self.entries[rid] = entry
        else:
            self._unindex(rid, entry.meta)
            entry.doc, entry.meta = doc, meta
        if vec is not None and self.dim:
            self.matrix[entry.row] = vec
        self._index(rid, meta)

    def remove(self, rid: str) -> None:
        entry = self.entries.pop(rid, None)
        if entry is None:
            return
        self._unindex(rid, entry.meta)
        last = len(self.row_ids) - 1
        if entry.row != last:
            moved = self.row_ids[last]
            self.matrix[entry.row] = self.matrix[last]
            self.row_ids[entry.row] = moved
            self.entries[moved].row = entry.row
        self.row_ids.pop()
        self.matrix[last] = 0.0  # do not keep a deleted vector around

    def _append_row(self, rid: str) -> int:
        row = len(self.row_ids)
        if row == self.matrix.shape[0]:
            grown = np.zeros((max(_MIN_CAPACITY, 2 * row), self.dim), dtype=np.float32)
            grown[:row] = self.matrix[:row]
            self.matrix = grown
        self.row_ids.append(rid)
        return row

    def _index(self, rid: str, meta: Mapping[str, MetaValue]) -> None:
        for key, value in meta.items():
            if isinstance(value, str | bool):
                self.postings.setdefault(key, {}).setdefault(value, set()).add(rid)
            else:
                self.numeric[key] = self.numeric.get(key, 0) + 1

    def _unindex(self, rid: str, meta: Mapping[str, MetaValue]) -> None:
        for key, value in meta.items():
            if isinstance(value, str | bool):
                by_value = self.postings[key]
                ids = by_value[value]
                ids.discard(rid)
                if not ids:
                    del by_value[value]
                if not by_value:
                    del self.postings[key]
            else:
                self.numeric[key] -= 1
                if not self.numeric[key]:
                    del self.numeric[key]

    # reads

    def select(self, where: Filter | None) -> list[str]:
        """Ids of the records matching ``where`` (in no particular order)."""
        if where is None:
            return list(self.entries)
        plan = self._plan(where)
        if plan is None:
            return [rid for rid, e in self.entries.items() if matches(where, e.meta)]
        ids, exact = plan
        if exact:
            return list(ids)
        return [rid for rid in ids if matches(where, self.entries[rid].meta)]

    def _plan(self, flt: Filter) -> _Plan | None:
        """Candidates from the posting index, or None when the index cannot help."""
        if isinstance(flt, Eq):
            found = self._lookup(flt.key, flt.value)
            return None if found is None else (found, True)
        if isinstance(flt, In):
            return self._plan_any([self._lookup(flt.key, v) for v in flt.values])
        if isinstance(flt, And):
            return self._plan_and(flt.clauses)
        if isinstance(flt, Or):
            plans = [self._plan(c) for c in flt.clauses]
            if any(p is None for p in plans):
                return None
            return set().union(*(p[0] for p in plans if p)), all(p[1] for p in plans if p)
        return None  # Range and Not: scan with `matches`

    def _plan_any(self, found: list[set[str] | None]) -> _Plan | None:
        if any(f is None for f in found):
            return None
        return set().union(*(f for f in found if f is not None)), True

    def _plan_and(self, clauses: Iterable[Filter]) -> _Plan | None:
        clauses = tuple(clauses)
        plans = [p for p in (self._plan(c) for c in clauses) if p is not None]
        if not plans:
            return None
        plans.sort(key=lambda p: len(p[0]))
        ids = plans[0][0].intersection(*(p[0] for p in plans[1:]))
        return ids, len(plans) == len(clauses) and all(p[1] for p in plans)

    def _lookup(self, key: str, value: object) -> set[str] | None:
        """Ids whose ``meta[key] == value``, exactly, or None if the index cannot tell.

        Only string and boolean values are indexed. A string equals only strings, so a
        string lookup is always exact. A number or boolean may also equal an unindexed
        int/float (``True == 1 == 1.0``), so it is exact only while no record has a
        numeric value under ``key``. Dict lookup uses ``==``/``hash`` like ``matches``.
        """
        if not isinstance(value, _SCALARS):
            return None
        if not isinstance(value, str) and self.numeric.get(key, 0):
            return None
        return self.postings.get(key, {}).get(value, set())

    def record(self, rid: str, with_vector: bool) -> Record:
        entry = self.entries[rid]
        vec = self.matrix[entry.row].copy() if with_vector and self.dim else None
        return Record(rid, vec, entry.doc, dict(entry.meta))

    def ordered(self, ids: Iterable[str]) -> list[str]:
        """``ids`` in insertion order."""
        return sorted(ids, key=lambda rid: self.entries[rid].seq)

    def top_k(self, query: Vector, k: int, ids: list[str] | None) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, score)`` among ``ids`` (all if None), best first."""
        if ids is None or len(ids) == len(self.row_ids):  # the filter kept every row
            names = self.row_ids
            scores = self.matrix[: len(names)] @ query
        else:
            names = ids
            rows = np.fromiter((self.entries[r].row for r in ids), np.intp, count=len(ids))
            scores = self.matrix[rows] @ query
        if k < len(names):
            part = np.argpartition(-scores, k - 1)[:k]
            keep = np.nonzero(scores >= scores[part].min())[0]  # include boundary ties
        else:
            keep = np.arange(len(names))
        best = sorted((-float(scores[i]), names[i]) for i in keep)[:k]
        return [(rid, -neg) for neg, rid in best]

    # persistence

    def to_json(self) -> dict[str, Any]:
        ids = list(self.entries)
        rows = [self.entries[rid].row for rid in ids]
        return {
            "dim": self.dim,
            "ids": ids,
            "docs": [self.entries[rid].doc for rid in ids],
            "metas": [self.entries[rid].meta for rid in ids],
            "vectors": _encode_vector(self.matrix[rows]) if self.dim else "",
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Collection:
        col = cls(int(data["dim"]))
        ids, docs, metas = data["ids"], data["docs"], data["metas"]
        if not len(ids) == len(docs) == len(metas):
            raise ValueError("ids, docs and metas differ in length")
        mat = _decode_matrix(data["vectors"], len(ids), col.dim) if col.dim else None
        for i, (rid, doc, meta) in enumerate(zip(ids, docs, metas, strict=True)):
            if not isinstance(rid, str) or not isinstance(doc, str) or rid in col.entries:
                raise ValueError(f"bad or duplicate record {rid!r}")
            validate_metadata(meta)
            col.put(rid, None if mat is None else mat[i], doc, _plain_metadata(meta))
        return col


# --- prepared (validated) writes ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Put:
    collection: str
    rows: tuple[tuple[str, Vector | None, str, dict[str, MetaValue]], ...]

    def to_json(self) -> dict[str, Any]:
        rows = [
            [rid, None if v is None else _encode_vector(v), doc, meta]
            for rid, v, doc, meta in self.rows
        ]
        return {"u": self.collection, "r": rows}


@dataclass(frozen=True, slots=True)
class _Del:
    collection: str
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"d": self.collection, "i": list(self.ids)}


_Op = _Put | _Del


# --- the directory: lock, journal, snapshot ----------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Disk:
    """The on-disk side of a persistent backend (see the module docstring)."""

    def __init__(self, path: Path, fsync: bool) -> None:
        self.path = path
        self.fsync = fsync
        self.gen = 0
        self.journal_fd = -1
        self.broken = False  # a compaction failed after replacing the snapshot
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.lock_fd = self._lock(path)
        try:
            (path / _SNAPSHOT_TMP).unlink(missing_ok=True)  # from a crashed compaction
        except OSError:
            self.close()
            raise

    @staticmethod
    def _lock(path: Path) -> int:
        fd = os.open(path / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConflictError(
                f"another process (or another open backend) holds the store at {path}; "
                "close it first, or open a different directory"
            ) from None
        except OSError:
            os.close(fd)
            raise
        return fd

    def load(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The snapshot (or None) and the journal entries to replay after it."""
        snapshot = self._read_snapshot()
        self.gen = int(snapshot["gen"]) if snapshot else 0
        entries, valid_len = self._read_journal()
        self.journal_fd = os.open(
            self.path / _JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        os.ftruncate(self.journal_fd, valid_len)  # drop a torn last line, if any
        if entries and entries[0].get("t") != "h":
            raise CorruptStoreError(f"{self.path / _JOURNAL} does not start with a header")
        header_gen = int(entries[0].get("gen", -1)) if entries else -1
        if header_gen > self.gen:
            raise CorruptStoreError(
                f"{self.path / _JOURNAL} is newer than {_SNAPSHOT} (was the snapshot removed?)"
            )
        if header_gen < self.gen:  # empty, or already folded into the snapshot
            self.reset_journal()
            return snapshot, []
        return snapshot, entries[1:]

    def _read_snapshot(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.path / _SNAPSHOT).read_bytes())
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise CorruptStoreError(f"{self.path / _SNAPSHOT} is not valid JSON") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise CorruptStoreError(f"{self.path / _SNAPSHOT} is not a mars-memory snapshot")
        if data.get("version") != _VERSION:
            raise CorruptStoreError(
                f"{self.path / _SNAPSHOT} has version {data.get('version')!r}; "
                f"this mars-memory reads version {_VERSION}"
            )
        return data

    def _read_journal(self) -> tuple[list[dict[str, Any]], int]:
        """Valid entries and the byte length they span; a torn last line is left out."""
        try:
            data = (self.path / _JOURNAL).read_bytes()
        except FileNotFoundError:
            return [], 0
        *lines, _tail = data.split(b"\n")  # a non-empty tail is a torn, unterminated write
        entries: list[dict[str, Any]] = []
        offset = 0
        for number, line in enumerate(lines, start=1):
            entry = _decode_line(line)
            if entry is None:
                if number == len(lines) and not _tail:
                    break  # garbled last line: a torn write
                raise CorruptStoreError(
                    f"{self.path / _JOURNAL} line {number} is corrupt and is not the last "
                    "line, so it is not a torn write; restore the directory from a backup"
                )
            entries.append(entry)
            offset += len(line) + 1
        return entries, offset

    def append(self, entry: Mapping[str, Any]) -> None:
        """Append one entry with a single write; on failure the journal is unchanged."""
        if self.broken:
            raise OSError("an earlier compaction failed half-way; close and reopen the store")
        self._write_line(entry)

    def _write_line(self, entry: Mapping[str, Any]) -> None:
        line = _encode_line(entry)
        size = os.fstat(self.journal_fd).st_size
        try:
            written = os.write(self.journal_fd, line)
            if written != len(line):
                raise OSError(f"short write to the journal ({written} of {len(line)} bytes)")
            if self.fsync:
                os.fsync(self.journal_fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.journal_fd, size)
            raise

    def reset_journal(self) -> None:
        """Empty the journal and start it with the current generation's header."""
        os.ftruncate(self.journal_fd, 0)
        self._write_line({"t": "h", "gen": self.gen})
        if not self.fsync:
            os.fsync(self.journal_fd)

    def write_snapshot(self, collections: Mapping[str, Any]) -> None:
        """Atomically replace the snapshot, then truncate the journal."""
        doc = {"format": _FORMAT, "version": _VERSION, "gen": self.gen + 1}
        doc["collections"] = collections
        data = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
        tmp = self.path / _SNAPSHOT_TMP
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path / _SNAPSHOT)
        finally:
            tmp.unlink(missing_ok=True)
        # The new snapshot is authoritative now: the old journal (older gen) will be
        # ignored on open, so no entry may be appended to it any more.
        self.gen += 1
        self.broken = True
        _fsync_dir(self.path)
        self.reset_journal()
        self.broken = False

    def close(self) -> None:
        if self.journal_fd >= 0:
            os.close(self.journal_fd)
            self.journal_fd = -1
        if self.lock_fd >= 0:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            os.close(self.lock_fd)
            self.lock_fd = -1


# --- the backend ---------------------------------------------------------------------------


_guarded = guarded


@contextlib.contextmanager
def _disk_errors(action: str) -> Iterator[None]:
    """Wrap ``OSError`` as :class:`MarsBackendError` with what was being done."""
    try:
        yield
    except OSError as exc:
        raise MarsBackendError(f"could not {action}: {exc}") from exc


class InMemoryBackend(BackendBase):
    """A numpy vector backend, in memory or persisted to a directory (journal + snapshot).

    Args:
        path: directory to persist to (created if missing); ``None`` keeps everything in
            memory only. The directory is locked while the backend is open.
        fsync: ``fsync`` the journal after every write (durable across power loss, not
            just process crashes; slower).
        compact_every: write a snapshot and truncate the journal after this many journal
            entries.

    Raises:
        ConflictError: another process or backend instance has ``path`` open.
        CorruptStoreError: the files in ``path`` are damaged beyond a torn last write.

    Examples:
        >>> import tempfile
        >>> import numpy as np
        >>> from mars_core.backends.base import Record
        >>> d = tempfile.mkdtemp()
        >>> with InMemoryBackend(d) as b:
        ...     b.ensure_collection("notes", 2)
        ...     b.upsert("notes", [Record("n1", np.array([3.0, 4.0]), "hello", {"n": 1})])
        >>> with InMemoryBackend(d) as b:
        ...     [(r.id, r.document, r.vector.tolist()) for r in b.get("notes", with_vectors=True)]
        [('n1', 'hello', [0.6000000238418579, 0.800000011920929])]
    """

    name: str = "inmemory"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        fsync: bool = False,
        compact_every: int = 10_000,
    ) -> None:
        if isinstance(compact_every, bool) or not isinstance(compact_every, int):
            raise ValidationError("compact_every must be a positive int")
        if compact_every < 1:
            raise ValidationError("compact_every must be a positive int")
        self._lock = threading.RLock()
        self._closed = False
        self._collections: dict[str, _Collection] = {}
        self._compact_every = compact_every
        self._pending = 0
        self._disk: _Disk | None = None
        if path is not None:
            with _disk_errors(f"open the store at {path}"):
                self._disk = _Disk(Path(path), fsync)
            try:
                self._load(self._disk)
            except BaseException:
                self._disk.close()
                raise

    @property
    def location(self) -> str:
        """The directory of the journal, or ``"memory"``."""
        return str(self._disk.path) if self._disk else "memory"

    def __repr__(self) -> str:
        where = self.location
        state = "closed" if self._closed else f"{len(self._collections)} collections"
        return f"InMemoryBackend({str(where)!r}, {state})"


    # --- protocol ---------------------------------------------------------------------

    # ensure_collection, upsert, delete and apply: BackendBase (they call _ensure, _write)

    @_guarded
    def query(
        self,
        collection: str,
        vector: Vector | Sequence[float],
        k: int,
        where: Filter | None = None,
    ) -> list[ScoredRecord]:
        """The ``k`` records most similar (cosine) to ``vector`` that match ``where``.

        Sorted by score descending, then id ascending. Records carry no vector.

        Raises:
            NotFoundError: unknown collection.
            EmbeddingMismatchError: ``vector`` has the wrong dimension.
            ValidationError: bad ``k``, non-finite vector, bad filter, or a collection
                without vectors (use ``get``).
        """
        col = self._collection(collection)
        if col.dim == 0:
            raise ValidationError(
                f"collection {collection!r} has no vectors; use get(where=...) instead"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be an int >= 0, got {k!r}")
        q = _normalised(self._vector(col, collection, vector))
        if where is not None:
            _check_filter(where)
        if k == 0:
            return []
        ids = None if where is None else col.select(where)
        return [ScoredRecord(col.record(rid, False), score) for rid, score in col.top_k(q, k, ids)]

    @_guarded
    def get(
        self,
        collection: str,
        ids: Sequence[str] | None = None,
        where: Filter | None = None,
        *,
        with_vectors: bool = False,
    ) -> list[Record]:
        """Records by id (in the order given, missing and repeated ids skipped) and/or filter.

        Without ``ids`` the matching records come in insertion order. Returned records
        hold copies: changing their metadata or vector does not change the store.

        Raises:
            NotFoundError: unknown collection.
            ValidationError: bad ids or filter.
        """
        col = self._collection(collection)
        if where is not None:
            _check_filter(where)
        if ids is None:
            found = col.ordered(col.select(where))
        else:
            wanted = dict.fromkeys(self._check_ids(ids))
            found = [
                rid
                for rid in wanted
                if rid in col.entries and matches(where, col.entries[rid].meta)
            ]
        return [col.record(rid, with_vectors) for rid in found]

    def close(self) -> None:
        """Release the directory lock and files; idempotent. Later calls raise."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._disk is not None:
                self._disk.close()

    @_guarded
    def compact(self) -> None:
        """Write a snapshot and truncate the journal (no-op without ``path``).

        Afterwards no file in the directory holds deleted records any more.
        """
        if self._disk is None:
            return
        with _disk_errors(f"compact the store at {self._disk.path}"):
            self._disk.write_snapshot({n: c.to_json() for n, c in self._collections.items()})
        self._pending = 0

    # --- internals ----------------------------------------------------------------------

    def _collection(self, collection: str) -> _Collection:
        col = self._collections.get(collection)
        if col is None:
            raise NotFoundError(
                f"collection {collection!r} does not exist; call ensure_collection() first"
            )
        return col

    def _ensure(self, collection: str, dim: int) -> None:
        existing = self._collections.get(collection)
        if existing is not None:
            if existing.dim != dim:
                raise EmbeddingMismatchError(
                    f"collection {collection!r} has dimension {existing.dim}, not {dim}; "
                    "use the embedder the store was built with, or re-embed into a new store"
                )
            return
        self._journal({"t": "c", "n": collection, "d": dim})
        self._collections[collection] = _Collection(dim)
        self._maybe_compact()

    @staticmethod
    def _vector(col: _Collection, collection: str, values: object) -> Vector:
        try:
            arr = as_vector(values)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError(f"not a vector: {exc}") from exc
        if arr.shape[0] != col.dim:
            raise EmbeddingMismatchError(
                f"collection {collection!r} holds {col.dim}-dimensional vectors, got "
                f"{arr.shape[0]}; embed with the model the store was built with "
                "(or open a new store for the new model)"
            )
        return arr

    def _write(self, ops: Sequence[UpsertOp | DeleteOp]) -> None:
        """Validate ``ops`` whole, journal them as one entry, apply them."""
        prepared = self._prepare(ops)
        if not prepared:
            return
        self._journal({"t": "b", "ops": [op.to_json() for op in prepared]})
        self._apply(prepared)
        self._maybe_compact()

    def _prepare(self, ops: Sequence[UpsertOp | DeleteOp]) -> list[_Op]:
        """Validate and normalise; ``alive`` tracks ids created/deleted earlier in ``ops``."""
        alive: dict[tuple[str, str], bool] = {}
        out: list[_Op] = []
        for op in ops:
            col = self._collection(op.collection)
            if isinstance(op, UpsertOp):
                rows = tuple(self._prepare_record(col, op.collection, r, alive) for r in op.records)
                if rows:
                    out.append(_Put(op.collection, rows))
            elif isinstance(op, DeleteOp):
                ids = self._check_ids(op.ids)
                present = tuple(i for i in ids if alive.get((op.collection, i), i in col.entries))
                alive.update(((op.collection, i), False) for i in ids)
                if present:
                    out.append(_Del(op.collection, present))
            else:
                raise ValidationError(f"unknown batch operation {op!r}")
        return out

    def _prepare_record(
        self, col: _Collection, collection: str, rec: Record, alive: dict[tuple[str, str], bool]
    ) -> tuple[str, Vector | None, str, dict[str, MetaValue]]:
        if not isinstance(rec, Record):
            raise ValidationError(f"expected a Record, got {type(rec).__name__}")
        if not isinstance(rec.id, str) or not rec.id:
            raise ValidationError(f"record id {rec.id!r} must be a non-empty string")
        if not isinstance(rec.document, str):
            raise ValidationError(f"record {rec.id!r}: document must be a string")
        if not isinstance(rec.metadata, Mapping):
            raise ValidationError(f"record {rec.id!r}: metadata must be a mapping")
        validate_metadata(rec.metadata)
        exists = alive.get((collection, rec.id), rec.id in col.entries)
        alive[(collection, rec.id)] = True
        vec: Vector | None = None
        if rec.vector is not None:
            vec = _normalised(self._vector(col, collection, rec.vector))
        elif col.dim and not exists:
            raise ValidationError(
                f"record {rec.id!r} is new in collection {collection!r} and has no vector; "
                f"pass its {col.dim}-dimensional embedding"
            )
        return rec.id, (vec if col.dim else None), rec.document, _plain_metadata(rec.metadata)

    def _apply(self, ops: Iterable[_Op]) -> None:
        for op in ops:
            col = self._collections[op.collection]
            if isinstance(op, _Put):
                for rid, vec, doc, meta in op.rows:
                    col.put(rid, vec, doc, meta)
            else:
                for rid in op.ids:
                    col.remove(rid)

    def _journal(self, entry: Mapping[str, Any]) -> None:
        """Persist one entry; called before the in-memory change it describes."""
        if self._disk is None:
            return
        with _disk_errors(f"write the journal in {self._disk.path}"):
            self._disk.append(entry)
        self._pending += 1

    def _maybe_compact(self) -> None:
        if self._disk is None or self._pending < self._compact_every:
            return
        try:
            self.compact()
        except MarsBackendError as exc:
            raise MarsBackendError(
                f"the write was applied and journalled, but the automatic compaction "
                f"after it failed: {exc}"
            ) from exc

    # --- loading ------------------------------------------------------------------------

    def _load(self, disk: _Disk) -> None:
        with _disk_errors(f"read the store at {disk.path}"):
            snapshot, entries = disk.load()
        try:
            if snapshot is not None:
                for name, data in dict(snapshot["collections"]).items():
                    self._collections[str(name)] = _Collection.from_json(data)
            for entry in entries:
                self._replay(entry)
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise CorruptStoreError(
                f"the store at {disk.path} holds data this version cannot read: {exc!r}"
            ) from exc
        self._pending = len(entries)

    def _replay(self, entry: Mapping[str, Any]) -> None:
        kind = entry["t"]
        if kind == "c":
            dim = int(entry["d"])
            if self._collections.setdefault(entry["n"], _Collection(dim)).dim != dim:
                raise ValueError(f"collection {entry['n']!r} re-created with dimension {dim}")
        elif kind == "b":
            self._apply([self._decode_op(op) for op in entry["ops"]])
        else:
            raise ValueError(f"unexpected journal entry type {kind!r}")

    def _decode_op(self, op: Mapping[str, Any]) -> _Op:
        if "d" in op:
            if op["d"] not in self._collections:
                raise KeyError(op["d"])
            return _Del(op["d"], tuple(str(i) for i in op["i"]))
        dim = self._collections[op["u"]].dim
        rows = []
        for rid, vec, doc, meta in op["r"]:
            validate_metadata(meta)
            v = None if vec is None or not dim else _decode_matrix(vec, 1, dim)[0]
            rows.append((str(rid), v, str(doc), _plain_metadata(meta)))
        return _Put(op["u"], tuple(rows))
