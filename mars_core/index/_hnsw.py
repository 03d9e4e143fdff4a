"""Check an embedded Chroma's HNSW files before Chroma loads them.

Chroma loads a collection's HNSW segment (``<dir>/<segment-uuid>/``: ``header.bin``,
``data_level0.bin``, ``length.bin``, ``link_lists.bin``, ``index_metadata.pickle``) with
hnswlib, which trusts the bytes: a neighbour id past the end of the graph, flipped on
disk, makes the first query read out of bounds and kill the process (SIGSEGV: nothing to
catch). So :class:`~mars_core.index.chroma.ChromaIndex` checks a segment the first time a
process uses its collection, and rebuilds the collection from the record store when the
check fails (the index is derived):

* **Checksums.** A close records each segment's files — sizes, modification times and a
  CRC-32 each (:func:`record_sums`, ``mars-sums.json``). When the directory was closed
  that way and nothing has opened it since (the ``mars-closed`` mark of
  :mod:`mars_core.index._scrub`), a segment must match them exactly: any byte changed
  since is found, a flipped vector bit included.
* **Structure.** After a crash (no mark) the files may have changed since the last
  close, so they are checked for what makes hnswlib read out of bounds: the header's
  layout and bounds, every file's size, every stored link count within its level's
  maximum and every neighbour id below the element count, on every level. A flipped
  byte that leaves all of these in range cannot crash a query; at worst a neighbour is
  wrong, and the store rescores every candidate from the exact vectors it keeps.

``header.bin`` (little-endian, 100 bytes): ``int32`` version, ``uint64`` offsetLevel0,
max_elements, cur_element_count, size_data_per_element, label_offset, offsetData,
``int32`` maxlevel, enterpoint_node, ``uint64`` maxM, maxM0, M, ``float64`` mult,
``uint64`` ef_construction. A level-0 slot is a link list (``uint16`` count, 2 bytes of
flags, maxM0 ``uint32`` ids), the vector (from offsetData) and the label (at
label_offset); ``link_lists.bin`` holds, per element, the byte count of its upper
levels' lists and the lists, one (``uint16`` count, 2 bytes, maxM ``uint32`` ids) per
level; ``length.bin`` one ``float32`` per slot.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> check_segment(Path(tempfile.mkdtemp()))
    'header.bin is missing or unreadable'
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FILES", "check_segment", "element_count", "record_sums", "recorded_sums",
           "segment_sums"]

_log = logging.getLogger(__name__)
FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin",
         "index_metadata.pickle")
"""The files of a segment the checksums cover (those present)."""
_HEADER = struct.Struct("<iQQQQQQiiQQQdQ")
_SUMS = "mars-sums.json"
_CHUNK = 1 << 18
"""Bytes read at a time by :func:`_crc`."""
_MAX_LEVEL = 64
"""Above any level hnswlib draws (mult 1/ln(M): level 64 has odds far below 1e-30)."""


def element_count(segment: Path) -> int:
    """How many vectors a segment's HNSW graph holds, from its header (0 when the header
    is missing or not of this layout: an estimate, never what fails a call).

    Examples:
        >>> import tempfile
        >>> element_count(Path(tempfile.mkdtemp()))
        0
    """
    try:
        raw = (segment / "header.bin").read_bytes()
    except OSError:
        return 0
    return int(_HEADER.unpack(raw)[3]) if len(raw) == _HEADER.size else 0


def segment_sums(segment: Path) -> dict[str, list[int]] | None:
    """Each file of a segment: ``[size, modification time (ns), CRC-32]``; ``None`` when
    one cannot be read."""
    out: dict[str, list[int]] = {}
    try:
        for name in FILES:
            path = segment / name
            if path.is_file():
                info = path.stat()
                out[name] = [info.st_size, info.st_mtime_ns, _crc(path)]
    except OSError:
        return None
    return out


def _crc(path: Path) -> int:
    """A file's CRC-32, read into one reused buffer (no new chunk object a read: at
    20,000 turns a namespace's segments are ~55 MB, 49 ms of CPU read in fresh 1 MiB
    chunks, ~39 ms this way). Not mapped: a disk error in a mapped file is a SIGBUS,
    where a read raises ``OSError``."""
    crc, buffer = 0, bytearray(_CHUNK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as fh:
        while n := fh.readinto(buffer):
            crc = zlib.crc32(view[:n], crc)
    return crc


def recorded_sums(directory: Path) -> dict[str, dict[str, list[int]]]:
    """What the last :func:`record_sums` wrote (empty when nothing, or unreadable)."""
    try:
        found = json.loads((directory / _SUMS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def record_sums(directory: Path) -> None:
    """Record the checksums of every segment under ``directory`` (at close, once no
    client has it open): a segment whose files kept their sizes and modification times
    since the last record keeps its sums without being read again."""
    before = recorded_sums(directory)
    sums: dict[str, dict[str, list[int]]] = {}
    for header in sorted(directory.glob("*/header.bin")):
        segment = header.parent
        kept = before.get(segment.name)
        if isinstance(kept, dict) and _unchanged(segment, kept):
            sums[segment.name] = kept
            continue
        found = segment_sums(segment)
        if found is not None:
            sums[segment.name] = found
    tmp = directory / (_SUMS + ".tmp")
    try:
        tmp.write_text(json.dumps(sums, sort_keys=True), encoding="utf-8")
        os.replace(tmp, directory / _SUMS)
    except OSError:  # the next open checks the structure instead
        _log.warning("could not record the checksums of the index files in %s", directory)


def _unchanged(segment: Path, kept: dict[str, Any]) -> bool:
    try:
        for name in FILES:
            path = segment / name
            if not path.is_file():
                if name in kept:
                    return False
                continue
            info = path.stat()
            entry = kept.get(name)
            if not isinstance(entry, list) or entry[:2] != [info.st_size, info.st_mtime_ns]:
                return False
    except OSError:
        return False
    return True


def check_segment(segment: Path, recorded: dict[str, Any] | None = None) -> str | None:
    """What is wrong with a segment's files, or ``None``.

    Args:
        segment: the segment's directory.
        recorded: its checksums as the last close recorded them, when nothing may have
            written it since (the directory was closed, and not opened since): they must
            match exactly. Otherwise its structure is checked (see the module).
    """
    if recorded is not None:
        found = segment_sums(segment)
        if found is None:
            return "a file is unreadable"
        for name in sorted(set(found) | set(recorded)):
            if found.get(name) is None or recorded.get(name) is None or \
                    list(recorded[name])[0::2] != found[name][0::2]:
                return f"{name} differs from the checksum recorded when it was closed"
        return None
    try:
        return _structure(segment)
    except (OSError, ValueError, struct.error) as exc:
        return f"unreadable ({exc})"


def _structure(segment: Path) -> str | None:
    header = segment / "header.bin"
    raw = header.read_bytes() if header.is_file() else b""
    if len(raw) != _HEADER.size:
        return "header.bin is missing or unreadable"
    (version, offset0, capacity, count, size, label_at, data_at, max_level, entry,
     max_m, max_m0, _m, _mult, _ef) = _HEADER.unpack(raw)
    links0 = 4 + 4 * max_m0
    if version != 1 or offset0 != 0 or count > capacity or not 0 < max_m <= max_m0 <= 4096 \
            or data_at != links0 or not data_at < label_at == size - 8 or \
            (label_at - data_at) % 4 or not -1 <= max_level <= _MAX_LEVEL or \
            not (-1 if count == 0 else 0) <= entry < max(count, 1):
        return "header.bin holds an impossible layout"
    data = np.fromfile(segment / "data_level0.bin", dtype=np.uint8)
    if data.size < count * size or data.size % size:
        return "data_level0.bin is shorter than the header says"
    slots = data[:count * size].reshape(count, size)
    bad = _bad_lists(slots[:, :links0], max_m0, count)
    if bad:
        return f"data_level0.bin: {bad}"
    return _upper_levels(segment, count, max_m, max_level)


def _bad_lists(lists: np.ndarray[Any, Any], most: int, count: int) -> str | None:
    """What is wrong with rows of link lists (``uint16`` count, 2 bytes, ``uint32`` ids)."""
    if not len(lists):
        return None
    counts = np.ascontiguousarray(lists[:, :2]).view("<u2").ravel()
    if int(counts.max()) > most:
        return "a link count above its maximum"
    ids = np.ascontiguousarray(lists[:, 4:4 + 4 * most]).view("<u4").reshape(len(lists), most)
    used = np.arange(most) < counts[:, None]
    if bool(np.any(ids[used] >= count)):
        return "a neighbour id past the last element"
    return None


def _upper_levels(segment: Path, count: int, max_m: int, max_level: int) -> str | None:
    """``link_lists.bin``: per element, a ``uint32`` byte count, then that many bytes of
    upper-level lists (``uint32`` count, maxM ids each); ``length.bin``, one ``float32``
    per slot (Chroma's fork keeps each vector's norm there), cannot mislead a read."""
    norms = segment / "length.bin"
    if norms.is_file() and norms.stat().st_size < 4 * count:
        return "length.bin is shorter than the element count"
    path = segment / "link_lists.bin"
    blob = path.read_bytes() if path.is_file() else b""
    block = 4 + 4 * max_m
    at, blocks = 0, []
    for _ in range(count):
        if at + 4 > len(blob):
            return "link_lists.bin ends before its last element"
        (size,) = struct.unpack_from("<I", blob, at)
        if size % block or size // block > max(max_level, 0) or at + 4 + size > len(blob):
            return "link_lists.bin holds an impossible level"
        if size:
            blocks.append(blob[at + 4:at + 4 + size])
        at += 4 + size
    if at != len(blob):
        return "link_lists.bin holds more than its elements' lists"
    if not blocks:
        return None
    lists = np.frombuffer(b"".join(blocks), dtype=np.uint8).reshape(-1, block)
    bad = _bad_lists(lists, max_m, count)
    return f"link_lists.bin: {bad}" if bad else None
