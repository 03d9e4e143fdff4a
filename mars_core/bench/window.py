"""``mars bench window``: ``since``/``until`` retrieval on one large namespace.

Seed 000 §3.2.5 keeps a temporal index that "supports range queries"; the store's is the
namespace's timeline (:mod:`mars_core.views.timeline`), handed to the vector index as an
id allow-list or, for numpy, as a range over its time column. This benchmark measures
what a window costs and what it returns, per index:

* a store (``MemoryStore.open(path, index=...)``, hashing embedder) of ``n`` memories in
  one namespace, written over ``days`` days (``add_many`` per day, the clock advanced a
  day in between; signals and sensitivity scoring off, which only the load needs);
* interleaved rounds of ``retrieve(query, since=, until=, read_only=True)`` for five
  queries with no window (the baseline of the same run), a 30-day and a 1-day window:
  medians and the ratio of each window to the baseline;
* quality of the 1-day window: the top 10 (no relative cut-off) against the exact window
  ranking — the same store reopened with every memory of the window a candidate
  (``RetrievalConfig(candidates=...)``): the share of the top 10 in common.

Examples:
    >>> r = run(n=300, days=10, indexes=("numpy",), rounds=1)
    >>> r["rows"][0]["index"], r["rows"][0]["overlap_1d"]
    ('numpy', 1.0)
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mars_core.bench.report import results_dir, write_results
from mars_core.bench.storage import make_texts
from mars_core.clock import FakeClock
from mars_core.config import RetrievalConfig
from mars_core.embeddings import HashingEmbedder
from mars_core.layout import IndexKind
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["QUERIES", "main", "run", "table"]

QUERIES = ("ana jazz lisbon", "project deadline meeting", "doctor gym weekend",
           "octopus documentary", "sister birthday dinner")
"""The queries (words of the synthetic memories' vocabulary)."""

_NS = "big"


def _windows(start: datetime, days: int) -> dict[str, tuple[datetime | None, datetime | None]]:
    mid = days // 2
    return {"none": (None, None),
            "30d": (start + timedelta(days=max(0, mid - 10)),
                    start + timedelta(days=max(1, mid + min(20, days - mid - 1)))),
            "1d": (start + timedelta(days=mid), start + timedelta(days=mid, hours=23))}


def _build(path: Path, index: IndexKind, n: int, days: int, clock: FakeClock) -> float:
    texts = make_texts(n, seed=5)
    per = max(1, n // days)
    t0 = time.perf_counter()
    with MemoryStore.open(path, index=index, clock=clock, embedder=HashingEmbedder(),
                          budget=10**9, nlp="off", sensitivity_scoring=False) as store:
        for d in range(days):
            store.add_many(texts[d * per:(d + 1) * per], namespace=_NS)
            clock.advance(timedelta(days=1))
    return time.perf_counter() - t0


def _ids(store: MemoryStore, q: str, since: datetime | None, until: datetime | None,
         **kw: Any) -> list[str]:
    return [h.id for h in store.retrieve(q, namespace=_NS, since=since, until=until,
                                         read_only=True, **kw)]


def _one(path: Path, index: IndexKind, n: int, days: int, rounds: int) -> dict[str, Any]:
    clock = FakeClock()
    start = clock.now()
    load = _build(path, index, n, days, clock)
    windows = _windows(start, days)
    times: dict[str, list[float]] = {w: [] for w in windows}
    hits: dict[str, list[int]] = {w: [] for w in windows}
    kw: dict[str, Any] = {"clock": clock, "embedder": HashingEmbedder(), "budget": 10**9,
                          "nlp": "off", "sensitivity_scoring": False}
    with MemoryStore.open(path, index=index, **kw) as store:
        store.retrieve("warm up", namespace=_NS, read_only=True)
        for rnd in range(rounds):
            order = list(windows) if rnd % 2 == 0 else list(windows)[::-1]
            for q in QUERIES:
                for w in order:
                    t = time.perf_counter()
                    got = _ids(store, q, *windows[w], budget_tokens=200)
                    times[w].append((time.perf_counter() - t) * 1000)
                    hits[w].append(len(got))
        top = {q: _ids(store, q, *windows["1d"], k=10, budget_tokens=10**6,
                       relative_cutoff=0.0) for q in QUERIES}
    inside = max(1, n // days) * 2 + 64  # every memory of the window is a candidate
    with MemoryStore.open(path, index=index, retrieval=RetrievalConfig(candidates=inside),
                          **kw) as exact:
        overlap = [len(set(top[q]) & set(ref)) / max(1, len(ref))
                   for q in QUERIES
                   for ref in [_ids(exact, q, *windows["1d"], k=10, budget_tokens=10**6,
                                    relative_cutoff=0.0)]]
    med = {w: statistics.median(v) for w, v in times.items()}
    return {"index": index, "n": n, "days": days, "load_s": round(load, 1),
            "samples": rounds * len(QUERIES),
            **{f"ms_{w}": round(m, 2) for w, m in med.items()},
            **{f"ratio_{w}": round(med[w] / med["none"], 2) for w in ("30d", "1d")},
            **{f"hits_{w}": round(statistics.mean(v), 1) for w, v in hits.items()},
            "overlap_1d": round(statistics.mean(overlap), 3)}


def run(*, n: int = 100_000, days: int = 100, indexes: Sequence[IndexKind] = ("numpy", "chroma"),
        rounds: int = 6, workdir: str | os.PathLike[str] | None = None,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """Measure every index of ``indexes`` (see the module); one row each."""
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for i, index in enumerate(indexes):
            report(progress, "index", i, len(indexes))
            rows.append(_one(Path(tmp, f"store-{index}"), index, n, days, rounds))
        report(progress, "index", len(indexes), len(indexes))
    return {"rows": rows}


def table(result: dict[str, Any]) -> str:
    """Markdown: one row per index."""
    lines = ["| index | n | no window ms | 30 d ms (ratio) | 1 d ms (ratio) | hits none / 30 d "
             "/ 1 d | 1 d top-10 ∩ exact |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['index']} | {r['n']:,} | {r['ms_none']:.1f} | {r['ms_30d']:.1f} "
                     f"({r['ratio_30d']:.2f}×) | {r['ms_1d']:.1f} ({r['ratio_1d']:.2f}×) | "
                     f"{r['hits_none']} / {r['hits_30d']} / {r['hits_1d']} | "
                     f"{r['overlap_1d']:.2f} |")
    return "\n".join(lines)


def main(out: str | os.PathLike[str] | None = None, *, n: int = 100_000, days: int = 100,
         indexes: Sequence[IndexKind] = ("numpy", "chroma"), quick: bool = False,
         progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run and print (and write ``window.json`` and ``window.md`` to ``out``)."""
    folder = None if out is None else results_dir(out)
    if quick:
        n, days = min(n, 2_000), min(days, 20)
    result = run(n=n, days=days, indexes=indexes, rounds=2 if quick else 6,
                 progress=progress)
    text = table(result)
    print(text)
    write_results(folder, "window", result, text)
    return result
