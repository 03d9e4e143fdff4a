"""Reports of the evidence benchmarks: results.json, a markdown page and PNG plots
(drawn by :mod:`mars_core.bench.plots`).

Examples:
    >>> rows = [{"method": "a", "task": "retrieval", "counter": "words", "budget": 128,
    ...          "category": "all", "precision": 0.5, "recall": 0.5, "f1": 0.5,
    ...          "occupancy": 0.9, "latency_ms": 1.0}]
    >>> print(retrieval_table(rows, "words").splitlines()[2])
    | a | – | 0.500 | 0.500 | 0.500 | 0.90 | 1.00 |
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mars_core.bench.plots import plot_evidence, plot_retention, plot_retrieval
from mars_core.errors import ValidationError

__all__ = ["plot_retention", "plot_retrieval", "results_dir", "retention_table",
           "retrieval_table", "users_path_section", "write_report", "write_results"]

Row = Mapping[str, Any]


def results_dir(out: str | os.PathLike[str]) -> Path:
    """The output directory of a benchmark, created before it runs.

    A benchmark may run for many minutes; a directory that cannot be made (a file is in
    the way, no permission) is refused at the start, not after the run.

    Raises:
        ValidationError: ``out`` is not and cannot become a directory.

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     results_dir(os.path.join(tmp, "a", "b")).is_dir()
        True
    """
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValidationError(f"cannot write benchmark results to {str(path)!r}: {exc}; "
                              "pass another --out directory") from exc
    return path


def write_results(folder: Path | None, stem: str, result: Mapping[str, Any],
                  text: str) -> None:
    """A benchmark's results as ``{stem}.json`` and its table as ``{stem}.md`` in
    ``folder`` (nothing when it is None: the run was not asked to write).

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     write_results(Path(tmp), "x", {"a": 1}, "| a |")
        ...     sorted(p.name for p in Path(tmp).iterdir())
        ['x.json', 'x.md']
    """
    if folder is not None:
        (folder / f"{stem}.json").write_text(json.dumps(result, indent=1))
        (folder / f"{stem}.md").write_text(text + "\n")


def _sel(rows: Sequence[Row], **kw: Any) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def retrieval_table(rows: Sequence[Row], counter: str, headline: int = 128,
                    low: int | None = 64) -> str:
    """Markdown: method | F1@low | P/R/F1@headline | occupancy | p50 ms, best F1 first."""
    lines = [f"| method | B={low} F1 | B={headline} P | B={headline} R | B={headline} F1 "
             "| occupancy | p50 ms |", "|---|---|---|---|---|---|---|"]
    mains = _sel(rows, task="retrieval", counter=counter, budget=headline, category="all")
    for r in sorted(mains, key=lambda r: -r["f1"]):
        lo = _sel(rows, task="retrieval", counter=counter, budget=low, category="all",
                  method=r["method"])
        lo_f1 = f"{lo[0]['f1']:.3f}" if lo else "–"
        lines.append(f"| {r['method']} | {lo_f1} | {r['precision']:.3f} | {r['recall']:.3f} "
                     f"| {r['f1']:.3f} | {r['occupancy']:.2f} | {r['latency_ms']:.2f} |")
    return "\n".join(lines)


def category_table(rows: Sequence[Row], counter: str, budget: int = 128) -> str:
    """Markdown: F1 per category at one budget."""
    cats = (1, 2, 3, 4)
    lines = ["| method | " + " | ".join(f"cat {c}" for c in cats) + " |",
             "|---|" + "---|" * len(cats)]
    for r in sorted(_sel(rows, task="retrieval", counter=counter, budget=budget,
                         category="all"), key=lambda r: -r["f1"]):
        vals = []
        for c in cats:
            hit = _sel(rows, task="retrieval", counter=counter, budget=budget, category=c,
                       method=r["method"])
            vals.append(f"{hit[0]['f1']:.3f}" if hit else "–")
        lines.append(f"| {r['method']} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


IDEALISED = "ours"
"""The idealised row beside the users' path: the benchmark's own pipeline on every turn as
``"speaker: text"``, the whole conversation in memory."""


def users_path_section(rows: Sequence[Row], method: str = "users-path",
                       idealised: str = IDEALISED) -> list[str]:
    """Markdown lines of the headline section: the users' path per budget and per category
    (words of ``"speaker: text"``), the idealised row beside it, ``render_context``'s
    evidence recall, the gold turns kept active after ingest, and latency.

    Examples:
        >>> row = {"method": "users-path", "task": "retrieval", "counter": "words",
        ...        "budget": 128, "category": "all", "precision": 0.5, "recall": 0.5,
        ...        "f1": 0.5, "session_recall": 1.0, "active_share": 0.4,
        ...        "archived_share": 0.6}
        >>> print(users_path_section([row])[4])
        | users' path (`observe` → `retrieve`) | 0.500 | 0.500 | 0.500 | 1.000 |
    """
    mine = _sel(rows, task="retrieval", counter="words", method=method, category="all")
    if not mine:
        return []
    budgets = sorted({r["budget"] for r in mine})
    out = ["## The users' path (headline)", "",
           "| path | " + " | ".join(f"B={b} P | B={b} R | B={b} F1" for b in budgets)
           + " | session R |",
           "|---|" + "---|---|---|" * len(budgets) + "---|"]
    for name, label in ((method, "users' path (`observe` → `retrieve`)"),
                        (idealised, "idealised (every turn as `speaker: text`, all in memory)")):
        cells = []
        for b in budgets:
            hit = _sel(rows, task="retrieval", counter="words", method=name, budget=b,
                       category="all")
            cells += [f"{hit[0][k]:.3f}" for k in ("precision", "recall", "f1")] if hit \
                else ["–"] * 3
        hit = _sel(rows, task="retrieval", counter="words", method=name, category="all")
        sess = next((f"{r['session_recall']:.3f}" for r in hit if "session_recall" in r), "–")
        if any(c != "–" for c in cells):
            out.append(f"| {label} | " + " | ".join(cells) + f" | {sess} |")
    mid = budgets[len(budgets) // 2]
    cats = (1, 2, 3, 4)
    out += ["", f"Per category at {mid} words (F1 / recall; 1 multi-hop, 2 temporal, "
            "3 open-domain, 4 single-hop):", "",
            "| path | " + " | ".join(f"cat {c}" for c in cats) + " |",
            "|---|" + "---|" * len(cats)]
    for name in (method, idealised):
        vals = []
        for c in cats:
            hit = _sel(rows, task="retrieval", counter="words", method=name, budget=mid,
                       category=c)
            vals.append(f"{hit[0]['f1']:.3f} / {hit[0]['recall']:.3f}" if hit else "–")
        if any(v != "–" for v in vals):
            out.append(f"| {name} | " + " | ".join(vals) + " |")
    first = _sel(rows, task="retrieval", counter="words", method=method, category="all")[0]
    out += ["", f"Gold evidence turns still active after ingest: {first['active_share']:.3f} "
            f"(archived: {first['archived_share']:.3f})."]
    for r in _sel(rows, task="render", method=f"{method}-render", category="all"):
        out.append(f"`render_context` at its default size ({r['budget']} tokens, "
                   f"{r['words']:.0f} words on average): evidence recall {r['recall']:.3f}, "
                   f"precision {r['precision']:.3f}, F1 {r['f1']:.3f}.")
    for r in _sel(rows, task="latency", method=method):
        out.append(f"Latency (medians): `observe` {r['observe_p50_ms']:.1f} ms per turn "
                   f"(p95 {r['observe_p95_ms']:.1f}), `retrieve` {r['retrieve_p50_ms']:.1f} ms "
                   f"and `render_context` {r['render_p50_ms']:.1f} ms per question.")
    return [*out, ""]


def retention_table(rows: Sequence[Row]) -> str:
    """Markdown: survival and end-to-end recall per policy and store share."""
    shares = sorted({r["budget"] for r in _sel(rows, task="retention")})
    head = " | ".join(f"{int(s * 100)}% survival | {int(s * 100)}% e2e R@128" for s in shares)
    lines = [f"| policy | {head} |", "|---|" + "---|---|" * len(shares)]
    for m in sorted({r["method"] for r in _sel(rows, task="retention")}):
        vals = []
        for s in shares:
            hit = _sel(rows, task="retention", method=m, budget=s, category="all")
            vals += [f"{hit[0]['survival']:.3f}", f"{hit[0]['e2e_recall']:.3f}"] if hit \
                else ["–", "–"]
        lines.append(f"| {m} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def write_report(out: str | os.PathLike[str], title: str, rows: Sequence[Row],
                 meta: Mapping[str, Any], *,
                 headline: int = 128, low: int | None = 64, prefix: str = "evidence") -> Path:
    """Write ``results.json``, plots and ``report.md`` into ``out``; return the report path.

    The plots are :func:`mars_core.bench.plots.plot_evidence`'s, named ``{prefix}_*.png``;
    ``results.json`` records the prefix, so ``mars bench plot`` redraws the same files.
    """
    folder = results_dir(out)
    (folder / "results.json").write_text(json.dumps(
        {"meta": dict(meta), "rows": list(rows), "prefix": prefix}, indent=1), encoding="utf-8")
    drawn = {p.name for p in plot_evidence(rows, folder, prefix)}
    parts = [f"# {title}", "", "```", json.dumps(dict(meta), indent=1), "```", "",
             *users_path_section(rows)]
    for counter in ("words", "store"):
        if not _sel(rows, task="retrieval", counter=counter):
            continue
        img = f"{prefix}_retrieval_{counter}.png"
        parts += [f"## Retrieval under a context budget ({counter} tokens)", "",
                  retrieval_table(rows, counter, headline, low), "",
                  f"F1 per category at {headline}:", "",
                  category_table(rows, counter, headline), ""]
        parts += [f"![]({img})", ""] if img in drawn else []
    if _sel(rows, task="retention"):
        img = f"{prefix}_retention.png"
        parts += ["## Retention under a store budget", "", retention_table(rows), ""]
        parts += [f"![]({img})", ""] if img in drawn else []
    errors = meta.get("peer_errors") or {}
    if errors:
        parts += ["## Peers that could not run", ""] + [f"- {k}: `{v}`" for k, v in
                                                        errors.items()] + [""]
    path = folder / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
