"""What the store reports of itself: ``stats()`` and the JSON-LD export, each read in one
snapshot of the records (no namespace is loaded for either).

Examples:
    >>> from mars_core.config import StoreConfig
    >>> from mars_core.storage import SQLiteRecordStore
    >>> report(SQLiteRecordStore(), StoreConfig(), {"records": "sqlite"}, None)
    {'records': 'sqlite', 'audit_events': 0, 'namespaces': {}}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mars_core.budget import ElasticState
from mars_core.config import StoreConfig
from mars_core.model import Edge, MemoryNode, MemoryType
from mars_core.storage.base import NamespaceTotals, RecordStore, RecordTxn

if TYPE_CHECKING:
    from mars_core.io.jsonld import ExportSummary

__all__ = ["export", "report", "write_export"]


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
    records (held whole: :func:`write_export` streams it to a file instead)."""
    from mars_core.io.jsonld import to_jsonld

    with records.read() as tx:
        steps = _exported(tx, namespace)
        return to_jsonld(*_content(tx, steps), steps)


def write_export(records: RecordStore, namespace: str | None, path: Path) -> ExportSummary:
    """Write the JSON-LD document of one namespace or of all to ``path``, read in one
    snapshot of the records a batch at a time (never a namespace whole)."""
    from mars_core.io.jsonld import write_jsonld

    with records.read() as tx:
        steps = _exported(tx, namespace)
        return write_jsonld(path, *_content(tx, steps), steps)


def _exported(tx: RecordTxn, namespace: str | None) -> dict[str, int]:
    """The namespaces an export holds (those with a memory), sorted, with their step."""
    return {ns: record.step if (record := tx.namespace(ns)) else 0
            for ns in sorted(tx.totals(namespace))}


def _content(tx: RecordTxn, names: Iterable[str]
             ) -> tuple[Iterator[MemoryNode], Iterator[Edge]]:
    """The memories (namespace by namespace, by ``seq``) and then the edges (by key) of
    ``names``, read lazily in batches."""
    names = list(names)
    return ((n for ns in names for batch in tx.scan(ns) for n in batch),
            (e for ns in names for batch in tx.scan_edges(ns) for e in batch))
