"""The record store conformance suite: :class:`RecordStoreConformance`."""

from __future__ import annotations

import gc
import itertools
import pathlib
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from mars_core.audit import AuditChain
from mars_core.errors import (
    ConflictError,
    StoreClosedError,
    ValidationError,
)
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryType,
    Predicate,
    Provenance,
    SemanticPayload,
    default_payload,
)
from mars_core.storage.base import (
    AddEdges,
    AppendAudit,
    Change,
    DeleteMemory,
    InsertMemory,
    NamespaceRecord,
    NamespaceTotals,
    RecordCapabilities,
    RecordStore,
    RecordTxn,
    SetVector,
    UpdateMemory,
    UpdateStats,
    index_fields,
)
from mars_core.testing._common import (
    _AUDIT_KEY,
    _T0,
    ACTIVE,
    ARCHIVED,
    _raises,
    _skip,
    _uid,
)
from mars_core.testing._records_search import FullTextConformance

__all__ = ["RecordStoreConformance"]

# =====================================================================================
# Record store conformance suite
# =====================================================================================


class RecordStoreConformance(FullTextConformance):
    """Protocol tests every :class:`~mars_core.storage.base.RecordStore` must pass.

    Subclass it in a test module, name the subclass ``Test...`` and implement
    :meth:`make_records`. Each test opens its own store under pytest's ``tmp_path`` and
    closes it at the end. The helpers the tests share are
    :class:`~mars_core.testing._records_harness.RecordStoreHarness`'s; the full-text tests
    are :class:`~mars_core.testing._records_search.FullTextConformance`'s.

    Attributes:
        durable: reopening the same path keeps the data; enables the reopen tests
            (write, close, :meth:`reopen`, compare) and, when :meth:`reopen` supports
            it, the ``read_only`` ones.
        dim: dimension of the test vectors.

    Examples:
        >>> import pathlib
        >>> from mars_core.storage import SQLiteRecordStore
        >>> class TestInRAM(RecordStoreConformance):
        ...     def make_records(self, path: pathlib.Path) -> SQLiteRecordStore:
        ...         return SQLiteRecordStore()
        >>> records = TestInRAM().make_records(pathlib.Path("unused"))
        >>> records.capabilities.durable == TestInRAM.durable
        True
        >>> records.close()
    """

    # --- the store ----------------------------------------------------------------------

    def test_satisfies_protocol(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            assert isinstance(records.name, str) and records.name
            assert isinstance(records.location, str) and records.location
            assert isinstance(records.capabilities, RecordCapabilities)
            assert records.capabilities.durable is self.durable
            with records.read() as tx:
                assert isinstance(tx, RecordTxn)

    def test_fresh_store_is_empty(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records, records.read() as tx:
            assert (tx.manifest(), tx.counter(), tx.namespace_names(), tx.totals()) == \
                (None, 0, [], {})
            assert (tx.audit(), tx.audit_size(), tx.changes(0)) == ([], 0, [])
            assert (tx.last_change(), tx.first_change(), tx.memory(_uid(0))) == (0, 0, None)

    def test_manifest_and_counter_round_trip(self, tmp_path: pathlib.Path) -> None:
        manifest = {"format": 3, "embedder": {"name": "x", "dim": 8},
                    "ü": [1, 2.5, None, True, "✓"]}
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_manifest(manifest)
                tx.set_counter(41)
            with records.write() as tx:
                tx.set_counter(42)
            with records.read() as tx:
                assert (tx.manifest(), tx.counter()) == (manifest, 42)

    def test_namespace_records_round_trip(self, tmp_path: pathlib.Path) -> None:
        first = NamespaceRecord("maya", 1, 2, 3, 4, "f" * 64, {"policy": {"w": [0.5, 1]}})
        second = NamespaceRecord("maya", 2, 5, 6, 7, "e" * 64, {})
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(first)
            with records.read() as tx:
                assert (tx.namespace("maya"), tx.namespace("nobody")) == (first, None)
            with records.write() as tx:
                tx.put_namespace(second)
            with records.read() as tx:
                assert tx.namespace("maya") == second

    def test_lock_namespaces_returns_committed_versions(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(NamespaceRecord("ns-a", version=3))
                tx.put_namespace(NamespaceRecord("ns-c", version=1))
            with records.write() as tx:
                assert tx.lock_namespaces(["ns-b", "ns-a"]) == {"ns-a": 3, "ns-b": 0}
                tx.put_namespace(NamespaceRecord("ns-a", version=4))
                assert tx.lock_namespaces([]) == {}
            with records.write() as tx:
                assert tx.lock_namespaces(["ns-a", "ns-c"]) == {"ns-a": 4, "ns-c": 1}

    def test_index_positions_round_trip(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.read() as tx:
                assert tx.index_positions() == {}
            with records.write() as tx:
                tx.lock_index("chroma@http://a:1")
                tx.set_index_position("chroma@http://a:1", 4)
                tx.set_index_position("qdrant@http://b:2", 2)
                tx.put_manifest({"format": 2})  # another meta row is no index
            with records.write() as tx:
                tx.lock_index("chroma@http://a:1")
                tx.set_index_position("chroma@http://a:1", 7)
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@http://a:1": 7,
                                                "qdrant@http://b:2": 2}
                assert tx.index_stamps() == {"chroma@http://a:1": "",
                                             "qdrant@http://b:2": ""}

    def test_index_stamps_stay_beside_their_positions(self, tmp_path: pathlib.Path) -> None:
        """A stamp (which may hold spaces) is kept until another is given; a dropped
        index is gone; a read transaction writes none of it."""
        stamp = "store-1:model name:8:0#4f2a"
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.set_index_position("chroma@/a", 3, stamp)
                tx.set_index_position("chroma@/b", 1, "")
            with records.write() as tx:
                tx.set_index_position("chroma@/a", 9)  # None: keeps the recorded stamp
                tx.set_index_position("chroma@/b", 2, "store-1:m:8:1#77")
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@/a": 9, "chroma@/b": 2}
                assert tx.index_stamps() == {"chroma@/a": stamp, "chroma@/b": "store-1:m:8:1#77"}
                writes: list[Callable[[], None]] = [
                    lambda: tx.set_index_position("chroma@/a", 10, "x"),
                    lambda: tx.drop_index_position("chroma@/a")]
                for call in writes:
                    with _raises(ConflictError):
                        call()
            with records.write() as tx:
                tx.drop_index_position("chroma@/a")
                tx.drop_index_position("never-registered")
            with records.read() as tx:
                assert tx.index_positions() == {"chroma@/b": 2}
                assert tx.index_stamps() == {"chroma@/b": "store-1:m:8:1#77"}

    def test_next_counter_gives_fresh_numbers(self, tmp_path: pathlib.Path) -> None:
        path = tmp_path / "records"
        with self.open_records(path) as records:
            with records.write() as tx:
                tx.set_counter(10)
            taken = [records.next_counter() for _ in range(3)]
            assert taken == sorted(set(taken)) and taken[0] > 10
            with records.read() as tx:
                assert tx.counter() >= taken[-1]
            with records.write() as tx:  # an import moves the counter past its numbers
                tx.set_counter(50)
            taken.append(records.next_counter())
            assert taken[-1] > 50
        if self.durable:
            with self.open_records(path, again=True) as records:
                assert records.next_counter() > taken[-1]

    def test_history_reads_without_loading_a_namespace(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            extra = [self.node(n, type=MemoryType.EPISODIC,
                               payload=default_payload(MemoryType.EPISODIC),
                               provenance=Provenance(conversation_id=conv))
                     for n, conv in ((4, "c9"), (5, None), (6, "c9"))]
            self.insert(records, *extra)
            with records.read() as tx:
                assert [n.id for n in tx.memories_by_id("ns-a", [_uid(6), _uid(3), _uid(0),
                                                                 _uid(77)])] == \
                    [_uid(0), _uid(6)]  # by seq; ns-b's memory 3 is not ns-a's
                assert tx.latest_episode("ns-a", "c9") == _uid(6)
                assert tx.latest_episode("ns-a", None) == _uid(5)
                assert tx.latest_episode("ns-a", "none such") is None
                assert tx.newest_ids("ns-a", 3) == [_uid(4), _uid(5), _uid(6)]
                assert tx.newest_ids("ns-a", 3, status=ARCHIVED) == [_uid(2)]
                assert tx.newest_ids("ns-a", 2, status=ACTIVE, mtype=MemoryType.EPISODIC) == \
                    [_uid(5), _uid(6)]
                assert tx.newest_ids("ns-a", 9, mtype=nodes[1].type) == [_uid(1)]
                assert tx.newest_ids("ns-b", 9, status=ARCHIVED) == []
                stamps = [n.created_at.timestamp() for n in nodes]
                assert tx.ids_in_window("ns-a", ACTIVE, stamps[1], None) == \
                    [_uid(1), _uid(4), _uid(5), _uid(6)]
                assert tx.ids_in_window("ns-a", ARCHIVED, None, stamps[2]) == [_uid(2)]
                assert tx.ids_in_window("ns-a", ACTIVE, None, stamps[0]) == [_uid(0)]
                edges = tx.edges_of("ns-a", [_uid(1)])
                assert [(e.source, e.target) for e in edges] == [(_uid(0), _uid(1))]
                assert tx.edges_of("ns-b", [_uid(1)]) == []

    # --- memories -----------------------------------------------------------------------

    def test_memories_round_trip_exactly(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.read() as tx:
                for node in nodes:
                    assert tx.memory(node.id) == node
                assert tx.memories("ns-a") == nodes[:3]
                assert tx.memories("ns-a", ACTIVE) == nodes[:2]
                assert tx.memories("ns-a", ARCHIVED) == nodes[2:3]
                assert tx.memories("ns-b") == nodes[3:]
                assert tx.existing([_uid(0), _uid(3), _uid(77), _uid(0)]) == {_uid(0), _uid(3)}
                vectors = tx.vectors([n.id for n in nodes] + [_uid(77)])
                assert sorted(vectors) == sorted(n.id for n in nodes)
                for node in nodes:
                    self.assert_vector(vectors[node.id], self.vector(node.seq - 1))

    def test_a_memory_read_leaves_no_copy_of_its_words_behind(
            self, tmp_path: pathlib.Path) -> None:
        """What a memory says, read back, is held by its object alone: once that goes
        (an erasure, the end of a call), no process-wide cache of the reader keeps it."""
        secret = self.node(7, type=MemoryType.SEMANTIC, payload=SemanticPayload(
            concept="a diagnosis nobody else has said"))
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.apply([InsertMemory(secret, self.vector(7))])
            with records.read() as tx:
                read = tx.memory(secret.id)
            assert read is not None and isinstance(read.payload, SemanticPayload)
            concept = read.payload.concept
            assert concept == "a diagnosis nobody else has said"
            del read
            gc.collect()
            assert sys.getrefcount(concept) == 2  # this name and the call's argument

    def test_scan_reads_a_namespace_in_batches(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            many = [self.node(n, "ns-c", status=ARCHIVED if n % 3 else ACTIVE)
                    for n in range(10, 10 + 600)]
            with records.write() as tx:
                tx.apply([InsertMemory(n, self.vector(n.seq)) for n in many])
            with records.read() as tx:
                assert [n for batch in tx.scan("ns-a") for n in batch] == nodes[:3]
                batches = list(tx.scan("ns-c"))
                assert [n for batch in batches for n in batch] == many
                assert len(batches) > 1 and all(len(b) <= 500 for b in batches)
                assert list(tx.scan("ns-z")) == []

    def test_rename_namespace_moves_every_row_that_names_it(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.write() as tx:
                tx.apply([DeleteMemory(nodes[3])])  # ns-b emptied, its deletion in the log
            with records.read() as tx:
                events = tx.audit("ns-b")
                record = tx.namespace("ns-b")
                others = (tx.audit("ns-a"), tx.namespace("ns-a"), tx.memories("ns-a"))
            assert record is not None
            renamed = [e.model_copy(update={"namespace": "gone//b"}) for e in events]
            with records.write() as tx:
                with _raises(ConflictError):  # memories left
                    tx.rename_namespace("ns-a", "gone//a", [])
                with _raises(ConflictError):  # not the chain's events
                    tx.rename_namespace("ns-b", "gone//b", renamed[:1])
                with _raises(ConflictError):  # taken
                    tx.rename_namespace("ns-b", "ns-a", [e.model_copy(
                        update={"namespace": "ns-a"}) for e in events])
                tx.rename_namespace("ns-b", "gone//b", renamed)
            with records.read() as tx:
                assert tx.namespace("ns-b") is None and tx.audit("ns-b") == []
                assert tx.namespace("gone//b") == replace(record, name="gone//b")
                assert tx.audit("gone//b") == renamed
                assert {c.namespace for c in tx.changes(0)} == {"ns-a", "gone//b"}
                assert "ns-b" not in tx.namespace_names()
                assert tx.audit_heads()[1]["gone//b"] == (len(events), events[-1].hash)
                assert (tx.audit("ns-a"), tx.namespace("ns-a"), tx.memories("ns-a")) == \
                    others

    def test_index_rows_round_trip(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.read() as tx:
                everything = list(tx.index_rows())
                assert [r.id for r in tx.index_rows("ns-a")] == [n.id for n in nodes[:3]]
                assert {r.id for r in tx.index_rows(ids=[_uid(3), _uid(1), _uid(9)])} == \
                    {_uid(3), _uid(1)}
            assert sorted(r.id for r in everything) == sorted(n.id for n in nodes)
            by_id = {n.id: n for n in nodes}
            for row in everything:
                node = by_id[row.id]
                assert (row.namespace, row.status) == (node.namespace, node.status)
                assert dict(row.fields) == index_fields(node)
                self.assert_vector(row.vector, self.vector(node.seq - 1))

    def test_sensitive_reads_one_namespace_by_sensitivity(self, tmp_path: pathlib.Path
                                                          ) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)  # sensitivities 0, 1/8, 2/8 (archived); ns-b 3/8
            with records.read() as tx:
                rows = tx.sensitive("ns-a", 0.125)
                assert [(r.id, r.seq) for r in rows] == [(n.id, n.seq) for n in nodes[1:3]]
                for row, node in zip(rows, nodes[1:3], strict=True):
                    self.assert_vector(row.vector, self.vector(node.seq - 1))
                assert tx.sensitive("ns-a", 0.3) == []
                assert [r.id for r in tx.sensitive("ns-b", 0.375)] == [nodes[3].id]
                assert tx.sensitive("ns-c", 0.0) == []
            with records.write() as tx:  # a change of sensitivity is what the query sees
                tx.apply([UpdateMemory(nodes[0].model_copy(update={"sensitivity": 0.9}),
                                       reindex=True), DeleteMemory(nodes[1])])
            with records.read() as tx:
                assert [r.id for r in tx.sensitive("ns-a", 0.125)] == [nodes[0].id, nodes[2].id]

    def test_many_ids_at_once(self, tmp_path: pathlib.Path) -> None:
        nodes = [MemoryNode(id=_uid(n), type=MemoryType.EPISODIC, content=f"m{n}", weight=1,
                            seq=n + 1, created_at=_T0) for n in range(1200)]
        ids = [_uid(5000), *(n.id for n in nodes)]
        chain = [Edge(source=a.id, predicate=Predicate.TEMPORAL_NEXT, target=b.id, step=a.seq)
                 for a, b in itertools.pairwise(nodes)]
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.apply([*(InsertMemory(node, self.vector(7)) for node in nodes),
                          AddEdges("default", tuple(chain))])
            with records.read() as tx:
                assert tx.existing(ids) == set(ids[1:])
                assert sorted(tx.vectors(ids)) == sorted(ids[1:])
                assert sorted(r.id for r in tx.index_rows(ids=ids)) == sorted(ids[1:])
                # whole and in order, however many rows a dialect reads at a time
                assert tx.memories("default") == nodes
                assert sorted(tx.edges("default"), key=lambda e: e.key) == chain

    def test_insert_of_an_existing_id_conflicts_and_changes_nothing(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            with _raises(ConflictError), records.write() as tx:
                tx.apply([InsertMemory(self.node(50, "ns-b"), self.vector(50))])
                tx.set_counter(99)
                tx.apply([InsertMemory(nodes[0].model_copy(update={"namespace": "ns-c"}),
                                       self.vector(0))])
            assert self.snapshot(records) == before

    def test_a_run_of_inserts_is_one_insert_at_a_time(self, tmp_path: pathlib.Path) -> None:
        """New memories applied together (one batch of rows, then their edges) leave what
        they leave applied one at a time, in order."""
        nodes = [self.node(n, "ns-b" if n % 3 == 0 else "ns-a") for n in range(7)]

        def logged(records: RecordStore) -> list[tuple[str, str]]:
            with records.read() as tx:
                return [(c.namespace, c.memory_id) for c in tx.changes(0)]

        with self.open_records(tmp_path / "one") as one, \
                self.open_records(tmp_path / "batch") as batch:
            edges = [(Edge(source=n.id, predicate=Predicate.IS_A, target=_uid(99)),)
                     if n.seq % 2 else () for n in nodes]
            ops = [InsertMemory(node, self.vector(node.seq), owned)
                   for node, owned in zip(nodes, edges, strict=True)]
            with one.write() as tx:
                for op in ops:
                    tx.apply([op])
            with batch.write() as tx:
                tx.apply(ops)
                tx.apply([])
            assert self.snapshot(batch) == self.snapshot(one)
            assert logged(batch) == logged(one) == [(n.namespace, n.id) for n in nodes]

    def test_inserts_with_a_taken_or_repeated_id_write_none(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            fresh = self.node(60, "ns-b")
            for batch in ([(fresh, self.vector(60)), (nodes[1], self.vector(1))],
                          [(fresh, self.vector(60)), (self.node(61), self.vector(61)),
                           (fresh, self.vector(60))]):
                with _raises(ConflictError), records.write() as tx:
                    tx.apply([InsertMemory(node, vector) for node, vector in batch])
                assert self.snapshot(records) == before

    def test_a_write_that_need_not_be_durable_commits_all_or_nothing(
            self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            with records.write(durable=False) as tx:
                tx.apply([UpdateStats(nodes[0].model_copy(update={"access_count": 41}))])
            with _raises(ConflictError), records.write(durable=False) as tx:
                tx.apply([UpdateStats(nodes[1].model_copy(update={"access_count": 42})),
                          InsertMemory(nodes[3], self.vector(3))])  # taken: the whole write fails
            with records.write() as tx:  # the next durable write is as usual
                tx.set_counter(9)
                with records.write(durable=False) as inner:  # nested: the open one serves
                    assert inner is tx
            with records.read() as tx:
                counts = [n.access_count for n in tx.memories("ns-a")]
                assert (counts[:2], tx.counter()) == ([41, nodes[1].access_count], 9)
        if self.durable:
            with self.open_records(tmp_path / "records", again=True) as records, \
                    records.read() as tx:
                assert tx.memory(nodes[0].id) == nodes[0].model_copy(
                    update={"access_count": 41})

    def test_update_memory(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[0]
            changed = node.model_copy(update={
                "status": ARCHIVED, "sensitivity": 0.875, "metadata": {"new": [1, "é"]},
                "pinned": not node.pinned, "expires_at": _T0, "signals": {"omega": 2.5},
                "activated_seq": 99, "touch_seq": 123, "access_count": 4})  # a restore
            edge = Edge(source=node.id, predicate=Predicate.IS_A, target=_uid(3))
            with records.read() as tx:
                last = tx.last_change()
                edges = tx.edges("ns-a")
            with records.write() as tx:
                tx.apply([UpdateMemory(changed, reindex=True, edges=(edge,))])
            with records.read() as tx:
                assert tx.memory(node.id) == changed
                assert tx.edges("ns-a") == [*edges, edge]
                assert [n.id for n in tx.memories("ns-a", ARCHIVED)] == [node.id, _uid(2)]
                (row,) = tx.index_rows(ids=[node.id])
                assert (row.status, row.fields["sensitivity"]) == (ARCHIVED, 0.875)
                assert tx.changes(last) == [Change(last + 1, "ns-a", node.id)]
            quiet = changed.model_copy(update={"metadata": {"quiet": True}})
            with records.write() as tx:
                tx.apply([UpdateMemory(quiet, reindex=False)])
            with records.read() as tx:
                assert tx.memory(node.id) == quiet
                assert tx.last_change() == last + 1

    def test_update_stats(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[1]
            seen = node.model_copy(update={"access_count": 9, "last_access_step": 12,
                                           "last_access_at": _T0 + timedelta(days=1),
                                           "touch_seq": 77})
            before = self.snapshot(records)["changes"]
            with records.write() as tx:
                tx.apply([UpdateStats(seen)])
            with records.read() as tx:
                assert tx.memory(node.id) == seen
                assert tx.changes(0) == before

    def test_set_vector_logs_a_change(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.populate(records)[3]
            with records.read() as tx:
                last = tx.last_change()
            with records.write() as tx:
                tx.apply([SetVector(node.id, self.vector(60))])
            with records.read() as tx:
                self.assert_vector(tx.vectors([node.id]).get(node.id), self.vector(60))
                (row,) = tx.index_rows(ids=[node.id])
                self.assert_vector(row.vector, self.vector(60))
                assert tx.changes(last) == [Change(last + 1, "ns-b", node.id)]

    def test_delete_memory(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            a, b, c, _ = self.populate(records)
            keep = Edge(source=_uid(0), predicate=Predicate.IS_A, target=_uid(2))
            with records.write() as tx:
                tx.apply([AddEdges("ns-a", (keep, Edge(source=_uid(2),
                                                       predicate=Predicate.REQUIRES,
                                                       target=_uid(1))))])
            with records.read() as tx:
                last = tx.last_change()
            with records.write() as tx:
                tx.apply([DeleteMemory(b), DeleteMemory(self.node(77))])  # 77: missing, a no-op
            with records.read() as tx:
                assert (tx.memory(b.id), tx.vectors([b.id]), tx.existing([b.id])) == \
                    (None, {}, set())
                assert [n.id for n in tx.memories("ns-a")] == [a.id, c.id]
                assert tx.edges("ns-a") == [keep]
                assert tx.changes(last) == [Change(last + 1, "ns-a", b.id)]
            self.insert(records, b)  # its statistics went with it
            with records.read() as tx:
                assert tx.memory(b.id) == b

    # --- edges, audit, change log, totals -------------------------------------------------

    def test_edges(self, tmp_path: pathlib.Path) -> None:
        e1 = Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM, target=_uid(1), weight=0.5,
                  step=3)
        e2 = Edge(source=_uid(1), predicate=Predicate.TEMPORAL_NEXT, target=_uid(2))
        e3 = Edge(source=_uid(5), predicate=Predicate.FRIEND_OF, target=_uid(6))
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.apply([AddEdges("ns-a", (e1, e2, e1)), AddEdges("ns-b", (e3,))])
            with records.write() as tx:
                tx.apply([AddEdges("ns-a", (e1.model_copy(update={"weight": 2.0}),))])
            with records.read() as tx:
                assert sorted(tx.edges("ns-a"), key=lambda e: e.key) == [e1, e2]
                assert (tx.edges("ns-b"), tx.edges("ns-c")) == ([e3], [])

    def test_scan_edges_reads_them_by_key_in_batches(self, tmp_path: pathlib.Path) -> None:
        many = [Edge(source=_uid(n % 7), predicate=(Predicate.TEMPORAL_NEXT, Predicate.FRIEND_OF)
                     [n % 2], target=_uid(1000 - n)) for n in range(600)]
        other = Edge(source=_uid(2000), predicate=Predicate.FRIEND_OF, target=_uid(2001))
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:  # added out of key order
                tx.apply([AddEdges("ns-a", tuple(many)), AddEdges("ns-b", (other,))])
            with records.read() as tx:
                batches = list(tx.scan_edges("ns-a"))
                assert [e for b in batches for e in b] == sorted(many, key=lambda e: e.key)
                assert len(batches) > 1 and all(len(b) <= 500 for b in batches)
                assert list(tx.scan_edges("ns-b")) == [[other]]
                assert list(tx.scan_edges("ns-z")) == []

    def test_audit(self, tmp_path: pathlib.Path) -> None:
        a, b = self.audit_events()
        with self.open_records(tmp_path / "records") as records:
            for batch in (a[:2], b[:1], [a[2], b[1]]):
                with records.write() as tx:
                    tx.apply([AppendAudit(tuple(batch))])
            with records.read() as tx:
                assert (tx.audit("ns-a"), tx.audit("ns-b"), tx.audit("ns-c")) == (a, b, [])
                assert tx.audit() == [a[0], a[1], b[0], a[2], b[1]]
                assert tx.audit_for(_uid(1)) == [a[1], a[2], b[1]]  # each once
                assert tx.audit_for(_uid(77)) == []
                assert tx.audit_size() == 5
                assert AuditChain(_AUDIT_KEY).verify(tx.audit("ns-a"), (3, a[-1].hash)).ok

    def test_audit_heads_at_commit_positions(self, tmp_path: pathlib.Path) -> None:
        a, b = self.audit_events()
        marks = []
        with self.open_records(tmp_path / "records") as records:
            with records.read() as tx:
                marks.append(tx.audit_heads())
            for batch in (a[:2], b[:1], [a[2], b[1]]):
                with records.write() as tx:
                    tx.apply([AppendAudit(tuple(batch))])
                with records.read() as tx:
                    marks.append(tx.audit_heads())
            with records.read() as tx:
                positions = [m[0] for m in marks]
                assert positions == sorted(set(positions))  # grows with every commit
                assert marks[0][1] == {}
                assert marks[1][1] == {"ns-a": (2, a[1].hash)}
                assert marks[2][1] == {"ns-a": (2, a[1].hash), "ns-b": (1, b[0].hash)}
                assert marks[3][1] == {"ns-a": (3, a[2].hash), "ns-b": (2, b[1].hash)}
                assert [tx.audit_heads(p) for p in positions] == marks  # the past, again

    def test_change_log(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0), self.node(1, "ns-b"), self.node(2))
            with records.read() as tx:
                log = tx.changes(0)
                assert [(c.namespace, c.memory_id) for c in log] == [
                    ("ns-a", _uid(0)), ("ns-b", _uid(1)), ("ns-a", _uid(2))]
                assert [c.seq for c in log] == sorted({c.seq for c in log})
                assert (tx.first_change(), tx.last_change()) == (log[0].seq, log[-1].seq)
                assert tx.changes(log[0].seq) == log[1:]
            with records.write() as tx:
                tx.prune_changes(log[1].seq)
            with records.read() as tx:
                assert (tx.changes(0), tx.first_change()) == (log[2:], log[2].seq)
            with records.write() as tx:
                tx.prune_changes(log[2].seq)
            with records.read() as tx:
                assert (tx.changes(0), tx.first_change(), tx.last_change()) == \
                    ([], 0, log[2].seq)
            self.insert(records, self.node(3))
            with records.read() as tx:
                assert [c.seq for c in tx.changes(0)] == [tx.last_change()]
                assert tx.last_change() > log[2].seq

    def test_totals(self, tmp_path: pathlib.Path) -> None:
        sem, epi, soc = MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.SOCIAL
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0, type=sem, weight=10),
                        self.node(1, type=sem, weight=5), self.node(2, type=epi, weight=3),
                        self.node(3, type=soc, weight=7, status=ARCHIVED),
                        self.node(4, "ns-b", type=MemoryType.TASK, weight=2))
            with records.read() as tx:
                expected_a = NamespaceTotals(3, 1, 18, {sem: 15, epi: 3})
                assert tx.totals() == {"ns-a": expected_a,
                                       "ns-b": NamespaceTotals(1, 0, 2, {MemoryType.TASK: 2})}
                assert tx.totals("ns-a") == {"ns-a": expected_a}
                assert tx.totals("ns-c") == {}

    def test_namespace_names(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            with records.write() as tx:
                tx.put_namespace(NamespaceRecord("zeta"))
                tx.put_namespace(NamespaceRecord("mid"))
            self.insert(records, self.node(0, "mid"), self.node(1, "alpha"))
            with records.read() as tx:
                assert tx.namespace_names() == ["alpha", "mid", "zeta"]

    # --- transactions -------------------------------------------------------------------

    def test_failed_write_rolls_back_everything(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            a, _ = self.audit_events()

            def change_everything_then_fail(tx: RecordTxn) -> None:
                tx.put_manifest({"format": 99})
                tx.set_counter(100)
                tx.put_namespace(NamespaceRecord("ns-z", step=5))
                tx.apply([
                    InsertMemory(self.node(20, "ns-z"), self.vector(20)),
                    UpdateMemory(nodes[0].model_copy(update={"status": ARCHIVED}), reindex=True),
                    UpdateStats(nodes[1].model_copy(update={"access_count": 50})),
                    SetVector(nodes[3].id, self.vector(21)),
                    DeleteMemory(nodes[2]),
                    AddEdges("ns-z", (Edge(source=_uid(20), predicate=Predicate.IS_A,
                                           target=_uid(0)),)),
                    AppendAudit((a[0].model_copy(update={"namespace": "ns-z"}),))])
                tx.prune_changes(tx.last_change())
                raise RuntimeError("boom")

            with _raises(RuntimeError, match="boom"), records.write() as tx:
                change_everything_then_fail(tx)
            assert self.snapshot(records) == before

    def test_apply_refuses_what_is_not_a_record_write(self, tmp_path: pathlib.Path) -> None:
        """Every op is checked before any is written: a value of another type (an
        ``insert_memory``-style tuple, ``None``) is a :class:`ValidationError`."""
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            for bad in ((nodes[0], self.vector(0)), None, "insert"):
                with _raises(ValidationError), records.write() as tx:
                    tx.apply([InsertMemory(self.node(30), self.vector(30)),
                              UpdateStats(nodes[0]), bad])  # type: ignore[list-item]
                assert self.snapshot(records) == before

    def test_read_inside_a_write_sees_its_changes(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            node = self.node(0)
            with records.write() as tx:
                tx.apply([InsertMemory(node, self.vector(0))])
                tx.set_counter(7)
                with records.read() as inner:
                    assert (inner.memory(node.id), inner.counter()) == (node, 7)
                    assert inner.namespace_names() == ["ns-a"]

    def test_a_read_transaction_refuses_writes(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            nodes = self.populate(records)
            before = self.snapshot(records)
            a, _ = self.audit_events()
            edge = Edge(source=_uid(0), predicate=Predicate.DERIVES_FROM, target=_uid(1))
            writes: list[Callable[[RecordTxn], object]] = [
                lambda tx: tx.put_manifest({"format": 2}),
                lambda tx: tx.set_counter(9),
                lambda tx: tx.put_namespace(NamespaceRecord("ns-z")),
                lambda tx: tx.rename_namespace("ns-b", "gone//b", []),
                lambda tx: tx.apply([]),
                lambda tx: tx.apply([InsertMemory(self.node(9), self.vector(9))]),
                lambda tx: tx.apply([UpdateMemory(nodes[0], reindex=True)]),
                lambda tx: tx.apply([UpdateStats(nodes[0])]),
                lambda tx: tx.apply([SetVector(nodes[0].id, self.vector(9))]),
                lambda tx: tx.apply([DeleteMemory(nodes[0])]),
                lambda tx: tx.apply([AddEdges("ns-a", (edge,))]),
                lambda tx: tx.apply([AppendAudit(tuple(a[:1]))]),
                lambda tx: tx.prune_changes(tx.last_change()),
                lambda tx: tx.lock_namespaces(["ns-a"]),
                lambda tx: tx.lock_index("numpy@memory"),
                lambda tx: tx.set_index_position("numpy@memory", 1),
            ]
            with records.read() as tx:
                for write in writes:
                    with _raises(ConflictError):
                        write(tx)
                with _raises(ConflictError), records.write():
                    pass
            assert self.snapshot(records) == before

    def test_closed_store_refuses(self, tmp_path: pathlib.Path) -> None:
        records = self.make_records(tmp_path / "records")
        self.insert(records, self.node(0))
        records.close()
        records.close()  # idempotent
        with _raises(StoreClosedError), records.read():
            pass
        with _raises(StoreClosedError), records.write():
            pass

    def test_purge_returns_what_it_did(self, tmp_path: pathlib.Path) -> None:
        with self.open_records(tmp_path / "records") as records:
            self.insert(records, self.node(0))
            with records.write() as tx:
                tx.apply([DeleteMemory(self.node(0))])
            done = records.purge()
            assert isinstance(done, str) and done

    # --- durability ---------------------------------------------------------------------

    def _populated_file(self, tmp_path: pathlib.Path) -> tuple[pathlib.Path, dict[str, Any]]:
        """A durable store populated at ``tmp_path / "records"``, and its snapshot."""
        if not self.durable:
            _skip("the store is not durable (set durable = True)")
        path = tmp_path / "records"
        with self.open_records(path) as records:
            self.populate(records)
            return path, self.snapshot(records)

    def test_data_survives_reopen(self, tmp_path: pathlib.Path) -> None:
        path, before = self._populated_file(tmp_path)
        with self.open_records(path, again=True) as records:
            assert self.snapshot(records) == before
            with records.write() as tx:
                tx.prune_changes(tx.last_change())
        with self.open_records(path, again=True) as records:
            with records.read() as tx:  # the change log never numbers backwards
                assert (tx.changes(0), tx.last_change()) == ([], before["last_change"])
            self.insert(records, self.node(9))
            with records.read() as tx:
                assert tx.last_change() > before["last_change"]

    def test_read_only_reopen_reads_and_refuses_writes(self, tmp_path: pathlib.Path) -> None:
        path, before = self._populated_file(tmp_path)
        with self.open_records(path, read_only=True) as records:
            assert self.snapshot(records) == before
            with _raises(ConflictError), records.write() as tx:
                tx.set_counter(1)
        with self.open_records(path, again=True) as records:
            assert self.snapshot(records) == before
