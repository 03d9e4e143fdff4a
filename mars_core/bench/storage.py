"""``mars bench store``: what the storage layer costs, measured as users run it.

Four sections, each a ratio against a baseline measured in the same run (medians; these
machines are noisy, so compare ratios, not absolute numbers across runs):

1. **Store cost at n memories** (precomputed vectors: a table embedder hands back the
   vectors of the texts, so no model runs and only the store is timed). For each index,
   a store opened by path with shipped defaults (``MemoryStore.open(path, index=...)``,
   LRU, signals and sensitivity scoring on; only the budget is lifted so nothing is
   forgotten) is filled with ``add_many``; a raw ``chromadb`` collection on the same
   disk holds the same vectors. Then, in alternating blocks of ``block`` calls so both
   see the same machine state: a raw ``collection.add`` of one vector and a store
   ``add``; a raw ``collection.query`` (``k`` = what the store asks its index for) and
   a store ``retrieve(read_only=True)``; a ``retrieve`` that records its access; an
   ``observe`` of a turn. Ratios: add / raw add, read_only / raw query, access /
   read_only, observe / add. A persistent index is written behind (its entries go in
   one batch before the next query, :mod:`mars_core.engine.indexing`), so the
   *alternating* row — one add then one query, again and again, the worst case for
   that buffer — is reported too, against one raw add plus one raw query.
2. **Bulk ingest**: ``add_many`` of n memories against n single ``add`` calls into a
   fresh store (throughput ratio); with Chroma, raw chromadb adding the same vectors in
   bulk, whose time bounds what any bulk ingest into it can reach (the ceiling). A full
   run repeats the three, interleaved, :data:`_BULK_ROUNDS` times (medians).
3. **Scale**: a store of ``big`` memories over ``namespaces`` namespaces (hashing
   embedder, bulk-loaded with signals and sensitivity scoring off, which only the load
   needs), and a small one (1,000 memories, 10 namespaces): a fresh process times
   ``MemoryStore.open`` + the first ``retrieve`` in one namespace (after importing the
   libraries, which is timed apart) and reports its peak RSS. The RSS of a process that
   serves one namespace should not grow with the store. With the Chroma index, a fresh
   process running raw ``chromadb`` on the directory the store wrote
   (``PersistentClient``, ``get_collection`` of that namespace's collection, one query)
   is Chroma's own floor on identical data; store and floor probes alternate, and each
   figure is the median of their rounds.
4. **Memory at n in one namespace**: peak RSS of a process that opens the store and
   retrieves once, against a process that opens the raw chromadb collection with the
   same vectors and queries it once; the store filled with ``add_many``, and again turn
   by turn with ``observe`` as the framework adapters fill it.
5. to 8. **As the history grows** (:mod:`mars_core.bench.history`): a long-lived user,
   many namespaces in one process, the budget lifted, the agent loop.

Examples:
    >>> r = run(n=150, block=5, rounds=2, big=0, indexes=("numpy",), quick=True)
    >>> r["cost"][0]["index"], r["cost"][0]["add_ratio"] > 0
    ('numpy', True)
"""

from __future__ import annotations

import json
import os
import platform
import random
import resource
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.bench import history
from mars_core.bench.plots import plot_storage, pyplot
from mars_core.bench.report import results_dir
from mars_core.bench.together import run_python
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import MarsError
from mars_core.layout import IndexKind
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["SECTIONS", "WORDS", "TableEmbedder", "main", "make_texts", "run"]

SECTIONS = ("cost", "bulk", "memory", "scale", *history.SECTIONS)
"""The sections of ``mars bench store``, as ``--sections`` names them (1: cost, 2: bulk,
3: memory, 4: scale; 5–8: :data:`mars_core.bench.history.SECTIONS`)."""

Matrix = npt.NDArray[np.float32]

WORDS = ("ana bo carla dev lisbon porto tea jazz river bridge meeting project deadline "
         "birthday dinner vegetarian octopus documentary nurse sister job office train "
         "museum painting guitar garden weekend holiday flight hotel doctor gym").split()
"""The vocabulary of the synthetic memories (every run sees the same texts)."""


def make_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` deterministic pseudo-sentences of 6-14 words.

    Examples:
        >>> make_texts(2) == make_texts(2) and len(make_texts(2)) == 2
        True
    """
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) for _ in range(n)]
_QUERY_K = 65
"""What the store asks its index for: 64 candidates, and one more to see a tie."""


class TableEmbedder:
    """Hands back precomputed vectors (the hashing embedder's) for the texts it knows:
    the store's cost measured without a model. Unknown texts are embedded on the fly.

    Examples:
        >>> e = TableEmbedder(["tea"], dim=8)
        >>> e.embed(["tea"]).shape
        (1, 8)
    """

    def __init__(self, texts: Sequence[str], dim: int = 384) -> None:
        self._base = HashingEmbedder(dim=dim)
        self.name, self.dim = self._base.name, dim
        vectors = self._base.embed(list(texts)) if texts else np.zeros((0, dim), np.float32)
        self._table = dict(zip(texts, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> Matrix:
        """The table's vectors (rows in order)."""
        rows = [self._table.get(t) for t in texts]
        if any(r is None for r in rows):
            return self._base.embed(list(texts))
        return np.stack([r for r in rows if r is not None]) if rows else \
            np.zeros((0, self.dim), np.float32)


def _median_ms(samples: Sequence[float]) -> float:
    return 1000 * statistics.median(samples) if samples else 0.0


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


# --- 1. cost at n ----------------------------------------------------------------------------


def _raw_collection(path: Path, vectors: Matrix) -> Any:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(
        anonymized_telemetry=False))
    col = client.get_or_create_collection("raw", embedding_function=None,
                                          configuration={"hnsw": {"space": "cosine"}})
    for i in range(0, len(vectors), 1000):
        col.add(ids=[str(j) for j in range(i, min(len(vectors), i + 1000))],
                embeddings=vectors[i:i + 1000])
    return col


def _fill(store: MemoryStore, texts: Sequence[str]) -> float:
    """``add_many`` in chunks of 1,000; seconds taken."""
    t0 = time.perf_counter()
    for i in range(0, len(texts), 1000):
        store.add_many(texts[i:i + 1000])
    return time.perf_counter() - t0


def cost(index: IndexKind, n: int, *, block: int, rounds: int,
         workdir: Path) -> dict[str, Any]:
    """Section 1 for one index (see the module)."""
    texts = make_texts(n + 4 * block * rounds, seed=7)
    turns = [f"I live in Porto and {t}" for t in make_texts(block * rounds, seed=13)]
    emb = TableEmbedder([*texts, *turns])
    vectors = emb.embed(texts)
    raw = _raw_collection(workdir / f"raw-{index}", vectors[:n])
    store = MemoryStore.open(workdir / f"store-{index}", index=index, embedder=emb,
                             budget=10**9)
    samples: dict[str, list[float]] = {k: [] for k in (
        "raw_add", "add", "raw_query", "read_only", "access", "observe", "raw_mix", "mix")}

    def raw_add(i: int) -> None:
        raw.add(ids=[f"x{i}"], embeddings=vectors[i:i + 1])

    def raw_query(i: int) -> None:
        raw.query(query_embeddings=vectors[i:i + 1], n_results=_QUERY_K, include=["distances"])

    def add_then_query(i: int) -> None:
        store.add(texts[i])
        store.retrieve(texts[i], read_only=True)

    try:
        fill_s = _fill(store, texts[:n])
        nxt = n
        for r in range(rounds):
            for _ in range(block):  # adds, raw then ours, one block each
                samples["raw_add"].append(_timed(raw_add, nxt))
                nxt += 1
            for _ in range(block):
                samples["add"].append(_timed(store.add, texts[nxt]))
                nxt += 1
            for q in range(block):  # queries of texts already stored
                qi = (r * block + q) * 7 % n
                samples["raw_query"].append(_timed(raw_query, qi))
                # the second call of a query finds what the first cached (its memories'
                # cues, Chroma's pages): which goes first alternates
                calls = [("read_only", {"read_only": True}), ("access", {})]
                for key, kw in calls if q % 2 == 0 else calls[::-1]:
                    samples[key].append(_timed(store.retrieve, texts[qi], **kw))
            for q in range(block):
                samples["observe"].append(_timed(store.observe, "user", turns[r * block + q]))
            for _ in range(block):  # the write-behind buffer's worst case: add, query
                samples["raw_mix"].append(_timed(raw_add, nxt) + _timed(raw_query, nxt))
                samples["mix"].append(_timed(add_then_query, nxt))
                nxt += 1
    finally:
        store.close()
    med = {k: _median_ms(v) for k, v in samples.items()}
    return {"index": index, "n": n, "samples": block * rounds, "fill_s": fill_s,
            **{f"{k}_ms": v for k, v in med.items()},
            "add_ratio": med["add"] / med["raw_add"],
            "read_only_ratio": med["read_only"] / med["raw_query"],
            "access_ratio": med["access"] / med["read_only"],
            "observe_ratio": med["observe"] / med["add"],
            "mix_ratio": med["mix"] / med["raw_mix"]}


# --- 2. bulk ingest --------------------------------------------------------------------------


def _raw_bulk(path: Path, vectors: Matrix) -> float:
    """Seconds raw chromadb takes to add ``vectors`` to a new collection made as the
    store's are (cosine, ``sync_threshold=2``), in batches of the client's maximum:
    what any bulk ingest into a Chroma index must at least pay."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(
        anonymized_telemetry=False))
    col = client.get_or_create_collection("raw", embedding_function=None, configuration={
        "hnsw": {"space": "cosine", "sync_threshold": 2}})
    batch = int(client.get_max_batch_size())
    t0 = time.perf_counter()
    for i in range(0, len(vectors), batch):
        col.add(ids=[str(j) for j in range(i, min(len(vectors), i + batch))],
                embeddings=vectors[i:i + batch])
    return time.perf_counter() - t0


def bulk(index: IndexKind, n: int, *, workdir: Path, embedder: Embedder | None = None,
         rounds: int = 1) -> dict[str, Any]:
    """Section 2: ``add_many`` of n memories against n single adds (fresh stores), with
    precomputed vectors or with ``embedder`` (the model users run). With the Chroma
    index and precomputed vectors, raw chromadb adding the same vectors in bulk too:
    n single adds / that time is the highest throughput ratio any ``add_many`` into
    Chroma could reach (``ceiling``); with an embedder, its one call on the whole batch
    plays that part (no ``add_many`` takes less than embedding its texts). ``rounds``:
    singles, ``add_many`` and the floor again and again, interleaved; the figures are
    medians."""
    texts = make_texts(n, seed=23)
    emb = embedder if embedder is not None else TableEmbedder(texts)
    label = "precomputed" if embedder is None else "model"
    raw_too = index == "chroma" and embedder is None
    timed: dict[str, list[float]] = {"singles": [], "many": [], "raw": [], "embed": []}
    for r in range(rounds):
        for kind in ("singles", "many"):
            store = MemoryStore.open(workdir / f"bulk-{label}-{kind}-{index}-{r}", index=index,
                                     embedder=emb, budget=10**9)
            t0 = time.perf_counter()
            if kind == "many":
                store.add_many(texts)
            else:
                for text in texts:
                    store.add(text)
            store.close()  # what the index's buffer still holds is part of the cost
            timed[kind].append(time.perf_counter() - t0)
        if raw_too:
            timed["raw"].append(_raw_bulk(workdir / f"bulk-raw-{index}-{r}", emb.embed(texts)))
        if embedder is not None:  # the one batched embedding call add_many makes
            timed["embed"].append(_timed(embedder.embed, texts))
    singles, many = statistics.median(timed["singles"]), statistics.median(timed["many"])
    out = {"index": index, "n": n, "embedder": label if embedder is None else emb.name,
           "rounds": rounds, "singles_per_s": n / singles, "add_many_per_s": n / many,
           "throughput_ratio": singles / many, "runs_s": timed}
    if raw_too:
        raw = statistics.median(timed["raw"])
        out.update(raw_bulk_per_s=n / raw, ceiling=singles / raw)
    if timed["embed"]:  # no add_many can take less than embedding its batch
        batch = statistics.median(timed["embed"])
        out.update(embed_batch_per_s=n / batch, ceiling=singles / batch)
    return out


def _model() -> Embedder | None:
    """all-MiniLM-L6-v2 when the ``semantic`` extra is installed."""
    from mars_core.embedders import default_embedder

    try:
        return default_embedder("semantic")
    except MarsError:
        return None


# --- 3. and 4. processes that open a store -----------------------------------------------------

_SCALE_QUERY = "the weekend dinner at the museum"

_PROBE = textwrap.dedent("""
    import json, resource, sys, time
    kind, path, namespace = sys.argv[1], sys.argv[2], sys.argv[3]
    QUERY, K = sys.argv[4], int(sys.argv[5])
    t0 = time.perf_counter()
    if kind in ("raw", "rawdir"):
        import chromadb
        from chromadb.config import Settings
        import numpy as np
        if kind == "rawdir":  # the query's vector, computed before the clock starts
            from mars_core import HashingEmbedder
            vec = HashingEmbedder().embed([QUERY])[0]
    else:
        from mars_core import MemoryStore, HashingEmbedder
        import chromadb  # the index's client: imported before the clock starts
    imported = time.perf_counter() - t0
    t0 = time.perf_counter()
    if kind == "raw":
        col = chromadb.PersistentClient(path=path, settings=Settings(
            anonymized_telemetry=False)).get_collection("raw", embedding_function=None)
        vec = np.asarray(col.get(ids=["0"], include=["embeddings"])["embeddings"][0])
        hits = len(col.query(query_embeddings=[vec.tolist()], n_results=10)["ids"][0])
    elif kind == "rawdir":  # chromadb alone on the directory the store wrote
        col = chromadb.PersistentClient(path=path, settings=Settings(
            anonymized_telemetry=False)).get_collection(namespace, embedding_function=None)
        hits = len(col.query(query_embeddings=[vec.tolist()], n_results=K,
                             include=["distances"])["ids"][0])
    else:
        store = MemoryStore.open(path, embedder=HashingEmbedder())
        hits = len(store.retrieve(QUERY, namespace=namespace,
                                  read_only=True, relative_cutoff=0, k=10))
    opened = time.perf_counter() - t0
    # this process's own high-water mark (VmHWM, kB): ru_maxrss would include the RSS
    # of the parent at the fork, which Linux carries across exec
    with open("/proc/self/status") as status:
        peak = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")),
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    if kind == "store":  # as a process that serves does when it stops (not timed):
        store.close()    # a process that never closes is a crash to the index
    print(json.dumps({"import_s": imported, "open_retrieve_s": opened, "hits": hits,
                      "peak_rss_mb": peak / 1024}))
""")


def _probe(kind: str, path: Path, namespace: str = "default") -> dict[str, Any]:
    """Run the probe in a fresh process; its JSON report."""
    env = {**os.environ, "MARS_EMBEDDER": "hashing"}
    stdout = run_python(["-c", _PROBE, kind, str(path), namespace, _SCALE_QUERY,
                         str(_QUERY_K)], env)
    report: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return report


def _bulk_load(path: Path, total: int, namespaces: int, index: IndexKind,
               progress: ProgressFn | None = None) -> float:
    """A store of ``total`` memories over ``namespaces`` namespaces, one ``add_many``
    (one transaction) per namespace; seconds taken. Every namespace holds the same
    texts, so their vectors are computed once (the hashing embedder's, under its name:
    the store is the one a hashing embedder would have written). ``progress``: stage
    ``load``, per namespace."""
    per = max(1, total // namespaces)
    texts = make_texts(per, seed=31)
    embedder = TableEmbedder(texts)
    t0 = time.perf_counter()
    report(progress, "load", 0, namespaces)
    with MemoryStore.open(path, index=index, embedder=embedder, budget=10**9,
                          nlp="off", sensitivity_scoring=False, cache_namespaces=8) as store:
        for ns in range(namespaces):
            store.add_many(texts, namespace=f"user-{ns:06d}")
            report(progress, "load", ns + 1, namespaces)
    return time.perf_counter() - t0


_BULK_ROUNDS = 3
"""Interleaved rounds of the bulk section with precomputed vectors (a full run)."""

_SMALL = 1_000
"""Memories of the scale section's small store (over 10 namespaces)."""

_ROUNDS = 3
"""Probes of each store (and of raw chromadb on its directory) in the scale section."""


def _median_probe(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure of several probes, and every run's time."""
    return {"import_s": statistics.median(r["import_s"] for r in runs),
            "open_retrieve_s": statistics.median(r["open_retrieve_s"] for r in runs),
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
            "hits": min(r["hits"] for r in runs),
            "runs_s": [r["open_retrieve_s"] for r in runs]}


def _chroma_floor(path: Path, namespace: str) -> tuple[Path, str]:
    """The Chroma directory of the store at ``path`` and the collection of
    ``namespace``'s active memories (what raw chromadb opens and queries)."""
    from mars_core.index.chroma import partition_name
    from mars_core.layout import INDEX_DIR
    from mars_core.model import MemoryStatus

    with MemoryStore.open(path, read_only=True) as store:  # the index partitions by token
        token = store.audit.token(namespace)
    return path / INDEX_DIR / "chroma", partition_name("mars_", token, MemoryStatus.ACTIVE)


def scale(big: int, namespaces: int, *, index: IndexKind, workdir: Path,
          rounds: int = _ROUNDS, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Section 3 (see the module): each store probed ``rounds`` times, and with the
    Chroma index, raw chromadb on the same directory between them (medians)."""
    small_path, big_path = workdir / f"small-{index}", workdir / f"big-{index}"
    small_load = _bulk_load(small_path, _SMALL, 10, index)
    big_load = _bulk_load(big_path, big, namespaces, index, progress)
    small_ns, big_ns = "user-000003", f"user-{namespaces // 2:06d}"
    # the first open after a bulk load may pay one-time work (an index's own write
    # log): both are reported
    first_small = _probe("store", small_path, small_ns)
    first_large = _probe("store", big_path, big_ns)
    runs: dict[str, list[dict[str, Any]]] = {"small": [], "large": [], "raw_small": [],
                                             "raw_large": []}
    for _ in range(rounds):  # interleaved: ours, then Chroma's floor on the same files
        for size, path, ns in (("small", small_path, small_ns), ("large", big_path, big_ns)):
            runs[size].append(_probe("store", path, ns))
            if index == "chroma":
                runs[f"raw_{size}"].append(_probe("rawdir", *_chroma_floor(path, ns)))
    out: dict[str, Any] = {"index": index, "big": big, "small_n": _SMALL, "namespaces": namespaces,
           "small_load_s": small_load, "big_load_s": big_load, "rounds": rounds,
           "first_small": first_small, "first_large": first_large,
           **{k: _median_probe(v) for k, v in runs.items() if v}}
    out["open_ratio"] = out["large"]["open_retrieve_s"] / out["small"]["open_retrieve_s"]
    out["rss_ratio"] = out["large"]["peak_rss_mb"] / out["small"]["peak_rss_mb"]
    if index == "chroma":
        out["floor_ratio"] = (out["large"]["open_retrieve_s"]
                              / out["raw_large"]["open_retrieve_s"])
        out["floor_ratio_small"] = (out["small"]["open_retrieve_s"]
                                    / out["raw_small"]["open_retrieve_s"])
    return out


def _converse(store: MemoryStore, texts: Sequence[str]) -> None:
    """``observe`` each text as a turn, as the adapters do: a user (a named speaker) and
    the assistant in turn, one conversation, a new session every 20 turns, a minute apart."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i, text in enumerate(texts):
        user = i % 2 == 0
        store.observe("user" if user else "assistant", text, speaker="Ana" if user else None,
                      conversation_id="conv-1", session_id=f"s{i // 20}", turn=i,
                      at=start + timedelta(minutes=i))


def memory(n: int, *, workdir: Path) -> dict[str, Any]:
    """Section 4: one namespace of n memories (Chroma index) against raw chromadb, the
    store filled with ``add_many`` (``store``) and, turn by turn, with ``observe``
    (``observe``: what the framework adapters write)."""
    texts = make_texts(n, seed=41)
    emb = HashingEmbedder()
    probes: dict[str, Any] = {}
    for kind, fill in (("store", _fill), ("observe", _converse)):
        path = workdir / f"rss-{kind}"
        with MemoryStore.open(path, index="chroma", embedder=emb, budget=10**9) as store:
            fill(store, texts)
        probes[kind] = _probe("store", path)
    _raw_collection(workdir / "rss-raw", emb.embed(texts))
    raw = _probe("raw", workdir / "rss-raw")
    return {"n": n, **probes, "raw": raw,
            "rss_ratio": probes["store"]["peak_rss_mb"] / raw["peak_rss_mb"],
            "observe_rss_ratio": probes["observe"]["peak_rss_mb"] / raw["peak_rss_mb"]}


# --- the run --------------------------------------------------------------------------------


class _Steps:
    """Counts finished sections for ``progress`` (stage ``sections``; none reported when
    no section of 1–4 runs: sections 5–8 report their own stages)."""

    def __init__(self, progress: ProgressFn | None, total: int) -> None:
        self.progress, self.total, self.done = progress if total else None, total, 0
        report(self.progress, "sections", 0, total)

    def __call__(self, result: dict[str, Any]) -> dict[str, Any]:
        self.done += 1
        report(self.progress, "sections", self.done, self.total)
        return result


@contextmanager
def _workdir(base: Path | None) -> Iterator[Path]:
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
        yield base
        return
    with tempfile.TemporaryDirectory(prefix="mars-bench-store-") as tmp:
        yield Path(tmp)


def run(n: int = 10_000, *, block: int = 20, rounds: int = 10, big: int = 1_000_000,
        namespaces: int = 10_000, indexes: Sequence[IndexKind] = ("chroma", "numpy"),
        quick: bool = False, workdir: Path | None = None,
        model: Embedder | None = None, plan: history.Plan | None = None,
        sections: Collection[str] = SECTIONS,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """The ``sections`` named (:data:`SECTIONS`; ``big=0`` skips the scale one;
    ``quick``: the memory section runs at ``n`` too but the bulk section at n/4, and
    the bulk and scale sections measure one round;
    ``model``: the bulk section runs again at n/5 with it; ``plan``: the sizes of
    sections 5–8, None skips them; ``progress``: stage ``sections``, one step per index
    and section of 1–4, then the stages of sections 5–8 — ``observe`` and ``add`` as
    their stores fill, ``loop`` as the agent loop's rounds run)."""
    os.environ.setdefault("MARS_EMBEDDER", "hashing")
    big = big if "scale" in sections else 0
    model = model if "bulk" in sections else None
    per_index = ("cost" in sections) + ("bulk" in sections) + (model is not None) + bool(big)
    step = _Steps(progress, len(indexes) * per_index + ("chroma" in indexes
                                                         and "memory" in sections))
    with _workdir(workdir) as base:
        result: dict[str, Any] = {
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
        if "cost" in sections:
            result["cost"] = [step(cost(i, n, block=block, rounds=rounds, workdir=base))
                              for i in indexes]
        if "bulk" in sections:
            result["bulk"] = [step(bulk(i, n // 4 if quick else n, workdir=base,
                                        rounds=1 if quick else _BULK_ROUNDS))
                              for i in indexes]
        if model is not None:
            result["bulk"] += [step(bulk(i, n // 5, workdir=base, embedder=model))
                               for i in indexes]
        if "chroma" in indexes and "memory" in sections:
            result["memory"] = step(memory(n, workdir=base))
        if big:
            result["scale"] = [step(scale(big, namespaces, index=i, workdir=base,
                                          rounds=1 if quick else _ROUNDS))
                               for i in indexes]
        if plan is not None:
            result["history"] = history.run(plan.only(sections), workdir=base,
                                            progress=progress)
    result["peak_rss_mb_of_the_run"] = resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def table(result: dict[str, Any]) -> str:
    """The result as markdown tables (of the sections that ran)."""
    lines: list[str] = []
    if "cost" in result:
        lines += _cost_table(result["cost"])
    if "bulk" in result:
        lines += _bulk_table(result["bulk"])
    if "memory" in result:
        m = result["memory"]
        lines += ["", f"One namespace of {m['n']} memories: peak RSS "
                      f"{m['store']['peak_rss_mb']:.0f} MB (store filled by add_many, Chroma "
                      f"index), {m['observe']['peak_rss_mb']:.0f} MB (filled by observe) vs "
                      f"{m['raw']['peak_rss_mb']:.0f} MB (raw chromadb): "
                      f"{m['rss_ratio']:.2f}x and {m['observe_rss_ratio']:.2f}x"]
    for s in result.get("scale", []):
        lines += ["", f"{s['index']}: {s['big']} memories over {s['namespaces']} namespaces "
                      f"(loaded in {s['big_load_s']:.0f} s): open + first retrieve "
                      f"{s['large']['open_retrieve_s']:.3f} s vs "
                      f"{s['small']['open_retrieve_s']:.3f} s on 1,000 memories "
                      f"({s['open_ratio']:.2f}x; the first open after the load: "
                      f"{s['first_large']['open_retrieve_s']:.3f} s vs "
                      f"{s['first_small']['open_retrieve_s']:.3f} s); peak RSS "
                      f"{s['large']['peak_rss_mb']:.0f} vs {s['small']['peak_rss_mb']:.0f} MB "
                      f"({s['rss_ratio']:.2f}x); imports {s['large']['import_s']:.2f} s apart"]
        if "raw_large" in s:
            lines.append(
                f"raw chromadb on the same directories (a fresh process: client, "
                f"get_collection, one query): {s['raw_large']['open_retrieve_s']:.3f} s "
                f"({s['big']} memories) and {s['raw_small']['open_retrieve_s']:.3f} s "
                f"({s['small_n']}); the store's open + first retrieve is "
                f"{s['floor_ratio']:.2f}x and {s['floor_ratio_small']:.2f}x that floor "
                f"(medians of {s.get('rounds', 1)} interleaved probes)")
    return "\n".join(lines)


def _cost_table(cost: Sequence[dict[str, Any]]) -> list[str]:
    """Section 1 as markdown."""
    lines = ["| index | n | add / raw add | read_only / raw query | access / read_only "
             "| observe / add | add+query / raw | fill s |", "|---|---|---|---|---|---|---|---|"]
    for c in cost:
        lines.append(f"| {c['index']} | {c['n']} | {c['add_ratio']:.2f} ({c['add_ms']:.2f} / "
                     f"{c['raw_add_ms']:.2f} ms) | {c['read_only_ratio']:.2f} "
                     f"({c['read_only_ms']:.2f} / {c['raw_query_ms']:.2f} ms) | "
                     f"{c['access_ratio']:.2f} | {c['observe_ratio']:.2f} | "
                     f"{c['mix_ratio']:.2f} | {c['fill_s']:.1f} |")
    return lines


def _bulk_table(bulk: Sequence[dict[str, Any]]) -> list[str]:
    """Section 2 as markdown."""
    lines = ["", "| index | embedder | n | add_many /s | single adds /s | ratio "
                 "| floor /s (raw chromadb bulk, or the model's batch) | ceiling |",
             "|---|---|---|---|---|---|---|---|"]
    for b in bulk:
        floor = b.get("raw_bulk_per_s", b.get("embed_batch_per_s"))
        raw = f"{floor:.0f} | {b['ceiling']:.1f}" if floor is not None else "– | –"
        lines.append(f"| {b['index']} | {b['embedder']} | {b['n']} | "
                     f"{b['add_many_per_s']:.0f} | {b['singles_per_s']:.0f} | "
                     f"{b['throughput_ratio']:.1f} | {raw} |")
    return lines


def main(out: str | os.PathLike[str] | None = None, *, n: int = 10_000, big: int = 1_000_000,
         namespaces: int = 10_000, quick: bool = False,
         indexes: Sequence[IndexKind] = ("chroma", "numpy"),
         plan: history.Plan | None = None, sections: Collection[str] = SECTIONS,
         progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run and print (and write ``storage.json``, the plots of
    :func:`mars_core.bench.plots.plot_storage` and ``storage.md`` to ``out``, made before
    the run)."""
    folder = None if out is None else results_dir(out)
    if folder is not None:
        pyplot()  # the plots' library (the bench extra), checked before the run
    if quick:
        n, big, namespaces = min(n, 600), min(big, 4_000), min(namespaces, 40)
    result = run(n, big=big, namespaces=namespaces, indexes=indexes, quick=quick,
                 block=5 if quick else 20, rounds=2 if quick else 10,
                 model=None if quick else _model(),  # the default embedder, as users run it
                 plan=plan, sections=sections, progress=progress)
    text = "\n\n".join(part for part in (table(result), history.table(
        result.get("history", {}))) if part)
    print(text)
    if folder is not None:
        (folder / "storage.json").write_text(json.dumps(result, indent=1))
        images = "".join(f"\n![{p.stem.replace('_', ' ')}]({p.name})\n"
                         for p in plot_storage(result, folder))
        (folder / "storage.md").write_text(text + "\n" + images)
    return result
