"""DMF scoring reproduces the paper's numbers (seed 004 §5–§8) and keeps its properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core.errors import ValidationError
from mars_core.nlp import Analyzer
from mars_core.scoring import (
    CentroidTracker,
    DMFConfig,
    OperationalCues,
    ProvenanceFlags,
    Tier,
    apply_social_floor,
    budget_eviction_order,
    cosine_divergence,
    decay_rate,
    effective_score,
    effective_scores,
    entity_norm,
    half_life,
    is_hard_kill,
    operational_logit,
    prune_score,
    prune_scores,
    retention_bonus,
    score_signals,
    sigmoid,
    supersession_penalty,
    survival_score,
    tier,
    turns_until,
)

CON = OperationalCues(constraint=True)
unit = st.floats(0.0, 1.0, allow_nan=False)
omegas = st.floats(1e-6, 1.0, allow_nan=False)

# --- Table 2 (seed 004 §5.4) ------------------------------------------------------------

TABLE2 = [
    # profile, ID, |S|, E_norm, D, cues, paper z_total, paper Omega
    ("technical fact", 0.60, 0.05, 0.80, 0.05, None, 3.29, 0.86),
    ("user constraint", 0.35, 0.05, 0.20, 0.05, CON, 2.24, 0.68),
    ("content-rich on-topic", 0.65, 0.10, 0.20, 0.05, None, 2.25, 0.68),
    ("average turn", 0.40, 0.15, 0.20, 0.15, None, 1.26, 0.44),
    ("emotional off-topic drift", 0.15, 0.85, 0.10, 0.70, None, -0.93, 0.08),
    ("empty / non-social", 0.00, 0.00, 0.00, 0.00, None, 0.00, 0.18),
]


Table2Row = tuple[str, float, float, float, float, OperationalCues | None, float, float]
Table3Row = tuple[float, float, float, float, float, Tier]


@pytest.mark.parametrize("row", TABLE2, ids=[row[0] for row in TABLE2])
def test_table2_profiles(row: Table2Row) -> None:
    profile, id_, s, e, d, cues, z_paper, omega_paper = row
    score = survival_score(id_, s, e, d, cues=cues)
    assert abs(score.z_total - z_paper) <= 0.006, profile
    assert round(score.omega, 2) == omega_paper, profile
    assert score.z_prov == 0.0
    assert score.omega == score.omega_raw  # no social floor in Table 2


def test_table2_constraint_row_needs_the_constraint_flag() -> None:
    plain = survival_score(0.35, 0.05, 0.20, 0.05)
    assert plain.z_total == pytest.approx(1.335)
    assert round(plain.omega, 2) != 0.68
    flagged = survival_score(0.35, 0.05, 0.20, 0.05, cues=CON)
    assert flagged.z_op == pytest.approx(0.75 * 1.20)
    # with constraint-source provenance too, the row would read 0.70, not 0.68
    # (sigmoid(0.835) = 0.6974; the seed digest's "0.6971" is a slip)
    both = survival_score(
        0.35, 0.05, 0.20, 0.05, cues=CON, provenance=ProvenanceFlags(constraint_source=True)
    )
    assert both.z_total == pytest.approx(2.335)
    assert both.omega == pytest.approx(0.6974, abs=1e-4)


def test_calibration_average_turn() -> None:  # eqs (13)-(14)
    s = survival_score(0.40, 0.15, 0.20, 0.15)
    assert s.z_content == pytest.approx(1.255)
    assert s.omega == pytest.approx(0.439, abs=5e-4)


def test_phatic_score_eq27() -> None:
    assert survival_score(0, 0, 0, 0).omega == pytest.approx(sigmoid(-1.5))
    assert sigmoid(-1.5) == pytest.approx(0.1824, abs=1e-4)


@pytest.mark.parametrize(
    ("cue", "boost"),
    [("constraint", 0.90), ("preference", 0.525), ("current_state", 0.45),
     ("correction", 0.675), ("replacement", 0.375), ("past_state", 0.0)],
)
def test_operational_boosts(cue: str, boost: float) -> None:
    assert operational_logit(OperationalCues(**{cue: True})) == pytest.approx(boost)


def test_provenance_boosts_table4() -> None:
    s = survival_score(
        0.4, 0.1, 0.2, 0.1,
        provenance=ProvenanceFlags(user_correction=True, preference_update=True,
                                   constraint_source=True, corrected_by_user=True),
    )
    assert s.z_prov == pytest.approx(0.15 + 0.10 + 0.10 - 0.0)
    cfg = DMFConfig(kappa_cb=0.3)
    penalised = survival_score(0.4, 0.1, 0.2, 0.1,
                               provenance=ProvenanceFlags(corrected_by_user=True), config=cfg)
    assert penalised.z_prov == pytest.approx(-0.3)


def test_query_and_ack_do_not_enter_z_op() -> None:
    sig = Analyzer("rules", sentiment="lexicon").analyze("Understood.")
    assert sig.ack_like
    assert score_signals(sig).z_op == 0.0


def test_score_signals_uses_text_cues_and_entity_cap() -> None:
    sig = Analyzer("rules", sentiment="lexicon").analyze("Do not use external APIs.")
    s = score_signals(sig, divergence=0.05)
    assert s.z_op == pytest.approx(0.9)
    expected = survival_score(sig.info_density, sig.sentiment_magnitude, sig.entity_norm(),
                              0.05, cues=CON)
    assert s.z_total == pytest.approx(expected.z_total)


@pytest.mark.parametrize(
    ("args", "message"),
    [((1.1, 0, 0, 0), "ID"), ((0, -0.1, 0, 0), "|S|"), ((0, 0, 1.5, 0), "E_norm"),
     ((0, 0, 0, 2.1), "D"), ((math.nan, 0, 0, 0), "ID")],
)
def test_out_of_range_signals_are_rejected(args: tuple[float, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        survival_score(*args)


def test_entity_norm_eq4() -> None:
    assert [entity_norm(e) for e in (0, 1, 4, 5, 12)] == [0.0, 0.2, 0.8, 1.0, 1.0]
    assert entity_norm(3, cap=3) == 1.0
    with pytest.raises(ValidationError):
        entity_norm(-1)


# --- decay, half-life, tiers (seed 004 §6) ----------------------------------------------

TABLE3 = [
    # Omega, mu, lambda_eff (paper, 4 dp), half-life (exact, 2 dp), paper's 1-dp half-life,
    # tier at creation
    (0.87, 0.565, 0.0198, 35.05, 35.0, Tier.HEALTHY),
    (0.72, 0.640, 0.0224, 30.94, 30.9, Tier.UNSTABLE),
    (0.50, 0.750, 0.0263, 26.41, 26.4, Tier.UNSTABLE),
    (0.35, 0.825, 0.0289, 24.01, 24.0, Tier.UNSTABLE),
    (0.25, 0.875, 0.0306, 22.63, 22.6, Tier.CRITICAL),
    (0.18, 0.910, 0.0319, 21.76, 21.8, Tier.CRITICAL),
]


@pytest.mark.parametrize("row", TABLE3, ids=[str(row[0]) for row in TABLE3])
def test_table3_half_lives(row: Table3Row) -> None:
    omega, mu, lam, t_half, paper_t, tier_ = row
    assert 1 - 0.5 * omega == pytest.approx(mu)
    assert abs(decay_rate(omega) - lam) <= 5e-5  # the paper rounds lambda_eff to 4 dp
    assert round(half_life(omega), 2) == t_half
    # the paper's 1-dp column is within 0.06 (35.05 is printed as 35.0)
    assert abs(half_life(omega) - paper_t) <= 0.06
    assert tier(omega) is tier_
    assert effective_score(omega, half_life(omega)) == pytest.approx(omega / 2)


def test_half_life_without_inertia() -> None:
    assert half_life(0.9, DMFConfig(inertia_eta=0.0)) == pytest.approx(math.log(2) / 0.035)
    assert round(math.log(2) / 0.035, 1) == 19.8


@pytest.mark.parametrize(
    ("omega", "trajectory"),
    [(0.86, [0.86, 0.7045, 0.5771, 0.4278, 0.3172, 0.117]),
     (0.44, [0.44, 0.3349, 0.2549, 0.1692, 0.1124, 0.0287])],
)
def test_decay_trajectories(omega: float, trajectory: list[float]) -> None:
    steps = [0, 10, 20, 35, 50, 100]
    assert [round(effective_score(omega, n), 4) for n in steps] == trajectory
    assert effective_scores(omega, steps).round(4).tolist() == trajectory


@pytest.mark.parametrize(
    ("omega", "turns"), [(0.86, 142.6), (0.68, 113.0), (0.439, 79.5), (0.25, 52.6), (0.18, 40.2)]
)
def test_turns_until_hard_kill(omega: float, turns: float) -> None:
    assert round(turns_until(omega, 0.05), 1) == turns


def test_leaving_healthy() -> None:
    assert round(turns_until(0.86, 0.75), 2) == 6.86
    assert turns_until(0.5, 0.75) == 0.0


@pytest.mark.parametrize(
    ("omega_eff", "expected"),
    [(1.0, Tier.HEALTHY), (0.7500001, Tier.HEALTHY), (0.75, Tier.UNSTABLE),
     (0.5, Tier.UNSTABLE), (0.3000001, Tier.UNSTABLE), (0.3, Tier.CRITICAL),
     (0.0, Tier.CRITICAL)],
)
def test_tier_boundaries(omega_eff: float, expected: Tier) -> None:
    assert tier(omega_eff) is expected


def test_custom_tier_thresholds_and_order() -> None:
    cfg = DMFConfig(tau_h=0.6, tau_c=0.2)
    assert tier(0.7, cfg) is Tier.HEALTHY and tier(0.2, cfg) is Tier.CRITICAL
    with pytest.raises(pydantic.ValidationError):
        DMFConfig(tau_h=0.3, tau_c=0.3)


def test_hard_kill_is_strict() -> None:
    assert not is_hard_kill(0.05)
    assert is_hard_kill(0.0499)


def test_decay_basic_properties() -> None:
    for omega in (0.05, 0.18, 0.5, 0.87, 1.0):
        assert effective_score(omega, 0) == omega
        values = [effective_score(omega, n) for n in range(0, 400, 7)]
        assert all(a > b for a, b in itertools.pairwise(values))
        assert all(0.0 < v <= omega for v in values)
    assert effective_score(0.0, 50) == 0.0


def test_decay_rejects_bad_input() -> None:
    with pytest.raises(ValidationError):
        effective_score(0.5, -1)
    with pytest.raises(ValidationError):
        effective_score(1.5, 1)
    with pytest.raises(ValidationError):
        effective_scores([0.5, 0.6], [1, -1])
    with pytest.raises(ValidationError):
        effective_scores([0.5, 1.2], 3)


def test_effective_scores_broadcast() -> None:
    grid = effective_scores(np.array([[0.2], [0.9]]), np.arange(5))
    assert grid.shape == (2, 5)
    assert grid[1, 3] == pytest.approx(effective_score(0.9, 3))


# --- social floor (seed 004 §8) ---------------------------------------------------------


def test_social_floor_thanks_example() -> None:
    s = survival_score(0, 0, 0, 0, social=True)
    assert s.omega_raw == pytest.approx(0.1824, abs=1e-4)
    assert s.omega == 0.25 and s.floored
    assert round(turns_until(s.omega, 0.05), 1) == 52.6
    assert round(turns_until(s.omega_raw, 0.05), 1) == 40.7


@pytest.mark.parametrize(
    ("omega", "social", "expected"),
    [(0.18, True, 0.25), (0.18, False, 0.18), (0.30, True, 0.30), (0.39, True, 0.39),
     (0.40, True, 0.40), (0.90, True, 0.90), (0.0, True, 0.25)],
)
def test_social_floor_eq29(omega: float, social: bool, expected: float) -> None:
    assert apply_social_floor(omega, social) == expected


@pytest.mark.parametrize("backend", ["rules", "auto"])
def test_social_floor_on_text(backend: str) -> None:
    analyzer = Analyzer(backend, sentiment="auto")  # type: ignore[arg-type]
    thanks = analyzer.analyze("Thanks!")
    assert thanks.social and thanks.info_density == 0.0 and thanks.entity_count == 0
    assert score_signals(thanks).omega >= 0.25
    long = analyzer.analyze("I really appreciate your comprehensive analysis of the algorithm")
    assert long.word_count == 9 and not long.social
    assert not score_signals(long).social


def test_social_word_cap_is_configurable() -> None:
    sig = Analyzer("rules", sentiment="lexicon").analyze("ok thanks that is all for today")
    assert sig.word_count == 7 and sig.social_keyword and not sig.social
    assert score_signals(sig, config=DMFConfig(social_max_words=7)).social


# --- pruning (seed 004 §7) --------------------------------------------------------------


def test_worked_example_section7() -> None:
    constraint_entry = prune_score(0.25, bonus=retention_bonus(CON))
    plain_entry = prune_score(0.40)
    superseded_entry = prune_score(0.60, superseded=True)
    assert constraint_entry == pytest.approx(0.45)
    assert plain_entry == pytest.approx(0.40)
    assert superseded_entry == pytest.approx(0.25)
    order = budget_eviction_order([1, 2, 3], [0.25, 0.40, 0.60], [0.20, 0.0, 0.0],
                                  [False, False, True])
    assert order == [3, 2, 1]  # the superseded entry, then the plain one, then the constraint


def test_retention_bonus_eq23() -> None:
    everything = OperationalCues(constraint=True, preference=True, current_state=True,
                                 correction=True, replacement=True, past_state=True)
    assert retention_bonus(everything) == pytest.approx(0.20 + 0.10 + 0.10 + 0.15 + 0.08)
    assert retention_bonus(OperationalCues(past_state=True)) == 0.0
    assert retention_bonus(None) == 0.0
    assert supersession_penalty(True) == 0.35 and supersession_penalty(False) == 0.0


def test_eviction_protects_healthy_and_breaks_ties_by_older_id() -> None:
    order = budget_eviction_order([7, 3, 5, 9], [0.5, 0.5, 0.76, 0.75])
    assert order == [3, 7, 9]  # 5 is healthy (> tau_H); ties go to the lower id
    assert budget_eviction_order([], np.array([])) == []
    with pytest.raises(ValidationError):
        budget_eviction_order([1, 2], [0.5])


def test_prune_scores_vectorised() -> None:
    got = prune_scores([0.25, 0.4, 0.6], [0.2, 0.0, 0.0], [False, False, True])
    assert got.round(6).tolist() == [0.45, 0.4, 0.25]


# --- semantic divergence (seed 004 §4.6) ------------------------------------------------


def test_centroid_first_turn_and_update_rule() -> None:
    t = CentroidTracker(window=3)
    assert t.centroid is None and t.observe([1.0, 0.0, 0.0]) == 0.0  # D = 0 on turn one
    assert t.observe([0.0, 1.0, 0.0]) == pytest.approx(1.0)  # measured before the push
    t.observe([0.0, 0.0, 1.0])
    assert len(t) == 3
    t.push([0.0, 0.0, 1.0])  # drops the oldest, (1, 0, 0)
    assert len(t) == 3
    c = t.centroid
    assert c is not None
    expected = np.array([0.0, 1.0, 2.0]) / math.sqrt(5.0)
    assert np.allclose(c, expected)
    assert t.divergence([1.0, 0.0, 0.0]) == pytest.approx(1.0)


def test_centroid_matches_eq6_eq7() -> None:
    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(15, 8))
    t = CentroidTracker.from_config(DMFConfig(centroid_window=10))
    for i, v in enumerate(vecs):
        prev = vecs[max(0, i - 10):i]
        d = t.observe(v * 3.0)  # scale does not matter
        if i == 0:
            assert d == 0.0
            continue
        units = prev / np.linalg.norm(prev, axis=1, keepdims=True)
        c = units.sum(axis=0)
        cos = float(v @ c / (np.linalg.norm(v) * np.linalg.norm(c)))
        assert d == pytest.approx(1 - cos)


def test_divergence_bounds_and_degenerate_cases() -> None:
    assert cosine_divergence([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(2.0)
    assert cosine_divergence([1.0, 0.0], [2.0, 0.0]) == pytest.approx(0.0)
    assert cosine_divergence([0.0, 0.0], [1.0, 0.0]) == 0.0
    t = CentroidTracker(window=2)
    t.push([1.0, 0.0])
    t.push([-1.0, 0.0])  # the sum is zero: no centroid
    assert t.centroid is None and t.divergence([0.0, 1.0]) == 0.0
    with pytest.raises(ValidationError):
        t.push([1.0, 0.0, 0.0])
    with pytest.raises(ValidationError):
        t.push([math.nan, 1.0])
    with pytest.raises(ValidationError):
        CentroidTracker(window=0)
    t.reset()
    assert len(t) == 0


# --- config -----------------------------------------------------------------------------


def test_config_documents_every_field_and_rejects_unknown_keys() -> None:
    for name, field in DMFConfig.model_fields.items():
        assert field.description, name
        assert field.description.startswith(("[seed", "[non-seed")), name
    with pytest.raises(pydantic.ValidationError):
        DMFConfig.model_validate({"alpah": 3.0})
    with pytest.raises(pydantic.ValidationError):
        DMFConfig(inertia_eta=1.0)
    with pytest.raises(pydantic.ValidationError):
        DMFConfig(delta=0.5)
    with pytest.raises(pydantic.ValidationError):
        DMFConfig(alpha=math.nan)
    cfg = DMFConfig()
    with pytest.raises(pydantic.ValidationError):
        cfg.alpha = 1.0  # type: ignore[misc]


def test_config_defaults_are_the_papers() -> None:
    c = DMFConfig()
    assert (c.alpha, c.beta, c.gamma, c.delta, c.x0, c.e_cap) == (3.0, 0.2, 2.0, -2.5, 1.5, 5)
    assert (c.lambda_op, c.eta_con, c.eta_pref, c.eta_cs, c.eta_corr, c.eta_repl,
            c.eta_past) == (0.75, 1.20, 0.70, 0.60, 0.90, 0.50, 0.0)
    assert (c.kappa_uc, c.kappa_pu, c.kappa_con, c.kappa_cb) == (0.15, 0.10, 0.10, 0.0)
    assert (c.decay_lambda, c.inertia_eta, c.tau_h, c.tau_c, c.omega_kill) == (
        0.035, 0.5, 0.75, 0.3, 0.05)
    assert (c.rho_con, c.rho_pref, c.rho_cs, c.rho_corr, c.rho_repl, c.p_sup) == (
        0.20, 0.10, 0.10, 0.15, 0.08, 0.35)
    assert (c.social_max_words, c.tau_soc, c.omega_soc_min) == (6, 0.40, 0.25)
    assert (c.prune_interval, c.centroid_window) == (5, 10)


def test_token_budget_was_removed_with_the_way_out() -> None:
    """τ_tok (seed 004 §7.2, 4096) is the store's budget; the never-read field is refused
    with a message that says what to pass instead."""
    with pytest.raises(pydantic.ValidationError, match=r"budget=4096"):
        DMFConfig(token_budget=4096)  # type: ignore[call-arg]
    assert "token_budget" not in DMFConfig.model_fields


# --- properties -------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.tuples(unit, unit, unit, st.floats(0.0, 2.0, allow_nan=False)),
       st.floats(0.01, 0.5), st.sampled_from(["id", "s", "e", "d"]))
def test_omega_monotone_in_each_signal(
    signals: tuple[float, float, float, float], step: float, which: str
) -> None:
    base = list(signals)
    idx = ["id", "s", "e", "d"].index(which)
    bumped = list(base)
    bumped[idx] = min(bumped[idx] + step, 2.0 if which == "d" else 1.0)
    lo, hi = survival_score(*base), survival_score(*bumped)
    if which == "d":
        assert hi.z_total <= lo.z_total and hi.omega <= lo.omega
    else:
        assert hi.z_total >= lo.z_total and hi.omega >= lo.omega


@settings(max_examples=100, deadline=None)
@given(unit, unit, unit, st.floats(0.0, 2.0, allow_nan=False),
       st.sampled_from(["constraint", "preference", "current_state", "correction",
                        "replacement", "past_state"]))
def test_cues_never_lower_omega(id_: float, s: float, e: float, d: float, cue: str) -> None:
    plain = survival_score(id_, s, e, d)
    cued = survival_score(id_, s, e, d, cues=OperationalCues(**{cue: True}))
    assert cued.omega >= plain.omega
    assert 0.0 < cued.omega < 1.0


@settings(max_examples=200, deadline=None)
@given(omegas, st.integers(0, 2000), st.integers(1, 200))
def test_decay_strictly_decreasing_and_bounded(omega: float, n: int, k: int) -> None:
    a, b = effective_score(omega, n), effective_score(omega, n + k)
    assert 0.0 <= b < a <= omega
    if n == 0:
        assert a == omega


@settings(max_examples=200, deadline=None)
@given(omegas, omegas, st.integers(0, 500))
def test_decay_preserves_order_and_inertia(o1: float, o2: float, n: int) -> None:
    lo, hi = sorted((o1, o2))
    assert effective_score(lo, n) <= effective_score(hi, n)
    assert half_life(lo) <= half_life(hi)


@settings(max_examples=100, deadline=None)
@given(st.lists(omegas, min_size=1, max_size=20), st.integers(0, 300))
def test_vectorised_decay_matches_scalar(om: list[float], n: int) -> None:
    vec = effective_scores(om, n)
    assert vec == pytest.approx([effective_score(o, n) for o in om], rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(unit, st.booleans())
def test_social_floor_never_lowers(omega: float, social: bool) -> None:
    final = apply_social_floor(omega, social)
    assert final >= omega
    if final != omega:
        assert social and omega < 0.40 and final == 0.25


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(unit, st.booleans(), st.booleans()), min_size=1, max_size=15))
def test_eviction_order_is_sorted_by_prune_score(rows: list[tuple[float, bool, bool]]) -> None:
    ids = list(range(len(rows)))
    om = [r[0] for r in rows]
    bonus = [retention_bonus(OperationalCues(constraint=r[1])) for r in rows]
    sup = [r[2] for r in rows]
    order = budget_eviction_order(ids, om, bonus, sup)
    assert set(order) == {i for i in ids if om[i] <= 0.75}
    keys = [(prune_score(om[i], bonus=bonus[i], superseded=sup[i]), i) for i in order]
    assert keys == sorted(keys)
