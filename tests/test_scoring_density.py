"""MaRS density (seed 000 §3.2.6, eq 5/7), PPR centrality, novelty, urgency, importance."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core.errors import ValidationError
from mars_core.model import Edge, MemoryType, Predicate, TaskPayload, TaskStatus
from mars_core.scoring.density import (
    DensityConfig,
    FeatureWeights,
    Psi,
    SparseAdjacency,
    access_frequency,
    access_frequency_batch,
    centrality,
    density_batch,
    goal_similarity,
    goal_similarity_batch,
    importance,
    importance_batch,
    novelty,
    novelty_batch,
    payload_urgency,
    personalized_pagerank,
    priority_key,
    removal_priority,
    score,
    task_urgency,
    utility,
    utility_density,
)

TYPES = list(MemoryType)
unit = st.floats(0.0, 1.0, allow_nan=False)
types = st.sampled_from(TYPES)
psis = st.builds(Psi, unit, unit, unit, unit, unit, unit)


def star(n_leaves: int) -> np.ndarray:
    a = np.zeros((n_leaves + 1, n_leaves + 1))
    a[0, 1:] = 1.0
    a[1:, 0] = 1.0
    return a


def path(n: int) -> np.ndarray:
    a = np.zeros((n, n))
    for i in range(n - 1):
        a[i, i + 1] = a[i + 1, i] = 1.0
    return a


# --- personalised PageRank ----------------------------------------------------------------


def test_ppr_star_centre_is_highest_and_leaves_equal() -> None:
    r = personalized_pagerank(star(6))
    assert r.argmax() == 0
    assert math.isclose(r.sum(), 1.0, abs_tol=1e-12)
    assert np.allclose(r[1:], r[1])
    assert r[0] > 2 * r[1]


def test_ppr_matches_closed_form() -> None:
    rng = np.random.default_rng(7)
    a = rng.random((8, 8)) * (rng.random((8, 8)) < 0.5)
    np.fill_diagonal(a, 0.0)
    a[a.sum(axis=1) == 0, 0] = 1.0          # no dangling nodes for the closed form
    a[0, 0] = 0.0
    a[0, 1] += 1.0
    p = rng.random(8)
    p /= p.sum()
    d = 0.85
    trans = a / a.sum(axis=1, keepdims=True)
    exact = np.linalg.solve(np.eye(8) - d * trans.T, (1 - d) * p)
    got = personalized_pagerank(a, p, damping=d, tol=1e-14, max_iter=1000)
    assert np.allclose(got, exact / exact.sum(), atol=1e-10)


def test_ppr_personalisation_shifts_mass() -> None:
    a = path(5)
    uniform = personalized_pagerank(a)
    assert np.allclose(uniform, uniform[::-1])        # symmetric path, symmetric scores
    left = personalized_pagerank(a, [1, 0, 0, 0, 0])
    right = personalized_pagerank(a, [0, 0, 0, 0, 1])
    assert left[0] > uniform[0] and left[0] > left[4]
    assert right[4] > uniform[4] and right[4] > right[0]
    assert np.allclose(left, right[::-1])


def test_ppr_zero_personalisation_is_uniform_pagerank() -> None:
    a = star(3)
    assert np.allclose(personalized_pagerank(a, np.zeros(4)), personalized_pagerank(a))


def test_ppr_dangling_nodes_keep_total_mass() -> None:
    a = np.zeros((4, 4))
    a[0, 1] = a[1, 2] = 1.0                           # 2 and 3 dangle
    r = personalized_pagerank(a)
    assert math.isclose(r.sum(), 1.0, abs_tol=1e-12)
    assert (r > 0).all()


def test_ppr_dense_and_sparse_agree() -> None:
    a = star(4)
    sparse = SparseAdjacency.from_dense(a)
    assert np.allclose(personalized_pagerank(a), personalized_pagerank(sparse))


@pytest.mark.parametrize("bad", [np.ones((2, 3)), [[0, -1], [1, 0]], [[0, np.inf], [1, 0]]])
def test_ppr_rejects_malformed_adjacency(bad: object) -> None:
    with pytest.raises(ValidationError):
        personalized_pagerank(bad)  # type: ignore[arg-type]


def test_ppr_rejects_bad_damping_and_personalisation() -> None:
    with pytest.raises(ValidationError):
        personalized_pagerank(star(2), damping=1.0)
    with pytest.raises(ValidationError):
        personalized_pagerank(star(2), [1, 0])
    assert personalized_pagerank(np.zeros((0, 0))).shape == (0,)


def test_centrality_in_unit_interval_isolated_zero() -> None:
    a = np.zeros((5, 5))
    a[:4, :4] = star(3)
    c = centrality(a)
    assert c[0] == 1.0 and c[4] == 0.0
    assert ((c >= 0) & (c <= 1)).all()
    assert (centrality(np.zeros((3, 3))) == 0).all()


def test_adjacency_from_edges_keeps_semantic_and_social_only() -> None:
    edges = [
        Edge(source="a", predicate=Predicate.IS_A, target="b"),
        Edge(source="b", predicate=Predicate.FRIEND_OF, target="c", weight=2.0),
        Edge(source="a", predicate=Predicate.TEMPORAL_NEXT, target="c"),
        Edge(source="a", predicate=Predicate.IS_A, target="zzz"),   # outside the working set
    ]
    m = SparseAdjacency.from_edges(["a", "b", "c"], edges).to_dense()
    assert m.tolist() == [[0, 1, 0], [1, 0, 2], [0, 2, 0]]
    directed = SparseAdjacency.from_edges(["a", "b", "c"], edges, undirected=False).to_dense()
    assert directed[1, 0] == 0 and directed[0, 1] == 1


# --- single features ------------------------------------------------------------------------


def test_access_frequency_modes() -> None:
    assert access_frequency(0) == 0.0
    assert access_frequency(10) == 1.0 and access_frequency(1000) == 1.0
    assert access_frequency(3) > access_frequency(2) > access_frequency(1)
    assert access_frequency(5, "cap") == 0.5
    assert access_frequency(3, "max", max_count=12) == 0.25
    assert access_frequency_batch([0, 0], "max").tolist() == [0.0, 0.0]
    with pytest.raises(ValidationError):
        access_frequency(-1)
    with pytest.raises(ValidationError):
        access_frequency_batch([1], "weird")  # type: ignore[arg-type]


def test_goal_similarity_no_goal_and_clipping() -> None:
    assert goal_similarity([1, 2], None) == 0.0
    assert goal_similarity([1, 0], [-3, 0]) == 0.0
    assert goal_similarity([1, 0], [0, 0]) == 0.0
    assert math.isclose(goal_similarity([1, 1], [1, 1]), 1.0)
    batch = goal_similarity_batch([[1, 0], [0, 1], [-1, 0]], [1, 0])
    assert batch.tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValidationError):
        goal_similarity_batch([[1, 0]], [1, 0, 0])


def test_novelty_batch_matches_scalar_and_chunks() -> None:
    rng = np.random.default_rng(3)
    emb = rng.normal(size=(9, 4))
    emb[5] = emb[2] * 3.0                             # a duplicate direction
    full = novelty_batch(emb)
    for i in range(9):
        others = np.delete(emb, i, axis=0)
        assert math.isclose(full[i], novelty(emb[i], others), abs_tol=1e-12)
    assert full[2] == pytest.approx(0.0, abs=1e-12) and full[5] == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(novelty_batch(emb, block=2), full)
    assert np.allclose(novelty_batch(emb, block=1), full)
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ValidationError, match="block"):
            novelty_batch(emb, block=bad)  # type: ignore[arg-type]
    assert novelty_batch(np.zeros((1, 3))).tolist() == [1.0]


def test_task_urgency() -> None:
    assert task_urgency(0.7, None) == 0.0
    assert task_urgency(0.7, -5) == 0.7                # overdue keeps full priority
    assert task_urgency(0.7, 0) == 0.7
    assert task_urgency(1.0, 24) > task_urgency(1.0, 72) > task_urgency(1.0, 168)
    assert math.isclose(task_urgency(1.0, 72), math.exp(-1))
    with pytest.raises(ValidationError):
        task_urgency(1.5, 3)


def test_payload_urgency_closed_or_undated_is_zero() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    due = now + timedelta(hours=72)
    assert math.isclose(payload_urgency(TaskPayload(priority=1.0, deadline=due), now), math.exp(-1))
    assert payload_urgency(TaskPayload(priority=1.0), now) == 0.0
    for status in (TaskStatus.DONE, TaskStatus.CANCELLED):
        assert payload_urgency(TaskPayload(priority=1.0, deadline=due, status=status), now) == 0.0


# --- configuration --------------------------------------------------------------------------


def test_default_theta_is_type_weight_times_a_distribution() -> None:
    cfg = DensityConfig()
    for t in TYPES:
        theta = cfg.theta[t].as_array()
        assert (theta >= 0).all()
        assert math.isclose(theta.sum(), cfg.type_weight[t], rel_tol=1e-9)
        if t is not MemoryType.TASK:
            assert theta[5] == 0.0
    # the seed's prose: episodic recency-heavy, social centrality-heavy, task urgent
    assert cfg.theta[MemoryType.EPISODIC].recency == max(cfg.theta[MemoryType.EPISODIC].as_array())
    assert cfg.theta[MemoryType.SOCIAL].centrality == max(cfg.theta[MemoryType.SOCIAL].as_array())
    assert cfg.theta[MemoryType.TASK].urgency == max(cfg.theta[MemoryType.TASK].as_array())
    # durable types decay slower
    lam = cfg.lambda_age
    assert lam[MemoryType.SEMANTIC] < lam[MemoryType.TASK] < lam[MemoryType.EPISODIC]


def test_config_rejects_unknown_keys_missing_types_and_is_frozen() -> None:
    with pytest.raises(pydantic.ValidationError):
        DensityConfig.model_validate({"lambda_privv": 1.0})
    with pytest.raises(pydantic.ValidationError):
        DensityConfig(theta={MemoryType.TASK: FeatureWeights()})
    with pytest.raises(pydantic.ValidationError):
        DensityConfig(alpha=0, beta=0, gamma=0)
    with pytest.raises(pydantic.ValidationError):
        DensityConfig(type_weight=dict.fromkeys(TYPES, 2.0))
    with pytest.raises(pydantic.ValidationError):
        DensityConfig().lambda_priv = 1.0  # type: ignore[misc]
    for name, field in DensityConfig.model_fields.items():
        assert field.description, name


# --- density --------------------------------------------------------------------------------


def test_density_formula() -> None:
    assert utility_density(0.6, 0.4, 10, 0.25) == pytest.approx(0.05)
    assert utility_density(0.0, 1.0, 1, 0.25) == -0.25
    with pytest.raises(ValidationError):
        utility_density(0.5, 0.1, 0, 0.25)
    with pytest.raises(ValidationError):
        utility_density(0.5, 1.1, 1, 0.25)


def test_urgency_counts_only_for_tasks() -> None:
    p = Psi(0, 0, 0, 0, 0, 1.0)
    assert utility(MemoryType.TASK, p) > 0
    for t in (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.SOCIAL):
        assert utility(t, p) == 0.0
    b = density_batch(["semantic", "task"], [0, 0], [0, 0], [0, 0], [1, 1], urgency=[1, 1])
    assert b.features[:, 5].tolist() == [0.0, 1.0]


def test_batch_agrees_with_scalar_path() -> None:
    rng = np.random.default_rng(11)
    n = 12
    ts = [TYPES[i % 4] for i in range(n)]
    age = rng.integers(0, 300, n)
    acc = rng.integers(0, 30, n)
    s = rng.random(n)
    w = rng.integers(1, 50, n)
    emb = rng.normal(size=(n, 6))
    goal = rng.normal(size=6)
    adj = path(n)
    urg = rng.random(n)
    cfg = DensityConfig()
    b = density_batch(ts, age, acc, s, w, embeddings=emb, goal=goal, adjacency=adj,
                      urgency=urg, config=cfg)
    personal = goal_similarity_batch(emb, goal) + np.where(
        np.array([t is MemoryType.TASK for t in ts]), urg, 0.0)
    cent = centrality(adj, personal)
    for i in range(n):
        psi = Psi(
            recency=math.exp(-cfg.lambda_age[ts[i]] * age[i]),
            frequency=access_frequency(int(acc[i])),
            goal=goal_similarity(emb[i], goal),
            centrality=float(cent[i]),
            novelty=novelty(emb[i], np.delete(emb, i, axis=0)),
            urgency=float(urg[i]) if ts[i] is MemoryType.TASK else 0.0,
        )
        assert np.allclose(b.features[i], psi.as_array(), atol=1e-12)
        assert b.density[i] == pytest.approx(score(ts[i], psi, float(s[i]), float(w[i]), cfg))
    assert ((b.features >= 0) & (b.features <= 1)).all()


def test_batch_validation_and_empty() -> None:
    empty = density_batch([], [], [], [], [])
    assert empty.features.shape == (0, 6) and empty.density.shape == (0,)
    with pytest.raises(ValidationError):
        density_batch(["task"], [0, 1], [0], [0], [1])
    with pytest.raises(ValidationError):
        density_batch(["task"], [0], [0], [0], [0])
    with pytest.raises(ValidationError):
        density_batch(["task"], [-1], [0], [0], [1])
    with pytest.raises(ValidationError):
        density_batch(["task"], [0], [0], [2], [1])
    with pytest.raises(ValidationError):
        density_batch(["task"], [0], [0], [0], [1], adjacency=np.zeros((2, 2)))


@settings(max_examples=200, deadline=None)
@given(t=types, psi=psis, s1=unit, s2=unit, w=st.integers(1, 10_000))
def test_more_sensitivity_lowers_density(t: MemoryType, psi: Psi, s1: float, s2: float,
                                         w: int) -> None:
    lo, hi = sorted((s1, s2))
    a, b = score(t, psi, lo, w), score(t, psi, hi, w)
    assert b <= a
    if hi - lo > 1e-9:                                 # strictly, beyond float resolution
        assert b < a


@settings(max_examples=200, deadline=None)
@given(t=types, psi=psis, s=unit, w1=st.integers(1, 10_000), w2=st.integers(1, 10_000))
def test_more_weight_lowers_positive_density(t: MemoryType, psi: Psi, s: float, w1: int,
                                            w2: int) -> None:
    cfg = DensityConfig()
    if utility(t, psi, cfg) - cfg.lambda_priv * s <= 1e-9:
        return
    light, heavy = sorted((w1, w2))
    assert score(t, psi, s, heavy, cfg) <= score(t, psi, s, light, cfg)
    if heavy > light:
        assert score(t, psi, s, heavy, cfg) < score(t, psi, s, light, cfg)


@settings(max_examples=200, deadline=None)
@given(t=types, a1=st.integers(0, 2000), a2=st.integers(0, 2000), acc=st.integers(0, 50),
       s=unit, w=st.integers(1, 500))
def test_more_recent_raises_density(*, t: MemoryType, a1: int, a2: int, acc: int, s: float,
                                    w: int) -> None:
    young, old = sorted((a1, a2))
    cfg = DensityConfig()
    b = density_batch([t, t], [young, old], [acc, acc], [s, s], [w, w], config=cfg)
    assert b.density[0] >= b.density[1]
    gain = cfg.theta[t].recency * (b.features[0, 0] - b.features[1, 0]) / w
    if gain > 1e-12:                                   # strictly, beyond float resolution
        assert b.density[0] > b.density[1]
    if old > young and b.features[0, 0] > 1e-300:
        assert b.features[0, 0] > b.features[1, 0]
    imp = importance_batch([t, t], [young, old], [acc, acc])
    assert imp[0] >= imp[1]


# --- Priority-Decay importance and removal priority -------------------------------------------


@settings(max_examples=200, deadline=None)
@given(t=types, age=st.floats(0, 1e6), acc=st.integers(0, 10_000))
def test_importance_in_unit_interval(t: MemoryType, age: float, acc: int) -> None:
    assert 0.0 <= importance(t, age, acc) <= 1.0


def test_importance_values_and_type_order() -> None:
    cfg = DensityConfig()
    fresh = {t: importance(t, 0, 0, cfg) for t in TYPES}
    assert fresh[MemoryType.SEMANTIC] == pytest.approx(0.4 * 1.0 + 0.3)
    assert fresh[MemoryType.SEMANTIC] > fresh[MemoryType.TASK] > fresh[MemoryType.SOCIAL] \
        > fresh[MemoryType.EPISODIC]
    assert importance("episodic", 0, 10) == pytest.approx(0.4 * 0.5 + 0.3 + 0.3)
    assert np.allclose(importance_batch(TYPES, [5] * 4, [3] * 4),
                       [importance(t, 5, 3) for t in TYPES])
    assert priority_key(0.5, 4) == 0.125
    with pytest.raises(ValidationError):
        priority_key(0.5, 0)


def test_removal_priority() -> None:
    assert removal_priority(0.8, 10, 0.25) == pytest.approx(6.0)
    assert removal_priority(0.0, 10, 0.0) == 0.0
    assert removal_priority(1.0, 10, 1.0) == 0.0
    rng = np.random.default_rng(5)
    rows = [(rng.random(), float(rng.integers(0, 100)), rng.random()) for _ in range(20)]
    order_steps = sorted(range(20), key=lambda i: removal_priority(*rows[i]))
    order_scaled = sorted(range(20),
                          key=lambda i: removal_priority(rows[i][0], rows[i][1] * 24, rows[i][2]))
    assert order_steps == order_scaled               # the age unit does not change the order
    with pytest.raises(ValidationError):
        removal_priority(0.5, 10, 1.5)
    with pytest.raises(ValidationError):
        removal_priority(0.5, -1, 0.5)
