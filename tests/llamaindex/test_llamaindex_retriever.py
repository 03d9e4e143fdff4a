"""``MarsRetriever``: scored nodes carrying memory type, sensitivity and ids."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.schema import MetadataMode

from llamaindex_mars import MarsRetriever
from mars_core import ValidationError


def _store(mstore):
    store = mstore()
    store.add("Ana's birthday is on 3 May", type="semantic", namespace="alice")
    store.add("Ana is my sister", type="social", namespace="alice", sensitivity=0.2)
    store.add("Ana's diagnosis is confidential", type="semantic", namespace="alice",
              sensitivity=0.9)
    store.add("Ana plays tennis", type="episodic", namespace="bob")
    return store


def test_nodes_carry_type_sensitivity_and_ids(mstore) -> None:
    store = _store(mstore)
    hits = MarsRetriever(store, "alice").retrieve("Ana birthday sister diagnosis")
    assert {h.node.metadata["namespace"] for h in hits} == {"alice"}
    for hit in hits:
        node = store.get(hit.node.node_id, namespace="alice")
        meta = hit.node.metadata
        assert meta["memory_id"] == node.id and meta["memory_type"] == node.type.value
        assert meta["sensitivity"] == node.sensitivity and hit.score is not None
        llm_view = hit.node.get_content(MetadataMode.LLM)
        assert "memory_type" in llm_view and "sensitivity" not in llm_view
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_filters_and_async(mstore) -> None:
    store = await asyncio.to_thread(_store, mstore)  # synchronous calls leave the loop
    safe = MarsRetriever(store, "alice", max_sensitivity=0.5)
    texts = [h.node.get_content() for h in await safe.aretrieve("Ana diagnosis birthday")]
    assert texts and not any("diagnosis" in t for t in texts)
    social = await MarsRetriever(store, "alice", types=["social"]).aretrieve("Ana")
    assert [h.node.metadata["memory_type"] for h in social] == ["social"]
    assert len(await MarsRetriever(store, "alice", k=1).aretrieve("Ana")) == 1


def test_read_only_does_not_count_as_an_access(mstore) -> None:
    store = _store(mstore)
    events = len(store.audit)
    MarsRetriever(store, "alice", read_only=True).retrieve("Ana")
    assert len(store.audit) == events
    MarsRetriever(store, "alice").retrieve("Ana")
    assert len(store.audit) == events + 1


def test_archived_memories_only_on_request(mstore) -> None:
    store = _store(mstore)
    [node] = [n for n in store.list("alice") if "birthday" in n.content]
    store.forget(node.id, namespace="alice")
    active = MarsRetriever(store, "alice").retrieve("birthday")
    assert all(h.node.node_id != node.id for h in active)
    hits = MarsRetriever(store, "alice", include_archive=True).retrieve("birthday")
    assert any(h.node.node_id == node.id and h.node.metadata["archived"] for h in hits)


def test_top_k_whatever_the_stores_cutoff_unless_asked(mstore) -> None:
    store = _store(mstore)  # the store's default cut-off keeps only the best hit
    assert len(MarsRetriever(store, "alice", k=3).retrieve("Ana birthday")) == 3
    assert len(store.retrieve("Ana birthday", namespace="alice", k=3, read_only=True)) < 3
    cut = MarsRetriever(store, "alice", k=3, score_cutoff=0.85).retrieve("Ana birthday")
    assert 1 <= len(cut) < 3 and all(h.score >= 0.85 * cut[0].score for h in cut)


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"budget_tokens": -3}, {"types": ["nope"]},
                                    {"max_sensitivity": 2.0}, {"score_cutoff": 0.0},
                                    {"score_cutoff": 1.5},
                                    # issue 19: nothing coerced, max_sensitivity in [0, 1]
                                    {"max_sensitivity": -0.1}, {"max_sensitivity": True},
                                    {"max_sensitivity": "0.5"},
                                    {"max_sensitivity": float("nan")},
                                    {"include_archive": "yes"}, {"read_only": 1}])
def test_bad_arguments_are_typed_errors(mstore, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MarsRetriever(mstore(), **kwargs)  # type: ignore[arg-type]


def test_similarity_top_k_is_llamaindexs_name_for_k(mstore) -> None:
    store = _store(mstore)
    hits = MarsRetriever(store, "alice", similarity_top_k=2).retrieve("Ana")
    assert len(hits) == 2 and all(0.0 < h.score <= 1.0 for h in hits)
    assert [h.node.node_id for h in hits] == [
        h.node.node_id for h in MarsRetriever(store, "alice", k=2).retrieve("Ana")]
    assert MarsRetriever(store, "alice", similarity_top_k=2, k=2).similarity_top_k == 2
    with pytest.raises(ValidationError, match="similarity_top_k or k"):
        MarsRetriever(store, "alice", similarity_top_k=2, k=3)
    with pytest.raises(ValidationError, match="similarity_top_k must be"):
        MarsRetriever(store, "alice", similarity_top_k=0)


def test_scores_are_in_zero_one(mstore) -> None:
    store = mstore()
    store.observe("user", "I work at Acme as a baker.", namespace="alice")
    hits = MarsRetriever(store, "alice").retrieve("Where do I work?")
    assert hits[0].node.metadata["fused_score"] > 1.0  # the card channel answers it
    assert all(0.0 <= h.score <= 1.0 for h in hits)
