"""Exports and listings that never hold a namespace whole: ``write_jsonld`` streams the
records to a file a batch at a time, ``list(newest=n)`` reads only the ``n`` newest."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mars_core import FakeClock, HashingEmbedder, MemoryStore, ValidationError
from mars_core.io.jsonld import from_jsonld, write_jsonld
from mars_core.model import MemoryNode
from mars_core.testing import StoreFactory

KEY = b"s" * 32


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores (a budget that archives most of what is added)."""
    return make_store.with_defaults(audit_key=KEY, budget=60)


def _filled(store: MemoryStore) -> None:
    for ns in ("home", "work"):
        for i in range(12):
            store.add(f"{ns} note {i}: Ana walked to the river on day {i}", namespace=ns)
    first = store.list("home", status=None)[0]
    store.add("Ana lives by the river", type="semantic", namespace="home",
              provenance={"derived_from": [first.id]})


def test_the_written_file_is_the_exported_document(mk: StoreFactory, tmp_path: Path) -> None:
    store = mk()
    _filled(store)
    out = tmp_path / "all.jsonld"
    summary = store.write_jsonld(out)
    doc = store.export_jsonld()
    assert json.loads(out.read_text(encoding="utf-8")) == doc
    assert summary.path == out and summary.namespaces == ("home", "work")
    assert summary.memories == sum(1 for i in doc["@graph"] if "rdf:subject" not in i) == 25
    assert summary.edges == len(doc["@graph"]) - 25 >= 1
    one = store.write_jsonld(tmp_path / "home.jsonld", namespace="home")
    assert json.loads((tmp_path / "home.jsonld").read_text(encoding="utf-8")) == \
        store.export_jsonld(namespace="home")
    assert (one.memories, one.namespaces) == (13, ("home",))
    nodes, _, steps = from_jsonld(out)
    assert len(nodes) == 25 and set(steps) == {"home", "work"}


def test_an_empty_store_writes_an_empty_export(mk: StoreFactory, tmp_path: Path) -> None:
    summary = mk().write_jsonld(tmp_path / "none.jsonld")
    assert (summary.memories, summary.edges, summary.namespaces) == (0, 0, ())
    assert from_jsonld(tmp_path / "none.jsonld") == ([], [], {})


def _peak(call: Callable[[], object]) -> int:
    """The most memory Python held at once during ``call`` (bytes, tracemalloc)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_writing_holds_a_batch_not_the_store(tmp_path: Path) -> None:
    texts = [f"memory {i}: Ana noted the river level {i} cm" for i in range(1_500)]
    with MemoryStore(clock=FakeClock(), audit_key=KEY, budget=10_000_000,
                     embedder=HashingEmbedder(), nlp="off", sensitivity_scoring=False) as store:
        store.add_many(texts[:500])
        small = _peak(lambda: store.write_jsonld(tmp_path / "small.jsonld"))
        store.add_many(texts[500:])
        large = _peak(lambda: store.write_jsonld(tmp_path / "large.jsonld"))
        whole = _peak(store.export_jsonld)
    assert large < 1.3 * small, (small, large)  # three times the memories, the same batch
    assert 2 * large < whole, (large, whole)


def test_a_failed_write_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "kept.jsonld"
    target.write_text("before", encoding="utf-8")
    with MemoryStore(clock=FakeClock(), audit_key=KEY, embedder=HashingEmbedder()) as store:
        node = store.add("Ana walked to the river")

    def failing() -> Iterator[MemoryNode]:
        yield node
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_jsonld(target, failing(), [], {"default": 1})
    assert target.read_text(encoding="utf-8") == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.jsonld"]  # no temporary file left


def test_the_async_twin_writes_the_same_file(mk: StoreFactory, tmp_path: Path) -> None:
    store = mk()
    _filled(store)

    async def go() -> int:
        summary = await store.awrite_jsonld(tmp_path / "a.jsonld")
        return summary.memories

    assert asyncio.run(go()) == 25
    assert json.loads((tmp_path / "a.jsonld").read_text(encoding="utf-8")) == \
        store.export_jsonld()


@pytest.mark.parametrize("status", ["active", "archived", None])
def test_list_newest_is_the_tail_of_the_whole_list(mk: StoreFactory,
                                                   status: str | None) -> None:
    store = mk()
    _filled(store)
    whole = store.list("home", status=status)
    assert len(whole) >= 4
    for n in (1, 3, len(whole), len(whole) + 5):
        assert store.list("home", status=status, newest=n) == whole[-n:]
    typed = store.list("home", status=status, type="semantic")
    assert store.list("home", status=status, type="semantic", newest=1) == typed[-1:]


@pytest.mark.parametrize("bad", [0, -2, True, 2.5, "3"])
def test_list_newest_refuses_what_is_not_a_count(mk: StoreFactory, bad: object) -> None:
    store = mk()
    _filled(store)
    before = store.export_jsonld()
    with pytest.raises(ValidationError, match="newest"):
        store.list("home", status="archived", newest=bad)
    assert store.export_jsonld() == before
