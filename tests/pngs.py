"""Checks of the benchmarks' PNG plots, shared by their tests."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

__all__ = ["assert_plots", "png_size"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG file (from its IHDR chunk); AssertionError if it is not one."""
    data = path.read_bytes()
    assert data[:8] == SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG file"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def assert_plots(folder: Path, names: Iterable[str], *, min_bytes: int = 10_000) -> None:
    """Every named file in ``folder`` is a PNG of a drawn figure: at least 500 × 250 pixels,
    ``min_bytes`` long (an empty axes is a few kB), and carries no date or software stamp."""
    for name in names:
        path = folder / name
        width, height = png_size(path)
        assert width >= 500 and height >= 250, (name, width, height)
        data = path.read_bytes()
        assert len(data) >= min_bytes, (name, len(data))
        assert b"tIME" not in data and b"Software" not in data, name
