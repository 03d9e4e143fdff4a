"""Priority-Decay on real stores: order, drift bound, hysteresis, protections, reopen."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import check_invariants
from oracles import Plan, exact_evictions, run_plan
from scripts import reopen_script

from mars_core import FakeClock, MemoryStore
from mars_core.errors import ConfigError
from mars_core.index.numpy import NumpyIndex
from mars_core.model import MemoryNode, MemoryStatus
from mars_core.policies import PriorityDecayPolicy, make_policy
from mars_core.scoring.density import DensityConfig, importance, priority_key
from mars_core.storage import SQLiteRecordStore
from mars_core.testing import StoreFactory

KEY = b"k" * 32
VOCAB = ["ana", "lisbon", "tea", "coffee", "meeting", "project", "deadline", "sister", "paris",
         "berlin", "cat", "dog", "train", "invoice", "doctor", "piano", "garden", "rain"]
TYPES = ["episodic", "semantic", "social", "task"]
PLAIN = ["episodic", "semantic", "social"]  # a task memory is an active goal: protected


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(policy="priority", audit_key=KEY, nlp="rules")


def active(store: MemoryStore, ns: str = "default") -> dict[str, MemoryNode]:
    return {n.id: n for n in store.list(ns)}


def step(store: MemoryStore, ns: str = "default") -> int:
    return int(store.stats(ns)["namespaces"][ns]["step"])


def words(rng: random.Random, lo: int = 1, hi: int = 9) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(lo, hi)))


def true_key(node: MemoryNode, at: int, cfg: DensityConfig | None = None) -> float:
    """Brute force, straight from the scoring module: (imp − λ_priv·s)/w (seed 000 §5.3)."""
    cfg = cfg or DensityConfig()
    return priority_key(importance(node.type, at - node.step, node.access_count, cfg),
                        node.weight, node.sensitivity, cfg.lambda_priv)


def add_and_see(store: MemoryStore, text: str, **kw: Any
                ) -> tuple[dict[str, MemoryNode], list[str], MemoryNode, int]:
    """Add; return (active before, ids evicted by the add in audit order, new node, step)."""
    before = active(store)
    events = len(store.audit)
    node = store.add(text, **kw)
    evicted = [i for e in store.audit.events()[events:] if e.op.value == "evict"
               for i in e.node_ids]
    return before, evicted, node, step(store)


# --- configuration ------------------------------------------------------------------------


def test_registered_with_validated_config() -> None:
    policy = make_policy("priority", hysteresis_margin=0.2, drift_tolerance=0.05)
    assert isinstance(policy, PriorityDecayPolicy) and policy.name == "priority"
    assert policy.params()["hysteresis_margin"] == 0.2
    assert policy.params()["type_weight"]["semantic"] == 1.0
    with pytest.raises(ConfigError, match="drift_tolerance"):
        make_policy("priority", drift_tolerance=0)
    with pytest.raises(ConfigError, match="frequency_norm"):
        make_policy("priority", density={"frequency_norm": "max"})
    with pytest.raises(ConfigError):
        make_policy("priority", unknown=1)
    with pytest.raises(ConfigError, match="budget"):
        MemoryStore(policy="priority", policy_params={"budget": 3})


def test_key_is_density_importance_per_token_bit_for_bit(mk: StoreFactory) -> None:
    store = mk(10_000)
    rng = random.Random(3)
    ids = [store.add(words(rng), type=rng.choice(PLAIN)).id for _ in range(30)]
    for _ in range(40):
        store.retrieve(words(rng, 2, 4), k=3)
    policy = store.policy_for()
    assert isinstance(policy, PriorityDecayPolicy)
    now = step(store)
    for nid in ids:
        node = store.get(nid)
        for at in (now, now + 7, now + 300):
            assert policy.true_key(node, at) == true_key(node, at)


# --- order ---------------------------------------------------------------------------------


def random_workload(store: MemoryStore, rng: random.Random, n: int,
                    check: Any = None) -> int:
    """Adds of random types and lengths with retrievals in between; ``check`` per add."""
    evictions = 0
    for _ in range(n):
        if rng.random() < 0.3:
            store.retrieve(words(rng, 1, 3), k=rng.randint(1, 3))
        before, evicted, node, now = add_and_see(store, words(rng), type=rng.choice(PLAIN))
        evictions += len(evicted)
        if check is not None:
            check(before, evicted, node, now)
    return evictions


@pytest.mark.parametrize(("adds", "floor"), [
    pytest.param(75, 25, id="smoke"), pytest.param(150, 50, marks=pytest.mark.heavy, id="full")])
def test_tiny_tolerance_gives_the_exact_order(mk: StoreFactory, adds: int, floor: int) -> None:
    """With a tolerance near 0 every key is refreshed at every trigger: the evictions of each
    add are exactly the prefix of the brute-force sort by (imp/w, creation order)
    (``floor``: evictions the workload made at least, a third of its adds)."""
    store = mk(60, policy_params={"drift_tolerance": 1e-12})

    def check(before: dict[str, MemoryNode], evicted: list[str], node: MemoryNode,
              now: int) -> None:
        need = sum(n.weight for n in before.values()) + node.weight - 60
        order = sorted(before.values(), key=lambda n: (true_key(n, now), n.seq))
        assert evicted == exact_evictions(order, need)

    assert random_workload(store, random.Random(11), adds, check) > floor


@pytest.mark.parametrize(("adds", "floor"), [
    pytest.param(100, 25, id="smoke"), pytest.param(200, 50, marks=pytest.mark.heavy, id="full")])
def test_default_tolerance_keeps_the_stated_bound(mk: StoreFactory, adds: int,
                                                  floor: int) -> None:
    """Between refreshes a stored key may be stale, but by less than drift_tolerance/w:
    every evicted memory's true key is below every kept memory's true key + 0.02/w
    (``floor``: evictions the workload made at least, a quarter of its adds)."""
    store = mk(60)
    tol = 0.02
    worst = 0.0

    def check(before: dict[str, MemoryNode], evicted: list[str], node: MemoryNode,
              now: int) -> None:
        nonlocal worst
        kept = [n for i, n in before.items() if i not in evicted]
        for x in evicted:
            kx = true_key(before[x], now)
            for y in kept:
                slack = kx - true_key(y, now)
                assert slack < tol / y.weight + 1e-12, (slack, y.weight)
                worst = max(worst, slack * y.weight)

    assert random_workload(store, random.Random(5), adds, check) > floor
    assert worst < tol  # the bound held; record that the approximation did matter
    policy = store.policy_for()
    assert isinstance(policy, PriorityDecayPolicy)
    # refreshes stay O(1) per memory: <= 1 + β/((α+β+γ)·tol) = 16 keys per insert or access
    events = sum(1 for e in store.audit.events() if e.op.value in ("insert", "access"))
    accesses = sum(len(e.node_ids) for e in store.audit.events() if e.op.value == "access")
    assert policy.rekeys("default") <= 16 * (events + accesses)


def test_semantic_outlives_episodic_and_accesses_protect(mk: StoreFactory) -> None:
    store = mk(40)
    ep = store.add("ana drank tea in lisbon", type="episodic")
    sem = store.add("paris is in france", type="semantic")
    used = store.add("the piano lesson is on friday", type="episodic")
    for _ in range(3):
        assert store.retrieve("piano lesson friday", k=1)[0].id == used.id
    rng = random.Random(0)
    while store.get(ep.id).is_active:
        store.add(words(rng, 4, 4), type="episodic")
    assert store.get(sem.id).is_active and store.get(used.id).is_active


# --- hysteresis -------------------------------------------------------------------------------


def hysteresis_scenario(mk: StoreFactory, margin: float) -> tuple[str, str, str]:
    """X is examined but spared (a non-leaf), then becomes a leaf and gets one access.

    Returns (id evicted at the last trigger, X's id, Y's id).
    """
    # exact keys (tolerance ~0), so only hysteresis can put X before Y
    store = mk(34, policy_params={"hysteresis_margin": margin, "drift_tolerance": 1e-9})
    x = store.add("zebra quokka lemur", type="episodic")
    d = store.add("zebra summary", type="semantic",
                  provenance={"source": "summary", "derived_from": [x.id]})
    z = store.add("walrus narwhal okapi", type="episodic")
    fillers = ["paris is in france", "berlin is in germany", "rome is in italy",
               "madrid is in spain", "vienna is in austria", "oslo is in norway",
               "lisbon is in portugal", "athens is in greece", "dublin is in ireland"]
    events = len(store.audit)
    for text in fillers:
        store.add(text, type="semantic")
        if any(e.op.value == "evict" for e in store.audit.events()[events:]):
            break
    # trigger 1: X had the lowest key but derives a summary, so Z went instead
    assert not store.get(z.id).is_active and store.get(x.id).is_active
    policy = store.policy_for()
    assert isinstance(policy, PriorityDecayPolicy)
    assert policy._spaces["default"].examined.get(x.id) is not None
    store.forget(d.id)  # X is now a leaf
    y = store.add("walrus okapi zebu", type="episodic")
    hits = store.retrieve("zebra quokka lemur", k=1)
    assert [h.id for h in hits] == [x.id]
    now = step(store) + 1
    kx, ky = policy.true_key(store.get(x.id), now), policy.true_key(store.get(y.id), now)
    assert kx > ky  # without hysteresis Y goes first
    others = [n for n in store.list() if n.id not in (x.id, y.id)]
    assert all(policy.true_key(n, now) > kx for n in others)
    _, evicted, _, _ = add_and_see(store, "prague is in czechia", type="semantic")
    store.close()
    return evicted[0], x.id, y.id


def test_hysteresis_keeps_an_eligible_memory_first_in_line(mk: StoreFactory) -> None:
    gone, x, _y = hysteresis_scenario(mk, 0.1)  # one access (+0.087) is within the margin
    assert gone == x


def test_without_margin_an_improvement_spares_it(mk: StoreFactory) -> None:
    gone, _x, y = hysteresis_scenario(mk, 0.0)
    assert gone == y


def test_hysteresis_rationale(mk: StoreFactory) -> None:
    store = mk(44)
    x = store.add("zebra quokka lemur", type="episodic")
    d = store.add("zebra summary", type="semantic",
                  provenance={"source": "summary", "derived_from": [x.id]})
    rng = random.Random(2)
    while step(store) < 12:
        store.add(f"{rng.choice(VOCAB)} is a fact", type="semantic")
    store.forget(d.id)
    while store.get(x.id).is_active:
        store.add(f"{rng.choice(VOCAB)} is a fact", type="semantic")
    why = store.explain(x.id).rationale
    assert "first in line by hysteresis" in why and "examined and spared at step" in why


# --- protections ---------------------------------------------------------------------------------


def test_pins_and_task_safety_hold_until_forced(mk: StoreFactory) -> None:
    store = mk(40)
    pinned = store.add("cat", type="episodic", pinned=True)          # the lowest key of all
    prereq = store.add("dog", type="episodic")
    goal = store.add("walk the dog daily", type="task",
                     payload={"goal": "walk", "status": "active", "dependencies": [prereq.id]})
    rng = random.Random(4)
    for _ in range(40):
        store.add(words(rng, 2, 5), type=rng.choice(["episodic", "semantic"]))
        assert store.get(pinned.id).is_active and store.get(prereq.id).is_active
        assert store.get(goal.id).is_active
        assert store.stats()["namespaces"]["default"]["tokens"] <= 40
    # a memory as large as the budget forces everything out, protections last
    big = store.add(" ".join(["berlin"] * 40), type="semantic")
    assert big.is_active and not store.get(pinned.id).is_active
    assert "forced by budget" in store.explain(pinned.id).rationale
    check_invariants(store)


# --- rationale ---------------------------------------------------------------------------------


def test_rationale_names_policy_and_numbers(mk: StoreFactory) -> None:
    store = mk(30)
    rng = random.Random(9)
    first = store.add("ana drank tea", type="episodic")
    while store.get(first.id).is_active:
        store.add(words(rng, 3, 5), type="semantic")
    ex = store.explain(first.id)
    assert ex.events[-1].op.value == "evict" and ex.events[-1].policy == "priority"
    why = ex.rationale
    assert why.startswith("evicted by priority: lowest density per token: (imp 0.")
    assert f"− λ_priv·s 0.000) over {first.weight} tokens = 0." in why and "the lowest of" in why
    assert "recency 0." in why and "0 accesses, episodic (type weight 0.5)" in why
    assert "sensitivity 0.00" in why
    ev = ex.events[-1]
    feats = ev.features[first.id]
    assert math.isclose(ev.score or 0.0, feats["importance"] / first.weight)
    assert ev.params["alpha"] == 0.4 and ev.params["key"] == "density"
    assert ev.params["lambda_priv"] == 0.25


# --- the privacy penalty (seed 000 §5.3, §5.4) ----------------------------------------------


def twins(mk: StoreFactory, key: str | None) -> tuple[MemoryNode, MemoryNode, str, MemoryNode]:
    """Two memories equal in type, words and weight: the harmless one written first (s 0),
    the sensitive one next (s 0.95); then one more memory needs the room of one of them.
    Returns (harmless, sensitive, the rationale of the eviction, the evicted memory)."""
    params = {} if key is None else {"key": key}
    store = mk(16, policy_params=params, sensitivity_scoring=False)
    harmless = store.add("ana met bo at the cafe", type="episodic", sensitivity=0.0)
    sensitive = store.add("ana met bo at the cafe", type="episodic", sensitivity=0.95)
    since = len(store.audit)
    store.add("paris is in france today", type="episodic", sensitivity=0.0)
    gone = [e for e in store.audit.events()[since:] if e.op.value == "evict"]
    assert len(gone) == 1
    evicted = store.get(gone[0].node_ids[0])
    store.close()
    return harmless, sensitive, gone[0].rationale, evicted


def test_twin_memories_the_sensitive_one_goes_first(mk: StoreFactory) -> None:
    """§5.3/§5.4 key (imp − λ_priv·s)/w, by hand: both episodic, 6 tokens, never accessed;
    at the trigger (step 3) the harmless one is 2 steps old, the sensitive one 1.
    imp = (0.4·0.5 + 0.3·e^(−0.035·Δn))/1.0: 0.47972 (Δn 2) and 0.48968 (Δn 1).
    Keys: harmless 0.47972/6 = 0.07995; sensitive (0.48968 − 0.25·0.95)/6 = 0.04203."""
    harmless, sensitive, why, evicted = twins(mk, None)
    assert harmless.weight == sensitive.weight == 6
    assert evicted.id == sensitive.id
    imp_h = (0.4 * 0.5 + 0.3 * math.exp(-0.035 * 2)) / 1.0
    imp_s = (0.4 * 0.5 + 0.3 * math.exp(-0.035 * 1)) / 1.0
    assert (round(imp_h / 6, 5), round((imp_s - 0.25 * 0.95) / 6, 5)) == (0.07995, 0.04203)
    assert "(imp 0.490 − λ_priv·s 0.237) over 6 tokens = 0.0420" in why
    assert "sensitivity 0.95" in why


def test_importance_key_keeps_the_former_order(mk: StoreFactory) -> None:
    """key="importance" (imp/w, no penalty): the harmless twin is older, so it goes."""
    harmless, _sensitive, why, evicted = twins(mk, "importance")
    assert evicted.id == harmless.id
    assert "lowest importance per token: imp 0.480 over 6 tokens = 0.0800" in why


def test_a_rescored_sensitivity_moves_the_key(mk: StoreFactory) -> None:
    """on_update: a memory whose sensitivity changes is re-keyed before the next trigger."""
    store = mk(10_000, sensitivity_scoring=False)
    node = store.add("ana met bo at the cafe", type="episodic", sensitivity=0.0)
    policy = store.policy_for()
    assert isinstance(policy, PriorityDecayPolicy)
    before = policy.true_key(node, step(store))
    changed = node.model_copy(update={"sensitivity": 0.8})
    policy.on_update(changed)
    assert math.isclose(policy.true_key(changed, step(store)),
                        before - 0.25 * 0.8 / node.weight)
    assert policy.params()["key"] == "density"


# --- reopen -------------------------------------------------------------------------------------


def script(mk: StoreFactory, path: Path | None, seed: int, reopen_every: int | None = None,
           ops: int = 160) -> dict[str, Any]:
    """A seeded script (adds with pins, retrievals, forgets, restores, updates)."""
    def open_() -> MemoryStore:
        if path is None:  # the same stores, never persisted
            return mk(70, records=SQLiteRecordStore(), index=NumpyIndex(), seed=seed)
        return MemoryStore.open(path, policy="priority", budget=70, clock=FakeClock(),
                                audit_key=KEY, nlp="rules", index="numpy", seed=seed)

    def add(store: MemoryStore, rng: random.Random) -> str:
        return store.add(words(rng), type=rng.choice(TYPES), pinned=rng.random() < 0.05).id

    return reopen_script(open_, seed, add, ops=ops, reopen_every=reopen_every, words=words,
                         cuts=(0.55, 0.8, 0.88, 0.94))


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("ops", "floor"), [
    pytest.param(80, 20, id="smoke"), pytest.param(160, 40, marks=pytest.mark.heavy, id="full")])
def test_reopen_gives_the_same_decisions(mk: StoreFactory, tmp_path: Path, ops: int,
                                         floor: int) -> None:
    """The script with a reopen every 9 operations decides as without, and as in memory
    (``floor``: evictions it made at least, a quarter of its operations)."""
    a = script(mk, tmp_path / "a", 21, ops=ops)
    b = script(mk, tmp_path / "b", 21, reopen_every=9, ops=ops)
    assert sum(1 for e in a["audit"] if e["op"] == "evict") > floor
    assert b["audit"] == a["audit"]
    assert b["export"] == a["export"]
    assert script(mk, None, 21, ops=ops)["audit"] == a["audit"]  # persisted = in memory


# --- property: the budget holds after every add ------------------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "retrieve", "forget", "restore"]),
                         st.lists(st.sampled_from(VOCAB), min_size=1, max_size=7).map(" ".join),
                         st.sampled_from(TYPES), st.booleans(), st.integers(0, 10_000)),
               min_size=5, max_size=50)


@settings(max_examples=30, deadline=None,  # the factory mk makes new stores per example
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_budget_holds_after_every_operation(mk: StoreFactory, plan: Plan) -> None:
    with mk(35) as store:
        run_plan(store, plan, 35)
        policy = store.policy_for()
        assert isinstance(policy, PriorityDecayPolicy)
        assert set(policy._spaces.get("default", policy._space("default")).items) == {
            n.id for n in store.list(status=MemoryStatus.ACTIVE)}
        check_invariants(store)
