"""What policies learn survives a reopen: ``state_dict`` / ``load_state`` round trips.

Each namespace has its own policy instance; the store saves its ``state_dict()`` in the
namespace's record (with every commit that changed it, and at close) and calls
``load_state`` after rebuilding the policy from the active memories when the namespace
is loaded; these tests reopen real on-disk stores and show the decisions then match an
uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mars_core import FakeClock, MemoryStore, layout
from mars_core.errors import MarsBackendError, ValidationError
from mars_core.policies import MetaController, PriorityDecayPolicy, make_policy
from mars_core.storage import SQLiteRecordStore
from mars_core.testing import record_store

KEY = b"k" * 32
FILLERS = ["paris is in france", "berlin is in germany", "rome is in italy",
           "madrid is in spain", "vienna is in austria", "oslo is in norway",
           "lisbon is in portugal", "athens is in greece", "dublin is in ireland"]


def _open(path: Path | None, policy: str, budget: int, **params: Any) -> MemoryStore:
    kw: dict[str, Any] = {"policy": policy, "budget": budget, "clock": FakeClock(),
                          "audit_key": KEY, "nlp": "rules", "policy_params": params}
    return MemoryStore.open(path, **kw) if path is not None else MemoryStore(**kw)


def _saved_policy(store: MemoryStore, ns: str = "default") -> Any:
    """The policy state the namespace's record holds (None: none saved)."""
    with record_store(store).read() as tx:
        record = tx.namespace(ns)
    assert record is not None
    saved = record.state.get("policy")
    return None if saved is None else saved["state"]


def _drop_saved_policy(path: Path, ns: str = "default") -> None:
    """Delete the policy state saved in a closed store's namespace record."""
    records = SQLiteRecordStore(path / layout.RECORDS_FILE)
    try:
        with records.write() as tx:
            record = tx.namespace(ns)
            assert record is not None and "policy" in record.state
            tx.put_namespace(dataclasses.replace(
                record, version=record.version + 1,
                state={k: v for k, v in record.state.items() if k != "policy"}))
    finally:
        records.close()


# --- Priority-Decay hysteresis ---------------------------------------------------------------


def _spare_x(store: MemoryStore) -> tuple[str, str]:
    """Make X examined-but-spared (a non-leaf at a trigger); returns (X id, summary id)."""
    x = store.add("zebra quokka lemur", type="episodic")
    d = store.add("zebra summary", type="semantic",
                  provenance={"source": "summary", "derived_from": [x.id]})
    store.add("walrus narwhal okapi", type="episodic")
    for text in FILLERS:
        before = len(store.audit)
        store.add(text, type="semantic")
        if any(e.op.value == "evict" for e in store.audit.events()[before:]):
            break
    return x.id, d.id


def _finish(store: MemoryStore, x: str, d: str) -> str:
    """X becomes a leaf and gets one access; the next trigger evicts ... whom?"""
    store.forget(d)
    store.add("walrus okapi zebu", type="episodic")
    assert [h.id for h in store.retrieve("zebra quokka lemur", k=1)] == [x]
    before = len(store.audit)
    store.add("prague is in czechia", type="semantic")
    return next(i for e in store.audit.events()[before:] if e.op.value == "evict"
                for i in e.node_ids)


PARAMS = {"hysteresis_margin": 0.1, "drift_tolerance": 1e-9}


@pytest.mark.local_files  # it copies the store's directory to have a second store
def test_priority_hysteresis_survives_a_reopen(tmp_path: Path) -> None:
    with _open(None, "priority", 34, **PARAMS) as store:
        x, d = _spare_x(store)
        assert _finish(store, x, d) == x  # uninterrupted: X is first in line by hysteresis

    path = tmp_path / "store"
    with _open(path, "priority", 34, **PARAMS) as store:
        x, d = _spare_x(store)
        saved = json.loads(json.dumps(store.policy_for().state_dict()))
    assert saved["namespaces"]["default"]["examined"][x][1] >= 0
    shutil.copytree(path, tmp_path / "copy")
    with _open(path, "priority", 34, **PARAMS) as store:
        assert store.policy_for().state_dict() == saved  # the store saved and reloaded it
        assert _finish(store, x, d) == x  # the same decision after the reopen
    _drop_saved_policy(tmp_path / "copy")  # drop the saved state
    with _open(tmp_path / "copy", "priority", 34, **PARAMS) as store:
        assert _finish(store, x, d) != x  # ... and the reopened store forgot the hysteresis


@pytest.mark.backend_neutral
def test_priority_state_drops_inactive_memories_and_rejects_bad_input() -> None:
    policy = PriorityDecayPolicy()
    assert policy.state_dict() == {}
    policy.load_state({})  # nothing to load
    policy.load_state({"version": 1, "namespaces": {"ns": {"eligible": {"gone": [0.5, 3]}}}})
    assert policy.state_dict() == {}  # "gone" is not an active memory
    for bad in ({"version": 2, "namespaces": {}},
                {"version": 1, "namespaces": {"ns": {"eligible": {"a": [0.5]}}}},
                {"version": 1, "namespaces": {"ns": {"eligible": {"a": ["x", 1]}}}},
                {"version": 1, "namespaces": {"ns": {"other": {}}}},
                {"version": 1, "namespaces": [], "extra": 1}):
        with pytest.raises(ValidationError):
            policy.load_state(bad)
    assert policy.state_dict() == {}


@pytest.mark.backend_neutral
def test_a_stateless_policy_refuses_foreign_state() -> None:
    fifo = make_policy("fifo")
    assert fifo.state_dict() == {}
    fifo.load_state({})
    with pytest.raises(ValidationError, match="keeps no state"):
        fifo.load_state({"version": 1})


# --- the meta-controller's LinUCB statistics -------------------------------------------------


def _drive(store: MemoryStore, rng: random.Random, adds: int) -> None:
    words = ["ana", "tea", "coffee", "meeting", "project", "sister", "paris", "cat", "rain"]
    for k in range(adds):
        store.add(" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + f" {k}",
                  type=rng.choice(["episodic", "semantic"]))
        if k % 3 == 0:
            store.retrieve(rng.choice(words), k=2)


def _arm_trace(store: MemoryStore) -> list[str]:
    return [e.params["arm"] for e in store.audit.events()
            if e.op.value == "evict" and "arm" in e.params]


META = {"arms": ["fifo", "lru", "priority"], "decision_interval": 3}


def test_meta_learning_survives_a_reopen(tmp_path: Path) -> None:
    with _open(None, "meta", 60, **META) as store:
        _drive(store, random.Random(1), 48)
        want = _arm_trace(store)
        want_state = store.policy_for().state_dict()
    assert len(set(want)) > 1 and want_state["decisions"] > 5

    path = tmp_path / "meta"
    with _open(path, "meta", 60, **META) as store:
        rng = random.Random(1)
        _drive(store, rng, 24)
        saved = json.loads(json.dumps(store.policy_for().state_dict()))
        rng_state = rng.getstate()
    with _open(path, "meta", 60, **META) as store:
        assert store.policy_for().state_dict()["decisions"] == saved["decisions"]
        assert store.policy_for().state_dict() == saved  # all of it, from disk: flushed at close
        rng = random.Random()
        rng.setstate(rng_state)
        for k in range(24, 48):  # the second half of the same workload
            words = ["ana", "tea", "coffee", "meeting", "project", "sister", "paris", "cat",
                     "rain"]
            store.add(" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + f" {k}",
                      type=rng.choice(["episodic", "semantic"]))
            if k % 3 == 0:
                store.retrieve(rng.choice(words), k=2)
        assert _arm_trace(store) == want  # same arms, decision for decision
        got = store.policy_for().state_dict()
    assert got["decisions"] == want_state["decisions"]
    for arm in META["arms"]:
        assert np.allclose(got["bandit"]["A"][arm], want_state["bandit"]["A"][arm])
        assert np.allclose(got["bandit"]["b"][arm], want_state["bandit"]["b"][arm])


def test_a_failed_commit_leaves_the_policy_state_unsaved(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit carries what the namespace's policy learned, into its namespace
    record. Learning no commit carried yet (a credit) counts as saved only once a write
    lands: a failed write loses none of it and leaves it for the next commit (here,
    close) to write."""
    path = tmp_path / "meta"
    with _open(path, "meta", 60, **META) as store:
        _drive(store, random.Random(1), 12)
        committed = _saved_policy(store)
        assert committed == json.loads(json.dumps(store.policy_for().state_dict()))
        offered = [n.id for n in store.list()][:3]
        store.credit(offered[:1], offered)  # learned, not written yet
        pending = json.loads(json.dumps(store.policy_for().state_dict()))
        assert pending != committed

        def fails(**_: Any) -> Any:  # write(durable=...)
            raise MarsBackendError("the disk is full")

        with monkeypatch.context() as m:
            m.setattr(record_store(store), "write", fails)
            with pytest.raises(MarsBackendError):
                store.add("ana drinks tea 99")  # would have carried the credit
        assert _saved_policy(store) == committed  # nothing was written
        live = json.loads(json.dumps(store.policy_for().state_dict()))
        assert live == pending  # the failed call dropped none of the earlier learning
    with _open(path, "meta", 60, **META) as store:
        assert store.policy_for().state_dict() == live  # written at close after all


def test_meta_state_round_trips_and_bad_state_changes_nothing() -> None:
    with _open(None, "meta", 60, **META) as store:
        _drive(store, random.Random(2), 30)
        policy = store.policy_for()
        assert isinstance(policy, MetaController)
        saved = json.loads(json.dumps(policy.state_dict()))
        other = MetaController(**META)
        other.rebuild(store.list())
        other.load_state(saved)
        assert json.loads(json.dumps(other.state_dict())) == saved
        before = json.dumps(other.state_dict())
        broken = json.loads(json.dumps(saved))
        broken["bandit"]["A"]["lru"] = [[1.0]]
        for bad in (broken, {"version": 9}, {**saved, "namespaces": {"default": {"arm": "x"}}},
                    {**saved, "arms": {"priority": {"version": 7}}}):
            with pytest.raises(ValidationError):
                other.load_state(bad)
            assert json.dumps(other.state_dict()) == before
