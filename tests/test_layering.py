"""The package's import graph keeps DESIGN §2's layering: no import cycle, and nothing
below the engine imports it or the store.

The graph is read from the source with :mod:`ast` (nothing is imported). An edge is one
``import``/``from ... import`` naming a module of ``mars_core``: ``from a.b import c``
is an edge to ``a.b.c`` when that is a module, else to ``a.b``; the parent packages
Python runs on the way are not edges (``mars_core/__init__`` re-exports the store, so
every module would otherwise reach everything).

Three graphs:

* ``module``: the imports that run when a module is imported (top level, ``try`` and
  ``if`` blocks) — imports inside functions and under ``TYPE_CHECKING`` are left out;
  no cycle anywhere in ``mars_core``;
* ``every``: all imports, those inside functions and under ``TYPE_CHECKING`` too (a
  cycle a lazy import hides is still a cycle); no cycle anywhere either, the benchmarks'
  report and docs generators included;
* the one-way rule is checked on ``every``: no module below the engine imports
  ``mars_core.engine`` or ``mars_core.store``, even lazily or for annotations.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import mars_core

ROOT = Path(mars_core.__file__).parent

ABOVE_ENGINE = (
    "mars_core.engine",
    "mars_core.store", "mars_core.rights", "mars_core.opening",  # the façade
    "mars_core.knowledge.speakers",  # adapters' argument checks, with the façade's (engine.args)
    "mars_core.tools", "mars_core.io.transfer", "mars_core.mcp_server", "mars_core.demo",
    "mars_core.io.importers", "mars_core.io.inspect", "mars_core.cli",  # built on the façade
    "mars_core.control", "mars_core.bench", "mars_core.testing",
)
"""The engine, the façade and what is built on the façade (a module under one of these
names counts as it), and the package itself (``mars_core/__init__`` re-exports the store).
Every other module is below the engine."""

UP = ("mars_core.engine", "mars_core.store")


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["mars_core", *path.relative_to(ROOT).with_suffix("").parts]
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                          node.finalbody):
                yield from _run_at_import(block)


def _targets(name: str, package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    base = node.module or ""
    if node.level:
        here = name.split(".") if package else name.split(".")[:-1]
        here = here[:len(here) - node.level + 1]
        base = ".".join([*here, *([node.module] if node.module else [])])
    subs = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
    rest = {base} if len(subs) < len(node.names) and base in MODULES else set()
    return subs | rest


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _graph(every: bool) -> dict[str, set[str]]:
    """The graph (read once per run: the tests only look at it)."""
    graph = {}
    for name, (path, package) in MODULES.items():
        tree = _tree(path)
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)] \
            if every else list(_run_at_import(tree.body))
        graph[name] = set().union(*(_targets(name, package, n) for n in nodes)) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(_cycle_in(graph, comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _cycle_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth first)."""
    start = min(comp)
    prev: dict[str, str | None] = {start: None}
    queue = [start]
    for v in queue:
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while (p := prev[path[-1]]) is not None:
                    path.append(p)
                return [*reversed(path), start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError("a strongly connected component without a cycle")  # pragma: no cover


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _show(cycles: list[list[str]]) -> str:
    return "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_graph_is_read() -> None:
    graph = _graph(every=True)
    assert "mars_core.views.namespace" in graph["mars_core.reading.retrieval"]
    assert "mars_core.engine.engine" in graph["mars_core.engine"]
    assert "mars_core.store" in graph["mars_core"]
    assert "mars_core.policies.plan" in graph["mars_core.shares"]


def test_the_cycle_finder_finds_and_prints_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert "a -> b -> c -> a" in _show(_cycles(graph))


def test_no_import_cycle_at_import_time() -> None:
    cycles = _cycles(_graph(every=False))
    assert not cycles, _show(cycles)


def test_no_import_cycle_even_lazily() -> None:
    cycles = _cycles(_graph(every=True))
    assert not cycles, _show(cycles)


@pytest.mark.parametrize("up", UP)
def test_nothing_below_the_engine_imports_it(up: str) -> None:
    wrong = sorted(f"{m} -> {d}" for m, deps in _graph(every=True).items()
                   if m != "mars_core" and not _under(m, ABOVE_ENGINE)
                   for d in deps if _under(d, (up,)))
    assert not wrong, "imports against DESIGN §2's one-way rule:\n" + "\n".join(wrong)


def test_storage_and_index_import_neither_each_other_nor_anything_above() -> None:
    """DESIGN §2: storage and index depend on nothing but the model (and the leaf
    helpers every layer shares); the type both need (:class:`~mars_core.model.IndexRow`)
    is the model's."""
    graph = _graph(every=True)
    allowed = ("mars_core.model", "mars_core.errors", "mars_core.audit", "mars_core._guard",
               "mars_core._lockfile", "mars_core.progress",
               "mars_core.reading.analysis")  # leaves: they import nothing of mars_core but errors
    for layer, other in (("mars_core.storage", "mars_core.index"),
                         ("mars_core.index", "mars_core.storage")):
        wrong = sorted(f"{m} -> {d}" for m, deps in graph.items() if _under(m, (layer,))
                       for d in deps if not _under(d, (layer, *allowed)))
        assert not wrong, f"{layer} imports beyond the model:\n" + "\n".join(wrong)
        assert not any(_under(d, (other,)) for m, deps in graph.items()
                       if _under(m, (layer,)) for d in deps)
