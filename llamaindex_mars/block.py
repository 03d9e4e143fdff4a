"""``MarsMemoryBlock``: MaRS as a long-term block of LlamaIndex's ``Memory``.

``Memory`` keeps a FIFO of recent messages; when it passes its token limit it flushes
the oldest messages into its blocks (``_aput``), and on every read it asks each block
for content (``_aget``) and truncates the blocks by priority when the total is over
its limit. This block:

* ``_aput``: observes the flushed user and assistant messages into the store
  (``store.aobserve``), in the namespace of the ``Memory``'s ``session_id`` (or of a
  fixed ``namespace``), one conversation per session. The session id is an opaque id,
  so it is **one** namespace part (:func:`mars_core.namespaces.id_namespace`):
  ``"memories/bob"`` is the namespace ``"memories%2Fbob"``, not ``("memories", "bob")``;
* ``_aget``: renders what MaRS recalls for the latest user message
  (``store.arender_context``: redacted, ranked, within ``budget_tokens``);
* ``atruncate``: drops the items MaRS ranked lowest first (supporting turns, then the
  weakest evidence), never cutting an item in half.

``priority`` follows LlamaIndex: 0 is never truncated, 1 is truncated last among the
others, higher numbers first. The default is 1.

Examples:
    >>> import asyncio
    >>> from llama_index.core.llms import ChatMessage
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=2000)
    >>> block = MarsMemoryBlock(store)
    >>> said = [ChatMessage(role="user", content="I prefer aisle seats on trains.")]
    >>> asyncio.run(block.aput(said, session_id="alice"))
    >>> ask = [ChatMessage(role="user", content="Which seats do I prefer?")]
    >>> "aisle seats" in asyncio.run(block.aget(ask, session_id="alice"))
    True
    >>> asyncio.run(block.aget(ask, session_id="bob"))
    ''
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from llamaindex_mars import _text
from mars_core.engine.args import collection
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.speakers import Speakers
from mars_core.namespaces import NamespaceArg, canonical_namespace, id_namespace
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.store import MemoryStore

try:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory.memory import BaseMemoryBlock
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc

__all__ = ["MarsMemoryBlock"]



class MarsMemoryBlock(BaseMemoryBlock[str]):
    """MaRS as a ``BaseMemoryBlock`` for ``Memory.from_defaults(memory_blocks=[...])``.

    Args:
        store: the memory store.
        name: the block name (the XML tag ``Memory`` wraps its content in).
        namespace: a fixed namespace (a namespace string or a tuple of parts, kept as the
            string); ``None`` (default): the ``Memory``'s ``session_id`` as one part.
        budget_tokens: the most tokens the block returns (store's token counter).
        evidence: the most memories recalled per read.
        priority: LlamaIndex truncation priority (0: never truncated).
        observe_roles: roles of flushed messages observed into the store.
        redact: the store's output check over the recalled text (None, the default: the
            store's ``StoreConfig.redact``; False: the stored text).
        description: LlamaIndex block description.
        accept_short_term_memory: take the messages the FIFO flushes (default True).
        user_name: who the user messages are when a message has no
            ``additional_kwargs["name"]`` (the store resolves "I" to the speaker).
        assistant_name: likewise for the assistant messages.
        rerank: your own reranker of the recalled memories (:mod:`mars_core.reading.rerank`).

    Raises:
        ValidationError: an argument out of range or of the wrong type.

    Examples:
        >>> from llama_index.core.memory import Memory
        >>> from mars_core import MemoryStore
        >>> memory = Memory.from_defaults(session_id="s1", token_limit=200,
        ...                               memory_blocks=[MarsMemoryBlock(MemoryStore())])
        >>> [b.name for b in memory.memory_blocks]
        ['mars_memory']
    """

    store: MemoryStore = Field(exclude=True, description="The MaRS memory store.")
    namespace: str | None = Field(description="Fixed namespace, or None: the session id.")
    budget_tokens: int = Field(description="Most tokens the block returns.")
    evidence: int = Field(description="Most memories recalled per read.")
    observe_roles: tuple[str, ...] = Field(description="Roles observed into the store.")
    redact: bool | None = Field(description="The store's output check (None: its setting).")
    speakers: Speakers = Field(default_factory=Speakers, exclude=True,
                               description="Who the user and assistant turns are.")
    rerank: Any = Field(default=None, exclude=True,
                        description="Your own reranker of the recalled memories (None: none).")

    def __init__(
        self,
        store: MemoryStore,
        *,
        name: str = "mars_memory",
        namespace: NamespaceArg | None = None,
        budget_tokens: int = 512,
        evidence: int = 5,
        priority: int = 1,
        observe_roles: Sequence[str] = ("user", "assistant"),
        redact: bool | None = None,
        description: str | None = "Long-term memories recalled by MaRS.",
        accept_short_term_memory: bool = True,
        user_name: str | None = None,
        assistant_name: str | None = None,
        rerank: Reranker | None = None,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name must be a non-empty string")
        if namespace is not None:
            namespace = canonical_namespace(namespace)
        for what, value, low in (("evidence", evidence, 1), ("priority", priority, 0),
                                 ("budget_tokens", budget_tokens, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValidationError(f"{what} must be an int >= {low}")
        if budget_tokens < store.token_counter.count(_text.MIN_RECALL):
            raise ValidationError(f"budget_tokens={budget_tokens} cannot hold one recalled "
                                  "memory with its headers; raise it")
        if isinstance(observe_roles, str) or not all(isinstance(r, str) for r in observe_roles):
            raise ValidationError("observe_roles must be a sequence of role names")
        if redact is not None and not isinstance(redact, bool):
            raise ValidationError("redact must be True, False or None")
        super().__init__(store=store, name=name, namespace=namespace,
                         budget_tokens=budget_tokens, evidence=evidence, priority=priority,
                         observe_roles=tuple(observe_roles), redact=redact,
                         description=description,
                         accept_short_term_memory=accept_short_term_memory,
                         speakers=Speakers(user_name, assistant_name),
                         rerank=check_reranker(rerank))

    def _namespace(self, session_id: object) -> str:
        if self.namespace is not None:
            return self.namespace
        if isinstance(session_id, str) and session_id:
            return id_namespace(session_id, what="session_id")
        return self.store.config.default_namespace

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    session_id: str | None = None, **block_kwargs: Any) -> str:
        """What MaRS recalls for the latest user message, within ``budget_tokens``."""
        query = _text.last_user_text(messages or [])
        if not query:
            return ""
        count = self.store.token_counter.count
        rendered = await self.store.arender_context(
            query, namespace=self._namespace(session_id), active_turns=0,
            evidence=self.evidence, redact=self.redact, rerank=self.rerank,
            budget_tokens=self.budget_tokens + count(_text.HEADER_ACTIVE) + 2)
        return _text.fit_recalled(_text.recalled_part(rendered), self.budget_tokens, count)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Observe flushed messages into the store (their session's namespace), in one
        call: a message the store refuses stores none of them."""
        if not all(isinstance(m, ChatMessage) for m in collection(messages, "messages")):
            raise ValidationError("a memory block takes a list of ChatMessage")
        turns = []
        for message in messages:
            text = _text.message_text(message)
            if message.role.value not in self.observe_roles or not text:
                continue
            session = message.additional_kwargs.get("session_id")
            turns.append({**_text.message_turn(message, text, self.speakers),
                          "namespace": self._namespace(session),
                          "conversation_id": session if isinstance(session, str) and session
                          else None})
        if turns:
            await self.store.aobserve_many(turns)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the lowest-ranked recalled items until ``tokens_to_truncate`` are saved.

        ``tokens_to_truncate`` is in LlamaIndex's tokens (``Memory`` counts with
        ``llama_index.core.utils.get_tokenizer()`` by default), so that is what is counted
        here, not the store's counter. (``Memory`` does not count the tags its template
        wraps around the blocks, so its rendered message can exceed ``token_limit`` by
        them — 14 tokens with the default template — whatever the blocks do.)
        """
        from llama_index.core.utils import get_tokenizer

        tokenize = get_tokenizer()

        def count(text: str) -> int:
            return len(tokenize(text))

        kept = _text.fit_recalled(content, count(content) - tokens_to_truncate, count)
        return kept or None
