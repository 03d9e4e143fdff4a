"""Any LangChain chat model as the control loop's judge or decomposer.

The model's answer is parsed deterministically:

* **judge** — ``True`` (the buffer suffices) when the answer's first word is one of
  ``yes``, ``sufficient``, ``true``, ``enough``; ``False`` for ``no``, ``insufficient``,
  ``false``, ``not``; a JSON object ``{"sufficient": bool}`` is read too. Anything else
  counts as *insufficient* (retrieve: the safe side) and is logged without the text.
* **decomposer** — one sub-query per line (bullets and numbering stripped) or a JSON list
  of strings; empty lines and duplicates dropped, at most ``max_subqueries`` kept.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> judge = judge_from_chat_model(FakeListChatModel(responses=["Yes, it does."]))
    >>> judge("Where does Ana live?", ["Ana lives in Lisbon"])
    True
    >>> split = decomposer_from_chat_model(
    ...     FakeListChatModel(responses=["1. Who is Ana's sister?\\n2. What did she study?"]))
    >>> split("What did Ana's sister study?")
    ["Who is Ana's sister?", 'What did she study?']
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from mars_core.errors import ExtraNotInstalledError, ValidationError

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", exc.name or "langchain-core") from exc

__all__ = ["decomposer_from_chat_model", "judge_from_chat_model", "parse_subqueries",
           "parse_verdict"]

log = logging.getLogger(__name__)

JUDGE_PROMPT = (
    "You decide whether the memories below are enough to answer the question. "
    "Answer with one word first: 'yes' if they suffice, 'no' if more memories are needed."
)
DECOMPOSE_PROMPT = (
    "Break the question into at most {n} short, self-contained search queries, one per "
    "line, that together find every fact needed to answer it. Output only the queries."
)

_YES = frozenset({"yes", "sufficient", "true", "enough", "suffices"})
_NO = frozenset({"no", "insufficient", "false", "not", "none"})
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|q\d+[:.)])\s*", re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """True/False from a judge's answer; None when it says neither.

    Examples:
        >>> parse_verdict('{"sufficient": false}'), parse_verdict("No."), parse_verdict("hmm")
        (False, False, None)
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped).get("sufficient")
        except (json.JSONDecodeError, AttributeError):
            value = None
        return value if isinstance(value, bool) else None
    words = re.findall(r"[a-z]+", stripped.lower())
    if not words:
        return None
    return True if words[0] in _YES else False if words[0] in _NO else None


def parse_subqueries(text: str, limit: int) -> list[str]:
    """Sub-queries from a decomposer's answer (lines or a JSON list).

    Examples:
        >>> parse_subqueries('["a b", "a b", "c"]', 5)
        ['a b', 'c']
    """
    stripped = text.strip()
    items: list[Any]
    try:
        loaded = json.loads(stripped) if stripped.startswith("[") else None
    except json.JSONDecodeError:
        loaded = None
    items = loaded if isinstance(loaded, list) else stripped.splitlines()
    out = [_BULLET.sub("", str(i)).strip() for i in items]
    return list(dict.fromkeys(q for q in out if q))[:limit]


def _content(msg: BaseMessage) -> str:
    c = msg.content
    return c if isinstance(c, str) else " ".join(str(p) if isinstance(p, str)
                                                 else str(p.get("text", "")) for p in c)


def judge_from_chat_model(model: BaseChatModel, *, prompt: str = JUDGE_PROMPT
                          ) -> Callable[[str, Sequence[str]], bool]:
    """A Decayer judge ``(query, buffer texts) -> bool`` asking ``model``.

    Raises:
        ValidationError: ``model`` is not a LangChain chat model.
    """
    if not isinstance(model, BaseChatModel):
        raise ValidationError("judge_from_chat_model needs a LangChain chat model")

    def judge(query: str, texts: Sequence[str]) -> bool:
        memories = "\n".join(f"- {t}" for t in texts) or "(none)"
        answer = _content(model.invoke([SystemMessage(prompt), HumanMessage(
            f"Memories:\n{memories}\n\nQuestion: {query}")]))
        verdict = parse_verdict(answer)
        if verdict is None:
            log.warning("judge answer not understood (%d chars); treated as insufficient",
                        len(answer))
            return False
        return verdict

    return judge


def decomposer_from_chat_model(model: BaseChatModel, *, max_subqueries: int = 4,
                               prompt: str = DECOMPOSE_PROMPT) -> Callable[[str], list[str]]:
    """An Activator decomposer ``query -> sub-queries`` asking ``model``.

    Raises:
        ValidationError: ``model`` is not a chat model, or ``max_subqueries`` < 1.
    """
    if not isinstance(model, BaseChatModel):
        raise ValidationError("decomposer_from_chat_model needs a LangChain chat model")
    if not isinstance(max_subqueries, int) or max_subqueries < 1:
        raise ValidationError("max_subqueries must be a positive integer")

    def decompose(query: str) -> list[str]:
        answer = _content(model.invoke([SystemMessage(prompt.format(n=max_subqueries)),
                                        HumanMessage(query)]))
        return parse_subqueries(answer, max_subqueries)

    return decompose
