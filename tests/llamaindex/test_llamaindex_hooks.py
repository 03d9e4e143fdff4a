"""The user's LlamaIndex embedding model and LLM as the store's embedder and summariser."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage, MockLLM

import llamaindex_mars
from llamaindex_mars import MarsMemory, embedder_from, open_store, summariser_from
from mars_core import EmbeddingMismatchError, FakeClock, HashingEmbedder, ValidationError
from mars_core.knowledge.summarise import CallableSummariser


@pytest.mark.backend_neutral
def test_public_names_are_pinned() -> None:
    assert llamaindex_mars.__all__ == ["MarsMemory", "MarsMemoryBlock", "MarsRetriever",
                                       "embedder_from", "open_store", "summariser_from"]
    assert all(hasattr(llamaindex_mars, name) for name in llamaindex_mars.__all__)


def test_embed_model_is_the_store_embedder_and_recorded(tmp_path: Path, key: bytes) -> None:
    with open_store(tmp_path, embed_model=MockEmbedding(embed_dim=16), clock=FakeClock(),
                    audit_key=key) as store:
        assert store.embedder.dim == 16 and store.stats()["embedder"].startswith("llamaindex:")
        store.add("Ana likes tea", namespace="a")
    with pytest.raises(EmbeddingMismatchError):
        open_store(tmp_path, embed_model=MockEmbedding(embed_dim=8), audit_key=key)
    with open_store(tmp_path, embed_model=MockEmbedding(embed_dim=16), audit_key=key) as store:
        assert [n.content for n in store.list("a")] == ["Ana likes tea"]


@pytest.mark.backend_neutral
def test_llm_summariser_sends_the_memories_and_masks_the_reply() -> None:
    echo = summariser_from(MockLLM())  # MockLLM answers with the prompt it received
    reply = echo(["Call Ana at 555-123-4567 today.", "Ana called back."], target_tokens=12)
    assert "1. Call Ana at [phone] today." in reply and "2. Ana called back." in reply
    assert "555-123-4567" not in reply


def test_llm_is_the_store_summariser(key: bytes) -> None:
    calls: list[str] = []

    class Recording(MockLLM):
        def complete(self, prompt: str, formatted: bool = False, **kw: object):  # type: ignore[override]
            calls.append(prompt)
            return super().complete("The user drinks coffee every morning.")

    with open_store(llm=Recording(), clock=FakeClock(), audit_key=key,
                    embedder=HashingEmbedder()) as store:
        memory = MarsMemory(store, session_id="s")
        memory.put(ChatMessage(role="user", content="I drank coffee this morning."))
        memory.put(ChatMessage(role="user", content="Coffee again this morning."))
        texts = [n.content for n in store.list("s", type="episodic")]
        summariser = store.summariser  # what reflection and erasure summaries use
        assert isinstance(summariser, CallableSummariser)
        assert summariser(texts, target_tokens=10) == "The user drinks coffee every morning."
        assert summariser.name == "llamaindex:Recording"
    assert len(calls) == 1 and all(t in calls[0] for t in texts)


@pytest.mark.backend_neutral
def test_bad_models_are_typed_errors() -> None:
    with pytest.raises(ValidationError):
        summariser_from("gpt")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        embedder_from(object())  # type: ignore[arg-type]
