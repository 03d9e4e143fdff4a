"""Decay laws (mars_core.decay), Oblivion retention (seed 002 §2.2–2.3) and seed 003 rules."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import decay
from mars_core.clock import FakeClock
from mars_core.errors import ValidationError
from mars_core.model import MemoryType
from mars_core.scoring.retention import (
    KIND_BY_TYPE,
    LifecycleConfig,
    OblivionConfig,
    PracticeKind,
    RelevanceConfig,
    RetentionAction,
    RetentionState,
    graduated_action,
    is_low_retention,
    kind_for,
    oblivion_retention,
    reinforce,
    relevance_at,
    relevance_score,
    should_archive,
    should_expire,
    should_prune,
    stability,
    state_retention,
    tick,
    ttl_for,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
unit = st.floats(0.0, 1.0, allow_nan=False)


# --- decay laws --------------------------------------------------------------------------------


def test_exponential() -> None:
    assert decay.exponential(0, 3.0) == 1.0
    assert decay.exponential(5, 0.0) == 1.0
    assert decay.exponential(2, 0.5) == pytest.approx(math.exp(-1))
    arr = decay.exponential(np.array([0.0, 1.0, 2.0]), 0.5)
    assert np.allclose(arr, np.exp(-0.5 * np.arange(3)))
    per_item = decay.exponential(np.array([1.0, 1.0]), np.array([0.0, 1.0]))
    assert np.allclose(per_item, [1.0, math.exp(-1)])
    for bad in ((-1, 0.1), (1, -0.1), (math.nan, 0.1), (1, math.inf)):
        with pytest.raises(ValidationError):
            decay.exponential(*bad)
    with pytest.raises(ValidationError):
        decay.exponential(np.array([1.0, -1.0]), 0.1)


@pytest.mark.parametrize(
    ("omega", "values"),
    [(0.86, [0.86, 0.7045, 0.5771, 0.4278, 0.3172, 0.117]),
     (0.44, [0.44, 0.3349, 0.2549, 0.1692, 0.1124, 0.0287])],
)
def test_inertial_matches_seed_004_trajectories(omega: float, values: list[float]) -> None:
    steps = [0, 10, 20, 35, 50, 100]
    for dn, want in zip(steps, values, strict=True):
        assert decay.inertial(omega, dn) == pytest.approx(want, abs=6e-5)
    arr = decay.inertial(omega, np.array(steps, dtype=float))
    assert np.allclose(arr, [decay.inertial(omega, s) for s in steps])


@pytest.mark.parametrize(
    ("omega", "half"),
    [(0.87, 35.0517), (0.72, 30.9441), (0.50, 26.4056), (0.35, 24.0051), (0.25, 22.6334),
     (0.18, 21.7629)],
)
def test_inertial_half_life_table_3(omega: float, half: float) -> None:
    assert decay.inertial_half_life(omega) == pytest.approx(half, abs=1e-4)
    assert decay.inertial(omega, decay.inertial_half_life(omega)) == pytest.approx(omega / 2)


def test_inertial_validation_and_no_inertia() -> None:
    assert decay.inertial(0.5, 10, eta=0.0) == pytest.approx(0.5 * math.exp(-0.35))
    assert decay.half_life(0.035) == pytest.approx(19.8, abs=0.05)
    assert decay.half_life(0.0) == math.inf
    assert decay.rate_for_half_life(decay.half_life(0.2)) == pytest.approx(0.2)
    for kwargs in ({"omega": 1.2, "delta": 1}, {"omega": 0.5, "delta": 1, "eta": 1.0},
                   {"omega": -0.1, "delta": 1}):
        with pytest.raises(ValidationError):
            decay.inertial(**kwargs)  # type: ignore[arg-type]


def test_log_accelerated_and_hyperbolic() -> None:
    assert round(decay.log_accelerated(50, 0.002, 10.0), 6) == 0.756407
    assert round(decay.log_accelerated(50, 0.002, 10.0, log_base=10.0), 6) == 0.837097
    arr = decay.log_accelerated(np.array([50.0, 50.0]), np.array([0.002, 0.15]), 10.0)
    assert arr[0] == pytest.approx(0.756407, abs=1e-6)
    assert arr[1] == pytest.approx(8.07e-10, rel=1e-3)
    with pytest.raises(ValidationError):
        decay.log_accelerated(1, 0.1, 10.0, log_base=1.0)
    with pytest.raises(ValidationError):
        decay.log_accelerated(1, 0.1, 0.0)
    assert decay.hyperbolic(0, 7) == 1.0 and decay.hyperbolic(7, 7) == 0.5
    assert np.allclose(decay.hyperbolic(np.array([0.0, 30.0, 60.0]), 30), [1, 0.5, 1 / 3])
    with pytest.raises(ValidationError):
        decay.hyperbolic(1, 0)


def test_clock_ages() -> None:
    clock = FakeClock(start=T0)
    start = clock.now()
    clock.advance(timedelta(days=2, hours=12))
    assert decay.age_days(start, clock) == 2.5
    assert decay.age_hours(start, clock) == 60.0
    assert decay.whole_days_between(start, clock.now()) == 2
    # seed 003 floors: 29.9 days count as 29 (digest Z-D2)
    assert decay.whole_days_between(T0, T0 + timedelta(days=29.9)) == 29
    # a start in the future (clock skew) is age zero
    assert decay.days_between(T0 + timedelta(days=1), T0) == 0.0
    assert decay.whole_days_between(T0 + timedelta(days=1), T0) == 0
    # naive datetimes are taken as UTC
    assert decay.days_between(datetime(2025, 1, 1), T0 + timedelta(days=1)) == 1.0


# --- Oblivion retention ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("temperature", "row"),
    [(1, [0.3715, 0.0071, 0.0001, 0.0, 0.0]),
     (10, [0.9057, 0.6095, 0.3715, 0.1380, 0.0071]),
     (50, [0.9804, 0.9057, 0.8204, 0.6730, 0.3715])],
)
def test_retention_matches_digest_table(temperature: float, row: list[float]) -> None:
    cfg = OblivionConfig(temperature=temperature)
    for n, want in zip((1, 5, 10, 20, 50), row, strict=True):
        assert round(oblivion_retention(n, 0.5, 0.5, cfg), 4) == want


def test_retention_edge_cases() -> None:
    assert oblivion_retention(0, 0.0, 0.0) == 1.0
    assert oblivion_retention(1, 0.0, 0.0) == pytest.approx(math.exp(-10))      # S = ε·T = 0.1
    assert stability(1.0, 1.0) == pytest.approx(20.1)
    with pytest.raises(ValidationError):
        stability(1.5, 0.0)
    with pytest.raises(ValidationError):
        oblivion_retention(-1, 0.5, 0.5)
    with pytest.raises(pydantic.ValidationError):
        OblivionConfig(epsilon=0.0)
    with pytest.raises(pydantic.ValidationError):
        OblivionConfig(utility_min=0.9, utility_max=0.1)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 10_000), u=unit, f=unit, t=st.floats(0.1, 100))
def test_retention_bounds_and_monotonicity(n: int, u: float, f: float, t: float) -> None:
    cfg = OblivionConfig(temperature=t)
    r = oblivion_retention(n, u, f, cfg)
    assert 0.0 <= r <= 1.0
    assert oblivion_retention(n + 1, u, f, cfg) <= r
    assert oblivion_retention(n, min(1.0, u + 0.1), f, cfg) >= r
    assert oblivion_retention(n, u, min(1.0, f + 0.1), cfg) >= r
    assert oblivion_retention(n, u, f, OblivionConfig(temperature=t * 2)) >= r


def test_tick_and_reinforce() -> None:
    s = RetentionState.new()
    assert (s.utility, s.access_count, s.turns_since_access) == (0.5, 0, 0)
    s = tick(tick(s), 4)
    assert s.turns_since_access == 5
    r = reinforce(s, 0.9)
    assert (r.turns_since_access, r.access_count) == (0, 1)
    assert r.utility == pytest.approx(0.7)                   # 0.5 + 0.5·(0.9 - 0.5)
    assert reinforce(RetentionState(utility=0.5), 5.0).utility == pytest.approx(0.725)   # clip 0.95
    assert reinforce(RetentionState(utility=0.5), -1).utility == pytest.approx(0.275)    # clip 0.05
    assert reinforce(RetentionState(utility=0.5)).utility == pytest.approx(0.725)   # no assessment
    assert RetentionState(access_count=25).frequency() == 1.0
    with pytest.raises(ValidationError):
        tick(s, -1)
    with pytest.raises(ValidationError):
        reinforce(s, math.nan)


@settings(max_examples=200, deadline=None)
@given(u=unit, count=st.integers(0, 50), n=st.integers(0, 500), later=st.integers(0, 500),
       assessed=unit)
def test_reinforcement_raises_retention(u: float, count: int, n: int, later: int,
                                        assessed: float) -> None:
    before = RetentionState(utility=u, access_count=count, turns_since_access=n)
    after = reinforce(before, assessed)
    assert state_retention(after) == 1.0 >= state_retention(before)
    # when the assessment is at least the current utility, the advantage persists
    if min(0.95, max(0.05, assessed)) >= u:  # (up to float rounding of the update)
        assert state_retention(tick(after, later)) >= state_retention(tick(before, later)) - 1e-12


def test_sawtooth() -> None:
    cfg = OblivionConfig()
    s = RetentionState.new(cfg)
    trace = []
    for turn in range(30):
        s = reinforce(s, 0.8, cfg) if turn % 10 == 9 else tick(s)
        trace.append(state_retention(s, cfg))
    drops = [b < a for a, b in itertools.pairwise(trace)]
    assert trace[9] == trace[19] == trace[29] == 1.0
    assert sum(drops) == 26              # 29 steps: falls every turn but the 3 spikes
    # a memory that keeps being used decays more slowly each cycle
    assert trace[18] > trace[8]
    assert is_low_retention(tick(RetentionState.new(cfg), 30), cfg)
    assert not is_low_retention(RetentionState.new(cfg), cfg)


# --- seed 003 relevance ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "age", "count", "last", "want"),
    [
        ("decision", 0, 0, 0, 0.70),
        ("tool_output", 30, 0, 30, 0.2478),
        ("observation", 90, 2, 90, 0.2494),
        ("preference", 60, 10, 0, 0.76),
        ("tool_output", 365, 0, 365, 0.0865),
    ],
)
def test_relevance_worked_examples(kind: str, age: int, count: int, last: int,
                                   want: float) -> None:
    assert round(relevance_score(kind, age, count, last), 4) == pytest.approx(want)
    created = T0
    now = T0 + timedelta(days=age)
    last_at = now - timedelta(days=last)
    assert round(relevance_at(kind, created, count, last_at, now=now), 4) == pytest.approx(want)


def test_relevance_floors_days_and_defaults() -> None:
    now = T0 + timedelta(days=29, hours=23)
    assert relevance_at("finding", T0, 0, None, now=now) == pytest.approx(
        relevance_score("finding", 29, 0, 29))
    assert RelevanceConfig().type_weight("identity") == 0.5          # unlisted kind
    lower = 0.2 * 0.3                                               # age -> inf bound, tool_output
    assert relevance_score("tool_output", 10**9, 0, 10**9) == pytest.approx(lower, abs=1e-6)
    assert relevance_score("decision", 0, 100, 0) == pytest.approx(1.0)
    assert should_prune(0.0865) and not should_prune(0.2) and not should_prune(0.2478)
    with pytest.raises(ValidationError):
        relevance_score("decision", 0, -1, 0)


# --- TTL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "ttl"),
    [("session_state", timedelta(hours=24)), ("project_status", timedelta(days=30)),
     ("tool_output", timedelta(days=7)), ("decision", timedelta(days=365)),
     ("preference", timedelta(days=730))],
)
def test_exactly_at_ttl_is_not_expired(kind: str, ttl: timedelta) -> None:
    assert ttl_for(kind) == ttl
    assert not should_expire(kind, T0, T0 + ttl)
    assert should_expire(kind, T0, T0 + ttl + timedelta(microseconds=1))
    assert not should_expire(kind, T0, T0)


def test_identity_never_expires_and_defaults() -> None:
    assert ttl_for("identity") is None and ttl_for("active_decision") is None
    assert not should_expire("identity", T0, T0 + timedelta(days=10**5))
    # a kind removed from the table falls back to default_ttl (never immortal by accident)
    cfg = LifecycleConfig(ttl={PracticeKind.IDENTITY: None})
    assert ttl_for("observation", cfg) == timedelta(days=30)
    assert should_expire("observation", T0, T0 + timedelta(days=31), cfg)
    # clock skew: created in the future never expires
    assert not should_expire("tool_output", T0 + timedelta(days=100), T0)
    # every kind has an explicit TTL entry
    assert set(LifecycleConfig().ttl) == set(PracticeKind)


# --- archival -------------------------------------------------------------------------------


def test_should_archive_edges() -> None:
    old = T0 + timedelta(days=400)
    assert not should_archive("identity", T0, 0, None, now=old)
    assert not should_archive("active_decision", T0, 0, None, now=old)
    assert should_archive("tool_output", T0, 0, None, now=old)
    # idle exactly 90 whole days is not archived; 91 is
    assert not should_archive("tool_output", T0, 0, None, now=T0 + timedelta(days=90, hours=23))
    assert should_archive("tool_output", T0, 0, None, now=T0 + timedelta(days=91))
    # recently accessed: idle clock restarts at the last access
    assert not should_archive("tool_output", T0, 1, old - timedelta(days=5), now=old)
    # relevance > 0.5 keeps even a long-idle entry
    cfg = LifecycleConfig(relevance=RelevanceConfig(w_type=10.0))
    assert relevance_at("decision", T0, 0, None, now=old, config=cfg.relevance) > 0.5
    assert not should_archive("decision", T0, 0, None, now=old, config=cfg)


def test_frequently_but_not_recently_accessed_can_be_archived() -> None:
    # digest Z-D4: the seed's comment overstates its own rule
    old = T0 + timedelta(days=400)
    assert relevance_at("finding", T0, 50, T0 + timedelta(days=200), now=old) <= 0.5
    assert should_archive("finding", T0, 50, T0 + timedelta(days=200), now=old)


# --- graduated retention, mapping ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "age", "action"),
    [
        ("tool_output", 0, "keep"), ("tool_output", 7, "keep"), ("tool_output", 8, "archive"),
        ("session_state", 20, "archive"), ("observation", 20, "keep"), ("decision", 20, "keep"),
        ("finding", 30, "keep"), ("finding", 31, "compact"), ("observation", 90, "compact"),
        ("project_status", 45, "archive"), ("preference", 45, "keep"),
        ("compacted_summary", 60, "keep"), ("gotcha", 90, "keep"),
        ("identity", 91, "keep"), ("decision", 400, "keep"), ("active_decision", 400, "keep"),
        ("preference", 91, "archive"), ("gotcha", 91, "archive"),
        ("compacted_summary", 91, "archive"),
    ],
)
def test_graduated_action(kind: str, age: int, action: str) -> None:
    assert graduated_action(kind, age) is RetentionAction(action)


def test_graduated_action_validation() -> None:
    with pytest.raises(ValidationError):
        graduated_action("decision", -1)
    with pytest.raises(pydantic.ValidationError):
        LifecycleConfig(tiers_days=(30, 7, 90))


def test_kind_mapping() -> None:
    assert KIND_BY_TYPE[MemoryType.SEMANTIC] is PracticeKind.PREFERENCE
    assert KIND_BY_TYPE[MemoryType.TASK] is PracticeKind.PROJECT_STATUS
    assert KIND_BY_TYPE[MemoryType.EPISODIC] is PracticeKind.OBSERVATION
    assert KIND_BY_TYPE[MemoryType.SOCIAL] is PracticeKind.FINDING
    assert set(KIND_BY_TYPE) == set(MemoryType)
    assert kind_for("task", "decision") is PracticeKind.DECISION
    assert kind_for(MemoryType.SOCIAL, "nonsense") is PracticeKind.FINDING
    assert ttl_for(kind_for("semantic")) == timedelta(days=730)


def test_configs_document_every_field() -> None:
    for model in (OblivionConfig, RetentionState, RelevanceConfig, LifecycleConfig):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"
