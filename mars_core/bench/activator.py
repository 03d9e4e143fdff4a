"""``mars bench activator``: does the Activator's sub-query DAG raise evidence recall on
LoCoMo multi-hop questions (category 1) over a single query, at equal token budget?

For each conversation, every turn is stored as one episodic memory (``"speaker: text"``,
its ``dia_id`` as provenance ``external_id``) in a fresh in-memory store with a budget
large enough that nothing is forgotten; the turns and questions are embedded ahead in one
batch (a model embeds a batch far faster than one text per ``add``; the same vectors).
For each multi-hop question and each token budget B (approximate tokens, the store's
default counter):

* **single** — ``store.retrieve(question, budget_tokens=B, read_only=True,
  relative_cutoff=0)`` (filling the budget, as the DAG does: recall at equal budget);
* **dag** — :class:`~mars_core.control.Activator` into an empty buffer capped at B tokens
  (no item cap), retention neutral (``retention_floor=1``: the questions come after the
  conversation, with no reinforcement history), otherwise its shipped defaults: a
  question naming one speaker is answered from that speaker's own statements (the
  speaker-scoped child and its own-voice sub-query; see :mod:`mars_core.control.activator`).

Turn-level evidence recall and precision are averaged over questions (seed 001 §4.1
protocol); F1 is the mean of per-question F1; ``dag_better``/``dag_worse`` count the
questions whose recall the DAG raised/lowered. Conversations 0–3 are the **tune** split
(where the Activator's parameters were chosen), 4–6 the **test** split reported as the
result; both aggregates are returned, with per-conversation rows. Measured (test split,
hashing embedder): recall 0.151 → 0.171 at 128 tokens and 0.209 → 0.235 at 256
(docs/concepts/control.md has both embedders and both splits).

Examples:
    >>> cfg = bench_config()
    >>> cfg.retention_floor, cfg.speaker_scope, cfg.second_hop
    (1.0, True, True)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mars_core.bench.locomo_data import Conversation, load_locomo
from mars_core.clock import FakeClock
from mars_core.control.activator import Activator
from mars_core.control.config import ActivatorConfig
from mars_core.control.memory import Buffer
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ValidationError
from mars_core.progress import ProgressFn
from mars_core.progress import report as report_progress
from mars_core.store import MemoryStore

__all__ = ["bench_config", "run_activator_bench", "score_conversation"]

TUNE = (0, 1, 2, 3)
TEST = (4, 5, 6)
BUDGETS = (128, 256)


def bench_config(**overrides: Any) -> ActivatorConfig:
    """The Activator configuration the benchmark measures (retention neutral)."""
    return ActivatorConfig(**{"retention_floor": 1.0, **overrides})


class _Primed:
    """An embedder serving texts embedded ahead in one batch, others as they come (cached).

    The store embeds one memory per ``add``; a model embeds a batch far faster than as
    many single texts, so the conversation's turns and questions are embedded at once.
    """

    def __init__(self, inner: Embedder, texts: Iterable[str]) -> None:
        self.name, self.dim, self._inner = inner.name, inner.dim, inner
        self._rows: dict[str, npt.NDArray[np.float32]] = {}
        self._add(list(dict.fromkeys(texts)))

    def _add(self, texts: Sequence[str]) -> None:
        if texts:
            rows = np.asarray(self._inner.embed(list(texts)), dtype=np.float32)
            self._rows.update(zip(texts, rows, strict=True))

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Rows for ``texts`` (embedding those not seen yet in one batch)."""
        self._add([t for t in dict.fromkeys(texts) if t not in self._rows])
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._rows[t] for t in texts])


def _store(conv: Conversation, embedder: Embedder, category: int = 1) -> MemoryStore:
    texts = [t.text for t in conv.turns]
    texts += [q.question for q in conv.questions if q.category == category]
    store = MemoryStore(budget=10_000_000, embedder=_Primed(embedder, texts), clock=FakeClock(),
                        sensitivity_scoring=False, nlp="off", seed=0)  # same ids, same ties
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
    store = _store(conv, embedder, category)
    dia = {n.id: n.provenance.external_id for n in store.list(conv.sample_id)}
    act = Activator(store, conv.sample_id, config)
    qs = [q for q in conv.questions if q.category == category]
    rows: dict[str, Any] = {"conversation": conv.sample_id, "questions": len(qs)}
    try:
        for b in budgets:
            sums = {m: [0.0, 0.0, 0.0] for m in ("single", "dag")}
            paired = {"dag_better": 0, "dag_worse": 0}
            for q in qs:
                single = store.retrieve(q.question, budget_tokens=b, namespace=conv.sample_id,
                                        read_only=True, relative_cutoff=0)  # fills, as the DAG
                dag = act.activate(q.question, Buffer.empty(), 1_000_000, b).buffer
                got = {m: _prf([dia[i] or "" for i in ids], q.evidence)
                       for m, ids in (("single", [h.id for h in single]), ("dag", dag.ids))}
                for m, prf in got.items():
                    for k, v in enumerate(prf):
                        sums[m][k] += v
                paired["dag_better"] += got["dag"][0] > got["single"][0]
                paired["dag_worse"] += got["dag"][0] < got["single"][0]
            rows[str(b)] = {**sums, **paired}
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
        for key in ("dag_better", "dag_worse"):  # questions whose recall rose / fell
            per[key] = sum(r[str(b)][key] for r in rows)
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
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Compare single-query retrieval with the Activator's DAG on LoCoMo category 1.

    Args:
        data_path: the LoCoMo JSON (e.g. ``../shared/data/locomo/locomo_dev7.json``).
        out: where to write the JSON report (nothing written when None).
        quick: only the first conversation (a smoke run).
        embedder: ``"hashing"`` (default, no model) or ``"minilm"`` (all-MiniLM-L6-v2).
        budgets: token budgets B (approximate tokens).
        config: the Activator configuration (default :func:`bench_config`).
        progress: ``progress("conversations", done, total)`` after each conversation.

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
    rows = []
    report_progress(progress, "conversations", 0, len(chosen))
    for done, conv in enumerate(chosen, 1):
        rows.append(score_conversation(conv, emb, budgets, cfg))
        report_progress(progress, "conversations", done, len(chosen))
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
