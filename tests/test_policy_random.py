"""Random-Drop on real stores: uniform (chi-square), deterministic, feasible, reopen-exact."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import check_invariants
from oracles import Plan, run_plan
from scripts import reopen_script

from mars_core import FakeClock, MemoryStore
from mars_core.io.jsonld import to_jsonld
from mars_core.model import MemoryNode
from mars_core.policies import RandomDropPolicy, make_policy
from mars_core.testing import StoreFactory, policy_view

KEY = b"k" * 32
VOCAB = ["ana", "lisbon", "tea", "coffee", "meeting", "project", "deadline", "sister", "paris",
         "berlin", "cat", "dog", "train", "invoice", "doctor", "piano", "garden", "rain"]
TYPES = ["episodic", "semantic", "social"]
# chi-square critical values at p = 0.001 (df 7 and 19): a fair policy fails 1 run in 1000,
# and the seeds are fixed, so the test is deterministic
CHI2_7, CHI2_19 = 24.322, 43.820


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(policy="random", seed=0, audit_key=KEY, nlp="rules")


def chi2(counts: Counter[int], cells: int) -> float:
    total = sum(counts.values())
    expected = total / cells
    return sum((counts.get(i, 0) - expected) ** 2 / expected for i in range(cells))


def policy_of(store: MemoryStore) -> RandomDropPolicy:
    policy = store.policy_for()
    assert isinstance(policy, RandomDropPolicy)
    return policy


_DRAWS = random.Random(2026)  # one generator across calls: successive views draw afresh


def view_of(store: MemoryStore, ns: str = "default") -> Any:
    return policy_view(store, ns, rng=_DRAWS)


def words(rng: random.Random, lo: int = 1, hi: int = 9) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(lo, hi)))


@pytest.mark.backend_neutral
def test_registered() -> None:
    assert isinstance(make_policy("random"), RandomDropPolicy)
    assert make_policy("random").params() == {"selection": "uniform", "generator": "store seed"}


@pytest.mark.parametrize("seeds", [pytest.param(100, id="smoke"),
                                   pytest.param(400, marks=pytest.mark.heavy, id="full")])
def test_each_memory_is_equally_likely_across_seeds(mk: StoreFactory, seeds: int) -> None:
    """400 stores with seeds 0..399 (the smoke: 0..99): 8 equal memories fill the budget,
    a 9th evicts one."""
    counts: Counter[int] = Counter()
    for seed in range(seeds):
        with mk(16, seed=seed) as store:
            ids = [store.add(f"memory {i}").id for i in range(8)]
            assert all(store.get(i).weight == 2 for i in ids)
            store.add("memory 8")
            gone = [k for k, i in enumerate(ids) if not store.get(i).is_active]
            assert len(gone) == 1
            counts[gone[0]] += 1
    assert len(counts) == 8
    assert chi2(counts, 8) < CHI2_7


def test_draws_are_uniform_over_the_remaining_memories(mk: StoreFactory) -> None:
    """20 000 draws from one store after removals (holes, then a compaction)."""
    store = mk(10_000)
    ids = [store.add(f"note {i}").id for i in range(220)]
    for nid in ids[:200:2] + ids[201:]:  # forget 119: 100 holes, then compaction
        store.forget(nid)
    left = [n.id for n in store.list()]
    assert len(left) == 101 and policy_of(store).activation_order("default") == left
    left = left[:20]
    for nid in [n.id for n in store.list()][20:]:
        store.forget(nid)
    assert policy_of(store).activation_order("default") == left
    counts: Counter[int] = Counter()
    policy = policy_of(store)
    for _ in range(20_000):
        first = policy.apply(view_of(store), 1).evictions[0].node_id
        counts[left.index(first)] += 1
    assert chi2(counts, 20) < CHI2_19


def test_without_replacement_within_a_trigger(mk: StoreFactory) -> None:
    store = mk(10_000)
    for i in range(30):
        store.add(f"note {i}")
    used = sum(n.weight for n in store.list())
    plan = policy_of(store).apply(view_of(store), used)  # take everything
    got = [e.node_id for e in plan.evictions]
    assert sorted(got) == sorted(n.id for n in store.list())
    assert plan.evictions[0].rationale.startswith(
        "evicted by random: uniform random draw (control baseline, seed 000 §4.2): draw 1, "
        "one of 30 memories not drawn yet, each with probability 0.0333")


def test_explain_names_the_policy_and_the_draw(mk: StoreFactory) -> None:
    with mk(20, seed=4) as store:
        ids = [store.add(f"memory {i}").id for i in range(11)]
        gone = [i for i in ids if not store.get(i).is_active]
        assert gone
        ex = store.explain(gone[0])
        assert ex.events[-1].policy == "random"
        # the 11th memory is active in the view while its own add restores the budget, so
        # the pool it is drawn from counts it (it is never taken: a draw of it is skipped)
        assert ex.rationale.startswith("evicted by random: uniform random draw (control "
                                       "baseline, seed 000 §4.2): draw 1, one of 11 memories")
        assert "each with probability 0.0909" in ex.rationale


def run(mk: StoreFactory, seed: int, n: int = 60) -> list[str]:
    with mk(40, seed=seed) as store:
        rng = random.Random(5)
        for _ in range(n):
            if rng.random() < 0.2:
                store.retrieve(words(rng, 1, 3), k=2)
            store.add(words(rng), type=rng.choice(TYPES))
        return [n.id for n in store.list(status="archived")]


def test_same_seed_same_choices_other_seed_other_choices(mk: StoreFactory) -> None:
    a, b, c = run(mk, 11), run(mk, 11), run(mk, 12)
    assert a == b and len(a) > 20
    assert a != c


def test_pins_and_goals_are_skipped_unless_forced(mk: StoreFactory) -> None:
    for seed in range(10):
        with mk(30, seed=seed) as store:
            pinned = store.add("cat", pinned=True)
            prereq = store.add("dog")
            goal = store.add("walk the dog", type="task",
                             payload={"goal": "walk", "status": "active",
                                      "dependencies": [prereq.id]})
            rng = random.Random(seed)
            for _ in range(30):
                store.add(words(rng, 2, 5))
                assert all(store.get(i).is_active for i in (pinned.id, prereq.id, goal.id))
            store.add(" ".join(["berlin"] * 30))
            assert not store.get(pinned.id).is_active
            assert "forced by budget" in store.explain(pinned.id).rationale
            check_invariants(store)


def test_an_out_of_order_import_is_reindexed(mk: StoreFactory) -> None:
    store = mk(10_000)
    first = [store.add(f"note {i}").id for i in range(5)]
    with mk(10_000, seed=9) as other:
        nodes: list[MemoryNode] = [other.add(f"imported {i}") for i in range(3)]
    store.import_jsonld(to_jsonld(nodes, [], {"default": 3}))  # older activation seqs
    order = policy_of(store).activation_order("default")
    expect = sorted(store.list(), key=lambda n: (n.activated_seq, n.seq))
    assert order == [n.id for n in expect] and set(first) < set(order)
    assert policy_of(store).apply(view_of(store), 1).evictions


# --- reopen ---------------------------------------------------------------------------------


def script(path: Path, seed: int, reopen_every: int | None = None, ops: int = 160
           ) -> dict[str, Any]:
    """The same script with and without reopens must decide identically: the store derives
    each operation's generator from its seed and persisted counters."""
    def open_() -> MemoryStore:
        return MemoryStore.open(path, policy="random", budget=70, seed=3, clock=FakeClock(),
                                audit_key=KEY, nlp="rules")

    def add(store: MemoryStore, rng: random.Random) -> str:
        return store.add(words(rng), type=rng.choice([*TYPES, "task"]),
                         pinned=rng.random() < 0.05).id

    return reopen_script(open_, seed, add, ops=ops, reopen_every=reopen_every, words=words)


def test_reopen_rebuilds_the_same_index(tmp_path: Path) -> None:
    a = script(tmp_path / "a", 41)
    b = script(tmp_path / "b", 41, reopen_every=9)
    assert sum(1 for e in a["audit"] if e["op"] == "evict") > 40
    assert b["audit"] == a["audit"]
    assert b["export"] == a["export"]


# --- property: the budget holds after every operation ---------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "retrieve", "forget", "restore"]),
                         st.lists(st.sampled_from(VOCAB), min_size=1, max_size=7).map(" ".join),
                         st.sampled_from([*TYPES, "task"]), st.booleans(), st.integers(0, 10**4)),
               min_size=5, max_size=60)


@settings(max_examples=30, deadline=None,  # the factory mk makes new stores per example
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops, st.integers(0, 5))
def test_budget_holds_after_every_operation(mk: StoreFactory, plan: Plan, seed: int) -> None:
    with mk(35, seed=seed) as store:
        run_plan(store, plan, 35)
        assert policy_of(store).activation_order("default") == [
            n.id for n in sorted(store.list(), key=lambda n: (n.activated_seq, n.seq))]
        check_invariants(store)
