"""Elastic budgeting (seed 000 §6.9.2): the budget rises under stress and returns to B0.

"Operate at a cost-efficient baseline B0 and temporarily raise capacity when online
telemetry detects stress (rising trigger rate, falling hit rate), contracting when load
normalizes." Stress here is observable: the policy fires on most writes *and* retrieval is
served by the archive tier; calm is retrieval served by the active memories again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mars_core import MemoryStore
from mars_core.budget import ElasticBudget, ElasticState
from mars_core.errors import ConfigError, ValidationError
from mars_core.testing import StoreFactory

KEY = b"k" * 32
ELASTIC = {"window": 4, "cooldown": 2, "max_factor": 1.5, "step": 0.1}
WORDS = ["lisbon", "piano", "garden", "invoice", "sister", "doctor", "train", "coffee",
         "berlin", "meeting", "deadline", "project", "paris", "cat", "dog", "rain", "tea",
         "tennis", "violin", "harbour", "museum", "bakery", "bicycle", "river"]


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(elastic=ELASTIC, budget=100, policy="fifo", audit_key=KEY,
                                    nlp="off", sensitivity_scoring=False)


def fact(i: int) -> str:
    return f"note {i}: the {WORDS[i % len(WORDS)]} story number {i} ends well"


def budget(store: MemoryStore) -> int:
    return int(store.stats("default")["namespaces"]["default"]["budget"])


def script(store: MemoryStore) -> list[tuple[str, int]]:
    """Write 40 notes, asking after every one for an old note (the archive answers), then
    write 40 more asking for the newest (the active memories answer). Returns (phase,
    budget) after each write."""
    seen = []
    for i in range(40):
        store.add(fact(i))
        store.retrieve(f"the {WORDS[max(0, i - 12) % len(WORDS)]} story number {max(0, i - 12)}",
                       k=2, relative_cutoff=0)
        assert store.stats()["namespaces"]["default"]["tokens"] <= budget(store)
        seen.append(("stress", budget(store)))
    for i in range(40, 80):
        store.add(fact(i))
        store.retrieve(f"the {WORDS[i % len(WORDS)]} story number {i}", k=1)
        assert store.stats()["namespaces"]["default"]["tokens"] <= budget(store)
        seen.append(("calm", budget(store)))
    return seen


def test_the_budget_rises_under_stress_and_returns_to_the_baseline(mk: StoreFactory) -> None:
    with mk() as store:
        seen = script(store)
        peak = max(b for _, b in seen)
        assert peak == 150  # max_factor 1.5 of B0 = 100, in steps of 10
        assert all(100 <= b <= 150 for _, b in seen)
        assert seen[-1] == ("calm", 100)
        events = [e for e in store.audit.events() if e.op.value == "config"]
        raised = [e for e in events if "raised from" in e.rationale]
        lowered = [e for e in events if "lowered from" in e.rationale]
        # stress raises it step by step; retrieval then finds what it raised room for, so
        # the budget breathes (lowered, raised again) before the calm phase brings it home
        assert len(raised) >= 5 and len(lowered) >= 5
        assert max(e.step for e in raised) < 45 < max(e.step for e in lowered)
        first = raised[0]
        assert first.rationale.startswith("the budget of 'default' was raised from 100 to "
                                          "110 tokens (elastic, at most 150): stress — "
                                          "trigger rate ")
        assert first.params["budget_base"] == 100 and first.params["hit_rate"] < 0.6
        assert first.params["trigger_rate"] >= 0.5
        assert "load normalised" in lowered[-1].rationale and lowered[-1].params[
            "elastic_budget"] == 100
        # a contraction archives what no longer fits, with the policy's own rationale
        after = store.audit.events().index(lowered[0])
        evicted = [e for e in store.audit.events()[after:] if e.op.value == "evict"]
        assert evicted and evicted[0].policy == "fifo"
        stats = store.stats()["namespaces"]["default"]
        assert stats["budget_base"] == 100 and set(stats["elastic"]) == {
            "budget", "triggers", "hits", "since"}


def test_without_retrievals_or_elastic_the_budget_stays(mk: StoreFactory) -> None:
    with mk() as store:
        for i in range(60):
            store.add(fact(i))
        assert budget(store) == 100
        assert not [e for e in store.audit.events() if e.op.value == "config"]
    with mk(elastic=None) as fixed:
        script(fixed)
        assert budget(fixed) == 100
        assert "budget_base" not in fixed.stats()["namespaces"]["default"]


def test_an_elastic_store_is_deterministic_and_reopens_where_it_stopped(mk: StoreFactory,
                                                                        tmp_path: Path
                                                                        ) -> None:
    with mk(path=tmp_path / "a") as a:
        for i in range(30):
            a.add(fact(i))
            a.retrieve(f"the {WORDS[max(0, i - 12) % len(WORDS)]} story number "
                       f"{max(0, i - 12)}", k=2, relative_cutoff=0)
        mid = budget(a)
        state = a.stats()["namespaces"]["default"]["elastic"]
    assert 100 < mid <= 150
    with mk(path=tmp_path / "a") as again:
        assert budget(again) == mid
        assert again.stats()["namespaces"]["default"]["elastic"] == state
    with mk(path=tmp_path / "b") as b:
        for i in range(30):
            b.add(fact(i))
            b.retrieve(f"the {WORDS[max(0, i - 12) % len(WORDS)]} story number "
                       f"{max(0, i - 12)}", k=2, relative_cutoff=0)
        assert b.stats()["namespaces"]["default"]["elastic"] == state
    # reopened without elasticity: the namespace is brought back under B0 on open
    with mk(path=tmp_path / "a", elastic=None) as fixed:
        assert budget(fixed) == 100
        assert fixed.stats()["namespaces"]["default"]["tokens"] <= 100


@pytest.mark.parametrize("bad", [{"max_factor": 1.0}, {"step": 0}, {"window": 1},
                                 {"hit_rate_low": 0.9, "hit_rate_high": 0.8},
                                 {"cooldown": -1}, {"max_factor": "2"}, {"speed": 2}])
def test_bad_elastic_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        MemoryStore(elastic=bad)


def test_the_controller_by_hand() -> None:
    """window 3 (α = 0.5), cooldown 0: four triggered writes and retrievals with 1 of 4
    hits active give trigger rate 0.9375 ≥ 0.5 and hit rate 0.25 < 0.6: raise by 10 % of
    B0; three retrievals mostly served by active memories (9/10, 1/1, 1/1) bring the hit
    rate to 0.575, 0.7875, 0.89375 ≥ 0.8: calm, back to B0."""
    cfg = ElasticBudget(window=3, cooldown=0)
    s = ElasticState(100)
    for _ in range(4):
        s = s.observe_write(cfg, triggered=True).observe_hits(cfg, active=1, total=4)
    assert (round(s.triggers, 4), s.hits) == (0.9375, 0.25)
    s, why = s.decide(cfg, base=100)
    assert s.budget == 110 and why is not None and "trigger rate 0.94" in why
    s = s.observe_hits(cfg, active=9, total=10).observe_hits(cfg, active=1, total=1)
    assert s.hits == 0.7875 and s.decide(cfg, base=100)[1] is None  # not calm yet
    s = s.observe_hits(cfg, active=1, total=1)
    s, why = s.decide(cfg, base=100)
    assert s.budget == 100 and why is not None and why.startswith("lowered from 110 to 100")
    assert ElasticState.load(None, cfg, 100) == ElasticState(100)
    assert ElasticState.load({"budget": 10**6, "triggers": 0.5, "hits": None, "since": 3},
                             cfg, 100).budget == 150
    with pytest.raises(ValidationError):
        ElasticState.load({"budget": "x"}, cfg, 100)
