"""``MarsMemory``: MaRS as the chat memory of LlamaIndex agents and chat engines.

It is a thin adapter over :class:`~mars_core.store.MemoryStore`; the store decides what
is remembered, what is forgotten and what is recalled. The adapter keeps the exact
messages of the current conversation (the *working history*, with tool calls intact,
as LlamaIndex's own buffers do) and:

* ``put`` observes each user and assistant message into the store
  (``store.observe(role, text, namespace=(session_id,), conversation_id=...)``): an episode
  per turn plus the facts, preferences and relations MaRS extracts — no LLM call;
* ``get(input)`` returns one system message with what MaRS recalls for the query
  (``store.render_context``: ranked, budgeted — the turns already in the window are not
  repeated), followed by the newest messages of the working history, all within
  ``token_limit`` tokens of the store's counter. The query is ``input`` or, when an
  agent calls ``aget()`` with none, the latest user message. What ``get`` returns passes
  the store's output check: the recalled memories, and the window's earlier stored
  turns (``store.check_output``: a phone number said three turns ago comes back as
  ``[PHONE]``); the latest user message and what follows it are the exchange in
  progress and are kept as given;
* ``reset`` *forgets* the session: its working history is cleared and every active
  memory of its namespace moves to the store's archive (deliberate forgetting —
  restorable, explainable, audited). ``erase`` is the right to be forgotten: the
  namespace's memories are removed for good, with a receipt. Neither touches another
  session.

Sessions map onto namespaces one to one: the session id is an opaque identifier and
becomes **one** namespace part (:func:`mars_core.namespaces.id_namespace`), so
``"alice"`` is the namespace ``"alice"`` and ``"memories/bob"`` the namespace
``"memories%2Fbob"`` — never the LangGraph namespace ``("memories", "bob")``. Two sessions
on one store never see each other's memories. A new ``MarsMemory`` for a
known session starts a new conversation with an empty working history, and recalls
what earlier conversations of the session left in the store — in this process or an
earlier one, when the store is on disk.

Memory reaches a LlamaIndex agent through ``await agent.run(user_msg=..., memory=m)``
(``FunctionAgent(memory=m)`` is silently ignored by LlamaIndex).

Examples:
    >>> from llama_index.core.llms import ChatMessage
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=2000)
    >>> old = MarsMemory(store, session_id="alice")
    >>> old.put(ChatMessage(role="user", content="My favourite tea is sencha."))
    >>> new = MarsMemory(store, session_id="alice")  # a later conversation
    >>> messages = new.get(input="Which tea do I like?")
    >>> [m.role.value for m in messages], "sencha" in (messages[0].content or "")
    (['system'], True)
    >>> MarsMemory(store, session_id="bob").get(input="Which tea do I like?")
    []
    >>> store.close()
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr

from llamaindex_mars import _text
from mars_core._async import sync_in_loop_allowed
from mars_core.engine.args import collection, phrase, retrieval_template
from mars_core.errors import ExtraNotInstalledError, NotFoundError, ValidationError
from mars_core.knowledge.speakers import Speakers
from mars_core.model import RECALLABLE, MemoryNode, MemoryType
from mars_core.namespaces import id_namespace
from mars_core.privacy.receipts import ErasureReceipt
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.store import MemoryStore

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
    from llama_index.core.memory.types import BaseMemory
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc

__all__ = ["MarsMemory"]

_RESET_REASON = "reset of the LlamaIndex session"
_DATE = "0000-00-00 00:00 UTC"  # the width of a rendered date, for budget estimates


@dataclass(frozen=True, slots=True)
class _Entry:
    """A message of the working history and the episode MaRS stored for it (if any)."""

    message: ChatMessage
    episode: str | None


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one ``get`` reads: the window of the working history and the recall call."""

    window: list[_Entry]
    recall_budget: int
    render: dict[str, Any] | None


class MarsMemory(BaseMemory):
    """MaRS as a LlamaIndex ``BaseMemory`` (agents, chat engines); see the module docs.

    Args:
        store: the memory store (shared by any number of sessions).
        session_id: the session; its store namespace is the id as one namespace part
            (``"memories/bob"`` → ``"memories%2Fbob"``; default: the store's default
            namespace). ``MarsMemory.namespace`` is that namespace.
        conversation_id: this conversation (default: ``"<session_id>/<n>"``, n one more
            than the conversations the session already has in the store).
        token_limit: the most tokens ``get`` returns (store's token counter).
        recall_tokens: tokens reserved for recalled memories (default: 512, at most half
            of ``token_limit``); the working history gets the rest, and recall also
            takes what the history leaves unused.
        evidence: the most memories recalled per ``get``.
        observe_roles: message roles observed into the store (system prompts and tool
            outputs are kept in the working history only).
        redact: the store's output check over what ``get`` returns — the recalled
            memories and the earlier stored turns of the window (None, the default: the
            store's ``StoreConfig.redact``; False: the stored text).
        insert: where recalled memories go: ``"system"`` (default) — a system message
            before the history; ``"user"`` — prepended to (a copy of) the latest user
            message. A ``ReActAgent`` without a ``system_prompt`` discards a leading
            system message (LlamaIndex behaviour): give it a system prompt or use
            ``insert="user"``.
        template: a retrieval template of the store (``StoreConfig.retrieval_templates``:
            what this agent's department may recall, seed 000 §4.3), or None.
        user_name: who the user messages are when a message has no
            ``additional_kwargs["name"]`` (the store resolves "I" to the speaker;
            :mod:`mars_core.knowledge.speakers`); a message's ``additional_kwargs["timestamp"]``
            dates its turn.
        assistant_name: likewise for the assistant messages.
        rerank: your own reranker of the recalled memories (:mod:`mars_core.reading.rerank`, e.g.
            ``cross_encoder(CrossEncoder(...))``); None: the store's ranking.

    Raises:
        ValidationError: an argument out of range or of the wrong type, or an unknown
            template.

    Examples:
        >>> from mars_core import MemoryStore
        >>> m = MarsMemory.from_defaults(store=MemoryStore(), session_id="s1", token_limit=50)
        >>> m.put(ChatMessage(role="user", content="hi"))
        >>> [x.content for x in m.get_all()], m.conversation_id
        (['hi'], 's1/1')
        >>> MarsMemory(MemoryStore(), session_id="memories/bob").namespace  # one part
        'memories%2Fbob'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore = Field(exclude=True, description="The MaRS memory store.")
    session_id: str = Field(description="The session (an opaque id).")
    namespace: str = Field(description="The store namespace it reads and writes: the session "
                           "id as one namespace part.")
    conversation_id: str = Field(description="This conversation within the session.")
    token_limit: int = Field(description="Most tokens `get` returns (store's counter).")
    recall_tokens: int = Field(description="Tokens reserved for recalled memories.")
    evidence: int = Field(description="Most memories recalled per `get`.")
    observe_roles: tuple[str, ...] = Field(description="Roles observed into the store.")
    redact: bool | None = Field(description="The store's output check (None: its setting).")
    insert: Literal["system", "user"] = Field(description="Where recalled memories go.")
    template: str | None = Field(default=None, description="A retrieval template of the "
                                 "store that scopes what is recalled (None: none).")
    speakers: Speakers = Field(default_factory=Speakers, exclude=True,
                               description="Who the user and assistant turns are.")
    rerank: Any = Field(default=None, exclude=True,
                        description="Your own reranker of the recalled memories (None: none).")

    _entries: list[_Entry] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(
        self,
        store: MemoryStore,
        session_id: str | None = None,
        *,
        conversation_id: str | None = None,
        token_limit: int = 3000,
        recall_tokens: int | None = None,
        evidence: int = 5,
        observe_roles: Sequence[str] = ("user", "assistant"),
        redact: bool | None = None,
        insert: Literal["system", "user"] = "system",
        template: str | None = None,
        user_name: str | None = None,
        assistant_name: str | None = None,
        rerank: Reranker | None = None,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        if session_id is None:
            session, namespace = store.config.default_namespace, store.config.default_namespace
        else:
            session, namespace = session_id, id_namespace(session_id, what="session_id")
        _check_int("token_limit", token_limit, 1)
        if recall_tokens is None:
            recall_tokens = min(512, token_limit // 2)
        _check_int("recall_tokens", recall_tokens, 0)
        _check_int("evidence", evidence, 1)
        if recall_tokens > token_limit:
            raise ValidationError("recall_tokens cannot exceed token_limit")
        if isinstance(observe_roles, str) or not all(isinstance(r, str) for r in observe_roles):
            raise ValidationError("observe_roles must be a sequence of role names")
        if insert not in ("system", "user"):
            raise ValidationError("insert must be 'system' or 'user'")
        if redact is not None and not isinstance(redact, bool):
            raise ValidationError("redact must be True, False or None")
        if template is not None:
            retrieval_template(template, store.config)
        speakers = Speakers(user_name, assistant_name)
        if not conversation_id:
            with sync_in_loop_allowed():  # a constructor cannot await; one brief read
                conversation_id = _next_conversation(store, namespace, session)
        conversation = conversation_id
        _check_name("conversation_id", conversation)
        super().__init__(store=store, session_id=session, namespace=namespace,
                         conversation_id=conversation,
                         token_limit=token_limit, recall_tokens=recall_tokens,
                         evidence=evidence, observe_roles=tuple(observe_roles),
                         redact=redact, insert=insert, template=template,
                         speakers=speakers, rerank=check_reranker(rerank))

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex serialisation name."""
        return "MarsMemory"

    @classmethod
    def from_defaults(
        cls,
        store: MemoryStore | None = None,
        session_id: str | None = None,
        chat_history: Sequence[ChatMessage] | None = None,
        **kwargs: Any,
    ) -> MarsMemory:
        """A memory over ``store`` (default: a new in-memory store, see
        :func:`llamaindex_mars.open_store` for one with your models or on disk), with
        ``chat_history`` as its starting working history (observed into the store).
        """
        mem = cls(store if store is not None else MemoryStore(), session_id, **kwargs)
        if chat_history:
            mem.set(list(chat_history))
        return mem

    # --- reading ------------------------------------------------------------------------

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Recalled memories (one system message) and the newest working history.

        Args:
            input: the query (default: the latest user message of the working history).
            **kwargs: ``initial_token_count`` (tokens the caller adds; taken off the
                limit, as LlamaIndex chat engines pass it).
        """
        plan = self._plan(input, kwargs.get("initial_token_count", 0))
        rendered = self.store.render_context(**plan.render) if plan.render else ""
        return self._assemble(plan, rendered)

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Async :meth:`get` (the store call runs through ``store.arender_context``)."""
        plan = self._plan(input, kwargs.get("initial_token_count", 0))
        rendered = await self.store.arender_context(**plan.render) if plan.render else ""
        return await asyncio.to_thread(self._assemble, plan, rendered)

    def get_all(self) -> list[ChatMessage]:
        """The whole working history of this conversation (untrimmed, no recall)."""
        with self._lock:
            return [e.message for e in self._entries]

    async def aget_all(self) -> list[ChatMessage]:
        """Async :meth:`get_all` (no I/O)."""
        return self.get_all()

    # --- writing ------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Append a message to the working history and observe it into the store."""
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put` (through ``store.aobserve_many``)."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append messages in order and observe them into the store in one call: a
        message the store refuses stores none of them."""
        _, turns = self._stage(messages, None)
        self._commit(None, messages, turns, self.store.observe_many(
            [t for t in turns if t is not None]) if any(turns) else [])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages` (through ``store.aobserve_many``)."""
        _, turns = self._stage(messages, None)
        self._commit(None, messages, turns, await self.store.aobserve_many(
            [t for t in turns if t is not None]) if any(turns) else [])

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the working history; messages past the common prefix with the current
        history are observed, in one call (so passing the history back with one new turn
        stores only that turn; a message the store refuses changes nothing)."""
        keep, turns = self._stage(messages, "set")
        self._commit(messages[:keep], messages[keep:], turns, self.store.observe_many(
            [t for t in turns if t is not None]) if any(turns) else [])

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`set`."""
        keep, turns = self._stage(messages, "set")
        self._commit(messages[:keep], messages[keep:], turns, await self.store.aobserve_many(
            [t for t in turns if t is not None]) if any(turns) else [])

    # --- forgetting ---------------------------------------------------------------------

    def reset(self) -> None:
        """Forget this session: clear the working history; its conversations' turns are
        *cleared* (``store.clear_conversation``: never shown to a model again, not even
        from the archive) and every other memory of its namespace is forgotten (archived,
        out of the second tier; restorable with ``store.restore``). Other sessions are
        untouched; use :meth:`erase` to remove the data for good."""
        self._clear()
        nodes = self.store.list(self.namespace, status=None)
        for conversation in dict.fromkeys(n.provenance.conversation_id for n in nodes
                                          if n.type is MemoryType.EPISODIC):
            if conversation is not None:
                self.store.clear_conversation(conversation, namespace=self.namespace,
                                              reason=_RESET_REASON)
        for node in nodes:
            cleared = node.type is MemoryType.EPISODIC and node.provenance.conversation_id
            if not cleared and (node.is_active or node.archive_reason in RECALLABLE):
                self.store.forget(node.id, reason=_RESET_REASON, namespace=node.namespace)

    async def areset(self) -> None:
        """Async :meth:`reset` (in a worker thread, like the store's own twins)."""
        await asyncio.to_thread(self.reset)

    def erase(self) -> ErasureReceipt:
        """Right to be forgotten for this session: clear the working history and erase
        the namespace's memories, archive and preferences (``store.erase``)."""
        self._clear()
        return self.store.erase(namespace=self.namespace)

    async def aerase(self) -> ErasureReceipt:
        """Async :meth:`erase`."""
        self._clear()
        return await self.store.aerase(namespace=self.namespace)

    # --- the shared (sync/async) steps ----------------------------------------------------

    def _count(self, text: str) -> int:
        return self.store.token_counter.count(text) if text else 0

    def _plan(self, query: str | None, initial_tokens: object) -> _Plan:
        if query is not None and not isinstance(query, str):
            raise ValidationError("input must be a string or None")
        if query is not None and query.strip():
            phrase(query, "input")  # what the store's recall takes
        if not isinstance(initial_tokens, int) or isinstance(initial_tokens, bool) \
                or initial_tokens < 0:
            raise ValidationError("initial_token_count must be a non-negative int")
        limit = max(0, self.token_limit - initial_tokens)
        with self._lock:
            entries = list(self._entries)
        window = _window(entries, max(0, limit - self.recall_tokens), self._count)
        used = sum(_text.message_tokens(e.message, self._count) for e in window)
        text = query if query is not None else _text.last_user_text([e.message for e in entries])
        recall_budget = limit - used
        if not text.strip() or recall_budget < self._count(_text.MIN_RECALL):
            return _Plan(window, recall_budget, None)
        episodes = [e for e in window if e.episode is not None]
        render = {"query": text, "namespace": self.namespace,
                  "conversation": self.conversation_id, "active_turns": len(episodes),
                  "evidence": self.evidence, "redact": self.redact,
                  "template": self.template, "rerank": self.rerank,
                  "budget_tokens": recall_budget + self._active_estimate(episodes)}
        return _Plan(window, recall_budget, render)

    def _active_estimate(self, episodes: Sequence[_Entry]) -> int:
        """An upper estimate of the tokens the store spends rendering the window's turns
        (which the adapter drops: they are in the working history already)."""
        lines = [f"- [episodic | {_DATE} | {e.message.role.value}] "
                 f"{_text.message_text(e.message)}" for e in episodes]
        return self._count("\n".join([_text.HEADER_ACTIVE, *lines])) + 2 * len(lines) + 8

    def _shown(self, window: Sequence[_Entry]) -> list[ChatMessage]:
        """The window's messages, its earlier stored turns as the store's output check
        lets them out: every turn before the latest user message that the store holds
        (a turn erased since is left out); that message and what follows it — the
        exchange in progress, the app's own input and tool calls — are kept as given."""
        users = [i for i, e in enumerate(window) if e.message.role is MessageRole.USER]
        end = users[-1] if users else len(window)
        stored = {i: e.episode for i, e in enumerate(window[:end]) if e.episode is not None
                  and all(isinstance(b, TextBlock) for b in e.message.blocks)}
        nodes: dict[int, MemoryNode] = {}
        for i, episode in stored.items():
            try:
                nodes[i] = self.store.get(episode, namespace=self.namespace)
            except NotFoundError:
                continue
        shown = dict(zip(nodes, self.store.check_output(
            list(nodes.values()), namespace=self.namespace, redact=self.redact), strict=True))
        out = []
        for i, entry in enumerate(window):
            if i not in stored:
                out.append(entry.message)
            elif i in shown and shown[i].node is not None:
                text = shown[i].node.content  # type: ignore[union-attr]
                out.append(entry.message if text == _text.message_text(entry.message) else
                           entry.message.model_copy(update={"blocks": [TextBlock(text=text)]}))
        return out

    def _assemble(self, plan: _Plan, rendered: str) -> list[ChatMessage]:
        window = self._shown(plan.window)
        recalled = _text.fit_recalled(_text.recalled_part(rendered), plan.recall_budget,
                                      self._count)
        if not recalled:
            return window
        users = [i for i, m in enumerate(window) if m.role is MessageRole.USER]
        if self.insert == "system" or not users:
            return [ChatMessage(role=MessageRole.SYSTEM, content=recalled), *window]
        out, last = list(window), users[-1]
        blocks = [TextBlock(text=recalled + "\n\n"), *out[last].blocks]
        out[last] = out[last].model_copy(update={"blocks": blocks})
        return out

    def _stage(self, messages: Sequence[ChatMessage], replace: str | None
               ) -> tuple[int, list[dict[str, Any] | None]]:
        """What a put (``replace`` None: after the whole history) or a ``set`` (after the
        prefix it shares with the history) observes: ``(kept entries, turn per new
        message)``, a turn None for a message that is only kept in the history.
        Nothing changes here."""
        wrong = [type(m).__name__ for m in collection(messages, "messages")
                 if not isinstance(m, ChatMessage)]
        if wrong:
            raise ValidationError(f"expected a list of ChatMessage, got a {wrong[0]}")
        with self._lock:
            keep = len(self._entries)
            if replace is not None:
                keep = 0
                for old, given in zip(self._entries, messages, strict=False):
                    if (old.message.role, _text.message_text(old.message)) != \
                            (given.role, _text.message_text(given)):
                        break
                    keep += 1
        added = messages[keep:] if replace is not None else messages
        turns: list[dict[str, Any] | None] = []
        for i, message in enumerate(added):
            text = _text.message_text(message)
            turns.append({**_text.message_turn(message, text, self.speakers),
                          "namespace": self.namespace,
                          "conversation_id": self.conversation_id, "turn": keep + i}
                         if message.role.value in self.observe_roles and text else None)
        return keep, turns

    def _commit(self, prefix: Sequence[ChatMessage] | None, messages: Sequence[ChatMessage],
                turns: Sequence[dict[str, Any] | None],
                stored: Sequence[Sequence[MemoryNode]]) -> None:
        """The working history once the store took ``turns``: ``messages`` appended, each
        with the episode stored for it — after the history (a put, ``prefix`` None) or
        after ``prefix``, the messages a ``set`` shares with it (their episodes kept)."""
        episodes = iter(stored)
        new = []
        for message, turn in zip(messages, turns, strict=True):
            nodes = next(episodes) if turn is not None else []
            new.append(_Entry(message, nodes[0].id if nodes else None))
        with self._lock:
            if prefix is not None:
                self._entries = [_Entry(m, e.episode)
                                 for m, e in zip(prefix, self._entries, strict=False)]
            self._entries.extend(new)

    def _clear(self) -> None:
        with self._lock:
            self._entries = []




def _window(entries: Sequence[_Entry], limit: int, count: Callable[[str], int]
            ) -> list[_Entry]:
    """The newest messages that fit ``limit``, starting at a user turn (as LlamaIndex's
    ``ChatMemoryBuffer``: a window never opens with an assistant or tool message)."""
    start, used = len(entries), 0
    while start > 0:
        cost = _text.message_tokens(entries[start - 1].message, count)
        if used + cost > limit:
            break
        start, used = start - 1, used + cost
    while start < len(entries) and entries[start].message.role in \
            (MessageRole.ASSISTANT, MessageRole.TOOL):
        start += 1
    return list(entries[start:])


def _next_conversation(store: MemoryStore, namespace: str, session: str) -> str:
    """``<session>/<n>``: one more than the conversations the session has stored."""
    seen = {n.provenance.conversation_id for n in store.list(namespace, status=None)
            if n.provenance.conversation_id}
    return f"{session}/{len(seen) + 1}"


def _check_name(what: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string")


def _check_int(what: str, value: object, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValidationError(f"{what} must be an int >= {low}")

