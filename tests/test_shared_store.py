"""Stores that share one backend: one writer per store (a lease), any number of readers.

Every test runs on each shared kind: ``chroma-http`` (the session's real ``chroma run``
server), ``qdrant-client`` (one Qdrant local-mode client passed to several backends in
this process: what a server is to several processes, without one) and ``qdrant-url``
(the server at ``QDRANT_URL``, when it is set). The test with a second process runs on
the servers. What the deployment guide promises two processes (docs/deployment.md,
"What two processes sharing one server may do") is tested here.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from chroma_server import prefix_for, server_backend

from mars_core import codec, core
from mars_core.backends.base import UpsertOp, VectorBackend, WriteBatch
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import (
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    MarsBackendError,
)
from mars_core.store import MemoryStore

KINDS = ["chroma-http", "qdrant-client", *(["qdrant-url"] if os.environ.get("QDRANT_URL")
                                           else [])]
"""The shared kinds (``qdrant-url`` when ``QDRANT_URL`` is set)."""


@dataclass(frozen=True)
class Shared:
    """One shared backend: how to connect another client to it, and where it is."""

    kind: str
    prefix: str
    connect: Callable[[], VectorBackend]
    where: str | None  # host:port or URL for another process; None: this process only


@pytest.fixture(params=KINDS)
def shared(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Shared]:
    """A backend several store instances (and, on a server, processes) reach."""
    kind, prefix = request.param, prefix_for(tmp_path)
    pytest.importorskip("chromadb" if kind == "chroma-http" else "qdrant_client")
    if kind in ("chroma-http", "qdrant-url"):
        server = request.getfixturevalue("chroma_server") if kind == "chroma-http" else None
        where = f"{server.host}:{server.port}" if server else os.environ["QDRANT_URL"]
        yield Shared(kind, prefix, lambda: server_backend(kind, server, prefix), where)
        return
    from qdrant_client import QdrantClient

    from mars_core.backends.qdrant import QdrantBackend

    client = QdrantClient(location=":memory:")
    try:
        yield Shared(kind, prefix, lambda: QdrantBackend(client=client,
                                                         collection_prefix=prefix), None)
    finally:
        client.close()


@pytest.fixture
def server_store(shared: Shared) -> Iterator[Callable[..., MemoryStore]]:
    """``server_store(**kw)``: a store on a new client of the shared backend."""
    made: list[MemoryStore] = []

    def factory(**kw: Any) -> MemoryStore:
        store = MemoryStore(shared.connect(), clock=FakeClock(), audit_key=bytes(32),
                            budget=500, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


def test_two_stores_share_one_backend(server_store: Any) -> None:
    """One writer and any number of read-only readers per store (collection prefix);
    a second writer is refused while the first holds the lease."""
    writer = server_store()
    a = writer.add("Ana moved to Lisbon", namespace="u1")
    with pytest.raises(ConflictError, match="holds this store's lease"):
        server_store()
    reader = server_store(read_only=True)  # opened after the write: sees it
    assert [n.id for n in reader.list("u1")] == [a.id]
    assert reader.retrieve("Lisbon", namespace="u1")[0].id == a.id
    assert reader.get(a.id).access_count == 0  # a reader records no access
    with pytest.raises(ConflictError, match="read_only"):
        reader.add("readers cannot write", namespace="u1")
    writer.close()  # releases the lease
    second = server_store()
    b = second.add("Ana likes green tea", namespace="u1")
    second.close()
    refreshed = server_store()  # the first one, reopened: sees the other's write
    assert [n.content for n in refreshed.list("u1")] == [a.content, b.content]
    assert refreshed.verify().ok
    hits = refreshed.retrieve("green tea", namespace="u1", read_only=True)
    assert hits[0].id == b.id


def test_an_expired_lease_is_taken_over_and_the_old_writer_stops(server_store: Any) -> None:
    crashed = server_store(lease_ttl=6.0)  # never closed: as if its process had died
    crashed.add("written before the crash")
    with pytest.raises(ConflictError):
        server_store()
    lease = crashed._lease
    assert lease is not None
    time.sleep(max(0.0, lease.renewed + lease.ttl - time.time()) + 0.2)  # until it expires
    taker = server_store()
    with pytest.raises(ConflictError, match="taken this store's lease"):
        crashed.add("a write after the takeover")
    taker.add("written by the new writer")
    assert [n.content for n in taker.list()] == ["written before the crash",
                                                  "written by the new writer"]
    crashed.close()  # does not release a lease it no longer holds
    with pytest.raises(ConflictError):
        server_store()


def test_a_writer_idle_past_its_lease_renews_it_before_it_writes(server_store: Any) -> None:
    """The lease is renewed by a write of its own, read back, before the batch: a writer
    that opens while that batch is in flight finds the lease held, not expired."""
    old = server_store(lease_ttl=3.0)
    a = old.add("Ana moved to Lisbon")
    old.set_metadata(a.id, {"v": 1})
    time.sleep(3.2)  # alive, but idle past its lease
    in_flight, go = threading.Event(), threading.Event()
    apply = old.backend._apply

    def held(ops: Any, *, replay: bool) -> None:
        if not in_flight.is_set() and any(op.collection == codec.AUDIT for op in ops):
            in_flight.set()  # the batch (not the renewal before it) is under way
            go.wait(10)
        apply(ops, replay=replay)

    old.backend._apply = held  # type: ignore[method-assign]
    writing = threading.Thread(target=old.set_metadata, args=(a.id, {"v": 2}))
    writing.start()
    assert in_flight.wait(10)
    try:
        with pytest.raises(ConflictError, match="holds this store's lease"):
            server_store()
    finally:
        go.set()
        writing.join(10)
    old.set_metadata(a.id, {"v": 3})
    reader = server_store(read_only=True)
    assert reader.get(a.id).metadata == {"v": 3} and reader.verify().ok


def _acquiring(lease: Any) -> tuple[threading.Thread, list[BaseException | None]]:
    """A thread (not started) that takes ``lease``, and where it puts the outcome
    (``None``: taken; else the exception)."""
    outcome: list[BaseException | None] = []

    def take() -> None:
        try:
            lease.acquire()
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    return threading.Thread(target=take), outcome


def test_a_takeover_during_the_old_writers_renewal_leaves_it_the_lease(
        server_store: Any, shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old writer read its expired lease just before a rival wrote its own, and
    renews right after: both wait the settle before reading back, both read the old
    writer's record, and only the old writer goes on."""
    old = server_store(lease_ttl=3.0)
    a = old.add("Ana moved to Lisbon")
    time.sleep(3.2)  # alive, but idle past its lease
    lease = old._lease
    assert lease is not None
    taker, outcome = _acquiring(core._Lease(shared.connect(), 3.0))
    wrote = threading.Event()
    current, sleep = lease._current, time.sleep

    def read_then_let_the_rival_write() -> Any:
        found = current()
        if found.get("holder") == lease.holder and not wrote.is_set():  # the check's read
            taker.start()
            assert wrote.wait(10)
        return found

    def settle(seconds: float) -> None:
        if threading.current_thread() is taker:
            wrote.set()  # the rival has written its record and waits to read it back
        sleep(seconds)

    lease._current = read_then_let_the_rival_write  # type: ignore[method-assign]
    monkeypatch.setattr(core.time, "sleep", settle)
    old.set_metadata(a.id, {"v": 2})  # reads, lets the rival write, renews, settles, writes
    taker.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], ConflictError)
    assert "at the same moment" in str(outcome[0])
    old.set_metadata(a.id, {"v": 3})  # the old writer goes on
    assert server_store(read_only=True).get(a.id).metadata == {"v": 3}


def test_a_late_renewal_yields_to_a_rival_that_read_the_lease_expired_before_it(
        server_store: Any, shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rival read the old writer's lease expired, the old writer renewed, the rival
    wrote: the late renewal's read-back waits the settle, finds the rival's record, and
    the old writer writes nothing; the rival holds the store."""
    old = server_store(lease_ttl=3.0)
    a = old.add("Ana moved to Lisbon")
    time.sleep(3.2)
    rival = core._Lease(shared.connect(), 3.0)
    taker, outcome = _acquiring(rival)
    rival_read, old_wrote = threading.Event(), threading.Event()
    current, sleep = rival._current, time.sleep

    def read_then_wait() -> Any:
        found = current()
        if not rival_read.is_set():  # the takeover's read: the old writer renews now
            rival_read.set()
            assert old_wrote.wait(10)
        return found

    def settle(seconds: float) -> None:
        if threading.current_thread() is threading.main_thread():
            old_wrote.set()  # the old writer's renewal is written
        sleep(seconds)

    rival._current = read_then_wait  # type: ignore[method-assign]
    monkeypatch.setattr(core.time, "sleep", settle)
    taker.start()
    assert rival_read.wait(10)
    with pytest.raises(ConflictError, match="at the same moment"):
        old.set_metadata(a.id, {"v": 2})
    taker.join(10)
    assert outcome == [None] and rival._current().get("holder") == rival.holder
    assert server_store(read_only=True).get(a.id).metadata == {}  # nothing was written


def test_a_writer_too_slow_to_renew_its_lease_gives_it_up(
        server_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past :data:`_LEASE_STALL` between the read and the write, a renewal may have
    overwritten a rival's takeover: the writer writes nothing, drops its record, and the
    store opens again at once."""
    writer = server_store(lease_ttl=3.0, policy="meta")  # a policy state to flush at close
    writer.add("Ana moved to Lisbon")
    time.sleep(2.1)  # in the lease's last third: a rival may be taking it
    monkeypatch.setattr(core, "_LEASE_STALL", 0.0)  # as if the process had paused
    with pytest.raises(ConflictError, match=r"took over 0\.0 s"):
        writer.add("Ana likes green tea")
    monkeypatch.undo()
    with pytest.raises(ConflictError, match="lost its writer lease"):
        writer.add("Ana likes green tea")  # however fast it is now: it must reopen
    writer.close()  # writes nothing, raises nothing, and closes
    assert writer.closed
    again = server_store()  # no lease left behind
    assert [n.content for n in again.list()] == ["Ana moved to Lisbon"]


def test_a_reembed_that_loses_its_lease_writes_nothing_more(
        server_store: Any, shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rival's batch in flight is not a re-embedding's to replay once its lease is
    lost (it replayed it, without the lease, while cleaning up)."""
    writer = server_store(lease_ttl=3.0)
    for i in range(3):
        writer.add(f"note {i} about the weather")
    rival = shared.connect()

    class RivalMidway(HashingEmbedder):
        def embed(self, texts: Any) -> Any:
            if not rival.pending_batches():  # type: ignore[attr-defined]
                rival._wal.begin(  # type: ignore[attr-defined]
                    [UpsertOp(codec.META, (codec.meta_record("rival", {}),))])
                time.sleep(2.1)  # the first chunk's check renews the lease ...
                monkeypatch.setattr(core, "_LEASE_STALL", 0.0)  # ... and stalls: lost
            return super().embed(texts)

    with pytest.raises(ConflictError, match="took over"):
        writer.reembed(RivalMidway(dim=64), batch_size=1)
    assert rival.pending_batches() == 1  # type: ignore[attr-defined]
    assert not rival.get(codec.META, [codec.meta_id("rival")])  # not replayed by the loser
    rival.close()


def test_a_slow_server_is_no_stall_where_no_rival_can_be_taking_the_lease(
        shared: Shared) -> None:
    """Taking a lease nobody holds, or renewing one with most of its time left, may be
    slow (a loaded server): only a contended take has the 0.5 s bound (CI once failed a
    fresh open whose lease write took longer)."""
    backend = shared.connect()
    apply, lease_id = backend.apply, codec.meta_id("lease")

    def slow(batch: WriteBatch) -> None:
        if any(r.id == lease_id for op in batch.ops if isinstance(op, UpsertOp)
               for r in op.records):
            time.sleep(core._LEASE_STALL + 0.2)
        apply(batch)

    backend.apply = slow  # type: ignore[method-assign]
    with MemoryStore(backend, clock=FakeClock(), audit_key=bytes(32), lease_ttl=6.0) as store:
        store.add("Ana moved to Lisbon")
        time.sleep(2.1)  # past a third: the next write renews, with ~4 s left
        store.add("Ana likes green tea")
        assert len(store.list()) == 2


def test_a_renewal_that_fails_loses_the_lease_until_the_store_reopens(
        server_store: Any) -> None:
    """A renewal whose write raised may have landed late, over a rival's takeover: the
    writer never writes on that lease again (a retry would write on old state)."""
    writer = server_store(lease_ttl=3.0)
    writer.add("Ana moved to Lisbon")
    time.sleep(1.1)  # a renewal is due
    apply, lease_id = writer.backend.apply, codec.meta_id("lease")

    def times_out(batch: WriteBatch) -> None:
        if any(r.id == lease_id for op in batch.ops if isinstance(op, UpsertOp)
               for r in op.records):
            apply(batch)  # it landed, but the client gave up waiting
            raise MarsBackendError("Chroma could not write: timed out")
        apply(batch)

    writer.backend.apply = times_out  # type: ignore[method-assign]
    with pytest.raises(MarsBackendError, match="timed out"):
        writer.add("Ana likes green tea")
    writer.backend.apply = apply  # type: ignore[method-assign]
    with pytest.raises(ConflictError, match="lost its writer lease"):
        writer.add("Ana likes green tea")
    writer.close()
    again = server_store()
    assert [n.content for n in again.list()] == ["Ana moved to Lisbon"]


@pytest.mark.parametrize("ttl", [0, 2.9, True, "60"])
def test_a_lease_shorter_than_its_take_is_refused(server_store: Any, ttl: object) -> None:
    with pytest.raises(ConfigError, match="lease_ttl must be a number of seconds of at least"):
        server_store(lease_ttl=ttl)


def test_a_reader_never_replays_a_batch_in_flight(server_store: Any,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A leftover intent on a shared server may be the live writer's: a reader that
    replayed it could undo the writer's later writes, so only the lease holder does."""
    writer = server_store()
    writer.add("Ana moved to Lisbon", namespace="u1")
    backend = writer.backend
    intent = backend._wal.begin([UpsertOp(codec.META, (codec.meta_record("probe", {}),))])
    with caplog.at_level("WARNING", logger="mars_core.core"):
        reader = server_store(read_only=True)  # reads again for a while, then as it is
    assert "kept writing" in caplog.text and "Lisbon" not in caplog.text
    assert backend.pending_batches() == 1  # still the writer's to finish
    assert not backend.get(codec.META, [codec.meta_id("probe")])
    assert [n.content for n in reader.list("u1")] == ["Ana moved to Lisbon"]
    backend._wal.commit(intent)


def test_a_reader_leaves_out_memories_added_after_its_state_record(
        server_store: Any, shared: Shared, caplog: pytest.LogCaptureFixture) -> None:
    """A writer adds a memory (linked to an older one) during every read of the reader:
    after its last try the reader keeps the memories its state record counts, and no
    edge to the others."""
    writer = server_store()
    a = writer.add("Ana moved to Lisbon", namespace="u1")
    backend, added = shared.connect(), []
    get = backend.get

    def busy_get(collection: str, ids: Any = None, where: Any = None, **kw: Any) -> Any:
        found = get(collection, ids, where, **kw)
        if collection == codec.META and ids is None:  # the reader has its state record
            added.append(writer.add(f"Ana said something, part {len(added)}", namespace="u1",
                                    links=[("derivesFrom", a.id)]).id)
        return found

    backend.get = busy_get  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger="mars_core.core"):
        reader = MemoryStore(backend, clock=FakeClock(), audit_key=bytes(32), read_only=True)
    assert "kept writing" in caplog.text and len(added) == 6  # every try saw a new batch
    held = {n.id for n in reader.list("u1")}
    assert a.id in held and added[-1] not in held
    assert all(reader.audit.for_node(nid) for nid in held) and reader.verify().ok
    edges = [e for nid in held for e in reader._state.owned.get(nid, [])]
    assert edges and all(e.source in held and e.target in held for e in edges)


def test_a_reader_reads_again_when_the_audit_chain_lags_its_state_record(
        server_store: Any, shared: Shared) -> None:
    """A replica behind the one that served the state record (a Qdrant cluster's weak
    ordering) is not a corrupt store, unless the chain stays short."""
    writer = server_store()
    writer.add("Ana moved to Lisbon", namespace="u1")
    writer.add("Ana likes green tea", namespace="u1")
    lagging = {"reads": 1}

    def connect_lagging() -> VectorBackend:
        backend = shared.connect()
        get = backend.get

        def behind(collection: str, ids: Any = None, where: Any = None, **kw: Any) -> Any:
            found = get(collection, ids, where, **kw)
            if collection == codec.AUDIT and lagging["reads"] > 0:
                lagging["reads"] -= 1
                return found[:-1]
            return found

        backend.get = behind  # type: ignore[method-assign]
        return backend

    reader = MemoryStore(connect_lagging(), audit_key=bytes(32), read_only=True)
    assert len(reader.list("u1")) == 2 and reader.verify().ok
    lagging["reads"] = 100
    with pytest.raises(CorruptStoreError, match="recorded chain head"):
        MemoryStore(connect_lagging(), audit_key=bytes(32), read_only=True)


def test_a_reader_takes_the_audit_chain_the_state_record_names(server_store: Any) -> None:
    """A writer between its batch's audit write and its state write (or a reader that
    read the audit after a later batch appended to it) is not a corrupt store."""
    writer = server_store()
    writer.add("Ana moved to Lisbon", namespace="u1")
    events = len(writer.audit)
    apply = writer.backend.apply

    def all_but_the_state(batch: WriteBatch) -> None:
        for op in batch.ops:
            if op.collection != codec.META and isinstance(op, UpsertOp):
                apply(WriteBatch().upsert(op.collection, op.records))
        raise MarsBackendError("the writer stops here")

    writer.backend.apply = all_but_the_state  # type: ignore[method-assign]
    with pytest.raises(MarsBackendError):
        writer.add("Ana likes green tea", namespace="u1")
    assert len(writer.backend.get(codec.AUDIT)) > events  # on the server: a longer chain
    reader = server_store(read_only=True)
    assert len(reader.audit) == events and reader.verify().ok
    assert "Ana moved to Lisbon" in [n.content for n in reader.list("u1")]


def test_the_next_writer_completes_a_crashed_batch_before_it_reads(
        server_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    crashed = server_store(lease_ttl=3.0)
    crashed.add("Ana moved to Lisbon")
    backend, apply = crashed.backend, crashed.backend._apply

    def first_request_only(ops: Any, *, replay: bool) -> None:
        apply(ops[:1], replay=replay)
        raise MarsBackendError("the writer died here")

    monkeypatch.setattr(backend, "_apply", first_request_only)
    with pytest.raises(MarsBackendError):
        crashed.add("Ana likes green tea")  # the intent is recorded; only memories written
    assert backend.pending_batches() == 1
    lease = crashed._lease
    assert lease is not None
    time.sleep(max(0.0, lease.renewed + lease.ttl - time.time()) + 0.2)
    taker = server_store()  # takes the lease, replays the batch, then reads
    assert [n.content for n in taker.list()] == ["Ana moved to Lisbon", "Ana likes green tea"]
    assert taker.verify().ok and taker.backend.pending_batches() == 0
    taker.add("Ana plays the cello")  # and goes on writing a whole chain
    taker.close()
    reader = server_store(read_only=True)
    assert len(reader.list()) == 3 and reader.verify().ok
    assert all(reader.audit.for_node(n.id) for n in reader.list())  # each insert audited


READER_WRITER = """
import os, pathlib, sys
from mars_core.store import MemoryStore

kind, where, prefix, stop = sys.argv[1], sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
if kind == "chroma-http":
    from mars_core.backends.chroma import ChromaBackend
    host, port = where.rsplit(":", 1)
    backend = ChromaBackend(host=host, port=int(port), collection_prefix=prefix)
else:
    from mars_core.backends.qdrant import QdrantBackend
    backend = QdrantBackend(url=where, api_key=os.environ.get("QDRANT_API_KEY"),
                            collection_prefix=prefix)
with MemoryStore(backend, audit_key=bytes(32), budget=100_000) as store:
    print("ready", flush=True)
    written = 0
    while not stop.exists() and written < 5_000:
        store.add(f"note {written}: the writer keeps writing", namespace="u1")
        written += 1
print(written, flush=True)
"""


def _wait_for_line(out: pathlib.Path, proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line ``proc`` writes to ``out`` (its stdout), within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        text = out.read_text() if out.exists() else ""
        if "\n" in text:
            return text.split("\n", 1)[0]
        time.sleep(0.05)
    raise AssertionError(f"the writer process said nothing (exit {proc.poll()})")


@pytest.mark.slow
def test_readers_open_while_another_process_writes(shared: Shared,
                                                   tmp_path: pathlib.Path) -> None:
    """Readers opened again and again beside a writer process that never pauses never
    see a broken store, never replay its batches, hold no memory whose insert their
    audit chain lacks, and see its writes grow; once it is done, all of them."""
    if shared.where is None:
        pytest.skip("a client shared in one process: no second process can reach it")
    with MemoryStore(shared.connect(), audit_key=bytes(32)) as seed:
        seed.add("note: before the writer started", namespace="u1")
    stop, out, err = tmp_path / "stop", tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:  # files: no pipe to fill up
        proc = subprocess.Popen([sys.executable, "-c", READER_WRITER, shared.kind,
                                 shared.where, shared.prefix, str(stop)],
                                stdout=stdout, stderr=stderr, text=True)
    try:
        assert _wait_for_line(out, proc, 120) == "ready", err.read_text()
        seen: list[int] = []
        while len(seen) < 6 and proc.poll() is None:  # six opens while it writes
            with MemoryStore(shared.connect(), read_only=True) as reader:
                assert reader.verify().ok
                memories = reader.list("u1")
                assert all(reader.audit.for_node(n.id) for n in memories)
                seen.append(len(memories))
        stop.touch()
        assert proc.wait(timeout=120) == 0, err.read_text()
    finally:
        proc.kill()
    written = int(out.read_text().split()[1])
    assert len(seen) == 6 and seen == sorted(seen) and seen[0] >= 1 and seen[-1] > seen[0]
    with MemoryStore(shared.connect(), read_only=True) as reader:
        assert len(reader.list("u1")) == written + 1 and reader.verify().ok


def test_read_only_needs_an_existing_store_and_creates_nothing(
        server_store: Any, shared: Shared) -> None:
    with pytest.raises(ConfigError, match="existing store"):
        server_store(read_only=True)
    probe = shared.connect()
    assert probe._lookup(codec.META) is None and probe._lookup("_wal") is None  # type: ignore[attr-defined]
    probe.close()


def test_a_reader_sends_no_write_to_the_server(server_store: Any, shared: Shared) -> None:
    """Not at open, not to read, recall, render a context, refresh or close: no
    collection made or tuned, no record written, no intent begun."""
    writer = server_store()
    a = writer.add("Ana moved to Lisbon", namespace="u1")
    writer.add("Ana's friend Bruno plays the cello", namespace="u1")
    backend = shared.connect()
    writes: list[str] = []
    for name in ("_ensure", "_apply"):
        setattr(backend, name, lambda *args, _name=name, **kw: writes.append(_name))
    backend._wal.begin = lambda ops: writes.append("intent")  # type: ignore[attr-defined]
    reader = MemoryStore(backend, clock=FakeClock(), audit_key=bytes(32), read_only=True)
    assert reader.retrieve("Lisbon", namespace="u1")[0].id == a.id
    assert reader.recall(entity="Ana", namespace="u1")
    assert "Lisbon" in reader.render_context("Where does Ana live?", namespace="u1")
    writer.add("Ana likes green tea", namespace="u1")
    assert reader.refresh() and len(reader.list("u1")) == 3
    reader.close()
    assert writes == []
    assert writer.get(a.id).access_count == 0  # and so no access was recorded


def test_a_reader_refreshes_to_see_the_writers_later_writes(server_store: Any) -> None:
    writer = server_store()
    a = writer.add("Ana moved to Lisbon", namespace="u1")
    reader = server_store(read_only=True)
    assert reader.refresh() is False  # nothing new: one small read
    b = writer.add("Ana likes green tea", namespace="u1")
    assert [n.id for n in reader.list("u1")] == [a.id]  # as of its open
    assert reader.refresh() is True
    assert [n.id for n in reader.list("u1")] == [a.id, b.id] and reader.verify().ok
    assert reader.retrieve("green tea", namespace="u1")[0].id == b.id
    assert len(reader.audit) == len(writer.audit)
    assert asyncio.run(reader.arefresh()) is False and writer.refresh() is False


def test_a_failed_refresh_leaves_the_reader_as_it_was(server_store: Any) -> None:
    writer = server_store()
    a = writer.add("Ana moved to Lisbon", namespace="u1")
    reader = server_store(read_only=True)
    before = (reader.stats(), reader.audit.head, len(reader.audit), reader.config,
              reader.embedder, dict(reader._colls), reader._state, reader.policy)
    writer.reembed(HashingEmbedder(dim=64))  # the reader's embedder no longer fits
    with pytest.raises(EmbeddingMismatchError):
        reader.refresh()
    after = (reader.stats(), reader.audit.head, len(reader.audit), reader.config,
             reader.embedder, dict(reader._colls), reader._state, reader.policy)
    assert after[:6] == before[:6] and after[6] is before[6] and after[7] is before[7]
    assert [n.id for n in reader.list("u1")] == [a.id] and reader.verify().ok
    assert reader.retrieve("Lisbon", namespace="u1")[0].id == a.id
