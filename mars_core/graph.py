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

from collections import deque
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Sequence

from mars_core.errors import ValidationError
from mars_core.model import Edge, Predicate

__all__ = ["MemoryGraph"]

_DEP = Predicate.DERIVES_FROM
_REPLACES = frozenset({Predicate.SUPERSEDES, Predicate.CORRECTS})

_Adjacent = Edge | dict[tuple[Predicate, str], Edge]
"""A node's edges in one direction: the edge itself while it has one (most memories:
one ``temporalNext`` each way), a dict keyed by ``(predicate, other end)`` from the
second on."""


class _Side:
    """The edges of every node in one direction, leaving it (``outgoing``) or entering
    it, each node's keyed by ``(predicate, the edge's other end)``.

    A node with one edge holds the edge alone, not a dict of one (a dict and its key
    cost ~280 bytes per edge and direction); a node with more holds a dict, so adding,
    finding and removing an edge stay O(1) at any degree.
    """

    __slots__ = ("_by", "_outgoing")

    def __init__(self, *, outgoing: bool) -> None:
        self._by: dict[str, _Adjacent] = {}
        self._outgoing = outgoing

    def _ends(self, edge: Edge) -> tuple[str, tuple[Predicate, str]]:
        """The node ``edge`` is filed under and its key there."""
        if self._outgoing:
            return edge.source, (edge.predicate, edge.target)
        return edge.target, (edge.predicate, edge.source)

    def put(self, edge: Edge) -> None:
        """File ``edge`` (replacing an edge with its key)."""
        node, key = self._ends(edge)
        held = self._by.get(node)
        if held is None:
            self._by[node] = edge
        elif isinstance(held, Edge):
            mine = self._ends(held)[1]
            self._by[node] = edge if mine == key else {mine: held, key: edge}
        else:
            held[key] = edge

    def pop(self, node: str, key: tuple[Predicate, str]) -> None:
        """Drop ``node``'s edge of ``key`` if it has one."""
        held = self._by.get(node)
        if held is None:
            return
        if isinstance(held, Edge):
            if self._ends(held)[1] == key:
                del self._by[node]
            return
        held.pop(key, None)
        if len(held) == 1:  # back to the edge alone (a dict always holds two or more)
            self._by[node] = next(iter(held.values()))

    def of(self, node: str) -> Iterable[Edge]:
        """``node``'s edges (no order): a tuple when it has none or one."""
        held = self._by.get(node)
        if held is None:
            return ()
        return (held,) if isinstance(held, Edge) else held.values()

    def take(self, node: str) -> list[Edge]:
        """Drop and return ``node``'s edges (their other ends still hold them)."""
        held = self._by.pop(node, None)
        if held is None:
            return []
        return [held] if isinstance(held, Edge) else list(held.values())

    def nodes(self) -> Iterable[str]:
        """The nodes with an edge on this side."""
        return self._by.keys()


EdgeSource = Callable[[Sequence[str]], Iterable[Edge]]
"""Reads every edge that leaves or enters one of some nodes (from the record store)."""


class MemoryGraph:
    """Adjacency lists of typed edges over node ids (a view rebuilt on open).

    The graph knows ids only; callers pass predicates such as ``is_active`` so the
    graph stays independent of where node state lives.

    With a ``source``, the graph holds only part of a larger one: the edges of the
    nodes it was told are *complete* (:meth:`complete`: a namespace's active memories),
    and reads a node's edges from ``source`` the first time a query asks for them. So a
    walk may go anywhere in the history while only what it touched is held, and
    :meth:`retain` lets go of it again.

    Args:
        source: where the edges it does not hold are (``None``: it holds them all).

    Examples:
        >>> stored = [Edge(source="b", predicate=Predicate.DERIVES_FROM, target="a")]
        >>> g = MemoryGraph(source=lambda ids: [e for e in stored
        ...                                     if e.source in ids or e.target in ids])
        >>> g.complete(["c"]); g.held()
        0
        >>> g.ancestors("b"), g.held()
        (['a'], 1)
        >>> g.retain({"c"}); g.held()
        0
    """

    def __init__(self, source: EdgeSource | None = None) -> None:
        self._out = _Side(outgoing=True)
        self._in = _Side(outgoing=False)
        self._source = source
        self._complete: set[str] = set()
        self._retained = False  # a retain ran: from then on only changes are looked at
        self._since: set[str] = set()  # nodes given an edge or completeness since then

    # --- what is held ----------------------------------------------------------------------

    def complete(self, node_ids: Iterable[str]) -> None:
        """Mark nodes whose every edge the graph holds (or will be given)."""
        ids = list(node_ids)
        self._complete.update(ids)
        if self._retained:
            self._since.update(ids)

    def load(self, node_ids: Iterable[str]) -> None:
        """Read the edges of the nodes not complete yet from the source, in one read."""
        wanted = [n for n in dict.fromkeys(node_ids) if n not in self._complete]
        if self._source is None or not wanted:
            return
        for edge in self._source(wanted):
            self._put(edge)  # read from the records: checked when it was written
        self._complete.update(wanted)
        if self._retained:
            self._since.update(wanted)

    def retain(self, keep: Container[str], left: Iterable[str] | None = None) -> None:
        """Let go of every edge with no end in ``keep``, and of the completeness of the
        nodes outside it (their edges are read again when asked for).

        ``left``: the nodes that left ``keep`` since the last retain. Given, a retain
        looks only at what can have changed since the last one — those nodes, and those
        given an edge or completeness since (every other edge held has an end in both
        keeps) —, so its cost follows the change, not what is kept; ``None`` (and the
        first retain): every node the graph holds is looked at."""
        if self._source is None:
            return
        if left is None or not self._retained:
            check = [n for n in [*self._out.nodes(), *self._in.nodes()] if n not in keep]
            self._complete = {n for n in self._complete if n in keep}
        else:
            check = [n for n in dict.fromkeys([*left, *self._since]) if n not in keep]
            self._complete.difference_update(check)
        for node in check:
            for edge in list(self._out.of(node)) + list(self._in.of(node)):
                if edge.source not in keep and edge.target not in keep:
                    self.remove(edge.source, edge.predicate, edge.target)
        self._retained, self._since = True, set()

    def touches(self, node_id: str) -> bool:
        """Whether an edge the graph holds leaves or enters ``node_id`` (no read)."""
        return bool(self._out.of(node_id)) or bool(self._in.of(node_id))

    def held(self) -> int:
        """How many edges the graph holds."""
        return sum(1 for node in list(self._out.nodes()) for _ in self._out.of(node))

    def _ensure(self, node_id: str) -> None:
        if self._source is not None and node_id not in self._complete:
            self.load([node_id])

    def _put(self, edge: Edge) -> None:
        self._out.put(edge)
        self._in.put(edge)
        if self._retained:
            self._since.update((edge.source, edge.target))

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
        self._put(edge)

    def remove(self, source: str, predicate: Predicate, target: str) -> None:
        """Remove one edge if present."""
        self._out.pop(source, (predicate, target))
        self._in.pop(target, (predicate, source))

    def remove_node(self, node_id: str) -> list[Edge]:
        """Remove every edge touching ``node_id``; returns the removed edges."""
        removed = self._out.take(node_id) + self._in.take(node_id)
        for e in removed:
            self._in.pop(e.target, (e.predicate, e.source))
            self._out.pop(e.source, (e.predicate, e.target))
        return removed

    # --- queries -------------------------------------------------------------------------

    def out_edges(self, node_id: str, predicate: Predicate | None = None) -> list[Edge]:
        """Edges leaving ``node_id`` (optionally of one predicate), in a stable order."""
        self._ensure(node_id)
        return _listed(self._out.of(node_id), predicate)

    def in_edges(self, node_id: str, predicate: Predicate | None = None) -> list[Edge]:
        """Edges entering ``node_id`` (optionally of one predicate), in a stable order."""
        self._ensure(node_id)
        return _listed(self._in.of(node_id), predicate)

    def edges(self) -> Iterator[Edge]:
        """Every edge held, in a stable order (with a source: those of the complete
        nodes and of what queries read)."""
        for src in sorted(self._out.nodes()):
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


def _listed(edges: Iterable[Edge], predicate: Predicate | None) -> list[Edge]:
    """``edges`` (of one predicate, or all) in a stable order: sorted by key, unless
    there is at most one (most nodes' edges in one direction)."""
    if isinstance(edges, tuple):
        return [e for e in edges if predicate is None or e.predicate is predicate]
    return sorted((e for e in edges if predicate is None or e.predicate is predicate),
                  key=lambda e: e.key)
