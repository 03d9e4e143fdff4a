"""OSL-MR Mixed-Score and freshness proxy (seed 001 §3.3, A.2)."""

from __future__ import annotations

import math

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core.errors import ValidationError
from mars_core.scoring.mixed import (
    LEGACY_DURABILITY,
    Durability,
    FreshnessConfig,
    MixedScoreConfig,
    MixedSignals,
    MixedWeights,
    first_stale_step,
    freshness,
    freshness_batch,
    is_stale,
    jaccard,
    kappa,
    label_durability,
    mixed_score,
    mixed_score_batch,
    question_overlap,
    recency_ratio,
    relevance,
    session_locality,
    stale_risk,
)

LOG10 = FreshnessConfig(log_base=10.0)
STABLE, TEMPORARY = Durability.STABLE, Durability.TEMPORARY

# digest B.2 table (values computed from the A.2 formula, not the paper's prose)
FRESHNESS_TABLE = [
    # Δt, stable ln, stable log10, temporary ln, temporary log10
    (1, 0.997812, 0.997919, 0.848490, 0.855380),
    (5, 0.986044, 0.988308, 0.348506, 0.413926),
    (10, 0.966704, 0.974315, 0.0788884, 0.142054),
    (20, 0.919482, 0.942627, 0.00184397, 0.0118983),
    (50, 0.756407, 0.837097, 8.07e-10, 1.62e-06),
    (100, 0.506830, 0.664794, 7.3e-23, 5.0e-14),
    (200, 0.198333, 0.394993, 0.0, 0.0),
]


# --- freshness ------------------------------------------------------------------------------


def test_freshness_at_50_natural_log() -> None:
    assert round(freshness(50, STABLE), 6) == 0.756407
    assert freshness(50, TEMPORARY) == pytest.approx(8.07e-10, rel=1e-3)
    # the paper's "≈0.82" is reproduced by neither base (DESIGN §6): pin the formula
    assert abs(freshness(50, STABLE) - 0.82) > 0.05


def test_freshness_at_50_log10() -> None:
    assert round(freshness(50, STABLE, LOG10), 6) == 0.837097
    assert freshness(50, TEMPORARY, LOG10) == pytest.approx(1.62e-06, rel=1e-2)
    assert round(freshness(50, STABLE, FreshnessConfig(log_base=2.0)), 3) == 0.699


@pytest.mark.parametrize(("dt", "s_ln", "s_10", "t_ln", "t_10"), FRESHNESS_TABLE)
def test_freshness_table(dt: int, s_ln: float, s_10: float, t_ln: float, t_10: float) -> None:
    assert freshness(dt, STABLE) == pytest.approx(s_ln, rel=1e-5)
    assert freshness(dt, STABLE, LOG10) == pytest.approx(s_10, rel=1e-5)
    assert freshness(dt, TEMPORARY) == pytest.approx(t_ln, rel=2e-2, abs=1e-30)
    assert freshness(dt, TEMPORARY, LOG10) == pytest.approx(t_10, rel=2e-2, abs=1e-30)


def test_kappa_worked_values() -> None:
    assert round(kappa(50), 6) == 2.791759
    assert round(kappa(50, log_base=10.0), 6) == 1.778151
    assert kappa(0) == 1.0
    with pytest.raises(ValidationError):
        kappa(-1)


def test_first_stale_step() -> None:
    assert first_stale_step(STABLE) == 102
    assert first_stale_step(TEMPORARY) == 4
    assert first_stale_step(STABLE, LOG10) == 157
    assert first_stale_step(TEMPORARY, LOG10) == 5
    assert not is_stale(101, STABLE) and is_stale(102, STABLE)
    assert not is_stale(3, TEMPORARY) and is_stale(4, TEMPORARY)
    assert first_stale_step(STABLE, FreshnessConfig(gamma_stable=0.0)) is None
    assert first_stale_step(STABLE, FreshnessConfig(theta_stale=1.0)) == 1


def test_stale_threshold_is_strict() -> None:
    cfg = FreshnessConfig(theta_stale=freshness(7, TEMPORARY))
    assert not is_stale(7, TEMPORARY, cfg)
    assert is_stale(8, TEMPORARY, cfg)
    assert stale_risk(0, STABLE) == 0.0


@settings(max_examples=100, deadline=None)
@given(a=st.floats(0, 1e4), b=st.floats(0, 1e4), temp=st.booleans())
def test_freshness_is_monotone_and_bounded(a: float, b: float, temp: bool) -> None:
    d = TEMPORARY if temp else STABLE
    lo, hi = sorted((a, b))
    f_lo, f_hi = freshness(lo, d), freshness(hi, d)
    assert 0.0 <= f_hi <= f_lo <= 1.0
    assert freshness(lo, TEMPORARY) <= freshness(lo, STABLE)


def test_freshness_batch_matches_scalar() -> None:
    dt = np.array([0, 1, 5, 50, 100])
    temp = np.array([False, True, False, True, False])
    got = freshness_batch(dt, temp)
    want = [freshness(float(d), TEMPORARY if t else STABLE) for d, t in zip(dt, temp, strict=True)]
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    with pytest.raises(ValidationError):
        freshness_batch([1, 2], [True])
    with pytest.raises(ValidationError):
        freshness(-1, STABLE)


def test_freshness_config() -> None:
    cfg = FreshnessConfig()
    assert (cfg.tau, cfg.gamma_stable, cfg.gamma_temporary, cfg.theta_stale) == (10, 0.002, 0.15,
                                                                                  0.5)
    assert cfg.log_base == math.e
    with pytest.raises(pydantic.ValidationError):
        FreshnessConfig(log_base=1.0)
    with pytest.raises(pydantic.ValidationError):
        FreshnessConfig.model_validate({"tau": 10, "base": 2})
    for model in (FreshnessConfig, MixedWeights, MixedScoreConfig, MixedSignals):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


# --- Mixed-Score ------------------------------------------------------------------------------


def test_default_weights_are_the_seed_prior() -> None:
    w = MixedWeights()
    assert (w.recency, w.question, w.answer, w.entity, w.session, w.speaker, w.cost) == (
        0.35, 0.40, 0.15, 0.05, 0.03, 0.02, 0.05)
    assert w.relevance_vector().sum() == pytest.approx(1.0)


def test_answer_overlap_is_off_by_default() -> None:
    sig = MixedSignals(recency=1, question=1, entity=1, session=1, speaker=1)
    assert sig.answer == 0.0
    assert relevance(sig) == pytest.approx(0.85)
    with_proxy = sig.model_copy(update={"answer": 1.0})
    assert relevance(with_proxy) == pytest.approx(1.0)


def test_mixed_score_formula() -> None:
    sig = MixedSignals(recency=0.5, question=0.25, entity=1.0)
    rel = 0.35 * 0.5 + 0.40 * 0.25 + 0.05 * 1.0
    for dt, d in ((0, STABLE), (30, STABLE), (3, TEMPORARY), (50, TEMPORARY)):
        want = rel * freshness(dt, d) - 0.05 * 40 / 200
        got = mixed_score(sig, delta_t=dt, durability=d, size=40, budget=200)
        assert got == pytest.approx(want)
    off = MixedScoreConfig(use_freshness=False)
    assert mixed_score(sig, delta_t=50, durability=TEMPORARY, size=40, budget=200,
                       config=off) == pytest.approx(rel - 0.01)


def test_cost_is_not_discounted_by_freshness() -> None:
    sig = MixedSignals()                             # no relevance at all
    fresh = mixed_score(sig, delta_t=0, durability=TEMPORARY, size=50, budget=100)
    stale = mixed_score(sig, delta_t=500, durability=TEMPORARY, size=50, budget=100)
    assert fresh == stale == pytest.approx(-0.025)


def test_temporary_ranks_below_stable_when_old() -> None:
    sig = MixedSignals(recency=0.2, question=0.8)
    a = mixed_score(sig, delta_t=50, durability=STABLE, size=10, budget=100)
    b = mixed_score(sig, delta_t=50, durability=TEMPORARY, size=10, budget=100)
    assert a > b


def test_mixed_score_batch_matches_scalar() -> None:
    rng = np.random.default_rng(1)
    n = 20
    phi = rng.random((n, 6))
    dt = rng.integers(0, 200, n).astype(float)
    temp = rng.random(n) < 0.5
    size = rng.integers(1, 100, n).astype(float)
    got = mixed_score_batch(phi, dt, temp, size, 512.0)
    for i in range(n):
        sig = MixedSignals(**dict(zip(("recency", "question", "answer", "entity", "session",
                                       "speaker"), phi[i], strict=True)))
        want = mixed_score(sig, delta_t=dt[i], durability=TEMPORARY if temp[i] else STABLE,
                           size=size[i], budget=512.0)
        assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_mixed_score_validation() -> None:
    with pytest.raises(ValidationError):
        mixed_score(MixedSignals(), delta_t=0, durability=STABLE, size=1, budget=0)
    with pytest.raises(ValidationError):
        mixed_score_batch(np.ones((2, 5)), [0, 0], [0, 0], [1, 1], 10)
    with pytest.raises(ValidationError):
        mixed_score_batch(np.full((1, 6), 2.0), [0], [0], [1], 10)
    with pytest.raises(pydantic.ValidationError):
        MixedSignals(question=1.5)


def test_signal_helpers() -> None:
    assert recency_ratio(0, 0) == 1.0
    assert recency_ratio(4, 9) == 0.5
    with pytest.raises(ValidationError):
        recency_ratio(5, 4)
    assert question_overlap({"a", "b", "c", "d"}, {"a", "c", "x"}) == 0.5
    assert question_overlap(set(), {"a"}) == 0.0
    assert jaccard({"Ana", "Bo"}, {"Bo", "Cy"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 0.0
    assert session_locality(0) == 1.0 and session_locality(3) == 0.25
    with pytest.raises(ValidationError):
        session_locality(-1)


# --- the online labeller ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I plan to visit Porto",
        "Tomorrow we fly to Oslo",
        "I will call her tonight",
        "We're going to   paint the kitchen",
        "Let's schedule a call next week",
        "Hi!",
        "Hello Caroline, good to see you",
        "good morning",
        "I just finished the report",
        "I'm currently reading Dune",
        "Right now I'm at the gym",
    ],
)
def test_temporary_cues(text: str) -> None:
    assert label_durability(text) is Durability.TEMPORARY


@pytest.mark.parametrize(
    "text",
    [
        "My sister Ana is a nurse in Lisbon",
        "I have been vegetarian for ten years",
        "Willow is my dog's name",                    # 'will' only as a whole word
        "This is the thing I love most",             # 'hi' inside 'this' is no greeting
        "Hello " + "I grew up by the sea and have loved sailing ever since " * 2,   # long
        "I planted roses",                            # 'plan' only as a whole word
    ],
)
def test_stable_default(text: str) -> None:
    assert label_durability(text) is Durability.STABLE


def test_greeting_length_boundary() -> None:
    base = "hello "
    short = base + "x" * (99 - len(base))
    long = base + "x" * (100 - len(base))
    assert len(short) == 99 and label_durability(short) is Durability.TEMPORARY
    assert len(long) == 100 and label_durability(long) is Durability.STABLE


def test_legacy_schema_mapping_is_complete() -> None:
    assert set(LEGACY_DURABILITY) == {
        "stable_fact", "profile_trait", "relationship_state", "activity_event",
        "opinion_preference", "temporary_plan", "ephemeral", "other",
    }
    assert LEGACY_DURABILITY["temporary_plan"] is Durability.TEMPORARY
    assert LEGACY_DURABILITY["profile_trait"] is Durability.STABLE
