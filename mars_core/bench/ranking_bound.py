"""How far a reranker could take the users' path: the bound behind issue 18's recall gap.

The users' path (:mod:`mars_core.bench.users_path`) is ingested once per conversation in
RAM, and each question's ``k`` best hits are kept with every signal a hit carries
(``retrieve(q, relative_cutoff=0, k=k, read_only=True)``). Then, offline, at 128
whitespace words of ``"speaker: text"``:

* **oracle**: the gold turns among the best ``m`` distinct turns that fit the words,
  shortest first — how much evidence the candidates hold at all;
* **fitted**: a logistic regression over the 20 best distinct turns' signals (fused score
  relative to the best, cosine, BM25, the turn's length, whether it asks a question,
  archived, 1/rank), fitted leave-one-conversation-out, ranking the turns by its
  probability — what a weighting of the store's own signals reaches;
* **fitted, in context** (``context=True``): the same with three more cosines per
  candidate, the query's against the embedder's vectors of the turn alone, of the turn
  after the one before it, and of the turn followed by the one after it.

Each fitted ranking is read with no cut-off and with a cut-off at ``c`` × the best
probability. Nothing here is shipped or used by the store: it measures a bound
(docs/benchmarks/evidence.md, "Against the targets").

With ``--rules`` it also chooses the weights of issue 31's two ranking rules
(``RetrievalConfig.speaker_weight`` and ``date_weight``) leave-one-conversation-out: the
candidates are taken with both rules off, each hit re-scored offline as ``score +
speaker_weight · [the question names the hit's speaker] + date_weight · [the hit was made
in the time the question names]`` for every pair of :data:`RULE_GRID`, cut at 0.85 of the
best and filled into 128 words; per held-out conversation, the pair with the best F1 on
the other conversations is read on it (:func:`rules`). An offline re-scoring of the
candidates (per turn, its best hit), not the store's ranking: the cut-off here is per
turn, not per unit of evidence, and a date term the store lends to a reply is not lent
here; the users' path measures the shipped weights themselves, and its gain is smaller
(docs/benchmarks/evidence.md).

With ``--latency`` it measures only what the two rules cost (:func:`latency`): each of the
first conversations ingested into two stores, one with the shipped weights and one with
both rules off, and every question read by both in alternating order — ``retrieve`` at
the users' path's read budget and ``render_context`` with its defaults; medians and their
ratio.

``python -m mars_core.bench.ranking_bound PATH [--context] [--rules] [--latency]`` prints
the figures as JSON.

Examples:
    >>> oracle_recall([{"conv": "c", "gold": ["a"], "hits": [{"t": "b"}, {"t": "a"}]}],
    ...               {"c": {"a": 100, "b": 100}}, ks=(1, 2))
    {1: 0.0, 2: 1.0}
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mars_core.bench import locomo as L
from mars_core.bench.locomo_data import load_locomo
from mars_core.bench.users_path import _turn_of, fill_words, ingest
from mars_core.embeddings import Embedder
from mars_core.errors import ExtraNotInstalledError
from mars_core.reading.frame import time_window
from mars_core.reading.retrieval import answerability

__all__ = ["RULES_OFF", "RULE_GRID", "candidates", "fitted", "latency", "latency_main", "main",
           "oracle_recall", "rules"]

Item = dict[str, Any]
WORDS = 128
TOP = 20
CUTS = (0.0, 0.5, 0.6, 0.7)
RULE_GRID: tuple[tuple[float, float], ...] = tuple(
    (s, d) for s in (0.0, 0.1, 0.2, 0.25, 0.3, 0.4) for d in (0.0, 0.2, 0.3, 0.5, 0.7))
"""The ``(speaker_weight, date_weight)`` pairs :func:`rules` chooses among."""


def candidates(data: Sequence[L.ConvData], embedder: Embedder, k: int = 60,
               retrieval: dict[str, Any] | None = None
               ) -> tuple[list[Item], dict[str, dict[str, int]], dict[str, dict[str, str]]]:
    """Each question's ``k`` best hits on the users' path (in RAM), with their signals,
    speaker and time; and the turns' word counts and texts per conversation.
    ``retrieval``: the store's retrieval configuration (None: the defaults)."""
    from mars_core.store import MemoryStore

    items: list[Item] = []
    for cd in data:
        with MemoryStore(embedder=embedder, seed=0, retrieval=retrieval or {}) as store:
            ing = ingest(cd, store)
            for q in cd.questions:
                hits = store.retrieve(q.question, budget_tokens=10**6, relative_cutoff=0,
                                      k=k, read_only=True)
                items.append({"conv": cd.conv.sample_id, "q": q.question,
                              "gold": list(q.evidence), "hits": [
                                  {"t": _turn_of(h.node, ing.turn_of), "s": h.score,
                                   "d": h.dense, "l": h.lexical, "a": h.archived,
                                   "who": h.node.speaker, "at": h.node.created_at}
                                  for h in hits]})
    words = {cd.conv.sample_id: dict(zip(cd.ids, (int(c) for c in cd.cost["words"]),
                                         strict=True)) for cd in data}
    texts = {cd.conv.sample_id: dict(zip(cd.ids, cd.texts, strict=True)) for cd in data}
    return items, words, texts


def _metrics(chosen: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    m = L.question_metrics(chosen, gold, 0, 1)
    return m["precision"], m["recall"], m["f1"]


def oracle_recall(items: Sequence[Item], words: dict[str, dict[str, int]],
                  ks: Sequence[int] = (5, 10, 20, 60), budget: int = WORDS
                  ) -> dict[int, float]:
    """Mean recall of the gold turns among the best ``k`` distinct turns that fit
    ``budget`` words, shortest first."""
    out = {}
    for k in ks:
        total = 0.0
        for it in items:
            w, gold = words[it["conv"]], set(it["gold"])
            turns = dict.fromkeys(h["t"] for h in it["hits"][:k] if h["t"])
            found = sorted((t for t in turns if t in gold), key=lambda t: w[t])
            total += len(fill_words(found, w, budget)[0]) / len(gold)
        out[k] = round(total / len(items), 4)
    return out


def _top(it: Item) -> list[dict[str, Any]]:
    """The best hit of each of a question's :data:`TOP` best distinct turns."""
    first: dict[str, dict[str, Any]] = {}
    for h in it["hits"]:
        if h["t"] and h["t"] not in first:
            first[h["t"]] = h
            if len(first) == TOP:
                break
    return list(first.values())


def _features(it: Item, words: dict[str, int], texts: dict[str, str],
              context: Callable[[str], list[float]] | None) -> list[tuple[str, list[float]]]:
    """The best :data:`TOP` distinct turns of a question and their signals."""
    best = max((h["s"] for h in it["hits"] if h["t"]), default=1.0) or 1.0
    return [(h["t"], [h["s"] / best, h["d"], h["l"], math.log(words[h["t"]]),
                      float(texts[h["t"]].rstrip().endswith("?")), float(h["a"]),
                      1 / (1 + rank)] + (context(h["t"]) if context else []))
            for rank, h in enumerate(_top(it))]


def fitted(items: Sequence[Item], words: dict[str, dict[str, int]],
           texts: dict[str, dict[str, str]],
           context: Callable[[int, str, str], list[float]] | None = None
           ) -> dict[float, dict[str, float]]:
    """Leave-one-conversation-out logistic reranking; P/R/F1 at :data:`WORDS` per cut-off
    (``0``: none). ``context(question index, conversation, turn)`` adds features."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:
        raise ExtraNotInstalledError("bench", "scikit-learn") from exc
    def more(i: int) -> Callable[[str], list[float]] | None:
        if context is None:
            return None
        return lambda turn: context(i, items[i]["conv"], turn)

    feats = [_features(it, words[it["conv"]], texts[it["conv"]], more(i))
             for i, it in enumerate(items)]
    ranked: dict[int, list[tuple[float, str]]] = {}
    for conv in sorted({it["conv"] for it in items}):
        train = [i for i, it in enumerate(items) if it["conv"] != conv]
        x = np.array([f for i in train for _, f in feats[i]])
        y = np.array([t in items[i]["gold"] for i in train for t, _ in feats[i]])
        model = LogisticRegression(max_iter=2000).fit(x, y)
        for i, it in enumerate(items):
            if it["conv"] == conv and feats[i]:
                p = model.predict_proba(np.array([f for _, f in feats[i]]))[:, 1]
                ranked[i] = sorted(zip(p.tolist(), (t for t, _ in feats[i]), strict=True),
                                   key=lambda z: -z[0])
    out = {}
    for cut in CUTS:
        sums = np.zeros(3)
        for i, it in enumerate(items):
            r = ranked.get(i, [])
            kept = [t for p, t in r if p >= cut * r[0][0]] if r else []
            sums += _metrics(fill_words(kept, words[it["conv"]], WORDS)[0], it["gold"])
        out[cut] = dict(zip(("precision", "recall", "f1"),
                            (round(float(v) / len(items), 4) for v in sums), strict=True))
    return out


def _rescored(it: Item, speaker: float, date: float) -> list[tuple[float, str]]:
    """A question's hits re-scored with the two rules' weights (best first, per turn)."""
    window = time_window(it["q"])
    best: dict[str, float] = {}
    for h in it["hits"]:
        if h["t"]:
            s = h["s"] + speaker * answerability(it["q"], "", h["who"]).speaker
            s += date * float(window is not None and window.holds(h["at"]))
            best[h["t"]] = max(best.get(h["t"], s), s)
    return sorted(((s, t) for t, s in best.items()), key=lambda z: -z[0])


def rules(items: Sequence[Item], words: dict[str, dict[str, int]],
          grid: Sequence[tuple[float, float]] = RULE_GRID, cut: float = 0.85
          ) -> dict[str, Any]:
    """P/R/F1 at :data:`WORDS` for every ``(speaker_weight, date_weight)`` of ``grid``
    over all questions (``"dev"``), and leave-one-conversation-out (``"held_out"``: per
    conversation, the pair best on the others by F1, read on it; ``"picks"``)."""
    convs = sorted({it["conv"] for it in items})
    per: dict[tuple[float, float], dict[str, Any]] = {}
    for pair in grid:
        sums = {c: np.zeros(4) for c in convs}
        for it in items:
            ranked = _rescored(it, *pair)
            kept = [t for s, t in ranked if s >= cut * ranked[0][0]] if ranked else []
            chosen = fill_words(kept, words[it["conv"]], WORDS)[0]
            sums[it["conv"]] += (*_metrics(chosen, it["gold"]), 1)
        per[pair] = sums

    def mean(pair: tuple[float, float], convs_in: Sequence[str]) -> Any:
        total = sum((per[pair][c] for c in convs_in), np.zeros(4))
        return total[:3] / max(total[3], 1)

    picks = {c: max(grid, key=lambda p: mean(p, [o for o in convs if o != c])[2])
             for c in convs}
    held = sum((per[picks[c]][c] for c in convs), np.zeros(4))
    names = ("precision", "recall", "f1")
    return {"dev": {f"{s}/{d}": dict(zip(names, np.round(mean((s, d), convs), 4).tolist(),
                                         strict=True)) for s, d in grid},
            "held_out": dict(zip(names, np.round(held[:3] / held[3], 4).tolist(), strict=True)),
            "picks": {c: f"{s}/{d}" for c, (s, d) in picks.items()}}


def _context(items: Sequence[Item], texts: dict[str, dict[str, str]], embedder: Embedder
             ) -> Callable[[int, str, str], list[float]]:
    """The three context cosines of :func:`fitted`, embedded once for every candidate."""
    keys = sorted({(it["conv"], h["t"]) for it in items for h in _top(it)})
    order = {c: list(t) for c, t in texts.items()}

    def windows(conv: str, turn: str) -> list[str]:
        ids, i = order[conv], order[conv].index(turn)
        before = texts[conv][ids[i - 1]] + " " if i else ""
        after = " " + texts[conv][ids[i + 1]] if i + 1 < len(ids) else ""
        return [texts[conv][turn], before + texts[conv][turn], texts[conv][turn] + after]

    def unit(m: Any) -> Any:
        m = np.asarray(m, dtype=np.float64)
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    vecs = unit(embedder.embed([w for c, t in keys for w in windows(c, t)]))
    at = {key: vecs[3 * j:3 * j + 3] for j, key in enumerate(keys)}
    queries = unit(embedder.embed([it["q"] for it in items]))
    return lambda i, conv, turn: (at[(conv, turn)] @ queries[i]).tolist()


RULES_OFF: dict[str, Any] = {"speaker_weight": 0.0, "date_weight": 0.0}
"""The retrieval configuration with both of issue 31's ranking rules off."""


def latency(data: Sequence[L.ConvData], embedder: Embedder, conversations: int = 2
            ) -> dict[str, Any]:
    """Medians (ms) of ``retrieve`` and ``render_context`` with the shipped rules and with
    both off, on the same questions, interleaved (the order alternates per question), and
    each ratio shipped / off. In RAM, the calls of the users' path (:func:`~mars_core.bench.
    users_path.read`), so both stores record the same accesses."""
    from mars_core.store import MemoryStore

    times: dict[str, list[float]] = {f"{c}_{k}": [] for c in ("retrieve", "render")
                                      for k in ("rules", "off")}
    for cd in data[:conversations]:
        with MemoryStore(embedder=embedder, seed=0) as on, \
                MemoryStore(embedder=embedder, seed=0, retrieval=RULES_OFF) as off:
            ingest(cd, on)
            ingest(cd, off)
            for i, q in enumerate(cd.questions):
                pair = [("rules", on), ("off", off)]
                for kind, store in pair if i % 2 == 0 else pair[::-1]:
                    t0 = time.perf_counter()
                    store.retrieve(q.question, budget_tokens=1024)
                    t1 = time.perf_counter()
                    store.render_context(q.question)
                    t2 = time.perf_counter()
                    times[f"retrieve_{kind}"].append((t1 - t0) * 1000)
                    times[f"render_{kind}"].append((t2 - t1) * 1000)
    med = {k: round(float(np.median(v)), 3) for k, v in times.items()}
    return {"questions": len(times["retrieve_rules"]), "median_ms": med,
            "ratio": {c: round(med[f"{c}_rules"] / med[f"{c}_off"], 3)
                      for c in ("retrieve", "render")}}


def main(path: str, *, context: bool = False, with_rules: bool = False,
         embedder: Embedder | None = None) -> dict[str, Any]:
    """Every figure of the module on the LoCoMo file at ``path`` (MiniLM when installed);
    ``with_rules``: also :func:`rules`, on candidates taken with both rules off."""
    from mars_core.bench.evidence import default_bench_embedder

    emb = L.CachedEmbedder(embedder or default_bench_embedder(False))
    data = L.prepare(load_locomo(path), emb)
    items, words, texts = candidates(data, emb)
    out: dict[str, Any] = {"questions": len(items), "oracle_recall": oracle_recall(items, words),
                           "fitted": fitted(items, words, texts)}
    if context:
        out["fitted_in_context"] = fitted(items, words, texts, _context(items, texts, emb))
    if with_rules:
        off, _, _ = candidates(data, emb, retrieval=RULES_OFF)
        out["rules"] = rules(off, words)
    return out


def latency_main(path: str, embedder: Embedder | None = None) -> dict[str, Any]:
    """:func:`latency` on the LoCoMo file at ``path`` (MiniLM when installed)."""
    from mars_core.bench.evidence import default_bench_embedder

    emb = L.CachedEmbedder(embedder or default_bench_embedder(False))
    return latency(L.prepare(load_locomo(path), emb), emb)


if __name__ == "__main__":  # pragma: no cover - the command line
    flags = sys.argv[2:]
    print(json.dumps(latency_main(sys.argv[1]) if "--latency" in flags else
                     main(sys.argv[1], context="--context" in flags,
                          with_rules="--rules" in flags), indent=1))
