"""Audit: keyed hashes, chaining, verification finds edits, deletions and reorders."""

from __future__ import annotations

from mars_core.audit import AuditLog, AuditOp


def build(n: int = 5) -> AuditLog:
    log = AuditLog(b"k" * 32)
    for i in range(n):
        txn = log.begin()
        txn.add(op=AuditOp.INSERT, namespace="ns", node_ids=[f"n{i}"], rationale="stored",
                step=i, at=None, contents={f"n{i}": f"secret text {i}"})
        log.commit(txn)
    return log


def test_events_hold_keyed_hashes_not_text() -> None:
    log = build(1)
    ev = log.events()[0]
    assert "secret" not in ev.model_dump_json()
    assert ev.content_hashes["n0"] == log.content_hash("secret text 0")
    assert AuditLog(b"j" * 32).content_hash("secret text 0") != ev.content_hashes["n0"]


def test_verify_accepts_an_intact_chain() -> None:
    log = build()
    assert log.verify().ok and log.verify((5, log.head)).ok


def test_verify_finds_an_edit() -> None:
    log = build()
    evs = log.events()
    evs[2] = evs[2].model_copy(update={"rationale": "tampered"})
    log.load(evs)
    rep = log.verify()
    assert not rep.ok and rep.first_bad_seq == 2


def test_verify_finds_a_deletion_and_a_reorder() -> None:
    log = build()
    evs = log.events()
    head = (len(evs), log.head)
    log.load(evs[:2] + evs[3:])
    assert not log.verify().ok
    log.load(evs[:4])
    assert log.verify().ok and not log.verify(head).ok  # truncated tail found via the head
    swapped = [evs[0], evs[2].model_copy(update={"seq": 1}), evs[1].model_copy(update={"seq": 2})]
    log.load(swapped)
    assert not log.verify().ok


def test_index_by_node() -> None:
    log = build(3)
    assert [e.seq for e in log.for_node("n1")] == [1]
