"""``check_invariants(store)``: the DESIGN §3 invariants, checked from the outside in.

Uses the public API where it can, and the store's internal views (``_state``), audit
log (``audit``) and backend (``backend``) where the public API does not reach.
Invariant 3 (task-safety) is a preference that yields to the budget, so it is not
checked here.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from mars_core import codec
from mars_core.audit import GENESIS, AuditOp
from mars_core.model import MemoryStatus, Predicate
from mars_core.store import MemoryStore

__all__ = ["check_invariants", "snapshot"]

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
        st = store._state
        nodes = dict(st.nodes)
        events = store.audit.events()
        active = {i for i, n in nodes.items() if n.status is MemoryStatus.ACTIVE}
        archived = {i for i, n in nodes.items() if n.status is MemoryStatus.ARCHIVED}
        namespaces = sorted({n.namespace for n in nodes.values()})

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
        assert (st.total(MemoryStatus.ACTIVE), st.total(MemoryStatus.ARCHIVED)) == (
            len(active), len(archived))  # the running totals the dense channel's plan reads

        # (2) provenance closure: every derivesFrom target exists (active or archived)
        for edge in st.graph.edges():
            assert edge.source in nodes, f"edge from a missing node: {edge.key}"
            assert edge.target in nodes, f"edge to a missing node: {edge.key}"
            assert nodes[edge.source].namespace == nodes[edge.target].namespace, edge.key
        for nid, node in nodes.items():
            for target in node.provenance.derived_from:
                assert target in nodes, f"{nid} derives from missing {target}"
            for edge in st.graph.out_edges(nid, Predicate.DERIVES_FROM):
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
            last_restore = max((ev.seq for ev in mine if ev.op is AuditOp.RESTORE), default=-1)
            # an evict event after the last restore (or the import that brought it archived)
            assert any(ev.seq > last_restore and (
                (ev.op is AuditOp.EVICT and ev.node_ids[0] == nid) or ev.op is AuditOp.IMPORT
                or (ev.op is AuditOp.SUMMARISE and nid in ev.node_ids[1:]))
                for ev in mine), f"archived {nid} has no evict/summarise event after its restore"
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
        # the persisted chain head agrees with the in-memory log
        unseal = store._unseal  # None unless the store was opened with keys_path
        meta = dict(codec.decode_meta(r, unseal) for r in store.backend.get(codec.META))
        state = meta.get("state", {"audit_count": 0, "audit_head": GENESIS})
        assert state["audit_count"] == len(store.audit)
        assert state["audit_head"] == store.audit.head
        persisted = sorted(codec.decode_audit(r).seq for r in store.backend.get(codec.AUDIT))
        assert persisted == list(range(len(events)))

        # (6) the views agree with the backend, the system of record
        for coll, ids in ((codec.MEMORIES, active), (codec.ARCHIVE, archived)):
            records = store.backend.get(coll)
            assert {r.id for r in records} == ids, f"{coll} differs from the view"
            assert len(records) == len(ids), f"{coll} holds duplicates"
            for rec in records:
                node, edges = codec.decode_node(rec, unseal)
                assert node == nodes[rec.id], f"record {rec.id} differs from the view"
                assert {e.key for e in edges} == {e.key for e in st.owned.get(rec.id, [])}, (
                    f"edges of record {rec.id} differ from the view")
                assert rec.metadata["namespace"] == node.namespace
                assert rec.metadata["status"] == node.status.value
        for nid, node in nodes.items():
            assert nid in set(st.ids(node.namespace, node.status))
            for edge in st.owned.get(nid, []):
                # an edge is stored with the memory it was created with, one of its ends
                # (observe() stores temporalNext with the newer turn)
                assert nid in (edge.source, edge.target)

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


def snapshot(store: MemoryStore) -> tuple[Any, int, Any]:
    """What must not change when a call is rejected: export, audit length, stats."""
    return store.export_jsonld(), len(store.audit), store.stats()
