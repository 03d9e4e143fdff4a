"""``mars bench store`` sections 5–8: a store measured as its history grows.

What a namespace costs must follow what its budget holds, not how long its user has
talked (DESIGN §3 "Search runs where the data lives"). Each section compares the store
with raw ``chromadb`` holding the same vectors, measured in the same run (medians of
interleaved fresh processes; the machines are noisy, so compare ratios):

5. **A long-lived user**: one namespace filled turn by turn (``observe_many`` in chunks,
   which stores exactly what ``observe`` one by one would) with the shipped defaults
   (``MemoryStore.open(path)``: an 8,000-token budget, LRU, the Chroma index), at each
   size of ``sizes``. A fresh process times ``MemoryStore.open`` + the first
   ``render_context`` and reports its peak RSS; a fresh process opening a raw chromadb
   collection of the same turns' vectors and querying it once is the baseline.
6. **Many namespaces**: ``namespaces`` namespaces of ``turns`` observed turns each; a
   fresh process opens the store and calls ``render_context`` in one namespace, then in
   every other one, reporting its peak RSS after the first and after the last.
7. **The budget lifted**: one namespace of ``n`` memories with no budget to speak of
   (the active set is the whole namespace): open + first ``retrieve``, and peak RSS,
   against raw chromadb.
8. **The agent loop**: on a namespace of ``history`` turns, ``rounds`` rounds of one
   ``observe`` then one ``render_context`` (what every framework adapter does), against
   one raw chromadb ``add`` then one ``query`` per round, interleaved in blocks.

The turns are synthetic conversation (:func:`conversation`): a user and an assistant,
templates that the extractor reads (where people live, what they like) over a Zipfian
vocabulary, so posting lists and extracted facts have realistic sizes. Vectors are the
hashing embedder's on both sides (no model runs).

Examples:
    >>> turns = conversation(4)
    >>> [role for role, _ in turns]
    ['user', 'assistant', 'user', 'assistant']
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mars_core.bench.together import run_python, together
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import ValidationError
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["SECTIONS", "Plan", "Where", "agent_loop", "budget_lifted", "conversation", "long_lived",
           "many_namespaces", "on_disk", "run", "table", "workers"]

_SYLLABLES = ("ka lo mi ne ru sa ti vo be da fe gi ho ju ma no pe qui ra so tu ve wi xa "
              "yo ze al en ir on ul ar es").split()
_NAMES = ("Ana Bo Carla Dev Elif Farid Greta Hugo Ines Jonas Kemal Lena Mateo Nadia Oskar "
          "Priya Quinn Rosa Sami Tomas").split()
_CITIES = ("Lisbon Porto Berlin Madrid Oslo Lyon Turin Krakow Ghent Malmo Leeds Cork").split()
_THINGS = ("jazz hiking sushi chess painting running tea gardening cycling opera "
           "pottery climbing baking poetry tennis").split()
_RELATIONS = ("sister brother friend cousin colleague neighbour mum dad").split()


def _vocabulary(n: int, rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < n:
        words["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def conversation(n: int, seed: int = 5) -> list[tuple[str, str]]:
    """``n`` turns ``(role, text)``, the user's and the assistant's in turn (see the
    module); deterministic for a seed.

    Examples:
        >>> conversation(3) == conversation(3)
        True
    """
    rng = random.Random(seed)
    vocab = _vocabulary(3000, rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]  # Zipf's law

    def filler(k: int) -> str:
        return " ".join(rng.choices(vocab, weights, k=k))

    out: list[tuple[str, str]] = []
    for i in range(n):
        if i % 2:
            out.append(("assistant", f"That sounds {rng.choice(('great', 'hard', 'fun'))}, "
                                     f"tell me more about the {filler(rng.randint(2, 6))}."))
            continue
        kind = rng.random()
        if kind < 0.1:
            text = (f"My {rng.choice(_RELATIONS)} {rng.choice(_NAMES)} lives in "
                    f"{rng.choice(_CITIES)} now")
        elif kind < 0.2:
            text = f"I really like {rng.choice(_THINGS)} these days, {filler(3)}"
        elif kind < 0.3:
            text = f"Do you remember what {rng.choice(_NAMES)} said about {filler(2)}?"
        else:
            text = (f"Yesterday I went to the {filler(2)} with {rng.choice(_NAMES)} and we "
                    f"talked about {filler(rng.randint(4, 12))}")
        out.append(("user", text))
    return out


def _fill(store: MemoryStore, turns: Sequence[tuple[str, str]], namespace: str,
          start: datetime, progress: ProgressFn | None = None, *,
          offset: int = 0, total: int | None = None) -> None:
    """Observe ``turns`` into ``namespace`` in chunks of 1,000 (one conversation, a new
    session every 20 turns, a minute apart)."""
    for i in range(0, len(turns), 1000):
        chunk = turns[i:i + 1000]
        store.observe_many([
            {"role": role, "text": text, "speaker": "Ana" if role == "user" else None,
             "conversation_id": "conv-1", "session_id": f"s{(i + j) // 20}", "turn": i + j,
             "at": start + timedelta(minutes=i + j)}
            for j, (role, text) in enumerate(chunk)], namespace=namespace)
        report(progress, "observe", offset + i + len(chunk), total or len(turns))


def _fill_each(where: Where, store_name: str, names: Sequence[str],
               turns: Sequence[tuple[str, str]], progress: ProgressFn | None) -> None:
    """The store ``store_name`` with ``turns`` observed into each of ``names``."""
    with _open(where, store_name, cache_namespaces=8) as store:
        for k, name in enumerate(names):
            _fill(store, turns, name, _START, progress, offset=k * len(turns),
                  total=len(names) * len(turns))


_PROBE = textwrap.dedent("""
    import json, sys, time
    kind, path, query, index = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5]
    names = sys.argv[4].split(",")

    def peak_mb():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status
                        if line.startswith("VmHWM:")) / 1024

    if kind == "raw":
        import chromadb
        from chromadb.config import Settings
        from mars_core import HashingEmbedder
        vec = HashingEmbedder().embed([query])[0]
        t0 = time.perf_counter()
        col = chromadb.PersistentClient(path=path, settings=Settings(
            anonymized_telemetry=False)).get_collection("raw", embedding_function=None)
        col.query(query_embeddings=[vec.tolist()], n_results=64, include=["distances"])
        print(json.dumps({"open_read_s": time.perf_counter() - t0, "peak_rss_mb": peak_mb()}))
        sys.exit(0)
    from mars_core import HashingEmbedder, MemoryStore
    import chromadb  # the index's client: imported before the clock starts
    t0 = time.perf_counter()
    store = MemoryStore.open(path, index=index, embedder=HashingEmbedder())
    if kind == "retrieve":
        store.retrieve(query, namespace=names[0], read_only=True)
    else:
        store.render_context(query, namespace=names[0])
    first_s, first_mb = time.perf_counter() - t0, peak_mb()
    for name in names[1:]:
        store.render_context(query, namespace=name)
    all_s = time.perf_counter() - t0
    print(json.dumps({"open_read_s": first_s, "peak_rss_mb": first_mb, "all_s": all_s,
                      "peak_rss_all_mb": peak_mb(), "held": store.resident(names[0])[names[0]]}))
    store.close()
""")

_QUERY = "Where does Ana's sister live and what did Greta say about jazz?"


SECTIONS = ("long-lived", "many", "lifted", "loop")
"""The names of sections 5-8, as ``mars bench store --sections`` takes them."""


Where = Callable[[str], tuple[str, str]]
"""Where the store named so lives: ``(location, index)`` as ``MemoryStore.open`` takes
them (a directory and ``"auto"``; a PostgreSQL URL and a Chroma server's URL)."""


def on_disk(workdir: Path) -> Where:
    """Stores in directories of ``workdir`` with the default index (embedded Chroma).

    Examples:
        >>> on_disk(Path("/tmp/w"))("user-1")
        ('/tmp/w/user-1', 'auto')
    """
    return lambda name: (str(workdir / name), "auto")


def _open(where: Where, name: str, **kwargs: Any) -> MemoryStore:
    location, index = where(name)
    return MemoryStore.open(location, index=index, embedder=HashingEmbedder(), **kwargs)


def _probe(kind: str, store: tuple[str, str], names: Sequence[str] = ("default",)
           ) -> dict[str, Any]:
    env = {**os.environ, "MARS_EMBEDDER": "hashing"}
    location, index = store
    stdout = run_python(["-c", _PROBE, kind, location, _QUERY, ",".join(names), index], env)
    out: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return out


def _raw(path: Path, texts: Sequence[str]) -> None:
    """A raw chromadb collection of ``texts``' hashing vectors (cosine)."""
    import chromadb
    from chromadb.config import Settings

    vectors = HashingEmbedder().embed(list(texts))
    client = chromadb.PersistentClient(path=str(path), settings=Settings(
        anonymized_telemetry=False))
    col = client.get_or_create_collection("raw", embedding_function=None,
                                          configuration={"hnsw": {"space": "cosine"}})
    batch = int(client.get_max_batch_size())
    for i in range(0, len(vectors), batch):
        col.add(ids=[str(j) for j in range(i, min(len(vectors), i + batch))],
                embeddings=vectors[i:i + batch])


def _medians(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float)]
    return {k: statistics.median(r[k] for r in runs) for k in keys}


_START = datetime(2026, 1, 1, tzinfo=UTC)


def long_lived(sizes: Sequence[int], *, workdir: Path, where: Where | None = None,
               rounds: int = 3, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Section 5 (see the module): one row per size."""
    where = where or on_disk(workdir)
    rows = []
    turns = conversation(max(sizes))
    for size in sizes:
        raw = workdir / f"user-raw-{size}"
        with _open(where, f"user{size}") as store:
            _fill(store, turns[:size], "default", _START, progress)
            stats = store.stats()["namespaces"]["default"]
        _raw(raw, [t for _, t in turns[:size]])
        ours, base = [], []
        for _ in range(rounds):  # interleaved fresh processes
            ours.append(_probe("render", where(f"user{size}")))
            base.append(_probe("raw", (str(raw), "")))
        o, b = _medians(ours), _medians(base)
        rows.append({"turns": size, "active": stats["active"], "archived": stats["archived"],
                     "open_render_s": o["open_read_s"], "raw_open_query_s": b["open_read_s"],
                     "time_ratio": o["open_read_s"] / b["open_read_s"],
                     "peak_rss_mb": o["peak_rss_mb"], "raw_peak_rss_mb": b["peak_rss_mb"],
                     "rss_ratio": o["peak_rss_mb"] / b["peak_rss_mb"],
                     "runs_s": [r["open_read_s"] for r in ours]})
    return {"rows": rows, "rss_flat": rows[-1]["rss_ratio"] / rows[0]["rss_ratio"]}


def many_namespaces(namespaces: int, turns: int, *, workdir: Path, where: Where | None = None,
                    progress: ProgressFn | None = None) -> dict[str, Any]:
    """Section 6 (see the module)."""
    where = where or on_disk(workdir)
    names = [f"user-{i:04d}" for i in range(namespaces)]
    _fill_each(where, f"many{namespaces}x{turns}", names, conversation(turns, seed=9),
               progress)
    probe = _probe("render", where(f"many{namespaces}x{turns}"), names)
    return {"namespaces": namespaces, "turns": turns, "after_one_mb": probe["peak_rss_mb"],
            "after_all_mb": probe["peak_rss_all_mb"], "all_s": probe["all_s"],
            "rss_ratio": probe["peak_rss_all_mb"] / probe["peak_rss_mb"]}


def budget_lifted(n: int, *, workdir: Path, where: Where | None = None, rounds: int = 3,
                  progress: ProgressFn | None = None) -> dict[str, Any]:
    """Section 7 (see the module)."""
    where = where or on_disk(workdir)
    raw = workdir / f"lifted-raw-{n}"
    turns = conversation(n, seed=11)
    with _open(where, f"lifted{n}", budget=10**9) as store:
        for i in range(0, n, 1000):  # memories, not turns: add_many of the texts
            store.add_many([t for _, t in turns[i:i + 1000]])
            report(progress, "add", min(n, i + 1000), n)
        active = store.stats()["namespaces"]["default"]["active"]
    _raw(raw, [t for _, t in turns])
    ours, base = [], []
    for _ in range(rounds):
        ours.append(_probe("retrieve", where(f"lifted{n}")))
        base.append(_probe("raw", (str(raw), "")))
    o, b = _medians(ours), _medians(base)
    return {"n": n, "active": active, "open_retrieve_s": o["open_read_s"],
            "raw_open_query_s": b["open_read_s"], "time_ratio": o["open_read_s"] /
            b["open_read_s"], "peak_rss_mb": o["peak_rss_mb"],
            "raw_peak_rss_mb": b["peak_rss_mb"], "rss_ratio": o["peak_rss_mb"] /
            b["peak_rss_mb"]}


def agent_loop(history: int, rounds: int, *, workdir: Path, where: Where | None = None,
               block: int = 10, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Section 8 (see the module)."""
    import chromadb
    from chromadb.config import Settings

    where = where or on_disk(workdir)
    turns = conversation(history + rounds, seed=13)
    raw_path = workdir / f"loop-raw-{history}"
    emb = HashingEmbedder()
    _raw(raw_path, [t for _, t in turns[:history]])
    col = chromadb.PersistentClient(path=str(raw_path), settings=Settings(
        anonymized_telemetry=False)).get_collection("raw", embedding_function=None)
    samples: dict[str, list[float]] = {"store": [], "raw": []}
    with _open(where, f"loop{history}") as store:
        _fill(store, turns[:history], "default", _START, progress)
        at = _START + timedelta(minutes=history)
        for start in range(0, rounds, block):
            for i in range(start, min(rounds, start + block)):  # the store's block
                role, text = turns[history + i]
                t0 = time.perf_counter()
                store.observe(role, text, speaker="Ana" if role == "user" else None,
                              conversation_id="conv-1", at=at + timedelta(minutes=i))
                store.render_context(text)
                samples["store"].append(time.perf_counter() - t0)
            for i in range(start, min(rounds, start + block)):  # raw chromadb's block
                vec = emb.embed([turns[history + i][1]])
                t0 = time.perf_counter()
                col.add(ids=[f"r{i}"], embeddings=vec)
                col.query(query_embeddings=vec, n_results=64, include=["distances"])
                samples["raw"].append(time.perf_counter() - t0)
            report(progress, "loop", min(rounds, start + block), rounds)
    store_ms = 1000 * statistics.median(samples["store"])
    raw_ms = 1000 * statistics.median(samples["raw"])
    return {"history": history, "rounds": rounds, "store_ms": store_ms, "raw_ms": raw_ms,
            "ratio": store_ms / raw_ms}


_WORKER = textwrap.dedent("""
    import json, sys
    from mars_core import HashingEmbedder, MemoryStore
    location, index, query = sys.argv[1], sys.argv[2], sys.argv[3]
    names = sys.argv[4].split(",")
    store = MemoryStore.open(location, index=index, embedder=HashingEmbedder())
    print("ready", flush=True)
    sys.stdin.readline()
    for name in names:
        store.render_context(query, namespace=name)
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    store.close()
    print(json.dumps({"peak_rss_mb": peak / 1024}), flush=True)
""")


def workers(counts: Sequence[int], namespaces: int, turns: int, *, where: Where,
            progress: ProgressFn | None = None) -> dict[str, Any]:
    """The process-count row (a store several processes write: PostgreSQL): for each
    count, that many processes start together and each calls ``render_context`` in every
    one of the same ``namespaces`` namespaces (each process in its own order); the peak
    RSS of each, against one process alone."""
    names = [f"team-{i:03d}" for i in range(namespaces)]
    _fill_each(where, f"workers{namespaces}x{turns}", names, conversation(turns, seed=17),
               progress)
    location, index = where(f"workers{namespaces}x{turns}")
    env = {**os.environ, "MARS_EMBEDDER": "hashing"}
    rows = []
    for count in counts:
        _, lines = together([[sys.executable, "-c", _WORKER, location, index, _QUERY,
                              ",".join(names[i:] + names[:i])] for i in range(count)], env)
        peaks = [json.loads(line)["peak_rss_mb"] for line in lines]
        rows.append({"workers": count, "median_peak_rss_mb": statistics.median(peaks),
                     "max_peak_rss_mb": max(peaks)})
    one = rows[0]["median_peak_rss_mb"]
    for row in rows:
        row["vs_one"] = row["max_peak_rss_mb"] / one
    return {"namespaces": namespaces, "turns": turns, "rows": rows}


@dataclass(frozen=True)
class Plan:
    """The sizes of sections 5–8 (0 or ``()`` skips a section).

    Attributes:
        sizes: turns of the long-lived user (section 5).
        namespaces: namespaces of section 6, each of ``turns`` turns.
        turns: turns of each namespace of section 6.
        lifted: memories of the one namespace of section 7.
        history: turns of the agent loop's namespace (section 8).
        rounds: rounds of the agent loop.
        probes: fresh processes per measured store, and as many of raw chromadb,
            interleaved (sections 5 and 7; medians).
    """

    sizes: tuple[int, ...] = (1_000, 20_000, 100_000)
    namespaces: int = 256
    turns: int = 5_000
    lifted: int = 50_000
    history: int = 10_000
    rounds: int = 200
    probes: int = 3

    @classmethod
    def quick(cls) -> Plan:
        """A smoke run's sizes (seconds, not hours)."""
        return cls(sizes=(300, 1_500), namespaces=4, turns=300, lifted=2_000, history=600,
                   rounds=20, probes=1)

    @classmethod
    def medium(cls) -> Plan:
        """Sizes that fit half an hour of a shared 2-core machine: a user of 1,000 and
        20,000 turns, 32 namespaces of 1,000 turns, 10,000 memories with the budget
        lifted, an agent loop over 2,000 turns."""
        return cls(sizes=(1_000, 20_000), namespaces=32, turns=1_000, lifted=10_000,
                   history=2_000, rounds=50, probes=3)

    def only(self, sections: Collection[str]) -> Plan:
        """This plan with only the sections named in ``sections`` (:data:`SECTIONS`;
        other names are ignored): the others' sizes are 0.

        Examples:
            >>> Plan.quick().only({"loop"}).sizes, Plan.quick().only({"loop"}).rounds
            ((), 20)
        """
        return replace(self, sizes=self.sizes if "long-lived" in sections else (),
                       namespaces=self.namespaces if "many" in sections else 0,
                       lifted=self.lifted if "lifted" in sections else 0,
                       rounds=self.rounds if "loop" in sections else 0)

    @classmethod
    def named(cls, name: str) -> Plan | None:
        """The plan of a ``--history`` value: ``full``, ``medium``, ``quick`` or ``off``
        (``None``).

        Raises:
            ValidationError: another name.
        """
        plans = {"full": cls(), "medium": cls.medium(), "quick": cls.quick(), "off": None}
        if name not in plans:
            raise ValidationError("a history plan is full, medium, quick or off, not "
                                  f"{str(name)[:40]!r}")
        return plans[name]


def run(plan: Plan, *, workdir: Path, where: Where | None = None,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """Sections 5–8 of ``plan`` (each skipped when its size is 0), the stores where
    ``where`` puts them (default: directories of ``workdir``)."""
    out: dict[str, Any] = {"plan": vars(plan)}
    if plan.sizes:
        out["long_lived"] = long_lived(plan.sizes, workdir=workdir, where=where,
                                       rounds=plan.probes, progress=progress)
    if plan.namespaces and plan.turns:
        out["many"] = many_namespaces(plan.namespaces, plan.turns, workdir=workdir,
                                      where=where, progress=progress)
    if plan.lifted:
        out["lifted"] = budget_lifted(plan.lifted, workdir=workdir, where=where,
                                      rounds=plan.probes, progress=progress)
    if plan.history and plan.rounds:
        out["loop"] = agent_loop(plan.history, plan.rounds, workdir=workdir, where=where,
                                 progress=progress)
    return out


def table(result: dict[str, Any]) -> str:
    """Sections 5–8 as markdown."""
    lines: list[str] = []
    if "long_lived" in result:
        lines += ["| turns | active / archived | open + first render_context | raw open + "
                  "query | ratio | peak RSS | raw | ratio |", "|---|---|---|---|---|---|---|---|"]
        for r in result["long_lived"]["rows"]:
            lines.append(f"| {r['turns']:,} | {r['active']} / {r['archived']:,} | "
                         f"{r['open_render_s']:.3f} s | {r['raw_open_query_s']:.3f} s | "
                         f"{r['time_ratio']:.2f} | {r['peak_rss_mb']:.0f} MB | "
                         f"{r['raw_peak_rss_mb']:.0f} MB | {r['rss_ratio']:.2f} |")
    if "many" in result:
        m = result["many"]
        lines += ["", f"{m['namespaces']} namespaces of {m['turns']:,} turns: peak RSS "
                      f"{m['after_one_mb']:.0f} MB after the first render_context, "
                      f"{m['after_all_mb']:.0f} MB after all ({m['rss_ratio']:.2f}x)"]
    if "lifted" in result:
        b = result["lifted"]
        lines += ["", f"Budget lifted, {b['n']:,} memories in one namespace: open + first "
                      f"retrieve {b['open_retrieve_s']:.2f} s (raw chromadb "
                      f"{b['raw_open_query_s']:.2f} s, {b['time_ratio']:.1f}x), peak RSS "
                      f"{b['peak_rss_mb']:.0f} MB (raw {b['raw_peak_rss_mb']:.0f} MB, "
                      f"{b['rss_ratio']:.2f}x)"]
    if "workers" in result:
        w = result["workers"]
        lines += ["", f"Processes that each serve the same {w['namespaces']} namespaces "
                      f"({w['turns']} turns each): " + ", ".join(
                          f"{r['workers']} at once: {r['max_peak_rss_mb']:.0f} MB at most "
                          f"({r['vs_one']:.2f}x one alone)" for r in w["rows"])]
    if "loop" in result:
        a = result["loop"]
        lines += ["", f"Agent loop on {a['history']:,} turns ({a['rounds']} rounds of "
                      f"observe + render_context): {a['store_ms']:.1f} ms a round vs "
                      f"{a['raw_ms']:.1f} ms for a raw chromadb add + query "
                      f"({a['ratio']:.2f}x)"]
    return "\n".join(lines).lstrip("\n")  # the first section needs no blank line above
