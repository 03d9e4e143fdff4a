"""The erasure scanner on stores opened by path, with each index: after ``erase``, no byte
of the erased text is anywhere under the store's directory — not in the record store's
database or its write-ahead log, not in the index's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from mars_core import FakeClock, MemoryStore

SECRETS = ["Ines Albuquerque", "555-0199-7788", "Rua da Saudade"]


def scan(root: Path, needles: list[str]) -> list[str]:
    """``file:needle`` for every file under ``root`` holding a needle's bytes."""
    return [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*"))
            if path.is_file() for n in needles if n.encode() in path.read_bytes()]


def _fill(store: MemoryStore) -> None:
    store.add(f"{SECRETS[0]} called from {SECRETS[1]}", type="episodic")
    store.add(f"{SECRETS[0]} lives on {SECRETS[2]}", type="semantic")
    store.observe("user", f"My friend {SECRETS[0]} moved to {SECRETS[2]} last May")
    for i in range(30):
        store.add(f"an unrelated memory number {i} about the weather")
    store.retrieve(SECRETS[0])


@pytest.mark.parametrize("index", ["numpy", "chroma", "qdrant"])
def test_no_erased_byte_remains(tmp_path: Path, index: str) -> None:
    pytest.importorskip({"numpy": "numpy", "chroma": "chromadb", "qdrant": "qdrant_client"}[index])
    path = tmp_path / "s"
    with MemoryStore.open(path, index=index, clock=FakeClock()) as store:
        _fill(store)
        assert scan(path, SECRETS)  # the scanner sees the text while it is stored
        receipt = store.erase(entity="Ines Albuquerque")
        assert len(receipt.erased) >= 3 and "write-ahead log truncated" in receipt.physical
        assert scan(path, SECRETS) == []  # at once, with the store still open
    assert scan(path, SECRETS) == []
    with MemoryStore.open(path, clock=FakeClock()) as store:
        assert all("Ines" not in n.content for n in store.list(status=None))
        assert store.verify().ok
