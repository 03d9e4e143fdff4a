"""Your own reranker over what the store ranks: a seam, no model by default.

``retrieve(q, rerank=...)`` and ``render_context(q, rerank=...)`` (and the adapters'
``rerank=`` parameters) take a :class:`Reranker` — any callable
``(query, texts) -> scores`` — and let it reorder the store's best
:data:`RERANK_DEPTH` candidates before the relative cut-off, the budget and the output
check: a sentence-transformers ``CrossEncoder`` (:func:`cross_encoder`), an API, a rule.
The candidates keep the store's scores, handed out again in the reranker's order, so the
cut-off, ``Hit.score`` and the adapters' scores in [0, 1] keep their meaning. Nothing
below the top :data:`RERANK_DEPTH` moves. Without ``rerank`` nothing changes and no model
is loaded.

The reranker sees the memories' stored text (as the embedder does): give it a model
that runs where the store runs, or mind what you send. In the frameworks, their own
rerankers work on what the adapters return too: LangChain's
``ContextualCompressionRetriever(base_compressor=CrossEncoderReranker(...),
base_retriever=MarsRetriever(...))``, a LlamaIndex ``node_postprocessors=[...]`` on a query
engine over :class:`~llamaindex_mars.retriever.MarsRetriever`; ``rerank=`` is for the
exits that render context (the middleware, ``MarsMemory.get``, the memory block) and for
reranking before ``k`` is cut.

Examples:
    >>> from mars_core import MemoryStore
    >>> def by_length(query, texts):  # a toy reranker: shorter is better
    ...     return [-len(t) for t in texts]
    >>> with MemoryStore() as store:
    ...     _ = store.add("Ana lives in Lisbon, near the river, since May", type="semantic")
    ...     _ = store.add("Ana lives in Lisbon", type="semantic")
    ...     [h.text for h in store.retrieve("where does Ana live", rerank=by_length)]
    ['Ana lives in Lisbon', 'Ana lives in Lisbon, near the river, since May']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final, Protocol, runtime_checkable

from mars_core.errors import ValidationError
from mars_core.reading.retrieval import Hit

__all__ = ["RERANK_DEPTH", "PairScorer", "Reranker", "check_reranker", "cross_encoder",
           "rerank_hits"]

RERANK_DEPTH: Final = 20
"""How many of the store's best candidates a reranker reorders (the ranking bound of
issue 31: an oracle among the best 20 reaches recall 0.72 where the store gives 0.47)."""


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers the query; higher is better, one finite number
    per text."""

    def __call__(self, query: str, texts: Sequence[str], /) -> Sequence[float]:
        """The scores of ``texts`` for ``query``."""
        ...


class PairScorer(Protocol):
    """What a sentence-transformers ``CrossEncoder`` offers: ``predict`` over
    ``(query, text)`` pairs."""

    def predict(self, sentences: list[tuple[str, str]], /, *args: Any,
                **kwargs: Any) -> Any:
        """One score per pair."""
        ...


def cross_encoder(model: PairScorer) -> Reranker:
    """A :class:`Reranker` over a cross-encoder (``sentence_transformers.CrossEncoder``, or
    anything with its ``predict``).

    Examples:
        >>> class Overlap:  # a tiny deterministic cross-encoder stand-in
        ...     def predict(self, pairs):
        ...         return [len(set(q.split()) & set(t.split())) for q, t in pairs]
        >>> cross_encoder(Overlap())("red car", ["a red car", "a blue bike"])
        [2.0, 0.0]
    """
    def scores(query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in model.predict([(query, t) for t in texts])]

    return scores


def check_reranker(value: object) -> Reranker | None:
    """``value`` as a reranker, or None.

    Raises:
        ValidationError: something that is not callable.
    """
    if value is None:
        return None
    if not isinstance(value, Reranker):
        raise ValidationError(f"rerank must be a callable (query, texts) -> scores, not "
                              f"{type(value).__name__}")
    return value


def rerank_hits(hits: Sequence[Hit], query: str, reranker: Reranker | None,
                depth: int = RERANK_DEPTH) -> list[Hit]:
    """The best ``depth`` hits reordered by ``reranker``, the store's scores handed out
    again in that order (ties keep the store's order); the rest unchanged.

    Raises:
        ValidationError: the reranker did not return one finite number per text.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore() as store:
        ...     for t in ("red", "red red car", "red car"):
        ...         _ = store.add(t, type="semantic")
        ...     hits = store.retrieve("red car", relative_cutoff=0)
        >>> longest = rerank_hits(hits, "red car", lambda q, ts: [len(t) for t in ts])
        >>> [h.text for h in longest], [h.score for h in longest] == [h.score for h in hits]
        (['red red car', 'red car', 'red'], True)
    """
    if reranker is None or len(hits) < 2:
        return list(hits)
    head, tail = list(hits[:depth]), list(hits[depth:])
    raw = reranker(query, [h.node.content for h in head])
    try:
        scores = [float(s) for s in raw]
    except (TypeError, ValueError):
        raise ValidationError("a reranker returns one number per text") from None
    if len(scores) != len(head) or not all(math.isfinite(s) for s in scores):
        raise ValidationError(f"a reranker returns one finite number per text: got "
                              f"{len(scores)} for {len(head)} texts")
    order = sorted(range(len(head)), key=lambda i: -scores[i])
    slots = sorted((h.score for h in head), reverse=True)
    return [replace(head[i], score=s) for i, s in zip(order, slots, strict=True)] + tail
