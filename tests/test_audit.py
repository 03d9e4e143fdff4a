"""Audit: keyed hashes, chaining per namespace, verification finds edits, deletions and
reorders — in the chain builder and in a store's record store."""

from __future__ import annotations

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.audit import GENESIS, AuditChain, AuditEvent, AuditOp
from mars_core.testing import record_store


def build(n: int = 5, namespace: str = "ns") -> tuple[AuditChain, list[AuditEvent]]:
    chain = AuditChain(b"k" * 32)
    events: list[AuditEvent] = []
    for i in range(n):
        txn = chain.begin(namespace, len(events), events[-1].hash if events else GENESIS)
        txn.add(op=AuditOp.INSERT, namespace=namespace, node_ids=[f"n{i}"], rationale="stored",
                step=i, at=None, contents={f"n{i}": f"secret text {i}"})
        events += txn.events
    return chain, events


def test_events_hold_keyed_hashes_not_text() -> None:
    chain, events = build(1)
    ev = events[0]
    assert "secret" not in ev.model_dump_json()
    assert ev.content_hashes["n0"] == chain.content_hash("secret text 0")
    assert AuditChain(b"j" * 32).content_hash("secret text 0") != ev.content_hashes["n0"]


def test_a_namespace_token_is_the_same_whichever_name_came_before() -> None:
    chain = AuditChain(b"k" * 32)  # it remembers the last name it tokenised
    names = ["alice", "bob", "alice", "alice", "", "erased//" + "0" * 32 + "//0", "bob"]
    tokens = [chain.namespace_token(n) for n in names]
    assert tokens == [AuditChain(b"k" * 32).namespace_token(n) for n in names]
    assert len({tokens[0], tokens[1], tokens[4]}) == 3 and tokens[5] == "0" * 32
    assert AuditChain(b"j" * 32).namespace_token("alice") != tokens[0]


def test_verify_accepts_an_intact_chain() -> None:
    chain, events = build()
    assert chain.verify(events).ok and chain.verify(events, (5, events[-1].hash)).ok


def test_verify_finds_an_edit() -> None:
    chain, events = build()
    events[2] = events[2].model_copy(update={"rationale": "tampered"})
    rep = chain.verify(events)
    assert not rep.ok and rep.first_bad_seq == 2


def test_verify_finds_a_deletion_and_a_reorder() -> None:
    chain, events = build()
    head = (len(events), events[-1].hash)
    assert not chain.verify(events[:2] + events[3:]).ok
    assert chain.verify(events[:4]).ok and not chain.verify(events[:4], head).ok  # truncated
    swapped = [events[0], events[2].model_copy(update={"seq": 1}),
               events[1].model_copy(update={"seq": 2})]
    assert not chain.verify(swapped).ok


def test_a_chain_takes_only_its_own_namespace() -> None:
    chain = AuditChain(b"k" * 32)
    txn = chain.begin("a", 0, GENESIS)
    with pytest.raises(ValueError, match="chain"):
        txn.add(op=AuditOp.INSERT, namespace="b", rationale="x", step=0, at=None)


def test_each_namespace_has_its_own_chain_in_a_store() -> None:
    with MemoryStore(clock=FakeClock(), audit_key=b"k" * 32) as store:
        a = store.add("Ana likes tea", namespace="a")
        store.add("Bo likes jazz", namespace="b")
        store.add("Ana moved to Lisbon", namespace="a")
        assert [e.seq for e in store.audit.events("a")] == [0, 1]
        assert [e.seq for e in store.audit.events("b")] == [0]
        assert [e.namespace for e in store.audit.events()] == ["a", "b", "a"]  # commit order
        assert [e.op for e in store.audit.for_node(a.id)] == [AuditOp.INSERT]
        assert len(store.audit) == 3 and store.verify().ok
        head = store.audit.head
        store.add("Bo plays chess", namespace="b")
        assert store.audit.head != head


def test_a_store_finds_an_edited_or_dropped_event() -> None:
    with MemoryStore(clock=FakeClock(), audit_key=b"k" * 32) as store:
        for i in range(3):
            store.add(f"memory number {i}", namespace="x")
        records = record_store(store)
        with records.write() as tx:  # someone edits an event in the database
            tx._run("UPDATE audit SET body = replace(body, 'stored', 'STORED') "  # type: ignore[attr-defined]
                    "WHERE namespace = 'x' AND seq = 1")
        report = store.verify()
        assert not report.ok and report.first_bad_seq == 1 and "'x'" in report.reason
        with records.write() as tx:  # ... or drops the newest one
            tx._run("UPDATE audit SET body = replace(body, 'STORED', 'stored')")  # type: ignore[attr-defined]
            tx._run("DELETE FROM audit WHERE namespace = 'x' AND seq = 2")  # type: ignore[attr-defined]
        report = store.verify()
        assert not report.ok and "missing at the end" in report.reason
