"""DP tie-break at the eviction boundary (seed 000 §3.3.3, §4.3, §5.4; DESIGN §3)."""

from __future__ import annotations

import itertools
import json
import math
import random
import secrets
from collections import Counter
from collections.abc import Sequence

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core.errors import ValidationError
from mars_core.policies.plan import Candidate
from mars_core.privacy.dp import (
    ANYONE,
    DPConfig,
    PrivacyAccountant,
    delta_q,
    exponential_mechanism,
    group_sizes,
    marginal_band,
    mechanism_probabilities,
    near_threshold_tiebreak,
    utility_bound,
)

DRAWS = 20_000
ON = DPConfig(enabled=True)


# --- helpers: an independent chi-square test (no scipy dependency) -----------------------


def chi2_sf(x: float, dof: int) -> float:
    """P[χ²_dof ≥ x], closed forms of the regularised upper incomplete gamma Q(dof/2, x/2)."""
    h = x / 2.0
    if dof % 2 == 0:
        return math.exp(-h) * math.fsum(h**j / math.factorial(j) for j in range(dof // 2))
    tail = math.fsum(h ** (j - 0.5) / math.gamma(j + 0.5) for j in range(1, (dof + 1) // 2))
    return math.erfc(math.sqrt(h)) + math.exp(-h) * tail


def chi_square_p(counts: Sequence[int], expected_p: Sequence[float]) -> float:
    n = sum(counts)
    stat = sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, expected_p, strict=True))
    return chi2_sf(stat, len(counts) - 1)


def em_expected(q: Sequence[float], eps: float, dq: float) -> list[float]:
    """Pr ∝ exp(ε q / 2Δq), written out directly (not via the module)."""
    raw = [math.exp(eps * v / (2 * dq)) for v in q]
    return [r / sum(raw) for r in raw]


def test_chi2_sf_reference_values() -> None:
    # textbook critical values: P[χ²_1 ≥ 3.841] = 0.05, P[χ²_4 ≥ 9.488] = 0.05,
    # P[χ²_5 ≥ 20.515] = 0.001, P[χ²_2 ≥ 2 ln 2] = 0.5
    assert chi2_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-6)
    assert chi2_sf(9.487729, 4) == pytest.approx(0.05, abs=1e-6)
    assert chi2_sf(20.515006, 5) == pytest.approx(0.001, abs=1e-7)
    assert chi2_sf(2 * math.log(2), 2) == pytest.approx(0.5)


def cands(scores: Sequence[float]) -> list[Candidate]:
    return [Candidate(f"n{i}", d) for i, d in enumerate(scores)]


def densities(util: Sequence[float], sens: Sequence[float], weights: Sequence[float],
              lam: float = 0.25) -> list[float]:
    return [(u - lam * s) / w for u, s, w in zip(util, sens, weights, strict=True)]


# --- the exponential mechanism -----------------------------------------------------------


def test_probabilities_follow_the_formula() -> None:
    q = [0.0, -0.5, 1.0, 0.3]
    for eps in (0.1, 1.0, 4.0):
        got = mechanism_probabilities(q, epsilon=eps, sensitivity=1.25)
        assert got == pytest.approx(em_expected(q, eps, 1.25), rel=1e-12)
        assert math.fsum(got) == pytest.approx(1.0)


def test_probabilities_are_numerically_stable() -> None:
    probs = mechanism_probabilities([1e6, 1e6 - 1.0, -1e6], epsilon=2.0, sensitivity=1.0)
    assert probs == pytest.approx([1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1)),
                                   0.0])
    assert all(math.isfinite(p) for p in probs)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0, 8.0])
def test_mechanism_samples_proportional_to_exp_eps_q(eps: float) -> None:
    q = [0.0, -0.5, -1.0, 0.3, -2.0, 0.1]
    dq = 1.25
    rng = random.Random(20_251_122 + int(eps * 10))
    counts = Counter(exponential_mechanism(q, q, epsilon=eps, sensitivity=dq, rng=rng)[0]
                     for _ in range(DRAWS))
    expected = em_expected(q, eps, dq)
    assert min(expected) * DRAWS >= 5  # the chi-square approximation holds
    p = chi_square_p([counts[i] for i in range(len(q))], expected)
    assert p > 0.001, (eps, counts, expected)


def test_zero_probability_options_are_never_drawn() -> None:
    rng = random.Random(3)
    picks = {exponential_mechanism("ab", [0.0, -1e5], epsilon=10.0, sensitivity=1e-3,
                                   rng=rng)[0] for _ in range(2_000)}
    assert picks == {0}


def test_default_rng_is_the_os_secure_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[random.Random] = []

    class Spy(secrets.SystemRandom):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(secrets, "SystemRandom", Spy)  # dp looks it up per call
    exponential_mechanism("ab", [0.0, 0.0], epsilon=1.0, sensitivity=1.0)
    near_threshold_tiebreak(cands([0.01, 0.01]), [5, 5], [0.0, 0.0], 5, ON)
    assert len(made) == 2
    assert all(isinstance(r, secrets.SystemRandom) for r in made)


def test_default_rng_is_not_replayable_by_seeding() -> None:
    """Re-seeding Python's generators does not reproduce the DP draws (DESIGN §3)."""
    q = [0.0] * 1000

    def run() -> list[int]:
        random.seed(0)
        return [exponential_mechanism(q, q, epsilon=1.0, sensitivity=1.0)[0]
                for _ in range(32)]

    assert run() != run()  # equal with probability 1000^-32


def test_seeded_rng_is_replayable_for_tests() -> None:
    q = [0.0, 0.1, 0.2]

    def run(seed: int) -> list[int]:
        rng = random.Random(seed)
        return [exponential_mechanism(q, q, epsilon=1.0, sensitivity=1.0, rng=rng)[0]
                for _ in range(50)]

    assert run(5) == run(5)


@pytest.mark.parametrize(("eps", "dq", "match"), [
    (0.0, 1.0, "epsilon"),
    (-1.0, 1.0, "epsilon"),
    (math.inf, 1.0, "epsilon"),
    (1.0, 0.0, "sensitivity"),
    (1.0, math.nan, "sensitivity"),
])
def test_mechanism_rejects_bad_parameters(eps: float, dq: float, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        exponential_mechanism("ab", [0.0, 1.0], epsilon=eps, sensitivity=dq)


def test_mechanism_rejects_bad_scores() -> None:
    with pytest.raises(ValidationError, match="finite"):
        exponential_mechanism("ab", [0.0, math.nan], epsilon=1.0, sensitivity=1.0)
    with pytest.raises(ValidationError, match="finite"):
        exponential_mechanism("ab", [0.0, math.inf], epsilon=1.0, sensitivity=1.0)
    with pytest.raises(ValidationError, match="2 options but 1 scores"):
        exponential_mechanism("ab", [0.0], epsilon=1.0, sensitivity=1.0)
    with pytest.raises(ValidationError, match="at least one"):
        exponential_mechanism([], [], epsilon=1.0, sensitivity=1.0)


def test_delta_q_and_utility_bound() -> None:
    assert delta_q([1, 80], DPConfig()) == 1.25  # min(L·80, cap 1) + λ_priv
    assert delta_q([2, 3], DPConfig(utility_cap=None, lipschitz=0.1)) == pytest.approx(0.55)
    assert delta_q([2, 3], DPConfig(utility_cap=None, lambda_priv=0.0)) == 3.0
    with pytest.raises(ValidationError):
        delta_q([], DPConfig())
    assert utility_bound(1, epsilon=1.0, sensitivity=1.0, delta=0.05) == pytest.approx(
        2 * math.log(20))
    with pytest.raises(ValidationError):
        utility_bound(0, epsilon=1.0, sensitivity=1.0, delta=0.05)


# --- configuration -------------------------------------------------------------------------


def test_config_defaults_and_validation() -> None:
    cfg = DPConfig()
    assert not cfg.enabled
    assert (cfg.epsilon, cfg.epsilon_total, cfg.band_relative, cfg.lambda_priv) == (
        1.0, 10.0, 0.05, 0.25)
    for field_name, info in DPConfig.model_fields.items():
        assert info.description, field_name
    with pytest.raises(pydantic.ValidationError):
        DPConfig(epsilon=0.0)
    with pytest.raises(pydantic.ValidationError):
        DPConfig(epsilon=11.0)  # > epsilon_total: could never run
    with pytest.raises(pydantic.ValidationError):
        DPConfig.model_validate({"epsilon_per_decision": 1.0})
    with pytest.raises(pydantic.ValidationError):
        DPConfig.model_validate({"group_privacy": "user"})
    with pytest.raises(pydantic.ValidationError):
        cfg.epsilon = 2.0  # type: ignore[misc]


# --- the marginal band ---------------------------------------------------------------------


def test_band_locates_the_boundary() -> None:
    cfg = DPConfig(band_relative=0.1)
    scores = [0.01, 0.02, 0.095, 0.1, 0.105, 0.2, 0.3]
    band = marginal_band(scores, [5] * 7, need=20, config=cfg)
    assert band.deterministic == (0, 1, 2, 3)
    assert band.threshold == 0.1
    assert band.half_width == pytest.approx(0.01)
    assert band.band == (2, 3, 4)
    assert band.fixed == (0, 1)
    assert band.need_band == 10.0


def test_band_when_candidates_cannot_free_need_or_need_is_zero() -> None:
    short = marginal_band([0.1, 0.2], [3, 3], need=10, config=ON)
    assert short.deterministic == short.fixed == (0, 1) and short.band == ()
    none = marginal_band([0.1, 0.2], [3, 3], need=0, config=ON)
    assert none.deterministic == () and none.band == ()


def test_absolute_floor_groups_ties_at_zero_density() -> None:
    band = marginal_band([0.0, 0.0, 0.0, 1.0], [1, 1, 1, 1], need=1, config=ON)
    assert band.band == (0, 1, 2)


# --- the tie-break -------------------------------------------------------------------------


def covers_brute_force(weights: Sequence[float], need: float) -> list[tuple[int, ...]]:
    out = []
    for mask in range(1, 2 ** len(weights)):
        subset = tuple(i for i in range(len(weights)) if mask >> i & 1)
        total = sum(weights[i] for i in subset)
        if total >= need and all(total - weights[i] < need for i in subset):
            out.append(subset)
    return out


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_tiebreak_samples_eviction_sets_with_the_exponential_mechanism(eps: float) -> None:
    """Pr[E] ∝ exp(ε·Σ_{i∈E}(λ s_i - Û_i) / 2Δq) over the minimal covers of the band."""
    lam = 0.25
    weights = [4, 6, 5, 3]
    util = [0.40, 0.62, 0.50, 0.31]
    sens = [0.9, 0.2, 0.5, 0.0]
    scores = densities(util, sens, weights, lam)
    order = sorted(range(4), key=lambda i: scores[i])
    w, u, s = ([x[i] for i in order] for x in (weights, util, sens))
    d = [scores[i] for i in order]
    cfg = DPConfig(enabled=True, epsilon=eps, band_relative=1.0)
    need = 9
    assert marginal_band(d, w, need, cfg).band == (0, 1, 2, 3)  # the whole set is tied

    covers = covers_brute_force(w, need)
    q = [sum(lam * s[i] - u[i] for i in c) for c in covers]
    expected = em_expected(q, eps, 1.0 + lam)
    rng = random.Random(97 + int(eps))
    counts: Counter[tuple[int, ...]] = Counter()
    for _ in range(DRAWS):
        res = near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=rng)
        counts[tuple(int(x[1:]) for x in res.chosen_ids)] += 1
    assert res.mode == "exact" and res.delta_q == pytest.approx(1.25)
    assert sorted(res.options) == sorted(covers)
    assert set(counts) <= set(covers)
    assert res.probabilities == pytest.approx(
        [expected[covers.index(c)] for c in res.options], rel=1e-9)
    p = chi_square_p([counts[c] for c in covers], expected)
    assert p > 0.001, (eps, counts, expected)


def test_explicit_utilities_match_density_recovery() -> None:
    weights, util, sens = [4, 6, 5], [0.4, 0.62, 0.5], [0.9, 0.2, 0.5]
    d = densities(util, sens, weights)
    order = sorted(range(3), key=lambda i: d[i])
    args = ([d[i] for i in order], [weights[i] for i in order], [sens[i] for i in order])
    cfg = DPConfig(enabled=True, band_relative=1.0)
    a = near_threshold_tiebreak(cands(args[0]), args[1], args[2], 6, cfg,
                                rng=random.Random(1))
    b = near_threshold_tiebreak(cands(args[0]), args[1], args[2], 6, cfg, rng=random.Random(1),
                                utilities=[util[i] for i in order])
    assert a.options == b.options
    assert a.probabilities == pytest.approx(b.probabilities)


def eviction_probability_of_first(s0: float, s1: float, eps: float = 1.0) -> float:
    """Two equal-utility, equal-weight candidates; P(evict the first)."""
    w, u = [10, 10], [0.5, 0.5]
    d = densities(u, [s0, s1], w)
    cfg = DPConfig(enabled=True, epsilon=eps, band_relative=10.0)
    order = sorted(range(2), key=lambda i: d[i])
    res = near_threshold_tiebreak(cands([d[i] for i in order]), w, [[s0, s1][i] for i in order],
                                  10, cfg, rng=random.Random(0))
    first = order.index(0)
    return res.probabilities[res.options.index((first,))]


def test_higher_sensitivity_raises_eviction_probability() -> None:
    grid = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    probs = [eviction_probability_of_first(s, 0.5) for s in grid]
    assert all(b > a for a, b in itertools.pairwise(probs))
    assert probs[2] < 0.5 < probs[3]
    # exactly the logistic of ε·λ(s0 - s1)/(2Δq)
    expected = 1 / (1 + math.exp(-1.0 * 0.25 * (1.0 - 0.0) / (2 * 1.25)))
    assert eviction_probability_of_first(1.0, 0.0) == pytest.approx(expected)
    # and statistically, with draws
    w, u, s = [10, 10], [0.5, 0.5], [1.0, 0.0]
    d = densities(u, s, w)  # the sensitive one has the lower density, so comes first
    cfg = DPConfig(enabled=True, epsilon=8.0, band_relative=10.0)
    rng = random.Random(11)
    hits = sum(near_threshold_tiebreak(cands(d), w, s, 10, cfg, rng=rng).chosen_ids == ("n0",)
               for _ in range(4000))
    p_hi = 1 / (1 + math.exp(-8.0 * 0.25 / 2.5))
    assert abs(hits / 4000 - p_hi) < 4 * math.sqrt(p_hi * (1 - p_hi) / 4000)


def boundary_case() -> tuple[list[float], list[float], list[float], int]:
    """20 candidates, densities sorted, a cluster of six near-ties at the boundary."""
    d = [0.001 * i for i in range(1, 8)]            # 0..6 clearly low
    d += [0.0500, 0.0501, 0.0502, 0.0503, 0.0504, 0.0505]  # 7..12 the tie cluster
    d += [0.2 + 0.01 * i for i in range(7)]         # 13..19 clearly high
    w = [5.0, 7.0, 3.0, 4.0, 6.0, 2.0, 8.0] + [4.0, 5.0, 3.0, 6.0, 2.0, 4.0] + [5.0] * 7
    s = [0.1 * (i % 10) for i in range(20)]
    need = int(sum(w[:7]) + 8)  # the walk stops inside the cluster
    return d, w, s, need


@pytest.mark.parametrize("max_exact", [12, 3])
def test_tiebreak_only_touches_the_band(max_exact: int) -> None:
    d, w, s, need = boundary_case()
    cfg = DPConfig(enabled=True, max_exact_band=max_exact)
    band = marginal_band(d, w, need, cfg)
    assert band.band == (7, 8, 9, 10, 11, 12) and band.fixed == tuple(range(7))
    greedy = set(band.deterministic)
    rng = random.Random(42)
    seen_chosen: set[tuple[str, ...]] = set()
    for _ in range(300):
        res = near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=rng)
        evicted = set(res.evict)
        assert evicted - set(band.band) == greedy - set(band.band)  # outside: unchanged
        assert all(i < 13 for i in evicted)                            # above band: kept
        assert sum(w[i] for i in evicted) >= need
        assert set(res.band_ids) == {f"n{i}" for i in band.band}
        seen_chosen.add(res.chosen_ids)
    assert res.mode == ("exact" if max_exact == 12 else "sequential")
    assert len(seen_chosen) > 1  # it does randomise
    if max_exact == 3:
        assert res.epsilon_spent == res.draws * cfg.epsilon
        assert res.probability == pytest.approx(math.prod(res.probabilities))


def test_sequential_draws_stop_at_the_epsilon_cap() -> None:
    d, w, s, need = boundary_case()
    cfg = DPConfig(enabled=True, max_exact_band=2, epsilon=1.0)
    res = near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=random.Random(0),
                                  max_epsilon=1.0)
    assert res.draws == 1 and res.epsilon_spent == 1.0
    assert sum(w[i] for i in res.evict) >= need


def test_disabled_or_untied_is_the_greedy_order_and_free() -> None:
    d, w, s, need = boundary_case()
    greedy = marginal_band(d, w, need, ON).deterministic
    off = near_threshold_tiebreak(cands(d), w, s, need, DPConfig())
    assert off.evict == greedy and off.epsilon_spent == 0.0 and off.mode == "deterministic"
    assert off.reason == "DP tie-break disabled"
    spread = [0.01 * 2**i for i in range(8)]
    alone = near_threshold_tiebreak(cands(spread), [5] * 8, [0.5] * 8, 12, ON)
    assert alone.evict == (0, 1, 2) and alone.epsilon_spent == 0.0
    assert alone.reason == "no near-tie at the boundary"
    one_set = near_threshold_tiebreak(cands([0.1, 0.1]), [10, 10], [0, 0], 20, ON)
    assert one_set.evict == (0, 1) and one_set.epsilon_spent == 0.0
    assert one_set.reason == "a single feasible set in the band"
    short = near_threshold_tiebreak(cands([0.1, 0.1]), [1, 1], [0, 0], 5, ON)
    assert short.evict == (0, 1) and short.band_ids == ()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(-0.05, 0.1), st.integers(1, 40), st.floats(0, 1)),
                min_size=1, max_size=14),
       st.integers(0, 300), st.integers(0, 2**32 - 1), st.sampled_from([12, 2]))
def test_tiebreak_always_frees_need_and_keeps_outside_order(
        rows: list[tuple[float, int, float]], need: int, seed: int, max_exact: int) -> None:
    rows.sort(key=lambda r: r[0])
    d, w, s = ([r[k] for r in rows] for k in range(3))
    cfg = DPConfig(enabled=True, band_relative=0.5, max_exact_band=max_exact)
    res = near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=random.Random(seed))
    band = marginal_band(d, w, need, cfg)
    freed = sum(w[i] for i in res.evict)
    assert freed >= min(need, sum(w))
    assert set(res.evict) - set(band.band) == set(band.deterministic) - set(band.band)
    if res.mode == "exact":
        assert res.options and math.fsum(res.probabilities) == pytest.approx(1.0)
        chosen = [int(x[1:]) for x in res.chosen_ids]
        assert all(sum(w[i] for i in chosen) - w[i] < band.need_band for i in chosen)
        assert res.epsilon_spent == cfg.epsilon


def test_tiebreak_validation_errors() -> None:
    good = (cands([0.1, 0.2]), [5, 5], [0.1, 0.2])
    with pytest.raises(ValidationError, match="deterministic order"):
        near_threshold_tiebreak(cands([0.2, 0.1]), [5, 5], [0, 0], 5, ON)
    with pytest.raises(ValidationError, match="density score"):
        near_threshold_tiebreak([Candidate("a", None), Candidate("b", 0.1)], [5, 5], [0, 0],
                                5, ON)
    with pytest.raises(ValidationError, match="density score"):
        near_threshold_tiebreak(cands([0.1, math.nan]), [5, 5], [0, 0], 5, ON)
    with pytest.raises(ValidationError, match="same length"):
        near_threshold_tiebreak(good[0], [5], good[2], 5, ON)
    with pytest.raises(ValidationError, match="same length"):
        near_threshold_tiebreak(*good, 5, ON, subjects=["a"])
    with pytest.raises(ValidationError, match="weight"):
        near_threshold_tiebreak(good[0], [5, 0], good[2], 5, ON)
    with pytest.raises(ValidationError, match="sensitivity"):
        near_threshold_tiebreak(good[0], good[1], [0.1, 1.5], 5, ON)
    with pytest.raises(ValidationError, match="utility"):
        near_threshold_tiebreak(*good, 5, ON, utilities=[0.1, math.inf])
    with pytest.raises(ValidationError, match="need"):
        near_threshold_tiebreak(*good, math.nan, ON)
    with pytest.raises(ValidationError, match="subject"):
        group_sizes(["*"], "subject")


# --- the accountant -----------------------------------------------------------------------


def test_accountant_basic_composition_and_exhaustion() -> None:
    acc = PrivacyAccountant(epsilon_total=3.0, epsilon_step=1.0)
    assert acc.remaining("u1") == 3.0 and not acc.exhausted("u1")
    for _ in range(3):
        acc.spend("u1", 0.7)
    assert acc.spent("u1") == pytest.approx(2.1)
    assert acc.exhausted("u1")  # 0.9 left cannot absorb a 1.0-ε decision
    acc2 = PrivacyAccountant(epsilon_total=3.0, epsilon_step=1.0)
    for _ in range(3):
        acc2.spend("u1", 1.0)
    assert acc2.exhausted("u1") and acc2.remaining("u1") == 0.0
    assert acc2.remaining("u2") == 3.0  # per namespace (user or conversation)
    with pytest.raises(ValidationError, match="exceeded"):
        acc2.spend("u1", 0.1)
    assert acc2.spent("u1") == 3.0


def test_accountant_exhaustion_is_relative_to_the_step() -> None:
    acc = PrivacyAccountant(epsilon_total=3.0, epsilon_step=1.0)
    acc.spend("u", 2.1)
    assert acc.exhausted("u")  # 0.9 left cannot absorb a 1.0 decision
    acc.spend("u", 0.9)  # but a smaller spend still fits
    assert acc.remaining("u") == pytest.approx(0.0)


def test_accountant_group_privacy_and_atomic_refusal() -> None:
    acc = PrivacyAccountant(epsilon_total=4.0, epsilon_step=1.0)
    charges = acc.spend("ns", 1.0, {ANYONE: 1, "alice": 3})
    assert charges == {ANYONE: 1.0, "alice": 3.0}
    assert acc.headroom("ns", {ANYONE: 1, "alice": 3}) == pytest.approx(1 / 3)
    with pytest.raises(ValidationError, match="alice"):
        acc.spend("ns", 1.0, {ANYONE: 1, "alice": 2})
    assert acc.totals("ns") == {ANYONE: 1.0, "alice": 3.0}  # nothing charged on refusal
    with pytest.raises(ValidationError, match="groups"):
        acc.spend("ns", 1.0, {"bob": 0})
    with pytest.raises(ValidationError, match="epsilon"):
        acc.spend("ns", 0.0)
    with pytest.raises(ValidationError):
        PrivacyAccountant(epsilon_total=0.0)


def test_accountant_state_round_trips_through_json() -> None:
    acc = PrivacyAccountant.from_config(DPConfig(epsilon=0.5, epsilon_total=5.0))
    acc.spend("conv-1", 0.5)
    acc.spend("conv-1", 0.5, {"alice": 2, ANYONE: 1})
    acc.spend("conv-2", 0.5, {"bob": 1})
    state = json.loads(json.dumps(acc.state()))
    back = PrivacyAccountant.from_state(state)
    assert back.state() == acc.state()
    assert back.spent("conv-1") == 1.0 and back.spent("conv-1", "alice") == 1.0
    assert (back.epsilon_total, back.epsilon_step) == (5.0, 0.5)
    assert state["ledger"][0] == {"namespace": "conv-1", "subject": ANYONE, "spent": 1.0,
                                  "events": 2}


@pytest.mark.parametrize("mutate", [
    lambda st_: st_.update(version=99),
    lambda st_: st_.pop("ledger"),
    lambda st_: st_["ledger"][0].update(spent=-1.0),
    lambda st_: st_["ledger"][0].update(spent=1e9),
    lambda st_: st_["ledger"].append(dict(st_["ledger"][0])),
    lambda st_: st_["ledger"][0].update(events="many"),
    lambda st_: st_.update(epsilon_total=0.0),
])
def test_accountant_from_state_rejects_malformed(mutate: object) -> None:
    acc = PrivacyAccountant()
    acc.spend("ns", 1.0)
    state = json.loads(json.dumps(acc.state()))
    mutate(state)  # type: ignore[operator]
    with pytest.raises(ValidationError):
        PrivacyAccountant.from_state(state)


def test_tiebreak_charges_the_accountant_and_pauses_when_exhausted() -> None:
    d, w, s, need = boundary_case()
    cfg = DPConfig(enabled=True, epsilon=1.0, epsilon_total=3.0)
    acc = PrivacyAccountant.from_config(cfg)
    rng = random.Random(8)
    results = [near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=rng, accountant=acc,
                                       namespace="u") for _ in range(5)]
    assert [r.mode for r in results] == ["exact"] * 3 + ["deterministic"] * 2
    assert [r.paused for r in results] == [False] * 3 + [True] * 2
    assert results[-1].evict == marginal_band(d, w, need, cfg).deterministic
    assert results[0].charges == {ANYONE: 1.0} and results[-1].charges == {}
    assert acc.spent("u") == 3.0 and acc.exhausted("u")
    record = results[-1].audit()
    json.dumps(record)
    assert record["paused"] and "paused" in record["reason"]


def test_tiebreak_group_privacy_charges_subjects() -> None:
    d, w, s, need = boundary_case()
    subjects: list[str | None] = [None] * 20
    subjects[7] = subjects[9] = subjects[12] = "alice"
    subjects[8] = "bob"
    cfg = DPConfig(enabled=True, epsilon_total=10.0)
    acc = PrivacyAccountant.from_config(cfg)
    res = near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=random.Random(1),
                                  accountant=acc, namespace="u", subjects=subjects)
    assert res.charges == {ANYONE: 1.0, "alice": 3.0, "bob": 1.0}
    assert acc.totals("u") == {ANYONE: 1.0, "alice": 3.0, "bob": 1.0}
    # alice has room for 7 more memory-decisions: 3 per decision → 2 decisions, then paused
    modes = [near_threshold_tiebreak(cands(d), w, s, need, cfg, rng=random.Random(2),
                                     accountant=acc, namespace="u", subjects=subjects).paused
             for _ in range(3)]
    assert modes == [False, False, True]
    assert acc.spent("u", "alice") == 9.0
    event = DPConfig(enabled=True, group_privacy="event")
    acc_e = PrivacyAccountant.from_config(event)
    res_e = near_threshold_tiebreak(cands(d), w, s, need, event, rng=random.Random(1),
                                    accountant=acc_e, namespace="u", subjects=subjects)
    assert res_e.charges == {ANYONE: 1.0}


def test_audit_record_is_json_and_complete() -> None:
    d, w, s, need = boundary_case()
    res = near_threshold_tiebreak(cands(d), w, s, need, ON, rng=random.Random(4))
    record = json.loads(json.dumps(res.audit()))
    assert record["mode"] == "exact" and record["epsilon_spent"] == 1.0
    assert record["band"] == [f"n{i}" for i in range(7, 13)]
    assert record["chosen_probability"] == res.probability > 0
    assert record["delta_q"] == 1.25 and record["n_options"] == len(res.options)
    assert record["utility_gap"] == pytest.approx(
        utility_bound(len(res.options), epsilon=1.0, sensitivity=1.25, delta=0.05))
