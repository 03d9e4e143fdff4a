"""FiFA metrics (seed 000 eq. 8–14) from verdicts and audit counters.

* **NC** (eq. 8): mean coherence over social, arc and referent answers.
* **GCR** (eq. 9): Σ w_g·1{completed} / Σ w_g, a goal completed when every prerequisite
  was in the answer at its deadline; w_g = number of prerequisites.
* **SRA** (eq. 10): correct social references / social references made (conditional on
  attempts, as in the paper: no reference, no error → 1.0); **SRA_opp**: social probes
  answered with the correct value / social probes (opportunity-normalised, §6.5.1).
* **LeakageRate** (eq. 11): sensitive tokens in answers / answers;
  **PP** (eq. 12): 1 − violations / privacy opportunities.
* **CE** (eq. 13): Perf / Cost, Perf = (0.25·NC + 0.25·GCR + 0.20·SRA) / 0.70 (eq. 1 with
  the composite's weights). Cost "aggregates token usage, latency and external API calls
  with fixed coefficients chosen a priori" (§6.2.3); the paper's *token cost* is the weight
  w_i of what the store holds (§3: "w_i the computational weight (e.g., token cost)"), and
  its cost term "rewards policies that minimize memory operations" (§6.5.1). So
  Cost = 1 + 0.5·(token_cost / 8000) + 0.5·(extra memory operations per memory written),
  where token_cost = tokens the store holds at an answer + tokens of the rendered answer
  (per turn), 8000 is the paper's recommended baseline budget (§6.7) and the memory
  operations (inserts, evictions, summaries, erasures, …) are counted from the audit —
  the deterministic stand-in for latency and summarisation calls. Coefficients are fixed
  a priori, never tuned on FiFA. Wall time is never inside a score.
* **Composite** (eq. 14) = 0.25 NC + 0.25 GCR + 0.20 SRA + 0.15 PP + 0.15 CE, and a
  **task-weighted composite** = 0.35 NC + 0.35 GCR + 0.15 SRA_opp + 0.10 PP + 0.05 CE.

A component with no opportunity in a run (no goal reached its deadline, say) is left out
and the weights of the others are renormalised.

Example:
    >>> m = score([], [])
    >>> m["composite"], m["gcr"]
    (None, None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mars_core.bench.fifa.simulator import AgentStats, mutation_ops
from mars_core.bench.fifa.validators import Verdict

__all__ = ["COMPOSITE", "METRICS", "TASK_COMPOSITE", "TOKEN_REF", "composite", "score",
           "score_agents"]

COMPOSITE: dict[str, float] = {"nc": 0.25, "gcr": 0.25, "sra": 0.20, "pp": 0.15, "ce": 0.15}
"""Eq. 14 weights."""

TASK_COMPOSITE: dict[str, float] = {"nc": 0.35, "gcr": 0.35, "sra_opp": 0.15, "pp": 0.10,
                                    "ce": 0.05}
"""The task-weighted composite (§6.5.1's reweighting toward task progress)."""

METRICS: tuple[str, ...] = ("composite", "composite_task", "nc", "gcr", "sra", "sra_opp", "pp",
                            "leakage", "ce", "token_cost", "held_tokens", "answer_tokens",
                            "ops_per_write")
"""Every metric reported per cell, in report order."""

_PERF = {"nc": 0.25, "gcr": 0.25, "sra": 0.20}
TOKEN_REF = 8000
"""Tokens per turn that cost one unit (the paper's recommended baseline budget, §6.7). It
stays absolute in the ``relative`` budget mode: the coefficients were fixed a priori, and the
paper finds CE independent of budget (§6.7.1), which a reference scaled with the budget
levels would contradict by construction."""


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def composite(values: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """Weighted mean of the available components (weights renormalised), or None."""
    got = {k: w for k, w in weights.items() if values.get(k) is not None}
    total = sum(got.values())
    if not total:
        return None
    return sum(w * float(values[k] or 0.0) for k, w in got.items()) / total


def score(verdicts: Sequence[Verdict], agents: Sequence[AgentStats]) -> dict[str, float | None]:
    """Every FiFA metric of one run (all cast agents pooled)."""
    m: dict[str, float | None] = {}
    m["nc"] = _mean([v.coherence for v in verdicts if v.coherence is not None])
    goals = [v for v in verdicts if v.completed is not None]
    m["gcr"] = _gcr(goals)
    social = [v for v in verdicts if v.kind == "social"]
    refs = sum(v.refs for v in social)
    m["sra"] = sum(v.refs_ok for v in social) / refs if refs else (1.0 if social else None)
    m["sra_opp"] = _mean([1.0 if v.refs_ok else 0.0 for v in social])
    opps = [v.violation for v in verdicts if v.violation is not None]
    m["pp"] = 1.0 - sum(opps) / len(opps) if opps else None
    m["leakage"] = _mean([float(v.leaked_tokens) for v in verdicts])
    m.update(_tokens(agents))
    written = sum(a.written for a in agents)
    m["ops_per_write"] = sum(mutation_ops(a) for a in agents) / written if written else None
    m["ce"] = _ce(m)
    m["composite"] = composite(m, COMPOSITE)
    m["composite_task"] = composite(m, TASK_COMPOSITE)
    return {k: m[k] for k in METRICS}


def _tokens(agents: Sequence[AgentStats]) -> dict[str, float | None]:
    """Per turn: tokens rendered, tokens the store held, and their sum (the token cost)."""
    answers = sum(a.answers for a in agents)
    if not answers:
        return {"answer_tokens": None, "held_tokens": None, "token_cost": None}
    rendered = sum(a.answer_tokens for a in agents) / answers
    held = sum(a.stored_tokens_at_answers for a in agents) / answers
    return {"answer_tokens": rendered, "held_tokens": held, "token_cost": rendered + held}


def _gcr(goals: Sequence[Verdict]) -> float | None:
    """Eq. 9 with w_g = the goal's number of prerequisites."""
    if not goals:
        return None
    return sum(v.weight for v in goals if v.completed) / sum(v.weight for v in goals)


def score_agents(verdicts: Sequence[Verdict], agents: Sequence[AgentStats],
                 metrics: Sequence[str] = ("composite", "nc", "gcr", "sra", "pp", "ce"),
                 ) -> list[dict[str, float | None]]:
    """``metrics`` of each cast agent alone: its answers and its store's counters (the
    agent–scenario–seed unit of seed 000 §6.4.2)."""
    out = []
    for i, a in enumerate(agents):
        m = score([v for v in verdicts if v.agent == i], [a])
        out.append({k: (None if m[k] is None else round(float(m[k] or 0.0), 6))
                    for k in metrics})
    return out


def _ce(m: Mapping[str, float | None]) -> float | None:
    perf = composite(m, _PERF)
    if perf is None or m["token_cost"] is None or m["ops_per_write"] is None:
        return None
    cost = 1.0 + 0.5 * m["token_cost"] / TOKEN_REF + 0.5 * max(0.0, m["ops_per_write"] - 1)
    return perf / cost
