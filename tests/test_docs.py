"""Every piece of Python the documentation shows runs, offline, as the page shows it.

Two kinds of blocks:

* ``--8<-- "examples/....py"`` includes (pymdownx.snippets): the quick starts. Each
  included file runs as a script (``test_included_example_runs``).
* Every other ```` ```python ```` block of every page: a page's blocks run in order, in
  one fresh namespace, in a child process whose working directory is a temporary directory
  (so ``./mars_data`` is fresh) with the hashing embedder (``test_page_blocks_run``). An
  include inside such a page is expanded, so later blocks see what it defined.

The children are forked from a preloaded interpreter (``tests/children.py``: ``mars_core``
and ``chromadb`` imported once, which was 40 % of the pages' CPU), but for the first
quick start, ``examples/quickstart.py``, which runs in a fresh interpreter as a reader
first runs it. What a fresh interpreter does on its own — lazy imports, a first run,
start-up — is the subject of ``test_embedders``, ``test_first_run`` and ``test_demo``.

A block that cannot run here (it needs a remote server with credentials) is marked in the
markdown by an HTML comment on the line right before its fence,
``<!-- not-run: why -->``; :data:`NOT_RUN` lists every such block, so the test fails
when a block is skipped silently or a new one is marked without updating it. A block
that reads ``CHROMA_HOST`` gets the test session's Chroma server (``chroma_server``), and
a page with a block that reads ``MARS_POSTGRES_URL`` a schema of its own on the session's
PostgreSQL server (``postgres_url``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import children
import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = "examples/quickstart.py"
"""The first thing a reader runs: in a fresh interpreter, and it must show what its page says."""
DOCS = ROOT / "docs"
_INCLUDE = re.compile(r'--8<--\s+"([^"]+)"')
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<why>.+?)\s*-->")

NOT_RUN: dict[tuple[str, int], str] = {
    ("deployment.md", 3): "needs a Chroma server behind TLS with token auth",
    ("deployment.md", 4): "needs a Qdrant cluster and its API key",
    ("migration.md", 1): "needs your configured mem0 (an LLM and embedding provider)",
}
"""The only blocks not executed: (page, block number on the page) → the marked reason."""

_RUNNER = r'''
import json, sys, traceback
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
sys.argv = [blocks[0]["page"]] if blocks else ["page"]  # as a script run without arguments
scope = {"__name__": "__main__"}
for block in blocks:
    print(f"=== block {block['number']} (line {block['line']})", flush=True)
    try:
        exec(compile(block["code"], f"{block['page']}:{block['line']}", "exec"), scope)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED block {block['number']} of {block['page']} (line {block['line']})",
              file=sys.stderr)
        sys.exit(1)
'''


@dataclass(frozen=True)
class Block:
    """One ```python block of a docs page."""

    page: str  # relative to docs/
    number: int  # 1-based, in page order
    line: int  # of the opening fence
    code: str
    not_run: str | None  # the reason marked before it, if any
    includes: tuple[str, ...]  # files it includes with --8<--


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for number, m in enumerate(_FENCE.finditer(text), start=1):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _NOT_RUN.search(before)
        code = textwrap.dedent(m.group("body"))
        includes = tuple(_INCLUDE.findall(code))
        out.append(Block(str(page.relative_to(DOCS)), number, text.count("\n", 0, m.start()) + 1,
                         code, mark.group("why") if mark else None, includes))
    return out


ALL_BLOCKS = [b for page in sorted(DOCS.rglob("*.md")) for b in _blocks(page)]


def _included() -> list[str]:
    found = {m.group(1) for page in DOCS.rglob("*.md")
             for m in _INCLUDE.finditer(page.read_text(encoding="utf-8"))}
    return sorted(found)


def _expanded(block: Block) -> str:
    """The code as the site shows it: ``--8<--`` lines replaced by the included file."""
    if not block.includes:
        return block.code
    return _INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), block.code)


def _include_only(blocks: list[Block]) -> bool:
    return all(b.includes and _INCLUDE.sub("", b.code).strip() == "" for b in blocks)


def _pages_to_run() -> list[str]:
    """Pages with a block to run here (pages that only include example files are run by
    ``test_included_example_runs``)."""
    pages: dict[str, list[Block]] = {}
    for b in ALL_BLOCKS:
        if b.not_run is None:
            pages.setdefault(b.page, []).append(b)
    return sorted(p for p, blocks in pages.items() if not _include_only(blocks))


def test_docs_include_examples() -> None:
    assert QUICKSTART in _included()


def test_every_python_block_is_found() -> None:
    # the pages this test was written against; more pages only add blocks
    pages = {b.page for b in ALL_BLOCKS}
    assert {"quickstart.md", "concepts/privacy.md", "deployment.md", "migration.md",
            "integrations/langgraph_store.md", "benchmarks/fifa.md"} <= pages
    assert len(ALL_BLOCKS) >= 19


def test_only_marked_blocks_are_skipped() -> None:
    skipped = {(Path(b.page).name, b.number): b.not_run for b in ALL_BLOCKS if b.not_run}
    assert skipped == NOT_RUN, "\n".join(
        f"{page} block {n}: {why}" for (page, n), why in sorted(skipped.items()))
    for b in ALL_BLOCKS:  # a skipped block is never an include (those run as files)
        assert not (b.not_run and b.includes), (b.page, b.number)


def _shows_forgetting_and_erasure(out: str) -> None:
    assert "allergic to peanuts" in out
    assert "why: " in out and ("evicted by hybrid" in out or "consolidated" in out)
    assert "erasure (entity)" in out and "audit chain ok: True" in out


@pytest.mark.parametrize("path", [p for p in _included() if p.endswith(".py")])
def test_included_example_runs(path: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MARS_PATH": str(tmp_path / "store")}
    start = subprocess.run if path == QUICKSTART else children.run  # as a reader first runs it
    out = start([sys.executable, str(ROOT / path)], check=False, cwd=tmp_path, env=env,
                capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), f"{path} printed nothing"
    if path == QUICKSTART:  # the quick start shows what the page says it does
        _shows_forgetting_and_erasure(out.stdout)


@pytest.mark.parametrize("page", _pages_to_run())
def test_page_blocks_run(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = [b for b in ALL_BLOCKS if b.page == page and b.not_run is None]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MARS_EMBEDDER": "hashing",
           "MARS_PATH": str(tmp_path / "store")}
    on_server = any("CHROMA_HOST" in b.code for b in blocks)
    if on_server:
        server = request.getfixturevalue("chroma_server")
        env.update(CHROMA_HOST=server.host, CHROMA_PORT=str(server.port))
    on_postgres = any("MARS_POSTGRES_URL" in b.code for b in blocks)
    if on_postgres:
        env.update(MARS_POSTGRES_URL=request.getfixturevalue("postgres_url"))
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([{"page": b.page, "number": b.number, "line": b.line,
                                 "code": _expanded(b)} for b in blocks]), encoding="utf-8")
    work = tmp_path / "cwd"
    work.mkdir()
    out = children.run([sys.executable, "-c", _RUNNER, str(spec)], check=False, cwd=work,
                       env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    ran = re.findall(r"^=== block (\d+)", out.stdout, re.MULTILINE)
    assert [int(n) for n in ran] == [b.number for b in blocks]
    if on_server:  # the block really reached the test server
        assert "chroma (instance passed)" in out.stdout, out.stdout[-2000:]
    if on_postgres:  # and the PostgreSQL one
        assert "postgresql | numpy" in out.stdout, out.stdout[-2000:]
