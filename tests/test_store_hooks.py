"""The store hooks the integrations use: reinforce, set_metadata, update(metadata=),
render_context(evidence_only=), namespaces()."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.errors import NotFoundError, ValidationError


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(budget=500, clock=FakeClock())
    yield s
    s.close()


def test_reinforce_records_one_access_per_memory_and_one_event(store: MemoryStore) -> None:
    a = store.add("Ana lives in Lisbon", type="semantic")
    b = store.add("Bo plays drums", type="semantic")
    before = len(store.audit)
    store.reinforce([a.id, a.id])
    assert store.get(a.id).access_count == 1 and store.get(b.id).access_count == 0
    events = store.audit.events()[before:]
    assert [e.op.value for e in events] == ["access"]
    assert events[0].node_ids == (a.id,) and "credited use" in events[0].rationale


def test_reinforce_refuses_foreign_or_archived_memories_and_changes_nothing(
        store: MemoryStore) -> None:
    a = store.add("Ana lives in Lisbon", type="semantic")
    other = store.add("Cy likes tea", type="semantic", namespace="cy")
    gone = store.add("old fact", type="semantic")
    store.forget(gone.id)
    before = store.export_jsonld()
    with pytest.raises(ValidationError):
        store.reinforce([gone.id])
    for ids in ([a.id, other.id], ["nope"]):  # another namespace's id is as good as missing
        with pytest.raises(NotFoundError):
            store.reinforce(ids)
    assert store.export_jsonld() == before


def test_set_metadata_changes_metadata_expiry_and_pin_in_place(store: MemoryStore) -> None:
    a = store.add("Ana lives in Lisbon", type="semantic", metadata={"k": 1})
    when = datetime(2030, 1, 1, tzinfo=UTC)
    node = store.set_metadata(a.id, {"k": 2}, expires_at=when, pinned=True)
    assert (node.id, node.content, node.metadata, node.expires_at, node.pinned) == (
        a.id, a.content, {"k": 2}, when, True)
    assert store.get(a.id) == node
    last = store.audit.events()[-1]
    assert last.op.value == "metadata" and "Lisbon" not in last.model_dump_json()
    assert store.set_metadata(a.id, expires_at=None).expires_at is None
    before = store.export_jsonld()
    with pytest.raises(ValidationError):
        store.set_metadata(a.id, {"bad": object()})
    assert store.export_jsonld() == before


def test_update_with_metadata_replaces_it_on_the_new_version(store: MemoryStore) -> None:
    a = store.add("Ana lives in Lisbon", type="semantic", metadata={"v": 1})
    b = store.update(a.id, "Ana lives in Porto", metadata={"v": 2})
    assert b.metadata == {"v": 2} and store.get(a.id).metadata == {"v": 1}
    c = store.update(b.id, "Ana lives in Faro")
    assert c.metadata == {"v": 2}


def test_update_keeps_the_expiry_unless_told_and_is_one_transaction(store: MemoryStore) -> None:
    when = store.clock.now() + timedelta(days=3)
    a = store.add("Ana lives in Lisbon", type="semantic", expires_at=when)
    b = store.update(a.id, "Ana lives in Porto")
    assert b.expires_at == when  # a new version keeps the memory's expiry
    events = len(store.audit.events())
    later = when + timedelta(days=1)
    c = store.update(b.id, "Ana lives in Faro", expires_at=later)
    ops = [e.op.value for e in store.audit.events()[events:]]
    assert c.expires_at == later and "update" in ops and "metadata" not in ops  # one write
    assert store.update(c.id, "Ana lives in Braga", expires_at=None).expires_at is None
    before = store.export_jsonld()
    with pytest.raises(ValidationError):
        store.update(store.list()[-1].id, "x", expires_at="tomorrow")  # type: ignore[arg-type]
    assert store.export_jsonld() == before
    assert store.read_only is False


def test_render_context_evidence_only_drops_the_conversation(store: MemoryStore) -> None:
    store.observe("user", "I am allergic to peanuts.")
    store.observe("user", "The weather is nice today.")
    full = store.render_context("what am I allergic to?", budget_tokens=300)
    only = store.render_context("what am I allergic to?", budget_tokens=300,
                                evidence_only=True)
    assert "ACTIVE CONVERSATION" in full and "ACTIVE CONVERSATION" not in only
    assert "peanuts" in only


def test_namespaces_lists_those_holding_memories(store: MemoryStore) -> None:
    assert store.namespaces() == []
    store.add("x y z", namespace="b")
    store.add("x y z", namespace="a")
    assert store.namespaces() == ["a", "b"]


def test_reinforce_credits_the_policy_only_when_asked(store: MemoryStore) -> None:
    a = store.add("Ana lives in Lisbon", type="semantic")
    credited: list[list[str]] = []
    real = store.policy_for().on_credit

    def spy(ns: str, used: list[str], offered: list[str], step: int) -> None:
        credited.append(used)
        real(ns, used, offered, step)

    store.policy_for().on_credit = spy  # type: ignore[method-assign]
    store.reinforce([a.id], credit=False)
    assert credited == [] and store.get(a.id).access_count == 1
    store.reinforce([a.id])
    assert credited == [[a.id]] and store.get(a.id).access_count == 2
