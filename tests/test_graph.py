"""Graph: provenance chains, cascades, leaves, task-safety, closure."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from mars_core.errors import ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import Edge, Predicate

D, R = Predicate.DERIVES_FROM, Predicate.REQUIRES


def g_of(*edges: tuple[str, Predicate, str]) -> MemoryGraph:
    g = MemoryGraph()
    for s, p, t in edges:
        g.add(Edge(source=s, predicate=p, target=t))
    return g


def test_ancestors_and_descendants() -> None:
    g = g_of(("s2", D, "s1"), ("s1", D, "e1"), ("s1", D, "e2"), ("x", D, "e2"))
    assert g.ancestors("s2") == ["s1", "e1", "e2"]
    assert sorted(g.descendants("e2")) == ["s1", "s2", "x"]
    assert g.dependents("e1") == ["s1"]


def test_cycles_in_derives_from_are_refused() -> None:
    g = g_of(("b", D, "a"), ("c", D, "b"))
    with pytest.raises(ValidationError):
        g.add(Edge(source="a", predicate=D, target="c"))
    g.add(Edge(source="a", predicate=Predicate.TEMPORAL_NEXT, target="c"))  # other predicates may


def test_leaves_depend_on_active_dependents() -> None:
    g = g_of(("s", D, "e"))
    active = {"s", "e"}
    assert not g.is_leaf("e", active.__contains__)
    assert g.is_leaf("s", active.__contains__)
    active.discard("s")
    assert g.is_leaf("e", active.__contains__)


def test_task_safety_and_equivalent_summary() -> None:
    g = g_of(("goal", R, "fact"))
    active = {"goal", "fact"}
    goals = {"goal"}
    assert g.task_protected("fact", goals.__contains__, active.__contains__)
    goals.clear()  # goal done
    assert not g.task_protected("fact", goals.__contains__, active.__contains__)
    goals.add("goal")
    g.add(Edge(source="summary", predicate=D, target="fact"))
    active.add("summary")
    assert not g.task_protected("fact", goals.__contains__, active.__contains__)


def test_remove_node_and_closure_violations() -> None:
    g = g_of(("s", D, "a"), ("s", D, "b"))
    assert g.closure_violations({"s", "a", "b"}) == []
    assert g.closure_violations({"s", "a"}) == [("s", "b")]
    removed = g.remove_node("a")
    assert [e.key for e in removed] == [("s", "derivesFrom", "a")]
    assert g.ancestors("s") == ["b"]


# --- the compact adjacency: one edge held alone, a dict from the second on ------------------

_KINDS = (Predicate.TEMPORAL_NEXT, Predicate.FRIEND_OF, Predicate.REQUIRES, D)


def _by_key(edges: list[Edge]) -> list[Edge]:
    return sorted(edges, key=lambda e: e.key)


def test_the_graph_answers_as_a_plain_set_of_edges_through_every_change() -> None:
    """Random adds (some replacing an edge of the same key), removals and node removals
    over a few nodes, so degrees go up and down through one; every answer is checked
    against the set of edges the changes leave."""
    rng = random.Random(17)
    nodes = [f"n{i}" for i in range(10)]
    g, kept = MemoryGraph(), dict[tuple[str, str, str], Edge]()
    for step in range(4000):
        roll = rng.random()
        if roll < 0.55:
            s, t = rng.sample(nodes, 2)
            e = Edge(source=s, predicate=rng.choice(_KINDS), target=t,
                     weight=rng.choice([1.0, 2.5]), step=step)
            try:
                g.check(e)
            except ValidationError:
                continue  # a derivesFrom cycle: refused before anything changes
            g.add(e)
            kept[e.key] = e
        elif roll < 0.9:
            s, t = rng.sample(nodes, 2)
            p = rng.choice(_KINDS)
            g.remove(s, p, t)  # present or not
            kept.pop((s, p.value, t), None)
        else:
            n = rng.choice(nodes)
            gone = {k: e for k, e in kept.items() if n in (k[0], k[2])}
            assert _by_key(g.remove_node(n)) == _by_key(list(gone.values()))
            kept = {k: e for k, e in kept.items() if k not in gone}
        if step % 40 == 0 or step > 3950:
            assert list(g.edges()) == _by_key(list(kept.values()))
            for n in nodes:
                for p in (None, *_KINDS):
                    assert g.out_edges(n, p) == _by_key(
                        [e for e in kept.values() if e.source == n and p in (None, e.predicate)])
                    assert g.in_edges(n, p) == _by_key(
                        [e for e in kept.values() if e.target == n and p in (None, e.predicate)])


def test_a_hub_holds_every_edge_and_lets_them_go_one_at_a_time() -> None:
    g = g_of(*((f"e{i}", Predicate.TEMPORAL_NEXT, "hub") for i in range(300)))
    g.add(Edge(source="hub", predicate=D, target="root"))
    assert len(g.in_edges("hub")) == 300 and g.ancestors("hub") == ["root"]
    g.add(Edge(source="e7", predicate=Predicate.TEMPORAL_NEXT, target="hub", weight=3.0))
    assert [e.weight for e in g.in_edges("hub") if e.source == "e7"] == [3.0]  # replaced
    for i in range(299):
        g.remove(f"e{i}", Predicate.TEMPORAL_NEXT, "hub")
    assert [e.key for e in g.in_edges("hub")] == [("e299", "temporalNext", "hub")]
    assert g.out_edges("e0") == [] and [e.key for e in g.out_edges("e299")] == \
        [("e299", "temporalNext", "hub")]
    g.remove("e299", Predicate.TEMPORAL_NEXT, "hub")
    g.remove("e299", Predicate.TEMPORAL_NEXT, "hub")  # twice: nothing left to remove
    assert g.in_edges("hub") == [] and [e.key for e in g.edges()] == [("hub", "derivesFrom",
                                                                        "root")]


def test_a_chain_of_memories_holds_no_dict_per_edge() -> None:
    """A conversation links each turn to the next: 2,000 turns, one edge in and one out
    each. The graph adds its two table slots per edge, not a dict and a key per edge and
    side (~600 bytes per edge before)."""
    n = 2000
    edges = [Edge(source=f"m{i}", predicate=Predicate.TEMPORAL_NEXT, target=f"m{i + 1}")
             for i in range(n)]
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        g = MemoryGraph()
        before = tracemalloc.get_traced_memory()[0]
        for e in edges:
            g.add(e)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    assert held / n < 200
    assert g.out_edges("m5") == [edges[5]] and g.in_edges("m5") == [edges[4]]


def test_retain_after_retain_holds_what_a_model_of_the_edges_says() -> None:
    """Retain looks only at what changed since the last one; what a graph with a source
    holds through loads, new edges, erasures and retains is what a plain model of held
    edges and complete nodes says."""
    rng = random.Random(3)
    nodes = [f"n{i}" for i in range(40)]
    for _ in range(60):
        stored = {(a, p, b): Edge(source=a, predicate=p, target=b) for a, b, p in (
            (*rng.sample(nodes, 2), rng.choice([Predicate.TEMPORAL_NEXT, D]))
            for _ in range(rng.randint(10, 120)))}
        g = MemoryGraph(source=lambda ids, s=stored: [  # type: ignore[misc]
            e for e in s.values() if e.source in ids or e.target in ids])
        held: set[tuple[str, Predicate, str]] = set()
        complete: set[str] = set()
        for _ in range(12):
            ids, op = rng.sample(nodes, rng.randint(0, 8)), rng.random()
            if op < 0.2 and len(ids) > 1:  # a new edge (written to the records too)
                key = (ids[0], Predicate.TEMPORAL_NEXT, ids[1])
                stored[key] = Edge(source=ids[0], predicate=key[1], target=ids[1])
                g.add(stored[key])
                held.add(key)
            elif op < 0.6:
                g.load(ids)
                wanted = set(ids) - complete
                held |= {k for k in stored if k[0] in wanted or k[2] in wanted}
                complete |= wanted
            elif ids:
                g.remove_node(ids[0])
                held = {k for k in held if ids[0] not in (k[0], k[2])}
            keep = set(rng.sample(nodes, rng.randint(0, 20)))
            g.retain(keep)
            held = {k for k in held if k[0] in keep or k[2] in keep}
            complete &= keep
            assert g.held() == len(held)
            assert [n for n in nodes if g.touches(n)] == \
                [n for n in nodes if any(n in (k[0], k[2]) for k in held)]
