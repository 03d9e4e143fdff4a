"""Benchmark pages generated from results files: the figures a page shows follow the code.

A page of ``docs/benchmarks/`` keeps its prose by hand and its figures in *generated
blocks*, each between two markers written on their own lines::

    <!-- begin generated: fifa/table2 -->
    ...
    <!-- end generated: fifa/table2 -->

A block's body is rendered from a results file that a shipped command wrote (its name,
command and commit are in the file, and the block says them), so regenerating a page is
:func:`splice` with the rendered bodies, and checking one is :func:`stale_blocks`. The
results files live in ``docs/benchmarks/results/`` (:func:`docs_dir` finds ``docs/`` of
a checkout); ``tests/test_reproduction_pages.py`` reruns each quick variant and compares.

Examples:
    >>> page = "intro\\n<!-- begin generated: x -->\\nold\\n<!-- end generated: x -->\\nend\\n"
    >>> print(splice(page, {"x": "new"}), end="")
    intro
    <!-- begin generated: x -->
    new
    <!-- end generated: x -->
    end
    >>> stale_blocks(page, {"x": "old"}), stale_blocks(page, {"x": "new"})
    ([], ['x'])
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mars_core.errors import ValidationError

__all__ = ["RESULTS", "blocks_of", "docs_dir", "git_commit", "provenance", "read_results",
           "splice", "stale_blocks", "write_results"]

RESULTS = Path("benchmarks") / "results"
"""Where results files live, relative to ``docs/``."""

_BLOCK = re.compile(r"^<!-- begin generated: (?P<key>[\w./-]+) -->\n(?P<body>.*?)"
                    r"^<!-- end generated: (?P=key) -->$", re.MULTILINE | re.DOTALL)


def blocks_of(page: str) -> dict[str, str]:
    """The generated blocks of a page: key → body (without its final newline).

    Raises:
        ValidationError: a key appears twice.
    """
    out: dict[str, str] = {}
    for m in _BLOCK.finditer(page):
        if m["key"] in out:
            raise ValidationError(f"generated block {m['key']!r} appears twice")
        out[m["key"]] = m["body"].removesuffix("\n")
    return out


def splice(page: str, bodies: Mapping[str, str]) -> str:
    """``page`` with the body of each block in ``bodies`` replaced.

    Raises:
        ValidationError: a key of ``bodies`` has no block on the page (nothing changes).
    """
    missing = sorted(set(bodies) - set(blocks_of(page)))
    if missing:
        raise ValidationError(f"the page has no generated block {missing}; add "
                              "'<!-- begin generated: KEY -->' and '<!-- end generated: KEY "
                              "-->' lines where it should go")

    def repl(m: re.Match[str]) -> str:
        key = m["key"]
        if key not in bodies:
            return m[0]
        body = bodies[key].rstrip("\n")
        return (f"<!-- begin generated: {key} -->\n{body}\n"
                f"<!-- end generated: {key} -->")

    return _BLOCK.sub(repl, page)


def stale_blocks(page: str, bodies: Mapping[str, str]) -> list[str]:
    """Keys of ``bodies`` whose block on ``page`` differs from (or lacks) the body."""
    have = blocks_of(page)
    return sorted(k for k, v in bodies.items() if have.get(k) != v.rstrip("\n"))


def docs_dir(start: Path | None = None) -> Path:
    """``docs/`` of the checkout this package runs from (or above ``start``).

    Raises:
        ValidationError: not a checkout (an installed package has no pages to write).
    """
    here = (start or Path(__file__)).resolve()
    for parent in [here, *here.parents]:
        if (parent / "mkdocs.yml").is_file() and (parent / "docs" / "benchmarks").is_dir():
            return parent / "docs"
    raise ValidationError("no docs/benchmarks found above this package: regenerate the pages "
                          "from a checkout of mars-memory (or pass --docs DIR)")


def _git(where: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True,
                             timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_commit(where: Path) -> str:
    """The commit of the checkout holding ``where`` (12 hex digits; "unknown" outside one)
    that a results file was computed on, with ``-dirty`` when the code — the packages, not
    the docs a regeneration rewrites — differs from it."""
    head = _git(where, "rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    top = _git(where, "rev-parse", "--show-toplevel") or str(where)
    changed = _git(Path(top), "status", "--porcelain", "--untracked-files=no", "--",
                   *_CODE)
    return head + ("-dirty" if changed else "")


_CODE = ("mars_core", "langchain_mars", "llamaindex_mars", "pyproject.toml")
"""What "the code" is, for :func:`git_commit`."""


def provenance(command: str, where: Path) -> dict[str, str]:
    """What a results file records about how it was made: the command and the commit."""
    return {"command": command, "commit": git_commit(where)}


def write_results(path: Path, doc: Mapping[str, Any]) -> dict[str, Any]:
    """Write a results file (sorted, indented JSON, byte-stable for the same document) and
    return it as it reads back — what a page must be rendered from, so the page is exactly
    what the test renders from the file (key order, tuples as lists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    back: dict[str, Any] = json.loads(text)
    return back


def read_results(path: Path) -> dict[str, Any]:
    """Read a results file.

    Raises:
        ValidationError: missing or not a JSON object (says which command writes it).
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read the results file {path}: {exc}; the command "
                              "named on its page writes it") from exc
    if not isinstance(doc, dict):
        raise ValidationError(f"the results file {path} is not a JSON object")
    return doc
