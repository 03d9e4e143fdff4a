"""The typed memory graph and the feasible family F of seed 000 §3.1.

Edges are typed by :class:`~mars_core.model.Predicate`. ``derivesFrom`` edges form the
dependency DAG ``D = (N, E_dep)``: a derived node (summary, extracted fact, update)
points to the nodes it presupposes. A set S is *provenance-closed* when every node's
dependency ancestors lie in S (seed 000 §3.1, Lemma 1); MaRS counts a node as kept when
it is active **or archived** (DESIGN §3 invariant 2), so only erasure can break closure,
and :meth:`MemoryGraph.closure_violations` is what the store repairs after an erasure.

Task-safety (seed 000 §3.2.7): prerequisites of active goals — targets of ``requires``
edges from task nodes whose status is pending or active — are not evicted unless an
equivalent summary exists (an active node that ``derivesFrom`` the prerequisite).

Examples:
    >>> from mars_core.model import Edge, Predicate
    >>> g = MemoryGraph()
    >>> g.add(Edge(source="s", predicate=Predicate.DERIVES_FROM, target="a"))
    >>> g.add(Edge(source="a", predicate=Predicate.DERIVES_FROM, target="r"))
    >>> sorted(g.ancestors("s")), sorted(g.descendants("r"))
    (['a', 'r'], ['a', 's'])
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Iterator

from mars_core.errors import ValidationError
from mars_core.model import Edge, Predicate

__all__ = ["MemoryGraph"]

_DEP = Predicate.DERIVES_FROM
_REPLACES = frozenset({Predicate.SUPERSEDES, Predicate.CORRECTS})


class MemoryGraph:
    """Adjacency lists of typed edges over node ids (a view rebuilt on open).

    The graph knows ids only; callers pass predicates such as ``is_active`` so the
    graph stays independent of where node state lives.
    """

    def __init__(self) -> None:
        self._out: dict[str, dict[tuple[Predicate, str], Edge]] = defaultdict(dict)
        self._in: dict[str, dict[tuple[Predicate, str], Edge]] = defaultdict(dict)

    # --- mutation ----------------------------------------------------------------------

    def check(self, edge: Edge) -> None:
        """Raise ``ValidationError`` if adding ``edge`` would create a derivesFrom cycle."""
        if edge.predicate is _DEP and (
            edge.source == edge.target or edge.source in self.ancestors(edge.target)
        ):
            raise ValidationError(
                f"derivesFrom {edge.source} -> {edge.target} would create a provenance cycle"
            )

    def check_link(self, edge: Edge) -> None:
        """Raise ``ValidationError`` if a new link would close a cycle of ``derivesFrom``
        edges, or of ``supersedes``/``corrects`` edges (a memory replacing what replaces
        it); an import refuses the same cycles.

        Examples:
            >>> g = MemoryGraph()
            >>> g.add(Edge(source="new", predicate=Predicate.SUPERSEDES, target="old"))
            >>> g.check_link(Edge(source="old", predicate=Predicate.CORRECTS, target="new"))
            Traceback (most recent call last):
            ...
            mars_core.errors.ValidationError: corrects old -> new would create a replacement cycle
        """
        self.check(edge)
        if edge.predicate in _REPLACES and edge.source in self._walk(
                edge.target, lambda n: (e.target for e in self.out_edges(n)
                                        if e.predicate in _REPLACES)):
            raise ValidationError(f"{edge.predicate.value} {edge.source} -> {edge.target} "
                                  f"would create a replacement cycle")

    def add(self, edge: Edge) -> None:
        """Add (or replace) an edge; validates acyclicity of derivesFrom."""
        self.check(edge)
        self._out[edge.source][(edge.predicate, edge.target)] = edge
        self._in[edge.target][(edge.predicate, edge.source)] = edge

    def remove(self, source: str, predicate: Predicate, target: str) -> None:
        """Remove one edge if present."""
        self._out.get(source, {}).pop((predicate, target), None)
        self._in.get(target, {}).pop((predicate, source), None)

    def remove_node(self, node_id: str) -> list[Edge]:
        """Remove every edge touching ``node_id``; returns the removed edges."""
        removed = list(self._out.pop(node_id, {}).values())
        removed += list(self._in.pop(node_id, {}).values())
        for e in removed:
            self._in.get(e.target, {}).pop((e.predicate, e.source), None)
            self._out.get(e.source, {}).pop((e.predicate, e.target), None)
        return removed

    # --- queries -------------------------------------------------------------------------

    def out_edges(self, node_id: str, predicate: Predicate | None = None) -> list[Edge]:
        """Edges leaving ``node_id`` (optionally of one predicate), in a stable order."""
        edges = self._out.get(node_id, {}).values()
        return sorted((e for e in edges if predicate is None or e.predicate is predicate),
                      key=lambda e: e.key)

    def in_edges(self, node_id: str, predicate: Predicate | None = None) -> list[Edge]:
        """Edges entering ``node_id`` (optionally of one predicate), in a stable order."""
        edges = self._in.get(node_id, {}).values()
        return sorted((e for e in edges if predicate is None or e.predicate is predicate),
                      key=lambda e: e.key)

    def edges(self) -> Iterator[Edge]:
        """Every edge, in a stable order."""
        for src in sorted(self._out):
            yield from self.out_edges(src)

    def _walk(self, start: str, step: Callable[[str], Iterable[str]]) -> list[str]:
        seen: set[str] = set()
        order: list[str] = []
        queue = deque(step(start))
        while queue:
            nid = queue.popleft()
            if nid in seen or nid == start:
                continue
            seen.add(nid)
            order.append(nid)
            queue.extend(step(nid))
        return order

    def ancestors(self, node_id: str) -> list[str]:
        """What ``node_id`` derives from, transitively (its provenance chain), BFS order."""
        return self._walk(node_id, lambda n: (e.target for e in self.out_edges(n, _DEP)))

    def descendants(self, node_id: str) -> list[str]:
        """Everything derived from ``node_id``, transitively (an erasure cascade), BFS order."""
        return self._walk(node_id, lambda n: (e.source for e in self.in_edges(n, _DEP)))

    def dependents(self, node_id: str) -> list[str]:
        """Direct dependents: nodes with a derivesFrom edge to ``node_id``."""
        return [e.source for e in self.in_edges(node_id, _DEP)]

    def is_leaf(self, node_id: str, is_active: Callable[[str], bool]) -> bool:
        """True when no active node derives from ``node_id`` (a leaf of the forest)."""
        return not any(is_active(d) for d in self.dependents(node_id))

    def task_protected(
        self,
        node_id: str,
        is_active_goal: Callable[[str], bool],
        is_active: Callable[[str], bool],
    ) -> bool:
        """Task-safety: ``node_id`` is a prerequisite of an active goal with no summary.

        A prerequisite is covered ("an equivalent summary exists") when an active node
        other than the goal itself derives from it.
        """
        goals = [e.source for e in self.in_edges(node_id, Predicate.REQUIRES)]
        if not any(is_active_goal(g) for g in goals):
            return False
        return not any(is_active(d) for d in self.dependents(node_id))

    def closure_violations(self, kept: Collection[str]) -> list[tuple[str, str]]:
        """Pairs (node, missing predecessor) for kept nodes whose derivesFrom target is gone."""
        missing: list[tuple[str, str]] = []
        for nid in sorted(kept):
            missing.extend(
                (nid, e.target) for e in self.out_edges(nid, _DEP) if e.target not in kept
            )
        return missing
