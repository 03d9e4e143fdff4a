"""``MarsRetriever``: a LangChain retriever over a :class:`~mars_core.store.MemoryStore`.

A thin adapter: it calls ``store.retrieve`` (or ``aretrieve``) and turns each
:class:`~mars_core.reading.retrieval.Hit` into a ``Document`` whose ``id`` is the memory id and
whose metadata carries the memory's type, sensitivity, scores and provenance. Its
``score`` is in [0, 1] (:func:`mars_core.reading.retrieval.relevance`: the fused score over the
most it can be, so the order is kept); ``fused_score`` is the store's own.

* ``k`` documents at most, exactly ``k`` when the namespace holds ``k`` matching memories
  (the ``langchain-tests`` retriever contract). ``k`` can be overridden per call:
  ``retriever.invoke(q, k=3)``.
* ``budget_tokens`` (off by default): also stop when the documents' tokens would exceed
  it. Off means ``k`` documents whatever their size.
* The difference from ``store.retrieve(q, budget_tokens=...)``: ``retrieve`` is the
  store's own read, sized by tokens — its relative cut-off (``RetrievalConfig``) drops
  the hits far below the best one, so ``retrieve(k=10)`` often returns fewer than 10.
  The retriever keeps the framework's contract: ``k`` documents, in the store's order
  (the same ranking, the same second tier), unless you opt into the cut-off with
  ``score_cutoff`` or into a size with ``budget_tokens``.
* ``score_cutoff`` (off by default): a *relative* cut-off — keep only the documents whose
  fused score is at least ``score_cutoff`` × the best one's. Only the documents returned
  count as accessed.
* filters: ``types``, ``max_sensitivity``, ``jurisdiction``, ``template`` (a retrieval
  template of the store, seed 000 §4.3), ``include_archive`` (default: the second tier,
  as ``retrieve``); the namespace is fixed
  or a :class:`~langchain_mars._namespace.NamespaceTemplate` filled from the run config
  (``config["configurable"]``) of each call.
* ``read_only=True`` leaves the store's statistics and audit untouched (inspection).
* Privacy: each document's ``page_content`` is the memory as the store's output check
  lets it out (``store.retrieve``: sensitive spans masked by typed placeholders such as
  ``[PHONE]`` or ``[HEALTH]``; ``metadata["masked"]`` lists the kinds). ``redact=False``
  asks for the stored text (an explicit read, recorded as such in the store's audit);
  ``None`` (the default) follows the store's ``StoreConfig.redact``.

Every keyword but ``k`` can be overridden per call too (``invoke(q, types=["semantic"])``).

Examples:
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> _ = store.add("Ana lives in Lisbon", type="semantic")
    >>> _ = store.add("Bo plays the drums", type="semantic")
    >>> docs = MarsRetriever(store=store, k=1).invoke("where does Ana live?")
    >>> docs[0].page_content, docs[0].metadata["memory_type"]
    ('Ana lives in Lisbon', 'semantic')
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mars_core.config import RetrievalConfig
from mars_core.engine.args import retrieval_template
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.model import MemoryType
from mars_core.namespaces import canonical_namespace
from mars_core.reading.rerank import check_reranker
from mars_core.reading.retrieval import Hit, check_max_sensitivity, relevance
from mars_core.scope import check_jurisdictions
from mars_core.store import MemoryStore

try:
    import pydantic
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableConfig, ensure_config
    from pydantic import ConfigDict, Field, field_validator
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langchain", "langchain-core") from exc

from langchain_mars._namespace import NamespaceTemplate, as_template, resolve_namespace

__all__ = ["MarsRetriever", "hit_to_document"]

_OPTIONS = ("types", "max_sensitivity", "budget_tokens", "score_cutoff", "include_archive",
            "read_only", "redact", "jurisdiction", "template", "rerank")
_UNBOUNDED = 2**31 - 1


def hit_to_document(hit: Hit, config: RetrievalConfig | None = None) -> Document:
    """One retrieved memory as a LangChain ``Document`` (``id`` = the memory id); its
    ``score`` in [0, 1] is :func:`~mars_core.reading.retrieval.relevance` under ``config`` (the
    store's ``config.retrieval``; default: ``RetrievalConfig()``).

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     node = store.add("Bo likes jazz", type="semantic")
        ...     doc = hit_to_document(store.retrieve("jazz")[0])
        >>> doc.id == node.id, sorted(doc.metadata)[:3]
        (True, ['archived', 'conversation_id', 'created_at'])
    """
    node = hit.node
    return Document(
        id=node.id,
        page_content=hit.text,
        metadata={
            "id": node.id,
            "memory_type": node.type.value,
            "sensitivity": node.sensitivity,
            "score": relevance(hit, config if config is not None else RetrievalConfig()),
            "fused_score": hit.score,
            "dense_score": hit.dense,
            "lexical_score": hit.lexical,
            "tokens": node.weight,
            "namespace": node.namespace,
            "created_at": node.created_at.isoformat(),
            "source": node.provenance.source,
            "conversation_id": node.provenance.conversation_id,
            "archived": hit.archived,
            "masked": list(hit.masked),
        },
    )


class MarsRetriever(BaseRetriever):
    """Retrieve MaRS memories as LangChain documents (see the module docstring).

    Args:
        store: the memory store.
        k: the most documents returned (default 4).
        namespace: a fixed namespace, a template such as ``("memories", "{user_id}")``
            filled from each run's ``config["configurable"]``, or None (store default).
        types: keep only these memory types (``"semantic"``, ``"episodic"``, ...).
        max_sensitivity: keep only memories at most this sensitive (in [0, 1]).
        budget_tokens: a token budget for the documents (off by default).
        score_cutoff: relative cut-off in (0, 1] against the best score (off by default).
        include_archive: ``None`` (the default): the active memories and the second tier,
            as ``store.retrieve`` (what a policy archived to make room); ``True``: every
            archived memory too, ranked lower (never what a user cleared); ``False``: the
            active memories alone.
        read_only: do not count the retrieval as an access.
        redact: the store's output check on (True) or off (False; the stored text);
            None: the store's setting.
        jurisdiction: only memories of these jurisdictions (a code such as ``"EU"``, a list
            of codes; ``""``: memories with none).
        template: a retrieval template of ``StoreConfig.retrieval_templates`` (what one
            department may retrieve; the narrower of it and the other filters wins).
        rerank: your own reranker (:mod:`mars_core.reading.rerank`): it reorders the store's best
            20 candidates before ``k`` is cut (a LangChain document compressor over this
            retriever reorders the ``k`` it returns).

    Raises:
        ValidationError: bad ``k``, ``score_cutoff``, filter or namespace values.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     _ = store.add("The user's name is Ana", type="semantic", namespace="u/ana")
        ...     r = MarsRetriever(store=store, namespace=("u", "{user_id}"))
        ...     docs = r.invoke("name", config={"configurable": {"user_id": "ana"}})
        >>> [d.metadata["namespace"] for d in docs]
        ['u/ana']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    store: MemoryStore
    k: int = Field(4, strict=True, description="The most documents returned.")
    namespace: Any = Field(None, description="Namespace string, template, or None.")
    types: Sequence[str] | None = Field(None, description="Memory types to keep.")
    max_sensitivity: float | None = Field(None, description="Sensitivity cap in [0, 1].")
    budget_tokens: int | None = Field(None, strict=True, gt=0,
                                      description="Token budget (None: off).")
    score_cutoff: float | None = Field(None, strict=True,
                                       description="Relative score cut-off (None: off).")
    include_archive: bool | None = Field(
        None, strict=True, description="None: the second tier, as retrieve; True: every "
        "archived memory too; False: the active memories alone.")
    read_only: bool = Field(False, strict=True,
                            description="Do not count the retrieval as an access.")
    redact: bool | None = Field(None, strict=True,
                                description="The store's output check (None: its setting).")
    jurisdiction: str | Sequence[str] | None = Field(
        None, description="Jurisdiction codes to keep (None: all).")
    template: str | None = Field(None, strict=True,
                                 description="A retrieval template of the store (None: none).")
    rerank: Any = Field(None, description="Your own reranker (query, texts) -> scores "
                        "(None: the store's ranking).")

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "MarsRetriever argument") from None
        if self.template is not None:
            retrieval_template(self.template, self.store.config)  # known before any call

    @field_validator("k")
    @classmethod
    def _check_k(cls, value: int) -> int:
        if isinstance(value, bool) or value <= 0:
            raise ValidationError("k must be a positive integer")
        return value

    @field_validator("max_sensitivity", mode="before")
    @classmethod
    def _check_max_sensitivity(cls, value: object) -> float | None:
        return check_max_sensitivity(value)

    @field_validator("jurisdiction", mode="before")
    @classmethod
    def _check_jurisdiction(cls, value: object) -> list[str] | None:
        codes = check_jurisdictions(value)
        return None if codes is None else sorted(codes)

    @field_validator("types")
    @classmethod
    def _check_types(cls, value: Sequence[str] | None) -> Sequence[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            raise ValidationError(f"types is a list of memory types such as [{value!r}]")
        try:
            return [MemoryType(t).value for t in value]
        except ValueError:
            raise ValidationError(f"unknown memory type in {list(value)!r}; use "
                                  f"{[t.value for t in MemoryType]}") from None

    @field_validator("score_cutoff")
    @classmethod
    def _check_cutoff(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 < value <= 1.0:
            raise ValidationError("score_cutoff is relative to the best score: use (0, 1]")
        return value

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, value: object) -> NamespaceTemplate | str | None:
        return as_template(value)

    # --- the namespace comes from the run config, which only invoke() sees ---------------

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        """Retrieve for ``input`` (see :class:`BaseRetriever`); ``k`` and filters per call."""
        kwargs.setdefault("namespace", self._namespace_for(config))
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        """Async :meth:`invoke` (uses the store's ``aretrieve``)."""
        kwargs.setdefault("namespace", self._namespace_for(config))
        return await super().ainvoke(input, config, **kwargs)

    def _namespace_for(self, config: RunnableConfig | None) -> str | None:
        return resolve_namespace(self.namespace, config=ensure_config(config))

    # --- the two retrieval paths share everything but the store call ----------------------

    def _plan(self, query: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """The ``store.retrieve`` keyword arguments of one call (the cut-off is off unless
        ``score_cutoff`` is set, whatever the store's default: the contract is k)."""
        unknown = set(overrides) - {"k", "namespace", *_OPTIONS}
        if unknown:
            raise ValidationError(f"unknown retriever arguments: {sorted(unknown)}")
        opts = {name: overrides.get(name, getattr(self, name)) for name in _OPTIONS}
        k = overrides.get("k", self.k)
        ns = overrides.get("namespace")
        ns = None if ns is None else canonical_namespace(ns)
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValidationError("k must be a positive integer")
        opts["max_sensitivity"] = check_max_sensitivity(opts["max_sensitivity"])
        if not isinstance(opts["read_only"], bool):
            raise ValidationError("read_only must be True or False")
        if opts["include_archive"] is not None and not isinstance(opts["include_archive"], bool):
            raise ValidationError("include_archive must be True, False or None")
        if opts["redact"] is not None and not isinstance(opts["redact"], bool):
            raise ValidationError("redact must be True, False or None")
        budget = opts["budget_tokens"]
        if budget is None:  # off: k documents, whatever their size
            budget = _UNBOUNDED
        return {"k": k, "budget_tokens": budget, "namespace": ns,
                  "types": opts["types"], "max_sensitivity": opts["max_sensitivity"],
                  "include_archive": opts["include_archive"], "read_only": opts["read_only"],
                  "relative_cutoff": opts["score_cutoff"] or 0.0, "redact": opts["redact"],
                  "jurisdiction": opts["jurisdiction"], "template": opts["template"],
                  "rerank": check_reranker(opts["rerank"])}

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        config = self.store.config.retrieval
        return [hit_to_document(h, config)
                for h in self.store.retrieve(query, **self._plan(query, kwargs))]

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        plan = self._plan(query, kwargs)
        config = self.store.config.retrieval
        return [hit_to_document(h, config) for h in await self.store.aretrieve(query, **plan)]
