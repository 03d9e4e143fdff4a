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
  the composite's weights) and Cost = 1 + 0.5·(answer tokens / prompt budget) + 0.5·(extra
  memory operations per memory written); coefficients fixed a priori. Wall time is never
  inside a score.
* **Composite** (eq. 14) = 0.25 NC + 0.25 GCR + 0.20 SRA + 0.15 PP + 0.15 CE, and a
  **task-weighted composite** = 0.35 NC + 0.35 GCR + 0.15 SRA_opp + 0.10 PP + 0.05 CE.

A component with no opportunity in a run (no goal reached its deadline, say) is left out
and the weights of the others are renormalised.

Example:
    >>> m = score([], [], prompt_tokens=256)
    >>> m["composite"], m["gcr"]
    (None, None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mars_core.bench.fifa.simulator import AgentStats, mutation_ops
from mars_core.bench.fifa.validators import Verdict

__all__ = ["COMPOSITE", "METRICS", "TASK_COMPOSITE", "composite", "score"]

COMPOSITE: dict[str, float] = {"nc": 0.25, "gcr": 0.25, "sra": 0.20, "pp": 0.15, "ce": 0.15}
"""Eq. 14 weights."""

TASK_COMPOSITE: dict[str, float] = {"nc": 0.35, "gcr": 0.35, "sra_opp": 0.15, "pp": 0.10,
                                    "ce": 0.05}
"""The task-weighted composite (§6.5.1's reweighting toward task progress)."""

METRICS: tuple[str, ...] = ("composite", "composite_task", "nc", "gcr", "sra", "sra_opp", "pp",
                            "leakage", "ce", "token_cost", "ops_per_write")
"""Every metric reported per cell, in report order."""

_PERF = {"nc": 0.25, "gcr": 0.25, "sra": 0.20}


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def composite(values: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """Weighted mean of the available components (weights renormalised), or None."""
    got = {k: w for k, w in weights.items() if values.get(k) is not None}
    total = sum(got.values())
    if not total:
        return None
    return sum(w * float(values[k] or 0.0) for k, w in got.items()) / total


def score(verdicts: Sequence[Verdict], agents: Sequence[AgentStats], *,
          prompt_tokens: int) -> dict[str, float | None]:
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
    answers = sum(a.answers for a in agents)
    written = sum(a.written for a in agents)
    m["token_cost"] = sum(a.answer_tokens for a in agents) / answers if answers else None
    m["ops_per_write"] = sum(mutation_ops(a) for a in agents) / written if written else None
    m["ce"] = _ce(m, prompt_tokens)
    m["composite"] = composite(m, COMPOSITE)
    m["composite_task"] = composite(m, TASK_COMPOSITE)
    return {k: m[k] for k in METRICS}


def _gcr(goals: Sequence[Verdict]) -> float | None:
    """Eq. 9 with w_g = the goal's number of prerequisites."""
    if not goals:
        return None
    return sum(v.weight for v in goals if v.completed) / sum(v.weight for v in goals)


def _ce(m: Mapping[str, float | None], prompt_tokens: int) -> float | None:
    perf = composite(m, _PERF)
    if perf is None or m["token_cost"] is None or m["ops_per_write"] is None:
        return None
    cost = 1.0 + 0.5 * m["token_cost"] / prompt_tokens + 0.5 * max(0.0, m["ops_per_write"] - 1)
    return perf / cost
