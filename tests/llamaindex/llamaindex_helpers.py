"""Helpers of the LlamaIndex adapter tests (imported by name: tests/ has no packages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.llms import ChatMessage

ANSWER = "Thought: I can answer without using any more tools.\nAnswer: noted"


class Recorder:
    """A ``MockFunctionCallingLLM`` response generator that records every input.

    It answers in the ReAct format (which a ``FunctionAgent`` returns as plain text).
    """

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        self.calls.append(list(messages))
        return ChatMessage(role="assistant", content=ANSWER)

    def last_input_text(self) -> str:
        """Everything the LLM received in its last call, as one string."""
        return "\n".join(m.content or "" for m in self.calls[-1])
