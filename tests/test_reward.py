"""OSL-MR's reward r_t (seed 001 §3.2) and its behaviour-cloning teacher (§3.5).

Every expected number below is computed by hand from the paper's definitions with the
§4.1 coefficients (α_hit 4, α_full 64, α_store 1, α_miss 12, α_reacq 6, α_stale 6) and
the Table 2 shift C = 606.134.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from mars_core.errors import ValidationError
from mars_core.knowledge.learn import (
    SELECTION_BASE_FEATURES,
    SELECTION_FEATURES,
    EvidenceModel,
    FeatureLog,
    train_matrix,
)
from mars_core.scoring.reward import (
    LOCOMO_SHIFT,
    RewardConfig,
    item_values,
    step_reward,
    swap_teacher,
)

SIZES = {"m1": 12, "m2": 20, "m3": 8, "m4": 5}


def test_every_term_of_the_reward_by_hand() -> None:
    # A_t = {m1, m2} (32 tokens); E_t = {m1: 12, m3: 8, m4: 5}; m4 cannot be fetched again;
    # m1 is stale and used.
    t = step_reward(["m1", "m2"], SIZES, {"m1": 12, "m3": 8, "m4": 5},
                    recoverable={"m1", "m3"}, stale_used={"m1"},
                    config=RewardConfig(shift=LOCOMO_SHIFT))
    assert (t.hit, t.miss, t.reacq, t.stale, t.full, t.stored) == (12, 13, 8, 12, 0, 32)
    # 4·12 + 64·0 − 1·32 − 12·13 − 6·8 − 6·12 = 48 − 32 − 156 − 48 − 72
    assert t.raw == pytest.approx(-260.0)
    assert t.shifted == pytest.approx(346.134)


def test_full_coverage_bonus_and_default_recoverable() -> None:
    # every demanded item kept: 4·(12 + 8) + 64 − (12 + 8) = 124
    t = step_reward(["m1", "m3"], SIZES, {"m1": 12, "m3": 8})
    assert (t.full, t.raw) == (1, pytest.approx(124.0))
    # nothing kept: all missed and (by default) recoverable: −(12 + 6)·20 = −360
    t = step_reward([], SIZES, {"m1": 12, "m3": 8})
    assert (t.miss, t.reacq, t.full, t.raw) == (20, 20, 0, pytest.approx(-360.0))


def test_coverage_map_and_coefficients() -> None:
    # a summary of 10 tokens covering two demanded turns
    t = step_reward(["s"], {"s": 10}, {"m1": 12, "m3": 8}, coverage={"s": ["m1", "m3"]},
                    config=RewardConfig(alpha_full=0.0, alpha_hit=1.0))
    assert (t.hit, t.full, t.raw) == (20, 1, pytest.approx(10.0))
    # the Table 2 anchor: a raw reward of −C is shifted to 0
    t = step_reward(["m2"], {"m2": 606.134}, {}, config=RewardConfig(
        alpha_full=0.0, shift=LOCOMO_SHIFT))
    assert t.shifted == pytest.approx(0.0)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValidationError, match="no size"):
        step_reward(["zz"], SIZES, {})
    with pytest.raises(ValidationError, match="evidence"):
        step_reward(["m1"], SIZES, {"m1": -1})
    with pytest.raises(ValidationError):
        RewardConfig(alpha_miss=-1)
    with pytest.raises(ValidationError, match="budget"):
        swap_teacher([0, 1], [10, 10], [0, 0], 5)
    with pytest.raises(ValidationError, match="distinct"):
        swap_teacher([0, 0], [1, 1], [0, 0], 5)


def test_item_values_decompose_the_reward() -> None:
    sizes = np.array([12, 20, 8, 5], dtype=float)
    tau = np.array([12, 0, 8, 5], dtype=float)
    rec = np.array([True, True, True, False])
    su = np.array([True, False, False, False])
    v = item_values(sizes, tau, rec, su)
    # m1: (4 + 12 + 6)·12 − 12 − 6·12 = 180; m2: −20; m3: 22·8 − 8 = 168; m4: 16·5 − 5 = 75
    assert v.tolist() == [180.0, -20.0, 168.0, 75.0]
    constant = -(18 * 12 + 18 * 8 + 12 * 5)  # every demanded item missed
    assert v[[0, 1]].sum() + constant == pytest.approx(-260.0)  # the first test's r_t


def _reward_of(kept: list[int], sizes: np.ndarray, tau: np.ndarray, su: np.ndarray) -> float:
    ids = [str(i) for i in range(len(sizes))]
    return step_reward([ids[i] for i in kept], dict(zip(ids, sizes.tolist(), strict=True)),
                       {ids[i]: float(tau[i]) for i in np.flatnonzero(tau)},
                       stale_used={ids[i] for i in np.flatnonzero(su)}).raw


def test_the_teacher_swaps_until_no_swap_helps() -> None:
    # worked example: start {0, 1} (20 of 20 tokens); evidence is turn 2 (10 tokens).
    # Round 1: swap 0 → 2 gains 210 − (−10) + 64 = 284; round 2: swap 1 → 3 gains 6.
    assert swap_teacher([0, 1], [10, 10, 10, 4], [0, 0, 10, 0], 20) == [2, 3]
    rng = np.random.default_rng(3)
    for _ in range(25):
        n = 9
        sizes = rng.integers(2, 12, n).astype(float)
        tau = np.where(rng.random(n) < 0.3, sizes, 0.0)
        su = (rng.random(n) < 0.3) & (tau > 0)
        budget = 25.0
        start: list[int] = []
        for i in rng.permutation(n):
            if sizes[start].sum() + sizes[i] <= budget:
                start.append(int(i))
        kept = swap_teacher(start, sizes, tau, budget, stale_used=su)
        assert len(kept) == len(start) and sizes[kept].sum() <= budget
        best = _reward_of(kept, sizes, tau, su)
        assert best >= _reward_of(start, sizes, tau, su)
        for a, b in itertools.product(kept, set(range(n)) - set(kept)):  # no swap helps
            swapped = [*(set(kept) - {a}), b]
            if sizes[swapped].sum() <= budget:
                assert _reward_of(swapped, sizes, tau, su) <= best + 1e-9


def test_bc_learner_and_the_prior_ablation_train_on_selection_features(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    d = len(SELECTION_FEATURES)
    x, held = rng.normal(size=(600, d)), rng.normal(size=(600, d))

    def teacher(z: np.ndarray) -> np.ndarray:  # labels driven by the prior (last column)
        return (z[:, -1] > 0.8).astype(float)

    y_teacher = teacher(x)
    full = train_matrix(x, y_teacher, kind="selection", names=SELECTION_FEATURES)
    base = train_matrix(x[:, :-1], y_teacher, kind="selection", names=SELECTION_BASE_FEATURES)
    # on held-out rows: learnable with the prior, chance without it
    auc = (_auc(full.predict(held), teacher(held)),
           _auc(base.predict(held[:, :-1]), teacher(held)))
    assert auc[0] > 0.9 and auc[1] < 0.7
    for model, name in ((full, "full.json"), (base, "base.json")):
        model.save(tmp_path / name)
        again = EvidenceModel.load(tmp_path / name, kind="selection")
        assert again.names == model.names
    with pytest.raises(ValidationError):
        train_matrix(x, np.zeros(400), kind="selection", names=SELECTION_FEATURES)
    with pytest.raises(ValidationError):
        train_matrix(x[:, :3], y_teacher, kind="selection", names=SELECTION_FEATURES)


def _auc(score: np.ndarray, y: np.ndarray) -> float:
    pos, neg = score[y == 1], score[y == 0]
    return float((pos[:, None] > neg[None, :]).mean())


def test_decisions_and_their_reward_are_logged_and_round_trip(tmp_path: Path) -> None:
    log = FeatureLog()
    t = step_reward(["m1", "m2"], SIZES, {"m1": 12, "m3": 8, "m4": 5},
                    recoverable={"m1", "m3"}, stale_used={"m1"})
    log.log_decision(0, "mixed-score", 32, 2, t)
    log.log_decision(1, "osl-mr", 32, 1, step_reward(["m1"], SIZES, {"m1": 12}))
    path = tmp_path / "trace.jsonl"
    log.save(path)
    again = FeatureLog.load(path)
    assert [d.reward["raw"] for d in again.decisions] == [-260.0, 4 * 12 + 64 - 12]
    assert again.decisions[0].reward["stale"] == 12
    with pytest.raises(ValidationError):
        log.log_decision(-1, "x", 32, 0, t)
    with pytest.raises(ValidationError):
        log.log_decision(0, "x", 32, 0, {"raw": 1.0})
