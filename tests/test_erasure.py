"""Right to be forgotten: cascades, regenerated summaries, receipts, and no bytes left."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from invariants import check_invariants

from mars_core import MemoryStore, NotFoundError, ValidationError
from mars_core.testing import (
    StoreFactory,
    centroid_of,
    memory_graph,
    novelty_centroid,
    record_store,
    write_summary,
)

KEY = bytes(range(32))


def joiner(texts: Sequence[str], *, target_tokens: int) -> str:
    """A transparent summariser: the summary is its members' texts joined."""
    return " / ".join(texts)


STORE_DEFAULTS = {"audit_key": KEY, "nlp": "rules", "summariser": joiner, "budget": 100_000}
"""The erasure tests' stores (test_erasure_names' too)."""


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(**STORE_DEFAULTS)


def bytes_on_disk(root: Path, needles: Sequence[str]) -> int:
    hits = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            data = (Path(dirpath) / name).read_bytes()
            hits += sum(data.count(n.encode()) for n in needles)
    return hits


def summarise(store: MemoryStore, ids: Sequence[str]) -> str:
    """Make a summary the way Reflection would (through the store's staging path)."""
    from mars_core.policies import Summary

    return write_summary(store, Summary(tuple(ids), joiner(
        [store.get(i).content for i in ids], target_tokens=0), 0.1, 0.0)).id


def test_entity_erasure_cascades_and_leaves_no_bytes(mk: StoreFactory, tmp_path: Path) -> None:
    s = mk(path=tmp_path / "db")
    a = s.add("Ana's phone is 555-0199, she lives on Rua Augusta")
    s.add("Bo likes jazz")
    fact = s.add("She lives on Rua Augusta", type="semantic", provenance={"derived_from": [a.id]})
    s.retrieve("Rua Augusta")
    receipt = s.erase(entity="Ana")
    assert set(receipt.erased) == {a.id, fact.id}  # the fact derived from the erased turn
    assert receipt.by_type == {"episodic": 1, "semantic": 1}
    assert s.explain(a.id).status == "erased" and s.explain(fact.id).status == "erased"
    check_invariants(s)
    s.close()
    assert bytes_on_disk(tmp_path / "db", ["555-0199", "Rua Augusta", "Ana's"]) == 0
    with mk(path=tmp_path / "db") as again:
        assert [n.content for n in again.list(status=None)] == ["Bo likes jazz"]
        assert again.verify().ok


def test_an_erasure_takes_the_erased_vectors_out_of_the_novelty_centroid(mk: StoreFactory,
                                                                         tmp_path: Path) -> None:
    """A namespace's novelty centroid (DMF's divergence D) is a moving average of its
    recent vectors; after an erasure it is primed again from what survives, so no erased
    memory goes on shaping the next memories' signals."""
    with mk(path=tmp_path / "db") as s:
        s.add("Ana's phone is 555-0199")
        bo = s.add("Bo likes jazz")
        probe = s.embedder.embed(["a probe about phones"])[0]
        before = novelty_centroid(s).divergence(probe)
        s.erase(entity="Ana")
        after = novelty_centroid(s).divergence(probe)
        with record_store(s).read() as tx:
            survivors = centroid_of(s, [tx.vectors([bo.id])[bo.id]])
        assert after == survivors.divergence(probe) != before


def test_summaries_are_regenerated_without_the_erased_member(mk: StoreFactory) -> None:
    s = mk()
    ids = [s.add(t).id for t in ("Ana went hiking", "the trail was steep", "we saw goats")]
    summ = summarise(s, ids)
    receipt = s.erase(node_id=ids[0])
    assert receipt.erased == (ids[0],)
    (old, new), = receipt.regenerated
    assert old == summ and s.get(new).content == "the trail was steep / we saw goats"
    assert s.explain(summ).status == "erased"
    assert [e.target for e in memory_graph(s, 'default').out_edges(new)] == sorted(ids[1:])
    check_invariants(s)


def test_a_summary_left_with_one_member_is_erased(mk: StoreFactory) -> None:
    s = mk()
    ids = [s.add(t).id for t in ("Ana went hiking", "the trail was steep")]
    summ = summarise(s, ids)
    receipt = s.erase(node_id=ids[0])
    assert set(receipt.erased) == {ids[0], summ} and receipt.regenerated == ()
    assert s.get(ids[1]).content == "the trail was steep"


def test_conversation_and_namespace_erasure_are_scoped(mk: StoreFactory) -> None:
    s = mk()
    a = s.add("first chat", provenance={"conversation_id": "c1"}, namespace="u1")
    b = s.add("second chat", provenance={"conversation_id": "c2"}, namespace="u1")
    c = s.add("first chat", provenance={"conversation_id": "c1"}, namespace="u2")
    assert s.erase(conversation="c1", namespace="u1").erased == (a.id,)
    assert s.get(c.id, namespace="u2").content == "first chat"  # another tenant's conversation id
    assert s.erase(namespace="u1").erased == (b.id,)
    assert [n.id for n in s.list("u2")] == [c.id]


def test_erasure_input_errors_change_nothing(mk: StoreFactory) -> None:
    s = mk()
    s.add("something to keep")
    before = (s.export_jsonld(), len(s.audit))
    with pytest.raises(ValidationError):
        s.erase()  # the default namespace alone is not implied
    with pytest.raises(ValidationError):
        s.erase(entity="x", conversation="y")
    with pytest.raises(ValidationError):
        s.erase(entity="   ")
    with pytest.raises(NotFoundError):
        s.erase(node_id="missing")
    assert (s.export_jsonld(), len(s.audit)) == before


def test_audit_of_an_erasure_holds_no_text_and_receipt_explains(mk: StoreFactory) -> None:
    s = mk(budget=30, policy="fifo")
    for i in range(8):
        s.add(f"Carla's diary entry number {i}")
    s.forget(s.list()[0].id)
    s.erase(entity="Carla")
    blob = "".join(e.model_dump_json() for e in s.audit.events())
    assert "Carla" not in blob and "diary" not in blob
    r = s.receipt()
    assert r.removed["erased"] == 8 and r.stored == {}
    assert "evicted by fifo" in r.removed and r.removed["forgotten by the user"] == 1
    assert "privacy receipt" in r.render()
