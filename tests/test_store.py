"""The MemoryStore façade: add, retrieve, budget, forget/restore, update, explain, export."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mars_core import (
    BudgetExceededError,
    EmbeddingMismatchError,
    FakeClock,
    HashingEmbedder,
    MemoryStatus,
    MemoryStore,
    NotFoundError,
    Predicate,
    StoreClosedError,
    TaskStatus,
    ValidationError,
)
from mars_core.testing import StoreFactory, memory_graph, vector_index

KEY = b"k" * 32


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=KEY)


EXPECTED = {"ram": ("sqlite", "numpy", "numpy"), "sqlite": ("sqlite", "numpy", "numpy"),
            "chroma": ("sqlite", "chroma", "chroma"),
            "chroma-http": ("sqlite", "chroma", "chroma"),
            "qdrant": ("sqlite", "qdrant", "qdrant"), "qdrant-url": ("sqlite", "qdrant", "qdrant"),
            "postgres": ("postgresql", "numpy", "numpy"),
            "postgres-chroma": ("postgresql", "chroma", "chroma")}
"""Per kind of the matrix: the records, the index of ``MemoryStore()``, and the index
of ``MemoryStore.open(path)``."""


def test_the_matrix_builds_its_kind_of_store(mk: StoreFactory,
                                             store_kind: str, tmp_path: Path) -> None:
    records, index, opened_index = EXPECTED[store_kind]
    with mk() as made:
        assert (made.stats()["records"], made.stats()["index"]) == (records, index)
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=KEY) as opened:
        note = opened.add("kept by the kind's records")
        assert (opened.stats()["records"], opened.stats()["index"]) == \
            (records, opened_index)
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=KEY) as again:
        assert [n.id for n in again.list()] == [note.id]


def test_add_get_list_and_stats(mk: StoreFactory) -> None:
    s = mk(budget=1000)
    a = s.add("Ana moved to Lisbon", type="episodic")
    b = s.add("Ana prefers green tea", type="semantic", payload={"concept": "Ana"})
    assert s.get(a.id) == a and a.weight > 0 and b.payload.kind == "semantic"
    assert [n.id for n in s.list()] == [a.id, b.id]
    assert [n.id for n in s.list(type="semantic")] == [b.id]
    st = s.stats()["namespaces"]["default"]
    assert st["active"] == 2 and st["tokens"] == a.weight + b.weight and st["step"] == 2
    assert a.seq == 1 and b.seq == 2 and a.id != b.id


def test_budget_is_enforced_with_lru_and_audited(mk: StoreFactory) -> None:
    s = mk(budget=30, policy="lru")
    ids = [s.add(f"fact number {i} about topic {i}").id for i in range(12)]
    st = s.stats()["namespaces"]["default"]
    assert st["tokens"] <= 30 and st["archived"] > 0
    evicted = [n.id for n in s.list(status="archived")]
    assert evicted == ids[: len(evicted)]  # LRU without accesses = oldest first
    ex = s.explain(evicted[0])
    assert ex.status == "archived"
    assert ex.events[-1].op.value == "evict" and "least recently used" in ex.rationale


def test_access_changes_lru_order(mk: StoreFactory) -> None:
    s = mk(budget=10, policy="lru")
    first = s.add("alpha beta gamma delta")
    s.add("epsilon zeta eta theta")
    hits = s.retrieve("alpha gamma", budget_tokens=10, k=1)
    assert [h.id for h in hits] == [first.id] and hits[0].lexical == 1.0
    assert s.get(first.id).access_count == 1
    second = s.list()[1]
    s.add("filler words here")  # over budget: LRU drops the unaccessed memory first
    assert s.get(first.id).is_active
    assert s.get(second.id).status is MemoryStatus.ARCHIVED


def test_read_only_retrieve_changes_nothing(mk: StoreFactory) -> None:
    s = mk()
    a = s.add("the cat sat on the mat")
    n_events = len(s.audit)
    assert s.retrieve("cat mat", read_only=True)[0].id == a.id
    assert len(s.audit) == n_events and s.get(a.id).access_count == 0
    s.retrieve("cat mat")
    assert len(s.audit) == n_events + 1 and s.get(a.id).access_count == 1
    assert s.audit.events()[-1].op.value == "access"


def test_retrieve_filters_and_budget(mk: StoreFactory) -> None:
    s = mk()
    s.add("Ana's card number is private", sensitivity=0.9)
    t = s.add("Ana must book the venue", type="task")
    s.add("Ana likes jazz concerts", type="semantic")
    assert all(h.node.sensitivity <= 0.5 for h in s.retrieve("Ana", max_sensitivity=0.5))
    assert [h.id for h in s.retrieve("Ana", types=["task"])] == [t.id]
    hits = s.retrieve("Ana", budget_tokens=8)
    assert sum(h.node.weight for h in hits) <= 8


def test_heavier_than_budget_is_refused_and_nothing_changes(mk: StoreFactory) -> None:
    s = mk(budget=5)
    s.add("tiny")
    before = s.export_jsonld()
    with pytest.raises(BudgetExceededError):
        s.add("this text is far too long for a budget of five tokens")
    assert s.export_jsonld() == before


def test_forget_restore_and_archive_search(mk: StoreFactory) -> None:
    s = mk(budget=200)
    a = s.add("the blue whale is the largest animal")
    s.forget(a.id)
    assert s.get(a.id).status is MemoryStatus.ARCHIVED
    assert s.retrieve("largest animal whale") == []
    hits = s.retrieve("largest animal whale", include_archive=True)
    assert hits[0].id == a.id and hits[0].archived
    assert s.forget(a.id).status is MemoryStatus.ARCHIVED  # idempotent, no new event
    s.restore(a.id)
    assert s.retrieve("largest animal whale")[0].id == a.id
    assert [e.op.value for e in s.explain(a.id).events][:3] == ["insert", "evict", "access"]


def test_update_makes_a_new_version(mk: StoreFactory) -> None:
    s = mk()
    old = s.add("Ana lives in Porto", type="semantic")
    new = s.update(old.id, "Ana lives in Lisbon")
    assert s.get(old.id).status is MemoryStatus.ARCHIVED and new.content.endswith("Lisbon")
    assert [n.id for n in s.history(new.id)] == [old.id, new.id]
    assert [n.id for n in s.history(old.id)] == [old.id, new.id]
    preds = {e.predicate for e in memory_graph(s, 'default').out_edges(new.id)}
    assert preds == {Predicate.DERIVES_FROM, Predicate.SUPERSEDES}
    assert s.explain(new.id).provenance[0].node_id == old.id


def test_task_prerequisites_are_protected_until_forced(mk: StoreFactory) -> None:
    s = mk(budget=40, policy="fifo")
    fact = s.add("the venue needs a deposit")
    s.add("book the venue", type="task", payload={"status": TaskStatus.ACTIVE,
                                                   "dependencies": [fact.id]})
    for i in range(12):
        s.add(f"chatter {i} about nothing much")
    assert s.stats()["namespaces"]["default"]["archived"] > 0
    assert s.get(fact.id).is_active  # FIFO would have dropped the oldest, task-safety kept it
    ev = [e for n in s.list(status="archived") for e in s.explain(n.id).events
          if e.op.value == "evict"]
    assert ev and all("forced by budget" not in e.rationale for e in ev)


def test_namespaces_are_isolated(mk: StoreFactory) -> None:
    s = mk(budget=50)
    a = s.add("shared words apple banana", namespace="u1")
    b = s.add("shared words apple banana", namespace="u2")
    assert [h.id for h in s.retrieve("apple banana", namespace="u1")] == [a.id]
    assert [h.id for h in s.retrieve("apple banana", namespace="u2")] == [b.id]
    for i in range(20):
        s.add(f"u1 noise {i} words", namespace="u1")
    assert s.get(b.id, namespace="u2").is_active  # one tenant's traffic never evicts another's


def test_links_and_unknown_ids(mk: StoreFactory) -> None:
    s = mk()
    a, b = s.add("a fact"), s.add("another fact")
    e = s.link(b.id, "temporalNext", a.id)
    assert e.predicate is Predicate.TEMPORAL_NEXT
    with pytest.raises(NotFoundError):
        s.get("missing")
    with pytest.raises(NotFoundError):
        s.add("x", links=[("derivesFrom", "missing")])
    with pytest.raises(NotFoundError):  # nothing to explain: no memory ever had that id
        s.explain("missing")


def test_jsonld_round_trip_is_exact(mk: StoreFactory, tmp_path: Path) -> None:
    s = mk(budget=40)
    a = s.add("Ana moved to Lisbon", type="episodic")
    s.add("Ana lives in Lisbon", type="semantic", provenance={"derived_from": [a.id]})
    for i in range(6):
        s.add(f"note {i} of the day")
    s.retrieve("Lisbon")
    summary = s.write_jsonld(tmp_path / "export.jsonld")
    doc = s.export_jsonld()
    assert json.loads((tmp_path / "export.jsonld").read_text(encoding="utf-8")) == doc
    assert (summary.memories, summary.namespaces) == (8, ("default",)) and summary.edges >= 1
    t = MemoryStore.from_jsonld(tmp_path / "export.jsonld", clock=FakeClock(), audit_key=KEY,
                                budget=40)
    assert t.export_jsonld() == doc
    assert t.stats()["namespaces"] == s.stats()["namespaces"]
    assert t.audit.events()[-1].op.value == "import" and t.verify().ok


def test_reopen_in_process(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "db", clock=FakeClock(), budget=40) as s:
        a = s.add("Ana moved to Lisbon")
        for i in range(8):
            s.add(f"note {i} of the day")
        s.retrieve("note 7")
        doc, n_events = s.export_jsonld(), len(s.audit)
    with MemoryStore.open(tmp_path / "db", clock=FakeClock()) as s2:
        assert s2.export_jsonld() == doc and len(s2.audit) == n_events and s2.verify().ok
        assert s2.config.budget == 40  # the recorded configuration is used
        assert s2.explain(a.id).status in {"active", "archived"}
        b = s2.add("after reopen")
        assert b.seq == 10  # the id counter survived


def test_closed_store_refuses_calls(mk: StoreFactory) -> None:
    s = mk()
    s.close()
    s.close()
    with pytest.raises(StoreClosedError):
        s.add("x")


def test_async_twins(mk: StoreFactory) -> None:
    async def go() -> list[str]:
        s = mk()
        a = await s.aadd("async memory about rivers")
        hits = await s.aretrieve("rivers")
        await s.aclose()
        return [a.id, hits[0].id]

    a, h = asyncio.run(go())
    assert a == h


def test_embedder_dimension_is_checked_on_reopen(tmp_path: Path) -> None:
    MemoryStore.open(tmp_path / "db").close()
    with pytest.raises(EmbeddingMismatchError, match="reembed"):
        MemoryStore.open(tmp_path / "db", embedder=HashingEmbedder(dim=64))


def test_import_recounts_weights_whatever_the_document_claims(mk: StoreFactory) -> None:
    s = mk(budget=1000)
    a = s.add("a memory of several words in one sentence")
    doc = s.export_jsonld()
    doc["@graph"][0]["weight"] = 1  # a lying document
    t = mk(budget=1000)
    t.import_jsonld(doc)
    assert t.get(a.id).weight == a.weight > 1


def test_reembed_moves_the_store_to_a_new_embedder(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "db", clock=FakeClock(), budget=60) as s:
        a = s.add("the octopus tastes with its arms")
        for i in range(10):
            s.add(f"note {i} about the weather")
        before = s.export_jsonld()
        nodes = [x for x in before["@graph"] if x["@type"] != "rdf:Statement"]
        assert s.reembed(HashingEmbedder(dim=64)) == len(nodes)
        assert s.export_jsonld() == before  # memories untouched, only vectors changed
        assert s.audit.events()[-1].op.value == "config"
    with pytest.raises(EmbeddingMismatchError):  # the old embedder is refused now
        MemoryStore.open(tmp_path / "db", clock=FakeClock(), embedder=HashingEmbedder())
    with MemoryStore.open(tmp_path / "db", clock=FakeClock(),
                          embedder=HashingEmbedder(dim=64)) as s2:
        assert s2.export_jsonld() == before
    with MemoryStore.open(tmp_path / "db", clock=FakeClock()) as s2:  # the manifest's embedder
        assert s2.export_jsonld() == before and s2.verify().ok
        assert s2.stats()["embedder"] == "hashing-v1-64-c3"
        assert s2.retrieve("octopus arms", include_archive=True)[0].id == a.id
        index = vector_index(s2)  # rebuilt from the new vectors, nothing of the old
        assert index.inner.dim == 64 and index.query(
            "default", MemoryStatus.ACTIVE, HashingEmbedder(dim=64).embed(["octopus arms"])[0],
            1)[0][0] == a.id


class _FailsOnThirdCall(HashingEmbedder):
    """A 64-d hashing embedder whose third ``embed`` call fails (a model server down)."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.calls = 0

    def embed(self, texts: Any) -> Any:
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("the embedding server went away")
        return super().embed(texts)


def test_a_failed_reembed_changes_nothing(tmp_path: Path) -> None:
    """A re-embedding is one transaction: interrupted, the store is as it was (vectors,
    manifest, index), and the next one moves it whole."""
    with MemoryStore.open(tmp_path / "db", clock=FakeClock(), index="numpy") as s:
        a = s.add("Alice's bank PIN is 4821")
        s.add("Bob plays chess")
        s.add("Carol sings in a choir")
        before = (s.export_jsonld(), len(s.audit), s.stats())
        with pytest.raises(RuntimeError, match="went away"):
            s.reembed(_FailsOnThirdCall(), batch_size=1)
        assert (s.export_jsonld(), len(s.audit), s.stats()) == before
        assert s.retrieve("bank PIN", read_only=True)[0].id == a.id
        flaky = _FailsOnThirdCall()
        flaky.calls = 10
        assert s.reembed(flaky, batch_size=1) == 3
        assert s.stats()["dim"] == 64
    with MemoryStore.open(tmp_path / "db", clock=FakeClock()) as s2:
        assert s2.embedder.dim == 64 and s2.verify().ok
        assert s2.retrieve("bank PIN", read_only=True)[0].id == a.id


def test_credit_feeds_the_policy_and_validates(mk: StoreFactory) -> None:
    s = mk(budget=200, type_shares={"semantic": 0.4, "episodic": 0.2, "social": 0.2, "task": 0.2})
    assert s.policy_for().type_shares is not None
    a = s.add("Ana likes tea", type="semantic")
    seen: list[tuple[list[str], list[str]]] = []
    s.policy_for().on_credit = lambda ns, used, offered, step: seen.append(  # type: ignore[method-assign]
        (list(used), list(offered)))
    s.credit([a.id], [a.id, "other"])
    assert seen == [([a.id], [a.id])]  # an id that is not the namespace's is left out
    with pytest.raises(ValidationError):
        s.credit(["x"], [a.id])


def test_forget_is_reported_to_the_policy_as_a_complaint(mk: StoreFactory) -> None:
    s = mk()
    a = s.add("something embarrassing")
    forgotten: list[str] = []
    s.policy_for().on_forget = lambda node, step: forgotten.append(node.id)  # type: ignore[method-assign]
    s.forget(a.id)
    assert forgotten == [a.id]
