"""FiFA's statistics (scipy/statsmodels) against hand-computed values, the analyses over
cells, and the identities behind the paper's Tables 3 and 4.

Every expected number here is computed by hand in the test (or is a textbook value), not
read back from the code under test.
"""

from __future__ import annotations

import math
from itertools import product
from typing import Any

import numpy as np
import pytest

pytest.importorskip("scipy")
pytest.importorskip("statsmodels")

from mars_core.bench.fifa.analysis import mcnemar_pairs, pairwise, versus_paper
from mars_core.bench.fifa.paper import (
    PAPER_TABLE3,
    PAPER_TABLE4,
    implied_anova_df2,
    implied_pairs,
    level_tokens,
)
from mars_core.bench.fifa.stats import (
    adjust,
    bootstrap_ci,
    cliffs_delta,
    effect_size,
    kendall_tau,
    mcnemar_paired,
    mixed_anova,
    wilcoxon,
)
from mars_core.errors import ValidationError


def _delta_by_definition(x: list[float], y: list[float]) -> float:
    """Cliff's δ = (#{x > y} − #{x < y}) / (n·m), over every pair."""
    gt = sum(1 for a, b in product(x, y) if a > b)
    lt = sum(1 for a, b in product(x, y) if a < b)
    return (gt - lt) / (len(x) * len(y))


def test_cliffs_delta_hand_computed_cases() -> None:
    assert cliffs_delta([3.0, 4.0], [1.0, 2.0]).delta == 1.0
    assert cliffs_delta([1.0, 2.0], [3.0, 4.0]).delta == -1.0
    assert cliffs_delta([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).delta == 0.0
    # (1,2) <, (1,3) <, (2,2) =, (2,3) <  ->  (0 − 3) / 4
    assert cliffs_delta([1.0, 2.0], [2.0, 3.0]).delta == pytest.approx(-0.75)
    rng = np.random.default_rng(11)
    x, y = list(rng.integers(0, 6, 17).astype(float)), list(rng.integers(1, 7, 13).astype(float))
    res = cliffs_delta(x, y)
    assert res.delta == pytest.approx(_delta_by_definition(x, y))  # ties included
    bands = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"), (math.inf, "large"))
    assert res.label == next(lab for b, lab in bands if abs(res.delta) < b)
    with pytest.raises(ValidationError):
        cliffs_delta([], [1.0])


def test_mcnemar_exact_p_on_the_discordant_pairs() -> None:
    # 0 vs 5 discordant: p = 2 · 0.5^5; 1 vs 5: p = 2 · (1 + 6) / 64
    a = [False] * 5 + [True] * 3 + [False] * 2
    b = [True] * 5 + [True] * 3 + [False] * 2
    res = mcnemar_paired(a, b)
    assert res.table == ((3, 0), (5, 2))
    assert res.p == pytest.approx(2 * 0.5 ** 5)
    assert res.risk_difference == pytest.approx(-0.5) and res.odds_ratio == 0.0
    res = mcnemar_paired([*a, True], [*b, False])
    assert res.table == ((3, 1), (5, 2)) and res.p == pytest.approx(2 * 7 / 64)
    assert res.odds_ratio == pytest.approx(0.2)
    same = mcnemar_paired([True, False], [True, False])
    assert same.p == 1.0 and same.odds_ratio is None
    with pytest.raises(ValidationError):
        mcnemar_paired([True], [True, False])


def test_holm_and_benjamini_hochberg_hand_computed() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005·4, 0.01·3, 0.03·2, max(0.04·1, 0.06)
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.04·4/4, min(0.03·4/3, 0.04), min(0.01·4/2, …), min(0.005·4/1, 0.02)
    assert adjust(p, "fdr_bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust([], "holm") == []
    with pytest.raises(ValidationError):
        adjust(p, "bonferroni")  # type: ignore[arg-type]


def test_holms_full_collection_leaves_out_the_objects_alive_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """statsmodels' Holm adjustment ends with ``gc.collect()``, which walks every object of
    the process (1.1 s a call beside 3 million): the objects alive before the call are
    frozen while it runs, and unfrozen after, whatever it raised."""
    import gc

    from statsmodels.stats import multitest

    frozen_at_collect: list[int] = []

    def collect(*args: Any) -> int:
        frozen_at_collect.append(gc.get_freeze_count())
        return 0

    monkeypatch.setattr(gc, "collect", collect)  # statsmodels imports gc in the call
    assert gc.get_freeze_count() == 0
    assert adjust([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert len(frozen_at_collect) == 1 and frozen_at_collect[0] > 1000
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(multitest, "multipletests", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        adjust([0.01], "holm")
    assert gc.get_freeze_count() == 0


def test_holms_adjustment_leaves_objects_the_process_froze_itself_frozen() -> None:
    """A process that froze its objects (a server forking after loading) keeps them
    frozen: the adjustment unfreezes nothing it did not freeze."""
    import gc

    def collected(obj: object) -> bool:  # in one of the collector's generations: not frozen
        return any(o is obj for o in gc.get_objects())

    mine = [object()]  # a container the process freezes (the count can move meanwhile:
    gc.freeze()  # another thread of the worker frees frozen objects)
    try:
        assert gc.get_freeze_count() > 0 and not collected(mine)
        assert adjust([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
        assert gc.get_freeze_count() > 0 and not collected(mine)
    finally:
        gc.unfreeze()
    assert collected(mine)  # the check itself sees an unfrozen object


def test_wilcoxon_exact_and_permutation_p_values() -> None:
    six = wilcoxon([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.0] * 6)
    assert six.p == pytest.approx(2 / 64) and six.method == "exact" and six.w_plus == 21
    tied = wilcoxon([1.0, 1.0, 2.0, 2.0], [0.0] * 4)  # all 16 sign patterns: 2 as extreme
    assert tied.p == pytest.approx(2 / 16) and tied.method == "permutation"
    assert wilcoxon([1.0, 2.0], [1.0, 2.0]).method == "no-difference"
    with pytest.raises(ValidationError):
        wilcoxon([1.0], [1.0, 2.0])


def test_paired_t_and_hedges_d_hand_computed() -> None:
    # differences 0.5, 1, 0.5, 2: mean 1, sd √0.5, t = 1 / (√0.5 / 2), J = 1 − 3/11
    e = effect_size([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 2.0])
    assert e.t == pytest.approx(2 / math.sqrt(0.5))
    assert e.d == pytest.approx(1 / math.sqrt(0.5) * (1 - 3 / 11))
    from scipy import stats

    assert e.p == pytest.approx(2 * stats.t.sf(2 / math.sqrt(0.5), 3))
    assert effect_size([1.0, 1.0], [0.0, 0.0]).d is None


def test_bootstrap_and_kendall_tau() -> None:
    ci = bootstrap_ci([0.5, 0.6, 0.7, 0.8], seed=1)
    assert ci.mean == pytest.approx(0.65) and 0.5 <= ci.low <= 0.65 <= ci.high <= 0.8
    assert bootstrap_ci([0.5, 0.6, 0.7, 0.8], seed=1) == ci  # seeded
    flat = bootstrap_ci([0.4, 0.4, 0.4])
    assert flat.low == flat.mean == flat.high == pytest.approx(0.4) and flat.half_width == 0
    assert kendall_tau([1, 2, 3], [3, 2, 1])[0] == pytest.approx(-1.0)
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3])[0] == pytest.approx(4 / 6)  # 5 − 1 of 6
    with pytest.raises(ValidationError):
        bootstrap_ci([])


def _balanced(policy_shift: float, seed_sd: float, noise: float) -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    seed_eff = rng.normal(0, seed_sd, 6)
    scen_eff = {"a": 0.05, "b": -0.05, "c": 0.0}
    return [{"policy": p, "budget": b, "scenario": s, "seed": k,
             "y": 0.5 + policy_shift * i + seed_eff[k] + scen_eff[s] + rng.normal(0, noise)}
            for i, p in enumerate(("fifo", "lru", "random")) for b in (2000, 8000)
            for s in scen_eff for k in range(6) for _ in range(2)]


def test_mixed_anova_recovers_a_policy_effect_and_its_eta_squared() -> None:
    rows = _balanced(0.05, 0.03, 0.05)
    fit = mixed_anova(rows, "y")
    assert fit is not None and fit.rows == len(rows) and fit.converged
    policy, budget = fit.term("policy"), fit.term("budget")
    assert policy is not None and budget is not None and fit.term("policy:budget") is not None
    assert policy.df == 2 and budget.df == 1 and policy.f == pytest.approx(policy.chi2 / 2)
    assert policy.p < 1e-6 < budget.p
    # η² by hand: balanced, so the policy sum of squares is n_p · Σ (mean_p − mean)²
    y = np.array([r["y"] for r in rows])
    means = {p: np.mean([r["y"] for r in rows if r["policy"] == p]) for p in ("fifo", "lru",
                                                                              "random")}
    ss_policy = sum(len(rows) / 3 * (m - y.mean()) ** 2 for m in means.values())
    assert policy.eta2 == pytest.approx(ss_policy / ((y - y.mean()) ** 2).sum())
    assert policy.eta2 <= policy.partial_eta2 <= 1
    assert set(fit.variance) == {"scenario", "seed", "residual"}


def test_mixed_anova_without_anything_to_test_is_none() -> None:
    rows = _balanced(0.0, 0.0, 0.05)
    assert mixed_anova([r for r in rows if r["policy"] == "fifo"], "y") is None  # one policy
    assert mixed_anova([r for r in rows if r["seed"] == 0 and r["scenario"] == "a"],
                       "y") is None  # no random factor with two levels
    assert mixed_anova([{**r, "y": 1.0} for r in rows], "y") is None  # a constant metric
    assert mixed_anova([], "y") is None


def _cells(seeds: int = 4) -> list[dict[str, Any]]:
    out = []
    for s in range(seeds):
        for p, shift, goals, spread in (("lru", 0.1, "110", 0.02 * (s % 3)),
                                        ("random", 0.0, "010", 0.0),
                                        ("hybrid", 0.05, "100", 0.01 * s)):
            out.append({"seed": s, "scenario": "x", "policy": p, "budget": 2000,
                        "metrics": {"composite": 0.5 + shift + spread,
                                    "nc": 0.5 + 0.01 * s},
                        "goals": goals})
    return out


def test_pairwise_adjusts_within_each_family_and_mcnemar_pairs_goals() -> None:
    rows = pairwise(_cells(), ("lru", "random", "hybrid"), metrics=("composite", "nc"))
    comp = [r for r in rows if r["metric"] == "composite"]
    tested = [r for r in comp if r["p_t"] is not None]
    assert [r["p_holm"] for r in tested] == pytest.approx(
        adjust([r["p_t"] for r in tested], "holm"), abs=1e-8)
    lru_random = next(r for r in comp if (r["a"], r["b"]) == ("lru", "random"))
    assert lru_random["delta"] == 1.0 and lru_random["d"] > 0 and lru_random["t"] > 0
    assert all(r["p_t"] is None and r["p_holm"] is None for r in rows if r["metric"] == "nc")
    mc = {(r["a"], r["b"]): r for r in mcnemar_pairs(_cells(), ("lru", "random", "hybrid"))}
    # per world: lru 110 vs random 010 -> only lru completes goal 0; 4 worlds
    assert mc[("lru", "random")]["table"] == [[4, 4], [0, 4]]
    assert mc[("lru", "random")]["p"] == pytest.approx(2 * 0.5 ** 4)
    broken = [*_cells(), {"seed": 0, "scenario": "x", "policy": "lru", "budget": 4000,
                          "metrics": {}, "goals": "1"},
              {"seed": 0, "scenario": "x", "policy": "random", "budget": 4000,
               "metrics": {}, "goals": "10"}]
    with pytest.raises(ValidationError):
        mcnemar_pairs(broken, ("lru", "random"))


def test_versus_paper_flips_our_pair_to_the_papers_order() -> None:
    cells = _cells()
    pairs = pairwise(cells, ("lru", "hybrid", "random"), metrics=("composite",))
    summary = {"overall": {p: {m: {"mean": 0.5, "half": 0.01}
                               for m in ("composite", "nc", "gcr", "sra", "pp", "ce")}
                           for p in ("lru", "hybrid", "random")}}
    summary["overall"]["random"]["composite"]["mean"] = 0.4
    vs = versus_paper(summary, pairs, {})
    row = next(r for r in vs["table4"] if (r["a"], r["b"], r["metric"]) ==
               ("random", "hybrid", "composite"))
    ours = next(r for r in pairs if (r["a"], r["b"]) == ("hybrid", "random"))
    assert row["ours"]["d"] == -ours["d"] and row["ours"]["mean_diff"] == -ours["mean_diff"]
    assert row["same_sign"] is False  # the paper's Random beats Hybrid; here it does not
    assert vs["table2"]["random"]["rank"] == 3 and vs["table2"]["random"]["paper_rank"] == 1


def test_the_papers_table3_is_a_one_way_anova_with_df_4_and_70() -> None:
    """η² = F·4 / (F·4 + df2) gives df2 ≈ 70 on every row (75 observations, 5 policies)."""
    for row in PAPER_TABLE3.values():
        f, eta2 = float(row["F"]), float(row["eta2"])
        lo = implied_anova_df2(f, eta2 + 0.0005)  # η² is rounded to 3 decimals
        hi = implied_anova_df2(f, eta2 - 0.0005)
        assert lo <= 70 <= hi, row
    from scipy import stats

    assert stats.f.sf(1.42, 4, 70) == pytest.approx(0.238, abs=0.003)  # its SRA row's p
    assert stats.f.sf(0.87, 4, 70) == pytest.approx(0.485, abs=0.002)  # its PP row's p


def test_the_papers_table4_ds_are_t_over_root_7_and_its_p_values_unadjusted() -> None:
    """d = t/√7 on every row within the rounding of t and d (2 decimals); the published
    p-values are the unadjusted two-sided p of t with 28 degrees of freedom."""
    from scipy import stats

    for _, _, _, t, p, d in PAPER_TABLE4:
        lo = implied_pairs(abs(t) - 0.005, abs(d) + 0.005)
        hi = implied_pairs(abs(t) + 0.005, abs(d) - 0.005)
        assert lo <= 7 <= hi, (t, d)
        if p > 0.01:  # the rows the paper gives a value for, not a bound
            ps = [2 * stats.t.sf(abs(t) + e, 28) for e in (0.005, -0.005)]
            assert ps[0] - 0.0005 <= p <= ps[1] + 0.0005, (t, p)


def test_level_tokens_is_the_papers_share_of_the_store() -> None:
    assert level_tokens(2000, 4800.0, heaviest=70) == 150  # 1/32 of 4800
    assert level_tokens(32000, 4800.0, heaviest=70) == 2400  # 1/2
    assert level_tokens(2000, 1000.0, heaviest=70) == 70  # never below the heaviest memory
    assert level_tokens(8000, 4000.0, heaviest=1, paper_stored=16000) == 2000
    with pytest.raises(ValidationError):
        level_tokens(0, 4800.0, heaviest=70)
