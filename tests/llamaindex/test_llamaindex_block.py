"""``Memory`` with ``MarsMemoryBlock``: flushes into MaRS, reads back within its token
limit, truncates what MaRS ranks lowest first, and keeps sessions apart."""

from __future__ import annotations

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.utils import get_tokenizer

from llamaindex_mars import MarsMemoryBlock
from llamaindex_mars._text import HEADER_STRUCTURED, drop_lowest, item_count
from mars_core import RetrievalConfig, ValidationError

TURNS = ["I work at Acme as a welder.", "ok", "My cat is called Tom.", "nice",
         "I live in Porto.", "cool", "The weather is mild today.", "indeed",
         "Let us talk about trains.", "sure"]


def _memory(block: MarsMemoryBlock, session: str, token_limit: int = 200) -> Memory:
    return Memory.from_defaults(session_id=session, token_limit=token_limit,
                                token_flush_size=8, chat_history_token_ratio=0.1,
                                memory_blocks=[block])


def _talk(memory: Memory, turns: list[str] = TURNS) -> None:
    for i, text in enumerate(turns):
        memory.put(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=text))


def _tokens(memory: Memory, messages: list[ChatMessage]) -> int:
    return sum(memory._estimate_token_count(m) for m in messages)


def test_flushes_into_mars_and_reads_back_within_the_limit(mstore) -> None:
    store = mstore()
    block = MarsMemoryBlock(store, budget_tokens=150)
    memory = _memory(block, "bob")
    _talk(memory)
    stored = [n.content for n in store.list("bob")]
    assert "I work at Acme as a welder." in stored and "The user works at Acme" in stored
    active = [m.content for m in memory.get_all(status=None)]
    assert len(active) == len(TURNS)
    out = memory.get(input="Where do I work?")
    assert out[0].role.value == "system" and "<mars_memory>" in (out[0].content or "")
    assert "Acme" in (out[0].content or "")
    assert _tokens(memory, out) <= memory.token_limit


def test_truncation_drops_the_lowest_ranked_items_first(mstore) -> None:
    store = mstore(retrieval=RetrievalConfig(relative_cutoff=0))  # enough items to truncate
    block = MarsMemoryBlock(store, budget_tokens=300, priority=1)
    _talk(_memory(block, "bob", token_limit=100))
    full = _memory(block, "bob", token_limit=4000)
    tight = _memory(block, "bob", token_limit=150)
    query = "Where do I work and where do I live?"
    whole = full.get(input=query)[0].content or ""
    cut = tight.get(input=query)
    # LlamaIndex's Memory does not count the tags of its template (14 tokens by default)
    assert _tokens(tight, cut) <= 150 + _tokens(tight, [ChatMessage(
        role="system", content="<memory>\n<mars_memory>\n</mars_memory>\n</memory>")])
    text = cut[0].content or "" if cut and cut[0].role.value == "system" else ""
    kept = [line for line in text.splitlines() if line.startswith("- [")]
    ranked = [line for line in whole.splitlines() if line.startswith("- [")]
    assert 0 < len(kept) < len(ranked)
    assert kept == ranked[:len(kept)]  # a prefix by MaRS's rank: the lowest went first


async def test_atruncate_is_a_rank_prefix_or_none(mstore) -> None:
    store = mstore()
    block = MarsMemoryBlock(store)
    text = "\n".join(["=== LONG-TERM MEMORY (RECALLED) ===", HEADER_STRUCTURED,
                      "- [semantic] best", "- [semantic] middle", "- [episodic] worst"])
    tokenize = get_tokenizer()  # LlamaIndex asks in its own tokens

    def count(t: str) -> int:
        return len(tokenize(t))

    cut = await block.atruncate(text, count("- [episodic] worst"))
    assert cut == drop_lowest(text, 1) and item_count(cut) == 2
    assert await block.atruncate(text, count(text)) is None


async def test_sessions_of_one_block_are_isolated(mstore) -> None:
    store = mstore()
    block = MarsMemoryBlock(store, budget_tokens=150)
    _talk(_memory(block, "bob"))
    _talk(_memory(block, "eve"), ["My brother Max plays chess.", "fun"] * 4)
    eve_sees = await block.aget([ChatMessage(role="user", content="Acme welder work")],
                                session_id="eve")
    assert "Acme" not in eve_sees
    assert "Acme" in await block.aget([ChatMessage(role="user", content="Acme welder work")],
                                      session_id="bob")
    fixed = MarsMemoryBlock(store, namespace="bob", budget_tokens=150)
    assert "Acme" in await fixed.aget([ChatMessage(role="user", content="Acme welder")],
                                      session_id="eve")


@pytest.mark.parametrize("kwargs", [
    {"budget_tokens": 10}, {"budget_tokens": 0}, {"priority": -1}, {"evidence": 0},
    {"name": ""}, {"namespace": ""}, {"observe_roles": "user"},
])
def test_bad_arguments_are_typed_errors(mstore, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MarsMemoryBlock(mstore(), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MarsMemoryBlock(object())  # type: ignore[arg-type]
