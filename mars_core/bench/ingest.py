"""``mars bench import``: a mem0 dump imported in bulk against the same records added one
by one, in the same run.

A deterministic dump of ``n`` mem0 records (``Memory.get_all()`` format, spread over
ten users) is written to a JSON file. Each repetition then fills three fresh on-disk
stores (``MemoryStore.open(path, embedder=...)``, the index ``open`` chooses, the budget
lifted so nothing is forgotten and only the ingest is timed), in an order that turns
round from one repetition to the next so that each arm sees the machine's state as often
as the others:

* **import**: :func:`mars_core.io.importers.run_import` of the file — what ``mars import
  --from mem0`` runs: read, check, one ``add_many`` transaction (one embedding call per
  :data:`~mars_core.progress.EMBED_BATCH` texts), close;
* **import + bar**: the same with the progress bar ``mars import`` draws on a terminal
  (rich, rendering into a buffer), to show what the bar costs;
* **single adds**: one ``store.add`` per record, with the arguments the importer gives
  ``add_many`` (type, namespace, metadata, provenance), then close.

Each arm's time runs from the open to the close (what a command pays; the close writes
what the index still buffers). Reported: the median of each arm over the repetitions,
and the ratios single adds / import and import + bar / import. Every arm must end with
exactly ``n`` memories, or the run fails.

Examples:
    >>> r = run(n=40, reps=1, embedders=("hashing",))
    >>> row = r["rows"][0]
    >>> row["embedder"].startswith("hashing"), row["stored"] == {"import": 40,
    ...     "import_bar": 40, "singles": 40}
    (True, True)
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mars_core.bench.report import results_dir, write_results
from mars_core.bench.storage import make_texts
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import MarsError, ValidationError
from mars_core.io.importers import run_import
from mars_core.namespaces import id_namespace
from mars_core.progress import ProgressFn, progress_bar, report
from mars_core.store import MemoryStore

__all__ = ["ARMS", "main", "mem0_records", "run", "table"]

ARMS = ("import", "import_bar", "singles")
"""The three ways of ingesting the dump (see the module)."""

_USERS = 10
_BUDGET = 10**9  # nothing is forgotten: only the ingest is timed


def mem0_records(n: int, seed: int = 29) -> list[dict[str, Any]]:
    """``n`` deterministic mem0 records over ten users (``Memory.get_all()["results"]``).

    Examples:
        >>> r = mem0_records(2)
        >>> r == mem0_records(2), r[0]["id"], r[1]["user_id"]
        (True, 'mem-00000', 'user-01')
    """
    texts = make_texts(n, seed=seed)
    return [{"id": f"mem-{i:05d}", "memory": text, "user_id": f"user-{i % _USERS:02d}",
             "created_at": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00",
             "metadata": {"category": ("travel", "food", "work")[i % 3]}}
            for i, text in enumerate(texts)]


def _singles(store: MemoryStore, records: Sequence[dict[str, Any]]) -> None:
    """The records as single ``add`` calls, with the arguments the importer gives."""
    for rec in records:
        store.add(rec["memory"], type="semantic", namespace=id_namespace(rec["user_id"]),
                  metadata={"created_at": rec["created_at"], "origin": "mem0",
                            **rec["metadata"]},
                  provenance={"source": "import", "external_id": rec["id"],
                              "reliability": 1.0})


def _arm(name: str, path: Path, dump: Path, records: Sequence[dict[str, Any]],
         embedder: Embedder) -> tuple[float, int, str]:
    """One arm into a fresh store at ``path``: seconds from open to close, memories
    stored, the index used."""
    t0 = time.perf_counter()
    with MemoryStore.open(path, embedder=embedder, budget=_BUDGET) as store:
        if name == "singles":
            _singles(store, records)
        elif name == "import_bar":
            from rich.console import Console

            screen = Console(file=io.StringIO(), force_terminal=True, width=100)
            with progress_bar(screen, title="import") as bar:
                run_import(store, dump, kind="mem0", progress=bar)
        else:
            run_import(store, dump, kind="mem0")
        stats = store.stats()
    seconds = time.perf_counter() - t0
    stored = sum(ns["active"] + ns["archived"] for ns in stats["namespaces"].values())
    shutil.rmtree(path)
    return seconds, stored, str(stats["index"])


def _embedder(name: str) -> Embedder | None:
    """``hashing``, or ``semantic`` (all-MiniLM-L6-v2; None when not installed)."""
    if name == "hashing":
        return HashingEmbedder()
    if name != "semantic":
        raise ValidationError(f"unknown embedder {name!r}: use hashing or semantic")
    from mars_core.embedders import default_embedder

    try:
        return default_embedder("semantic")
    except MarsError:
        return None


def run(n: int = 1500, *, reps: int = 3, embedders: Sequence[str] = ("hashing", "semantic"),
        workdir: Path | None = None, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Time the three arms (see the module) for each embedder installed.

    Args:
        n: records in the dump.
        reps: repetitions (the arms rotate their order from one to the next).
        embedders: ``hashing`` and/or ``semantic`` (skipped, and said so, when the
            ``semantic`` extra is not installed).
        workdir: where the stores go (default: a temporary directory).
        progress: ``progress("runs", done, total)`` after each arm.

    Raises:
        ValidationError: ``n`` or ``reps`` below 1, or an unknown embedder.
        RuntimeError: an arm did not end with exactly ``n`` memories.
    """
    if n < 1 or reps < 1:
        raise ValidationError("n and reps must be at least 1")
    chosen = {name: _embedder(name) for name in embedders}
    runs = [(name, emb) for name, emb in chosen.items() if emb is not None]
    total, done = len(runs) * reps * len(ARMS), 0
    report(progress, "runs", 0, total)
    records = mem0_records(n)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mars-bench-import-", dir=workdir) as tmp:
        base = Path(tmp)
        dump = base / "mem0.json"
        dump.write_text(json.dumps({"results": records}), encoding="utf-8")
        for name, emb in runs:
            samples: dict[str, list[float]] = {arm: [] for arm in ARMS}
            stored: dict[str, int] = {}
            index = ""
            for rep in range(reps):
                order = ARMS[rep % len(ARMS):] + ARMS[:rep % len(ARMS)]
                for arm in order:
                    seconds, count, index = _arm(arm, base / f"{name}-{arm}-{rep}", dump,
                                                 records, emb)
                    if count != n:
                        raise RuntimeError(f"{arm} stored {count} memories, not {n}")
                    samples[arm].append(seconds)
                    stored[arm] = count
                    done += 1
                    report(progress, "runs", done, total)
            med = {arm: statistics.median(v) for arm, v in samples.items()}
            rows.append({"embedder": emb.name, "index": index, "n": n, "reps": reps,
                         "stored": stored, "samples_s": samples,
                         **{f"{arm}_s": med[arm] for arm in ARMS},
                         "singles_over_import": med["singles"] / med["import"],
                         "bar_over_import": med["import_bar"] / med["import"]})
    return {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "n": n, "reps": reps, "rows": rows,
            "skipped": [name for name, emb in chosen.items() if emb is None]}


def table(result: dict[str, Any]) -> str:
    """The result as a markdown table (medians; ratios in the same run)."""
    lines = ["| embedder | index | n | import s | import + bar s | single adds s "
             "| single adds / import | bar / import |", "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['embedder']} | {r['index']} | {r['n']:,} | {r['import_s']:.2f} | "
                     f"{r['import_bar_s']:.2f} | {r['singles_s']:.2f} | "
                     f"{r['singles_over_import']:.1f}× | {r['bar_over_import']:.2f}× |")
    if result["skipped"]:
        lines += ["", f"Not installed, skipped: {', '.join(result['skipped'])}."]
    return "\n".join(lines)


def main(out: str | os.PathLike[str] | None = None, *, n: int = 1500, reps: int = 3,
         embedders: Sequence[str] = ("hashing", "semantic"),
         progress: ProgressFn | None = None,
         echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run, print the table (and write ``ingest.json`` and ``ingest.md`` to ``out``, made
    before the run)."""
    folder = None if out is None else results_dir(out)
    result = run(n, reps=reps, embedders=embedders, progress=progress)
    text = table(result)
    echo(text)
    write_results(folder, "ingest", result, text)
    return result
