"""Concurrency: 8 threads (and 8 asyncio tasks) of mixed operations on one store.

A small budget makes evictions happen all the time. A checker thread verifies the
invariants while the workers run (it holds the store lock, so it sees a committed
state); afterwards the audit must hold exactly one event per counted mutation, the
chain must verify, and a persisted store must reopen to the same export. Every test runs
on each backend of the matrix (``tests/conftest.py``); the threads run for at least
``DURATION`` seconds and until they have done enough work to have tested something
(``MIN_INSERTS`` adds and one eviction), whatever the backend's speed.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from invariants import check_invariants

from mars_core.audit import AuditOp
from mars_core.clock import FakeClock
from mars_core.errors import MarsError
from mars_core.store import MemoryStore

AUDIT_KEY = bytes(range(32))
WORDS = ("ana bob tea coffee lisbon porto flight meeting invoice piano garden rain friday "
         "doctor sister project").split()
NAMESPACES = ("left", "right")
CONFIG: dict[str, Any] = {"budget": 50, "namespace_budgets": {"right": 30}}
DURATION = 1.0
MIN_INSERTS = 21
"""The threads run until at least this many adds and one eviction happened..."""
PATIENCE = 120.0
"""...or this many seconds passed (then ``_check_counts`` fails, saying what was missing)."""
WORKERS = 8
ASYNC_OPS, ASYNC_OPS_ON_DISK = 80, 12
"""Operations per asyncio task in memory and on the other backends of the matrix (each
write is 10-30x slower there; 8 x 12 operations still make dozens of adds and evictions)."""


class Shared:
    """Ids seen by every worker, and counts of what they did."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ids: dict[str, str] = {}  # id -> namespace
        self.counts: Counter[str] = Counter()
        self.errors: list[BaseException] = []
        self.evicted = False

    def enough(self) -> bool:
        """Whether the workers did enough to have tested something."""
        with self.lock:
            return self.counts["insert"] >= MIN_INSERTS and self.evicted

    def add_id(self, nid: str, ns: str) -> None:
        with self.lock:
            assert nid not in self.ids, f"id {nid} returned twice"
            self.ids[nid] = ns

    def pick(self, rng: random.Random, ns: str | None = None) -> str | None:
        with self.lock:
            ids = sorted(i for i, n in self.ids.items() if ns is None or n == ns)
        return rng.choice(ids) if ids else None

    def namespace_of(self, nid: str) -> str:
        """The namespace of an id seen (ids never cross namespaces)."""
        with self.lock:
            return self.ids[nid]

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def saw_eviction(self, store: MemoryStore) -> None:
        """Note whether the budget has forced an eviction (an ``evict`` event is audited)."""
        if not self.evicted and any(e.op is AuditOp.EVICT for e in store.audit.events()):
            with self.lock:
                self.evicted = True


def _text(rng: random.Random, tag: str) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))) + f" {tag}"


def _one_op(store: MemoryStore, shared: Shared, rng: random.Random, tag: str) -> None:
    ns = rng.choice(NAMESPACES)
    roll = rng.random()
    if roll < 0.35:
        node = store.add(_text(rng, tag), namespace=ns, type=rng.choice(["episodic", "semantic"]),
                         sensitivity=rng.choice([0.0, 0.5, 1.0]))
        assert node.namespace == ns and node.is_active
        shared.add_id(node.id, ns)
        shared.count("insert")
    elif roll < 0.55:
        read_only = rng.random() < 0.3
        hits = store.retrieve(_text(rng, ""), namespace=ns, budget_tokens=rng.randint(5, 40),
                              read_only=read_only)
        assert all(h.node.namespace == ns for h in hits), "isolation broken under load"
        if hits and not read_only:
            shared.count("access")
    elif roll < 0.63:
        nid = shared.pick(rng)
        if nid is not None:
            assert not store.forget(nid, namespace=shared.namespace_of(nid)).is_active
    elif roll < 0.71:
        nid = shared.pick(rng)
        if nid is not None:
            node = store.update(nid, _text(rng, tag), namespace=shared.namespace_of(nid))
            shared.add_id(node.id, node.namespace)
            shared.count("update")
    elif roll < 0.77:
        nid = shared.pick(rng)
        if nid is not None:
            # may be evicted again later
            assert store.restore(nid, namespace=shared.namespace_of(nid)).is_active or True
    elif roll < 0.83:
        src, tgt = shared.pick(rng, ns), shared.pick(rng, ns)
        if src is not None and tgt is not None and src != tgt:
            store.link(src, rng.choice(["isA", "friendOf", "temporalNext"]), tgt, namespace=ns)
            shared.count("metadata")
    elif roll < 0.9:
        nid = shared.pick(rng)
        if nid is not None:
            exp = store.explain(nid, namespace=shared.namespace_of(nid))
            assert exp.status in ("active", "archived") and exp.events
    elif roll < 0.95:
        stats = store.stats()
        for name, per in stats["namespaces"].items():
            assert per["tokens"] <= per["budget"], (name, per)
    else:
        for node in store.list(ns, status=None):
            assert node.namespace == ns


def _check_counts(store: MemoryStore, shared: Shared) -> None:
    ops = Counter(e.op.value for e in store.audit.events())
    for what in ("insert", "update", "access", "metadata"):
        assert ops[what] == shared.counts[what], (what, ops[what], shared.counts[what])
    assert ops[AuditOp.EVICT.value] > 0, "the budget never forced an eviction"
    held = {n.id for ns in store.namespaces() for n in store.list(ns, status=None)}
    assert set(shared.ids) == held, "ids lost or invented"
    assert shared.counts["insert"] >= MIN_INSERTS, shared.counts


def _run_threads(store: MemoryStore, shared: Shared, seed: int) -> None:
    stop = threading.Event()
    checks = Counter[str]()

    def worker(n: int) -> None:
        rng = random.Random(seed * 100 + n)
        i = 0
        try:
            while not stop.is_set():
                i += 1
                _one_op(store, shared, rng, f"w{n}.{i}")
        except BaseException as exc:
            with shared.lock:
                shared.errors.append(exc)
            stop.set()

    def checker() -> None:
        try:
            while not stop.wait(0.25):
                check_invariants(store)
                checks["ok"] += 1
        except BaseException as exc:
            with shared.lock:
                shared.errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    threads.append(threading.Thread(target=checker))
    for t in threads:
        t.start()
    started = time.monotonic()
    stop.wait(DURATION)
    while not stop.is_set() and not shared.enough() and time.monotonic() - started < PATIENCE:
        shared.saw_eviction(store)
        stop.wait(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a worker hung (deadlock?)"
    if shared.errors:
        raise shared.errors[0]
    assert checks["ok"] >= 1


def test_threads_in_memory(make_store: Any) -> None:
    store = make_store(**CONFIG)
    shared = Shared()
    _run_threads(store, shared, seed=1)
    check_invariants(store)
    assert store.verify().ok
    _check_counts(store, shared)


def test_threads_persisted_then_reopened(tmp_path: Path) -> None:
    shared = Shared()
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=AUDIT_KEY,
                          **CONFIG) as store:
        _run_threads(store, shared, seed=2)
        check_invariants(store)
        _check_counts(store, shared)
        export = store.export_jsonld()
        events = store.audit.events()
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=AUDIT_KEY) as store:
        assert store.export_jsonld() == export
        assert store.audit.events() == events
        assert store.verify().ok
        check_invariants(store)


# --- asyncio ---------------------------------------------------------------------------------


async def _task(store: MemoryStore, shared: Shared, n: int, ops: int) -> None:
    rng = random.Random(1000 + n)
    for i in range(ops):
        ns = rng.choice(NAMESPACES)
        roll = rng.random()
        tag = f"t{n}.{i}"
        if roll < 0.4:
            node = await store.aadd(_text(rng, tag), namespace=ns)
            shared.add_id(node.id, ns)
            shared.count("insert")
        elif roll < 0.6:
            hits = await store.aretrieve(_text(rng, ""), namespace=ns, budget_tokens=30)
            assert all(h.node.namespace == ns for h in hits)
            if hits:
                shared.count("access")
        elif roll < 0.68:
            nid = shared.pick(rng)
            if nid is not None:
                assert not (await store.aforget(nid, namespace=shared.namespace_of(nid))).is_active
        elif roll < 0.76:
            nid = shared.pick(rng)
            if nid is not None:
                node = await store.aupdate(nid, _text(rng, tag),
                                           namespace=shared.namespace_of(nid))
                shared.add_id(node.id, node.namespace)
                shared.count("update")
        elif roll < 0.82:
            nid = shared.pick(rng)
            if nid is not None:
                await store.arestore(nid, namespace=shared.namespace_of(nid))
        elif roll < 0.88:
            src, tgt = shared.pick(rng, ns), shared.pick(rng, ns)
            if src is not None and tgt is not None and src != tgt:
                await store.alink(src, "isA", tgt, namespace=ns)
                shared.count("metadata")
        elif roll < 0.94:
            nid = shared.pick(rng)
            if nid is not None:
                assert (await store.aexplain(nid, namespace=shared.namespace_of(nid))).events
        else:
            stats = await store.astats()
            assert all(p["tokens"] <= p["budget"] for p in stats["namespaces"].values())
        if i % 10 == 0:
            await asyncio.sleep(0)


async def test_async_twins_concurrently(tmp_path: Path, store_kind: str) -> None:
    store = MemoryStore.open(tmp_path / "a", clock=FakeClock(), audit_key=AUDIT_KEY, **CONFIG)
    shared = Shared()
    try:
        started = time.monotonic()
        ops = ASYNC_OPS if store_kind == "ram" else ASYNC_OPS_ON_DISK
        results = await asyncio.gather(*(_task(store, shared, n, ops) for n in range(WORKERS)),
                                       return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        assert time.monotonic() - started < 60
        await asyncio.to_thread(check_invariants, store)  # synchronous: off the loop
        assert (await store.averify()).ok
        await asyncio.to_thread(_check_counts, store, shared)
        export = await store.aexport_jsonld()
    finally:
        await store.aclose()
    assert store.closed
    try:
        await store.aadd("after close")
    except MarsError as exc:
        assert type(exc).__name__ == "StoreClosedError"
    else:
        raise AssertionError("a closed store accepted a write")
    def reopened() -> None:  # synchronous, so off the event loop
        with MemoryStore.open(tmp_path / "a", clock=FakeClock(), audit_key=AUDIT_KEY) as again:
            assert again.export_jsonld() == export
            check_invariants(again)

    await asyncio.to_thread(reopened)
