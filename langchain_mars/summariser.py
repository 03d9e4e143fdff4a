"""Any LangChain chat model as the store's summariser (Reflection, erasure regeneration).

:class:`ChatModelSummariser` is a :class:`~mars_core.knowledge.summarise.CallableSummariser` whose
LLM is a LangChain ``BaseChatModel``: the seed's summarisation prompt goes in as one human
message, the reply's text comes back (stripped and, by default, with direct identifiers
masked again). A model error becomes a :class:`~mars_core.errors.PolicyError`, on which
the reflection policy skips the cluster. Pass it as
``MemoryStore(..., summariser=ChatModelSummariser(model))``; ``store.maintain()`` then
uses it to consolidate redundant episodes.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> s = ChatModelSummariser(FakeListChatModel(responses=["The team meets on Mondays."]))
    >>> s(["We meet Monday.", "Standup is on Mondays."], target_tokens=10)
    'The team meets on Mondays.'
    >>> s.name
    'langchain:FakeListChatModel'
"""

from __future__ import annotations

from typing import Any

from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.summarise import CallableSummariser

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import HumanMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", "langchain-core") from exc

__all__ = ["ChatModelSummariser"]


class ChatModelSummariser(CallableSummariser):
    """A LangChain chat model as a :class:`~mars_core.knowledge.summarise.Summariser`.

    Args:
        model: any LangChain chat model.
        prompt: a template with ``{n}``, ``{target}`` and ``{items}`` fields (default:
            the seed's prompt, asking for abstraction of identifiers).
        mask: mask direct identifiers in the reply (default True).
        name: recorded in the audit (default ``"langchain:<model class>"``).

    Raises:
        ValidationError: ``model`` is not a LangChain chat model.
    """

    def __init__(self, model: Any, *, prompt: str | None = None, mask: bool = True,
                 name: str | None = None) -> None:
        if not isinstance(model, BaseChatModel):
            raise ValidationError(f"expected a LangChain chat model, got {type(model).__name__}")
        self.model = model
        label = name or f"langchain:{type(model).__name__}"
        if prompt is None:
            super().__init__(self._ask, mask=mask, name=label)
        else:
            super().__init__(self._ask, prompt=prompt, mask=mask, name=label)

    def _ask(self, prompt: str) -> str:
        return self.model.invoke([HumanMessage(prompt)]).text
