"""Soft per-type budget shares: the dual update, its floor, and its effect on eviction."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import check_invariants

from mars_core.errors import ConfigError
from mars_core.model import MemoryStatus, MemoryType
from mars_core.shares import TypeShares, TypeSharesConfig, usage_by_type
from mars_core.testing import StoreFactory, policy_view

KEY = b"k" * 32
EPI, SEM, SOC, TASK = MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.SOCIAL, MemoryType.TASK


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=KEY, nlp="rules")


# --- the dual update --------------------------------------------------------------------------


@pytest.mark.backend_neutral
def test_equal_start_and_floor_from_initial() -> None:
    ts = TypeShares()
    assert ts.shares("ns") == pytest.approx(dict.fromkeys(MemoryType, 0.25))
    skewed = TypeShares(initial={SEM: 1.0}, floor=0.1)
    s = skewed.shares("ns")
    assert s[EPI] == pytest.approx(0.1) and s[SEM] == pytest.approx(0.7)
    assert sum(skewed.budgets("ns", 1000).values()) == pytest.approx(1000)


@pytest.mark.backend_neutral
def test_dual_step_moves_share_to_the_higher_hits_per_token() -> None:
    ts = TypeShares(eta=0.5)
    usage = dict.fromkeys(MemoryType, 100)
    before = ts.shares("ns")
    after = ts.dual_step("ns", {SEM: 4, EPI: 1}, usage)
    assert after[SEM] > before[SEM] and after[EPI] < before[EPI]
    assert sum(after.values()) == pytest.approx(1.0)
    assert ts.updates == 1


@pytest.mark.backend_neutral
def test_per_token_not_per_hit() -> None:
    """Same hits, but episodic holds 10x the tokens: semantic has the higher marginal utility."""
    ts = TypeShares()
    after = ts.dual_step("ns", {SEM: 5, EPI: 5}, {SEM: 50, EPI: 500, SOC: 0, TASK: 0})
    assert after[SEM] > after[EPI]
    # types without tokens have no estimate: social and task keep their relative weight
    assert after[SOC] == pytest.approx(after[TASK])


@pytest.mark.backend_neutral
def test_shares_converge_towards_higher_hit_per_token_and_respect_the_floor() -> None:
    """Criterion (a): repeated windows where semantic beats episodic per token."""
    ts = TypeShares(eta=0.5, floor=0.05)
    usage = {EPI: 400, SEM: 100, SOC: 100, TASK: 100}
    history = [ts.shares("ns")[SEM]]
    for _ in range(40):
        history.append(ts.dual_step("ns", {SEM: 10, EPI: 10, SOC: 1, TASK: 1}, usage)[SEM])
    assert all(b >= a for a, b in itertools.pairwise(history))
    final = ts.shares("ns")
    assert final[SEM] > 0.8 and final[SEM] <= 1 - 3 * 0.05 + 1e-9
    assert min(final.values()) >= 0.05 - 1e-12


@pytest.mark.backend_neutral
def test_no_observation_leaves_shares_unchanged() -> None:
    ts = TypeShares()
    assert ts.dual_step("ns", {}, dict.fromkeys(MemoryType, 10)) == ts.shares("ns")
    assert ts.updates == 0


@pytest.mark.backend_neutral
def test_bad_config_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        TypeShares(floor=0.5)
    with pytest.raises(ConfigError):
        TypeShares(window=0)
    with pytest.raises(ConfigError):
        TypeShares(initial={SEM: -1.0})
    with pytest.raises(ConfigError):
        TypeShares(unknown=1)
    assert TypeSharesConfig(window=3).window == 3


# --- with a real store ---------------------------------------------------------------------


def test_store_observations_move_shares_towards_the_retrieved_type(mk: StoreFactory) -> None:
    """Criterion (a) end to end: retrievals of semantic facts, every write refreshes."""
    store = mk(budget=100_000, policy="lru")
    shares = TypeShares(window=5)
    store.policy_for().type_shares = shares
    for i in range(10):
        store.add(f"fact {i}: the zebra project uses database engine number {i}", type="semantic")
    trace = []
    for i in range(60):
        store.add(f"chit chat line {i} about the weather and lunch plans today", type="episodic")
        store.retrieve("zebra project database engine", k=3)
        trace.append(shares.shares("default")[SEM])
    assert shares.updates >= 10
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(trace))
    final = shares.shares("default")
    assert final[SEM] > 0.45 and 0.05 - 1e-12 <= final[EPI] < 0.1
    # social and task hold no tokens: no estimate, so they keep their weight
    assert final[SOC] == pytest.approx(final[TASK])


def test_credits_count_for_their_type(mk: StoreFactory) -> None:
    store = mk(budget=100_000, policy="lru")
    shares = TypeShares(window=2)
    store.policy_for().type_shares = shares
    soc = store.add("Ana is Bruno's sister and lives in Porto", type="social")
    store.add("we talked about the rain", type="episodic")
    store.policy_for().on_credit("default", [soc.id], [soc.id], 2)
    store.add("more rain today", type="episodic")
    store.add("rain again", type="episodic")
    s = shares.shares("default")
    assert shares.updates == 1 and s[SOC] > s[EPI]


def test_over_share_type_loses_memories_first(mk: StoreFactory) -> None:
    """Criterion (b): LRU alone would evict the old episodes; semantic is over its share."""
    store = mk(budget=120, policy="lru")
    store.policy_for().type_shares = TypeShares(initial={EPI: 0.9, SEM: 0.1}, window=10_000)
    episodes = [store.add(f"episode {i} walked the dog", type="episodic") for i in range(5)]
    facts: list[Any] = []
    while store.stats()["namespaces"]["default"]["archived"] == 0:
        facts.append(store.add(f"fact {len(facts)}: the capital of region {len(facts)} is far",
                               type="semantic"))
    archived = store.list(status="archived")
    assert archived and all(n.type is SEM for n in archived)
    assert all(store.get(e.id).status is MemoryStatus.ACTIVE for e in episodes)
    assert archived[0].id == facts[0].id  # LRU order within the over-share type
    ex = store.explain(archived[0].id)
    assert "over its soft share" in ex.rationale and "least recently used" in ex.rationale


def test_without_shares_lru_order_is_unchanged(mk: StoreFactory) -> None:
    store = mk(budget=120, policy="lru")
    episodes = [store.add(f"episode {i} walked the dog", type="episodic") for i in range(5)]
    while store.stats()["namespaces"]["default"]["archived"] == 0:
        store.add("fact: the capital of the region is far", type="semantic")
    assert store.list(status="archived")[0].id == episodes[0].id


def test_prioritise_only_reorders(mk: StoreFactory) -> None:
    """Held-back candidates still come, in the stage's order, once no type is over share."""
    store = mk(budget=100_000, policy="lru")
    ids = [store.add(f"memory {i}", type="episodic" if i % 2 else "semantic").id
           for i in range(6)]
    view = policy_view(store, budget=12)
    shares = TypeShares(initial={EPI: 1.0})  # semantic (6 tokens) over its 5% share
    from mars_core.policies import Candidate, Plan
    cands = [Candidate(i) for i in ids]
    out = [c.node_id for c in shares.prioritise(view, cands, Plan())]
    assert sorted(out) == sorted(ids)
    assert out[:3] == [ids[0], ids[2], ids[4]] and out[3:] == [ids[1], ids[3], ids[5]]
    assert usage_by_type(view)[SEM] > 0


OPS = st.lists(st.tuples(st.sampled_from(["episodic", "semantic", "social", "task"]),
                         st.integers(1, 12), st.booleans()), min_size=5, max_size=40)


@pytest.mark.parametrize("policy", ["lru", "hybrid"])
@settings(max_examples=15, deadline=None,  # the factory mk makes new stores per example
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_budget_invariant_holds_with_shares(mk: StoreFactory,
                                            policy: str, ops: list[tuple[str, int, bool]]
                                            ) -> None:
    """Criterion (c): shares only reorder; the hard budget and every invariant still hold."""
    store = mk(budget=60, policy=policy)
    store.policy_for().type_shares = TypeShares(window=3, initial={SOC: 1.0})
    try:
        for k, (mtype, words, query) in enumerate(ops):
            payload = {"status": "done"} if mtype == "task" else None
            store.add(" ".join(f"w{(k * 7 + j) % 23}" for j in range(words)), type=mtype,
                      payload=payload)
            if query:
                store.retrieve(f"w{k % 23}", k=2)
            assert store.stats()["namespaces"]["default"]["tokens"] <= 60
        check_invariants(store)
    finally:
        store.close()
