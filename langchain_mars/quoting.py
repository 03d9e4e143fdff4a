"""``QuotingChatModel``: a deterministic fake chat model that answers only from memory.

A real LangChain ``BaseChatModel`` for demos and tests (no API key, no network) whose
every claim comes from the memory block it was given in that call, so what it shows is
what the memory did:

* the **memory lines** are the ``- [tags] text`` item lines of the call's system
  messages (the layout of :func:`mars_core.reading.context.render_context`, which
  :class:`~langchain_mars.middleware.MarsMemoryMiddleware` and the Oblivion nodes write),
  up to an ``=== ACTIVE CONVERSATION ===`` header; a line tagged ``superseded`` or
  ``corrected`` is outdated and never quoted;
* a last human message that is **not a question** (it does not end with ``?``) gets
  :attr:`QuotingChatModel.acknowledgement` (``"Noted."``), which claims nothing;
* a **question** is split at ``and`` / ``;`` into parts; each part is answered by quoting,
  verbatim, the memory lines sharing the most content words with it
  (:func:`mars_core.control.text.content_words`): facts (any type but ``episodic`` and
  the ``l3`` layer) when one matches, else episodes; at most ``max_quotes`` per part, a
  line quoted once. A part nothing matches is answered with :data:`NO_MEMORY`.

The answer is ``From memory: "<line>"; "<line>".`` for a one-part question and
``<part>? From memory: ...`` per part otherwise. Nothing else is ever said.

Examples:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> model = QuotingChatModel()
    >>> memory = SystemMessage("=== STRUCTURED EVIDENCE ===\\n"
    ...                        "- [semantic | user] The user works at Tidewave\\n"
    ...                        "- [semantic | user | corrected] The user lives in Lisbon\\n"
    ...                        "- [semantic | user] The user lives in Porto")
    >>> model.invoke([memory, HumanMessage("Where do I work?")]).text
    'From memory: "The user works at Tidewave".'
    >>> reply = model.invoke([memory, HumanMessage("Where do I live and what do I eat?")])
    >>> print(reply.text)  # doctest: +NORMALIZE_WHITESPACE
    Where do I live? From memory: "The user lives in Porto".
    What do I eat? Nothing in the memories I was given answers that.
    >>> model.invoke([memory, HumanMessage("I moved to Faro.")]).text
    'Noted.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mars_core.control.text import content_words
from mars_core.errors import ExtraNotInstalledError
from mars_core.reading.context import HEADER_ACTIVE

try:
    import pydantic
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", exc.name or "langchain-core") from exc

__all__ = ["NO_MEMORY", "MemoryLine", "QuotingChatModel", "memory_lines"]

NO_MEMORY = "Nothing in the memories I was given answers that."
"""The answer to a question (part) no memory line matches."""
_ITEM = re.compile(r"^- \[([^\]]*)\] (.+)$")
_PARTS = re.compile(r"\s*(?:\band\b|;)\s*", re.IGNORECASE)
_OUTDATED = frozenset({"superseded", "corrected"})
_EPISODES = frozenset({"episodic", "l3"})


@dataclass(frozen=True, slots=True)
class MemoryLine:
    """One memory line of a rendered memory block.

    Attributes:
        kind: the first tag (a memory type such as ``semantic``, or a layer such as ``l2``).
        text: the memory's text as rendered.
        outdated: tagged ``superseded`` or ``corrected``.
    """

    kind: str
    text: str
    outdated: bool

    @property
    def is_episode(self) -> bool:
        """An episode (``episodic``, ``l3``) rather than a fact."""
        return self.kind in _EPISODES


def memory_lines(messages: Sequence[BaseMessage]) -> list[MemoryLine]:
    """The memory lines of the system messages, in order (see the module).

    Examples:
        >>> from langchain_core.messages import SystemMessage
        >>> memory_lines([SystemMessage("- [task | user] Book a table\\n"
        ...                             "=== ACTIVE CONVERSATION ===\\n- [episodic] hi")])
        [MemoryLine(kind='task', text='Book a table', outdated=False)]
    """
    out: list[MemoryLine] = []
    for message in messages:
        if message.type != "system":
            continue
        for line in message.text.split(HEADER_ACTIVE, 1)[0].splitlines():
            m = _ITEM.match(line.strip())
            if m is not None:
                tags = [t.strip() for t in m.group(1).split("|")]
                out.append(MemoryLine(tags[0], m.group(2).strip(), bool(_OUTDATED & set(tags))))
    return out


def _last_human(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human" and message.text.strip():
            return message.text.strip()
    return ""


class QuotingChatModel(BaseChatModel):
    """A chat model that answers questions by quoting the memory lines it was given.

    Args:
        max_quotes: the most memory lines quoted per question part.
        acknowledgement: the reply to a message that is not a question (claims nothing).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> QuotingChatModel().invoke([HumanMessage("Where do I work?")]).text
        'Nothing in the memories I was given answers that.'
    """

    max_quotes: int = pydantic.Field(default=2, ge=1)
    acknowledgement: str = "Noted."

    @property
    def _llm_type(self) -> str:
        return "mars-quoting"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        text = self.answer(messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def answer(self, messages: Sequence[BaseMessage]) -> str:
        """The reply to ``messages`` (what :meth:`invoke` returns as text)."""
        question = _last_human(messages)
        if not question.endswith("?"):
            return self.acknowledgement
        lines = [line for line in memory_lines(messages) if not line.outdated]
        parts = [p for p in _PARTS.split(question.rstrip(" ?!.")) if content_words(p)]
        if len(parts) < 2:
            return self._quote(question, lines, set())
        quoted: set[str] = set()
        return " ".join(f"{part[:1].upper()}{part[1:]}? {self._quote(part, lines, quoted)}"
                        for part in parts)

    def _quote(self, part: str, lines: Sequence[MemoryLine], quoted: set[str]) -> str:
        """``From memory: "..."`` with the best-matching lines of ``part``, or NO_MEMORY."""
        words = content_words(part)
        scored = [(len(words & content_words(line.text)), i, line)
                  for i, line in enumerate(lines) if line.text not in quoted]
        matches = [s for s in scored if s[0] > 0]
        facts = [s for s in matches if not s[2].is_episode]
        chosen = sorted(facts or matches, key=lambda s: (-s[0], s[1]))[: self.max_quotes]
        if not chosen:
            return NO_MEMORY
        texts = list(dict.fromkeys(s[2].text for s in chosen))
        quoted.update(texts)
        return "From memory: " + "; ".join(f'"{t}"' for t in texts) + "."
