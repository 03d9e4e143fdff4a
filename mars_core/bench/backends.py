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
of the hashing embedder, batched and one sentence at a time).

A **store-level** section then times the façade itself on each backend at ``store_n``
memories: :meth:`~mars_core.store.MemoryStore.add` and
:meth:`~mars_core.store.MemoryStore.retrieve` (read-only, and counting the access),
median and p99, with the hashing embedder (whose cost is negligible), so the MiniLM
single-sentence latency is what a semantic embedder adds to each call.

``chroma-http`` talks to a real ``chroma run`` server: the one ``CHROMA_HOST``/
``CHROMA_PORT`` name, else one the bench starts for the row on a free loopback port and
stops afterwards (:mod:`mars_core.bench.chroma_server`). ``caps`` bounds ``n`` per
backend when asked (``qdrant-path`` fills at the disk's fsync rate: qdrant-client's
local mode commits every point to SQLite separately — about 800 points/s on an idle
disk here, 60-70 when other jobs were writing), and every row stops measuring after
``time_cap`` seconds; capped rows say how many samples they kept. These machines are
shared: read ratios within one run, not absolute numbers across runs.

Examples:
    >>> r = run_backends(sizes=(300,), backends=("inmemory",), quick=True, embedders=False,
    ...                  store_n=0)
    >>> row = r["rows"][0]
    >>> row["backend"], row["n"], row["query"]["median_ms"] > 0
    ('inmemory', 300, True)
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.backends.base import And, Eq, Record, VectorBackend
from mars_core.bench.chroma_server import chroma_cli, chroma_server
from mars_core.bench.report import results_dir
from mars_core.bench.throughput import make_texts
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ConfigError

__all__ = ["BACKENDS", "CAP_WHY", "DEFAULT_CAPS", "KINDS", "default_backends", "main",
           "render_markdown", "run_backends"]

_DEFAULT_KINDS = ("inmemory", "chroma-ephemeral", "chroma-persistent", "chroma-http",
                  "qdrant-memory", "qdrant-path")
KINDS = (*_DEFAULT_KINDS, "inmemory-disk", "qdrant-url")
"""Every backend :func:`run_backends` knows."""

_NEEDS: dict[str, str] = {"chroma": "chromadb", "qdrant": "qdrant_client"}

DEFAULT_CAPS: Mapping[str, int] = {}
"""Largest ``n`` measured per backend by default: none (pass ``caps`` to bound a slow one)."""

CAP_WHY: Mapping[str, str] = {
    "qdrant-path": "qdrant-client's local mode commits every point to SQLite in its own "
                   "transaction (one fsync each), so filling it runs at the disk's fsync "
                   "rate whatever the batch size; its queries run the same in-memory scan "
                   "as qdrant-memory",
    "qdrant-memory": "qdrant-client's local mode scans every point in Python",
}
"""Why a backend is capped, said in the skipped rows."""


def default_backends() -> tuple[str, ...]:
    """The backends measured by default: those whose client library is installed.

    ``inmemory`` always; the Chroma kinds with ``chromadb`` (``chroma-http`` also needs
    the ``chroma`` CLI, to start a server); the local Qdrant kinds with
    ``qdrant-client``. (``inmemory-disk`` and ``qdrant-url`` run on request.)
    """
    out = ["inmemory"]
    for kind in _DEFAULT_KINDS[1:]:
        module = _NEEDS[kind.split("-")[0]]
        if importlib.util.find_spec(module) is None:
            continue
        if kind == "chroma-http" and chroma_cli() is None and "CHROMA_HOST" not in os.environ:
            continue
        out.append(kind)
    return tuple(out)


BACKENDS = default_backends()
"""The backends measured by default (computed at import: see :func:`default_backends`)."""

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


def _chroma_http(stack: ExitStack, workdir: Path, prefix: str,
                 info: dict[str, Any]) -> VectorBackend:
    """A Chroma HTTP backend on ``CHROMA_HOST``'s server, or on one started in ``stack``.

    ``info["server"]`` says which: the URL of the server started, or ``"CHROMA_HOST"``.
    """
    from mars_core.backends.chroma import ChromaBackend

    if "CHROMA_HOST" in os.environ:
        host, port = os.environ["CHROMA_HOST"], int(os.environ.get("CHROMA_PORT", "8000"))
        info["server"] = "CHROMA_HOST"
    else:
        server = stack.enter_context(chroma_server(workdir))
        host, port = server.host, server.port
        info["server"] = server.url
    return ChromaBackend(host=host, port=port, collection_prefix=prefix)


@contextmanager
def _backend(kind: str, workdir: Path, info: dict[str, Any]) -> Iterator[VectorBackend]:
    """A fresh backend of ``kind`` (directories under ``workdir``), closed afterwards.

    ``chroma-http`` runs against ``CHROMA_HOST``'s server or, without one, a ``chroma
    run`` server started in ``workdir`` for this backend and stopped after it (its URL
    goes to ``info["server"]``).
    """
    from mars_core.backends.chroma import ChromaBackend
    from mars_core.backends.memory import InMemoryBackend
    from mars_core.backends.qdrant import QdrantBackend

    prefix = f"bench{uuid.uuid4().hex[:8]}_"
    with ExitStack() as stack:
        factories: dict[str, Callable[[], VectorBackend]] = {
            "inmemory": InMemoryBackend,
            "inmemory-disk": lambda: InMemoryBackend(workdir / "inmemory", fsync=False),
            "chroma-ephemeral": ChromaBackend,
            "chroma-persistent": lambda: ChromaBackend(path=workdir / "chroma"),
            "chroma-http": lambda: _chroma_http(stack, workdir, prefix, info),
            "qdrant-memory": QdrantBackend,
            "qdrant-path": lambda: QdrantBackend(path=workdir / "qdrant"),
            "qdrant-url": lambda: QdrantBackend(url=os.environ["QDRANT_URL"],
                                                api_key=os.environ.get("QDRANT_API_KEY"),
                                                collection_prefix=prefix),
        }
        backend = factories[kind]()
        stack.callback(backend.close)
        yield backend


def _time_each(fn: Callable[[Any], object], items: Sequence[Any],
               time_cap: float) -> list[float]:
    """Seconds of ``fn(item)`` per item, stopping once ``time_cap`` seconds have passed."""
    took: list[float] = []
    start = time.perf_counter()
    for item in items:
        s0 = time.perf_counter()
        fn(item)
        took.append(time.perf_counter() - s0)
        if time.perf_counter() - start > time_cap:
            break
    return took


def _embedders(sample: Sequence[str], singles: int) -> list[dict[str, Any]]:
    """Each installed embedder: sentences/s batched on ``sample``, and one-sentence latency."""
    from mars_core.embedders import MINILM, SentenceTransformerEmbedder, minilm_installed

    hashing = HashingEmbedder()
    rows = [_time_embedder(hashing.name, hashing.dim, hashing.embed, sample, singles)]
    if minilm_installed():
        minilm = SentenceTransformerEmbedder(MINILM)
        rows.append(_time_embedder(minilm.name, minilm.dim, minilm.embed, sample, singles))
    return rows


def _time_embedder(name: str, dim: int, embed: Callable[[list[str]], Matrix],
                   sample: Sequence[str], singles: int) -> dict[str, Any]:
    embed(list(sample[:8]))  # load and warm up
    t0 = time.perf_counter()
    embed(list(sample))
    took = time.perf_counter() - t0
    one = _time_each(lambda text: embed([text]), sample[:singles], 60.0)
    return {"embedder": name, "dim": dim, "sentences": len(sample), "seconds": took,
            "sentences_per_s": len(sample) / took, "single": _summary(one)}


def _measure(backend: VectorBackend, vectors: Matrix, texts: Sequence[str], *,
             batch: int, queries: int, singles: int, time_cap: float) -> dict[str, Any]:
    n = len(texts)
    backend.ensure_collection("memories", vectors.shape[1])
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        backend.upsert("memories", _records(texts[i:i + batch], vectors[i:i + batch], i))
    fill = time.perf_counter() - t0
    rng = np.random.default_rng(3)
    # each single add replaces an existing record: n stays the same
    picks = [int(i) for i in rng.integers(n, size=singles)]
    single = _time_each(lambda i: backend.upsert(
        "memories", _records([texts[i]], vectors[i:i + 1], i)), picks, time_cap)
    qvecs = vectors[rng.integers(n, size=queries)]
    out: dict[str, Any] = {"n": n, "bulk_add_s": fill, "bulk_add_per_s": n / fill,
                           "single_add": _summary(single)}
    out["single_add"]["capped"] = len(single) < singles
    for label, where in (("query", None),
                         ("query_filtered", And((Eq("namespace", "ns3"),
                                                 Eq("status", "active"))))):
        def query(q: Matrix, where: Any = where) -> None:
            if not backend.query("memories", q, k=10, where=where):
                raise AssertionError(f"{backend.name}: a query found nothing at n={n}")
        took = _time_each(query, list(qvecs), time_cap)
        out[label] = _summary(took)
        out[label]["capped"] = len(took) < queries
    return out


def _store_doc(n: int) -> dict[str, Any]:
    """A JSON-LD export of an in-memory store of ``n`` memories (hashing embedder)."""
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    with MemoryStore(embedder=HashingEmbedder(), budget=10**9, clock=FakeClock()) as store:
        for i, text in enumerate(make_texts(n, seed=17)):
            store.add(text, type=_TYPES[i % len(_TYPES)])
        return store.export_jsonld()


def _measure_store(backend: VectorBackend, doc: dict[str, Any], *, ops: int,
                   time_cap: float) -> dict[str, Any]:
    """Import ``doc`` into a store on ``backend``, then time add and retrieve there."""
    from mars_core.store import MemoryStore

    store = MemoryStore(backend=backend, embedder=HashingEmbedder(), budget=10**9)
    with store:
        t0 = time.perf_counter()
        n = store.import_jsonld(doc)
        fill = time.perf_counter() - t0
        adds = _time_each(store.add, make_texts(ops, seed=19), time_cap)
        qs = make_texts(ops, seed=23)
        read = _time_each(lambda q: store.retrieve(q, read_only=True), qs, time_cap)
        access = _time_each(store.retrieve, qs, time_cap)
    out: dict[str, Any] = {"n": n, "import_s": fill, "import_per_s": n / fill}
    for label, took in (("add", adds), ("retrieve", read), ("retrieve_access", access)):
        out[label] = {**_summary(took), "capped": len(took) < ops}
    return out


def run_backends(sizes: Sequence[int] = (10_000, 100_000),
                 backends: Sequence[str] | None = None,
                 out: str | os.PathLike[str] | None = None, quick: bool = False, *,
                 queries: int = 200, singles: int = 200, batch: int = 500,
                 caps: Mapping[str, int] | None = None,
                 time_cap: float = 120.0, workdir: Path | None = None,
                 embedders: bool = True, store_n: int = 10_000,
                 store_ops: int = 200) -> dict[str, Any]:
    """Measure every backend at every size; write ``backends.json``/``.md`` under ``out``.

    Args:
        sizes: collection sizes ``n``.
        backends: names from :data:`KINDS` (default :data:`BACKENDS`; ``chroma-http``
            starts its own server unless ``CHROMA_HOST``/``CHROMA_PORT`` name one;
            ``qdrant-url`` needs ``QDRANT_URL``).
        out: a directory for ``backends.json`` and ``backends.md``, made before the run
            (none: nothing written).
        quick: a smoke run (20 queries, 20 single adds, 20 store operations, a
            16-sentence embedding sample).
        queries: queries per row (each unfiltered and filtered).
        singles: one-record upserts per row.
        batch: records per upsert while filling.
        caps: largest ``n`` per backend (default :data:`DEFAULT_CAPS`; ``{}``: none);
            bigger sizes are listed as skipped, with the reason.
        time_cap: seconds after which a row stops timing more single adds or queries.
        workdir: where on-disk backends live (default: a temporary directory, removed).
        embedders: time the installed embedders (loads MiniLM when it is installed).
        store_n: memories in each store of the store-level section (0: no section).
        store_ops: ``add`` and ``retrieve`` calls timed per store.

    Returns:
        ``{"machine", "settings", "embedders", "rows", "skipped", "stores", "wall_s"}``.

    Raises:
        ConfigError: an unknown backend or a non-positive size.
        ValidationError: ``out`` cannot be a directory (before anything runs).
    """
    wall = time.perf_counter()
    kinds = tuple(BACKENDS if backends is None else backends)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown backend(s) {unknown}; use any of {list(KINDS)}")
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n <= 0
                        for n in sizes):
        raise ConfigError(f"sizes must be positive integers, got {list(sizes)}")
    caps = DEFAULT_CAPS if caps is None else caps
    folder = None if out is None else results_dir(out)
    if quick:
        queries, singles, store_ops = min(queries, 20), min(singles, 20), min(store_ops, 20)
    texts_all = make_texts(max(sizes))
    vectors_all = HashingEmbedder().embed(texts_all)
    sample = make_texts(16 if quick else 1000, seed=13)
    result: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": _cpus(), "load_before": _load()},
        "settings": {"queries": queries, "singles": singles, "batch": batch, "k": 10,
                     "dim": int(vectors_all.shape[1]), "caps": dict(caps),
                     "time_cap_s": time_cap, "store_n": store_n, "store_ops": store_ops,
                     "chroma_http": "CHROMA_HOST" if "CHROMA_HOST" in os.environ
                     else "a chroma run server started by the bench for each row"},
        "embedders": _embedders(sample, min(50, len(sample))) if embedders else [],
        "rows": [], "skipped": [], "stores": []}
    for kind in kinds:
        for n in sizes:
            if n > caps.get(kind, n):
                result["skipped"].append({"backend": kind, "n": n, "why": (
                    f"capped at {caps[kind]:,}: " + CAP_WHY.get(kind, "by caps"))})
                continue
            info: dict[str, Any] = {}
            with tempfile.TemporaryDirectory(dir=workdir) as tmp, \
                    _backend(kind, Path(tmp), info) as backend:
                row = _measure(backend, vectors_all[:n], texts_all[:n], batch=batch,
                               queries=queries, singles=singles, time_cap=time_cap)
            result["rows"].append({"backend": kind, **row, **info, "load_after": _load()})
    if store_n > 0:
        doc = _store_doc(store_n)
        for kind in kinds:
            sinfo: dict[str, Any] = {}
            with tempfile.TemporaryDirectory(dir=workdir) as tmp, \
                    _backend(kind, Path(tmp), sinfo) as backend:
                srow = _measure_store(backend, doc, ops=store_ops, time_cap=time_cap)
            result["stores"].append({"backend": kind, **srow, **sinfo,
                                     "load_after": _load()})
    result["wall_s"] = time.perf_counter() - wall
    if folder is not None:
        (folder / "backends.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        (folder / "backends.md").write_text(render_markdown(result), encoding="utf-8")
    return result


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def _load() -> float | None:
    """The 1-minute load average (``None`` where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _ms(s: Mapping[str, Any], total: int) -> tuple[str, str]:
    """Median and p99 cells; a capped p99 says how many samples it had."""
    cap = f" ({s['count']} of {total})" if s.get("capped") else ""
    return f"{s['median_ms']:.2f}", f"{s['p99_ms']:.2f}{cap}"


def render_markdown(result: dict[str, Any]) -> str:
    """The tables of a :func:`run_backends` result, as markdown."""
    m, s = result["machine"], result["settings"]
    loads = [r["load_after"] for r in result["rows"] + result["stores"]
             if r.get("load_after") is not None]
    load = (f" Load average (1 min) {m['load_before']:.1f} at the start, "
            f"{min(loads):.1f}-{max(loads):.1f} after the rows."
            if loads and m.get("load_before") is not None else "")
    lines = [f"Machine: {m['platform']}; Python {m['python']}; {m['cpus']} CPUs.{load} "
             f"{s['dim']}-d vectors, top-{s['k']}, {s['queries']} queries and "
             f"{s['singles']} single adds per row, fill batches of {s['batch']}; "
             f"chroma-http: {s['chroma_http']}.", "",
             "| embedder | dim | sentences | sentences/s (batched) "
             "| one sentence median ms | one sentence p99 ms |", "|---|---|---|---|---|---|"]
    for e in result["embedders"]:
        one = e.get("single")
        cells = (f"{one['median_ms']:.2f} | {one['p99_ms']:.2f}" if one else "- | -")
        lines.append(f"| {e['embedder']} | {e['dim']} | {e['sentences']} | "
                     f"{e['sentences_per_s']:,.0f} | {cells} |")
    lines += ["", "| backend | n | bulk add /s | single add median ms | single add p99 ms "
              "| query median ms | query p99 ms | filtered median ms | filtered p99 ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        single, query, filtered = (_ms(r[k], s[t]) for k, t in (
            ("single_add", "singles"), ("query", "queries"), ("query_filtered", "queries")))
        lines.append(f"| {r['backend']} | {r['n']:,} | {r['bulk_add_per_s']:,.0f} | "
                     f"{' | '.join(single + query + filtered)} |")
    lines += [f"- skipped {x['backend']} at n={x['n']:,}: {x['why']}" for x in result["skipped"]]
    if result["stores"]:
        lines += ["", f"Store level: `MemoryStore` on each backend holding "
                  f"{s['store_n']:,} memories (imported), hashing embedder; "
                  f"{s['store_ops']} calls each.", "",
                  "| backend | n | import /s | add median ms | add p99 ms | retrieve median ms "
                  "| retrieve p99 ms | retrieve+access median ms | retrieve+access p99 ms |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in result["stores"]:
            timed = [c for k in ("add", "retrieve", "retrieve_access")
                     for c in _ms(r[k], s["store_ops"])]
            lines.append(f"| {r['backend']} | {r['n']:,} | {r['import_per_s']:,.0f} | "
                         f"{' | '.join(timed)} |")
    return "\n".join(lines) + "\n"


def main(sizes: Sequence[int] = (10_000, 100_000), backends: Sequence[str] | None = None,
         out: str | os.PathLike[str] | None = None, quick: bool = False) -> dict[str, Any]:
    """Run :func:`run_backends` and print its markdown tables."""
    result = run_backends(sizes, backends, out, quick)
    print(render_markdown(result))
    return result
