"""Helpers of the LangChain adapter tests: a real callback handler that records what each
chat model received, and a fake tool-calling chat model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage

__all__ = ["FakeToolModel", "ModelInputs"]


class ModelInputs(BaseCallbackHandler):
    """Records the messages of every chat-model call (``on_chat_model_start``)."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any],
                            messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.calls.extend(list(batch) for batch in messages)

    def system_texts(self, call: int = -1) -> list[str]:
        """The system messages' texts of one call."""
        return [m.text for m in self.calls[call] if m.type == "system"]


class FakeToolModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts ``bind_tools`` (the fake models lack it)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeToolModel:  # type: ignore[override]
        return self
