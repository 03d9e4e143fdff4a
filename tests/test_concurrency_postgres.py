"""Several writers of one PostgreSQL store: writers of one namespace take turns, writers
of different namespaces do not wait for each other, a call planned on a namespace that
another writer changed before it committed is planned again, and the budget and the
audit chains hold at every commit.

The interleavings are forced, never timed: a child process holds a namespace's lock
until the test writes a line to its stdin, and an embedder hook (the embedder runs
after a call has read its namespace and before it commits) lets another store commit
to the namespace at exactly that moment. ``lock_timeout`` only bounds a wait that the
test has made certain (a lock held until the test releases it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import children
import numpy as np
import numpy.typing as npt
import pytest

import mars_core
from mars_core import MemoryStore
from mars_core.audit import AuditOp
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.engine.calls import ATTEMPTS
from mars_core.errors import ConcurrentWriteError, ConflictError

KEY = bytes(range(32))
WAIT = 60.0  # a guard against a hang, never a measured duration
SIZE = "about the garden, the trains and the weather"


class HookedEmbedder:
    """The hashing embedder, calling ``hook`` when it embeds ``trigger`` (after the
    store read the namespace, before it commits)."""

    def __init__(self, trigger: str, hook: Callable[[int], None]) -> None:
        self._inner = HashingEmbedder()
        self.name, self.dim = self._inner.name, self._inner.dim
        self.trigger, self.hook, self.calls = trigger, hook, 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.trigger in texts:
            self.calls += 1
            self.hook(self.calls)
        return self._inner.embed(texts)


@pytest.fixture
def stores(postgres_url: str) -> Iterator[Callable[..., MemoryStore]]:
    made: list[MemoryStore] = []

    def factory(**kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        store = MemoryStore.open(postgres_url, audit_key=KEY, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


def _inserted(store: MemoryStore, namespace: str) -> list[str]:
    return [i for e in store.audit.events(namespace) if e.op == AuditOp.INSERT
            for i in e.node_ids]


def _tokens(store: MemoryStore, namespace: str) -> int:
    return int(store.stats(namespace)["namespaces"][namespace]["tokens"])


def test_a_call_planned_on_a_namespace_changed_since_is_planned_again(
        stores: Callable[..., MemoryStore]) -> None:
    first = stores(budget=30)
    early = first.add(f"first note {SIZE}", namespace="shared")
    text_a, text_b = f"second note {SIZE}", f"third note {SIZE}"
    landed: list[str] = []

    def commit_in_between(call: int) -> None:
        if call == 1:  # the second store has read "shared": the first one commits now
            landed.append(first.add(text_a, namespace="shared").id)

    second = stores(embedder=HookedEmbedder(text_b, commit_in_between))
    assert [n.id for n in second.list("shared")] == [early.id]  # its views are cached
    late = second.add(text_b, namespace="shared")
    assert second.embedder.calls == 2  # type: ignore[attr-defined]  # planned twice
    weights = early.weight + late.weight + first.get(landed[0], namespace="shared").weight
    assert weights > 30  # the three do not fit: the second plan had to forget one
    for store in (first, second):
        assert _tokens(store, "shared") <= 30
        assert _inserted(store, "shared") == [early.id, landed[0], late.id]  # none lost
        assert store.verify().ok
    assert second.get(early.id, namespace="shared").status.value == "archived"


def test_a_namespace_that_keeps_changing_gives_up_after_the_attempts(
        stores: Callable[..., MemoryStore]) -> None:
    first = stores()
    first.add("the namespace exists", namespace="busy")
    second = stores(embedder=HookedEmbedder(
        "never lands", lambda call: first.add(f"change {call}", namespace="busy")))
    before = len(second.audit)
    with pytest.raises(ConcurrentWriteError, match="changed by another process"):
        second.add("never lands", namespace="busy")
    assert second.embedder.calls == ATTEMPTS  # type: ignore[attr-defined]
    assert len(second.audit) == before + ATTEMPTS  # only the first store's changes
    assert "never lands" not in [n.content for n in second.list("busy")]
    assert second.verify().ok



def test_an_archived_memory_erased_while_a_retrieve_reads_the_archive_is_read_again(
        stores: Callable[..., MemoryStore]) -> None:
    first = stores(budget=30)
    for room in ("the old garden shed", "the new greenhouse", "the attic", "the cellar"):
        first.add(f"{room} {SIZE}", namespace="shelf")
    old = first.list("shelf", status="archived")[0]  # the budget made room

    def erase_in_between(call: int) -> None:
        if call == 1:  # the second store listed "shelf" but has not read its archive yet
            first.erase(old.id, namespace="shelf")

    question = "where is the garden shed?"
    second = stores(embedder=HookedEmbedder(question, erase_in_between))
    assert old.id not in [n.id for n in second.list("shelf")]  # active ones read alone
    hits = second.retrieve(question, namespace="shelf")
    assert second.embedder.calls == 2  # type: ignore[attr-defined]  # read again, once
    assert old.id not in [h.node.id for h in hits]
    assert old.id not in [n.id for n in second.list("shelf", status="archived")]
    assert second.verify().ok


HOLDER = """
import sys
from mars_core.storage import PostgresRecordStore

records = PostgresRecordStore(sys.argv[1])
with records.write() as tx:
    tx.lock_namespaces([sys.argv[2]])
    print("holding", flush=True)
    sys.stdin.readline()  # hold the namespace until the test says so
records.close()
print("released", flush=True)
"""


def _child_env() -> dict[str, str]:
    root = str(pathlib.Path(mars_core.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}


def test_another_process_holding_a_namespace_blocks_it_and_no_other(
        postgres_url: str, stores: Callable[..., MemoryStore]) -> None:
    patient = stores(lock_timeout=WAIT)
    hasty = stores(lock_timeout=0.3)
    patient.add("the namespace exists", namespace="held")
    holder = children.popen([sys.executable, "-c", HOLDER, postgres_url, "held"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=_child_env())
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "holding"
        other = patient.add("another namespace commits meanwhile", namespace="free")
        assert [n.id for n in hasty.list("free")] == [other.id]
        before = (len(hasty.audit), hasty.stats("held")["namespaces"]["held"])
        with pytest.raises(ConflictError, match="lock_timeout"):
            hasty.add("waits for the holder", namespace="held")
        assert (len(hasty.audit), hasty.stats("held")["namespaces"]["held"]) == before
        assert hasty.list("free")[0].id == other.id  # the store goes on
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        assert holder.wait(timeout=WAIT) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    landed = hasty.add("after the holder let go", namespace="held")
    assert landed.id in {n.id for n in patient.list("held")}
    assert patient.verify().ok


def test_writers_racing_on_one_namespace_lose_nothing_and_keep_the_budget(
        stores: Callable[..., MemoryStore]) -> None:
    """Real threads, each with a store (a connection) of its own, adding to one
    namespace and to one of their own: whatever the interleaving, every acknowledged
    write is in the audit, the budget holds and every chain verifies."""
    writers = [stores(budget=40) for _ in range(3)]
    for store in writers:
        store.list("shared")  # every one has the namespace cached
    acked: list[list[str]] = [[] for _ in writers]
    gave_up: list[int] = []
    failures: list[BaseException] = []
    start = threading.Barrier(len(writers))

    def run(n: int) -> None:
        try:
            start.wait(WAIT)
            for i in range(5):
                for namespace in ("shared", f"own-{n}"):
                    try:
                        node = writers[n].add(f"writer {n} note {i} {SIZE}", namespace=namespace)
                        acked[n].append(node.id)
                    except ConcurrentWriteError:
                        gave_up.append(n)  # documented: nothing written, may be repeated
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not failures and not any(t.is_alive() for t in threads)
    check = stores()
    inserted = {ns: _inserted(check, ns) for ns in ["shared", *(f"own-{n}" for n in range(3))]}
    every = {i for ids in inserted.values() for i in ids}
    assert {i for ids in acked for i in ids} <= every
    assert sum(map(len, acked)) == len(every)  # and nothing that was not acknowledged
    for ns in inserted:
        assert _tokens(check, ns) <= 40
    assert check.verify().ok
