"""Seed 000 §6's published figures, and how its budgets translate to our simulated agents.

**Budgets as shares of what agents store.** The paper sweeps absolute budgets
{2k, 4k, 8k, 16k, 32k} tokens but never states how many tokens its agents store. Its text
fixes where they bind:

* every budget binds, the largest included — "larger budgets primarily reduce the frequency
  of eviction triggers rather than changing their nature" (§6.9.2, Fig. 6), and 16k–32k
  "minimize triggers during pressure windows" (§6.9.2), so triggers still fire at 32k;
* the policies differ at every budget, in the same order, with no Budget × Policy interaction
  (§6.7.1, Fig. 4). Were 32k reached only at the end of a run, every policy would tie there
  and the interaction would show: the top budget binds over a large part of each run;
* 2k is the low end where "eviction thrash becomes more likely" (§6.9.2), so even the
  smallest budget still holds a working set.

So an agent's peak store S is above 32k by a margin. We take the smallest value of the
paper's doubling ladder that keeps the top rung binding over a large part of a run:
S = 64k (:data:`PAPER_STORED_TOKENS`), so the five budgets are 1/32, 1/16, 1/8, 1/4 and 1/2 of
what an agent stores. A FiFA world's agents store far less (a few thousand tokens), so in the
``relative`` budget mode each budget level ``b`` becomes ``b / PAPER_STORED_TOKENS`` × the
mean over the cast of the agents' peak store in that world (:func:`level_tokens`). Every
agent of a run gets the same budget, as in §6.4.1.

**The paper's own statistics.** Its Table 3 and Table 4 are tied by exact identities that
reveal the tests behind them (checked by :func:`implied_anova_df2` and
:func:`implied_pairs`): every η² equals F·4 / (F·4 + 70), the η² of a one-way ANOVA over the
five policies with 75 observations (15 per policy), not a Budget × Policy mixed model over
300 runs; and every Table 4 d equals t / √7 (7 pairs, or 14 per group), while its
"Holm-adjusted" p-values are the unadjusted two-sided p of t with 27–29 degrees of
freedom — no single design (10 paired seeds, 50 seed × scenario units, 300 runs) gives both.

Example:
    >>> level_tokens(2000, 4800.0, heaviest=70)
    150
    >>> round(implied_anova_df2(9.45, 0.351), 1)
    69.9
    >>> round(implied_pairs(3.73, 1.41), 1)
    7.0
"""

from __future__ import annotations

from mars_core.errors import ValidationError

__all__ = ["PAPER_STORED_TOKENS", "PAPER_TABLE2", "PAPER_TABLE3", "PAPER_TABLE4",
           "PAPER_TO_OURS", "implied_anova_df2", "implied_pairs", "level_tokens"]

PAPER_STORED_TOKENS = 64_000
"""Tokens a paper agent stores at its peak, as read from §6.7 and §6.9.2 (module docstring):
the 2k–32k budgets are 1/32–1/2 of it."""

PAPER_TO_OURS: dict[str, str] = {"Random Drop": "random", "Priority Decay": "priority",
                                 "FIFO": "fifo", "LRU": "lru", "Hybrid": "hybrid"}
"""The policies of the paper's Table 2 and their registry names here."""

PAPER_TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "random": {"composite": (0.635, 0.024), "nc": (0.667, 0.074), "gcr": (0.078, 0.010),
               "sra": (1.000, 0.000), "pp": (0.722, 0.056), "ce": (0.935, 0.007)},
    "priority": {"composite": (0.601, 0.021), "nc": (0.604, 0.062), "gcr": (0.071, 0.008),
                 "sra": (0.990, 0.016), "pp": (0.737, 0.052), "ce": (0.825, 0.005)},
    "fifo": {"composite": (0.602, 0.012), "nc": (0.529, 0.021), "gcr": (0.061, 0.002),
             "sra": (1.000, 0.000), "pp": (0.752, 0.062), "ce": (0.941, 0.012)},
    "lru": {"composite": (0.590, 0.009), "nc": (0.501, 0.023), "gcr": (0.058, 0.003),
            "sra": (1.000, 0.000), "pp": (0.780, 0.044), "ce": (0.887, 0.020)},
    "hybrid": {"composite": (0.589, 0.009), "nc": (0.590, 0.013), "gcr": (0.069, 0.002),
               "sra": (0.999, 0.001), "pp": (0.768, 0.052), "ce": (0.730, 0.038)},
}
"""Table 2: mean and 95% half-width per policy and metric (no Reflection row)."""

PAPER_TABLE3: dict[str, dict[str, float | bool]] = {
    "nc": {"F": 9.45, "p": 0.0001, "significant": True, "eta2": 0.351},
    "gcr": {"F": 8.92, "p": 0.0001, "significant": True, "eta2": 0.338},
    "sra": {"F": 1.42, "p": 0.238, "significant": False, "eta2": 0.075},
    "pp": {"F": 0.87, "p": 0.485, "significant": False, "eta2": 0.047},
    "ce": {"F": 86.43, "p": 0.0001, "significant": True, "eta2": 0.832},
    "composite": {"F": 5.93, "p": 0.001, "significant": True, "eta2": 0.253},
}
"""Table 3: the Policy effect per metric (``p`` is an upper bound where the paper says <)."""

PAPER_TABLE4: tuple[tuple[str, str, str, float, float, float], ...] = (
    ("random", "hybrid", "composite", 3.73, 0.001, 1.41),
    ("fifo", "random", "composite", -2.61, 0.014, -0.99),
    ("random", "hybrid", "nc", 2.22, 0.035, 0.84),
    ("fifo", "priority", "ce", 19.42, 0.0001, 7.34),
    ("lru", "random", "ce", -4.76, 0.0001, -1.80),
    ("priority", "hybrid", "gcr", 0.41, 0.687, 0.15),
)
"""Table 4: (first, second, metric, t, p_adj, d); positive favours the first policy."""


def level_tokens(level: int, mean_stored: float, *, heaviest: int,
                 paper_stored: int = PAPER_STORED_TOKENS) -> int:
    """The budget, in tokens, that is the same share of ``mean_stored`` as ``level`` is of
    the paper's agents' store; never below the heaviest memory (a store refuses a memory
    heavier than its whole budget).

    Raises:
        ValidationError: a non-positive level, store or reference.
    """
    if level <= 0 or mean_stored <= 0 or paper_stored <= 0:
        raise ValidationError("budget level, stored tokens and the paper's store must be > 0")
    return max(int(heaviest), round(level / paper_stored * mean_stored))


def implied_anova_df2(f: float, eta2: float, df1: int = 4) -> float:
    """The error degrees of freedom that make ``eta2`` the η² of a one-way ANOVA with this F:
    η² = F·df1 / (F·df1 + df2)."""
    return f * df1 * (1 - eta2) / eta2


def implied_pairs(t: float, d: float) -> float:
    """n such that d = t / √n: n pairs for a paired d_z, or 2n observations per group for a
    two-sample d = t·√(2/m) (n = 7 reads as 7 pairs or 14 per group)."""
    return (t / d) ** 2
