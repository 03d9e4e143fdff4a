"""Text helpers shared by the adapters: message text, queries, and trimming the
store's rendered context.

Nothing here decides what to remember or what ranks higher — the store does. These
helpers only read LlamaIndex messages and cut the store's own output at item
boundaries, in the order the store ranked them.

The store renders recalled memories (``MemoryStore.render_context``) as sections of
one-line items, best first (see :mod:`mars_core.reading.context`)::

    === LONG-TERM MEMORY (RECALLED) ===
    === STRUCTURED EVIDENCE ===
    - [semantic | ...] best evidence
    - [episodic | ...] weaker evidence
    === RAW SUPPORTING EVIDENCE ===
    - [episodic | ...] the turn the best evidence came from
    === ACTIVE CONVERSATION ===
    - ...

The adapters render the conversation themselves, as chat messages, so they keep what
precedes the active section (:func:`recalled_part`). When it must shrink, the *last*
item goes first (:func:`drop_lowest`): supporting turns before evidence, weaker
evidence before stronger — the store's own drop order.

Examples:
    >>> text = "\\n".join([HEADER_RECALLED, HEADER_STRUCTURED, "- [semantic] Ana is my sister",
    ...                    "- [episodic] we met Ana", HEADER_SUPPORT, HEADER_ACTIVE, "- hi"])
    >>> part = recalled_part(text)
    >>> print(drop_lowest(part, 1))
    === LONG-TERM MEMORY (RECALLED) ===
    === STRUCTURED EVIDENCE ===
    - [semantic] Ana is my sister
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mars_core.errors import ExtraNotInstalledError
from mars_core.knowledge.speakers import TIMESTAMP_KEY, Speakers, turn_meta
from mars_core.reading.context import (
    HEADER_ACTIVE,
    HEADER_RECALLED,
    HEADER_STRUCTURED,
    HEADER_SUPPORT,
)

try:
    from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc

__all__ = [
    "HEADER_ACTIVE",
    "HEADER_RECALLED",
    "HEADER_STRUCTURED",
    "HEADER_SUPPORT",
    "MIN_RECALL",
    "drop_lowest",
    "fit_recalled",
    "item_count",
    "last_user_text",
    "message_text",
    "message_tokens",
    "message_turn",
    "recalled_part",
]

_HEADERS = (HEADER_RECALLED, HEADER_STRUCTURED, HEADER_SUPPORT, HEADER_ACTIVE)

MIN_RECALL = "\n".join([HEADER_RECALLED, HEADER_STRUCTURED,
                        "- [semantic | 0000-00-00 00:00 UTC | user] a short memory"])
"""The smallest recall worth asking for: the section headers and one short memory."""


def message_text(message: ChatMessage) -> str:
    """The text blocks of a message, joined by newlines (tool calls and media left out).

    Examples:
        >>> message_text(ChatMessage(role="user", content="hello"))
        'hello'
    """
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def message_turn(message: ChatMessage, text: str, speakers: Speakers) -> dict[str, Any]:
    """``observe``'s ``role``, ``text``, ``speaker`` and ``at`` for a message: its
    ``additional_kwargs["name"]`` or the configured name of its role, its
    ``additional_kwargs["timestamp"]`` (:mod:`mars_core.knowledge.speakers`).

    Examples:
        >>> m = ChatMessage(role="user", content="I like jazz",
        ...                 additional_kwargs={"name": "Caroline"})
        >>> message_turn(m, "I like jazz", Speakers())["speaker"]
        'Caroline'
    """
    role = message.role.value
    extra = message.additional_kwargs
    return {"role": role, "text": text,
            **turn_meta(role, extra.get("name"), extra.get(TIMESTAMP_KEY), speakers)}


def message_tokens(message: ChatMessage, count: Callable[[str], int]) -> int:
    """Tokens of a message by ``count``: its text, plus its tool calls as JSON.

    Examples:
        >>> message_tokens(ChatMessage(role="user", content="a b c"), lambda s: len(s.split()))
        3
    """
    calls = [{"name": b.tool_name, "kwargs": b.tool_kwargs}
             for b in message.blocks if isinstance(b, ToolCallBlock)]
    extra = count(json.dumps(calls, sort_keys=True, default=str)) if calls else 0
    return count(message_text(message)) + extra


def last_user_text(messages: Sequence[ChatMessage]) -> str:
    """The text of the latest user message with text ("" when there is none).

    Examples:
        >>> last_user_text([ChatMessage(role="user", content="q1"),
        ...                 ChatMessage(role="assistant", content="a1")])
        'q1'
    """
    for message in reversed(messages):
        if message.role.value == "user":
            text = message_text(message)
            if text:
                return text
    return ""


def recalled_part(rendered: str) -> str:
    """What precedes the active-conversation section; "" when no memory was recalled.

    Examples:
        >>> recalled_part(HEADER_ACTIVE + "\\n- [episodic | user] hi")
        ''
    """
    lines = rendered.splitlines()
    if HEADER_ACTIVE in lines:
        lines = lines[:lines.index(HEADER_ACTIVE)]
    return "\n".join(lines) if _items(lines) else ""


def _items(lines: Sequence[str]) -> list[int]:
    """Indices of the item lines (everything that is not a section header)."""
    return [i for i, line in enumerate(lines) if line not in _HEADERS]


def item_count(text: str) -> int:
    """How many recalled items ``text`` holds.

    Examples:
        >>> item_count(HEADER_RECALLED + "\\n- [semantic] x\\n- [semantic] y")
        2
    """
    return len(_items(text.splitlines()))


def drop_lowest(text: str, n: int) -> str:
    """``text`` without its ``n`` lowest-ranked items (the last ones); "" when none is left.

    Examples:
        >>> drop_lowest(HEADER_RECALLED + "\\n- [semantic] x", 1)
        ''
    """
    lines = text.splitlines()
    items = _items(lines)
    if n >= len(items):
        return ""
    gone = set(items[len(items) - n:]) if n > 0 else set()
    kept = [line for i, line in enumerate(lines) if i not in gone]
    if kept and kept[-1] == HEADER_SUPPORT:  # its last supporting turn went: no empty header
        kept.pop()
    return "\n".join(kept)


def fit_recalled(text: str, budget: int, count: Callable[[str], int]) -> str:
    """The longest prefix (by rank) of ``text``'s items whose rendering fits ``budget``.

    Examples:
        >>> t = HEADER_RECALLED + "\\n- one two\\n- three four"
        >>> fit_recalled(t, 8, lambda s: len(s.split())) == drop_lowest(t, 1)
        True
    """
    total = item_count(text)
    for dropped in range(total + 1):
        candidate = drop_lowest(text, dropped)
        if not candidate or count(candidate) <= budget:
            return candidate
    return ""
