"""What the LlamaIndex adapters carry into the store (speakers, times), what they give
back (k nodes, the second tier), and that a reset session never returns.

The rule (docs/integrations/index.md, "What each adapter stores and injects"): ``reset``
clears the session's turns — never shown to a model again, not from the second tier,
not as the raw support of a fact — and forgets the rest of its namespace (out of the
second tier, restorable); ``erase`` removes it all.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory

from llamaindex_mars import MarsMemory, MarsMemoryBlock, MarsRetriever
from mars_core import MemoryStore, ValidationError

CHATTER = [f"Turn {i} about the weather on day {i}, nothing else" for i in range(12)]


def _visible(store: MemoryStore, ns: str, query: str, text: str) -> list[str]:
    """The exits that still show ``text`` to a model."""
    where = []
    if text in store.render_context(query, budget_tokens=2000, namespace=ns):
        where.append("render_context")
    for include in (None, True):
        if any(text in h.text for h in store.retrieve(query, budget_tokens=2000, k=50,
                                                      namespace=ns, include_archive=include)):
            where.append(f"retrieve(include_archive={include})")
    if any(text in n.node.get_content() for n in MarsRetriever(store, ns, k=50).retrieve(query)):
        where.append("MarsRetriever")
    return where


@pytest.mark.parametrize("use_async", [False, True])
def test_reset_never_brings_the_session_back(mstore, use_async: bool) -> None:
    store = mstore(budget=120)
    memory = MarsMemory(store, session_id="alice")
    memory.put(ChatMessage(role="user", content="I like jazz and my locker is on the blue card"))
    for text in CHATTER:
        memory.put(ChatMessage(role="user", content=text))
    assert "retrieve(include_archive=None)" in _visible(store, "alice", "blue card locker",
                                                        "blue card")  # evicted: 2nd tier
    if use_async:
        asyncio.run(memory.areset())
    else:
        memory.reset()
    assert _visible(store, "alice", "blue card locker jazz", "blue card") == []
    assert _visible(store, "alice", "what music do I like? jazz", "jazz") == []
    turns = store.list("alice", type="episodic", status=None)
    assert {n.archive_reason for n in turns} == {"cleared"}
    fresh = MarsMemory(store, session_id="alice")
    got = fresh.get("what music do I like? jazz")
    assert not any("jazz" in (m.content or "") for m in got)


def test_put_carries_names_and_times(mstore) -> None:
    store = mstore()
    memory = MarsMemory(store, session_id="s", user_name="Caroline", assistant_name="Melanie")
    memory.put_messages([
        ChatMessage(role="user", content="I went to a support group",
                    additional_kwargs={"timestamp": datetime(2023, 5, 8, 13, 56)}),
        ChatMessage(role="assistant", content="I love painting sunsets",
                    additional_kwargs={"name": "Mel"}),
    ])
    turns = store.list("s", type="episodic")
    assert [list(n.payload.participants) for n in turns] == [  # type: ignore[union-attr]
        ["Caroline"], ["Mel"]]
    assert turns[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with pytest.raises(ValidationError, match="ISO 8601"):
        memory.put(ChatMessage(role="user", content="x", additional_kwargs={"timestamp": "?"}))
    with pytest.raises(ValidationError):
        MarsMemory(store, session_id="s", assistant_name="")


def test_block_carries_names(mstore) -> None:
    store = mstore()
    block = MarsMemoryBlock(store, user_name="Jon")
    memory = Memory.from_defaults(session_id="s1", token_limit=60, chat_history_token_ratio=0.5,
                                  token_flush_size=10, memory_blocks=[block])
    for i in range(6):
        memory.put(ChatMessage(role="user", content=f"I play chess on day {i} of the week"))
    turns = store.list("s1", type="episodic")
    assert turns and all(list(n.payload.participants) == ["Jon"]  # type: ignore[union-attr]
                         for n in turns)


def test_retriever_returns_k_nodes_and_searches_the_second_tier(mstore) -> None:
    store = mstore(budget=120)
    memory = MarsMemory(store, session_id="alice")
    memory.put(ChatMessage(role="user", content="My locker code is on the blue card"))
    for text in CHATTER:
        memory.put(ChatMessage(role="user", content=text))
    query = "locker code blue card, which day?"
    nodes = MarsRetriever(store, session_id="alice", similarity_top_k=4).retrieve(query)
    assert len(nodes) == 4
    assert nodes[0].node.get_content() == "My locker code is on the blue card"
    assert len(store.retrieve(query, k=4, namespace="alice")) < 4  # retrieve's cut-off
    cut = MarsRetriever(store, session_id="alice", k=4, score_cutoff=0.9).retrieve(query)
    assert len(cut) < 4
    active = MarsRetriever(store, session_id="alice", k=4, include_archive=False)
    assert "blue card" not in " ".join(n.node.get_content() for n in active.retrieve(query))
