"""The policies' working-set cache: bounded incremental novelty, columns, links, scores."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import MemoryStore
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode, MemoryType
from mars_core.policies.reflection import density_candidates, find_clusters
from mars_core.scoring.density import DensityConfig, novelty_batch
from mars_core.scoring.working_set import WorkingSetCache, score_working_set
from mars_core.testing import StoreFactory, policy_view

pytestmark = pytest.mark.backend_neutral
"""Only the tests marked ``backend_neutral(False)`` build stores: they run on each backend
of the matrix (``tests/conftest.py``), the others once."""

AT = datetime(2026, 1, 1, tzinfo=UTC)


class FakeView:
    """The few things the cache reads, over a dict of vectors (no store involved)."""

    def __init__(self, vectors: dict[str, npt.NDArray[np.float32]], nodes: dict[str, MemoryNode],
                 step: int = 0) -> None:
        self.namespace, self.now, self.step = "ns", AT, step
        self._vectors, self._nodes = vectors, nodes
        self.fetched = 0

    @property
    def count(self) -> int:
        return len(self._nodes)

    def active(self) -> Iterable[MemoryNode]:
        return sorted(self._nodes.values(), key=lambda n: n.seq)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        self.fetched += len(ids)
        return np.array([self._vectors[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)


class Workload:
    """Random inserts and removals fed to a cache through its hooks, with a fake view."""

    def __init__(self, window: int, dim: int = 8, seed: int = 0, clusters: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(clusters, dim))
        self.cache = WorkingSetCache(window=window)
        self.vecs: dict[str, npt.NDArray[np.float32]] = {}
        self.nodes: dict[str, MemoryNode] = {}
        self.seq = 0

    def insert(self) -> MemoryNode:
        self.seq += 1
        centre = self.centres[self.rng.integers(len(self.centres))]
        nid = f"m{self.seq}"
        self.vecs[nid] = (centre + 0.3 * self.rng.normal(size=centre.shape)).astype(np.float32)
        node = MemoryNode(id=nid, type=MemoryType.EPISODIC, content=nid, weight=1,
                          namespace="ns", step=self.seq, seq=self.seq)
        self.nodes[nid] = node
        self.cache.on_insert(node)
        return node

    def remove(self, nid: str) -> None:
        self.cache.on_remove(self.nodes.pop(nid))

    def view(self) -> FakeView:
        return FakeView(self.vecs, self.nodes, self.seq)

    def novelty(self) -> dict[str, float]:
        ws = self.cache.refresh(self.view())
        return dict(zip(ws.ids(), ws.novelty().tolist(), strict=True))

    def bounded_brute_force(self, window: int) -> dict[str, float]:
        """The stated definition, computed from scratch: against the W most recent."""
        ids = sorted(self.nodes, key=lambda i: self.nodes[i].seq)
        recent = ids[-window:]
        x = {i: self.vecs[i] / np.linalg.norm(self.vecs[i]) for i in ids}
        out = {}
        for i in ids:
            sims = [float(x[i].astype(np.float64) @ x[j].astype(np.float64))
                    for j in recent if j != i]
            out[i] = 1.0 - min(1.0, max(0.0, *sims)) if sims else 1.0
        return out


def exact(w: Workload) -> dict[str, float]:
    ids = list(w.nodes)
    return dict(zip(ids, novelty_batch(np.array([w.vecs[i] for i in ids])).tolist(),
                    strict=True))


# --- novelty ------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 10_000)), min_size=1, max_size=60),
       seed=st.integers(0, 1000))
def test_incremental_novelty_equals_the_exact_all_pairs_value_below_the_window(
        ops: list[tuple[bool, int]], seed: int) -> None:
    """n ≤ W: the working set is the whole namespace, so novelty is the exact value."""
    w = Workload(window=64, seed=seed)
    for add, pick in ops:
        if add or len(w.nodes) < 2:
            w.insert()
        else:
            w.remove(sorted(w.nodes)[pick % len(w.nodes)])
        if pick % 3 == 0:  # refresh at random points: triggers between writes
            got, want = w.novelty(), exact(w)
            assert got.keys() == want.keys()
            assert all(abs(got[i] - want[i]) < 1e-6 for i in got)
    got, want = w.novelty(), exact(w)
    assert all(abs(got[i] - want[i]) < 1e-6 for i in got)


@settings(max_examples=20, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 10_000)), min_size=20, max_size=90),
       window=st.integers(1, 12), seed=st.integers(0, 1000))
def test_beyond_the_window_novelty_is_the_stated_bounded_definition(
        ops: list[tuple[bool, int]], window: int, seed: int) -> None:
    w = Workload(window=window, seed=seed)
    for add, pick in ops:
        if add or len(w.nodes) < 2:
            w.insert()
        else:
            w.remove(sorted(w.nodes)[pick % len(w.nodes)])
        if pick % 4 == 0:
            got, want = w.novelty(), w.bounded_brute_force(window)
            assert all(abs(got[i] - want[i]) < 1e-6 for i in want)


def test_a_duplicate_outside_the_window_is_not_seen_the_stated_gap() -> None:
    w = Workload(window=2, dim=4, seed=1)
    first = w.insert()
    w.vecs[first.id] = np.array([1, 0, 0, 0], np.float32)
    twin = w.insert()
    w.vecs[twin.id] = np.array([1, 0, 0, 0], np.float32)
    assert w.novelty()[first.id] == 0.0  # both in the working set: duplicates
    for _ in range(3):
        node = w.insert()
        w.vecs[node.id] = np.array([0, 1, 0, 0], np.float32)
    got = w.novelty()
    assert got[first.id] == 1.0 and got[twin.id] == 1.0  # both left the working set
    assert exact(w)[first.id] == 0.0  # the exact all-pairs value still sees the twin


def test_incremental_and_rebuilt_caches_agree_bit_for_bit_and_runs_repeat() -> None:
    """Determinism: same history → same values; a rebuild (what a reopen does) too."""
    runs = []
    for _ in range(2):
        w = Workload(window=16, seed=5)
        for k in range(120):
            w.insert()
            if k % 7 == 3:
                w.remove(sorted(w.nodes)[k % len(w.nodes)])
            if k % 5 == 0:
                w.novelty()
        runs.append(w.novelty())
    assert runs[0] == runs[1]
    fresh = WorkingSetCache(window=16)
    for node in sorted(w.nodes.values(), key=lambda n: n.seq):
        fresh.on_insert(node)
    ws = fresh.refresh(w.view())
    assert dict(zip(ws.ids(), ws.novelty().tolist(), strict=True)) == runs[1]


def test_a_trigger_recomputes_few_rows_and_fetches_only_new_vectors() -> None:
    w = Workload(window=32, seed=3, clusters=50)
    for _ in range(600):
        w.insert()
    view = w.view()
    ws = w.cache.refresh(view)
    assert view.fetched == 600 and ws.recomputed == 600  # the first trigger: everything
    before = ws.recomputed
    for _ in range(10):
        w.remove(sorted(w.nodes, key=lambda i: w.nodes[i].seq)[0])  # FIFO-like churn
        w.insert()
        view = w.view()
        w.cache.refresh(view)
        assert view.fetched <= 2  # the new vector (+ the one-row probe)
    assert ws.recomputed - before < 600  # far fewer than a full recomputation
    got, want = w.novelty(), w.bounded_brute_force(32)
    assert all(abs(got[i] - want[i]) < 1e-6 for i in want)


def test_changed_vectors_are_detected_by_the_probe() -> None:
    w = Workload(window=8, seed=2)
    for _ in range(6):
        w.insert()
    w.novelty()
    for nid in w.vecs:  # a re-embedding: every vector changes at once
        w.vecs[nid] = -w.vecs[nid][::-1].copy()
    w.insert()
    got, want = w.novelty(), exact(w)
    assert all(abs(got[i] - want[i]) < 1e-6 for i in want)


def test_a_cache_that_missed_its_hooks_reloads_from_the_view() -> None:
    w = Workload(window=8, seed=4)
    for _ in range(5):
        w.insert()
    cache = WorkingSetCache(window=8)  # never told about these memories
    ws = cache.refresh(w.view())
    assert sorted(ws.ids()) == sorted(w.nodes)


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(ValidationError, match="window"):
        WorkingSetCache(window=0)
    ws = WorkingSetCache().space("ns")
    with pytest.raises(ValidationError, match="column"):
        ws.column("bogus")
    with pytest.raises(ValidationError, match="novelty"):
        from mars_core.scoring.density import density_batch
        density_batch(["episodic"], [0], [0], [0], [1], novelty=[1.5])


# --- on real stores: the cached scores equal the exact computation ------------------------


@pytest.fixture
def _store(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(budget=100_000, nlp="rules", seed=3, audit_key=None)


def _populate(store: MemoryStore, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    words = ["ana", "lisbon", "tea", "coffee", "meeting", "project", "sister", "paris", "cat"]
    anchor = store.add("Ana is a person", type="social")
    store.add("plan the lisbon trip", type="task",
              payload={"goal": "lisbon trip", "status": "active", "priority": 0.8,
                       "deadline": "2026-01-03T00:00:00+00:00"})
    for k in range(n):
        kind = rng.choice(["episodic", "episodic", "semantic", "social"])
        links = [("friendOf", anchor.id)] if kind == "social" else []
        store.add(" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) + f" {k}",
                  type=kind, links=links, sensitivity=rng.choice([0.0, 0.0, 0.6]))
        if k % 9 == 0:
            store.retrieve(rng.choice(words), k=2)


@pytest.mark.backend_neutral(False)
@pytest.mark.parametrize("policy", ["reflection", "hybrid"])
def test_cached_scores_equal_the_exact_density_on_a_real_store(_store: StoreFactory,
                                                               policy: str) -> None:
    """n ≤ W: goal, centrality, novelty, urgency, sensitivity — the same ψ and order."""
    with _store(policy=policy) as store:
        _populate(store, 60)
        view = policy_view(store, budget=100_000)
        want = {c.node_id: c for c in density_candidates(view, DensityConfig())}
        sc = score_working_set(view, store.policy_for().working_set, DensityConfig())  # type: ignore[attr-defined]
        got = {n.id: i for i, n in enumerate(sc.nodes)}
        assert got.keys() == want.keys()
        for nid, i in got.items():
            assert want[nid].score == pytest.approx(float(sc.density[i]), abs=1e-7)
            feats = want[nid].features
            assert feats["novelty"] == pytest.approx(float(sc.features[i, 4]), abs=1e-6)
            assert feats["goal"] == pytest.approx(float(sc.features[i, 2]), abs=1e-6)
            assert feats["centrality"] == pytest.approx(float(sc.features[i, 3]), abs=1e-6)
        assert any(sc.features[:, 3] > 0) and any(sc.features[:, 2] > 0)  # really exercised
        cached = [c.node_id for c in density_candidates(
            view, DensityConfig(), cache=store.policy_for().working_set)]  # type: ignore[attr-defined]
        assert cached == [c.node_id for c in density_candidates(view, DensityConfig())]


@pytest.mark.backend_neutral(False)
def test_cached_clusters_equal_the_uncached_ones(_store: StoreFactory) -> None:
    """One episode per step: the step-window links give the same clusters."""
    with _store(policy="reflection") as store:
        for k in range(30):
            text = (f"we talked about the garden roses and tulips again {k % 2}" if k % 10 < 5
                    else f"unrelated chatter number {k} about trains")
            store.add(text, type="episodic")
        view = policy_view(store, budget=100_000)
        plain = find_clusters(view)
        cached = find_clusters(view, cache=store.policy_for().working_set)  # type: ignore[attr-defined]
        assert plain and [c.ids for c in cached] == [c.ids for c in plain]
        assert [c.priority for c in cached] == pytest.approx([c.priority for c in plain])


@pytest.mark.backend_neutral(False)
def test_meta_arms_share_one_working_set_and_score_the_same(_store: StoreFactory) -> None:
    from mars_core.policies import MetaController

    meta = MetaController(arms=["reflection", "hybrid", "fifo"])
    refl, hyb = meta.arms["reflection"], meta.arms["hybrid"]
    assert refl.working_set is hyb.working_set  # type: ignore[attr-defined]
    with _store(policy="meta", policy_params={"arms": ["reflection", "hybrid"]}) as store:
        _populate(store, 30)
        view = policy_view(store, budget=100_000)
        cache = store.policy_for().arms["hybrid"].working_set  # type: ignore[attr-defined]
        sc = score_working_set(view, cache, DensityConfig())
        want = {c.node_id: c.score for c in density_candidates(view, DensityConfig())}
        assert {n.id: pytest.approx(float(d), abs=1e-7) for n, d in zip(
            sc.nodes, sc.density, strict=True)} == want
