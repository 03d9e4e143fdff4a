"""``MarsRetriever``: MaRS memories as LlamaIndex ``NodeWithScore`` results.

Each hit of ``store.retrieve`` (hybrid dense + BM25, packed into a token budget, one
namespace) becomes a ``TextNode`` whose id is the memory id and whose metadata carries
what a pipeline needs to filter or explain it: ``memory_id``, ``memory_type``,
``sensitivity``, ``namespace``, ``source``, ``conversation_id``, ``created_at``,
``archived``, and the dense and lexical scores. Only ``memory_type`` and
``created_at`` are shown to the LLM; ids, scores and sensitivity are kept out of the
LLM and embedding views. Retrieval counts as an access (the store's reinforcement and
audit) unless ``read_only=True``.

It fits any LlamaIndex component that takes a retriever, e.g.
``CondensePlusContextChatEngine.from_defaults(retriever=MarsRetriever(...))``.

Privacy: the text is the memory as the store's output check lets it out
(``store.retrieve``: sensitive spans masked by typed placeholders such as ``[PHONE]`` or
``[HEALTH]``; ``metadata["masked"]`` lists the kinds, kept out of the LLM's view).
``redact=False`` reads the stored text (an explicit read, recorded as such in the
store's audit); ``max_sensitivity=`` keeps sensitive memories out altogether.

Examples:
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> _ = store.add("Ana's birthday is on 3 May", type="semantic", namespace="alice")
    >>> retriever = MarsRetriever(store, namespace="alice", similarity_top_k=3)
    >>> [hit] = retriever.retrieve("When is Ana's birthday?")
    >>> hit.node.metadata["memory_type"], hit.node.node_id == hit.node.metadata["memory_id"]
    ('semantic', True)
    >>> 0.0 < hit.score <= 1.0
    True
    >>> MarsRetriever(store, namespace="bob").retrieve("When is Ana's birthday?")
    []
    >>> MarsRetriever(store, session_id="team/ana").namespace  # a session id is one part
    'team%2Fana'
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mars_core.budget import MAX_BUDGET as _UNBOUNDED
from mars_core.config import RetrievalConfig
from mars_core.engine.args import phrase, retrieval_template
from mars_core.errors import ExtraNotInstalledError, ValidationError
from mars_core.model import MemoryType
from mars_core.namespaces import NamespaceArg, canonical_namespace, id_namespace
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.reading.retrieval import Hit, check_max_sensitivity, relevance
from mars_core.scope import check_jurisdictions
from mars_core.store import MemoryStore

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc

__all__ = ["MarsRetriever", "to_node"]

_HIDDEN = ["memory_id", "namespace", "sensitivity", "source", "conversation_id", "archived",
           "dense", "lexical", "masked", "fused_score"]
"""Metadata kept out of the LLM and embedding views of a node."""


def to_node(hit: Hit, config: RetrievalConfig | None = None) -> NodeWithScore:
    """A store hit as a scored ``TextNode`` (see the module docs for its metadata); its
    score in [0, 1] is :func:`~mars_core.reading.retrieval.relevance` under ``config`` (the
    store's ``config.retrieval``; default: ``RetrievalConfig()``).

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as s:
        ...     _ = s.add("tea at five", type="episodic")
        ...     to_node(s.retrieve("tea")[0]).node.metadata["memory_type"]
        'episodic'
    """
    node = hit.node
    meta: dict[str, Any] = {
        "memory_id": node.id, "memory_type": node.type.value,
        "sensitivity": node.sensitivity, "namespace": node.namespace,
        "source": node.provenance.source, "conversation_id": node.provenance.conversation_id,
        "created_at": node.created_at.isoformat(), "archived": hit.archived,
        "dense": hit.dense, "lexical": hit.lexical, "masked": list(hit.masked),
        "fused_score": hit.score,
    }
    text = TextNode(id_=node.id, text=hit.text, metadata=meta,
                    excluded_llm_metadata_keys=list(_HIDDEN),
                    excluded_embed_metadata_keys=list(_HIDDEN))
    return NodeWithScore(node=text, score=relevance(
        hit, config if config is not None else RetrievalConfig()))


class MarsRetriever(BaseRetriever):
    """MaRS as a LlamaIndex ``BaseRetriever`` over one namespace.

    Args:
        store: the memory store.
        namespace: the namespace to read: a namespace string (``"memories/ana"``) or a
            tuple of parts (``("memories", "ana")``); default: the store's default.
        session_id: instead of ``namespace``, the session of a :class:`MarsMemory` (or a
            ``Memory`` with a :class:`MarsMemoryBlock`) whose memories to read: the id is
            one namespace part, as those adapters map it (``"team/ana"`` →
            ``"team%2Fana"``).
        budget_tokens: token budget of the results (default: none when ``k`` is given —
            ``k`` results whatever their size; else the store's retrieval default).
        similarity_top_k: the most results (LlamaIndex's name for it; default: all that
            fit ``budget_tokens``).
        k: the same, by the name the LangChain retriever uses (give one of the two).
        score_cutoff: a relative cut-off in (0, 1]: keep only the results scoring at least
            this share of the best one (off by default — ``k`` results when ``k`` exist,
            whatever the store's own ``RetrievalConfig.relative_cutoff``; LlamaIndex's
            ``similarity_top_k`` contract).
        types: only these memory types (e.g. ``["semantic", "social"]``).
        max_sensitivity: leave out memories more sensitive than this (a number in
            [0, 1], or None for no cap).
        include_archive: ``None`` (the default): the active memories and the second tier,
            as ``store.retrieve``; ``True``: every archived memory too, ranked after the
            active ones (never what a user cleared); ``False``: the active memories alone.
        read_only: do not count the retrieval as an access.
        redact: the store's output check on (True) or off (False: the stored text, an
            explicit read recorded as such in the audit); None: the store's setting.
        jurisdiction: only memories of these jurisdictions (a code such as ``"EU"``, a list
            of codes; ``""``: memories with none; seed 000 §4.3).
        template: a retrieval template of ``StoreConfig.retrieval_templates`` (a
            department's scope; the narrower of it and the other filters wins).
        callback_manager: LlamaIndex callbacks.
        rerank: your own reranker (:mod:`mars_core.reading.rerank`): it reorders the store's best
            20 candidates before ``similarity_top_k`` is cut (a ``node_postprocessors``
            entry of a query engine reorders what is returned).

    Raises:
        ValidationError: bad arguments (checked here, before any retrieval), or both
            ``namespace`` and ``session_id``.

    Examples:
        >>> from mars_core import MemoryStore
        >>> MarsRetriever(MemoryStore(), similarity_top_k=0)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ValidationError: similarity_top_k must be an int >= 1 or None
    """

    def __init__(
        self,
        store: MemoryStore,
        namespace: NamespaceArg | None = None,
        *,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        similarity_top_k: int | None = None,
        k: int | None = None,
        score_cutoff: float | None = None,
        types: Iterable[MemoryType | str] | None = None,
        max_sensitivity: float | None = None,
        include_archive: bool | None = None,
        read_only: bool = False,
        redact: bool | None = None,
        jurisdiction: str | Iterable[str] | None = None,
        template: str | None = None,
        callback_manager: CallbackManager | None = None,
        rerank: Reranker | None = None,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        if k is not None and similarity_top_k is not None and k != similarity_top_k:
            raise ValidationError(f"give similarity_top_k or k, not both ({similarity_top_k} "
                                  f"and {k}): they are one setting")
        k = similarity_top_k if similarity_top_k is not None else k
        for what, value in (("similarity_top_k", k), ("budget_tokens", budget_tokens)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise ValidationError(f"{what} must be an int >= 1 or None")
        if types is not None and (isinstance(types, str) or not isinstance(types, Iterable)):
            raise ValidationError("types must be a list of memory types such as ['semantic']")
        try:
            kinds = None if types is None else tuple(MemoryType(t) for t in types)
        except ValueError as exc:
            raise ValidationError(f"unknown memory type: {exc}") from None
        cap = check_max_sensitivity(max_sensitivity)
        codes = check_jurisdictions(jurisdiction)
        if template is not None:
            retrieval_template(template, store.config)
        if not isinstance(read_only, bool):
            raise ValidationError("read_only must be True or False")
        if include_archive is not None and not isinstance(include_archive, bool):
            raise ValidationError("include_archive must be True, False or None")
        if redact is not None and not isinstance(redact, bool):
            raise ValidationError("redact must be True, False or None")
        if score_cutoff is not None and (isinstance(score_cutoff, bool) or not isinstance(
                score_cutoff, int | float) or not 0.0 < score_cutoff <= 1.0):
            raise ValidationError("score_cutoff is relative to the best score: use (0, 1]")
        super().__init__(callback_manager=callback_manager)
        self.store = store
        self.namespace = _namespace(store, namespace, session_id)
        self.similarity_top_k = k
        self._kwargs: dict[str, Any] = {
            "budget_tokens": _UNBOUNDED if budget_tokens is None and k is not None
            else budget_tokens, "k": k, "types": kinds,
            "max_sensitivity": cap, "namespace": self.namespace,
            "include_archive": include_archive, "read_only": read_only,
            "relative_cutoff": score_cutoff or 0.0, "redact": redact,
            "jurisdiction": None if codes is None else sorted(codes), "template": template,
            "rerank": check_reranker(rerank),
        }

    def retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """LlamaIndex's ``retrieve``, refusing a query that is neither text nor a bundle."""
        return super().retrieve(_query(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """Async :meth:`retrieve`."""
        return await super().aretrieve(_query(str_or_query_bundle))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Hits of ``store.retrieve`` as scored nodes, best first."""
        config = self.store.config.retrieval
        return [to_node(h, config)
                for h in self.store.retrieve(query_bundle.query_str, **self._kwargs)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`_retrieve` (through ``store.aretrieve``)."""
        hits = await self.store.aretrieve(query_bundle.query_str, **self._kwargs)
        return [to_node(h, self.store.config.retrieval) for h in hits]


def _query(query: object) -> QueryType:
    """A retrieval's query: a string or a ``QueryBundle`` (checked as the store checks it).

    Raises:
        ValidationError: anything else, or text the store's retrieval refuses.
    """
    if not isinstance(query, str | QueryBundle):
        raise ValidationError(f"a query must be a string or a QueryBundle, not "
                              f"{type(query).__name__}")
    phrase(query if isinstance(query, str) else query.query_str, "a query")
    return query


def _namespace(store: MemoryStore, namespace: object, session_id: object) -> str:
    """The namespace a retriever reads: ``namespace``, or ``session_id`` as one part."""
    if namespace is not None and session_id is not None:
        raise ValidationError("give namespace or session_id, not both")
    if session_id is not None:
        return id_namespace(session_id, what="session_id")
    return canonical_namespace(store.config.default_namespace if namespace is None
                               else namespace)
