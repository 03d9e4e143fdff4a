"""Property-based tests: random operation sequences keep every invariant, and replay exactly.

Every test runs on each backend of the matrix (``tests/conftest.py``); the state machine
explores 25 examples on the in-memory backend and 4 on the others (``make test-heavy``;
``make test`` runs the first 4 in memory and elsewhere 1 of at most 15 steps:
:func:`machine_settings`). A hypothesis state machine drives a persisted store
(``MemoryStore.open`` on a temporary directory) through random adds, retrievals,
forgets, updates, restores, links and reopens, and checks
:func:`invariants.check_invariants` after every step. A second set of tests replays one
seeded script in two fresh directories and demands identical
exports, audit events and ids.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from invariants import check_invariants

from mars_core.clock import FakeClock
from mars_core.errors import ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import MemoryStatus, Predicate
from mars_core.store import MemoryStore
from mars_core.testing import memory_graph

AUDIT_KEY = bytes(range(32))
VOCAB = ["ana", "lisbon", "tea", "coffee", "meeting", "project", "deadline", "sister",
         "paris", "berlin", "cat", "dog", "train", "invoice", "doctor", "piano", "garden",
         "rain", "friday", "budget", "internationalisation"]
NAMESPACES = ["alpha", "beta", "gamma"]
CONFIG: dict[str, Any] = {"budget": 40, "namespace_budgets": {"beta": 24}}
TYPES = ["episodic", "semantic", "social", "task"]

texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8).map(" ".join)
sensitivities = st.none() | st.floats(0.0, 1.0, allow_nan=False) | st.sampled_from([0.0, 1.0])

_REPLACES = (Predicate.SUPERSEDES, Predicate.CORRECTS)


def _replaced(graph: MemoryGraph, node_id: str) -> set[str]:
    """What ``node_id`` replaces, transitively (supersedes and corrects edges)."""
    seen: set[str] = set()
    todo = [node_id]
    while todo:
        for e in graph.out_edges(todo.pop()):
            if e.predicate in _REPLACES and e.target not in seen:
                seen.add(e.target)
                todo.append(e.target)
    return seen


MACHINE_SETTINGS = settings(max_examples=25, stateful_step_count=30, deadline=None,
                            derandomize=True, database=None,
                            suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.filter_too_much])


class StoreMachine(RuleBasedStateMachine):
    """Random operations on a persisted store; invariants after every step."""

    policy: ClassVar[str] = "lru"

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mars-prop-"))
        self.clock = FakeClock(tick=timedelta(seconds=1))
        self.store = self._open()
        self.ever: dict[str, str] = {}  # every id ever returned -> its namespace

    def _open(self) -> MemoryStore:
        # seeded: the same ids in every run of an example, so hypothesis replays it exactly
        return MemoryStore.open(self.dir, clock=self.clock, audit_key=AUDIT_KEY,
                                policy=self.policy, seed=0, **CONFIG)

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _ids(self, ns: str | None = None) -> list[str]:
        return sorted(i for i, n in self.ever.items() if ns is None or n == ns)

    @initialize()
    def start(self) -> None:
        assert self.store.stats()["audit_events"] == 0
        assert self.store.list(status=None) == []

    # --- rules ---------------------------------------------------------------------------

    @rule(text=texts, mtype=st.sampled_from(TYPES), sens=sensitivities,
          ns=st.sampled_from(NAMESPACES), derive=st.booleans(), pinned=st.booleans(),
          data=st.data())
    def add(self, *, text: str, mtype: str, sens: float | None, ns: str, derive: bool,
            pinned: bool, data: st.DataObject) -> None:
        same = self._ids(ns)
        provenance: dict[str, Any] | None = None
        payload: dict[str, Any] | None = None
        if derive and same:
            targets = data.draw(st.lists(st.sampled_from(same), min_size=1, max_size=2,
                                         unique=True), label="derived_from")
            provenance = {"source": "summary", "derived_from": tuple(targets)}
        if mtype == "task" and same and data.draw(st.booleans(), label="has_deps"):
            deps = data.draw(st.lists(st.sampled_from(same), min_size=1, max_size=2,
                                      unique=True), label="dependencies")
            status = data.draw(st.sampled_from(["pending", "active", "done"]), label="status")
            payload = {"goal": "finish it", "dependencies": tuple(deps), "status": status}
        before = len(self.store.audit)
        node = self.store.add(text, type=mtype, sensitivity=sens, namespace=ns,
                              provenance=provenance, payload=payload, pinned=pinned)
        assert node.id not in self.ever
        assert node.content == text
        assert node.namespace == ns
        assert node.type.value == mtype
        # without a sensitivity the detectors score it (no preferences are set here)
        assert node.sensitivity == (node.signals["sensitivity_detected"] if sens is None
                                    else sens)
        assert 0.0 <= node.sensitivity <= 1.0
        assert self.store.get(node.id, namespace=ns) == node
        assert node.is_active, "a memory that fits the budget must be active after add"
        assert len(self.store.audit) > before
        self.ever[node.id] = ns
        if provenance:
            derived = {e.target for e in memory_graph(self.store, ns).out_edges(
                node.id, Predicate.DERIVES_FROM)}
            assert derived == set(provenance["derived_from"])

    @rule(text=texts, mtype=st.sampled_from(TYPES), ns=st.sampled_from(NAMESPACES))
    def add_plain(self, text: str, mtype: str, ns: str) -> None:
        """A second, simpler add rule: adds are the most common operation."""
        node = self.store.add(text, type=mtype, namespace=ns)
        assert node.is_active and node.id not in self.ever
        self.ever[node.id] = ns

    @precondition(lambda self: bool(self.ever))
    @rule(data=st.data(), read_only=st.booleans())
    def retrieve_known(self, data: st.DataObject, read_only: bool) -> None:
        """Query with the text of an existing memory of its own namespace."""
        nid = data.draw(st.sampled_from(self._ids()), label="query_of")
        node = self.store.get(nid, namespace=self.ever[nid])
        self.retrieve(text=node.content, ns=node.namespace, read_only=read_only,
                      include_archive=True, budget=100, k=None)

    @rule(text=texts, ns=st.sampled_from(NAMESPACES), read_only=st.booleans(),
          include_archive=st.booleans(), budget=st.integers(1, 60),
          k=st.none() | st.integers(1, 5))
    def retrieve(self, *, text: str, ns: str, read_only: bool, include_archive: bool,
                 budget: int, k: int | None) -> None:
        counts = {i: self.store.get(i, namespace=n).access_count for i, n in self.ever.items()}
        audit_len = len(self.store.audit)
        hits = self.store.retrieve(text, namespace=ns, read_only=read_only, budget_tokens=budget,
                                   k=k, include_archive=include_archive)
        assert all(h.node.namespace == ns for h in hits)
        assert sum(h.node.weight for h in hits) <= budget
        assert k is None or len(hits) <= k
        assert len({h.id for h in hits}) == len(hits)
        if not include_archive:
            assert all(not h.archived for h in hits)
        hit_ids = {h.id for h in hits}
        if read_only or not hits:
            assert len(self.store.audit) == audit_len
        else:
            assert len(self.store.audit) == audit_len + 1
            assert set(self.store.audit.events()[-1].node_ids) == hit_ids
        for nid, before in counts.items():
            bump = 1 if nid in hit_ids and not read_only else 0
            assert self.store.get(nid, namespace=self.ever[nid]).access_count == before + bump, nid

    @precondition(lambda self: bool(self.ever))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        nid = data.draw(st.sampled_from(self._ids()), label="forget")
        node = self.store.forget(nid, reason="test", namespace=self.ever[nid])
        assert node.status is MemoryStatus.ARCHIVED
        assert self.store.get(nid, namespace=node.namespace).status is MemoryStatus.ARCHIVED
        assert nid not in {n.id for n in self.store.list(node.namespace)}

    @precondition(lambda self: bool(self.ever))
    @rule(data=st.data(), text=texts)
    def update(self, data: st.DataObject, text: str) -> None:
        nid = data.draw(st.sampled_from(self._ids()), label="update")
        ns = self.ever[nid]
        # any version's id is a handle: the update replaces the memory's current version
        old = self.store.get(nid, namespace=ns, current=True)
        assert old.id == nid or not self.store.get(nid, namespace=ns).is_active
        new = self.store.update(nid, text, namespace=ns)
        assert new.id != old.id and new.content == text and new.namespace == old.namespace
        assert new.is_active
        assert self.store.get(old.id, namespace=ns).status is MemoryStatus.ARCHIVED
        assert [n.id for n in self.store.history(new.id, namespace=ns)][-1] == new.id
        assert nid in [n.id for n in self.store.history(new.id, namespace=ns)]
        assert old.id in memory_graph(self.store, new.namespace).ancestors(new.id)
        self.ever[new.id] = new.namespace

    @precondition(lambda self: bool(self.ever))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        nid = data.draw(st.sampled_from(self._ids()), label="restore")
        node = self.store.restore(nid, namespace=self.ever[nid])
        assert node.is_active and self.store.get(nid, namespace=node.namespace).is_active

    @precondition(lambda self: len(self.ever) >= 2)
    @rule(data=st.data(), pred=st.sampled_from(list(Predicate)))
    def link(self, data: st.DataObject, pred: Predicate) -> None:
        ns = data.draw(st.sampled_from(sorted(set(self.ever.values()))), label="ns")
        same = self._ids(ns)
        if len(same) < 2:
            return
        src, tgt = data.draw(st.lists(st.sampled_from(same), min_size=2, max_size=2,
                                      unique=True), label="pair")
        graph = memory_graph(self.store, ns)
        cycle = (pred is Predicate.DERIVES_FROM and src in graph.ancestors(tgt)) or \
            (pred in _REPLACES and src in _replaced(graph, tgt))
        before = self.store.export_jsonld()
        try:
            edge = self.store.link(src, pred, tgt, namespace=ns)
        except ValidationError:
            assert cycle, "link refused without a derivesFrom or replacement cycle"
            assert self.store.export_jsonld() == before
            return
        assert not cycle, "a derivesFrom or replacement cycle was accepted"
        assert edge.key == (src, pred.value, tgt)
        assert edge.key in {e.key for e in graph.out_edges(src)}

    @rule()
    def reopen(self) -> None:
        export, events = self.store.export_jsonld(), self.store.audit.events()
        stats = self.store.stats()
        self.store.close()
        self.store = self._open()
        assert self.store.export_jsonld() == export
        assert self.store.audit.events() == events
        assert self.store.stats() == stats

    @invariant()
    def invariants_hold(self) -> None:
        check_invariants(self.store)
        for nid, ns in self.ever.items():
            assert self.store.get(nid, namespace=ns).namespace == ns


class FifoStoreMachine(StoreMachine):
    policy = "fifo"


class LruStoreMachine(StoreMachine):
    policy = "lru"


class ReflectionStoreMachine(StoreMachine):
    policy = "reflection"


MATRIX_EXAMPLES = 4
"""Examples per machine on the other backends of the matrix (25 on the in-memory one):
the rules and invariants are the same, the backends are slower by 10-50x per write."""

SMOKE_EXAMPLES = {"ram": 4, "other": 1}
"""``make test``'s smoke of each state machine: the same rules and invariants on the first
examples of the same derandomized search (the full 25 / 4 run is ``make test-heavy``)."""

SMOKE_STEPS = {"ram": MACHINE_SETTINGS.stateful_step_count, "other": 15}
"""Steps per example of the smoke (30 in full): a write on the servers' kinds costs the most."""

SIZES = ["smoke", pytest.param("full", marks=pytest.mark.heavy, id="full")]
"""The two sizes of a heavy test of this module: ``make test``'s smoke, and the full run."""


def machine_settings(size: str, store_kind: str = "ram", *,
                     smoke_examples: int | None = None) -> settings:
    """The settings of a state machine run of ``size`` on ``store_kind``: the full run's
    examples (25 in RAM, :data:`MATRIX_EXAMPLES` elsewhere), or the smoke's (a slower
    policy's machine may ask for fewer, ``smoke_examples``)."""
    if size == "full":
        return settings(MACHINE_SETTINGS, max_examples=MACHINE_SETTINGS.max_examples
                        if store_kind == "ram" else MATRIX_EXAMPLES)
    which = "ram" if store_kind == "ram" else "other"
    return settings(MACHINE_SETTINGS, max_examples=smoke_examples or SMOKE_EXAMPLES[which],
                    stateful_step_count=SMOKE_STEPS[which])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("machine", [LruStoreMachine, FifoStoreMachine,
                                     ReflectionStoreMachine],
                         ids=["lru", "fifo", "reflection"])
def test_state_machine(machine: type[StoreMachine], store_kind: str, size: str) -> None:
    run_state_machine_as_test(machine, settings=machine_settings(size, store_kind))


# --- determinism -------------------------------------------------------------------------


def run_script(path: Path, seed: int, *, steps: int = 120, policy: str = "lru",
               reopen_every: int | None = None) -> dict[str, Any]:
    """Replay a seeded random script on a fresh store under ``path`` (the store seeded
    with the same seed: its ids are the seed's); return its outcome."""
    rng = random.Random(seed)
    clock = FakeClock(tick=timedelta(seconds=7))

    def open_() -> MemoryStore:
        return MemoryStore.open(path, clock=clock, audit_key=AUDIT_KEY, policy=policy,
                                seed=seed, **CONFIG)

    store = open_()
    ids: list[str] = []
    owner: dict[str, str] = {}  # id -> its namespace (ids never cross namespaces)
    returned: list[Any] = []
    try:
        for step in range(steps):
            if reopen_every and step and step % reopen_every == 0:
                store.close()
                store = open_()
            roll = rng.random()
            words = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 8)))
            ns = rng.choice(NAMESPACES)
            same = [i for i in ids if store.get(i, namespace=owner[i]).namespace == ns]
            if roll < 0.45 or not ids:
                prov = None
                if same and rng.random() < 0.3:
                    prov = {"derived_from": (rng.choice(same),), "source": "summary"}
                node = store.add(words, type=rng.choice(TYPES), namespace=ns,
                                 sensitivity=round(rng.random(), 3), provenance=prov,
                                 pinned=rng.random() < 0.1)
                ids.append(node.id)
                owner[node.id] = node.namespace
                returned.append(("add", node.id))
            elif roll < 0.7:
                hits = store.retrieve(words, namespace=ns, read_only=rng.random() < 0.3,
                                      budget_tokens=rng.randint(5, 40))
                returned.append(("retrieve", [(h.id, round(h.score, 9)) for h in hits]))
            elif roll < 0.8:
                nid = rng.choice(ids)
                returned.append(("forget", store.forget(nid, namespace=owner[nid]).id))
            elif roll < 0.9:
                nid = rng.choice(ids)
                node = store.update(nid, words, namespace=owner[nid])
                ids.append(node.id)
                owner[node.id] = node.namespace
                returned.append(("update", node.id))
            else:
                nid = rng.choice(ids)
                returned.append(("restore", store.restore(nid, namespace=owner[nid]).id))
        check_invariants(store)
        return {"export": store.export_jsonld(),
                "audit": [e.model_dump(mode="json") for e in store.audit.events()],
                "ids": ids, "returned": returned,
                "stats": store.stats()}
    finally:
        store.close()


@pytest.mark.parametrize("steps", [pytest.param(60, id="smoke"),
                                   pytest.param(120, marks=pytest.mark.heavy, id="full")])
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_same_seed_same_store(tmp_path: Path, policy: str, steps: int) -> None:
    a = run_script(tmp_path / "a", 1234, policy=policy, steps=steps)
    b = run_script(tmp_path / "b", 1234, policy=policy, steps=steps)
    assert a["ids"] == b["ids"]
    assert a["returned"] == b["returned"]
    assert a["audit"] == b["audit"]
    assert a["export"] == b["export"]
    assert a["stats"] == b["stats"]
    # the script did real work: evictions, archives, accesses
    ops = {e["op"] for e in a["audit"]}
    assert {"insert", "evict", "access", "update", "restore"} <= ops
    # and a different seed gives a different store (the comparison can fail)
    c = run_script(tmp_path / "c", 4321, policy=policy, steps=steps)
    assert c["audit"] != a["audit"]


@pytest.mark.parametrize("steps", [pytest.param(40, id="smoke"),
                                   pytest.param(120, marks=pytest.mark.heavy, id="full")])
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_reopening_does_not_change_decisions(tmp_path: Path, policy: str,
                                             store_kind: str, steps: int) -> None:
    """The views rebuilt on open (policy order included) equal the incremental ones:
    the same script with a reopen every 7 steps ends in the same store and audit."""
    a = run_script(tmp_path / "a", 99, policy=policy, steps=steps)
    b = run_script(tmp_path / "b", 99, policy=policy, reopen_every=7, steps=steps)
    # exact on every backend, Qdrant's local mode included: its collections use a dot
    # product of the vectors as sent (Cosine renormalised them in place on every search)
    assert b["returned"] == a["returned"]
    assert b["audit"] == a["audit"]
    assert b["export"] == a["export"]


def test_in_memory_and_persisted_stores_agree(tmp_path: Path) -> None:
    """Persisting must not change behaviour: an export of a persisted replay imports into
    a fresh in-memory store and exports identically."""
    a = run_script(tmp_path / "a", 7)
    with MemoryStore(clock=FakeClock(), audit_key=AUDIT_KEY, **CONFIG) as fresh:
        assert fresh.import_jsonld(a["export"]) == len(a["export"]["@graph"]) - sum(
            1 for item in a["export"]["@graph"] if item["@type"] == "rdf:Statement")
        assert fresh.export_jsonld() == a["export"]
        check_invariants(fresh)
