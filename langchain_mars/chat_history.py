"""``MarsChatMessageHistory``: a chat history for ``RunnableWithMessageHistory``.

Writing: every message added is observed into the store
(``store.observe(role, text, namespace=..., conversation_id=session_id, speaker=...,
at=...)``: the speaker is the message's ``name``, else ``user_name``/``assistant_name``;
the time its ``additional_kwargs["timestamp"]``, else the store's clock), so besides
the turn itself the store keeps what it says about the user (facts, preferences,
relations), scored, budgeted and forgettable like any other memory. Roles map as
``human → user``, ``ai → assistant``, ``system → system``, ``tool → tool`` (a
``ChatMessage`` keeps its own role). A message without text (an AI message holding only
tool calls) is not stored.

Reading — the *budgeted working history*: ``messages`` returns the most recent turns of
**this session only** that are still active in the store, oldest first, as many as fit
``budget_tokens`` (counted with the store's token counter, as stored) and at most
``max_messages``; nothing else (no recalled long-term memories: use
:class:`~langchain_mars.retrievers.MarsRetriever` or the middleware for those). Because
the store forgets on purpose, a turn its policy archived is absent from the history
even when it would fit the budget. Each turn goes through the store's output check
(:meth:`~mars_core.store.MemoryStore.check_output`, as ``retrieve`` does): a phone number
in an earlier turn comes back as ``[PHONE]``, a health statement of a sensitive turn
with its health words as ``[HEALTH]``, a turn that restates an erased memory not at all
(``redact=False``: the stored text; ``None``, the default, follows the store's
``StoreConfig.redact``).

Clearing is scoped to the session: ``clear_mode="forget"`` (the default) moves the
session's turns to the archive (still explainable, out of the history); ``"erase"``
runs the right-to-be-forgotten cascade for the session (the turns and every memory
derived from them are removed; the facts it taught are gone too).

Examples:
    >>> import warnings; warnings.simplefilter("ignore")
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> history = MarsChatMessageHistory(store, "s1")
    >>> history.add_messages([HumanMessage("I live in Porto"), AIMessage("Noted!")])
    >>> [(m.type, m.text) for m in history.messages]
    [('human', 'I live in Porto'), ('ai', 'Noted!')]
    >>> history.clear(); history.messages
    []
    >>> store.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from mars_core.engine.args import collection, label
from mars_core.engine.guard import Shown
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.speakers import TIMESTAMP_KEY, Speakers, turn_meta
from mars_core.model import MemoryNode, MemoryType
from mars_core.namespaces import NamespaceArg, canonical_namespace
from mars_core.store import MemoryStore

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", "langchain-core") from exc

__all__ = ["MarsChatMessageHistory", "clear_session", "message_role", "message_turn",
           "shown_messages", "turn_message"]

_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_MESSAGE_OF_ROLE: dict[str, type[BaseMessage]] = {
    "user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


def message_role(message: BaseMessage) -> str:
    """The store role of a LangChain message (``human`` → ``user``, ...).

    Examples:
        >>> message_role(HumanMessage("hi")), message_role(ChatMessage("x", role="critic"))
        ('user', 'critic')
    """
    if isinstance(message, ChatMessage):
        return message.role
    return _ROLE_OF_TYPE.get(message.type, message.type)


def message_turn(message: BaseMessage, speakers: Speakers | None = None) -> dict[str, Any]:
    """``observe``'s ``role``, ``text``, ``speaker`` and ``at`` for a message: its own
    ``name`` or the configured name of its role, its ``additional_kwargs["timestamp"]``
    (:mod:`mars_core.knowledge.speakers`).

    Examples:
        >>> message_turn(HumanMessage("I like jazz", name="Caroline"))["speaker"]
        'Caroline'
    """
    role = message_role(message)
    return {"role": role, "text": str(message.text),
            **turn_meta(role, message.name, message.additional_kwargs.get(TIMESTAMP_KEY),
                        speakers or Speakers())}


def turn_message(node: MemoryNode) -> BaseMessage:
    """A stored turn as a LangChain message (``id`` = the memory id)."""
    role = node.provenance.source
    cls = _MESSAGE_OF_ROLE.get(role)
    if cls is None:
        return ChatMessage(content=node.content, role=role, id=node.id)
    return cls(content=node.content, id=node.id)


def shown_messages(shown: Sequence[Shown]) -> list[BaseMessage]:
    """Stored turns as messages, as the store's output check lets them out (a withheld
    turn is left out)."""
    return [turn_message(s.node) for s in shown if s.node is not None]


def _session_turns(nodes: Sequence[MemoryNode], session_id: str) -> list[MemoryNode]:
    """The turns of one session among ``nodes`` (in the given order)."""
    return [n for n in nodes if n.provenance.conversation_id == session_id]


def clear_session(store: MemoryStore, session_id: str, namespace: NamespaceArg | None = None,
                  mode: Literal["forget", "erase"] = "forget") -> None:
    """Clear a session's turns, or erase the session and what derives from it.

    ``"forget"``: :meth:`~mars_core.store.MemoryStore.clear_conversation` — the turns are
    archived as ``cleared`` and never shown to a model again; the facts learnt from them
    stay, without their raw turns. ``"erase"``: the right to be forgotten.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     _ = store.observe("user", "hello", conversation_id="s1")
        ...     clear_session(store, "s1")
        ...     [(n.status.value, n.archive_reason.value) for n in store.list(status=None)]
        [('archived', 'cleared')]
    """
    if mode == "erase":
        store.erase(conversation=session_id, namespace=namespace)
        return
    store.clear_conversation(session_id, namespace=namespace,
                             reason=f"chat session {session_id!r} cleared")


class MarsChatMessageHistory(BaseChatMessageHistory):
    """The budgeted working history of one chat session (see the module docstring).

    Args:
        store: the memory store.
        session_id: the session (stored as each turn's ``conversation_id``; it is not a
            namespace, so ``"memories/bob"`` is just a session name).
        namespace: the user/tenant namespace (default: the store's default): a namespace
            string or a tuple of parts (:mod:`mars_core.namespaces`).
        budget_tokens: the most tokens ``messages`` returns.
        max_messages: the most messages ``messages`` returns (None: no limit).
        clear_mode: ``"forget"`` (archive the session's turns) or ``"erase"``.
        redact: the store's output check over the turns ``messages`` returns (None: the
            store's setting; False: the stored text).
        user_name: who the ``human`` messages are, when a message has no ``name`` of its
            own (the store resolves "I" to the speaker; :mod:`mars_core.knowledge.speakers`).
        assistant_name: likewise for the ``ai`` messages.

    Raises:
        ValidationError: an empty session id, an invalid namespace, a bad budget or
            clear mode.

    Examples:
        >>> import warnings; warnings.simplefilter("ignore")
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     h = MarsChatMessageHistory(store, "s1", budget_tokens=5)
        ...     h.add_user_message("one two three four")
        ...     h.add_ai_message("five six seven")
        ...     [m.text for m in h.messages]  # only the newest turn fits 5 tokens
        ['five six seven']
    """

    def __init__(self, store: MemoryStore, session_id: str, *,
                 namespace: NamespaceArg | None = None,
                 budget_tokens: int = 2000, max_messages: int | None = None,
                 clear_mode: Literal["forget", "erase"] = "forget",
                 redact: bool | None = None, user_name: str | None = None,
                 assistant_name: str | None = None) -> None:
        super().__init__()
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValidationError("session_id must be a non-empty string")
        label(session_id, "session_id")  # it is every turn's conversation_id
        for name, value in (("budget_tokens", budget_tokens), ("max_messages", max_messages)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value <= 0):
                raise ValidationError(f"{name} must be a positive integer")
        if clear_mode not in ("forget", "erase"):
            raise ValidationError("clear_mode must be 'forget' or 'erase'")
        if redact is not None and not isinstance(redact, bool):
            raise ValidationError("redact must be True, False or None")
        self.store = store
        self.session_id = session_id
        self.namespace = None if namespace is None else canonical_namespace(namespace)
        self.budget_tokens = budget_tokens
        self.max_messages = max_messages
        self.clear_mode = clear_mode
        self.redact = redact
        self.speakers = Speakers(user_name, assistant_name)

    # --- pure parts, shared by the sync and async paths -----------------------------------

    def _turns(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        """This session's turns among ``nodes`` (oldest first, as the store lists them)."""
        return _session_turns(nodes, self.session_id)

    def _window(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        """The newest active turns of this session that fit the budget, oldest first."""
        kept: list[MemoryNode] = []
        used = 0
        for node in reversed(self._turns(nodes)):
            if used + node.weight > self.budget_tokens or len(kept) == self.max_messages:
                break
            kept.append(node)
            used += node.weight
        return kept[::-1]

    def _observations(self, messages: Sequence[BaseMessage],
                      first_turn: int) -> list[dict[str, Any]]:
        """``observe_many``'s turns: one per message with text, with its speaker and time
        (:func:`message_turn`)."""
        out: list[dict[str, Any]] = []
        for message in collection(messages, "messages"):
            if not isinstance(message, BaseMessage):
                raise ValidationError(f"expected LangChain messages, got "
                                      f"{type(message).__name__}")
            if message.text.strip():
                turn = first_turn + len(out)
                out.append({**message_turn(message, self.speakers), "turn": turn})
        return out

    # --- BaseChatMessageHistory --------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The budgeted working history of this session (see the module docstring)."""
        kept = self._window(self.store.list(self.namespace, type=MemoryType.EPISODIC))
        return shown_messages(self.store.check_output(kept, namespace=self.namespace,
                                                      redact=self.redact))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        kept = self._window(await self.store.alist(self.namespace, type=MemoryType.EPISODIC))
        return shown_messages(await self.store.acheck_output(kept, namespace=self.namespace,
                                                             redact=self.redact))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Observe each message into the store (see the module docstring), in one call.

        Raises:
            ValidationError: something that is not a LangChain message, or a message the
                store refuses (nothing of the call is stored).
        """
        stored = self.store.list(self.namespace, type=MemoryType.EPISODIC, status=None)
        turns = self._observations(messages, len(self._turns(stored)))
        if turns:
            self.store.observe_many(turns, namespace=self.namespace,
                                    conversation_id=self.session_id)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages` (uses the store's ``aobserve_many``)."""
        stored = await self.store.alist(self.namespace, type=MemoryType.EPISODIC, status=None)
        turns = self._observations(messages, len(self._turns(stored)))
        if turns:
            await self.store.aobserve_many(turns, namespace=self.namespace,
                                           conversation_id=self.session_id)

    def clear(self) -> None:
        """Forget (or erase, by ``clear_mode``) this session's turns; other sessions keep
        theirs."""
        clear_session(self.store, self.session_id, self.namespace, self.clear_mode)

    async def aclear(self) -> None:
        """Async :meth:`clear` (in a worker thread, like the store's own twins)."""
        await asyncio.to_thread(self.clear)
