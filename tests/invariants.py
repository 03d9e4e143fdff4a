"""``check_invariants(store)``: the DESIGN §3 invariants, checked from the outside in.

Uses the public API where it can, and the seams of :mod:`mars_core.testing` (the record
store, the cached namespace states, the index sync and the vector index) where the public
API does not reach.
Invariant 3 (task-safety) is a preference that yields to the budget, so it is not
checked here.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from mars_core.audit import GENESIS, AuditOp
from mars_core.model import Edge, MemoryNode, MemoryStatus, Predicate
from mars_core.store import MemoryStore
from mars_core.testing import cached_states, index_sync, record_store, vector_index

__all__ = ["check_caches", "check_invariants", "snapshot"]

_CREATE = (AuditOp.INSERT, AuditOp.UPDATE, AuditOp.IMPORT)


def _created_ids(ev: Any) -> list[str]:
    """Ids an audit event *creates*: insert/update/summarise name the new node first,
    import all."""
    if ev.op is AuditOp.IMPORT:
        return list(ev.node_ids)
    if ev.op in (AuditOp.INSERT, AuditOp.UPDATE, AuditOp.SUMMARISE):
        return list(ev.node_ids[:1])
    return []


def check_invariants(store: MemoryStore) -> None:
    """Assert invariants 1, 2, 4, 5, 6 and 7 of DESIGN §3 (and view/stat consistency)."""
    with store._lock:
        records = _records(store)
        nodes, edges, archived, namespaces = (records.nodes, records.edges, records.archived,
                                              records.namespaces)
        events = store.audit.events()

        # (1) budget: Σ weight of active nodes of a namespace ≤ its budget
        stats = store.stats()
        for ns in namespaces:
            used = sum(n.weight for n in nodes.values() if n.namespace == ns and n.is_active)
            budget = store.config.budget_for(ns)
            assert used <= budget, f"namespace {ns!r} uses {used} > budget {budget}"
            per = stats["namespaces"][ns]
            assert per["tokens"] == used, (ns, per, used)
            assert per["active"] == sum(
                1 for n in nodes.values() if n.namespace == ns and n.is_active)
            assert per["archived"] == sum(
                1 for n in nodes.values() if n.namespace == ns and not n.is_active)
        assert stats["audit_events"] == len(events)

        # (2) provenance closure: every derivesFrom target exists (active or archived)
        for edge in edges:
            assert edge.source in nodes, f"edge from a missing node: {edge.key}"
            assert edge.target in nodes, f"edge to a missing node: {edge.key}"
            assert nodes[edge.source].namespace == nodes[edge.target].namespace, edge.key
        for nid, node in nodes.items():
            for target in node.provenance.derived_from:
                assert target in nodes, f"{nid} derives from missing {target}"
            for edge in edges:
                if edge.source == nid and edge.predicate is Predicate.DERIVES_FROM:
                    assert edge.target in nodes, f"{nid} derives from missing {edge.target}"

        # (4) archive before delete: created and never erased => still exists
        erased = {i for ev in events if ev.op is AuditOp.ERASE for i in ev.node_ids}
        created = Counter(i for ev in events for i in _created_ids(ev))
        for nid in created:
            if nid not in erased:
                assert nid in nodes, f"{nid} was created, never erased, and is gone"

        # (5) audit completeness
        for nid in nodes:
            assert created[nid] == 1, f"{nid} has {created[nid]} creating events"
        for nid in archived:
            mine = store.audit.for_node(nid)
            last_restore = max((i for i, ev in enumerate(mine) if ev.op is AuditOp.RESTORE),
                               default=-1)
            # an evict event after the last restore (or the import that brought it archived)
            assert any(i > last_restore and (
                (ev.op is AuditOp.EVICT and ev.node_ids[0] == nid) or ev.op is AuditOp.IMPORT
                or (ev.op is AuditOp.SUMMARISE and nid in ev.node_ids[1:]))
                for i, ev in enumerate(mine)), \
                f"archived {nid} has no evict/summarise event after its restore"
        for ev in events:
            if ev.op is AuditOp.ACCESS:
                assert ev.node_ids, "an access event lists no memory"
                for nid in ev.node_ids:
                    assert nid in nodes or nid in erased, f"access event names unknown {nid}"
            if ev.op is AuditOp.EVICT:
                assert len(ev.node_ids) == 1
        # events never hold raw text (long contents are searched for in every text field)
        blob = "\x00".join(ev.rationale + "\x00" + json.dumps(ev.params, ensure_ascii=False)
                           for ev in events)
        for node in nodes.values():
            if len(node.content) >= 12:
                assert node.content not in blob, f"audit events hold the text of {node.id}"
        report = store.verify()
        assert report.ok, report
        assert report.checked == len(events)
        # every namespace's chain ends where its record says, seq by seq
        with record_store(store).read() as tx:
            for ns in tx.namespace_names():
                record = tx.namespace(ns)
                chain = tx.audit(ns)
                assert [e.seq for e in chain] == list(range(len(chain)))
                assert record is not None and record.audit_count == len(chain)
                assert record.audit_head == (chain[-1].hash if chain else GENESIS)

        _check_caches(store, records)

        # (7) isolation: a read of namespace A returns only memories of A, even when the
        # query is made of words from every namespace
        words: list[str] = []
        for node in sorted(nodes.values(), key=lambda n: n.seq):
            words.extend(node.content.split()[:3])
        query = " ".join(dict.fromkeys(words[:60])) or "anything"
        for ns in namespaces:  # still under the (re-entrant) lock: no write in between
            hits = store.retrieve(query, namespace=ns, budget_tokens=10**6, k=1000,
                                  read_only=True, include_archive=True)
            assert all(h.node.namespace == ns for h in hits), f"retrieve({ns!r}) leaked"
            assert all(h.node.id in nodes for h in hits)
            for h in hits:
                assert h.archived == (h.node.status is MemoryStatus.ARCHIVED)


def check_caches(store: MemoryStore) -> None:
    """Assert invariant 6 alone: the cached views and the vector index agree with the
    records. What a refused call can break without changing a record (the records
    themselves a caller compares with :func:`snapshot`)."""
    with store._lock:
        _check_caches(store, _records(store))


class _Records(NamedTuple):
    """What the records hold: every memory (by id) and edge of every namespace, and the
    ids of the active and archived memories and the namespaces among them."""

    nodes: dict[str, MemoryNode]
    edges: list[Edge]
    active: set[str]
    archived: set[str]
    namespaces: list[str]


def _records(store: MemoryStore) -> _Records:
    nodes: dict[str, MemoryNode] = {}
    edges: list[Edge] = []
    with record_store(store).read() as tx:
        for ns in tx.namespace_names():
            nodes.update((n.id, n) for n in tx.memories(ns))
            edges += tx.edges(ns)
    return _Records(nodes, edges,
                    {i for i, n in nodes.items() if n.status is MemoryStatus.ACTIVE},
                    {i for i, n in nodes.items() if n.status is MemoryStatus.ARCHIVED},
                    sorted({n.namespace for n in nodes.values()}))


def _check_caches(store: MemoryStore, records: _Records) -> None:
    nodes, edges, active, archived, namespaces = records
    # (6) the cached views agree with the records, the system of record, and hold
    # the active memories and their edges (what else they hold is the records'), and
    # the index holds exactly the active and archived memories of each namespace
    for state in cached_states(store):
        ns = state.name
        mine = {i for i, n in nodes.items() if n.namespace == ns}
        assert set(state.active_ids()) == active & mine, \
            f"the views of {ns!r} differ from the records"
        assert state.count(MemoryStatus.ARCHIVED) == len(archived & mine)
        for nid, held in state.nodes.items():
            assert nid in mine and held == nodes[nid], f"view of {nid} differs"
        assert state.used == sum(nodes[i].weight for i in active & mine)
        mine_edges = {e.key for e in edges if nodes[e.source].namespace == ns}
        held = {e.key for e in state.graph.edges()}
        assert held <= mine_edges
        assert {k for k in mine_edges if k[0] in active or k[2] in active} <= held
    index_sync(store).ensure_current()
    for ns in namespaces:
        probe = np.ones(store.embedder.dim, dtype=np.float32)
        for status, ids in ((MemoryStatus.ACTIVE, active), (MemoryStatus.ARCHIVED, archived)):
            want = {i for i in ids if nodes[i].namespace == ns}
            got = {i for i, _ in vector_index(store).query(ns, status, probe, len(want) + 10)}
            assert got == want, f"the index's {status.value} entries of {ns!r} differ"


def snapshot(store: MemoryStore) -> tuple[Any, int, Any]:
    """What must not change when a call is rejected: export, audit length, stats."""
    return store.export_jsonld(), len(store.audit), store.stats()
