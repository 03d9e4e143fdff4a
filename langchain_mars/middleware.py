"""``MarsMemoryMiddleware``: MaRS memory for ``langchain.agents.create_agent``.

Three hooks of :class:`langchain.agents.middleware.AgentMiddleware`, sync and async:

* ``wrap_model_call`` — **recall**: the text of the last human message is the query;
  ``store.render_context(query, budget_tokens=...)`` renders the recalled memories of the
  namespace (redacted, within the token budget), and the rendered evidence is appended to
  the request's system message (a new one when there is none). The model's input messages
  are untouched; with nothing recalled the request passes unchanged. After the model
  answers, **reinforce**: of the memories *offered* in the context, those the answer
  *used* are credited with ``store.credit(used, offered, namespace)``.
* ``after_agent`` — **observe**: the run's last human message and its final answer (the
  last AI message after it that has text) are stored with ``store.observe`` under the
  thread's id as ``conversation_id``, each with its speaker (the message's ``name``, else
  ``user_name``/``assistant_name``) and time (``additional_kwargs["timestamp"]``, else the
  store's clock). Tool calls and intermediate steps are not stored.

"Used" is decided deterministically, by lexical overlap (:func:`used_memories`): a memory
was used when at least ``min_overlap`` of its distinct content words (lower-cased,
stop words removed, light stemming — :func:`mars_core.reading.analysis.terms`) appear in the
answer. "Offered" are the memories whose (whitespace-normalised) text is a rendered line
of the context; a memory whose text the redaction pass changed is shown but not
credited.

The namespace is fixed, or a template filled per run from ``runtime.context`` and
``config["configurable"]`` (see :mod:`langchain_mars._namespace`), e.g.
``namespace=("memories", "{user_id}")`` with ``agent.invoke(..., context={"user_id": "ana"})``
— one user's memories follow them across threads.

Examples:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=1000)
    >>> _ = store.add("The user is allergic to peanuts", type="semantic")
    >>> agent = create_agent(FakeListChatModel(responses=["No peanuts for you."]),
    ...                      middleware=[MarsMemoryMiddleware(store)])
    >>> out = agent.invoke({"messages": [("user", "Any snack ideas? I'm allergic")]})
    >>> out["messages"][-1].text
    'No peanuts for you.'
    >>> [n.provenance.source for n in store.list(type="episodic")]
    ['user', 'assistant']
    >>> store.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mars_core.engine.args import retrieval_template
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.knowledge.speakers import Speakers
from mars_core.model import MemoryStatus
from mars_core.privacy.masking import MASK, shows
from mars_core.reading.analysis import terms
from mars_core.reading.context import HEADER_ACTIVE, HEADER_RECALLED
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.scope import check_jurisdictions
from mars_core.store import MemoryStore

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", "langchain") from exc

from langchain_mars._namespace import (
    NamespaceTemplate,
    as_template,
    lookup,
    resolve_namespace,
    run_config,
)
from langchain_mars.chat_history import message_turn

__all__ = ["MarsMemoryMiddleware", "used_memories"]

PREAMBLE = ("Memories recalled from earlier conversations with this user "
            "(use them when relevant; they may be outdated):")

ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


def used_memories(answer: str, offered: Mapping[str, str], min_overlap: float = 0.5) -> list[str]:
    """Ids of the offered memories an answer used (lexical overlap; see the module).

    Args:
        answer: the model's answer.
        offered: memory id → memory text.
        min_overlap: the share of a memory's content words the answer must contain.

    Examples:
        >>> used_memories("Avoid satay: you are allergic to peanuts.",
        ...               {"m1": "The user is allergic to peanuts", "m2": "Bo likes jazz"})
        ['m1']
    """
    words = set(terms(answer))
    used = []
    for node_id, text in offered.items():
        own = set(terms(text))
        if own and len(own & words) >= min_overlap * len(own):
            used.append(node_id)
    return used


@dataclass(frozen=True, slots=True)
class _Offer:
    """What one model call was shown: the namespace and memory id → text."""

    namespace: str | None
    memories: dict[str, str]


def _last_human(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and messages[i].text.strip():
            return i
    return None


def _answer_text(result: ModelResult) -> str:
    """The text of the AI message(s) in a model call's result."""
    if isinstance(result, ExtendedModelResponse):
        result = result.model_response
    messages = [result] if isinstance(result, AIMessage) else result.result
    return " ".join(m.text for m in messages if isinstance(m, AIMessage))


def _rendered_lines(context: str) -> set[str]:
    """The memory texts of the item lines of a rendered context."""
    return {line.split("] ", 1)[1] for line in context.splitlines()
            if line.startswith("- [") and "] " in line}


class MarsMemoryMiddleware(AgentMiddleware):
    """Recall before the model, reinforce after it, observe each run (see the module).

    Args:
        store: the memory store.
        namespace: a fixed namespace, a template such as ``("memories", "{user_id}")``,
            or None (the store's default namespace).
        budget_tokens: the most tokens the injected memories take.
        evidence: the most recalled memories rendered.
        observe: store each run's human message and final answer.
        reinforce: credit the memories each answer used.
        min_overlap: the lexical overlap that makes a memory "used".
        preamble: the line written before the recalled memories.
        template: a retrieval template of the store (``StoreConfig.retrieval_templates``:
            what this agent's department may recall, seed 000 §4.3), or None.
        jurisdiction: recall only memories of these jurisdictions (a code such as
            ``"EU"``, a list of codes; ``""``: memories with none), or None.
        user_name: who the human messages are when a message has no ``name`` of its own
            (the store resolves "I" to the speaker; :mod:`mars_core.knowledge.speakers`).
        assistant_name: likewise for the AI messages.
        rerank: your own reranker of the recalled memories (:mod:`mars_core.reading.rerank`, e.g.
            ``cross_encoder(CrossEncoder(...))``); None: the store's ranking.

    Raises:
        ValidationError: bad budget, evidence count, overlap, namespace, template or
            jurisdiction.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     m = MarsMemoryMiddleware(store, namespace=("memories", "{user_id}"))
        ...     m.name, m.namespace
        ('MarsMemoryMiddleware', NamespaceTemplate(('memories', '{user_id}')))
    """

    def __init__(self, store: MemoryStore, *, namespace: Any = None, budget_tokens: int = 512,
                 evidence: int = 5, observe: bool = True, reinforce: bool = True,
                 min_overlap: float = 0.5, preamble: str = PREAMBLE,
                 template: str | None = None,
                 jurisdiction: str | Sequence[str] | None = None,
                 user_name: str | None = None, assistant_name: str | None = None,
                 rerank: Reranker | None = None) -> None:
        super().__init__()
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        for name, value in (("budget_tokens", budget_tokens), ("evidence", evidence)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValidationError(f"{name} must be a positive integer")
        if isinstance(min_overlap, bool) or not isinstance(min_overlap, int | float) \
                or not 0.0 < min_overlap <= 1.0:
            raise ValidationError("min_overlap must be a number in (0, 1]")
        for name, flag in (("observe", observe), ("reinforce", reinforce)):
            if not isinstance(flag, bool):
                raise ValidationError(f"{name} must be True or False")
        if not isinstance(preamble, str):
            raise ValidationError("preamble must be a string")
        if template is not None:
            retrieval_template(template, store.config)
        codes = check_jurisdictions(jurisdiction)
        self.template = template
        self.jurisdiction = None if codes is None else sorted(codes)
        self.store = store
        self.namespace: NamespaceTemplate | str | None = as_template(namespace)
        self.budget_tokens = budget_tokens
        self.evidence = evidence
        self.observe = observe
        self.reinforce = reinforce
        self.min_overlap = min_overlap
        self.preamble = preamble
        self.speakers = Speakers(user_name, assistant_name)
        self.rerank = check_reranker(rerank)

    # --- the work, written once (the async hooks run it in a worker thread) -----------------

    def _namespace(self, runtime: Runtime[Any] | None) -> str | None:
        return resolve_namespace(self.namespace, config=run_config(), runtime=runtime)

    def _recall(self, request: ModelRequest[Any]) -> tuple[ModelRequest[Any], _Offer | None]:
        """Inject the recalled memories into the request's system message."""
        at = _last_human(request.messages)
        if at is None:
            return request, None
        ns = self._namespace(request.runtime)
        context = self.store.render_context(request.messages[at].text, namespace=ns,
                                            budget_tokens=self.budget_tokens,
                                            evidence=self.evidence, template=self.template,
                                            jurisdiction=self.jurisdiction,
                                            rerank=self.rerank)
        context = context.split(HEADER_ACTIVE, 1)[0].strip()
        if HEADER_RECALLED not in context:
            return request, None
        lines = _rendered_lines(context)
        masked = [line for line in lines if MASK.search(line)]  # what the check masked
        offered = {n.id: n.content for n in self.store.list(ns, status=MemoryStatus.ACTIVE)
                   if " ".join(n.content.split()) in lines
                   or any(shows(line, n.content) for line in masked)}
        system = request.system_message
        text = f"{self.preamble}\n{context}"
        if system is not None and system.text:
            text = f"{system.text}\n\n{text}"
        return request.override(system_message=SystemMessage(content=text)), \
            _Offer(ns, offered)

    def _credit(self, result: ModelResult, offer: _Offer | None) -> None:
        """Credit the offered memories the answer used."""
        if offer is None or not offer.memories or not self.reinforce:
            return
        answer = _answer_text(result)
        if not answer.strip():  # a tool call: nothing was answered yet
            return
        used = used_memories(answer, offer.memories, self.min_overlap)
        self.store.credit(used, list(offer.memories), namespace=offer.namespace)

    def _observe(self, state: AgentState[Any], runtime: Runtime[Any] | None) -> None:
        """Store the run's last human message and its final answer."""
        messages = state["messages"]
        at = _last_human(messages)
        if not self.observe or at is None:
            return
        answers = [m for m in messages[at + 1:] if isinstance(m, AIMessage) and m.text.strip()]
        ns = self._namespace(runtime)
        config = run_config()
        thread = lookup(config.get("configurable"), "thread_id") or \
            lookup(getattr(runtime, "execution_info", None), "thread_id")
        conversation = None if thread is None else str(thread)
        turns = [message_turn(m, self.speakers) for m in [messages[at], *answers[-1:]]]
        self.store.observe_many(turns, namespace=ns, conversation_id=conversation)

    # --- AgentMiddleware hooks ------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
                        ) -> ModelResult:
        """Recall into the system message, call the model, credit what it used."""
        request, offer = self._recall(request)
        result = handler(request)
        self._credit(result, offer)
        return result

    async def awrap_model_call(
        self, request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResult:
        """Async :meth:`wrap_model_call`."""
        request, offer = await asyncio.to_thread(self._recall, request)
        result = await handler(request)
        await asyncio.to_thread(self._credit, result, offer)
        return result

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Observe the run's human message and final answer."""
        self._observe(state, runtime)
        return None

    async def aafter_agent(self, state: AgentState[Any],
                           runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        await asyncio.to_thread(self._observe, state, runtime)
        return None
