"""Meta-controller: a LinUCB bandit over the registered policies, on real stores."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis.stateful import run_state_machine_as_test
from invariants import check_invariants
from test_properties import SIZES, StoreMachine, machine_settings

from mars_core.audit import AuditOp
from mars_core.clock import FakeClock
from mars_core.errors import ConfigError
from mars_core.policies import Candidate, MetaController, Policy, PolicyView, make_policy
from mars_core.policies import base as policy_base
from mars_core.policies.meta import (
    CONTEXT_FEATURES,
    DEFAULT_ARMS,
    DEFAULT_GRID,
    LinUCB,
    candidate_label,
)
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory, policy_view

KEY = b"k" * 32


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=KEY, nlp="rules", policy="meta")


def recency_workload(store: MemoryStore, steps: int, seed: int) -> None:
    """Each step stores a fact and asks about one of the last 7; the answer credits it."""
    rng = random.Random(seed)
    ids: list[str] = []
    for i in range(steps):
        ids.append(store.add(f"item zq{i}x has colour c{rng.randint(0, 9)}").id)
        target = ids[max(0, i - rng.randint(0, 6))]
        hits = store.retrieve(f"zq{ids.index(target)}x", k=2)
        offered = [h.id for h in hits]
        store.policy_for().on_credit("default", [target] if target in offered else [], offered, i)


def decisions(store: MemoryStore) -> dict[int, str]:
    """Decision number -> arm, read back from the audit log."""
    out: dict[int, str] = {}
    for ev in store.audit.events():
        if (ev.op in (AuditOp.EVICT, AuditOp.SUMMARISE) and ev.policy == "meta"
                and "decision" in ev.params):
            out.setdefault(ev.params["decision"], ev.params["arm"])
    return out


@pytest.fixture
def newest_arm(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A test-only arm that forgets the newest memories first (bad on recency streams)."""

    class Newest(Policy):
        def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
            for node in sorted(view.active(), key=lambda n: -n.seq):
                yield Candidate(node.id, None, {}, "newest first")

    Newest.name = "newest"
    monkeypatch.setitem(policy_base._REGISTRY, "newest", Newest)
    yield "newest"


# --- construction ---------------------------------------------------------------------------


@pytest.mark.backend_neutral
def test_arms_default_to_the_seed_arms_and_validate() -> None:
    meta = make_policy("meta")
    assert isinstance(meta, MetaController)
    # every policy of §4.2 is registered by now, each with its parameter sets
    assert meta.arm_names == tuple(candidate_label(name, p) for name in DEFAULT_ARMS
                                   for p in DEFAULT_GRID.get(name, ({},)))
    assert set(meta.policy_of.values()) == set(DEFAULT_ARMS) and len(meta.arm_names) == 8
    assert meta.params()["arm"] == "fifo" and "decision" not in meta.params()
    with pytest.raises(ConfigError):
        make_policy("meta", arms=["meta", "lru"])
    with pytest.raises(ConfigError):
        make_policy("meta", arms=["nothing-registered"])
    with pytest.raises(ConfigError):
        make_policy("meta", alpha=-1)
    with pytest.raises(ConfigError):
        make_policy("meta", arm_params={"hybrid": {"stale_recency": 5}})


def test_unregistered_arms_are_skipped_then_used_once_registered(mk: StoreFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert MetaController(arms=["lru", "later"]).arm_names == ("lru",)

    class Later(Policy):
        """An arm another module registers later (e.g. a new policy)."""

    Later.name = "later"
    monkeypatch.setitem(policy_base._REGISTRY, "later", Later)
    assert MetaController(arms=["lru", "later"]).arm_names == ("lru", "later")
    store = mk(budget=40, policy_params={"arms": ["lru", "later"], "decision_interval": 1})
    for i in range(30):
        store.add(f"memory number {i} about things")
    assert set(decisions(store).values()) == {"lru", "later"}


@pytest.mark.backend_neutral
def test_linucb_prefers_the_rewarded_arm_and_explores_unseen_ones() -> None:
    bandit = LinUCB(["a", "b"], dim=2, alpha=1.0, warmup=1)
    x = np.array([1.0, 0.3])
    assert bandit.choose(x)[0] == "a"
    bandit.update("a", x, 0.0)
    assert bandit.choose(x)[0] == "b"
    for _ in range(20):
        bandit.update("b", x, 1.0)
        bandit.update("a", x, 0.0)
    arm, scores = bandit.choose(x)
    assert arm == "b" and scores["b"] > scores["a"]


@pytest.mark.backend_neutral
def test_each_parameter_set_of_the_grid_is_an_arm() -> None:
    """§3.3.5: π picks a policy *and its parameters*: every (policy, parameter set) pair
    is an arm; grid sets are merged over arm_params, nested mappings key by key."""
    meta = MetaController(arms=["lru", "hybrid", "priority"],
                          arm_params={"hybrid": {"tie_band": 0.1},
                                      "priority": {"density": {"lambda_priv": 0.5}}})
    recency = "priority(density.alpha=0.2, density.beta=0.6, density.gamma=0.2)"
    assert meta.arm_names == ("lru", "hybrid", "hybrid(stale_recency=0.2)", "priority", recency)
    skim = meta.arms["hybrid(stale_recency=0.2)"].params()
    assert (skim["stale_recency"], skim["tie_band"]) == (0.2, 0.1)
    assert meta.arms["hybrid"].params()["stale_recency"] == 0.05  # the policy's default
    dens = meta.arms[recency].config.density  # type: ignore[attr-defined]
    assert (dens.alpha, dens.beta, dens.gamma, dens.lambda_priv) == (0.2, 0.6, 0.2, 0.5)
    assert meta.grid_params[recency] == {"density": {"alpha": 0.2, "beta": 0.6, "gamma": 0.2}}
    assert meta.policy_of == {a: a.split("(")[0] for a in meta.arm_names}
    assert MetaController(arms=["lru", "hybrid"], param_grid={}).arm_names == ("lru", "hybrid")
    with pytest.raises(ConfigError):  # a parameter the policy refuses
        make_policy("meta", param_grid={"hybrid": [{}, {"stale_recency": 5}]})
    with pytest.raises(ConfigError):  # the same set twice
        make_policy("meta", param_grid={"hybrid": [{"stale_recency": 0.2}] * 2})
    with pytest.raises(ConfigError):
        make_policy("meta", param_grid={"hybrid": []})


@pytest.fixture
def ordered_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A test-only policy with one parameter: forget the oldest first, or the newest."""

    class Ordered(Policy):
        def __init__(self, newest: bool = False) -> None:
            self.newest = newest

        def params(self) -> dict[str, Any]:
            return {"newest": self.newest}

        def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
            for node in sorted(view.active(), key=lambda n: -n.seq if self.newest else n.seq):
                yield Candidate(node.id, None, {}, "newest first" if self.newest else "oldest")

    Ordered.name = "ordered"
    monkeypatch.setitem(policy_base._REGISTRY, "ordered", Ordered)
    yield "ordered"


def test_learns_which_parameters_of_a_policy_pay(mk: StoreFactory, ordered_policy: str) -> None:
    """One policy, two parameter sets, the same reward: on a stream where answers use
    recent memories, forgetting the newest first loses the credit, so the bandit settles
    on newest=False; each decision's audit names the parameters and why."""
    grid = {ordered_policy: [{"newest": True}, {"newest": False}]}
    store = mk(budget=120, policy_params={"arms": [ordered_policy], "param_grid": grid,
                                          "decision_interval": 5})
    recency_workload(store, 300, seed=1)
    chosen = [arm for _, arm in sorted(decisions(store).items())]
    late = Counter(chosen[len(chosen) // 2:])
    assert late == Counter({"ordered(newest=False)": sum(late.values())}), late
    whys = {ev.params["decision"]: ev.params["why"] for ev in store.audit.events()
            if ev.op is AuditOp.EVICT and "decision" in ev.params}
    first, last = whys[min(whys)], whys[max(whys)]
    assert first.startswith("ordered with newest=True: warm-up")
    assert last.startswith("ordered with newest=False: highest UCB")
    assert "best other parameters of ordered: ordered(newest=True)" in last
    p = next(ev.params for ev in reversed(list(store.audit.events()))
             if ev.op is AuditOp.EVICT and "decision" in ev.params)
    assert p["grid_params"] == {"newest": False} and p["arm_params"] == {"newest": False}
    assert p["policy"] == "ordered" and set(p["ucb"]) == {"ordered(newest=True)",
                                                          "ordered(newest=False)"}
    check_invariants(store)


def test_the_chosen_parameters_survive_reopen(tmp_path: Path) -> None:
    params = {"arms": ["lru", "hybrid"], "decision_interval": 3}
    store = MemoryStore.open(tmp_path, clock=FakeClock(), audit_key=KEY, nlp="rules",
                             budget=80, policy="meta", policy_params=params)
    recency_workload(store, 60, seed=4)
    meta = store.policy_for()
    assert isinstance(meta, MetaController)
    before = meta.params()
    store.close()
    store = MemoryStore.open(tmp_path, clock=FakeClock(), audit_key=KEY, nlp="rules",
                             budget=80, policy="meta", policy_params=params)
    again = store.policy_for()
    assert isinstance(again, MetaController)
    assert again.params_for("default") == before and before["why"]
    store.close()


# --- decisions on real stores ---------------------------------------------------------------


def test_same_seed_same_arm_choices(mk: StoreFactory) -> None:
    runs = []
    for _ in range(2):
        store = mk(budget=120, seed=3, policy_params={"decision_interval": 5})
        recency_workload(store, 150, seed=3)
        runs.append(decisions(store))
        store.close()
    assert runs[0] == runs[1] and len(runs[0]) >= 20
    assert set(runs[0].values()) == set(make_policy("meta").arm_names)  # warm-up plays all


@pytest.mark.parametrize("steps", [pytest.param(300, id="smoke"),
                                   pytest.param(600, marks=pytest.mark.heavy, id="full")])
@pytest.mark.parametrize("arms", [["random", "lru"], ["random", "fifo"]])
def test_learns_to_prefer_recency_on_a_recency_stream(mk: StoreFactory, arms: list[str],
                                                      steps: int) -> None:
    store = mk(budget=120, policy_params={"arms": arms, "decision_interval": 5})
    recency_workload(store, steps, seed=0)
    chosen = [arm for _, arm in sorted(decisions(store).items())]
    late = Counter(chosen[len(chosen) // 2:])
    assert late[arms[1]] >= 0.75 * sum(late.values()), late
    meta = store.policy_for()
    assert isinstance(meta, MetaController)
    assert meta.bandit.plays[arms[1]] > meta.bandit.plays["random"]
    check_invariants(store)


def test_clearly_worse_arm_is_abandoned(mk: StoreFactory, newest_arm: str) -> None:
    store = mk(budget=120, policy_params={"arms": [newest_arm, "fifo"],
                                          "decision_interval": 5})
    recency_workload(store, 300, seed=1)
    chosen = [arm for _, arm in sorted(decisions(store).items())]
    assert Counter(chosen[len(chosen) // 2:]) == Counter({"fifo": len(chosen[len(chosen) // 2:])})


def test_every_decision_is_audited_with_its_arm_and_scores(mk: StoreFactory) -> None:
    store = mk(budget=80, policy_params={"decision_interval": 3})
    recency_workload(store, 80, seed=2)
    meta = store.policy_for()
    assert isinstance(meta, MetaController)
    audited = decisions(store)
    assert sorted(audited) == list(range(1, meta._decisions + 1))
    for ev in store.audit.events():
        if ev.op is AuditOp.EVICT and ev.policy == "meta" and "decision" in ev.params:
            p = ev.params
            assert ev.rationale.startswith("evicted by meta/")
            assert set(p["ucb"]) == set(meta.arm_names)
            assert p["policy"] == meta.policy_of[p["arm"]] and p["why"]
            assert set(p["context"]) == set(CONTEXT_FEATURES)
            assert p["arm_params"] == meta.arms[p["arm"]].params()
    rewards = [ev.params["reward"] for ev in store.audit.events()
               if ev.op is AuditOp.EVICT and ev.params.get("reward") is not None]
    assert rewards and all(-0.1 - 1e-9 <= r <= 1.0 for r in rewards)


def test_hooks_reach_every_arm_and_survive_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    store = MemoryStore.open(tmp_path, clock=clock, audit_key=KEY, nlp="rules", budget=60,
                             policy="meta", policy_params={"arms": ["fifo", "lru"]})
    for i in range(25):
        store.add(f"note {i} on topic {i % 4}")
        store.retrieve(f"topic {i % 4}", k=1, include_archive=False)  # touch active ones
    active = {n.id for n in store.list()}

    def indices(s: MemoryStore) -> dict[str, list[str]]:
        meta = s.policy_for()
        assert isinstance(meta, MetaController)
        return {name: list(arm._order["default"])  # type: ignore[attr-defined]
                for name, arm in meta.arms.items()}

    before = indices(store)
    assert all(set(order) == active for order in before.values())
    assert before["fifo"] != before["lru"]  # retrievals moved LRU's order, not FIFO's
    store.close()
    store = MemoryStore.open(tmp_path, clock=clock, audit_key=KEY, nlp="rules", budget=60,
                             policy="meta", policy_params={"arms": ["fifo", "lru"]})
    assert indices(store) == before
    store.close()


def test_context_features_are_observable(mk: StoreFactory) -> None:
    store = mk(budget=10_000, policy_params={"arms": ["lru"]})
    meta = store.policy_for()
    assert isinstance(meta, MetaController)
    a = store.add("Ana is Bruno's sister", type="social")
    store.add("finish the report", type="task", payload={"status": "done"})
    store.add("it rained today")
    store.retrieve("Ana sister", budget_tokens=50)
    meta.on_forget(a, 3)
    view = policy_view(store, budget=10_000)
    x = dict(zip(CONTEXT_FEATURES, meta.context(view).tolist(), strict=True))
    assert x["bias"] == 1.0
    assert x["arrival_rate"] == pytest.approx(3 / 4)
    assert x["social_share"] == pytest.approx(1 / 3) and x["task_share"] == pytest.approx(1 / 3)
    assert 0 < x["hit_rate"] <= 1 and x["complaints"] == pytest.approx(0.5)
    assert 0 < x["average_age"] < 0.05


class MetaStoreMachine(StoreMachine):
    policy = "meta"


@pytest.mark.backend_neutral  # MemoryStore.open's own default, as a unittest case had
@pytest.mark.parametrize("size", SIZES)
def test_meta_store_machine(size: str) -> None:
    """test_properties' state machine under the meta policy (25 examples in full, 2 in
    the smoke: each step runs the bandit's arms)."""
    run_state_machine_as_test(MetaStoreMachine, settings=machine_settings(size, smoke_examples=2))
