"""``MemoryStore`` on PostgreSQL: the store's calls on a real server with the numpy index
(or a real ``chroma run`` server), two stores of one database seeing each other's
writes and erasures, what ``open`` takes and refuses with a URL, and ``mars migrate``.

A store that caches a namespace's views must not serve them once another store changed
the namespace: the same is checked for a SQLite reader beside its writer."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app
from mars_core.clock import FakeClock
from mars_core.errors import (
    ConfigError,
    CorruptStoreError,
    NotFoundError,
    StorageUnavailableError,
)
from mars_core.model import MemoryStatus
from mars_core.storage import postgres as pg

KEY = bytes(range(32))
TEXTS = ["Ana moved to Lisbon in May", "Bo is allergic to peanuts",
         "The team meets every Tuesday at nine", "Carla's phone number is 555 0199"]


@pytest.fixture
def stores(postgres_url: str) -> Iterator[Callable[..., MemoryStore]]:
    """Opens stores on the test's schema (closed at the end)."""
    made: list[MemoryStore] = []

    def factory(**kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        store = MemoryStore.open(postgres_url, audit_key=KEY, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


def _texts(store: MemoryStore, query: str, namespace: str = "default") -> list[str]:
    return [h.node.content for h in store.retrieve(query, namespace=namespace, k=10)]


def test_the_store_calls_on_postgres(stores: Callable[..., MemoryStore]) -> None:
    store = stores(budget=60)
    stats = store.stats()
    assert (stats["records"], stats["index"]) == ("postgresql", "numpy")
    added = [store.add(t, type="semantic") for t in TEXTS[:2]]
    turns = store.observe("user", "My sister Ana works at Acme. I love hiking.")
    assert turns and all(n.namespace == "default" for n in turns)
    assert _texts(store, "where does Ana live")[0] == TEXTS[0]
    store.forget(added[1].id)
    assert store.get(added[1].id).status is MemoryStatus.ARCHIVED
    assert store.restore(added[1].id).status is MemoryStatus.ACTIVE
    newer = store.update(added[0].id, "Ana moved to Porto in June")
    assert [n.content for n in store.history(newer.id)] == [TEXTS[0], newer.content]
    for i in range(12):  # well past the budget of 60 tokens: the policy forgets
        store.add(f"note {i}: the weather was mild and the trains ran on time")
    assert store.stats()["namespaces"]["default"]["tokens"] <= 60
    receipt = store.erase(entity="Ana")
    assert receipt.erased and "postgresql" in receipt.physical
    assert not [t for t in _texts(store, "Ana Lisbon Porto Acme") if "Ana" in t]
    report = store.verify()
    assert report.ok and report.checked == len(store.audit)
    head = store.audit.head
    store.add("after the anchor")
    assert store.verify(expected_head=head).ok


def test_two_stores_of_one_database_see_each_others_writes_and_erasures(
        stores: Callable[..., MemoryStore]) -> None:
    first, second = stores(), stores()
    a = first.add(TEXTS[0], type="semantic", namespace="u1")
    assert _texts(second, "Ana Lisbon", "u1") == [TEXTS[0]]  # second cached u1 now
    b = second.add(TEXTS[1], namespace="u1")
    assert {n.id for n in first.list("u1")} == {a.id, b.id}
    assert _texts(first, "peanuts allergy", "u1")[0] == TEXTS[1]
    first.erase(a.id, namespace="u1")  # second still holds u1's views and vectors
    assert TEXTS[0] not in _texts(second, "Ana Lisbon", "u1")
    assert [n.id for n in second.list("u1", status=None)] == [b.id]
    with pytest.raises(NotFoundError):
        second.get(a.id, namespace="u1")
    assert TEXTS[0] not in str(second.export_jsonld())
    # a third store, opened afterwards, reads everything from the records
    third = stores()
    assert [n.content for n in third.list("u1")] == [TEXTS[1]]
    assert first.verify().ok and second.verify().ok and third.verify().ok


def test_an_erasure_is_not_served_by_a_sqlite_reader_that_cached_the_namespace(
        tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MemoryStore.open(path, index="numpy", clock=FakeClock(), audit_key=KEY) as writer:
        kept = writer.add(TEXTS[1])
        gone = writer.add(TEXTS[0])
        with MemoryStore.open(path, read_only=True, clock=FakeClock(),
                              audit_key=KEY) as reader:
            assert TEXTS[0] in _texts(reader, "Ana Lisbon")  # cached, vectors loaded
            writer.erase(gone.id)
            assert TEXTS[0] not in _texts(reader, "Ana Lisbon")
            assert [n.id for n in reader.list(status=None)] == [kept.id]


def test_a_chroma_server_as_the_index(stores: Callable[..., MemoryStore],
                                      chroma_server: Any) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}_"  # the store's own place on the shared server
    index = f"chroma://{chroma_server.host}:{chroma_server.port}?prefix={prefix}"
    store = stores(index=index)
    assert (store.stats()["index"], store.stats()["index_choice"]) == \
        ("chroma", f"{index} (asked for)")
    ids = [store.add(t).id for t in TEXTS]
    assert _texts(store, "peanuts")[0] == TEXTS[1]
    store.erase(ids[0])
    assert TEXTS[0] not in _texts(store, "Ana Lisbon")
    store.close()
    with pytest.raises(ConfigError, match="server"):  # auto cannot name the server
        stores()
    assert _texts(stores(index=index), "meets Tuesday")[0] == TEXTS[2]


@pytest.mark.parametrize("index", ["chroma", "qdrant"])
def test_embedded_indexes_are_refused_before_anything_is_created(
        postgres_url: str, index: str) -> None:
    with pytest.raises(ConfigError, match="has none"):
        MemoryStore.open(postgres_url, index=index)
    assert pg.schema_version(postgres_url) == 0


def test_read_only_of_no_store_and_an_unreachable_server(postgres_url: str) -> None:
    with pytest.raises(ConfigError, match="read_only"):
        MemoryStore.open(postgres_url, read_only=True)
    with pytest.raises(StorageUnavailableError):
        MemoryStore.open("postgres://ana:s3cret@127.0.0.1:1/agents")


def test_a_reader_reads_while_writers_write(stores: Callable[..., MemoryStore]) -> None:
    writer = stores()
    writer.add(TEXTS[0])
    reader = stores(read_only=True)
    assert _texts(reader, "Ana")[0] == TEXTS[0]
    writer.add(TEXTS[1])
    assert _texts(reader, "peanuts")[0] == TEXTS[1]
    assert reader.stats()["index"] == "numpy"


runner = CliRunner()


def test_mars_migrate_names_and_brings_an_older_schema_up(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    MemoryStore.open(postgres_url, audit_key=KEY).close()
    current = pg.SCHEMA_VERSION  # a next version, one index more
    monkeypatch.setattr(pg, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(pg.MIGRATIONS, current, lambda tx: tx._run(
        "CREATE INDEX memories_by_weight ON memories (weight)"))
    with pytest.raises(CorruptStoreError, match="mars migrate --path"):
        MemoryStore.open(postgres_url, audit_key=KEY)
    out = runner.invoke(app, ["migrate", "--path", postgres_url], catch_exceptions=False)
    assert out.exit_code == 0
    assert f"migrated the schema from {current} to {current + 1}" in out.output
    out = runner.invoke(app, ["migrate", "--path", postgres_url], catch_exceptions=False)
    assert out.exit_code == 0 and "current; nothing to do" in out.output
    with MemoryStore.open(postgres_url, audit_key=KEY) as store:
        store.add("works again")
    # SQLite too: current, nothing to do; no store: an error that says so
    MemoryStore.open(tmp_path / "s", index="numpy", audit_key=KEY).close()
    out = runner.invoke(app, ["migrate", "--path", str(tmp_path / "s")])
    assert out.exit_code == 0 and "current; nothing to do" in out.output
    out = runner.invoke(app, ["migrate", "--path", str(tmp_path / "none")])
    assert out.exit_code == 2 and "no store" in out.output
    bad = "postgresql://ana:s3cret@127.0.0.1:1/agents"
    out = runner.invoke(app, ["migrate", "--path", bad])
    assert out.exit_code == 1 and "s3cret" not in out.output  # unreachable: a failure
