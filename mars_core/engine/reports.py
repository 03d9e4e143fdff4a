"""What the store reports of itself: ``stats()`` and the JSON-LD export, each read in one
snapshot of the records (no namespace is loaded for either).

Examples:
    >>> from mars_core.config import StoreConfig
    >>> from mars_core.storage import SQLiteRecordStore
    >>> report(SQLiteRecordStore(), StoreConfig(), {"records": "sqlite"}, None)
    {'records': 'sqlite', 'audit_events': 0, 'namespaces': {}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mars_core.budget import ElasticState
from mars_core.config import StoreConfig
from mars_core.model import Edge, MemoryNode, MemoryType
from mars_core.storage.base import NamespaceTotals, RecordStore

__all__ = ["export", "report"]


def report(records: RecordStore, config: StoreConfig, head: Mapping[str, Any],
           namespace: str | None) -> dict[str, Any]:
    """Counts, token use and configuration (of one namespace, or of all), read in one
    snapshot of the records, after ``head`` (what the store is built of)."""
    with records.read() as tx:
        totals = tx.totals(namespace)
        names = [namespace] if namespace is not None else list(totals)
        per = {}
        for ns in names:
            t = totals.get(ns) or NamespaceTotals()
            record = tx.namespace(ns)
            base = config.budget_for(ns)
            elastic = None if config.elastic is None else ElasticState.load(
                (record.state if record else {}).get("elastic"), config.elastic, base)
            per[ns] = {"active": t.active, "archived": t.archived, "tokens": t.tokens,
                       "budget": base if elastic is None else elastic.budget,
                       **({} if elastic is None else {"budget_base": base,
                                                      "elastic": elastic.as_dict()}),
                       "tokens_by_type": {m.value: t.tokens_by_type.get(m, 0)
                                          for m in MemoryType},
                       "step": record.step if record else 0}
        events = tx.audit_size()
    return {**head, "audit_events": events, "namespaces": per}


def export(records: RecordStore, namespace: str | None) -> dict[str, Any]:
    """The JSON-LD document of one namespace or of all, read in one snapshot of the
    records."""
    from mars_core.io.jsonld import to_jsonld

    nodes: list[MemoryNode] = []
    edges: list[Edge] = []
    steps: dict[str, int] = {}
    with records.read() as tx:
        for ns in [namespace] if namespace is not None else list(tx.totals()):
            found = tx.memories(ns)
            if not found:
                continue
            nodes += found
            edges += tx.edges(ns)
            record = tx.namespace(ns)
            steps[ns] = record.step if record else 0
    nodes.sort(key=lambda n: n.seq)
    return to_jsonld(nodes, sorted(edges, key=lambda e: e.key), dict(sorted(steps.items())))
