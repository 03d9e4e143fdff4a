"""Graph: provenance chains, cascades, leaves, task-safety, closure."""

from __future__ import annotations

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
