"""``mars bench first-answer``: how long a new user waits, per quick start, per embedder.

Each quick start of the documentation (``examples/*.py`` of a checkout) runs as a user
runs it — ``python examples/X.py`` in a fresh process, in an empty working directory,
offline — with ``MARS_EMBEDDER=hashing`` and ``MARS_EMBEDDER=semantic`` (MiniLM).
Measured per run, from the start of the process:

* **first answer**: the first line the script prints on standard output (every quick
  start prints its answers as it gets them);
* **done**: the process's exit.

Standard error is kept too: a run whose standard error holds a progress bar (a carriage
return, or a ``Loading weights`` line from transformers) is flagged ``bars``.

With ``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/before <commit>``)
each run of this checkout is paired with the same run of the baseline, in alternating
order, so both see the machine as it is at that moment; reported: the medians of each
and their ratio (after / before) — the same-run comparison a noisy machine needs.

Examples:
    >>> r = run(examples=("quickstart",), embedders=("hashing",), reps=1)  # doctest: +SKIP
    >>> r["rows"][0]["example"]  # doctest: +SKIP
    'quickstart'
"""

from __future__ import annotations

import os
import platform
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mars_core.bench.report import results_dir, write_results
from mars_core.errors import ValidationError
from mars_core.progress import ProgressFn, report

__all__ = ["EMBEDDERS", "Run", "examples_of", "main", "run", "run_once", "table"]

EMBEDDERS = ("hashing", "semantic")
"""``MARS_EMBEDDER`` of the runs."""

TIMEOUT_S = 900.0
"""A quick start that takes longer than this fails the run."""

Run = dict[str, Any]


def _checkout() -> Path:
    """The checkout this code runs from (the directory holding ``mars_core``)."""
    return Path(__file__).resolve().parents[2]


def examples_of(root: Path) -> list[str]:
    """The quick starts of a checkout: the names of its ``examples/*.py``, sorted.

    Raises:
        ValidationError: ``root`` has no ``examples`` directory with a script.
    """
    found = sorted(p.stem for p in (Path(root) / "examples").glob("*.py"))
    if not found:
        raise ValidationError(f"{root} holds no examples/*.py: give the root of a mars-memory "
                              "checkout")
    return found


def run_once(root: Path, example: str, embedder: str, workdir: Path) -> Run:
    """One quick start in a fresh process: seconds to its first line of output and to its
    exit, whether standard error showed a progress bar, and its exit code."""
    script = Path(root) / "examples" / f"{example}.py"
    env = {**os.environ, "PYTHONPATH": str(root), "MARS_EMBEDDER": embedder,
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTHONSTARTUP", None)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(script)], cwd=workdir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first: float | None = None
    err = bytearray()
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        while sel.get_map():
            if time.perf_counter() - start > TIMEOUT_S:
                proc.kill()
                raise RuntimeError(f"{example} ({embedder}) ran over {TIMEOUT_S:g} s")
            for key, _ in sel.select(timeout=1.0):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data == "out" and first is None and b"\n" in chunk:
                    first = time.perf_counter() - start
                elif key.data == "err":
                    err += chunk
    code = proc.wait()
    done = time.perf_counter() - start
    text = err.decode("utf-8", "replace")
    return {"first_s": done if first is None else first, "done_s": done, "code": code,
            "bars": "\r" in text or "Loading weights" in text,
            "stderr_tail": text[-300:] if code else ""}


def run(*, baseline: Path | None = None, examples: Sequence[str] | None = None,
        embedders: Sequence[str] = EMBEDDERS, reps: int = 3,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """Time every quick start with every embedder (see the module).

    Args:
        baseline: another checkout to compare with, run for run (None: this one alone).
        examples: the quick starts to run (default: every ``examples/*.py`` of this
            checkout that the baseline has too).
        embedders: ``hashing`` and/or ``semantic``.
        reps: runs of each.
        progress: ``progress("runs", done, total)`` after each run.

    Raises:
        ValidationError: an unknown embedder or example, ``reps`` below 1, a baseline that
            is not a checkout.
        RuntimeError: a quick start failed or ran over :data:`TIMEOUT_S`.
    """
    here = _checkout()
    if reps < 1 or set(embedders) - set(EMBEDDERS) or not embedders:
        raise ValidationError(f"reps must be at least 1 and embedders among {EMBEDDERS}")
    trees = {"after": here} | ({} if baseline is None else {"before": Path(baseline)})
    known = set(examples_of(here))
    for tree in trees.values():
        known &= set(examples_of(tree))
    chosen = list(examples) if examples else sorted(known)
    if set(chosen) - known:
        raise ValidationError(f"unknown quick starts {sorted(set(chosen) - known)}; known: "
                              f"{sorted(known)}")
    samples: dict[tuple[str, str, str], list[Run]] = {}
    total, done, pairs = len(chosen) * len(embedders) * reps * len(trees), 0, 0
    report(progress, "runs", 0, total)
    with tempfile.TemporaryDirectory(prefix="mars-first-answer-") as tmp:
        for rep in range(reps):
            for example in chosen:
                for embedder in embedders:
                    order = list(trees) if pairs % 2 == 0 else list(trees)[::-1]
                    pairs += 1
                    for name in order:
                        work = Path(tmp) / f"{name}-{example}-{embedder}-{rep}"
                        work.mkdir()
                        one = run_once(trees[name], example, embedder, work)
                        if one["code"] != 0:
                            raise RuntimeError(f"{example} ({embedder}, {name}) exited "
                                               f"{one['code']}: {one['stderr_tail']}")
                        samples.setdefault((example, embedder, name), []).append(one)
                        done += 1
                        report(progress, "runs", done, total)
    rows = []
    for example in chosen:
        for embedder in embedders:
            row: dict[str, Any] = {"example": example, "embedder": embedder}
            for name in trees:
                runs = samples[(example, embedder, name)]
                row[name] = {"first_s": statistics.median(r["first_s"] for r in runs),
                             "done_s": statistics.median(r["done_s"] for r in runs),
                             "bars": any(r["bars"] for r in runs),
                             "samples": [{k: r[k] for k in ("first_s", "done_s")}
                                         for r in runs]}
            if "before" in row:
                row["first_ratio"] = row["after"]["first_s"] / row["before"]["first_s"]
                row["done_ratio"] = row["after"]["done_s"] / row["before"]["done_s"]
            rows.append(row)
    return {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "load_average": list(os.getloadavg())
                        if hasattr(os, "getloadavg") else None},
            "after": str(here), "before": None if baseline is None else str(baseline),
            "reps": reps, "rows": rows}


def table(result: dict[str, Any]) -> str:
    """The result as a markdown table (medians; ratios in the same run)."""
    paired = result["before"] is not None
    head = "| quick start | embedder | first answer s | done s | bars |"
    rule = "|---|---|---|---|---|"
    if paired:
        head = ("| quick start | embedder | first answer s, before → after | ratio | "
                "done s, before → after | ratio | bars before → after |")
        rule = "|---|---|---|---|---|---|---|"
    lines = [head, rule]
    for r in result["rows"]:
        a = r["after"]
        if paired:
            b = r["before"]
            lines.append(f"| {r['example']} | {r['embedder']} | {b['first_s']:.1f} → "
                         f"{a['first_s']:.1f} | {r['first_ratio']:.2f}× | {b['done_s']:.1f} "
                         f"→ {a['done_s']:.1f} | {r['done_ratio']:.2f}× | "
                         f"{_yes(b['bars'])} → {_yes(a['bars'])} |")
        else:
            lines.append(f"| {r['example']} | {r['embedder']} | {a['first_s']:.1f} | "
                         f"{a['done_s']:.1f} | {_yes(a['bars'])} |")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def main(out: str | os.PathLike[str] | None = None, *, baseline: Path | None = None,
         examples: Sequence[str] | None = None, embedders: Sequence[str] = EMBEDDERS,
         reps: int = 3, progress: ProgressFn | None = None,
         echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run, print the table (and write ``first_answer.json`` and ``first_answer.md`` to
    ``out``, made before the run)."""
    folder = None if out is None else results_dir(out)
    result = run(baseline=baseline, examples=examples, embedders=embedders, reps=reps,
                 progress=progress)
    text = table(result)
    echo(text)
    write_results(folder, "first_answer", result, text)
    return result
