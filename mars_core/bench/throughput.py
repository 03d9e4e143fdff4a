"""``mars bench store``: add throughput and retrieve latency of a store at size n.

It fills a store with ``n`` synthetic memories (a fixed-seed vocabulary, so every run
sees the same texts), timing each ``add``; then times ``retrieve`` queries. Embedding
is timed separately (the same texts through the same embedder) so the store's own
cost can be read apart from the model's. Reported figures are medians and p99 over
the measured calls, with the embedding cost alongside, because these machines are
noisy: compare ratios measured in one run, not absolute numbers across runs.

Examples:
    >>> r = run(n=200, queries=20, budget=10**9, persistent=None)
    >>> r["n"], r["adds"] > 0
    (200, True)
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mars_core.bench.report import results_dir
from mars_core.embeddings import HashingEmbedder
from mars_core.store import MemoryStore

__all__ = ["make_texts", "run"]

_WORDS = ("ana bo carla dev lisbon porto tea jazz river bridge meeting project deadline "
          "birthday dinner vegetarian octopus documentary nurse sister job office train "
          "museum painting guitar garden weekend holiday flight hotel doctor gym").split()


def make_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` deterministic pseudo-sentences of 6-14 words."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))) for _ in range(n)]


def _time_each(fn: Callable[[str], Any], items: list[str]) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return out


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": 1000 * statistics.median(ordered),
            "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "per_s": len(ordered) / sum(ordered) if sum(ordered) > 0 else 0.0}


def run(n: int = 10_000, queries: int = 300, budget: int = 10**9,
        persistent: Path | None = None, policy: str = "lru") -> dict[str, Any]:
    """Measure one configuration; ``persistent`` is a directory for an on-disk store."""
    texts = make_texts(n)
    emb = HashingEmbedder()
    embed_s = _time_each(lambda t: emb.embed([t]), texts[: min(n, 2000)])
    store = MemoryStore.open(persistent, budget=budget, policy=policy, backend="inmemory",
                             embedder=emb) if persistent else \
        MemoryStore(budget=budget, policy=policy, embedder=emb)
    with store:
        add_s = _time_each(store.add, texts)
        qs = make_texts(queries, seed=11)
        ret_s = _time_each(lambda q: store.retrieve(q, budget_tokens=256, read_only=True), qs)
        acc_s = _time_each(lambda q: store.retrieve(q, budget_tokens=256), qs[:100])
        stats = store.stats()["namespaces"]["default"]
    return {"n": n, "backend": "inmemory-disk" if persistent else "inmemory", "policy": policy,
            "adds": len(add_s), "active": stats["active"], "archived": stats["archived"],
            "add": _summary(add_s), "embed": _summary(embed_s),
            "add_last_1000": _summary(add_s[-1000:]),
            "retrieve_read_only": _summary(ret_s), "retrieve_with_access": _summary(acc_s)}


def main(n: int = 10_000, out: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Run the in-memory and on-disk configurations and print a table (and write
    ``store_throughput.json`` to ``out``, made before the run)."""
    folder = None if out is None else results_dir(out)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(n), run(n, persistent=Path(tmp) / "store"),
                run(n, budget=max(1000, n), persistent=Path(tmp) / "evicting")]
    for r in rows:
        print(f"{r['backend']:<14} n={r['n']:>7} active={r['active']:>7} "
              f"add median {r['add']['median_ms']:.3f} ms ({r['add']['per_s']:.0f}/s; "
              f"embedding {r['embed']['median_ms']:.3f} ms) | retrieve median "
              f"{r['retrieve_read_only']['median_ms']:.2f} ms p99 "
              f"{r['retrieve_read_only']['p99_ms']:.2f} ms")
    if folder is not None:
        (folder / "store_throughput.json").write_text(json.dumps(rows, indent=1))
    return rows
