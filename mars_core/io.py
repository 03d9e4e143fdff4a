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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic

from mars_core.errors import ImportFormatError
from mars_core.model import Edge, MemoryNode, MemoryType

__all__ = ["CONTEXT", "JSONLD_VERSION", "from_jsonld", "to_jsonld", "write_json"]

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


def _node_doc(node: MemoryNode) -> dict[str, Any]:
    body = node.model_dump(mode="json", exclude={"id", "type"})
    return {"@id": _MEM + node.id, "@type": _TYPES[node.type], **body}


def _edge_doc(edge: Edge) -> dict[str, Any]:
    return {"@type": "rdf:Statement", "rdf:subject": {"@id": _MEM + edge.source},
            "rdf:predicate": {"@id": _PRED + edge.predicate.value},
            "rdf:object": {"@id": _MEM + edge.target}, "weight": edge.weight, "step": edge.step}


def to_jsonld(nodes: Sequence[MemoryNode], edges: Sequence[Edge],
              steps: Mapping[str, int]) -> dict[str, Any]:
    """The JSON-LD document of some nodes, their edges and namespace counters."""
    return {
        "@context": CONTEXT,
        "@type": "mars:MemoryExport",
        "mars:formatVersion": JSONLD_VERSION,
        "mars:namespaces": {ns: {"step": s} for ns, s in steps.items()},
        "@graph": [_node_doc(n) for n in nodes] + [_edge_doc(e) for e in edges],
    }


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write JSON atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=False, indent=1, allow_nan=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(source: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    path = Path(source)
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise ImportFormatError(f"{path} is larger than {MAX_IMPORT_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"cannot read JSON-LD from {path}: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ImportFormatError("a JSON-LD export must be a JSON object")
    return data


def _ref(value: Any, prefix: str, what: str) -> str:
    if not isinstance(value, Mapping) or not isinstance(value.get("@id"), str) \
            or not value["@id"].startswith(prefix):
        raise ImportFormatError(f"{what} must be {{'@id': '{prefix}…'}}")
    return str(value["@id"])[len(prefix):]


def _parse_node(item: Mapping[str, Any]) -> MemoryNode:
    raw_id = item.get("@id")
    if not isinstance(raw_id, str) or not raw_id.startswith(_MEM):
        raise ImportFormatError(f"a memory's @id must start with {_MEM!r}")
    body = {k: v for k, v in item.items() if not k.startswith("@")}
    try:
        return MemoryNode.model_validate(
            {**body, "id": raw_id[len(_MEM):], "type": _FROM_TYPE[item["@type"]]})
    except pydantic.ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                         for e in exc.errors(include_input=False, include_url=False))
        raise ImportFormatError(f"invalid memory {raw_id}: {msgs}") from None


def _parse_edge(item: Mapping[str, Any]) -> Edge:
    try:
        return Edge(source=_ref(item.get("rdf:subject"), _MEM, "rdf:subject"),
                    predicate=_ref(item.get("rdf:predicate"), _PRED, "rdf:predicate"),
                    target=_ref(item.get("rdf:object"), _MEM, "rdf:object"),
                    weight=item.get("weight", 1.0), step=item.get("step", 0))
    except pydantic.ValidationError as exc:
        msgs = "; ".join(e["msg"] for e in exc.errors(include_input=False, include_url=False))
        raise ImportFormatError(f"invalid edge: {msgs}") from None


def from_jsonld(
    source: str | os.PathLike[str] | Mapping[str, Any],
) -> tuple[list[MemoryNode], list[Edge], dict[str, int]]:
    """Parse and validate an export: ``(nodes, edges, steps)``.

    Raises:
        ImportFormatError: anything malformed, unknown, duplicated or dangling.
    """
    doc = _load(source)
    if doc.get("@type") != "mars:MemoryExport":
        raise ImportFormatError("not a mars-memory export (@type must be 'mars:MemoryExport')")
    if doc.get("mars:formatVersion") != JSONLD_VERSION:
        raise ImportFormatError(f"unsupported export version {doc.get('mars:formatVersion')!r}")
    graph = doc.get("@graph")
    if not isinstance(graph, list):
        raise ImportFormatError("@graph must be a list")
    nodes: list[MemoryNode] = []
    edges: list[Edge] = []
    for item in graph:
        if not isinstance(item, Mapping):
            raise ImportFormatError("every @graph item must be an object")
        kind = item.get("@type")
        if kind in _FROM_TYPE:
            nodes.append(_parse_node(item))
        elif kind == "rdf:Statement":
            edges.append(_parse_edge(item))
        else:
            raise ImportFormatError(f"unknown @type {kind!r} in @graph")
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        raise ImportFormatError("duplicate memory @id in the export")
    if len({e.key for e in edges}) != len(edges):
        raise ImportFormatError("duplicate edge in the export")
    return nodes, edges, _steps(doc.get("mars:namespaces", {}))


def _steps(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise ImportFormatError("mars:namespaces must be an object")
    steps = {}
    for ns, data in raw.items():
        step = data.get("step") if isinstance(data, Mapping) else None
        if not isinstance(ns, str) or not isinstance(step, int) or isinstance(step, bool) \
                or step < 0:
            raise ImportFormatError(f"bad namespace entry {ns!r}")
        steps[ns] = step
    return steps
