"""``MarsMemory``: MaRS as the ``memory=`` of legacy LangChain chains.

For chains built on ``langchain_classic.base_memory.BaseMemory`` (``ConversationChain``,
``LLMChain(memory=...)``). Needs the ``langchain-classic`` extra; importing this module
without it raises :class:`~mars_core.errors.ExtraNotInstalledError` naming the extra.

* ``load_memory_variables(inputs)`` returns ``{memory_key: text}`` where ``text`` is
  ``store.render_context(input, conversation=session_id, ...)``: the recalled memories of
  the namespace (any session), their raw support, then this session's last
  ``active_turns`` active turns — within ``budget_tokens``, redacted. With nothing
  recalled and no earlier turn it is ``""``.
* With ``return_messages=True`` (for a ``MessagesPlaceholder``, as LangChain's classic
  memories) it returns ``{memory_key: messages}`` instead: the recalled memories (the
  same sections, redacted) as one ``SystemMessage`` when there are any, then this
  session's last ``active_turns`` active turns as ``HumanMessage``/``AIMessage``, oldest
  first; the turns take the budget first, the memories get what is left. Like the
  recalled memories, each turn passes the store's output check
  (:meth:`~mars_core.store.MemoryStore.check_output`): a phone number or a card in an
  earlier turn comes back masked (``[PHONE]``, ``[CARD]``).
* ``save_context(inputs, outputs)`` observes the input as a ``user`` turn and the output
  as an ``assistant`` turn of the session (spoken by ``user_name``/``assistant_name``
  when set: the store resolves "I" to the speaker), dated by the input
  ``timestamp_key`` when set (a ``datetime`` or an ISO 8601 string; else the store's
  clock), as the other adapters date a message by its ``timestamp``.
* ``rerank``: your own reranker of the recalled memories (:mod:`mars_core.reading.rerank`),
  passed to ``render_context`` as the other adapters do.
* ``clear()`` is scoped to the session (see
  :func:`~langchain_mars.chat_history.clear_session`): the session's turns leave what the
  chain sees for good — cleared with ``clear_mode="forget"`` (the default; archived,
  never shown again, not even as raw support; the long-term memories the namespace
  learnt from them are still recalled), erased with
  ``clear_mode="erase"`` together with everything derived from them. Turns saved after
  ``clear()`` are the session's conversation again.
* Unknown keyword arguments (a typo such as ``sesion_id=``) are refused with a
  :class:`~mars_core.errors.ValidationError` naming them and the known ones.

The input key is ``input_key`` or, when unset, the only input that is not a memory
variable (LangChain's usual rule); the output key likewise.

Examples:
    >>> import warnings; warnings.simplefilter("ignore")
    >>> from mars_core import FakeClock, MemoryStore
    >>> store = MemoryStore(budget=500, clock=FakeClock())
    >>> memory = MarsMemory(store=store, session_id="s1")
    >>> memory.save_context({"input": "I live in Porto"}, {"response": "Noted."})
    >>> print(memory.load_memory_variables({"input": "where do I live?"})["history"])
    === LONG-TERM MEMORY (RECALLED) ===
    === STRUCTURED EVIDENCE ===
    - [semantic | 2026-01-01 00:00 UTC | user] The user lives in Porto
    === ACTIVE CONVERSATION ===
    - [episodic | 2026-01-01 00:00 UTC | user] I live in Porto
    - [episodic | 2026-01-01 00:00 UTC | assistant] Noted.
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.speakers import Speakers, message_time
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.namespaces import canonical_namespace
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.store import MemoryStore

try:
    import pydantic
    from langchain_classic.base_memory import BaseMemory
    from langchain_core.messages import BaseMessage, SystemMessage
    from pydantic import ConfigDict, Field, field_validator
except ImportError as exc:
    raise ExtraNotInstalledError("langchain-classic", "langchain-classic") from exc

from langchain_mars.chat_history import clear_session, shown_messages

__all__ = ["MarsMemory"]


def _only_key(mapping: dict[str, Any], exclude: list[str], what: str) -> str:
    if not isinstance(mapping, Mapping):
        raise ValidationError(f"MarsMemory {what}s must be a dict, not {type(mapping).__name__}")
    keys = [k for k in mapping if k not in exclude and k != "stop"]
    if len(keys) != 1:
        raise ValidationError(f"MarsMemory expected one {what} key, got {sorted(keys)}; "
                              f"set {what}_key=")
    return keys[0]


class MarsMemory(BaseMemory):
    """MaRS memory for legacy chains (see the module docstring).

    Args:
        store: the memory store.
        session_id: the conversation these turns belong to (a conversation id, not a
            namespace).
        namespace: the user/tenant namespace (default: the store's default): a namespace
            string or a tuple of parts (:mod:`mars_core.namespaces`), kept as the string.
        memory_key: the prompt variable filled with the context.
        input_key: the input holding the user's text (default: the only other input).
        output_key: the output holding the answer (default: the only output).
        budget_tokens: the most tokens of the context.
        active_turns: the most turns of this session shown.
        evidence: the most recalled memories shown.
        clear_mode: ``"forget"`` (archive the session's turns) or ``"erase"``.
        return_messages: return LangChain messages (for a ``MessagesPlaceholder``)
            instead of one string.
        user_name: who the inputs are (the store resolves "I" to the speaker; None:
            the role ``user`` stands for them).
        assistant_name: who the outputs are.
        timestamp_key: the input holding when the turn was said (a ``datetime`` or an
            ISO 8601 string); None: the store's clock dates it.
        rerank: your own reranker of the recalled memories (:mod:`mars_core.reading.rerank`,
            e.g. ``cross_encoder(CrossEncoder(...))``); None: the store's ranking.

    Raises:
        ValidationError: bad or unknown arguments (a pydantic error is re-raised as ours).

    Examples:
        >>> import warnings; warnings.simplefilter("ignore")
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     memory = MarsMemory(store=store, memory_key="context", return_messages=True)
        ...     memory.save_context({"input": "Hello"}, {"output": "Hi!"})
        ...     print([(m.type, m.text)
        ...            for m in memory.load_memory_variables({"input": "x"})["context"]])
        ...     try:
        ...         MarsMemory(store=store, sesion_id="s1")
        ...     except ValidationError as exc:
        ...         print(str(exc).split(";")[0])
        [('human', 'Hello'), ('ai', 'Hi!')]
        invalid MarsMemory argument: unknown argument 'sesion_id'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    store: MemoryStore
    session_id: str = Field("default", min_length=1)
    namespace: str | None = None
    memory_key: str = Field("history", min_length=1)
    input_key: str | None = None
    output_key: str | None = None
    budget_tokens: int = Field(1024, gt=0, strict=True)
    active_turns: int = Field(6, ge=0, strict=True)
    evidence: int = Field(5, ge=0, strict=True)
    clear_mode: Literal["forget", "erase"] = "forget"
    return_messages: bool = Field(False, strict=True)
    user_name: str | None = None
    assistant_name: str | None = None
    timestamp_key: str | None = Field(None, min_length=1)
    rerank: Reranker | None = None

    @field_validator("namespace", mode="before")
    @classmethod
    def _namespace(cls, value: object) -> object:
        return None if value is None else canonical_namespace(value)

    def __init__(self, **data: Any) -> None:
        unknown = sorted(k for k in data if k not in type(self).model_fields)
        if unknown:
            raise ValidationError(
                f"invalid MarsMemory argument: unknown argument "
                f"{', '.join(map(repr, unknown))}; the known ones are "
                f"{', '.join(sorted(type(self).model_fields))}")
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "MarsMemory argument") from None
        Speakers(self.user_name, self.assistant_name)  # checked before any call
        check_reranker(self.rerank)

    @property
    def memory_variables(self) -> list[str]:
        """The prompt variable this memory fills."""
        return [self.memory_key]

    def _text(self, inputs: dict[str, Any]) -> str:
        key = self.input_key or _only_key(
            inputs, [*self.memory_variables, *filter(None, [self.timestamp_key])], "input")
        if not isinstance(inputs, Mapping):
            raise ValidationError(f"MarsMemory inputs must be a dict, not {type(inputs).__name__}")
        value = inputs.get(key)
        if not isinstance(value, str):
            raise ValidationError(f"MarsMemory input {key!r} must be a string")
        return value

    def _messages(self, query: str) -> list[BaseMessage]:
        """The recalled memories as a system message, then this session's active turns."""
        active = self.store.list(self.namespace, type=MemoryType.EPISODIC,
                                 status=MemoryStatus.ACTIVE)
        kept: list[MemoryNode] = []
        used = 0
        for node in reversed(active):
            if len(kept) == self.active_turns:
                break
            if node.provenance.conversation_id != self.session_id:
                continue
            if used + node.weight > self.budget_tokens:
                break
            kept.append(node)
            used += node.weight
        turns = shown_messages(self.store.check_output(kept[::-1], namespace=self.namespace))
        left = self.budget_tokens - used
        if left <= 0 or self.evidence == 0:
            return turns
        recalled = self.store.render_context(
            query, budget_tokens=left, namespace=self.namespace,
            conversation=self.session_id, active_turns=self.active_turns,
            evidence=self.evidence, evidence_only=True, rerank=self.rerank).strip()
        has_evidence = any(line.startswith("- ") for line in recalled.splitlines())
        return [SystemMessage(recalled), *turns] if has_evidence else turns

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The context for this input: a string, or messages with ``return_messages``
        (see the module docstring)."""
        if self.return_messages:
            return {self.memory_key: self._messages(self._text(inputs))}
        text = self.store.render_context(
            self._text(inputs), budget_tokens=self.budget_tokens, namespace=self.namespace,
            conversation=self.session_id, active_turns=self.active_turns,
            evidence=self.evidence, rerank=self.rerank)
        return {self.memory_key: text}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Observe the input (``user``) and the output (``assistant``) of one turn.

        Raises:
            ValidationError: missing or non-string input/output, or a timestamp that is
                not a date (nothing stored).
        """
        question = self._text(inputs)
        out_key = self.output_key or _only_key(outputs, [], "output")
        if not isinstance(outputs, Mapping):
            raise ValidationError(f"MarsMemory outputs must be a dict, not "
                                  f"{type(outputs).__name__}")
        answer = outputs.get(out_key)
        if not isinstance(answer, str):
            raise ValidationError(f"MarsMemory output {out_key!r} must be a string")
        names = Speakers(self.user_name, self.assistant_name)
        at = message_time(inputs.get(self.timestamp_key)) if self.timestamp_key else None
        turns = [{"role": role, "text": text, "speaker": names.speaker(role, None), "at": at}
                 for role, text in (("user", question), ("assistant", answer)) if text.strip()]
        if turns:  # both or neither: one call
            self.store.observe_many(turns, namespace=self.namespace,
                                    conversation_id=self.session_id)

    def clear(self) -> None:
        """Forget (or erase, by ``clear_mode``) this session's turns."""
        clear_session(self.store, self.session_id, self.namespace, self.clear_mode)
