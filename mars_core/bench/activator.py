"""``mars bench activator``: does the Activator's sub-query DAG raise evidence recall on
LoCoMo multi-hop questions (category 1) over a single query, at equal token budget?

For each conversation, every turn is stored as one episodic memory (its ``dia_id`` as
provenance ``external_id``) in a fresh in-memory store with a budget large enough that
nothing is forgotten. For each multi-hop question and each token budget B (approximate
tokens, the store's default counter):

* **single** — ``store.retrieve(question, budget_tokens=B, read_only=True,
  relative_cutoff=0)`` (filling the budget, as the DAG does: recall at equal budget);
* **dag** — :class:`~mars_core.control.Activator` into an empty buffer capped at B tokens
  (no item cap), retention neutral (``retention_floor=1``: the questions come after the
  conversation, with no reinforcement history).

Turn-level evidence recall and precision are averaged over questions (seed 001 §4.1
protocol); F1 is the mean of per-question F1. Conversations 0–3 are the **tune** split
(where the Activator's parameters were chosen), 4–6 the **test** split reported as the
result; both aggregates are returned, with per-conversation rows.

Examples:
    >>> cfg = bench_config()
    >>> cfg.retention_floor, cfg.second_hop
    (1.0, True)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from mars_core.bench.locomo_data import Conversation, load_locomo
from mars_core.clock import FakeClock
from mars_core.control.activator import Activator
from mars_core.control.config import ActivatorConfig
from mars_core.control.memory import Buffer
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ValidationError
from mars_core.store import MemoryStore

__all__ = ["bench_config", "run_activator_bench", "score_conversation"]

TUNE = (0, 1, 2, 3)
TEST = (4, 5, 6)
BUDGETS = (128, 256)


def bench_config(**overrides: Any) -> ActivatorConfig:
    """The Activator configuration the benchmark measures (retention neutral)."""
    return ActivatorConfig(**{"retention_floor": 1.0, **overrides})


def _store(conv: Conversation, embedder: Embedder) -> MemoryStore:
    store = MemoryStore(budget=10_000_000, embedder=embedder, clock=FakeClock(),
                        sensitivity_scoring=False, nlp="off")
    for t in conv.turns:
        store.add(t.text, type="episodic", namespace=conv.sample_id,
                  provenance={"source": "user", "conversation_id": conv.sample_id,
                              "external_id": t.dia_id})
    return store


def _prf(found: Iterable[str], gold: Sequence[str]) -> tuple[float, float, float]:
    got, want = set(found), set(gold)
    hit = len(got & want)
    r = hit / len(want) if want else 0.0
    p = hit / len(got) if got else 0.0
    return r, p, (2 * p * r / (p + r) if p + r else 0.0)


def score_conversation(conv: Conversation, embedder: Embedder, budgets: Sequence[int],
                       config: ActivatorConfig, category: int = 1) -> dict[str, Any]:
    """Per-budget sums of recall/precision/F1 for single query and DAG on one conversation."""
    store = _store(conv, embedder)
    dia = {n.id: n.provenance.external_id for n in store.list(conv.sample_id)}
    act = Activator(store, conv.sample_id, config)
    qs = [q for q in conv.questions if q.category == category]
    rows: dict[str, Any] = {"conversation": conv.sample_id, "questions": len(qs)}
    try:
        for b in budgets:
            sums = {m: [0.0, 0.0, 0.0] for m in ("single", "dag")}
            for q in qs:
                single = store.retrieve(q.question, budget_tokens=b, namespace=conv.sample_id,
                                        read_only=True, relative_cutoff=0)  # fills, as the DAG
                dag = act.activate(q.question, Buffer.empty(), 1_000_000, b).buffer
                for m, ids in (("single", [h.id for h in single]), ("dag", dag.ids)):
                    for k, v in enumerate(_prf([dia[i] or "" for i in ids], q.evidence)):
                        sums[m][k] += v
            rows[str(b)] = sums
    finally:
        store.close()
    return rows


def _aggregate(rows: Sequence[dict[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    n = sum(r["questions"] for r in rows)
    out: dict[str, Any] = {"questions": n}
    for b in budgets:
        per: dict[str, Any] = {}
        for m in ("single", "dag"):
            tot = [sum(r[str(b)][m][k] for r in rows) for k in range(3)]
            per[m] = {name: round(v / n, 4) if n else 0.0
                      for name, v in zip(("recall", "precision", "f1"), tot, strict=True)}
        per["recall_gain"] = round(per["dag"]["recall"] - per["single"]["recall"], 4)
        out[str(b)] = per
    return out


def _embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        from mars_core.embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    raise ValidationError(f"embedder must be 'hashing' or 'minilm', not {name!r}")


def run_activator_bench(
    data_path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    quick: bool = False,
    *,
    embedder: Literal["hashing", "minilm"] = "hashing",
    budgets: Sequence[int] = BUDGETS,
    config: ActivatorConfig | None = None,
) -> dict[str, Any]:
    """Compare single-query retrieval with the Activator's DAG on LoCoMo category 1.

    Args:
        data_path: the LoCoMo JSON (e.g. ``../shared/data/locomo/locomo_dev7.json``).
        out: where to write the JSON report (nothing written when None).
        quick: only the first conversation (a smoke run).
        embedder: ``"hashing"`` (default, no model) or ``"minilm"`` (all-MiniLM-L6-v2).
        budgets: token budgets B (approximate tokens).
        config: the Activator configuration (default :func:`bench_config`).

    Returns:
        ``{"tune": ..., "test": ..., "conversations": [...], "config": ..., ...}``; each
        split maps a budget to ``single``/``dag`` recall, precision, F1 and the recall gain.
    """
    if not budgets or any(not isinstance(b, int) or b <= 0 for b in budgets):
        raise ValidationError("budgets must be positive integers")
    convs = load_locomo(data_path)
    chosen = convs[:1] if quick else convs
    cfg = config or bench_config()
    emb = _embedder(embedder)
    start = time.perf_counter()
    rows = [score_conversation(c, emb, budgets, cfg) for c in chosen]
    report: dict[str, Any] = {
        "benchmark": "activator", "category": 1, "embedder": emb.name, "quick": quick,
        "budgets": list(budgets), "config": cfg.model_dump(),
        "tune": _aggregate([r for i, r in enumerate(rows) if i in TUNE], budgets),
        "test": _aggregate([r for i, r in enumerate(rows) if i in TEST], budgets),
        "all": _aggregate(rows, budgets),
        "conversations": [{"conversation": r["conversation"], **_aggregate([r], budgets)}
                          for r in rows],
        "seconds": round(time.perf_counter() - start, 1),
    }
    if out is not None:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report
