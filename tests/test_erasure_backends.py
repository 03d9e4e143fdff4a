"""The erasure scanner on real persistent backends: after erase, no byte of the erased text
is anywhere under the store's directories (documents are sealed; keys are destroyed)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.backends.base import VectorBackend

SECRETS = ["Ines Albuquerque", "555-0199-7788", "Rua da Saudade"]


def chroma(path: Path) -> VectorBackend:
    pytest.importorskip("chromadb")
    from mars_core.backends.chroma import ChromaBackend

    return ChromaBackend(path=path)


def qdrant(path: Path) -> VectorBackend:
    pytest.importorskip("qdrant_client")
    from mars_core.backends.qdrant import QdrantBackend

    return QdrantBackend(path=str(path))


def scan(root: Path, needles: list[str]) -> list[str]:
    found = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            data = (Path(dirpath) / name).read_bytes()
            found += [f"{name}:{n}" for n in needles if n.encode() in data]
    return found


@pytest.mark.parametrize("make", [chroma, qdrant], ids=["chroma-persistent", "qdrant-path"])
def test_no_erased_byte_remains(tmp_path: Path, make: Callable[[Path], VectorBackend]) -> None:
    store = MemoryStore(make(tmp_path / "db"), HashingEmbedder(), clock=FakeClock(),
                        keys_path=tmp_path / "keys", nlp="rules", budget=10_000)
    store.add(f"{SECRETS[0]} called from {SECRETS[1]}", namespace="u1")
    store.add(f"{SECRETS[0]} lives on {SECRETS[2]}", namespace="u1")
    keep = store.add("Bo likes jazz", namespace="u1")
    store.retrieve("Ines", namespace="u1")
    assert scan(tmp_path, SECRETS) == []  # sealed from the start: no plaintext on disk
    receipt = store.erase(entity="Ines Albuquerque", namespace="u1")
    assert len(receipt.erased) == 2 and "crypto-shredded" in receipt.physical
    store.close()
    assert scan(tmp_path, SECRETS) == []
    reopened = MemoryStore(make(tmp_path / "db"), HashingEmbedder(), clock=FakeClock(),
                           keys_path=tmp_path / "keys", nlp="rules")
    with reopened:
        assert [n.id for n in reopened.list("u1")] == [keep.id] and reopened.verify().ok


@pytest.mark.parametrize("make", [chroma, qdrant], ids=["chroma-persistent", "qdrant-path"])
def test_the_scanner_sees_plaintext_without_encryption(
        tmp_path: Path, make: Callable[[Path], VectorBackend]) -> None:
    """Control: a plaintext store does put the text on disk (so the scanner can see it);
    Chroma keeps it after a delete, which is why it needs crypto-shredding."""
    store = MemoryStore(make(tmp_path / "db"), HashingEmbedder(), clock=FakeClock(),
                        nlp="rules")
    store.add(f"{SECRETS[0]} called from {SECRETS[1]}")
    store.close()
    assert scan(tmp_path, SECRETS[:1])
    if make is chroma:
        with MemoryStore(make(tmp_path / "db"), HashingEmbedder(), clock=FakeClock(),
                         nlp="rules") as again:
            again.erase(entity="Ines Albuquerque")
        assert scan(tmp_path, SECRETS[:1])  # the plain document outlived its deletion
