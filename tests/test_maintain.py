"""store.maintain(): TTL, retention horizons, dedup with a merge log, reflection."""

from __future__ import annotations

from datetime import timedelta

import pytest
from invariants import check_invariants

from mars_core import FakeClock, MemoryStatus, TaskStatus
from mars_core.testing import StoreFactory


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=bytes(range(32)), nlp="rules", budget=100_000)


def test_ttl_expiry_archives_by_type_and_spares_protected(mk: StoreFactory) -> None:
    clock = FakeClock()
    s = mk(clock=clock)
    chat = s.add("we talked about the weather")             # episodic: 30 days
    fact = s.add("Ana prefers tea", type="semantic")        # semantic: 730 days
    goal = s.add("renew passport", type="task", payload={"status": TaskStatus.ACTIVE})
    pinned = s.add("pinned note", pinned=True)
    clock.advance(timedelta(days=31))
    report = s.maintain(dedup=False, reflect=False)
    assert report["default"]["expired"] == 1
    assert s.get(chat.id).status is MemoryStatus.ARCHIVED
    assert "expired: TTL" in s.explain(chat.id).rationale
    assert s.get(fact.id).is_active and s.get(goal.id).is_active and s.get(pinned.id).is_active
    check_invariants(s)


def test_user_retention_horizon_overrides_the_default(mk: StoreFactory) -> None:
    clock = FakeClock()
    s = mk(clock=clock)
    fact = s.add("Ana prefers tea", type="semantic")
    s.set_preferences({"retention_days": {"semantic": 7}})
    clock.advance(timedelta(days=8))
    s.maintain(dedup=False, reflect=False)
    assert s.get(fact.id).status is MemoryStatus.ARCHIVED


def test_dedup_merges_the_older_duplicate_into_the_newer(mk: StoreFactory) -> None:
    s = mk()
    old = s.add("the meeting with Bo is on Monday at 10")
    other = s.add("buy oat milk and bread")
    new = s.add("the meeting with Bo is on Monday at 10!")
    report = s.maintain(ttl=False, reflect=False)
    assert report["default"]["merged"] == 1
    assert s.get(old.id).status is MemoryStatus.ARCHIVED and s.get(other.id).is_active
    assert s.get(new.id).metadata["also_from"] == [old.id]
    ops = [e.op.value for e in s.audit.events()[-2:]]
    assert ops == ["evict", "metadata"] and "duplicate of" in s.explain(old.id).rationale
    check_invariants(s)


def test_reflection_in_maintenance_consolidates_when_near_budget(mk: StoreFactory) -> None:
    s = mk(budget=280)  # 24 turns use ~264 tokens: above 0.9 of the budget
    for i in range(24):
        s.add(f"standup: the deploy pipeline is broken again, ticket {i % 3}")
    before = s.stats()["namespaces"]["default"]["tokens"]
    report = s.maintain(ttl=False, dedup=False)
    assert report["default"]["summarised"] >= 1
    after = s.stats()["namespaces"]["default"]["tokens"]
    assert after < before
    summary = s.list(type="semantic")[0]
    assert summary.depth == 1 and s.explain(summary.id).events[0].op.value == "summarise"
    check_invariants(s)
    assert s.maintain(ttl=False, dedup=False, reflect=False) == {
        "default": {"expired": 0, "archived": 0, "merged": 0, "summarised": 0}}
