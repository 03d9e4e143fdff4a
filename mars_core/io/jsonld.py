"""JSON-LD export and import (seed 000 §3.2.9).

Each memory is a document with ``@id`` and ``@type`` (``Episodic``, ``Semantic``,
``Social``, ``Task``) and every field of the node — timestamps, sensitivity, weight,
provenance, statistics; each edge is an RDF-style statement with ``rdf:subject``,
``rdf:predicate`` and ``rdf:object``. An export round-trips exactly: importing it
gives the same nodes, edges and interaction counters (vectors are recomputed by the
importing store's embedder; the audit chain is the importing store's own, starting
with one ``import`` event per namespace).

Examples:
    >>> doc = to_jsonld([], [], {})
    >>> doc["@type"], from_jsonld(doc)
    ('mars:MemoryExport', ([], [], {}))
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pydantic

from mars_core.errors import ImportFormatError
from mars_core.io.checks import (
    check_lineage,
    check_namespace,
    check_node,
    check_tree,
    check_uuid,
    counter,
)
from mars_core.model import Edge, MemoryNode, MemoryType, Predicate

__all__ = ["CONTEXT", "JSONLD_VERSION", "MAX_IMPORT_BYTES", "ExportSummary", "from_jsonld",
           "load_jsonld", "memory_count", "to_jsonld", "write_json", "write_jsonld"]

JSONLD_VERSION = 1
_VOCAB = "https://mars-memory.dev/ns#"
CONTEXT: dict[str, Any] = {
    "@vocab": _VOCAB,
    "mars": _VOCAB,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "created_at": {"@type": "xsd:dateTime"},
}
_TYPES = {t: t.value.capitalize() for t in MemoryType}
_FROM_TYPE = {v: k for k, v in _TYPES.items()}
_MEM = "mars:memory/"
_PRED = "mars:"
MAX_IMPORT_BYTES = 512 * 1024 * 1024
"""Largest JSON-LD file an import reads."""
_DOC_KEYS = frozenset({"@context", "@type", "mars:formatVersion", "mars:namespaces", "@graph"})
_EDGE_KEYS = frozenset({"@type", "rdf:subject", "rdf:predicate", "rdf:object", "weight",
                        "step"})
_PREDICATES = frozenset(p.value for p in Predicate)


def _node_doc(node: MemoryNode) -> dict[str, Any]:
    body = node.model_dump(mode="json", exclude={"id", "type"})
    return {"@id": _MEM + node.id, "@type": _TYPES[node.type], **body}


def _edge_doc(edge: Edge) -> dict[str, Any]:
    return {"@type": "rdf:Statement", "rdf:subject": {"@id": _MEM + edge.source},
            "rdf:predicate": {"@id": _PRED + edge.predicate.value},
            "rdf:object": {"@id": _MEM + edge.target}, "weight": edge.weight, "step": edge.step}


def _head(steps: Mapping[str, int]) -> dict[str, Any]:
    """An export's document without its ``@graph``."""
    return {"@context": CONTEXT, "@type": "mars:MemoryExport",
            "mars:formatVersion": JSONLD_VERSION,
            "mars:namespaces": {ns: {"step": s} for ns, s in steps.items()}}


def to_jsonld(nodes: Iterable[MemoryNode], edges: Iterable[Edge],
              steps: Mapping[str, int]) -> dict[str, Any]:
    """The JSON-LD document of some nodes, their edges and namespace counters."""
    return {**_head(steps),
            "@graph": [_node_doc(n) for n in nodes] + [_edge_doc(e) for e in edges]}


@dataclass(frozen=True)
class ExportSummary:
    """What :meth:`~mars_core.store.MemoryStore.write_jsonld` wrote.

    Attributes:
        path: the file.
        memories: memories written (active and archived).
        edges: edges written.
        namespaces: the namespaces exported (those holding a memory), sorted.

    Examples:
        >>> ExportSummary(Path("out.jsonld"), 2, 1, ("default",)).memories
        2
    """

    path: Path
    memories: int
    edges: int
    namespaces: tuple[str, ...]


def write_jsonld(path: Path, nodes: Iterable[MemoryNode], edges: Iterable[Edge],
                 steps: Mapping[str, int]) -> ExportSummary:
    """Write the document :func:`to_jsonld` would build, one ``@graph`` item at a time
    (one item a line), so a store's export never holds more than what ``nodes`` and
    ``edges`` hand over at once; atomically, as :func:`write_json`."""
    count = {"memories": 0, "edges": 0}

    def items() -> Iterator[dict[str, Any]]:
        for node in nodes:
            count["memories"] += 1
            yield _node_doc(node)
        for edge in edges:
            count["edges"] += 1
            yield _edge_doc(edge)

    def write(fh: TextIO) -> None:
        head = json.dumps(_head(steps), ensure_ascii=False, indent=1, allow_nan=False)
        fh.write(head[:-2] + ',\n "@graph": [')
        for i, item in enumerate(items()):
            fh.write(("\n  " if i == 0 else ",\n  ")
                     + json.dumps(item, ensure_ascii=False, allow_nan=False))
        fh.write("\n ]\n}\n")

    _atomic(path, write)
    return ExportSummary(path, count["memories"], count["edges"], tuple(steps))


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write JSON atomically (temporary file, fsync, rename)."""
    _atomic(path, lambda fh: json.dump(doc, fh, ensure_ascii=False, indent=1,
                                       allow_nan=False))


def _atomic(path: Path, write: Callable[[TextIO], None]) -> None:
    """Run ``write`` on a temporary file beside ``path``, then fsync and rename it onto
    ``path``; on any failure the temporary file is removed and ``path`` is untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _read(path: Path) -> Any:
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise ImportFormatError(f"cannot read JSON-LD from {path}: {exc}") from exc
    if size > MAX_IMPORT_BYTES:
        raise ImportFormatError(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: bad JSON, NaN/Infinity, an integer of more than 4300 digits;
        # RecursionError: arrays or objects nested thousands deep
        raise ImportFormatError(f"cannot read JSON-LD from {path}: "
                                f"{str(exc)[:200] or type(exc).__name__}") from exc


def _load(source: object) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        data: Any = source
    elif isinstance(source, str | os.PathLike):
        data = _read(Path(source))
    else:
        raise ImportFormatError(f"cannot import an object of type {type(source).__name__}: "
                                f"give the path of a JSON-LD file or its parsed document "
                                f"(a mapping)")
    if not isinstance(data, Mapping):
        raise ImportFormatError("a JSON-LD export must be a JSON object")
    check_tree(data)
    return data


def load_jsonld(source: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    """Read a JSON-LD document (a path or an already parsed one) within the bounds of
    an import (size, nesting, JSON numbers only); :func:`from_jsonld` checks the rest.

    Raises:
        ImportFormatError: unreadable, too large, not JSON, not an object.
    """
    return _load(source)


def memory_count(doc: Mapping[str, Any]) -> int:
    """How many memories a JSON-LD document holds (its ``@graph`` items typed as one).

    Examples:
        >>> memory_count({"@graph": [{"@type": "Semantic"},
        ...                          {"@type": "rdf:Statement"}]})
        1
    """
    graph = doc.get("@graph")
    if not isinstance(graph, list):
        return 0
    return sum(1 for item in graph if isinstance(item, Mapping)
               and isinstance(item.get("@type"), str) and item["@type"] in _FROM_TYPE)


def _ref(value: Any, prefix: str, what: str) -> str:
    if not isinstance(value, Mapping) or set(value) != {"@id"} \
            or not isinstance(value["@id"], str) or not value["@id"].startswith(prefix):
        raise ImportFormatError(f"{what} must be {{'@id': '{prefix}…'}}")
    return str(value["@id"])[len(prefix):]


def _pydantic_message(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_input=False, include_url=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in errors[:5]]
    more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _parse_node(i: int, item: Mapping[str, Any]) -> MemoryNode:
    raw_id = item.get("@id")
    if not isinstance(raw_id, str) or not raw_id.startswith(_MEM):
        raise ImportFormatError(f"@graph[{i}]: a memory's @id must start with {_MEM!r}")
    nid = check_uuid(raw_id[len(_MEM):], f"@graph[{i}]: @id")
    where = f"@graph[{i}] (memory {nid})"
    unknown = sorted(k for k in item if k in ("id", "type") or
                     (k.startswith("@") and k not in ("@id", "@type")))
    if unknown:
        raise ImportFormatError(f"{where}: unknown field {unknown[0]!r} (the id and type "
                                f"are @id and @type)")
    body = {k: v for k, v in item.items() if not k.startswith("@")}
    body.update(id=nid, type=_FROM_TYPE[item["@type"]].value)
    try:  # strict: no "3" for 3, no true for 1, no 1 for true; dates as ISO 8601 text
        node = MemoryNode.model_validate_json(json.dumps(body, allow_nan=False), strict=True)
    except pydantic.ValidationError as exc:
        raise ImportFormatError(f"{where}: {_pydantic_message(exc)}") from None
    check_node(node, where)
    return node


def _parse_edge(i: int, item: Mapping[str, Any]) -> Edge:
    where = f"@graph[{i}] (edge)"
    unknown = sorted(set(item) - _EDGE_KEYS)
    if unknown:
        raise ImportFormatError(f"{where}: unknown field {unknown[0]!r}")
    source = check_uuid(_ref(item.get("rdf:subject"), _MEM, f"{where}: rdf:subject"),
                        f"{where}: rdf:subject")
    target = check_uuid(_ref(item.get("rdf:object"), _MEM, f"{where}: rdf:object"),
                        f"{where}: rdf:object")
    predicate = _ref(item.get("rdf:predicate"), _PRED, f"{where}: rdf:predicate")
    if predicate not in _PREDICATES:
        raise ImportFormatError(f"{where}: unknown predicate {predicate[:64]!r}; use one of "
                                f"{sorted(_PREDICATES)}")
    weight = item.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ImportFormatError(f"{where}: weight must be a number")
    step = counter(item.get("step", 0), f"{where}: step")
    try:
        edge = Edge(source=source, predicate=Predicate(predicate), target=target,
                    weight=weight, step=step)
    except pydantic.ValidationError as exc:
        raise ImportFormatError(f"{where}: {_pydantic_message(exc)}") from None
    return edge


def _header(doc: Mapping[str, Any]) -> list[Any]:
    unknown = sorted(set(doc) - _DOC_KEYS)
    if unknown:
        raise ImportFormatError(f"unknown top-level key {unknown[0][:64]!r}; an export has "
                                f"{sorted(_DOC_KEYS)}")
    if doc.get("@type") != "mars:MemoryExport":
        raise ImportFormatError("not a mars-memory export (@type must be 'mars:MemoryExport')")
    version = doc.get("mars:formatVersion")
    if type(version) is not int or version != JSONLD_VERSION:
        raise ImportFormatError(f"unsupported export version {str(version)[:20]!r} "
                                f"(mars:formatVersion must be {JSONLD_VERSION})")
    graph = doc.get("@graph")
    if not isinstance(graph, list):
        raise ImportFormatError("@graph must be a list")
    return graph


def from_jsonld(
    source: str | os.PathLike[str] | Mapping[str, Any],
) -> tuple[list[MemoryNode], list[Edge], dict[str, int]]:
    """Parse and validate an export: ``(nodes, edges, steps)``.

    The document is hostile input: it must keep every bound of :mod:`mars_core.io.checks`
    (counters, dates, floats, sizes, nesting, ids), and the references it can check on its
    own: each memory once, each edge from a memory of the document, to one of the same
    namespace when the target is in the document, each ``derived_from`` id matched by a
    ``derivesFrom`` edge, no cycle of ``derivesFrom`` (or of ``supersedes``/``corrects``)
    edges. What needs the store (targets outside the document, id clashes,
    budgets) is checked by the store before it writes.

    Raises:
        ImportFormatError: the first thing malformed, out of bounds, unknown, duplicated
            or dangling, with where it is (``@graph[i]``, the memory's id, the field).
    """
    doc = _load(source)
    graph = _header(doc)
    steps = _steps(doc.get("mars:namespaces", {}))
    nodes: dict[str, tuple[int, MemoryNode]] = {}
    edges: dict[tuple[str, str, str], tuple[int, Edge]] = {}
    for i, item in enumerate(graph):
        if not isinstance(item, Mapping):
            raise ImportFormatError(f"@graph[{i}]: every @graph item must be an object")
        kind = item.get("@type")
        if isinstance(kind, str) and kind in _FROM_TYPE:
            node = _parse_node(i, item)
            if node.id in nodes:
                raise ImportFormatError(f"@graph[{i}]: memory {node.id} appears twice (first "
                                        f"at @graph[{nodes[node.id][0]}])")
            nodes[node.id] = (i, node)
        elif kind == "rdf:Statement":
            edge = _parse_edge(i, item)
            if edge.key in edges:
                raise ImportFormatError(f"@graph[{i}]: duplicate edge (first at "
                                        f"@graph[{edges[edge.key][0]}])")
            edges[edge.key] = (i, edge)
        else:
            raise ImportFormatError(f"@graph[{i}]: unknown @type {str(kind)[:64]!r}")
    _check_references(nodes, edges)
    check_lineage([e for _, e in edges.values()])
    return [n for _, n in nodes.values()], [e for _, e in edges.values()], steps


def _check_references(nodes: Mapping[str, tuple[int, MemoryNode]],
                      edges: Mapping[tuple[str, str, str], tuple[int, Edge]]) -> None:
    """What the document says about itself: edges start at its memories and stay in a
    namespace, derivations have their edges."""
    for i, e in edges.values():
        if e.source not in nodes:
            raise ImportFormatError(f"@graph[{i}] (edge): rdf:subject {e.source} is not a "
                                    f"memory of the document")
        if e.target in nodes and nodes[e.target][1].namespace != nodes[e.source][1].namespace:
            raise ImportFormatError(f"@graph[{i}] (edge): {e.source} {e.predicate.value} "
                                    f"{e.target} crosses namespaces")
    for i, node in nodes.values():
        where = f"@graph[{i}] (memory {node.id})"
        for target in node.provenance.derived_from:
            if (node.id, Predicate.DERIVES_FROM.value, target) not in edges:
                raise ImportFormatError(f"{where}: provenance.derived_from names {target} but "
                                        f"the document has no derivesFrom edge to it")


def _steps(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise ImportFormatError("mars:namespaces must be an object")
    steps = {}
    for ns, data in raw.items():
        where = f"mars:namespaces[{str(ns)[:64]!r}]"
        check_namespace(ns, where)
        if not isinstance(data, Mapping) or set(data) != {"step"}:
            raise ImportFormatError(f"{where}: must be {{'step': <counter>}}")
        steps[ns] = counter(data["step"], f"{where}.step")
    return steps
