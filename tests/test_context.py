"""Recall walk and rerank, evidence items, and the DMF §9.3 step 6 rendering."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars_core.budget import ApproxTokenCounter
from mars_core.errors import ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import (
    Edge,
    EpisodicPayload,
    MemoryNode,
    MemoryType,
    Predicate,
    Provenance,
)
from mars_core.reading.context import (
    HEADER_ACTIVE,
    HEADER_RECALLED,
    HEADER_STRUCTURED,
    HEADER_SUPPORT,
    RECALL_PREDICATES,
    EvidenceItem,
    Recalled,
    Validity,
    rank_recall,
    recall_walk,
    render_context,
    validity_of,
)

P = Predicate
SEM, EPI, SOC = MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.SOCIAL
COUNT = ApproxTokenCounter().count


def graph(*edges: tuple[str, Predicate, str]) -> MemoryGraph:
    g = MemoryGraph()
    for s, p, t in edges:
        g.add(Edge(source=s, predicate=p, target=t))
    return g


def active(*inactive: str) -> Callable[[str], bool]:
    return lambda nid: nid not in inactive


# --- recall_walk ------------------------------------------------------------------------------


def test_walk_follows_every_recall_predicate_both_ways() -> None:
    g = graph(("ana", P.FRIEND_OF, "bo"),  # out
              ("tom", P.FRIEND_OF, "ana"),  # in
              ("ana", P.IS_A, "person"),
              ("fact", P.DERIVES_FROM, "ep1"),
              ("ana", P.DERIVES_FROM, "ep1"),
              ("ana", P.ATTACHES_TO_GOAL, "goal"),
              ("goal2", P.REQUIRES, "ana"))
    ball = dict(recall_walk(g, ["ana"], active()))
    assert ball == {"ana": 0, "bo": 1, "tom": 1, "person": 1, "ep1": 1, "goal": 1, "goal2": 1,
                    "fact": 2}
    expected = {P.IS_A, P.FRIEND_OF, P.DERIVES_FROM, P.ATTACHES_TO_GOAL, P.REQUIRES}
    assert expected == RECALL_PREDICATES


def test_walk_skips_time_and_lineage_edges() -> None:
    g = graph(("e1", P.TEMPORAL_NEXT, "e2"), ("new", P.SUPERSEDES, "e1"),
              ("fix", P.CORRECTS, "e1"))
    assert recall_walk(g, ["e1"], active()) == [("e1", 0)]


def test_walk_order_is_breadth_first_and_stable() -> None:
    g = graph(("a", P.FRIEND_OF, "c"), ("a", P.FRIEND_OF, "b"), ("c", P.FRIEND_OF, "d"),
              ("z", P.IS_A, "a"))
    assert recall_walk(g, ["a"], active()) == [("a", 0), ("b", 1), ("c", 1), ("z", 1),
                                               ("d", 2)]


def test_walk_limits_and_inactive_nodes() -> None:
    g = graph(("a", P.FRIEND_OF, "b"), ("b", P.FRIEND_OF, "c"), ("c", P.FRIEND_OF, "d"),
              ("a", P.FRIEND_OF, "x"), ("x", P.FRIEND_OF, "y"))
    assert recall_walk(g, ["a"], active(), max_hops=1) == [("a", 0), ("b", 1), ("x", 1)]
    assert recall_walk(g, ["a"], active(), max_hops=0) == [("a", 0)]
    assert len(recall_walk(g, ["a"], active(), max_nodes=3)) == 3
    assert recall_walk(g, ["a"], active("x"), max_hops=3) == [("a", 0), ("b", 1), ("c", 2),
                                                             ("d", 3)]
    assert recall_walk(g, ["x", "a", "x"], active("x")) == [("a", 0), ("b", 1), ("c", 2)]
    assert recall_walk(g, ["a"], active(), predicates=[P.IS_A]) == [("a", 0)]
    assert recall_walk(g, [], active()) == []


def test_walk_several_starts_share_one_ball() -> None:
    g = graph(("a", P.FRIEND_OF, "m"), ("b", P.FRIEND_OF, "m"))
    assert recall_walk(g, ["a", "b"], active()) == [("a", 0), ("b", 0), ("m", 1)]


@pytest.mark.parametrize("kw", [{"max_hops": -1}, {"max_nodes": 0}, {"max_hops": 1.5}])
def test_walk_rejects_bad_limits(kw: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        recall_walk(MemoryGraph(), ["a"], active(), **kw)  # type: ignore[arg-type]


# --- rank_recall ------------------------------------------------------------------------------


def test_rank_by_goal_similarity_with_ties_by_hops_then_walk_order() -> None:
    nodes = [("a", 0), ("b", 1), ("c", 2), ("d", 1), ("e", 1)]
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [0.0, 2.0], "d": [1.0, 1.0],
               "e": [0.0, 3.0]}
    ranked = rank_recall(nodes, vectors, [0.0, 1.0])
    assert [r.node_id for r in ranked] == ["b", "e", "c", "d", "a"]
    assert ranked[0] == Recalled("b", 1, 1.0, 1.0)
    assert ranked[-1].similarity == 0.0


def test_rank_without_goal_keeps_the_walk() -> None:
    ranked = rank_recall([("a", 0), ("b", 2), ("c", 1)], {}, None)
    assert [(r.node_id, r.score) for r in ranked] == [("a", 1.0), ("c", 0.5), ("b", 1 / 3)]
    assert all(r.similarity is None for r in ranked)


def test_rank_purpose_limitation_missing_vectors_and_limit() -> None:
    nodes = [("a", 0), ("secret", 1), ("novec", 1)]
    ranked = rank_recall(nodes, {"a": [1, 0], "secret": [1, 0]}, [1, 0],
                         allowed=lambda nid: nid != "secret")
    assert [(r.node_id, r.score) for r in ranked] == [("a", 1.0), ("novec", 0.0)]
    assert [r.node_id for r in rank_recall(nodes, {}, None, limit=1)] == ["a"]
    assert rank_recall(nodes, {}, None, limit=0) == []
    with pytest.raises(ValidationError):
        rank_recall(nodes, {}, None, limit=-1)


# --- validity and evidence items --------------------------------------------------------------


def test_validity_of() -> None:
    g = graph(("v2", P.SUPERSEDES, "v1"), ("fix", P.CORRECTS, "v1"), ("v3", P.SUPERSEDES, "v2"))
    assert validity_of(g, "v1") is Validity.CORRECTED
    assert validity_of(g, "v1", exists=lambda n: n != "fix") is Validity.SUPERSEDED
    assert validity_of(g, "v2") is Validity.SUPERSEDED
    assert validity_of(g, "v3") is Validity.CURRENT
    assert validity_of(g, "v2", exists=lambda n: False) is Validity.CURRENT


def test_evidence_item_line_and_validation() -> None:
    naive = datetime(2023, 5, 8, 13, 56)
    item = EvidenceItem("n", EPI, "  I moved\n to   Lisbon ", 0.5, naive, "Caroline",
                        Validity.CORRECTED)
    assert item.created_at == naive.replace(tzinfo=UTC)
    assert item.line() == "- [episodic | 2023-05-08 13:56 UTC | Caroline | corrected] " \
                          "I moved to Lisbon"
    assert EvidenceItem(None, "task", "call Bo").line() == "- [task] call Bo"  # type: ignore[arg-type]
    for bad in ("", "   \n"):
        with pytest.raises(ValidationError):
            EvidenceItem("n", SEM, bad)
    with pytest.raises(ValueError):
        EvidenceItem("n", "nope", "text")  # type: ignore[arg-type]


def test_evidence_item_from_node() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    ep = MemoryNode(id="e1", type=EPI, content="I went hiking", weight=3, created_at=at,
                    payload=EpisodicPayload(participants=("Melanie",)))
    fact = MemoryNode(id="f1", type=SEM, content="Melanie likes hiking", weight=3,
                      created_at=at, provenance=Provenance(source="user"),
                      payload={"kind": "semantic"})
    assert EvidenceItem.from_node(ep, 0.7).source == "Melanie"
    item = EvidenceItem.from_node(fact, 0.9, validity=Validity.SUPERSEDED)
    assert (item.node_id, item.type, item.score, item.source, item.validity) == (
        "f1", SEM, 0.9, "user", Validity.SUPERSEDED)
    assert EvidenceItem.from_node(fact, source="Mel").source == "Mel"


# --- render_context -----------------------------------------------------------------------------

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
EVIDENCE = [
    EvidenceItem("f1", SEM, "Caroline lives in Boston", 0.9, AT, "user"),
    EvidenceItem("s1", SOC, "Ana is Caroline's sister", 0.6, AT, "user"),
]
SUPPORT = [
    EvidenceItem("e1", EPI, "I live in Boston now", 0.9, AT, "Caroline"),
    EvidenceItem("e0", EPI, "I live in Lisbon", 0.5, AT, "Caroline", Validity.SUPERSEDED),
]
ACTIVE = [
    EvidenceItem("e8", EPI, "Where do you live these days?", 0.0, AT, "Melanie"),
    EvidenceItem("e9", EPI, "Tell me about Boston!", 0.0, AT, "Melanie"),
]


def test_render_exact_layout() -> None:
    text = render_context(EVIDENCE, SUPPORT, ACTIVE, 1000, COUNT)
    assert text == "\n".join([
        "=== LONG-TERM MEMORY (RECALLED) ===",
        "=== STRUCTURED EVIDENCE ===",
        "- [semantic | 2023-05-08 13:56 UTC | user] Caroline lives in Boston",
        "- [social | 2023-05-08 13:56 UTC | user] Ana is Caroline's sister",
        "=== RAW SUPPORTING EVIDENCE ===",
        "- [episodic | 2023-05-08 13:56 UTC | Caroline] I live in Boston now",
        "- [episodic | 2023-05-08 13:56 UTC | Caroline | superseded] I live in Lisbon",
        "=== ACTIVE CONVERSATION ===",
        "- [episodic | 2023-05-08 13:56 UTC | Melanie] Where do you live these days?",
        "- [episodic | 2023-05-08 13:56 UTC | Melanie] Tell me about Boston!",
    ])
    assert (HEADER_RECALLED, HEADER_STRUCTURED, HEADER_SUPPORT, HEADER_ACTIVE) == (
        "=== LONG-TERM MEMORY (RECALLED) ===", "=== STRUCTURED EVIDENCE ===",
        "=== RAW SUPPORTING EVIDENCE ===", "=== ACTIVE CONVERSATION ===")


def test_recalled_section_omitted_without_evidence() -> None:
    assert render_context([], SUPPORT, ACTIVE, 1000, COUNT).splitlines() == [
        HEADER_ACTIVE, ACTIVE[0].line(), ACTIVE[1].line()]
    assert render_context([], [], [], 1000, COUNT) == ""


def test_empty_sections_print_no_header() -> None:
    text = render_context(EVIDENCE, [], [], 1000, COUNT)
    assert text.splitlines() == [HEADER_RECALLED, HEADER_STRUCTURED, EVIDENCE[0].line(),
                                 EVIDENCE[1].line()]
    assert HEADER_SUPPORT not in text and HEADER_ACTIVE not in text


def test_evidence_only() -> None:
    text = render_context(EVIDENCE, [], ACTIVE, 1000, COUNT, evidence_only=True)
    assert text.splitlines() == [HEADER_RECALLED, HEADER_STRUCTURED, EVIDENCE[0].line(),
                                 EVIDENCE[1].line()]
    assert render_context([], SUPPORT, ACTIVE, 1000, COUNT, evidence_only=True) == ""


def fitting(lines_dropped: list[str]) -> int:
    full = render_context(EVIDENCE, SUPPORT, ACTIVE, 1000, COUNT)
    kept = [ln for ln in full.splitlines() if ln not in lines_dropped]
    return COUNT("\n".join(kept))


def test_budget_drops_support_then_evidence_then_oldest_turns() -> None:
    drops = [SUPPORT[1].line(), SUPPORT[0].line(), EVIDENCE[1].line(), EVIDENCE[0].line()]
    for n in range(1, 4):
        budget = fitting(drops[:n])
        text = render_context(EVIDENCE, SUPPORT, ACTIVE, budget, COUNT)
        assert COUNT(text) <= budget
        assert not any(d in text.splitlines() for d in drops[:n])
        assert all(k in text.splitlines() for k in drops[n:])
    no_evidence = fitting([*drops, HEADER_RECALLED, HEADER_STRUCTURED, HEADER_SUPPORT])
    text = render_context(EVIDENCE, SUPPORT, ACTIVE, no_evidence, COUNT)
    assert text.splitlines() == [HEADER_ACTIVE, ACTIVE[0].line(), ACTIVE[1].line()]
    last_turn = COUNT(f"{HEADER_ACTIVE}\n{ACTIVE[1].line()}")
    assert render_context(EVIDENCE, SUPPORT, ACTIVE, last_turn, COUNT).splitlines() == [
        HEADER_ACTIVE, ACTIVE[1].line()]  # the older turn went first


def test_budget_drops_lowest_score_first_within_a_section() -> None:
    ev = [EvidenceItem("a", SEM, "alpha fact here", 0.2),
          EvidenceItem("b", SEM, "beta fact here", 0.9),
          EvidenceItem("c", SEM, "gamma fact here", 0.2)]
    full = render_context(ev, [], [], 1000, COUNT, evidence_only=True)
    budget = COUNT(full) - COUNT(ev[2].line())
    assert render_context(ev, [], [], budget, COUNT, evidence_only=True).splitlines() == [
        HEADER_RECALLED, HEADER_STRUCTURED, ev[0].line(), ev[1].line()]
    budget -= COUNT(ev[0].line())
    assert ev[1].line() in render_context(ev, [], [], budget, COUNT, evidence_only=True)


def test_budget_errors() -> None:
    assert render_context(EVIDENCE, SUPPORT, ACTIVE, 2, COUNT) == ""  # nothing fits
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValidationError):
            render_context(EVIDENCE, SUPPORT, ACTIVE, bad, COUNT)  # type: ignore[arg-type]


def test_render_is_deterministic() -> None:
    budget = fitting([SUPPORT[1].line()])
    assert {render_context(EVIDENCE, SUPPORT, ACTIVE, budget, COUNT) for _ in range(3)} == {
        render_context(list(EVIDENCE), list(SUPPORT), list(ACTIVE), budget, COUNT)}


WORDS = st.text(alphabet="abcdefgh ,.!\n", min_size=1, max_size=40).filter(str.strip)
ITEMS = st.lists(st.builds(EvidenceItem, st.none(), st.sampled_from(list(MemoryType)), WORDS,
                           st.floats(0, 1), st.none(), st.sampled_from([None, "user"])),
                 max_size=6)


@given(ITEMS, ITEMS, ITEMS, st.integers(5, 300), st.integers(1, 40))
def test_render_fits_keeps_whole_items_and_is_monotone(
        ev: list[EvidenceItem], sup: list[EvidenceItem], act: list[EvidenceItem],
        budget: int, extra: int) -> None:
    small = render_context(ev, sup, act, budget, COUNT)
    assert COUNT(small) <= budget
    allowed = {HEADER_RECALLED, HEADER_STRUCTURED, HEADER_SUPPORT, HEADER_ACTIVE}
    allowed |= {it.line() for it in [*ev, *sup, *act]}
    assert set(small.splitlines()) <= allowed
    big = render_context(ev, sup, act, budget + extra, COUNT)
    assert set(small.splitlines()) <= set(big.splitlines())
    if not any(it.line() in small.splitlines() for it in ev):
        assert HEADER_RECALLED not in small and HEADER_SUPPORT not in small
