"""``mars bench backends``: add throughput and query latency of each vector backend.

For every backend and size ``n`` it builds a collection of ``n`` records shaped like the
store's (a 384-d unit vector, the node document, flat metadata: namespace, type,
status, sensitivity), then measures:

* **bulk add**: records/s while filling the collection in batches of ``batch``;
* **single add**: latency of one-record upserts at size ``n`` (what ``store.add`` costs
  the backend: one memory per call), median and p99;
* **query**: latency of a top-10 query, unfiltered and filtered
  (``namespace == ns AND status == "active"``, the store's filter), median and p99.

The embedding cost is separated out: the backend timings use precomputed vectors (the
384-d :class:`~mars_core.embeddings.HashingEmbedder`, the dimension of MiniLM — a
backend's cost depends on ``n`` and the dimension, not on the model), and the embedders
are timed apart on a sample (sentences/s of all-MiniLM-L6-v2 when it is installed, and
of the hashing embedder). Qdrant's local mode is an exhaustive scan in Python, so its
size is capped (``qdrant_cap``, default 20,000) and every row stops measuring after
``time_cap`` seconds; capped rows say so. These machines are shared: read ratios
within one run, not absolute numbers across runs.

Examples:
    >>> r = run_backends(sizes=(300,), backends=("inmemory",), quick=True, embedders=False)
    >>> row = r["rows"][0]
    >>> row["backend"], row["n"], row["query"]["median_ms"] > 0
    ('inmemory', 300, True)
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.backends.base import And, Eq, Record, VectorBackend
from mars_core.bench.throughput import make_texts
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ConfigError

__all__ = ["BACKENDS", "KINDS", "main", "render_markdown", "run_backends"]

BACKENDS = ("inmemory", "chroma-ephemeral", "chroma-persistent", "qdrant-memory",
            "qdrant-path")
"""The backends measured by default (``chroma-http`` and ``qdrant-url`` on request)."""

KINDS = (*BACKENDS, "inmemory-disk", "chroma-http", "qdrant-url")
"""Every backend :func:`run_backends` knows."""

_TYPES = ("episodic", "semantic", "social", "task")
_NAMESPACES = 10
Matrix = npt.NDArray[np.float32]


def _summary(samples: Sequence[float]) -> dict[str, float]:
    if not samples:
        return {"count": 0, "median_ms": float("nan"), "p99_ms": float("nan")}
    ordered = sorted(samples)
    return {"count": len(ordered), "median_ms": 1000 * statistics.median(ordered),
            "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]}


def _records(texts: Sequence[str], vectors: Matrix, start: int) -> list[Record]:
    return [Record(str(uuid.UUID(int=start + i + 1)), vectors[i], text,
                   {"namespace": f"ns{(start + i) % _NAMESPACES}",
                    "type": _TYPES[(start + i) % len(_TYPES)],
                    "status": "active" if (start + i) % 5 else "archived",
                    "sensitivity": ((start + i) % 10) / 10})
            for i, text in enumerate(texts)]


@contextmanager
def _backend(kind: str, workdir: Path) -> Iterator[VectorBackend]:
    """A fresh backend of ``kind`` (directories under ``workdir``), closed afterwards."""
    import os

    from mars_core.backends.chroma import ChromaBackend
    from mars_core.backends.memory import InMemoryBackend
    from mars_core.backends.qdrant import QdrantBackend

    factories: dict[str, Callable[[], VectorBackend]] = {
        "inmemory": InMemoryBackend,
        "inmemory-disk": lambda: InMemoryBackend(workdir / "inmemory", fsync=False),
        "chroma-ephemeral": ChromaBackend,
        "chroma-persistent": lambda: ChromaBackend(path=workdir / "chroma"),
        "chroma-http": lambda: ChromaBackend(
            host=os.environ.get("CHROMA_HOST", "localhost"),
            port=int(os.environ.get("CHROMA_PORT", "8000")),
            collection_prefix=f"bench{uuid.uuid4().hex[:8]}_"),
        "qdrant-memory": QdrantBackend,
        "qdrant-path": lambda: QdrantBackend(path=workdir / "qdrant"),
        "qdrant-url": lambda: QdrantBackend(url=os.environ["QDRANT_URL"],
                                            api_key=os.environ.get("QDRANT_API_KEY"),
                                            collection_prefix=f"bench{uuid.uuid4().hex[:8]}_"),
    }
    backend = factories[kind]()
    try:
        yield backend
    finally:
        backend.close()


def _embedders(sample: Sequence[str]) -> list[dict[str, Any]]:
    """Sentences/s of each installed embedder on ``sample`` (one batched call, after warm-up)."""
    from mars_core.embedders import MINILM, SentenceTransformerEmbedder, minilm_installed

    found: list[Embedder] = [HashingEmbedder()]
    if minilm_installed():
        found.append(SentenceTransformerEmbedder(MINILM))
    rows = []
    for emb in found:
        emb.embed(list(sample[:8]))  # load and warm up
        t0 = time.perf_counter()
        emb.embed(list(sample))
        took = time.perf_counter() - t0
        rows.append({"embedder": emb.name, "dim": emb.dim, "sentences": len(sample),
                     "seconds": took, "sentences_per_s": len(sample) / took})
    return rows


def _measure(backend: VectorBackend, vectors: Matrix, texts: Sequence[str], *,
             batch: int, queries: int, singles: int, time_cap: float) -> dict[str, Any]:
    n = len(texts)
    backend.ensure_collection("memories", vectors.shape[1])
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        backend.upsert("memories", _records(texts[i:i + batch], vectors[i:i + batch], i))
    fill = time.perf_counter() - t0
    rng = np.random.default_rng(3)
    single: list[float] = []
    for j in range(singles):  # each replaces an existing record: n stays the same
        i = int(rng.integers(n))
        rec = _records([texts[i]], vectors[i:i + 1], i)
        s0 = time.perf_counter()
        backend.upsert("memories", rec)
        single.append(time.perf_counter() - s0)
        if j and time.perf_counter() - s0 > time_cap:
            break
    qvecs = vectors[rng.integers(n, size=queries)]
    out: dict[str, Any] = {"n": n, "bulk_add_s": fill, "bulk_add_per_s": n / fill,
                           "single_add": _summary(single)}
    for label, where in (("query", None),
                         ("query_filtered", And((Eq("namespace", "ns3"),
                                                 Eq("status", "active"))))):
        took, start = [], time.perf_counter()
        for q in qvecs:
            s0 = time.perf_counter()
            hits = backend.query("memories", q, k=10, where=where)
            took.append(time.perf_counter() - s0)
            if not hits:
                raise AssertionError(f"{backend.name}: a query found nothing at n={n}")
            if time.perf_counter() - start > time_cap:
                break
        out[label] = _summary(took)
        out[label]["capped"] = len(took) < queries
    return out


def run_backends(sizes: Sequence[int] = (10_000, 100_000),
                 backends: Sequence[str] = BACKENDS, out: Path | None = None,
                 quick: bool = False, *, queries: int = 200, singles: int = 200,
                 batch: int = 500, qdrant_cap: int = 20_000, time_cap: float = 120.0,
                 workdir: Path | None = None, embedders: bool = True) -> dict[str, Any]:
    """Measure every backend at every size; write ``backends.json``/``.md`` under ``out``.

    Args:
        sizes: collection sizes ``n``.
        backends: names from :data:`BACKENDS` (plus ``inmemory-disk``, ``chroma-http``
            with ``CHROMA_HOST``/``CHROMA_PORT``, ``qdrant-url`` with ``QDRANT_URL``).
        out: a directory for ``backends.json`` and ``backends.md`` (none: nothing written).
        quick: a smoke run (20 queries, 20 single adds, a 16-sentence embedding sample).
        queries: queries per row (each unfiltered and filtered).
        singles: one-record upserts per row.
        batch: records per upsert while filling.
        qdrant_cap: largest ``n`` for Qdrant's local modes (an exhaustive Python scan).
        time_cap: seconds after which a row stops timing more single adds or queries.
        workdir: where on-disk backends live (default: a temporary directory, removed).
        embedders: time the installed embedders (loads MiniLM when it is installed).

    Returns:
        ``{"machine": ..., "embedders": [...], "rows": [...], "skipped": [...]}``.
    """
    unknown = [k for k in backends if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown backend(s) {unknown}; use any of {list(KINDS)}")
    if quick:
        queries, singles = min(queries, 20), min(singles, 20)
    texts_all = make_texts(max(sizes))
    vectors_all = HashingEmbedder().embed(texts_all)
    sample = make_texts(16 if quick else 1000, seed=13)
    result: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": _cpus()},
        "settings": {"queries": queries, "singles": singles, "batch": batch, "k": 10,
                     "dim": int(vectors_all.shape[1]), "qdrant_cap": qdrant_cap,
                     "time_cap_s": time_cap},
        "embedders": _embedders(sample) if embedders else [], "rows": [], "skipped": []}
    for kind in backends:
        for n in sizes:
            if kind.startswith("qdrant") and kind != "qdrant-url" and n > qdrant_cap:
                result["skipped"].append({"backend": kind, "n": n,
                                          "why": f"local Qdrant capped at {qdrant_cap}"})
                continue
            with tempfile.TemporaryDirectory(dir=workdir) as tmp, \
                    _backend(kind, Path(tmp)) as backend:
                row = _measure(backend, vectors_all[:n], texts_all[:n], batch=batch,
                               queries=queries, singles=singles, time_cap=time_cap)
            result["rows"].append({"backend": kind, **row})
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "backends.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        (out / "backends.md").write_text(render_markdown(result), encoding="utf-8")
    return result


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def render_markdown(result: dict[str, Any]) -> str:
    """The tables of a :func:`run_backends` result, as markdown."""
    m, s = result["machine"], result["settings"]
    lines = [f"Machine: {m['platform']}; Python {m['python']}; {m['cpus']} CPUs. "
             f"{s['dim']}-d vectors, top-{s['k']}, {s['queries']} queries and "
             f"{s['singles']} single adds per row, fill batches of {s['batch']}.", "",
             "| embedder | dim | sentences | sentences/s |", "|---|---|---|---|"]
    lines += [f"| {e['embedder']} | {e['dim']} | {e['sentences']} | "
              f"{e['sentences_per_s']:,.0f} |" for e in result["embedders"]]
    lines += ["", "| backend | n | bulk add /s | single add median ms | single add p99 ms "
              "| query median ms | query p99 ms | filtered median ms | filtered p99 ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        cap = {k: " (capped)" if r[k].get("capped") else "" for k in ("query", "query_filtered")}
        lines.append(
            f"| {r['backend']} | {r['n']:,} | {r['bulk_add_per_s']:,.0f} | "
            f"{r['single_add']['median_ms']:.2f} | {r['single_add']['p99_ms']:.2f} | "
            f"{r['query']['median_ms']:.2f} | {r['query']['p99_ms']:.2f}{cap['query']} | "
            f"{r['query_filtered']['median_ms']:.2f} | "
            f"{r['query_filtered']['p99_ms']:.2f}{cap['query_filtered']} |")
    lines += [f"- skipped {x['backend']} at n={x['n']:,}: {x['why']}" for x in result["skipped"]]
    return "\n".join(lines) + "\n"


def main(sizes: Sequence[int] = (10_000, 100_000), backends: Sequence[str] = BACKENDS,
         out: Path | None = None, quick: bool = False) -> dict[str, Any]:
    """Run :func:`run_backends` and print its markdown tables."""
    result = run_backends(sizes, backends, out, quick)
    print(render_markdown(result))
    return result
