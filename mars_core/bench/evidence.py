"""``mars bench locomo`` and ``mars bench longmemeval``: the evidence benchmarks end to end.

Both take the data path (the repository never vendors the files) and an output directory,
and write ``results.json`` (one row per method × task × counter × budget × category),
``report.md`` and PNG plots. ``quick`` runs a small slice (development, smoke tests).

Examples:
    A one-conversation LoCoMo file, the users' path and one policy, no peers:

    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from mars_core.bench.evidence import run_locomo
    >>> said = ["I adopted a dog and we moved to Lisbon", "How is the weather?", "Sunny"]
    >>> turns = [{"speaker": "Ana" if i % 2 == 0 else "Bo", "dia_id": f"D1:{i + 1}",
    ...           "text": text} for i, text in enumerate(said)]
    >>> conversation = {"sample_id": "c0", "qa": [
    ...     {"question": "Where did Ana move?", "answer": "Lisbon", "category": 1,
    ...      "evidence": ["D1:1"]}], "conversation": {
    ...     "speaker_a": "Ana", "speaker_b": "Bo", "session_1": turns,
    ...     "session_1_date_time": "1 pm on 1 May, 2023"}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data = Path(tmp) / "locomo.json"
    ...     _ = data.write_text(json.dumps([conversation]), encoding="utf-8")
    ...     result = run_locomo(data, Path(tmp) / "out", quick=True, progress=False,
    ...                         methods=["users-path"], peers=[], policies=["fifo"])
    ...     written = sorted(p.name for p in (Path(tmp) / "out").glob("*.[jm]*"))
    >>> sorted({row["task"] for row in result["rows"]}), written
    (['latency', 'render', 'retention', 'retrieval'], ['report.md', 'results.json'])
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mars_core.bench import locomo as L
from mars_core.bench.locomo_data import Conversation, load_locomo
from mars_core.bench.longmemeval import LME_BUDGETS, load_longmemeval
from mars_core.bench.report import results_dir, write_report
from mars_core.bench.users_path import users_path_task
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.progress import LineCounter

__all__ = ["USERS", "default_bench_embedder", "run_locomo", "run_longmemeval"]

USERS = "users-path"
"""The headline method: each conversation through ``observe`` into ``MemoryStore.open``
with its defaults, read with ``retrieve`` and ``render_context``
(:mod:`mars_core.bench.users_path`)."""


def default_bench_embedder(quick: bool) -> Embedder:
    """MiniLM for real runs (when installed), the hashing embedder for quick ones."""
    if quick:
        return HashingEmbedder()
    from mars_core.embedders import SentenceTransformerEmbedder, minilm_installed

    return SentenceTransformerEmbedder() if minilm_installed() else HashingEmbedder()


def _quick(convs: Sequence[Conversation], n_convs: int, n_turns: int, n_q: int
           ) -> list[Conversation]:
    out = []
    for c in convs[:n_convs]:
        turns = c.turns[:n_turns]
        known = {t.dia_id for t in turns}
        qs = tuple(q for q in c.questions if set(q.evidence) <= known)[:n_q]
        out.append(Conversation(c.sample_id, turns, qs, c.skipped_questions))
    return out


def _bar(total: int, desc: str, progress: bool) -> Any:
    """A tqdm bar on a terminal; plain lines (:class:`~mars_core.progress.LineCounter`)
    when standard error is a pipe or a file."""
    if progress and not sys.stderr.isatty():
        return LineCounter(total, desc)
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, desc=desc, disable=not progress, unit="step")


def run_locomo(data: str | os.PathLike[str], out: str | os.PathLike[str], quick: bool = False,
               methods: Sequence[str] | None = None, progress: bool = True, *,
               embedder: Embedder | None = None, peers: Sequence[str] | None = None,
               policies: Sequence[str] | None = None) -> dict[str, Any]:
    """Run both LoCoMo tasks, every method, the peers; write the report into ``out``.

    Args:
        data: the LoCoMo JSON file.
        out: output directory (created before the run).
        quick: 3 conversations × 150 turns × 25 questions, hashing embedder.
        methods: restrict Task 1 to these method names (default: all; ``"users-path"``
            is the headline users' path).
        progress: show a tqdm progress bar.
        embedder: override the embedder (default MiniLM, hashing when ``quick``).
        peers: peer names (default: all of :data:`mars_core.bench.peers.PEERS`).
        policies: Task 2 policies (default: FIFO, LRU, Random, Priority, DMF, Hybrid, learned).

    Returns:
        ``{"meta": ..., "rows": [...], "report": path}``.

    Raises:
        ValidationError: the data file is missing or malformed, or ``out`` cannot be a
            directory (both before anything runs).
    """
    from mars_core.bench.peers import PEERS, run_peer

    convs = load_locomo(data)
    results_dir(out)  # refused now rather than after the run
    if quick:
        convs = _quick(convs, 3, 150, 25)
    emb = L.CachedEmbedder(embedder or default_bench_embedder(quick))
    t0 = time.perf_counter()
    prepared = L.prepare(convs, emb)
    nq = sum(len(cd.questions) for cd in prepared)
    pols = tuple(policies) if policies is not None else (
        "fifo", "lru", "random", "priority", "dmf", "hybrid", "learned")
    peer_names = list(PEERS) if peers is None else list(peers)
    pipes = {k: v for k, v in L.STORE_PIPELINES.items() if methods is None or k in methods}
    users = methods is None or USERS in methods
    with _bar(nq + len(pols) * 3 * len(prepared) + len(peer_names)
              + (len(pipes) + users) * len(prepared), "locomo", progress) as bar:
        extra, errors = {}, {}
        for name in peer_names:
            ranked, err = run_peer(name, prepared, emb)
            bar.update(1)
            if err is not None:
                errors[name] = err
                continue
            extra[name] = _peer_scorer(ranked)
        rows = L.retrieval_task(prepared, methods=methods, extra=extra,
                                tick=lambda: bar.update(1))
        rows += L.store_retrieval_task(prepared, emb, pipelines=pipes,
                                       tick=lambda: bar.update(1))
        rows += L.retention_task(prepared, emb, policies=pols, tick=lambda: bar.update(1))
        if users:
            rows += users_path_task(prepared, emb, tick=lambda: bar.update(1))
    meta = {"data": Path(data).name, "conversations": len(prepared), "questions": nq,
            "turns": sum(len(cd.ids) for cd in prepared), "embedder": emb.name,
            "quick": quick, "seconds": round(time.perf_counter() - t0, 1),
            "skipped_questions": sum(c.skipped_questions for c in convs),
            "peer_errors": errors, "latency": _store_latency(prepared[0], emb)}
    report = write_report(out, "LoCoMo evidence benchmark", rows, meta)
    return {"meta": meta, "rows": rows, "report": str(report)}


def _peer_scorer(ranked: dict[str, list[L.F64]]) -> Any:
    return lambda cd, qi: ranked[cd.conv.sample_id][qi]


def _store_latency(cd: L.ConvData, emb: L.CachedEmbedder) -> dict[str, float]:
    """p50/p95 of ``store.retrieve`` on the embedded default (Chroma on disk) holding one
    whole conversation, query embedding excluded (the embedder cache holds it)."""
    import tempfile

    import numpy as np

    from mars_core.store import MemoryStore

    emb.embed([q.question for q in cd.questions])
    with tempfile.TemporaryDirectory(prefix="mars-lat-") as tmp, \
            MemoryStore.open(tmp, embedder=emb, budget=10**7, seed=0) as store:
        for t in cd.conv.turns:
            store.add(t.text)
        lat = []
        for q in cd.questions:
            t0 = time.perf_counter()
            store.retrieve(q.question, budget_tokens=128, read_only=True)
            lat.append((time.perf_counter() - t0) * 1000)
    return {"store_retrieve_p50_ms": round(float(np.median(lat)), 2),
            "store_retrieve_p95_ms": round(float(np.percentile(lat, 95)), 2),
            "turns": len(cd.ids)}


def run_longmemeval(data: str | os.PathLike[str], out: str | os.PathLike[str],
                    quick: bool = False, methods: Sequence[str] | None = None,
                    progress: bool = True, *, embedder: Embedder | None = None
                    ) -> dict[str, Any]:
    """Task 1 on LongMemEval records (budgets 256/512/1024, turn-level evidence), with the
    users' path as the headline (session and turn recall).

    With a single record the learner and our pipeline fall back to their leave-one-out
    fit on nothing; they are left out unless there are at least two records.

    Raises:
        ValidationError: the data file is missing or malformed, or ``out`` cannot be a
            directory (both before anything runs).
    """
    convs = load_longmemeval(data)
    results_dir(out)  # refused now rather than after the run
    emb = L.CachedEmbedder(embedder or default_bench_embedder(quick))
    prepared = L.prepare(convs, emb)
    names = list(methods) if methods else list(L.BASELINES) + list(L.BUDGETED) + (
        ["ours", "osl-mr-learner"] if len(prepared) > 1 else [])
    users = USERS in names or not methods
    names = [n for n in names if n != USERS]
    with _bar(sum(len(cd.questions) for cd in prepared) + users * len(prepared),
              "longmemeval", progress) as bar:
        rows = L.retrieval_task(prepared, methods=names, budgets=LME_BUDGETS,
                                tick=lambda: bar.update(1)) if names else []
        if users:  # each haystack session is a chat thread of its own
            rows += users_path_task(prepared, emb, budgets=LME_BUDGETS,
                                    thread_per_session=True, tick=lambda: bar.update(1))
    meta = {"data": Path(data).name, "records": len(prepared), "embedder": emb.name,
            "turns": sum(len(cd.ids) for cd in prepared), "quick": quick,
            "note": "with one record this is a loader test, not a result"}
    report = write_report(out, "LongMemEval evidence benchmark", rows, meta,
                          headline=512, low=256, prefix="longmemeval")
    return {"meta": meta, "rows": rows, "report": str(report)}
