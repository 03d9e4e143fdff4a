"""The embedded Chroma's index files carry no freed process memory once the index closes.

Chroma saves an HNSW segment's whole capacity; slots it never wrote hold whatever the
allocator handed out — in an embedded store, fragments of our own plaintext (CI caught
one). ``scrub_index_files`` zeroes exactly those slots on close and before an open.
"""

from __future__ import annotations

import logging
import os
import struct
import sys
from pathlib import Path

import children
import numpy as np
import pytest

from mars_core.index._scrub import scrub_index_files
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow

pytest.importorskip("chromadb")
from mars_core.index.chroma import ChromaIndex

ROOT = Path(__file__).resolve().parents[1]
_HEAD = struct.Struct("<iQQQQ")
DIM = 8
N = 1_100  # above Chroma's default sync threshold (1,000): the index is saved with elements


def _segments(directory: Path) -> list[tuple[Path, int, int, int]]:
    """(segment, capacity, count, size per element) for each HNSW segment."""
    out = []
    for header in sorted(directory.glob("*/header.bin")):
        _, _, capacity, count, size = _HEAD.unpack_from(header.read_bytes())
        out.append((header.parent, capacity, count, size))
    return out


def _unused_tail(segment: Path, count: int, size: int) -> bytes:
    return (segment / "data_level0.bin").read_bytes()[count * size:]


def _vectors() -> np.ndarray:
    rng = np.random.default_rng(7)
    v = rng.normal(size=(N, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _row(rid: str, namespace: str, vector: np.ndarray) -> IndexRow:
    return IndexRow(rid, namespace, MemoryStatus.ACTIVE, vector, {"type": "episodic"})


def _index(path: Path) -> ChromaIndex:
    index = ChromaIndex(path=path)
    index.bind("scrub-test", DIM, lambda ns: [])
    return index


def _fill(path: Path) -> np.ndarray:
    vectors = _vectors()
    with _index(path) as index:
        for start in range(0, N, 250):
            index.upsert([_row(f"r{i}", "m", vectors[i])
                          for i in range(start, min(N, start + 250))], new=True)
        # saved empty, at its initial capacity, from a well-used heap
        index.upsert([_row("s0", "small", vectors[0])], new=True)
    return vectors


def test_close_zeroes_exactly_the_never_used_slots_and_the_index_still_answers(
        tmp_path: Path) -> None:
    vectors = _fill(tmp_path)
    segments = _segments(tmp_path)
    assert {count > 0 for _, _, count, _ in segments} == {True, False}  # grown and fresh
    for segment, capacity, count, size in segments:
        assert count * size <= (segment / "data_level0.bin").stat().st_size <= capacity * size
        assert not any(_unused_tail(segment, count, size)), segment
        used = (segment / "data_level0.bin").read_bytes()[:count * size]
        assert count == 0 or any(used)  # the used slots were kept
    with _index(tmp_path) as index:
        for i in (0, 17, 999, N - 1):
            assert index.query("m", MemoryStatus.ACTIVE, vectors[i], 1)[0][0] == f"r{i}"


CRASHER = """
import os, sys
import numpy as np
from mars_core.index.chroma import ChromaIndex
from mars_core.model import MemoryStatus
from mars_core.storage.base import IndexRow
index = ChromaIndex(path=sys.argv[1])
index.bind("scrub-test", 8, lambda ns: [])
vector = np.array(list(map(float, sys.argv[2].split(","))), np.float32)
index.upsert([IndexRow("r0", "m", MemoryStatus.ACTIVE, vector, {"type": "episodic"})],
             new=True)
os._exit(9)  # killed: no close, no scrub
"""


def test_opening_scrubs_what_a_crash_left_behind(tmp_path: Path) -> None:
    vector = _vectors()[0]
    done = children.run([sys.executable, "-c", CRASHER, str(tmp_path),
                           ",".join(map(str, vector.tolist()))],
                        capture_output=True, text=True, timeout=300, check=False,
                        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 9, done.stderr
    assert not (tmp_path / "mars-closed").exists()
    # the partition's segment (8-d vectors), not the 1-d one of the index's own state
    segment, _, count, size = max(_segments(tmp_path), key=lambda s: s[3])
    data = segment / "data_level0.bin"
    with data.open("r+b") as f:  # what an unscrubbed save leaves: heap bytes past the count
        f.seek(max(count, 1) * size)
        f.write(b'{"text": "Ines is a nurse"}' * 2)
    assert b"Ines" in data.read_bytes()
    with _index(tmp_path) as index:
        assert b"Ines" not in data.read_bytes()  # before any close
        assert index.open_scrub is not None and index.open_scrub.segments >= 1
        assert [i for i, _ in index.query("m", MemoryStatus.ACTIVE, vector, 5)] == ["r0"]


def test_an_open_after_a_clean_close_has_nothing_to_scrub_and_does_not_look(
        tmp_path: Path) -> None:
    """The close scrubbed and said so; the open takes the mark away before its client
    writes anything, so only a close puts it back."""
    with _index(tmp_path) as index:
        index.upsert([_row("r0", "m", _vectors()[0])], new=True)
        assert index.open_scrub is not None  # a new directory: no close before it
    assert (tmp_path / "mars-closed").exists()
    with _index(tmp_path) as index:
        assert index.open_scrub is None
        assert not (tmp_path / "mars-closed").exists()
        index.upsert([_row("r1", "m", _vectors()[1])], new=True)
    assert (tmp_path / "mars-closed").exists()
    for segment, _, count, size in _segments(tmp_path):
        assert not any(_unused_tail(segment, count, size)), segment


def test_an_unrecognised_layout_is_left_alone_and_reported(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    segment = tmp_path / "seg"
    segment.mkdir()
    header = bytearray(100)
    _HEAD.pack_into(header, 0, 2, 0, 4, 1, 8)  # persist version 2: not ours to touch
    (segment / "header.bin").write_bytes(bytes(header))
    (segment / "data_level0.bin").write_bytes(b"\x01" * 32)
    with caplog.at_level(logging.WARNING):
        report = scrub_index_files(tmp_path)
    assert report.segments == 0 and report.skipped == ("seg",)
    assert (segment / "data_level0.bin").read_bytes() == b"\x01" * 32
    assert "seg" in caplog.text and "\x01" not in caplog.text


def test_a_recognised_segment_is_zeroed_past_its_count_only(tmp_path: Path) -> None:
    segment = tmp_path / "seg"
    segment.mkdir()
    header = bytearray(100)
    _HEAD.pack_into(header, 0, 1, 0, 4, 1, 8)  # capacity 4, one element of 8 bytes
    (segment / "header.bin").write_bytes(bytes(header))
    (segment / "data_level0.bin").write_bytes(b"\x07" * 32)
    (segment / "length.bin").write_bytes(b"\x09" * 16)
    report = scrub_index_files(tmp_path)
    assert report.segments == 1 and report.bytes_zeroed == 24 + 12
    assert (segment / "data_level0.bin").read_bytes() == b"\x07" * 8 + bytes(24)
    assert (segment / "length.bin").read_bytes() == b"\x09" * 4 + bytes(12)


def test_a_segment_untouched_since_its_scrub_is_skipped_and_a_written_one_is_not(
        tmp_path: Path) -> None:
    _fill(tmp_path)  # closed: every segment scrubbed and recorded
    segments = _segments(tmp_path)
    assert scrub_index_files(tmp_path).segments == 0  # nothing written since
    data = segments[0][0] / "data_level0.bin"
    stat = data.stat()  # written since (a save changes the mtime): scrubbed again
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert scrub_index_files(tmp_path).segments == 1
    assert scrub_index_files(tmp_path).segments == 0
    (tmp_path / "mars-scrubbed.json").write_text("not json")  # a damaged record: scrub all
    assert scrub_index_files(tmp_path).segments == len(segments)


def _files_holding(directory: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if p.is_file() and needle in p.read_bytes())


def test_a_rebuilt_namespace_leaves_no_copy_of_the_dropped_vectors_on_disk(
        tmp_path: Path) -> None:
    """Chroma 1.5 keeps a dropped collection's segment directory (chroma-core/chroma
    #5520); the index removes it, so an erasure's compaction leaves no copy behind."""
    vectors = _fill(tmp_path)
    gone = vectors[5].astype(np.float32).tobytes()
    assert any(name.endswith("data_level0.bin")  # the probe finds it where it is
               for name in _files_holding(tmp_path, gone))
    segments = len(_segments(tmp_path))
    kept = [_row(f"r{i}", "m", vectors[i]) for i in range(N) if i != 5]
    with ChromaIndex(path=tmp_path) as index:
        index.bind("scrub-test", DIM, lambda ns: kept if ns == "m" else [])
        index.compact(["m"])
        assert [i for i, _ in index.query("m", MemoryStatus.ACTIVE, vectors[6], 1)] == ["r6"]
    assert _files_holding(tmp_path, gone) == []
    assert len(_segments(tmp_path)) == segments  # the new one in the place of the old


def test_an_open_after_a_crash_removes_the_segments_no_collection_names(
        tmp_path: Path) -> None:
    with _index(tmp_path) as index:
        index.upsert([_row("r0", "m", _vectors()[0])], new=True)
    orphan = tmp_path / "0b4e5d9c-7a43-4d07-9f5e-2a8f0c1d3e21"
    orphan.mkdir()
    (orphan / "data_level0.bin").write_bytes(b"a dropped collection's vectors")
    other = tmp_path / "notes"
    other.mkdir()
    (tmp_path / "mars-closed").unlink()  # as a crash leaves it
    with _index(tmp_path) as index:
        assert not orphan.exists() and other.is_dir()
        assert [i for i, _ in index.query("m", MemoryStatus.ACTIVE, _vectors()[0], 1)] == ["r0"]
