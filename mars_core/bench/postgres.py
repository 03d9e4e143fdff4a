"""``mars bench postgres``: PostgreSQL with a Chroma server against the SQLite default.

Three sections, on a throwaway PostgreSQL server (durable: ``fsync`` on, as SQLite's
``synchronous="full"`` is) and a ``chroma run`` server the run starts on this machine
(:mod:`mars_core.bench.postgres_server`, :mod:`mars_core.bench.chroma_server`), with
the hashing embedder (the store is timed, not a model):

1. **Latency per call**: a store on PostgreSQL with the index on the Chroma server
   against the default store (``MemoryStore.open(path)``: SQLite with embedded Chroma),
   both filled with ``n`` memories, then in alternating blocks of ``block`` calls (so
   both see the same machine state): ``add``, ``retrieve`` and ``observe``. Medians in
   ms and the ratio PostgreSQL / SQLite per call.
2. **The per-call namespace check**: how a process knows that another one changed a
   namespace it has cached. A store on PostgreSQL reads each namespace's committed
   version once per call (one read transaction) and reloads the namespace when it
   moved. Measured: the check alone (in a row) and its query alone in autocommit (one
   round trip, the floor); ``add`` and ``retrieve`` with it and with it turned off (not
   safe beside other processes: the baseline), alternating call by call;
   and what LISTEN/NOTIFY would cost instead: draining a listening connection before
   each call, ``pg_notify`` in each commit, and how long after a commit returned the
   notification reached the listener (the window in which a notification-only cache
   would serve what another process had already changed or erased).
3. **Throughput of writer processes**: 1, 2, 4 and 8 processes (``--writers``), each on
   a namespace of its own, each adding ``adds`` memories to the PostgreSQL store after
   a common start signal (a line on its stdin); adds per second over the whole run
   (from the signal to the last process's end), and the ratio to one process. A machine
   with few cores flattens the curve early: the figure says where.
4. **As the history grows**: ``mars bench store``'s sections 5–8
   (:mod:`mars_core.bench.history`) with the records on PostgreSQL and the index on the
   Chroma server, and the process-count row: 1 and 8 processes serving the same 50
   namespaces, the peak RSS of each against one alone.

Examples:
    >>> texts = _texts(3, seed=1)
    >>> len(texts), texts == _texts(3, seed=1)
    (3, True)
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from mars_core.bench import history
from mars_core.bench.chroma_server import chroma_server
from mars_core.bench.postgres_server import postgres_server
from mars_core.bench.report import results_dir, write_results
from mars_core.bench.together import together
from mars_core.embeddings import HashingEmbedder
from mars_core.progress import ProgressFn
from mars_core.store import MemoryStore

__all__ = ["latency", "main", "namespace_check", "notify_costs", "run", "table",
           "throughput"]

_WORDS = ("ana bo carla lisbon porto tea jazz river bridge meeting project deadline "
          "birthday dinner octopus nurse sister office train museum guitar garden").split()
KEY = bytes(range(32))

_WRITER = """
import sys, time
from mars_core import MemoryStore
from mars_core.embeddings import HashingEmbedder
from mars_core.progress import ProgressFn

url, index, name, adds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = MemoryStore.open(url, index=index, embedder=HashingEmbedder(),
                         audit_key=bytes(range(32)), budget=10**9)
store.add("warm up", namespace=name)
print("ready", flush=True)
sys.stdin.readline()
for i in range(adds):
    store.add(f"{name} memory {i} about the garden and the trains", namespace=name)
print(time.time(), flush=True)
store.close()
"""


def _texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"note {i}: " + " ".join(rng.choice(_WORDS) for _ in range(8)) for i in range(n)]


def _ms(samples: Sequence[float]) -> float:
    return 1000 * statistics.median(samples) if samples else 0.0


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _one_of_each(store: MemoryStore, text: str, into: dict[str, list[float]]) -> None:
    into["add"].append(_timed(lambda: store.add(text, namespace="bench")))
    into["retrieve"].append(_timed(lambda: store.retrieve(text, namespace="bench", k=5)))
    into["observe"].append(_timed(lambda: store.observe("user", text, namespace="bench")))


def latency(stores: dict[str, MemoryStore], n: int, *, block: int,
            rounds: int) -> dict[str, Any]:
    """Median ms per call of each store, measured in alternating blocks."""
    texts = _texts(n)
    for store in stores.values():
        store.add_many(texts, namespace="bench")
    queries = _texts(block * rounds, seed=11)
    samples: dict[str, dict[str, list[float]]] = {
        k: {"add": [], "retrieve": [], "observe": []} for k in stores}
    for r in range(rounds):
        for kind, store in stores.items():
            for i in range(block):
                _one_of_each(store, queries[r * block + i], samples[kind])
    out: dict[str, Any] = {k: {op: _ms(v) for op, v in ops.items()}
                           for k, ops in samples.items()}
    base, other = list(stores)
    out["ratio"] = {op: out[other][op] / out[base][op] if out[base][op] else 0.0
                    for op in ("add", "retrieve", "observe")}
    out["n"], out["calls"] = n, block * rounds
    return out


def namespace_check(url: str, n: int, *, calls: int) -> dict[str, Any]:
    """Median ms of the per-call namespace version check alone, and of ``add`` and
    ``retrieve`` with it and without it (one store of ``n``): the two alternate call by
    call, in pairs whose order alternates too, so both meet the same machine; the
    check's cost is the median of the pairs' differences."""
    store = MemoryStore.open(url, audit_key=KEY, embedder=HashingEmbedder(), budget=10**9)
    cache = store._engine.cache
    check = cache._version  # the check every call makes (Engine._version)
    assert check is not None, "a store on PostgreSQL checks its namespaces"
    samples: dict[str, list[float]] = {f"{op} {mode}": [] for op in ("add", "retrieve")
                                       for mode in ("with", "without")}
    samples["check"] = []
    try:
        store.add_many(_texts(n), namespace="bench")
        for i, text in enumerate(_texts(calls, seed=13)):
            for op, call in (("add", partial(store.add, text, namespace="bench")),
                             ("retrieve", partial(store.retrieve, text, namespace="bench",
                                                  k=5))):
                for mode in ("with", "without") if i % 2 else ("without", "with"):
                    cache._version = check if mode == "with" else None
                    samples[f"{op} {mode}"].append(_timed(call))
        cache._version = check
        # the check alone, in a row (between calls, the machine's scheduling of a process
        # that has just computed a ranking weighs more than the round trips)
        samples["check"] = [_timed(partial(check, "bench")) for _ in range(calls)]
    finally:
        cache._version = check
        store.close()
    samples["select"] = _bare_select(url, calls)
    out: dict[str, Any] = {k: _ms(v) for k, v in samples.items()}
    for op in ("add", "retrieve"):
        paired = [a - b for a, b in zip(samples[f"{op} with"], samples[f"{op} without"],
                                        strict=True)]
        out[f"{op} cost"] = _ms(paired)
        out[f"{op} share"] = out[f"{op} cost"] / out[f"{op} with"] if out[f"{op} with"] else 0.0
    out["n"], out["calls"] = n, calls
    return out


def _bare_select(url: str, count: int) -> list[float]:
    """Seconds of the check's query alone, one statement in autocommit (one round trip):
    the floor under the check's read transaction."""
    import psycopg

    from mars_core.storage.postgres import _split

    libpq, schema = _split(url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        sql = f'SELECT version FROM "{schema}".namespaces WHERE name = %s'
        return [_timed(partial(conn.execute, sql, ("bench",))) for _ in range(count)]


def notify_costs(url: str, count: int) -> dict[str, Any]:
    """What LISTEN/NOTIFY would cost instead of the check: median ms to drain a listening
    connection before a call, of ``pg_notify`` in a commit, and the delay from a commit's
    return to the listener holding its notification (median, 99th percentile, max)."""
    import psycopg

    from mars_core.storage.postgres import _split

    libpq, _schema = _split(url)
    drain, send, lag = [], [], []
    with psycopg.connect(libpq, autocommit=True) as listener, \
            psycopg.connect(libpq, autocommit=True) as writer:
        listener.execute("LISTEN mars_bench")
        for i in range(count):
            drain.append(_timed(lambda: list(listener.notifies(timeout=0))))
            with writer.transaction():
                writer.execute("SELECT 1")
                send.append(_timed(partial(writer.execute, "SELECT pg_notify('mars_bench', %s)",
                                           (f"ns{i}",))))
            returned = time.perf_counter()
            if not list(listener.notifies(timeout=10, stop_after=1)):
                raise RuntimeError("a notification did not arrive within 10 s")
            lag.append(time.perf_counter() - returned)
    lag.sort()
    return {"drain": _ms(drain), "notify": _ms(send), "lag": _ms(lag),
            "lag_p99": 1000 * lag[min(len(lag) - 1, int(0.99 * len(lag)))],
            "lag_max": 1000 * lag[-1], "count": count}


def throughput(url: str, index: str, writers: Sequence[int], adds: int) -> list[dict[str, Any]]:
    """Adds per second of ``w`` writer processes on distinct namespaces, for each ``w``."""
    env = {**os.environ, "MARS_EMBEDDER": "hashing"}
    rows: list[dict[str, Any]] = []
    for w in writers:
        tag = uuid.uuid4().hex[:6]
        start, lines = together([[sys.executable, "-c", _WRITER, url, index,
                                  f"w{tag}-{i}", str(adds)] for i in range(w)], env)
        ends = [float(line) for line in lines]
        seconds = max(ends) - start
        rows.append({"writers": w, "adds": w * adds, "seconds": seconds,
                     "adds_per_s": w * adds / seconds})
    one = rows[0]["adds_per_s"] if rows else 1.0
    for row in rows:
        row["vs_one"] = row["adds_per_s"] / one
    return rows


def run(n: int = 2000, *, block: int = 20, rounds: int = 5, adds: int = 200,
        writers: Sequence[int] = (1, 2, 4, 8), plan: history.Plan | None = None,
        workers: tuple[int, int] = (50, 1000),
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """Every section on servers started for the run (``plan``: the sizes of section 4,
    None skips it; ``workers``: the process-count row's namespaces and turns each;
    ``progress``: the stages of section 4 and the row's fill, as ``mars bench store``
    reports them)."""
    os.environ.setdefault("MARS_EMBEDDER", "hashing")
    with tempfile.TemporaryDirectory(prefix="mars-bench-pg-") as tmp, \
            postgres_server(durable=True) as pg, chroma_server(Path(tmp)) as chroma:
        url = pg.url()
        index = f"chroma://{chroma.host}:{chroma.port}?prefix=bench_"
        stores = {"sqlite+chroma": MemoryStore.open(Path(tmp) / "sqlite", audit_key=KEY,
                                                    embedder=HashingEmbedder(), budget=10**9),
                  "postgres+chroma-server": MemoryStore.open(
                      url + "&schema=latency", index=index, audit_key=KEY,
                      embedder=HashingEmbedder(), budget=10**9)}
        try:
            lat = latency(stores, n, block=block, rounds=rounds)
        finally:
            for store in stores.values():
                store.close()
        check = namespace_check(url + "&schema=checks", n, calls=3 * block * rounds)
        check["notify"] = notify_costs(url, block * rounds)
        tput = throughput(url + "&schema=writers",
                          f"chroma://{chroma.host}:{chroma.port}?prefix=writers_",
                          writers, adds)
        grown: dict[str, Any] = {}
        if plan is not None:
            def where(name: str) -> tuple[str, str]:
                return (f"{url}&schema=h_{name}",
                        f"chroma://{chroma.host}:{chroma.port}?prefix=h{name}_")
            grown = history.run(plan, workdir=Path(tmp), where=where, progress=progress)
            grown["workers"] = history.workers((1, max(writers)), *workers, where=where,
                                               progress=progress)
    return {"machine": {"cpus": os.cpu_count()}, "latency": lat, "check": check,
            "throughput": tput, **({"history": grown} if grown else {})}


def table(result: dict[str, Any]) -> str:
    """The result as markdown tables."""
    lat = result["latency"]
    lines = [f"Latency per call, median ms ({lat['calls']} calls each, store of {lat['n']}):",
             "", "| call | SQLite + embedded Chroma | PostgreSQL + Chroma server | ratio |",
             "|---|---|---|---|"]
    for op in ("add", "retrieve", "observe"):
        lines.append(f"| {op} | {lat['sqlite+chroma'][op]:.2f} | "
                     f"{lat['postgres+chroma-server'][op]:.2f} | {lat['ratio'][op]:.2f} |")
    check = result["check"]
    notify = check["notify"]
    lines += ["", f"The per-call namespace version check, PostgreSQL + numpy, median ms "
                  f"({check['calls']} calls each, store of {check['n']}):", "",
              "| call | with the check | without (not safe beside other processes) | "
              "paired difference | the check's share |", "|---|---|---|---|---|"]
    for op in ("add", "retrieve"):
        lines.append(f"| {op} | {check[op + ' with']:.2f} | {check[op + ' without']:.2f} | "
                     f"{check[op + ' cost']:.2f} | {100 * check[op + ' share']:.1f}% |")
    lines += ["", f"The check alone, {check['calls']} in a row: {check['check']:.3f} ms (one "
                  f"read transaction per namespace per call: BEGIN, SELECT, COMMIT); its "
                  f"SELECT alone in autocommit (one round trip): {check['select']:.3f} ms. "
                  f"LISTEN/NOTIFY instead: draining the listener "
                  f"before a call {notify['drain']:.4f} ms, pg_notify in a commit "
                  f"{notify['notify']:.3f} ms, the notification reached the listener "
                  f"{notify['lag']:.3f} ms after the commit returned (99th percentile "
                  f"{notify['lag_p99']:.3f} ms, max {notify['lag_max']:.3f} ms, "
                  f"{notify['count']} commits)."]
    lines += ["", f"Writer processes on distinct namespaces ({result['machine']['cpus']} "
                  "cores), PostgreSQL + Chroma server:", "",
              "| writers | adds | s | adds/s | vs one |", "|---|---|---|---|---|"]
    for row in result["throughput"]:
        lines.append(f"| {row['writers']} | {row['adds']} | {row['seconds']:.1f} | "
                     f"{row['adds_per_s']:.0f} | {row['vs_one']:.2f} |")
    if "history" in result:
        lines += ["", "As the history grows (PostgreSQL + Chroma server):", "",
                  history.table(result["history"])]
    return "\n".join(lines)


def main(out: str | os.PathLike[str] | None = None, *, quick: bool = False,
         writers: Sequence[int] = (1, 2, 4, 8),
         plan: history.Plan | None = None,
         worker_turns: int | None = None,
         progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run and print (and write ``postgres.json`` and ``postgres.md`` to ``out``);
    ``worker_turns``: the turns of each namespace of the process-count row (default
    1,000 over 50 namespaces, 100 over 4 with ``quick``)."""
    folder = None if out is None else results_dir(out)
    namespaces, turns = (4, 100) if quick else (50, 1000)
    result = run(200 if quick else 2000, block=5 if quick else 20, rounds=2 if quick else 5,
                 adds=10 if quick else 200, writers=writers, plan=plan,
                 workers=(namespaces, worker_turns or turns), progress=progress)
    text = table(result)
    print(text)
    write_results(folder, "postgres", result, text)
    return result
