"""A vector index on a server shared by several writing processes follows every
process's commits: its position is kept in the records, each process applies the change
log from there (one at a time) before it queries, a process killed with commits not yet
in the index leaves nothing out, and the log is never pruned past what a registered index
holds. On a real PostgreSQL server and a real ``chroma run`` server (and the Qdrant
server at ``$QDRANT_URL`` when it is set); the other process is a child on pipes, killed
with ``SIGKILL``."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import children as forked
import pytest

import mars_core
from mars_core import MemoryStore
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.model import MemoryStatus
from mars_core.storage import PostgresRecordStore
from mars_core.testing import vector_index

KEY = bytes(range(32))
WAIT = 120.0  # a guard against a hang, never a measured duration

CHILD = """
import sys
from mars_core import MemoryStore

store = MemoryStore.open(sys.argv[1], index=sys.argv[2], audit_key=bytes(range(32)))
for line in sys.stdin:
    command, _, text = line.rstrip("\\n").partition(" ")
    if command == "add":
        print(store.add(text, namespace="shared").id, flush=True)
    elif command == "find":
        print("|".join(h.node.content for h in store.retrieve(text, namespace="shared",
                                                                   k=20)), flush=True)
"""


def _env() -> dict[str, str]:
    root = str(pathlib.Path(mars_core.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}


class Child:
    """Another process of the store, driven line by line."""

    def __init__(self, url: str, index: str) -> None:
        self.proc = forked.popen([sys.executable, "-c", CHILD, url, index],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env=_env())

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=WAIT) == -signal.SIGKILL
        for stream in (self.proc.stdin, self.proc.stdout):
            assert stream is not None
            stream.close()


@pytest.fixture(params=["chroma", "qdrant-url"])
def index_url(request: pytest.FixtureRequest) -> str:
    """A place of this test's own on the session's Chroma server, or on the Qdrant server
    at ``$QDRANT_URL`` when it is set (none can run here: skipped otherwise)."""
    prefix = f"t{uuid.uuid4().hex[:12]}_"
    if request.param == "qdrant-url":
        url = os.environ.get("QDRANT_URL")
        if not url:
            pytest.skip("set QDRANT_URL (and QDRANT_API_KEY) to share a Qdrant server")
        return f"qdrant+{url.rstrip('/')}?prefix={prefix}"
    server: Any = request.getfixturevalue("chroma_server")
    return f"chroma://{server.host}:{server.port}?prefix={prefix}"


def _held(store: MemoryStore, text: str) -> set[str]:
    """The ids the server's index holds in "shared" near ``text`` (asked directly, not
    through retrieval, whose lexical half reads the records)."""
    vector = HashingEmbedder().embed([text])[0]
    index = vector_index(store)
    return {i for i, _ in index.query("shared", MemoryStatus.ACTIVE, vector, 50)}


@pytest.fixture
def children() -> Iterator[list[Child]]:
    made: list[Child] = []
    yield made
    for child in made:
        if child.proc.poll() is None:
            child.kill()


def _texts(store: MemoryStore, query: str) -> list[str]:
    return [h.node.content for h in store.retrieve(query, namespace="shared", k=20)]


def test_a_process_finds_what_another_committed_even_when_it_was_killed(
        postgres_url: str, index_url: str, children: list[Child]) -> None:
    store = MemoryStore.open(postgres_url, index=index_url, audit_key=KEY, clock=FakeClock())
    try:
        mine = store.add("Ana moved to Lisbon in May", namespace="shared")
        assert _texts(store, "Ana Lisbon") == [mine.content]  # bound, current
        other = Child(postgres_url, index_url)
        children.append(other)
        assert other.ask("find Ana Lisbon") == mine.content  # it applies my commit
        theirs = [other.ask("add Bo is allergic to peanuts"),
                  other.ask("add The team meets every Tuesday at nine")]
        other.kill()  # never flushed, never closed: its commits are only in the records
        assert _texts(store, "peanuts allergic")[0] == "Bo is allergic to peanuts"
        assert {mine.id, *theirs} <= _held(store, "Bo is allergic to peanuts")
        assert "The team meets every Tuesday at nine" in _texts(store, "team Tuesday")
        fresh = Child(postgres_url, index_url)
        children.append(fresh)
        assert fresh.ask("find Bo peanuts").split("|")[0] == "Bo is allergic to peanuts"
        store.erase(mine.id, namespace="shared")
        assert "Ana moved to Lisbon in May" not in fresh.ask("find Ana Lisbon")
        assert _held(store, "Ana moved to Lisbon in May") == set(theirs)
        assert store.verify().ok
    finally:
        store.close()


def test_the_log_is_never_pruned_past_a_registered_index(
        postgres_url: str, index_url: str) -> None:
    store = MemoryStore.open(postgres_url, index=index_url, audit_key=KEY, clock=FakeClock())
    records = PostgresRecordStore(postgres_url)
    try:
        with records.write() as tx:
            tx.set_index_position("another@server", 1)  # an index that lags behind
        for i in range(4):
            store.add(f"note {i} about trains", namespace="shared")
        store.close()  # applies the log to its index, marks it, prunes the log
        with records.read() as tx:
            positions = tx.index_positions()
            assert positions["another@server"] == 1
            assert min(positions.values()) == 1
            assert tx.first_change() == 2  # everything after 1 is kept for it
            assert max(positions.values()) == tx.last_change()  # the shared one is current
    finally:
        store.close()
        records.close()


def test_writes_commit_and_return_while_the_shared_index_is_away(
        postgres_url: str, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """Commits stand and return when the shared index cannot follow them (a WARNING,
    tried again only FLUSH_AT changes later, not at every commit); queries raise until it
    is back; an erasure returns its receipt saying so; close does not raise. A server of
    this test's own, stopped half-way; then a new one is built from the records."""
    from mars_core.bench.chroma_server import chroma_cli, chroma_server
    from mars_core.engine.indexing import FLUSH_AT
    from mars_core.errors import MarsBackendError

    if chroma_cli() is None:
        pytest.skip("needs the chroma CLI (mars-memory[chroma])")
    with contextlib.ExitStack() as running:
        server = running.enter_context(chroma_server(tmp_path))
        index = f"chroma://{server.host}:{server.port}?prefix=away_"
        store = MemoryStore.open(postgres_url, index=index, audit_key=KEY, clock=FakeClock())
        try:
            gone = store.add("Ana moved to Lisbon in May", namespace="shared")
            assert _texts(store, "Ana Lisbon") == [gone.content]
            running.close()  # the index server goes away
            with caplog.at_level(logging.WARNING, logger="mars_core.engine.indexing"):
                bulk = store.add_many([f"note {i} about trains" for i in range(FLUSH_AT)],
                                      namespace="shared")  # past FLUSH_AT: it tries
                kept = [store.add(f"a later note {i}", namespace="shared") for i in range(3)]
                tried = [r for r in caplog.records if "could not follow" in r.getMessage()]
                assert len(tried) == 1  # once, not at every commit
                with pytest.raises(MarsBackendError):
                    store.retrieve("trains", namespace="shared")
                receipt = store.erase(gone.id, namespace="shared")
                assert list(receipt.erased) == [gone.id]
                assert "chroma: unreachable" in receipt.physical
            store.close()
        finally:
            store.close()
    with MemoryStore.open(postgres_url, index="numpy", audit_key=KEY) as check:  # all stood
        ids = {n.id for n in check.list("shared")}
        assert {n.id for n in bulk} | {n.id for n in kept} == ids and gone.id not in ids
    (tmp_path / "again").mkdir()
    with chroma_server(tmp_path / "again") as fresh, MemoryStore.open(
            postgres_url, index=f"chroma://{fresh.host}:{fresh.port}?prefix=away_",
            audit_key=KEY) as store:  # another server: built from the records
        assert _texts(store, "a later note 2")[0] == "a later note 2"
        assert gone.content not in _texts(store, "Ana Lisbon")
        assert store.verify().ok
