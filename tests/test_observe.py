"""observe / recall / render_context through a real store."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from invariants import check_invariants

from mars_core import MemoryStatus, MemoryStore, Predicate, ValidationError
from mars_core.testing import StoreFactory, memory_graph

TURNS = [
    ("user", "Hi, I'm Maya. I live in Lisbon and I work at Tidewave."),
    ("assistant", "Nice to meet you Maya!"),
    ("user", "My sister Ines is a nurse in Porto."),
    ("user", "I love green tea."),
    ("user", "Remind me to book a table for Ines's birthday on Friday."),
    ("user", "Actually, I live in Porto now."),
]



def graph_of(store: MemoryStore, namespace: str) -> Any:
    """The edge graph of a namespace's views."""
    return memory_graph(store, namespace)

def play(store: MemoryStore, ns: str = "maya") -> list[list[str]]:
    out = []
    for role, text in TURNS:
        nodes = store.observe(role, text, namespace=ns, conversation_id="c1",
                              speaker="Maya" if role == "user" else None)
        out.append([n.id for n in nodes])
    return out


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=bytes(range(32)), nlp="rules", budget=4000)


def test_one_episode_per_turn_and_extracted_memories(mk: StoreFactory) -> None:
    s = mk()
    ids = play(s)
    episodes = s.list("maya", type="episodic")
    assert [e.id for e in episodes] == [turn[0] for turn in ids]
    contents = {n.content for n in s.list("maya", status=None) if n.type.value != "episodic"}
    assert {"Maya lives in Lisbon", "Maya works at Tidewave", "Ines is Maya's sister",
            "Maya loves green tea", "Maya lives in Porto"} <= contents
    task = next(n for n in s.list("maya", type="task"))
    assert task.payload.deadline is not None  # "on Friday" relative to the clock
    # temporalNext chains the episodes in order
    for a, b in itertools.pairwise(episodes):
        nxt = graph_of(s, a.namespace).out_edges(a.id, Predicate.TEMPORAL_NEXT)
        assert [e.target for e in nxt] == [b.id]
    # every extracted memory derives from its episode
    for turn in ids:
        for nid in turn[1:]:
            assert s.explain(nid, namespace="maya").provenance[0].node_id == turn[0]
    check_invariants(s)


def test_a_correction_archives_the_old_fact(mk: StoreFactory) -> None:
    s = mk()
    play(s)
    lisbon = next(n for n in s.list("maya", status=None) if n.content == "Maya lives in Lisbon")
    assert lisbon.status is MemoryStatus.ARCHIVED
    porto = next(n for n in s.list("maya") if n.content == "Maya lives in Porto")
    assert graph_of(s, porto.namespace).out_edges(porto.id, Predicate.CORRECTS)
    assert "corrected by the newer memory" in s.explain(lisbon.id, namespace="maya").rationale


def test_recall_walks_around_an_entity_and_a_goal(mk: StoreFactory) -> None:
    s = mk()
    play(s)
    about_ines = [h.text for h in s.recall("Ines", namespace="maya")]
    assert "Ines is Maya's sister" in about_ines
    for_goal = [h.text for h in s.recall(goal="birthday table", namespace="maya")]
    assert any("book a table" in t for t in for_goal)
    with pytest.raises(ValidationError):
        s.recall(namespace="maya")


def test_render_context_layout_and_budget(mk: StoreFactory) -> None:
    s = mk()
    play(s)
    text = s.render_context("Where does Maya live?", namespace="maya", conversation="c1",
                            budget_tokens=400, active_turns=2)
    lines = text.splitlines()
    assert lines[0] == "=== LONG-TERM MEMORY (RECALLED) ==="
    assert lines.index("=== STRUCTURED EVIDENCE ===") < lines.index(
        "=== RAW SUPPORTING EVIDENCE ===") < lines.index("=== ACTIVE CONVERSATION ===")
    assert "Maya lives in Porto" in text and "| corrected] Maya lives in Lisbon" in text
    assert s.token_counter.count(text) <= 400
    small = s.render_context("Where does Maya live?", namespace="maya", conversation="c1",
                             budget_tokens=60)
    assert s.token_counter.count(small) <= 60


def test_observe_survives_reopen_with_the_same_links(mk: StoreFactory, tmp_path: Path) -> None:
    with mk(path=tmp_path / "db") as s:
        play(s)
        before = s.export_jsonld()
    with mk(path=tmp_path / "db") as s2:
        assert s2.export_jsonld() == before
        new = s2.observe("user", "I moved again, I live in Faro now.", namespace="maya",
                         conversation_id="c1", speaker="Maya")
        prev = graph_of(s2, 'maya').in_edges(new[0].id, Predicate.TEMPORAL_NEXT)
        assert [e.source for e in prev] == [s2.list("maya", type="episodic")[-2].id]
        check_invariants(s2)


def test_reopened_turns_share_their_strings_and_keep_their_own_values(mk: StoreFactory,
                                                                      tmp_path: Path) -> None:
    """A reopened conversation's episodes hold one string per conversation, session,
    source and speaker, one payload per speaker, and their links hold the episodes' own
    ids (peak RSS); each turn keeps its own turn, session and speaker."""
    speakers = ["Maya", None, "Ines", "Maya", None, "Ines"]
    with mk(path=tmp_path / "db") as s:
        for i, (who, (_, text)) in enumerate(zip(speakers, TURNS, strict=True)):
            s.observe("user" if who else "assistant", text, namespace="maya",
                      conversation_id="c1", session_id=f"s{i // 3}", turn=i, speaker=who)
    with mk(path=tmp_path / "db") as s2:
        eps = s2.list("maya", type="episodic")
        assert [(e.provenance.turn, e.provenance.session_id, e.speaker) for e in eps] == \
            [(i, f"s{i // 3}", who) for i, who in enumerate(speakers)]
        assert len({id(e.provenance.conversation_id) for e in eps}) == 1
        assert eps[0].provenance.session_id is eps[2].provenance.session_id
        assert eps[0].provenance.source is eps[3].provenance.source
        assert eps[0].payload is eps[3].payload and eps[2].payload is eps[5].payload
        assert eps[0].payload is not eps[2].payload
        graph = graph_of(s2, "maya")
        for before, after in itertools.pairwise(eps):
            (link,) = graph.in_edges(after.id, Predicate.TEMPORAL_NEXT)
            assert link.source is before.id and link.target is after.id
        check_invariants(s2)
