"""Zero the unused capacity of an embedded Chroma's HNSW index files.

Chroma's local HNSW segment (``<dir>/<segment-uuid>/``) saves its whole allocated capacity:
``data_level0.bin`` holds ``max_elements`` slots of ``size_data_per_element`` bytes and
``length.bin`` one ``uint32`` per slot, however few elements are in use (a fresh index is
saved at its initial capacity of 100; a grown one at least up to its count). The slots past
``cur_element_count`` were never written: they hold whatever the process's allocator handed
out, i.e. fragments of freed memory. In an embedded index that memory is our own process's,
so it can hold the text of a memory the index never received (seen in CI: a fragment of
a record's metadata in an index file of a freshly created store) — text that an erasure
must be able to remove from disk.

:func:`scrub_index_files` overwrites exactly those never-used bytes with zeros. hnswlib never
reads them (a slot is read only below ``cur_element_count``), so the index is unchanged. It is
run while the index holds its directory's lock and no Chroma client is open on it: when
the index closes, and before it opens a directory that was not closed that way (a crash
skips the close). Files whose header does not match the layout below are left alone and
reported, so a future Chroma that changes the format costs the scrub, never the index. A
segment whose files have not changed (size and modification time) since its last scrub is
skipped (``mars-scrubbed.json``). A close that scrubbed leaves ``mars-closed`` beside the
segments, which the next open takes away (:func:`take_closed`): it then has nothing to
scrub and does not look (looking costs a directory listing and two ``stat`` calls per
segment: ~0.08 s at 1,000 namespaces, ~0.8 s at 10,000).

Chroma 1.5 leaves a dropped collection's segment directory on disk (chroma-core/chroma
#5520): its HNSW files, with every vector it held, stay beside the live ones for good.
:func:`remove_orphans` deletes the segment directories that Chroma's catalogue no longer
names — after a rebuild, at close, and before a client opens a directory a crash left —
so a rebuilt collection (an erasure's compaction, the active partition's, see
:class:`~mars_core.index.chroma.ChromaIndex`) leaves no copy of what it dropped.

``header.bin`` (little-endian, 100 bytes): ``int32`` persist version, then ``uint64``
``offsetLevel0``, ``max_elements``, ``cur_element_count``, ``size_data_per_element``, ...
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ScrubReport", "mark_closed", "read_catalogue", "remove_orphans",
           "scrub_index_files", "take_closed"]

_log = logging.getLogger(__name__)
_HEADER = struct.Struct("<iQQQQ")  # version, offsetLevel0, max, count, size per element
_HEADER_SIZE = 100
_LENGTH_ENTRY = 4


@dataclass(frozen=True)
class ScrubReport:
    """What one :func:`scrub_index_files` call did.

    Attributes:
        segments: index directories whose unused capacity was zeroed.
        bytes_zeroed: bytes overwritten (already-zero bytes are counted too).
        skipped: index directories left alone: unreadable, or a layout not recognised.
    """

    segments: int = 0
    bytes_zeroed: int = 0
    skipped: tuple[str, ...] = ()


def scrub_index_files(directory: Path) -> ScrubReport:
    """Zero the never-used slots of every HNSW index under ``directory``.

    Args:
        directory: an embedded Chroma directory (the one given to ``PersistentClient``);
            no Chroma client may have it open.

    Returns:
        A :class:`ScrubReport`; a directory without index files gives an empty one.

    Examples:
        >>> import tempfile
        >>> scrub_index_files(Path(tempfile.mkdtemp()))
        ScrubReport(segments=0, bytes_zeroed=0, skipped=())
    """
    segments = zeroed = 0
    skipped: list[str] = []
    seen, clean = _scrubbed(directory), {}
    for header in sorted(directory.glob("*/header.bin")):
        name, stamp = header.parent.name, _stamp(header.parent)
        if stamp is not None and seen.get(name) == stamp:
            clean[name] = stamp  # untouched since it was scrubbed: nothing new in its tail
            continue
        try:
            done = _scrub_segment(header.parent)
        except OSError:
            done = None
        if done is None:
            skipped.append(name)
            _log.warning("left the index files in %s alone: unreadable or layout not recognised",
                         name)
            continue
        segments, zeroed = segments + 1, zeroed + done
        after = _stamp(header.parent)
        if after is not None:
            clean[name] = after
    if clean != seen:
        _record_scrubbed(directory, clean)
    return ScrubReport(segments, zeroed, tuple(skipped))


_CLOSED = "mars-closed"
"""Left by a close that scrubbed every segment; taken away by the next open."""


def remove_orphans(directory: Path) -> list[str]:
    """Delete the segment directories under ``directory`` that Chroma's catalogue
    (``chroma.sqlite3``) does not name: those of dropped collections.

    Run under the directory's lock with no client open on it. Only directories named by a
    UUID are candidates, and nothing is removed when the catalogue cannot be read (another
    Chroma version's layout): the orphans then stay, as Chroma leaves them.

    Returns:
        The names of the directories removed.

    Examples:
        >>> import tempfile
        >>> remove_orphans(Path(tempfile.mkdtemp()))
        []
    """
    known = _catalogued(directory)
    if known is None:
        return []
    removed = []
    for entry in sorted(directory.iterdir()):
        if entry.is_dir() and _is_uuid(entry.name) and entry.name not in known:
            try:
                shutil.rmtree(entry)
            except OSError:
                _log.warning("could not remove the dropped index files in %s", entry)
                continue
            removed.append(entry.name)
    return removed


def read_catalogue(directory: Path, sql: str, args: Sequence[Any] = ()
                   ) -> list[tuple[Any, ...]] | None:
    """The rows of a query on Chroma's catalogue (``chroma.sqlite3``), read as a file:
    no client, no collection loaded; ``None`` when there is no catalogue or the query
    fails on it (another Chroma version's layout).

    Examples:
        >>> import tempfile
        >>> read_catalogue(Path(tempfile.mkdtemp()), "SELECT id FROM segments") is None
        True
    """
    catalogue = directory / "chroma.sqlite3"
    if not catalogue.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{catalogue}?mode=ro", uri=True)
        try:
            return [tuple(r) for r in conn.execute(sql, tuple(args))]
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _catalogued(directory: Path) -> set[str] | None:
    """The segment ids Chroma's catalogue names (``None``: no catalogue, or unreadable)."""
    rows = read_catalogue(directory, "SELECT id FROM segments")
    return None if rows is None else {str(r[0]) for r in rows}


def _is_uuid(name: str) -> bool:
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


def mark_closed(directory: Path) -> None:
    """Say that every segment under ``directory`` was scrubbed and no client has it open
    (after :func:`scrub_index_files`, at close)."""
    try:
        (directory / _CLOSED).touch()
    except OSError:  # only an optimisation: the next open scrubs
        _log.warning("could not mark %s as closed", directory)


def take_closed(directory: Path) -> bool:
    """Whether the last user of ``directory`` closed it after scrubbing (so there is
    nothing to scrub now); the mark is removed, durably, before a client opens the
    directory, so a crash from here on leaves none and the next open scrubs.

    Examples:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); mark_closed(d)
        >>> take_closed(d), take_closed(d)
        (True, False)
    """
    try:
        (directory / _CLOSED).unlink()
    except FileNotFoundError:
        return False
    except OSError:
        return False
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)  # the removal reaches the disk before any write of this session
        finally:
            os.close(fd)
    except OSError:  # not durable: scrub as if there were no mark
        return False
    return True


_SCRUBBED = "mars-scrubbed.json"
"""Beside the segments: each scrubbed segment's file sizes and modification times, so an
open skips the segments no one wrote since (scrubbing every segment of a store with many
namespaces at every open cost ~0.35 ms a segment, 9 s at 20,000)."""


def _stamp(segment: Path) -> list[int] | None:
    """Sizes and modification times (ns) of a segment's data and length files."""
    try:
        data, lengths = (segment / "data_level0.bin").stat(), (segment / "length.bin").stat()
    except OSError:
        return None
    return [data.st_size, data.st_mtime_ns, lengths.st_size, lengths.st_mtime_ns]


def _scrubbed(directory: Path) -> dict[str, list[int]]:
    try:
        found = json.loads((directory / _SCRUBBED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _record_scrubbed(directory: Path, clean: dict[str, list[int]]) -> None:
    tmp = directory / (_SCRUBBED + ".tmp")
    try:
        tmp.write_text(json.dumps(clean, sort_keys=True), encoding="utf-8")
        os.replace(tmp, directory / _SCRUBBED)
    except OSError:  # only an optimisation: the next open scrubs everything again
        _log.warning("could not record the scrubbed segments in %s", directory)


def _scrub_segment(segment: Path) -> int | None:
    """Zero one segment's unused slots; ``None`` if its files do not match the layout."""
    data, lengths = segment / "data_level0.bin", segment / "length.bin"
    raw = (segment / "header.bin").read_bytes()
    if len(raw) != _HEADER_SIZE or not data.is_file():
        return None
    version, offset, capacity, count, size = _HEADER.unpack_from(raw)
    if version != 1 or offset != 0 or not _holds(data, count, capacity, size):
        return None
    done = _zero_tail(data, count * size)
    if lengths.is_file() and _holds(lengths, count, capacity, _LENGTH_ENTRY):
        done += _zero_tail(lengths, count * _LENGTH_ENTRY)
    return done


def _holds(path: Path, count: int, capacity: int, slot: int) -> bool:
    """Whether ``path`` is whole slots: at least ``count`` of them, at most ``capacity``."""
    n = path.stat().st_size
    return slot > 0 and count <= capacity and n % slot == 0 and count <= n // slot <= capacity


def _zero_tail(path: Path, start: int) -> int:
    """Overwrite ``path`` from byte ``start`` to its end with zeros, durably."""
    size = path.stat().st_size
    if start >= size:
        return 0
    with path.open("r+b") as f:
        f.seek(start)
        f.write(bytes(size - start))
        f.flush()
        os.fsync(f.fileno())
    return size - start
