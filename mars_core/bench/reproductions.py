"""The summary of ``docs/benchmarks/reproductions.md``: every table and figure of the seed
papers, the paper's value beside ours, the command that reproduces ours, and a verdict.

Each row comes from a results file a shipped command wrote (``docs/benchmarks/results/``:
``fifa.json`` from ``mars bench fifa --regenerate-docs``, ``oslmr.json`` from ``mars bench
oslmr --regenerate-docs``, ``mechanisms.json`` from ``mars bench mechanisms
--regenerate-docs``) or, for the tables that need an LLM or data we do not have, from
:data:`NOT_RUN` with the reason. Every ``--regenerate-docs`` command ends by rewriting the
summary (:func:`regenerate_summary`), so the table never lags a results file.

Example:
    >>> rows = summary_table({})
    >>> rows[0].startswith("| paper | table / figure |")
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mars_core.bench.pages import RESULTS, read_results, splice

__all__ = ["NOT_RUN", "SOURCES", "regenerate_summary", "summary_table"]

PAGE = Path("benchmarks") / "reproductions.md"

NOT_RUN: tuple[tuple[str, str, str, str], ...] = (
    ("000 MaRS", "Table 1", "complexity per policy", "measured per add and per trigger in "
     "[policy cost](policies.md) (`mars bench policies`): not a reproduction of numbers"),
    ("001 OSL-MR", "Table 3, Figs 3, 6, 7", "LongMemEval results and sensitivity",
     "one LongMemEval record here (a loader test, not a result)"),
    ("001 OSL-MR", "Table 2, GA-LLM row", "LLM importance", "needs an LLM to label importance"),
    ("002 Oblivion", "Tables 1–4, 6–17", "LongMemEval / GoodAI LTM accuracy, tokens, latency",
     "every table is an LLM run (GPT-4o answers and judge); the defaults are its best "
     "settings"),
    ("004 DMF", "Tables 5–8", "LoCoMo / LongMemEval-10 judge scores and tokens",
     "needs an LLM answerer and judge; memory-construction tokens are 0 here as there"),
)
"""Tables no offline command can reproduce: (paper, item, what, why)."""


def _fifa(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    from mars_core.bench.fifa.docs import summary_rows

    return summary_rows(doc)


def _oslmr(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    from mars_core.bench.oslmr_docs import summary_rows

    return summary_rows(doc)


def _mechanisms(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    from mars_core.bench.mechanisms import summary_rows

    return summary_rows(doc)


SOURCES: tuple[tuple[str, str, str, Callable[[Mapping[str, Any]], list[dict[str, str]]]],
              ...] = (
    ("000 MaRS / FiFA", "fifa.json", "mars bench fifa --regenerate-docs", _fifa),
    ("001 OSL-MR", "oslmr.json", "mars bench oslmr --data LOCOMO --out DIR --regenerate-docs",
     _oslmr),
    ("001/004 mechanisms", "mechanisms.json", "mars bench mechanisms --regenerate-docs",
     _mechanisms),
)
"""(paper, results file, command, rows of the file)."""


def summary_table(docs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The summary table (markdown lines) from the results documents by file name; a
    missing file is one row that names the command writing it."""
    out = ["| paper | table / figure | paper value | ours | verdict | command (commit) |",
           "|---|---|---|---|---|---|"]
    for paper, name, command, rows in SOURCES:
        doc = docs.get(name)
        if doc is None:
            out.append(f"| {paper} | all | – | not run yet | – | `{command}` |")
            continue
        where = f"`{command}` (`{doc.get('commit', 'unknown')}`)"
        out += [f"| {paper} | {r['item']} | {r['paper']} | {r['ours']} | {r['verdict']} | "
                f"{where} |" for r in rows(doc)]
    out += [f"| {paper} | {item} | {what} | not run | {why} | – |"
            for paper, item, what, why in NOT_RUN]
    return out


def regenerate_summary(docs: Path) -> list[str]:
    """Rewrite the summary block of the reproductions page from every results file there
    is; returns the page written."""
    found = {name: read_results(docs / RESULTS / name) for _p, name, _c, _r in SOURCES
             if (docs / RESULTS / name).is_file()}
    path = docs / PAGE
    path.write_text(splice(path.read_text(encoding="utf-8"),
                           {"repro/summary": "\n".join(summary_table(found))}),
                    encoding="utf-8")
    return [str(PAGE)]
