"""Reports of the evidence benchmarks: results.json, a markdown page and PNG plots.

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

from mars_core.errors import ExtraNotInstalledError, ValidationError

__all__ = ["plot_retention", "plot_retrieval", "results_dir", "retention_table",
           "retrieval_table", "write_report"]

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


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - bench extra
        raise ExtraNotInstalledError("bench", "matplotlib") from exc
    return plt


def plot_retrieval(rows: Sequence[Row], counter: str, path: Path) -> None:
    """F1 and recall against the budget, one line per method."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for m in sorted({r["method"] for r in _sel(rows, task="retrieval")}):
        pts = sorted(_sel(rows, task="retrieval", counter=counter, category="all", method=m),
                     key=lambda r: r["budget"])
        for ax, key in zip(axes, ("f1", "recall"), strict=True):
            ax.plot([p["budget"] for p in pts], [p[key] for p in pts], marker="o", label=m)
    for ax, key in zip(axes, ("F1", "recall"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"context budget ({counter} tokens)")
        ax.set_ylabel(f"evidence {key}")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_retention(rows: Sequence[Row], path: Path) -> None:
    """Evidence survival against the store share, one line per policy."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in sorted({r["method"] for r in _sel(rows, task="retention")}):
        pts = sorted(_sel(rows, task="retention", category="all", method=m),
                     key=lambda r: r["budget"])
        ax.plot([100 * p["budget"] for p in pts], [p["survival"] for p in pts], marker="o",
                label=m)
    ax.set_xlabel("active store budget (% of conversation tokens)")
    ax.set_ylabel("evidence survival")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: str | os.PathLike[str], title: str, rows: Sequence[Row],
                 meta: Mapping[str, Any], *,
                 headline: int = 128, low: int | None = 64, prefix: str = "evidence") -> Path:
    """Write ``results.json``, plots and ``report.md`` into ``out``; return the report path."""
    folder = results_dir(out)
    (folder / "results.json").write_text(json.dumps({"meta": dict(meta), "rows": list(rows)},
                                                    indent=1), encoding="utf-8")
    parts = [f"# {title}", "", "```", json.dumps(dict(meta), indent=1), "```", ""]
    for counter in ("words", "store"):
        if not _sel(rows, task="retrieval", counter=counter):
            continue
        img = f"{prefix}_retrieval_{counter}.png"
        plot_retrieval(rows, counter, folder / img)
        parts += [f"## Retrieval under a context budget ({counter} tokens)", "",
                  retrieval_table(rows, counter, headline, low), "",
                  f"F1 per category at {headline}:", "",
                  category_table(rows, counter, headline), "", f"![]({img})", ""]
    if _sel(rows, task="retention"):
        img = f"{prefix}_retention.png"
        plot_retention(rows, folder / img)
        parts += ["## Retention under a store budget", "", retention_table(rows), "",
                  f"![]({img})", ""]
    errors = meta.get("peer_errors") or {}
    if errors:
        parts += ["## Peers that could not run", ""] + [f"- {k}: `{v}`" for k, v in
                                                        errors.items()] + [""]
    path = folder / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
