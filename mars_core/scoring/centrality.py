"""Centrality for the MaRS density: personalised PageRank over the semantic ∪ social
subgraph (:mod:`mars_core.scoring.density` states the choices)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mars_core.decay import FloatArray
from mars_core.errors import ValidationError
from mars_core.model import Edge, Predicate
from mars_core.scoring._arrays import _vector

__all__ = ["CENTRALITY_PREDICATES", "SparseAdjacency", "centrality", "personalized_pagerank"]

CENTRALITY_PREDICATES: tuple[Predicate, ...] = (Predicate.IS_A, Predicate.FRIEND_OF)
"""Edges of the semantic ∪ social subgraph (seed 000 §3.2.5, §4.2): isA and friendOf."""


# --- centrality: personalised PageRank ----------------------------------------------------


@dataclass(frozen=True)
class SparseAdjacency:
    """A weighted graph over ``n`` nodes as coordinate arrays (``src[k] -> dst[k]``).

    Examples:
        >>> g = SparseAdjacency.from_dense([[0, 1], [1, 0]])
        >>> g.n, g.src.tolist(), g.dst.tolist()
        (2, [0, 1], [1, 0])
    """

    n: int
    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    weight: FloatArray

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValidationError("n must be >= 0")
        if not (self.src.shape == self.dst.shape == self.weight.shape and self.src.ndim == 1):
            raise ValidationError("src, dst and weight must be 1-d arrays of one length")
        if self.src.size and (
            min(self.src.min(), self.dst.min()) < 0 or max(self.src.max(), self.dst.max()) >= self.n
        ):
            raise ValidationError("edge endpoints must lie in [0, n)")
        if self.weight.size and (not np.all(np.isfinite(self.weight)) or np.any(self.weight < 0)):
            raise ValidationError("edge weights must be finite and >= 0")

    @classmethod
    def from_dense(cls, matrix: ArrayLike) -> SparseAdjacency:
        """From an (n, n) non-negative weight matrix (entry [i, j] = weight of i -> j)."""
        a = np.asarray(matrix, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValidationError(f"adjacency must be a square matrix, got shape {a.shape}")
        src, dst = np.nonzero(a)
        return cls(a.shape[0], src.astype(np.int64), dst.astype(np.int64), a[src, dst])

    @classmethod
    def from_edges(
        cls,
        ids: Sequence[str],
        edges: Iterable[Edge],
        predicates: Collection[Predicate] = CENTRALITY_PREDICATES,
        *,
        undirected: bool = True,
    ) -> SparseAdjacency:
        """Build the subgraph of ``edges`` with the given predicates among ``ids``.

        Edges touching ids outside ``ids`` are ignored; with ``undirected`` (default)
        each edge counts in both directions (friendOf is symmetric in meaning, and an
        isA class is central because many instances link to it).

        Examples:
            >>> e = Edge(source="a", predicate=Predicate.FRIEND_OF, target="b")
            >>> SparseAdjacency.from_edges(["a", "b", "c"], [e]).to_dense().tolist()
            [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
        """
        index = {node_id: k for k, node_id in enumerate(ids)}
        wanted = frozenset(predicates)
        src: list[int] = []
        dst: list[int] = []
        wt: list[float] = []
        for e in edges:
            i, j = index.get(e.source), index.get(e.target)
            if e.predicate not in wanted or i is None or j is None:
                continue
            src.append(i)
            dst.append(j)
            wt.append(e.weight)
            if undirected:
                src.append(j)
                dst.append(i)
                wt.append(e.weight)
        return cls(len(ids), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                   np.array(wt, dtype=np.float64))

    def to_dense(self) -> FloatArray:
        """The (n, n) weight matrix (parallel edges add up)."""
        a = np.zeros((self.n, self.n))
        np.add.at(a, (self.src, self.dst), self.weight)
        return a

    def degree(self) -> FloatArray:
        """Weighted in-degree plus out-degree of every node."""
        out = np.bincount(self.src, weights=self.weight, minlength=self.n)
        inn = np.bincount(self.dst, weights=self.weight, minlength=self.n)
        return np.asarray(out + inn, dtype=np.float64)


def _as_sparse(adjacency: ArrayLike | SparseAdjacency) -> SparseAdjacency:
    if isinstance(adjacency, SparseAdjacency):
        return adjacency
    return SparseAdjacency.from_dense(adjacency)


def _restart_vector(n: int, personalization: ArrayLike | None) -> FloatArray:
    if personalization is None:
        return np.full(n, 1.0 / n)
    p = _vector(personalization, "personalization")
    if p.shape[0] != n:
        raise ValidationError(f"personalization has {p.shape[0]} entries for {n} nodes")
    total = float(p.sum())
    return np.full(n, 1.0 / n) if total <= 0 else p / total


def personalized_pagerank(
    adjacency: ArrayLike | SparseAdjacency,
    personalization: ArrayLike | None = None,
    *,
    damping: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> FloatArray:
    """Personalised PageRank by power iteration; returns a probability vector.

    ``r = (1-d)·p + d·(Pᵀ r + (mass on dangling nodes)·p)`` where ``P`` is the
    row-normalised adjacency and ``p`` the restart (personalisation) distribution.
    Dangling nodes (no out-edge) send their mass back to ``p``, so the result always
    sums to 1. Each iteration costs O(edges).

    Args:
        adjacency: an (n, n) non-negative matrix (``[i, j]`` = weight of i -> j) or a
            :class:`SparseAdjacency`.
        personalization: non-negative restart weights (normalised here); None or all
            zero means uniform, i.e. ordinary PageRank.
        damping: probability d of following an edge, in (0, 1).
        tol: stop when the L1 change of an iteration is below ``tol``.
        max_iter: iteration cap.

    Raises:
        ValidationError: a malformed adjacency or personalisation, or a bad damping.

    Examples:
        >>> r = personalized_pagerank([[0, 1, 1], [1, 0, 0], [1, 0, 0]])   # star, centre 0
        >>> int(r.argmax()), round(float(r.sum()), 6)
        (0, 1.0)
    """
    if not 0.0 < damping < 1.0:
        raise ValidationError(f"damping must lie in (0, 1), got {damping!r}")
    g = _as_sparse(adjacency)
    n = g.n
    if n == 0:
        return np.zeros(0)
    p = _restart_vector(n, personalization)
    out_w = np.bincount(g.src, weights=g.weight, minlength=n)
    dangling = out_w <= 0
    share = np.divide(g.weight, out_w[g.src], out=np.zeros_like(g.weight), where=out_w[g.src] > 0)
    r = p.copy()
    for _ in range(max_iter):
        flow = np.bincount(g.dst, weights=r[g.src] * share, minlength=n)
        new = damping * (flow + float(r[dangling].sum()) * p) + (1.0 - damping) * p
        change = float(np.abs(new - r).sum())
        r = new
        if change < tol:
            break
    return np.asarray(r / r.sum(), dtype=np.float64)


def centrality(
    adjacency: ArrayLike | SparseAdjacency,
    personalization: ArrayLike | None = None,
    *,
    damping: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> FloatArray:
    """The centrality feature cent(i; G) in [0, 1]: PPR divided by its largest value.

    Nodes without any edge in the graph get 0 (they are outside the semantic ∪ social
    subgraph the seed ranks); with no edge at all every node gets 0.

    Examples:
        >>> centrality([[0, 1, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]).round(3).tolist()
        [1.0, 0.528, 0.528, 0.0]
    """
    g = _as_sparse(adjacency)
    if g.n == 0:
        return np.zeros(0)
    connected = g.degree() > 0
    if not connected.any():
        return np.zeros(g.n)
    r = personalized_pagerank(g, personalization, damping=damping, tol=tol, max_iter=max_iter)
    r = np.where(connected, r, 0.0)
    return np.asarray(r / r.max(), dtype=np.float64)
