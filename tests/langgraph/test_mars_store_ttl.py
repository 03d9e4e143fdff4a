"""``MarsStore`` TTL: LangGraph's ``ttl`` (minutes), ``TTLConfig``, refresh on read, sweeps.

Every test runs on the store's ``FakeClock``: expiry is decided by ``memory.clock``, never
by the wall clock (only the sweeper thread's *interval* is wall-clock time).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp, TTLConfig
from lg_helpers import indexed_ids, raw_text

from langchain_mars.store import MARKER, MarsStore
from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.audit import AuditOp
from mars_core.errors import ConfigError, NotFoundError, ValidationError

KEY = bytes(range(32))
T0 = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
NS = ("users", "ana")


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


@pytest.fixture
def make() -> Iterator[Callable[..., tuple[MarsStore, FakeClock]]]:
    """``make(ttl=TTLConfig | None, **MarsStore kwargs)``: a store over an in-memory
    MemoryStore, and the FakeClock (at ``T0``) that decides its expiries."""
    made: list[MemoryStore] = []

    def factory(budget: int = 8000, **kw: Any) -> tuple[MarsStore, FakeClock]:
        clock = FakeClock()
        memory = MemoryStore(budget=budget, clock=clock, audit_key=KEY)
        made.append(memory)
        return MarsStore(memory, **kw), clock

    yield factory
    for m in made:
        m.close()


def _expires(s: MarsStore, ns: tuple[str, ...], key: str) -> datetime | None:
    node_id = s.node_id(ns, key)
    assert node_id is not None
    return s.memory.get(node_id, namespace=ns).expires_at


def _keys(s: MarsStore, prefix: tuple[str, ...] = NS, **kw: Any) -> list[str]:
    return [i.key for i in s.search(prefix, refresh_ttl=False, limit=100, **kw)]


# --- expiry ---------------------------------------------------------------------------------


def test_put_with_ttl_expires_for_get_search_and_listing(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    assert s.supports_ttl is True and s.ttl_config is None
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    s.put(NS, "jazz", {"text": "Ana likes jazz"})
    s.put(("tmp",), "code", {"text": "door code 4321"}, ttl=10)
    tea_id = s.node_id(NS, "tea")
    assert tea_id is not None
    node = s.memory.get(tea_id, namespace=NS)
    assert node.expires_at == T0 + minutes(10) and node.metadata[MARKER]["ttl"] == 10  # type: ignore[index,call-overload]
    assert _expires(s, NS, "jazz") is None and MARKER in node.metadata
    assert "ttl" not in s.memory.get(s.node_id(NS, "jazz") or "", namespace=NS).metadata[MARKER]  # type: ignore[operator]

    clock.advance(minutes(10))  # at the expiry: not past it yet
    assert s.get(NS, "tea", refresh_ttl=False) is not None
    assert s.list_namespaces() == [("tmp",), ("users", "ana")]
    clock.advance(timedelta(seconds=1))
    assert s.get(NS, "tea") is None and s.get(("tmp",), "code") is None
    assert _keys(s) == ["jazz"] and _keys(s, ("users",)) == ["jazz"]
    assert _keys(s, query="what does Ana drink? green tea") == ["jazz"]
    assert s.list_namespaces() == [("users", "ana")]
    assert s.batch([GetOp(NS, "tea"), ListNamespacesOp()]) == [None, [("users", "ana")]]
    # gone for LangGraph, but still held by the core until a sweep (or a delete) erases it
    assert s.memory.get(tea_id, namespace=NS).is_active and s.node_id(NS, "tea") == tea_id
    # an expired item is never "accessed"
    assert s.memory.get(tea_id, namespace=NS).access_count == 0


def test_core_maintain_archives_expired_items_and_they_stay_gone(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    clock.advance(minutes(11))
    report = s.memory.maintain(MarsStore.mars_namespace(NS))
    tea = s.memory.get(s.node_id(NS, "tea") or "", namespace=NS)
    assert report[MarsStore.mars_namespace(NS)]["expired"] == 1 and not tea.is_active
    assert s.get(NS, "tea") is None and _keys(s) == []  # archived is not revived
    assert s.sweep_ttl() == 1  # the sweep erases what the core archived
    with pytest.raises(NotFoundError):
        s.memory.get(tea.id, namespace=NS)


# --- refresh ------------------------------------------------------------------------------


def test_refresh_on_read_extends_the_expiry(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    clock.advance(minutes(8))
    audit = len(s.memory.audit)
    assert s.get(NS, "tea") is not None  # the default: refresh_ttl from refresh_on_read (True)
    assert _expires(s, NS, "tea") == T0 + minutes(18)
    event = s.memory.audit.events()[-1]
    assert len(s.memory.audit) == audit + 1 and event.op is AuditOp.METADATA
    assert event.params == {"fields": ["expires_at"]}
    assert s.get(NS, "tea") is not None and len(s.memory.audit) == audit + 1  # no move, no write
    clock.advance(minutes(8))  # t = 16
    assert [i.key for i in s.search(NS)] == ["tea"]  # a listing search refreshes what it returns
    assert _expires(s, NS, "tea") == T0 + minutes(26)
    clock.advance(minutes(8))  # t = 24
    assert [i.key for i in s.search(NS, query="green tea")] == ["tea"]
    assert _expires(s, NS, "tea") == T0 + minutes(34)
    clock.advance(minutes(9))  # t = 33: reads without refresh leave the expiry alone
    assert s.get(NS, "tea", refresh_ttl=False) is not None
    assert [i.key for i in s.search(NS, refresh_ttl=False)] == ["tea"]
    assert _expires(s, NS, "tea") == T0 + minutes(34)
    clock.advance(minutes(2))  # t = 35
    assert s.get(NS, "tea") is None and _keys(s) == []


def test_only_returned_items_are_refreshed(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea", "n": 1}, ttl=10)
    s.put(NS, "jazz", {"text": "Ana likes jazz", "n": 2}, ttl=10)
    s.put(NS, "cat", {"text": "Ana has a cat", "n": 3})
    clock.advance(minutes(5))
    assert [i.key for i in s.search(NS, filter={"n": {"$lt": 2}})] == ["tea"]
    assert [i.key for i in s.search(NS, limit=1, offset=2)] == ["tea"]  # newest first
    assert _expires(s, NS, "tea") == T0 + minutes(15)
    assert _expires(s, NS, "jazz") == T0 + minutes(10)
    assert _expires(s, NS, "cat") is None  # no ttl: a read never gives one
    clock.advance(minutes(6))
    assert _keys(s) == ["cat", "tea"]


def test_without_refresh_it_expires(make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make(ttl=TTLConfig(refresh_on_read=False))
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    s.put(NS, "jazz", {"text": "Ana likes jazz"}, ttl=10)
    audit = len(s.memory.audit)
    clock.advance(minutes(8))
    assert s.get(NS, "tea") is not None and sorted(_keys(s)) == ["jazz", "tea"]
    assert [i.key for i in s.search(NS, query="green tea", limit=1)] == ["tea"]
    assert _expires(s, NS, "tea") == _expires(s, NS, "jazz") == T0 + minutes(10)
    assert [e.op for e in s.memory.audit.events()[audit:]] == [AuditOp.ACCESS]  # the search
    assert s.get(NS, "jazz", refresh_ttl=True) is not None  # per call, the caller decides
    assert _expires(s, NS, "jazz") == T0 + minutes(18)
    clock.advance(minutes(3))
    assert s.get(NS, "tea") is None and _keys(s) == ["jazz"]


# --- put ----------------------------------------------------------------------------------


def test_default_ttl_applies(make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make(ttl=TTLConfig(default_ttl=5))
    s.put(NS, "tea", {"text": "Ana drinks green tea"})  # no ttl given: the default
    s.put(NS, "jazz", {"text": "Ana likes jazz"}, ttl=None)  # None: never expires
    s.put(NS, "cat", {"text": "Ana has a cat"}, ttl=60)
    s.batch([PutOp(NS, "raw", {"text": "a raw op"})])  # a raw PutOp means what it says
    assert _expires(s, NS, "tea") == T0 + minutes(5)
    assert _expires(s, NS, "jazz") is None and _expires(s, NS, "raw") is None
    assert _expires(s, NS, "cat") == T0 + minutes(60)
    clock.advance(minutes(6))
    assert sorted(_keys(s)) == ["cat", "jazz", "raw"]


def test_put_sets_refreshes_and_clears_the_ttl(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    first = s.node_id(NS, "tea")
    clock.advance(minutes(5))
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)  # unchanged value: refreshed
    assert s.node_id(NS, "tea") == first and _expires(s, NS, "tea") == T0 + minutes(15)
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=2)  # a new ttl, same memory
    assert s.node_id(NS, "tea") == first and _expires(s, NS, "tea") == T0 + minutes(7)
    assert s.memory.get(first or "", namespace=NS).metadata[MARKER]["ttl"] == 2  # type: ignore[index,call-overload]
    assert s.memory.audit.events()[-1].params == {"fields": ["expires_at", "metadata"]}
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=None)  # cleared
    assert _expires(s, NS, "tea") is None
    assert "ttl" not in s.memory.get(first or "", namespace=NS).metadata[MARKER]  # type: ignore[operator]
    clock.advance(minutes(5))
    s.put(NS, "tea", {"text": "Ana drinks oolong tea"}, ttl=3)  # a new version with a ttl
    second = s.node_id(NS, "tea")
    assert second != first and _expires(s, NS, "tea") == T0 + minutes(13)
    assert [n.id for n in s.memory.history(second or "", namespace=NS)] == [first, second]
    assert s.memory.get(second or "", namespace=NS).metadata[MARKER]["ttl"] == 3  # type: ignore[index,call-overload]
    # update(expires_at=) writes the version with its expiry in one transaction
    assert [(e.op, e.params) for e in s.memory.audit.events()[-2:]] == [
        (AuditOp.UPDATE, {}), (AuditOp.EVICT, {})]
    s.put(NS, "tea", {"text": "Ana drinks black tea"})  # a new version without one
    assert _expires(s, NS, "tea") is None


def test_put_on_an_expired_key_starts_a_fresh_item(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=1)
    s.put(NS, "tea", {"text": "Ana drinks oolong tea"}, ttl=1)
    old = [n.id for n in s.memory.history(s.node_id(NS, "tea") or "", namespace=NS)]
    clock.advance(minutes(2))
    s.put(NS, "tea", {"text": "Ana drinks oolong tea"})  # same value: yet a new item
    item = s.get(NS, "tea")
    assert item is not None and item.created_at == T0 + minutes(2)
    assert _expires(s, NS, "tea") is None and len(old) == 2
    for node_id in old:  # the expired versions were erased, as a sweep would have
        with pytest.raises(NotFoundError):
            s.memory.get(node_id, namespace=NS)
    assert s.sweep_ttl() == 0


# --- sweep ----------------------------------------------------------------------------------


def test_sweep_erases_expired_items_and_returns_the_count(
        make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "pin", {"text": "my bank PIN is Marmoset-7731"}, ttl=1)
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=1)
    s.put(NS, "tea", {"text": "Ana drinks oolong tea"}, ttl=1)  # two versions
    s.put(NS, "cat", {"text": "Ana has a cat"})
    s.put(NS, "jazz", {"text": "Ana likes jazz"}, ttl=60)
    s.put(("tmp",), "otp", {"text": "one-time code 998877"}, ttl=1)
    s.put(("tmp",), "gone", {"text": "deleted while expired"}, ttl=1)
    tea_versions = [n.id for n in s.memory.history(s.node_id(NS, "tea") or "", namespace=NS)]
    assert s.sweep_ttl() == 0 and len(tea_versions) == 2
    swept = {*tea_versions, s.node_id(NS, "pin")}
    assert swept <= indexed_ids(s.memory, "users/ana")
    clock.advance(minutes(2))
    s.delete(("tmp",), "gone")  # a delete erases an expired item at any time
    before = (_keys(s, ("users",)), _keys(s, query="tea"), s.list_namespaces(),
              s.get(NS, "pin"))
    audit = len(s.memory.audit)
    assert s.sweep_ttl() == 3  # pin, tea (both versions), otp
    assert [e.op for e in s.memory.audit.events()[audit:]] == [AuditOp.ERASE] * 4
    for node_id in tea_versions:
        with pytest.raises(NotFoundError):
            s.memory.get(node_id, namespace=NS)
    text = raw_text(s.memory)
    assert "Marmoset-7731" not in text and "oolong" not in text and "998877" not in text
    assert not swept & indexed_ids(s.memory, "users/ana") and not indexed_ids(s.memory, "tmp")
    # what LangGraph sees does not depend on whether the sweep ran
    assert (_keys(s, ("users",)), _keys(s, query="tea"), s.list_namespaces(),
            s.get(NS, "pin")) == before
    assert sorted(before[0]) == ["cat", "jazz"] and before[2] == [("users", "ana")]
    assert s.node_id(NS, "tea") is None and s.reindex() == 2
    audit = len(s.memory.audit)
    assert s.sweep_ttl() == 0 and len(s.memory.audit) == audit  # nothing expired: no write


def test_erase_reads_an_expired_item(make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    s, clock = make()
    s.put(NS, "pin", {"text": "my bank PIN is Marmoset-7731"}, ttl=1)
    clock.advance(minutes(2))
    receipts = s.erase(NS, "pin")
    assert len(receipts) == 1 and len(receipts[0].erased) == 1
    assert s.sweep_ttl() == 0


def test_ttl_sweeper_thread(make: Callable[..., tuple[MarsStore, FakeClock]],
                            caplog: pytest.LogCaptureFixture) -> None:
    s, clock = make(ttl=TTLConfig(sweep_interval_minutes=60))
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=1)
    s.put(NS, "jazz", {"text": "Ana likes jazz"}, ttl=1)
    clock.advance(minutes(2))
    calls: list[int] = []
    real = s.sweep_ttl

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("backend hiccup")
        return real()

    s.sweep_ttl = flaky  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="langchain_mars.store"):
        future = s.start_ttl_sweeper(sweep_interval_minutes=0.0005)  # every 30 ms
        assert s.start_ttl_sweeper() is future  # one sweeper at a time
        deadline = time.monotonic() + 20
        while (s.node_id(NS, "tea"), s.node_id(NS, "jazz")) != (None, None) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        assert s.stop_ttl_sweeper(timeout=20) is True
    assert future.done() and future.result() is None and len(calls) >= 2
    assert s.memory.list(MarsStore.mars_namespace(NS), status=None) == []
    assert "MarsStore TTL sweep failed" in caplog.text
    assert "erased 2 expired items" in caplog.text
    assert s.stop_ttl_sweeper() is True  # not running: nothing to stop
    again = s.start_ttl_sweeper()  # the config's 60 minutes: stopped by cancel, then close
    assert not again.done() and again.cancel()
    s.close()
    assert s._sweeper is None or not s._sweeper.is_alive()
    with pytest.raises(ValidationError):
        s.start_ttl_sweeper(sweep_interval_minutes=0)


# --- persistence ----------------------------------------------------------------------------


def test_expiry_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store"

    def open_at(when: datetime, **kw: Any) -> MarsStore:
        return MarsStore.open(path, clock=FakeClock(when), audit_key=KEY,
                              embedder=HashingEmbedder(), **kw)

    with open_at(T0, ttl=TTLConfig(default_ttl=30)) as s:
        s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
        s.put(NS, "jazz", {"text": "Ana likes jazz"})  # the default: 30 minutes
        s.put(NS, "cat", {"text": "Ana has a cat"}, ttl=None)
        s.memory.clock.advance(minutes(5))  # type: ignore[attr-defined]
        assert s.get(NS, "tea") is not None  # refreshed: t0 + 15
    with open_at(T0 + minutes(14)) as s:  # the refreshed expiry was kept
        assert _expires(s, NS, "tea") == T0 + minutes(15)
        assert _expires(s, NS, "jazz") == T0 + minutes(30) and _expires(s, NS, "cat") is None
        assert s.get(NS, "jazz", refresh_ttl=False) is not None
        assert sorted(_keys(s)) == ["cat", "jazz", "tea"]
    with open_at(T0 + minutes(20)) as s:  # past tea's expiry, never swept
        assert s.get(NS, "tea") is None and sorted(_keys(s)) == ["cat", "jazz"]
        assert s.get(NS, "jazz") is not None  # refreshed: t0 + 50
    memory = MemoryStore.open(path, clock=FakeClock(T0 + minutes(40)), read_only=True,
                              audit_key=KEY)  # the key it was created with
    try:  # a read-only store reads, and never writes a refresh
        ro = MarsStore(memory)
        assert ro.get(NS, "jazz") is not None and _expires(ro, NS, "jazz") == T0 + minutes(50)
        assert ro.get(NS, "tea") is None and sorted(_keys(ro)) == ["cat", "jazz"]
    finally:
        memory.close()
    with open_at(T0 + minutes(60)) as s:
        assert s.sweep_ttl() == 2 and _keys(s) == ["cat"]
    with open_at(T0 + minutes(60)) as s:
        assert s.reindex() == 1 and s.sweep_ttl() == 0 and s.list_namespaces() == [NS]


# --- bad input ------------------------------------------------------------------------------


BAD_TTLS: list[Any] = [-1, -0.001, "5", True, math.nan, math.inf, -math.inf, 1e10, [5]]


@pytest.mark.parametrize("bad", BAD_TTLS, ids=repr)
def test_bad_ttl_raises_and_changes_nothing(
        make: Callable[..., tuple[MarsStore, FakeClock]], bad: Any) -> None:
    s, _ = make()
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    before = (s.node_id(NS, "tea"), _expires(s, NS, "tea"), len(s.memory.audit))
    with pytest.raises(ValidationError, match="ttl"):
        s.batch([PutOp(NS, "new", {"text": "fine"}),
                 PutOp(NS, "tea", {"text": "Ana drinks green tea"}, ttl=bad)])
    with pytest.raises(ValidationError, match="ttl"):
        s.put(NS, "tea", {"text": "Ana drinks black tea"}, ttl=bad)
    with pytest.raises(ValidationError, match="ttl"):
        s.batch([PutOp(NS, "tea", None, ttl=bad)])  # a delete checks its ttl too
    assert (s.node_id(NS, "tea"), _expires(s, NS, "tea"), len(s.memory.audit)) == before
    assert s.get(NS, "new") is None


@pytest.mark.parametrize("config", [
    {"default_ttl": -1}, {"default_ttl": "5"}, {"refresh_on_read": "yes"},
    {"omit_expired": False}, {"sweep_interval_minutes": 0}, {"sweep_interval_minutes": -5},
    {"bogus": 1}, ["default_ttl"],
], ids=repr)
def test_bad_ttl_config(config: Any) -> None:
    with MemoryStore(clock=FakeClock()) as memory:
        with pytest.raises(ConfigError):
            MarsStore(memory, ttl=config)
        ok = MarsStore(memory, ttl=TTLConfig(default_ttl=0, refresh_on_read=True,
                                             sweep_interval_minutes=1, omit_expired=True))
        assert ok.ttl_config == {"default_ttl": 0, "refresh_on_read": True,
                                 "sweep_interval_minutes": 1, "omit_expired": True}


# --- async ----------------------------------------------------------------------------------


def _script_sync(s: MarsStore, clock: FakeClock) -> list[Any]:
    out: list[Any] = []
    s.put(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    s.put(NS, "jazz", {"text": "Ana likes jazz"})
    clock.advance(minutes(8))
    out.append(s.get(NS, "tea"))
    out.append(s.search(NS, query="green tea"))
    out.append(s.batch([GetOp(NS, "tea", refresh_ttl=False), SearchOp(NS)]))
    clock.advance(minutes(11))
    out += [s.get(NS, "tea"), s.search(NS), s.list_namespaces(), s.sweep_ttl(), s.sweep_ttl()]
    return out


async def _script_async(s: MarsStore, clock: FakeClock) -> list[Any]:
    out: list[Any] = []
    await s.aput(NS, "tea", {"text": "Ana drinks green tea"}, ttl=10)
    await s.aput(NS, "jazz", {"text": "Ana likes jazz"})
    clock.advance(minutes(8))
    out.append(await s.aget(NS, "tea"))
    out.append(await s.asearch(NS, query="green tea"))
    out.append(await s.abatch([GetOp(NS, "tea", refresh_ttl=False), SearchOp(NS)]))
    clock.advance(minutes(11))
    out += [await s.aget(NS, "tea"), await s.asearch(NS), await s.alist_namespaces(),
            await s.asweep_ttl(), await s.asweep_ttl()]
    return out


async def test_async_twins_equal_sync(make: Callable[..., tuple[MarsStore, FakeClock]]) -> None:
    sync_store, sync_clock = make(ttl=TTLConfig(default_ttl=20))
    async_store, async_clock = make(ttl=TTLConfig(default_ttl=20))
    expected = await asyncio.to_thread(_script_sync, sync_store, sync_clock)
    got = await _script_async(async_store, async_clock)
    assert got == expected
    assert got[0] is not None and got[3] is None and [i.key for i in got[4]] == ["jazz"]
    assert got[5] == [NS] and got[6:] == [1, 0]
    assert [e.op for e in async_store.memory.audit.events()] == \
        [e.op for e in sync_store.memory.audit.events()]
