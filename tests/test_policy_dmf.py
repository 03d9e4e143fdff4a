"""DMF policy on real stores: hard-kill timing, S_prune order, tiers, supersession, reopen."""

from __future__ import annotations

import math
import random
import uuid
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
from mars_core.io.jsonld import to_jsonld
from mars_core.model import Edge, MemoryNode, Predicate
from mars_core.policies import DMFPolicy, make_policy
from mars_core.scoring.dmf import (
    OperationalCues,
    effective_score,
    retention_bonus,
    sigmoid,
    turns_until,
)
from mars_core.storage import SQLiteRecordStore
from mars_core.testing import StoreFactory, memory_graph, policy_view

KEY = b"k" * 32
VOCAB = ["ana", "lisbon", "tea", "coffee", "meeting", "project", "deadline", "sister", "paris",
         "berlin", "cat", "dog", "train", "invoice", "doctor", "piano", "garden", "rain"]
PLAIN = ["episodic", "semantic", "social"]
CUES = ("constraint", "preference", "current_state", "correction", "replacement")


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(policy="dmf", audit_key=KEY, nlp="rules")


def words(rng: random.Random, lo: int = 1, hi: int = 9) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(lo, hi)))


def step(store: MemoryStore, ns: str = "default") -> int:
    return int(store.stats(ns)["namespaces"][ns]["step"])


def policy_of(store: MemoryStore) -> DMFPolicy:
    policy = store.policy_for()
    assert isinstance(policy, DMFPolicy)
    return policy


def evictions(store: MemoryStore, since: int) -> list[tuple[str, str]]:
    """(id, rationale) of the evict events after audit index ``since``, in order."""
    return [(e.node_ids[0], e.rationale) for e in store.audit.events()[since:]
            if e.op.value == "evict"]


# --- a brute-force S_prune, independent of the policy ----------------------------------------


def brute(store: MemoryStore, node: MemoryNode, at: int,
          incoming: bool = False) -> tuple[bool, float]:
    """(healthy, S_prune) of a memory at step ``at`` from the scoring module and the graph
    (``incoming``: the memory being written supersedes or corrects it; it is active while
    its own write restores the budget)."""
    omega = node.signals.get("omega", sigmoid(-1.5))
    eff = effective_score(omega, at - node.step)
    bonus = retention_bonus(OperationalCues(**{k: node.signals.get(k, 0.0) >= 0.5
                                               for k in CUES}))
    g = memory_graph(store, node.namespace)
    superseded = incoming or any(store.get(e.source).is_active
                                 for p in (Predicate.SUPERSEDES, Predicate.CORRECTS)
                                 for e in g.in_edges(node.id, p))
    return eff > 0.75, eff + bonus - (0.35 if superseded else 0.0)


# --- configuration ------------------------------------------------------------------------


@pytest.mark.backend_neutral
def test_registered_with_validated_config() -> None:
    policy = make_policy("dmf", dmf={"omega_kill": 0.04}, drift_tolerance=0.01)
    assert isinstance(policy, DMFPolicy) and policy.name == "dmf"
    assert policy.params()["omega_kill"] == 0.04 and policy.params()["p_sup"] == 0.35
    with pytest.raises(ConfigError, match="tau_c"):
        make_policy("dmf", dmf={"tau_c": 0.9})
    with pytest.raises(ConfigError):
        make_policy("dmf", drift_tolerance=-1)
    with pytest.raises(ConfigError, match=r"token_budget was removed .*budget=4096"):
        MemoryStore(policy="dmf", policy_params={"dmf": {"token_budget": 4096}})
    assert policy.params()["healthy_tier"] == "protected"
    with pytest.raises(ConfigError, match="healthy_tier"):
        make_policy("dmf", healthy_tier="never")


# --- hard-kill (eq 21) -----------------------------------------------------------------------


def test_chit_chat_is_hard_killed_after_52_6_turns_and_a_constraint_is_not(
        mk: StoreFactory) -> None:
    store = mk(100_000)
    rule = store.add("Do not use external APIs in this project")   # first turn: D = 0
    ok = store.add("ok")
    assert ok.signals["omega"] == 0.25 and rule.signals["constraint"] == 1.0
    assert rule.signals["omega"] > 0.75
    policy = policy_of(store)
    assert round(turns_until(0.25, 0.05), 1) == 52.6
    assert policy.kill_step(ok) == ok.step + 53        # the first whole turn past 52.6
    due = policy.kill_step(ok)
    assert due is not None
    swept_at = due + (-due) % 5                         # the next sweep (every 5 turns)
    rng = random.Random(1)
    while step(store) < swept_at - 1:
        store.add(words(rng, 5, 8))
        assert store.get(ok.id).is_active
    store.add(words(rng, 5, 8))
    assert step(store) == swept_at and not store.get(ok.id).is_active
    assert store.get(rule.id).is_active
    rule_due = policy.kill_step(rule)
    assert rule_due is not None
    assert rule_due - rule.step == math.ceil(turns_until(rule.signals["omega"], 0.05))
    why = store.explain(ok.id).rationale
    assert why.startswith("evicted by dmf: DMF hard-kill: Ω_eff 0.0")
    assert "below Ω_kill 0.05" in why and "Ω 0.25 at write time" in why
    assert "half-life of 22.6 turns" in why and f"due since step {due}" in why
    # every hard-kill happened on a sweep step
    kills = [e for e in store.audit.events() if e.op.value == "evict"
             and "hard-kill" in e.rationale]
    assert kills and all(e.step % 5 == 0 for e in kills)
    for e in kills:
        node = store.get(e.node_ids[0])
        assert effective_score(node.signals["omega"], e.step - node.step) < 0.05


def test_memory_without_omega_uses_the_empty_text_score(mk: StoreFactory) -> None:
    store = mk(100_000, nlp="off")
    node = store.add("no signals here")
    assert "omega" not in node.signals
    policy = policy_of(store)
    assert policy.omega(node) == sigmoid(-1.5)
    due = policy.kill_step(node)
    assert due is not None
    assert due - node.step == math.ceil(turns_until(sigmoid(-1.5), 0.05)) == 41
    assert DMFPolicy(dmf={"omega_kill": 0.0}).kill_step(node) is None  # no hard-kill at all


def test_sweep_spares_pins_and_goals(mk: StoreFactory) -> None:
    store = mk(100_000)
    pinned = store.add("ok", pinned=True)
    prereq = store.add("thanks")
    goal = store.add("plan the trip", type="task",
                     payload={"goal": "trip", "status": "active", "dependencies": [prereq.id]})
    plain = store.add("hello")
    rng = random.Random(2)
    for _ in range(120):
        store.add(words(rng, 5, 8))
    assert not store.get(plain.id).is_active
    assert store.get(pinned.id).is_active and store.get(prereq.id).is_active
    assert store.get(goal.id).is_active


# --- budget pressure (eqs 22-26) -------------------------------------------------------------


def test_budget_pressure_skips_pins_and_goals_until_forced(mk: StoreFactory) -> None:
    store = mk(40)
    pinned = store.add("ok", pinned=True)                 # the lowest S_prune of all
    prereq = store.add("thanks")
    goal = store.add("plan the trip", type="task",
                     payload={"goal": "trip", "status": "active", "dependencies": [prereq.id]})
    rng = random.Random(6)
    for _ in range(30):
        store.add(words(rng, 2, 5))
        assert all(store.get(i).is_active for i in (pinned.id, prereq.id, goal.id))
        assert sum(n.weight for n in store.list()) <= 40
    store.add(" ".join(["berlin"] * 40))
    assert not store.get(pinned.id).is_active
    why = store.explain(pinned.id).rationale
    assert why.startswith("evicted by dmf: DMF budget pruning: S_prune 0.")
    assert "forced by budget" in why
    check_invariants(store)



Spec = list[tuple[str, float, dict[str, float]]]


def imported(store: MemoryStore, specs: Spec, at: int,
             supersedes: list[tuple[int, int]] | None = None) -> list[str]:
    """Import memories with chosen Ω and cues, all written at step ``at``."""
    nodes = [MemoryNode(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"dmf-test-{i}")), type="episodic",
                        content=text, weight=1, step=at, seq=i + 1, touch_seq=i + 1,
                        activated_seq=i + 1, signals={"omega": omega, **cues})
             for i, (text, omega, cues) in enumerate(specs)]
    edges = [Edge(source=nodes[a].id, predicate=Predicate.SUPERSEDES, target=nodes[b].id,
                  step=at) for a, b in supersedes or []]
    store.import_jsonld(to_jsonld(nodes, edges, {"default": at}))
    return [n.id for n in nodes]


def test_paper_worked_example_order_and_tiers(mk: StoreFactory) -> None:
    """§7: a constraint at Ω_eff 0.25 scores 0.45 and outlives a plain 0.40; a superseded
    0.60 scores 0.25 and goes first; healthy memories go last, and say why."""
    specs: Spec = [("the user set a firm rule", 0.25, {"constraint": 1.0}),
                   ("a plain remark about lunch", 0.40, {}),
                   ("the old hotel preference", 0.60, {}),
                   ("a vivid important detail", 0.90, {}),
                   ("the new hotel preference", 0.95, {})]
    with mk(1000) as scratch:
        weights = sum(max(1, scratch.token_counter.count(text)) for text, _, _ in specs)
    store = mk(weights)                                          # exactly full after the import
    rule, plain, old, vivid, new = imported(store, specs, at=10, supersedes=[(4, 2)])
    since = len(store.audit)
    # needs every token back; the filler is in the view while its own call restores the
    # budget (eager views), so the counts below are of 6 active memories, not 5, and the
    # filler (S_prune 0.31) ranks 2nd by S_prune without being taken (its own call)
    store.add(" ".join(["filler"] * weights))
    order = evictions(store, since)
    assert [i for i, _ in order] == [old, plain, rule, vivid, new]
    why = dict(order)
    assert "S_prune 0.24 (Ω_eff 0.59, no retention bonus, − supersession penalty 0.35" in why[old]
    assert "lowest of 6 by S_prune; tier unstable" in why[old]
    assert "S_prune 0.39 (Ω_eff 0.39, no retention bonus), rank 3" in why[plain]
    assert "S_prune 0.44 (Ω_eff 0.24, + retention bonus 0.20 for constraint)" in why[rule]
    assert "tier critical" in why[rule]
    assert why[vivid].endswith("forced by budget (DMF's healthy tier, Ω_eff 0.88 > τ_H 0.75, "
                               "protected from budget pruning by seed 004 §7.2.1, and nothing"
                               " else was left) [4 of 6 active]")
    assert "tier healthy" in why[new] and "forced by budget (DMF's healthy tier" in why[new]


TABLE2: Spec = [("Function must run in O(n) time", 0.86, {}),             # technical fact
                ("Do not use external APIs", 0.68, {"constraint": 1.0}),  # user constraint
                ("the parser keeps the quoted strings intact", 0.68, {}),  # content-rich
                ("we talked about it for a while", 0.44, {})]             # average turn


def table2_store(mk: StoreFactory,
                 healthy_tier: str | None = None) -> tuple[MemoryStore, list[str]]:
    """Seed 004's Table 2 profiles (Ω 0.86, 0.68 + constraint, 0.68, 0.44), written at step
    10, the store exactly full; each later turn needs the room of all of them."""
    params = {} if healthy_tier is None else {"healthy_tier": healthy_tier}
    with mk(1000) as scratch:
        weights = sum(max(1, scratch.token_counter.count(t)) for t, _, _ in TABLE2)
    store = mk(weights, policy_params=params)
    return store, imported(store, TABLE2, at=10)


def test_paper_table2_profiles_under_budget_pressure(mk: StoreFactory) -> None:
    """§7.2 with the paper's numbers, by hand: at step 11 (Δn 1, λ_eff = 0.035·(1 − 0.5·Ω))
    Ω_eff = 0.86·e^−0.01995 = 0.843 (healthy, > 0.75), 0.68·e^−0.02310 = 0.664 (+0.20
    constraint bonus: S_prune 0.864), 0.664, 0.44·e^−0.02730 = 0.428. Candidate set C: the
    three unhealthy ones; argmin S_prune: 0.428, 0.664, then the constraint (0.864) — the
    bonus ranks it above an equal Ω_eff (§7.2.4 "key distinction"). The healthy fact
    (0.843 < 0.864: a lower score than the constraint) is protected (eq 22) and goes last,
    forced by the hard budget."""
    store, (fact, rule, rich, avg) = table2_store(mk)
    assert [round(effective_score(o, 1), 3) for _, o, _ in TABLE2] == [0.843, 0.664, 0.664,
                                                                       0.428]
    since = len(store.audit)
    store.add(" ".join(["filler"] * int(store.config.budget)))
    order = evictions(store, since)
    assert [i for i, _ in order] == [avg, rich, rule, fact]
    why = dict(order)
    # the filler went first
    assert "S_prune 0.43 (Ω_eff 0.43, no retention bonus), rank 2 of 5" in why[avg]
    assert "S_prune 0.86 (Ω_eff 0.66, + retention bonus 0.20 for constraint)" in why[rule]
    assert "forced by budget" not in why[rule]
    assert "S_prune 0.84 (Ω_eff 0.84, no retention bonus)" in why[fact]
    assert "forced by budget (DMF's healthy tier, Ω_eff 0.84 > τ_H 0.75" in why[fact]
    assert policy_of(store).config.healthy_tier == "protected"


def test_a_healthy_leaf_outlives_an_unhealthy_non_leaf(mk: StoreFactory) -> None:
    """The case the audit found: a card (healthy leaf, Ω 0.89) derives from an unhealthy turn
    (Ω 0.44, a non-leaf). The template takes leaves before non-leaves, so before issue 33 the
    healthy card went first (healthy_tier="last"); protected, the unhealthy turn goes."""
    def run(healthy_tier: str | None) -> list[str]:
        turn_spec: Spec = [("we talked about the parser for a while", 0.44, {})]
        with mk(1000) as scratch:
            budget = 2 * sum(scratch.token_counter.count(t) for t, _, _ in turn_spec)
        params = {} if healthy_tier is None else {"healthy_tier": healthy_tier}
        store = mk(budget, policy_params=params)
        [turn] = imported(store, turn_spec, at=10)
        card = MemoryNode(id=str(uuid.uuid5(uuid.NAMESPACE_URL, "dmf-card")), type="episodic",
                          content="the parser", weight=1, step=10, seq=5, touch_seq=5,
                          activated_seq=5, signals={"omega": 0.89})
        edge = Edge(source=card.id, predicate=Predicate.DERIVES_FROM, target=turn, step=10)
        store.import_jsonld(to_jsonld([card], [edge], {"default": 10}))
        since = len(store.audit)
        store.add(" ".join(["filler"] * (budget - 2)))
        out = [i for i, _ in evictions(store, since)]
        assert out, "the filler needed room"
        return [("turn" if i == turn else "card") for i in out]

    assert run("last")[0] == "card"
    assert run(None)[0] == "turn"


def test_supersession_penalty_follows_the_superseding_memory(mk: StoreFactory) -> None:
    store = mk(1000)
    older, newer = imported(store, [("hotel choice one", 0.45, {}),
                                    ("hotel choice two", 0.45, {})], at=3)
    policy = policy_of(store)

    def first() -> str:
        return policy.apply(policy_view(store), 1).evictions[0].node_id

    assert first() == older                     # same Ω: the older has decayed more
    sup = store.add("hotel choice three", links=[("supersedes", newer)], pinned=True)
    assert first() == newer                     # −0.35 while an active memory supersedes it
    assert policy.s_prune("default", newer, step(store)) == pytest.approx(
        effective_score(0.45, step(store) - 3) - 0.35)
    store.forget(sup.id)
    assert first() == older                     # the penalty left with its source
    store.restore(sup.id)
    assert first() == newer


def random_workload(store: MemoryStore, rng: random.Random, n: int, check: Any) -> int:
    """Adds (some superseding an active memory) and retrievals; ``check`` after each add."""
    pruned = 0
    for _ in range(n):
        if rng.random() < 0.2:
            store.retrieve(words(rng, 1, 3), k=2)
        before = {m.id: m for m in store.list()}
        links = []
        if before and rng.random() < 0.15:
            links = [(rng.choice(["supersedes", "corrects"]), rng.choice(sorted(before)))]
        target = links[0][1] if links else None
        brute_before = {i: brute(store, m, step(store) + 1, incoming=i == target)
                        for i, m in before.items()}
        since = len(store.audit)
        node = store.add(words(rng), type=rng.choice(PLAIN), links=links)
        out = evictions(store, since)
        killed = [i for i, why in out if "hard-kill" in why]
        budget = [i for i, why in out if "budget pruning" in why]
        pruned += len(budget)
        check(before, brute_before, killed, budget, node)
    return pruned


@pytest.mark.parametrize(("adds", "floor"), [
    pytest.param(100, 30, id="smoke"), pytest.param(200, 60, marks=pytest.mark.heavy, id="full")])
def test_tiny_tolerance_gives_the_exact_order(mk: StoreFactory, adds: int, floor: int) -> None:
    """Each add's prunes are exactly the brute-force order's (``floor``: the workload
    pruned at least 0.3 memories per add, as the full 200 adds prune more than 60)."""
    store = mk(60, policy_params={"drift_tolerance": 1e-12})

    def check(before: dict[str, MemoryNode], scores: dict[str, tuple[bool, float]],
              killed: list[str], pruned: list[str], node: MemoryNode) -> None:
        rest = [m for i, m in before.items() if i not in killed]
        need = sum(m.weight for m in rest) + node.weight - 60
        order = sorted(rest, key=lambda m: (*scores[m.id], m.step, m.seq))
        assert pruned == exact_evictions(order, need)

    assert random_workload(store, random.Random(8), adds, check) > floor


@pytest.mark.parametrize(("adds", "floor"), [
    pytest.param(125, 30, id="smoke"), pytest.param(250, 60, marks=pytest.mark.heavy, id="full")])
def test_default_tolerance_keeps_the_stated_bound(mk: StoreFactory, adds: int,
                                                  floor: int) -> None:
    """Every pruned memory's S_prune is below every kept memory's S_prune + 0.02 (same
    tier), and no healthy memory goes while an unhealthy one stays (``floor``: prunes
    the workload made at least, 0.24 per add)."""
    store = mk(60)
    worst = 0.0

    def check(before: dict[str, MemoryNode], scores: dict[str, tuple[bool, float]],
              killed: list[str], pruned: list[str], node: MemoryNode) -> None:
        nonlocal worst
        kept = [i for i in before if i not in killed and i not in pruned]
        for x in pruned:
            hx, sx = scores[x]
            for y in kept:
                hy, sy = scores[y]
                assert hx <= hy  # healthy ones only after every unhealthy one
                if hx == hy:
                    assert sx < sy + 0.02 + 1e-12
                    worst = max(worst, sx - sy)

    assert random_workload(store, random.Random(4), adds, check) > floor
    assert worst > 0  # the approximation was exercised, within its bound
    policy = policy_of(store)
    inserts = sum(1 for e in store.audit.events() if e.op.value == "insert")
    assert policy.rekeys("default") <= 51 * inserts  # ≤ Ω/tolerance + 1 refreshes each


# --- reopen -------------------------------------------------------------------------------


def script(mk: StoreFactory, path: Path | None, seed: int, reopen_every: int | None = None,
           ops: int = 300) -> dict[str, Any]:
    def open_() -> MemoryStore:
        if path is None:  # the same stores, never persisted
            return mk(170, records=SQLiteRecordStore(), index=NumpyIndex(), seed=seed)
        return MemoryStore.open(path, policy="dmf", budget=170, clock=FakeClock(),
                                audit_key=KEY, nlp="rules", index="numpy", seed=seed)

    def add(store: MemoryStore, rng: random.Random) -> str:
        act = [n.id for n in store.list()]
        links = [("supersedes", rng.choice(act))] if act and rng.random() < 0.15 else []
        return store.add(rng.choice(["ok", "thanks", words(rng)]), links=links,
                         type=rng.choice([*PLAIN, "task"]), pinned=rng.random() < 0.05).id

    return reopen_script(open_, seed, add, ops=ops, reopen_every=reopen_every, words=words)


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("ops", "kills", "prunes"), [
    pytest.param(200, 5, 10, id="smoke"),
    pytest.param(300, 5, 20, marks=pytest.mark.heavy, id="full")])
def test_reopen_gives_the_same_decisions(mk: StoreFactory, tmp_path: Path, ops: int,
                                         kills: int, prunes: int) -> None:
    """The script with a reopen every 9 operations decides as without, and as in memory
    (``kills``/``prunes``: both kinds of eviction happened, in proportion to ``ops``)."""
    a = script(mk, tmp_path / "a", 31, ops=ops)
    b = script(mk, tmp_path / "b", 31, reopen_every=9, ops=ops)
    kinds = [e["rationale"].split(":")[1].strip() for e in a["audit"] if e["op"] == "evict"
             and e["policy"] == "dmf"]
    assert kinds.count("DMF hard-kill") > kills and kinds.count("DMF budget pruning") > prunes
    assert b["audit"] == a["audit"]
    assert b["export"] == a["export"]
    assert script(mk, None, 31, ops=ops)["audit"] == a["audit"]


# --- property: the budget holds after every operation ---------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "retrieve", "forget", "restore",
                                          "supersede"]),
                         st.lists(st.sampled_from([*VOCAB, "ok", "thanks"]), min_size=1,
                                  max_size=7).map(" ".join),
                         st.sampled_from([*PLAIN, "task"]), st.booleans(), st.integers(0, 10**4)),
               min_size=5, max_size=60)


@settings(max_examples=30, deadline=None,  # the factory mk makes new stores per example
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_budget_holds_after_every_operation(mk: StoreFactory, plan: Plan) -> None:
    with mk(35) as store:
        run_plan(store, plan, 35)
        assert set(policy_of(store)._space("default").items) == {n.id for n in store.list()}
        check_invariants(store)
