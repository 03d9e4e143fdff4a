"""Hybrid retrieval: dense (backend) + lexical (BM25) candidates, fused, then packed
into a token budget (seed 000 §4.1: "a budget-bounded working set ... subject to filters
(type, time window, sensitivity caps)").

The fused score of a candidate is ``α·cos + (1-α)·bm25/max_bm25`` (α =
``RetrievalConfig.dense_weight``); packing walks candidates by score and keeps each one
that still fits the token budget (up to ``k`` memories).

Example:
    >>> q = Query(text="tea", namespace="ns", max_sensitivity=0.5)
    >>> q.allows_sensitivity(0.7)
    False
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mars_core.backends.base import And, Eq, Filter, In, Range, VectorBackend
from mars_core.config import RetrievalConfig
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.state import StoreState

__all__ = ["Hit", "Query", "pack", "rank"]


@dataclass(frozen=True, slots=True)
class Query:
    """What to retrieve: text plus filters, in one namespace."""

    text: str
    namespace: str
    types: frozenset[MemoryType] | None = None
    max_sensitivity: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    conversation: str | None = None
    exclude: frozenset[str] = field(default_factory=frozenset)

    def allows_sensitivity(self, s: float) -> bool:
        """Whether a sensitivity passes the cap."""
        return self.max_sensitivity is None or s <= self.max_sensitivity

    def admits(self, node: MemoryNode) -> bool:
        """The Python twin of :meth:`backend_filter` (used for lexical candidates)."""
        return (
            node.namespace == self.namespace
            and (self.types is None or node.type in self.types)
            and self.allows_sensitivity(node.sensitivity)
            and (self.since is None or node.created_at >= self.since)
            and (self.until is None or node.created_at <= self.until)
            and (self.conversation is None or node.provenance.conversation_id == self.conversation)
            and node.id not in self.exclude
        )

    def backend_filter(self) -> Filter:
        """The neutral filter sent to the vector backend."""
        clauses: list[Filter] = [Eq("namespace", self.namespace)]
        if self.types is not None:
            clauses.append(In("type", tuple(sorted(t.value for t in self.types))))
        if self.max_sensitivity is not None:
            clauses.append(Range("sensitivity", lte=self.max_sensitivity))
        if self.since is not None or self.until is not None:
            clauses.append(Range("created_ts",
                                 gte=self.since.timestamp() if self.since else None,
                                 lte=self.until.timestamp() if self.until else None))
        if self.conversation is not None:
            clauses.append(Eq("conversation", self.conversation))
        return And(tuple(clauses)) if len(clauses) > 1 else clauses[0]


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved memory with its scores.

    Attributes:
        node: the memory (a snapshot; statistics as of before this access).
        score: the fused score used for ranking.
        dense: cosine similarity to the query (0 when unknown).
        lexical: BM25 score normalised to [0, 1] within the candidates.
        archived: True when it came from the archive.
    """

    node: MemoryNode
    score: float
    dense: float
    lexical: float
    archived: bool = False

    @property
    def id(self) -> str:
        """The memory id."""
        return self.node.id

    @property
    def text(self) -> str:
        """The memory content."""
        return self.node.content


def _dense(backend: VectorBackend, collection: str, qvec: npt.NDArray[np.float32], q: Query,
           k: int) -> dict[str, float]:
    if not np.any(qvec):
        return {}
    return {r.record.id: r.score for r in backend.query(collection, qvec, k, q.backend_filter())}


def _cosines(backend: VectorBackend, collection: str, ids: Sequence[str],
             qvec: npt.NDArray[np.float32]) -> dict[str, float]:
    out: dict[str, float] = {}
    for rec in backend.get(collection, ids, with_vectors=True):
        v = rec.vector
        if v is None:
            continue
        norm = float(np.linalg.norm(v)) * float(np.linalg.norm(qvec))
        out[rec.id] = float(v @ qvec) / norm if norm > 0 else 0.0
    return out


def rank(
    state: StoreState,
    backend: VectorBackend,
    *,
    collection: str,
    status: MemoryStatus,
    qvec: npt.NDArray[np.float32],
    q: Query,
    cfg: RetrievalConfig,
) -> list[Hit]:
    """Fuse dense and lexical candidates of one collection into ranked hits."""
    dense = _dense(backend, collection, qvec, q, cfg.candidates)
    lexical = {
        i: s for i, s in state.index(q.namespace, status).search(q.text, cfg.candidates)
        if q.admits(state.nodes[i])
    }
    missing = [i for i in lexical if i not in dense]
    if missing and np.any(qvec):
        dense.update(_cosines(backend, collection, missing, qvec))
    top = max(lexical.values(), default=0.0)
    alpha = cfg.dense_weight
    hits = []
    for nid in set(dense) | set(lexical):
        node = state.nodes.get(nid)
        if node is None or node.id in q.exclude:
            continue
        d = dense.get(nid, 0.0)
        lx = lexical.get(nid, 0.0) / top if top > 0 else 0.0
        score = alpha * d + (1 - alpha) * lx
        if score > 0:  # nothing in common with the query: not a hit, however empty the budget
            hits.append(Hit(node, score, d, lx, status is MemoryStatus.ARCHIVED))
    hits.sort(key=lambda h: (-h.score, h.node.step, h.node.id))
    return hits


def pack(hits: Iterable[Hit], budget_tokens: int, k: int | None) -> list[Hit]:
    """Greedy fill: keep hits in rank order while they fit the budget (at most ``k``)."""
    out: list[Hit] = []
    used = 0
    for h in hits:
        if k is not None and len(out) >= k:
            break
        if used + h.node.weight <= budget_tokens:
            out.append(h)
            used += h.node.weight
    return out
