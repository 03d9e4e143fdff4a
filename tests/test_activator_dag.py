"""The Activator's speaker-scoped sub-query DAG (seed 002 §2.2; docs/concepts/control.md).

A question about one speaker of the namespace gets a child node restricted to that
speaker's own statements, and a grandchild asking the question in their voice.
"""

from __future__ import annotations

from collections.abc import Callable

import pydantic
import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.audit import AuditOp
from mars_core.control import Activator, ActivatorConfig
from mars_core.control.memory import Buffer
from mars_core.control.text import in_own_voice, speaker_of, subject_of

Store = Callable[..., MemoryStore]

ANA_OWN = ("Ana: I just signed up for a pottery class, it calms me down.",
           "Ana: We went camping at the beach with the kids last weekend.")


def _dialogue(store: MemoryStore) -> None:
    """Bo talks about Ana's hobbies a lot; Ana states hers once each, in the first person."""
    for i in range(6):
        store.add(f"Bo: Ana, your hobbies sound fun! Tell me about the hobbies you have, "
                  f"Ana, number {i}.", type="episodic")
        store.add(f"Ana: Thanks Bo, see you on day {i}!", type="episodic")
    for text in ANA_OWN:
        store.add(text, type="episodic")
    store.add("Ana's favourite hobby magazine is Clay Monthly", type="semantic")  # no speaker


def _cfg(**kw: object) -> ActivatorConfig:
    return ActivatorConfig.model_validate({"retention_floor": 1.0, **kw})


def test_subject_question_gets_a_scoped_child_and_an_own_voice_grandchild(
        make_store: Store) -> None:
    store = make_store()
    _dialogue(store)
    q = "What hobbies does Ana have?"
    act = Activator(store, "default", _cfg()).activate(q, Buffer.empty(), 100, 10_000)
    root, scoped, voice = act.dag[:3]
    assert (root.parents, root.speaker) == ((), None)
    assert (scoped.text, scoped.parents, scoped.speaker) == (q, (0,), "Ana")
    assert (voice.text, voice.parents, voice.speaker) == ("What hobbies do I have?", (1,), "Ana")
    texts = {n.id: n.content for n in store.list()}
    for node in (scoped, voice):
        assert node.hits and all(speaker_of(texts[i]) in ("Ana", None) for i in node.hits)
    assert any(speaker_of(texts[i]) == "Bo" for i in root.hits)  # the root is unrestricted
    assert not any(n.parents == (1,) and n.text.startswith(q + " ") for n in act.dag)  # no hop


def test_scoped_dag_recalls_the_subjects_statements_the_single_query_misses(
        make_store: Store) -> None:
    store = make_store()
    _dialogue(store)
    q = "What hobbies does Ana have?"
    budget = 66  # three of Bo's 22-token turns fill it exactly
    single = [h.text for h in store.retrieve(q, budget_tokens=budget, read_only=True,
                                             relative_cutoff=0)]
    assert not set(ANA_OWN) & set(single)  # Bo's turns name Ana and "hobbies": they win
    act = Activator(store, "default", _cfg()).activate(q, Buffer.empty(), 100, budget)
    got = [i.text for i in act.buffer.items]
    assert set(ANA_OWN) & set(got)
    assert not any(speaker_of(t) == "Bo" for t in got)
    assert act.buffer.tokens <= budget
    off = Activator(store, "default", _cfg(speaker_scope=False)).activate(
        q, Buffer.empty(), 100, budget)
    assert all(n.speaker is None for n in off.dag)
    assert not set(ANA_OWN) & {i.text for i in off.buffer.items}


def test_no_scope_without_exactly_one_named_speaker(make_store: Store) -> None:
    store = make_store()
    _dialogue(store)
    act = Activator(store, "default", _cfg())
    for q in ("What hobbies do Ana and Bo share?", "What hobbies are popular?"):
        dag = act.activate(q, Buffer.empty(), 50, 500).dag
        assert not any(n.speaker for n in dag if n.text == q or 0 in n.parents)
    parts = Activator(store, "default", _cfg(split_conjunctions=True)).activate(
        "What hobbies does Ana have and what does Bo ask?", Buffer.empty(), 50, 500).dag
    scoped = {(n.speaker, n.text) for n in parts if n.speaker}
    assert scoped == {("Ana", "What hobbies does Ana have"), ("Ana", "What hobbies do I have"),
                      ("Bo", "what does Bo ask"), ("Bo", "what do I ask")}  # each part its own


def test_voice_node_can_be_disabled_and_unscoped_list_kept(make_store: Store) -> None:
    store = make_store()
    _dialogue(store)
    q = "What hobbies does Ana have?"
    dag = Activator(store, "default", _cfg(voice_weight=0.0)).activate(
        q, Buffer.empty(), 50, 500).dag
    assert [n.speaker for n in dag[:2]] == [None, "Ana"]
    assert all(n.text == q or n.text.startswith(q) for n in dag)  # no "What ... do I ..."
    kept = Activator(store, "default", _cfg(unscoped_weight=1.0)).activate(
        q, Buffer.empty(), 100, 10_000)
    assert any(speaker_of(i.text) == "Bo" for i in kept.buffer.items)


def test_derived_memories_inherit_their_source_turns_speaker() -> None:
    with MemoryStore(clock=FakeClock()) as store:
        store.observe("user", "I love cooking pasta", speaker="Bo")
        store.observe("user", "I love painting at night", speaker="Ana")
        act = Activator(store, "default", _cfg(follow_links=False)).activate(
            "What does Ana love?", Buffer.empty(), 50, 500)
        scoped = act.dag[1]
        assert scoped.speaker == "Ana"
        texts = [store.get(i).content for i in scoped.hits]
        assert any("painting" in t for t in texts)
        assert not any("pasta" in t for t in texts)  # Bo's turn and the fact derived from it


def test_scoped_dag_is_deterministic_read_only_and_capped(make_store: Store) -> None:
    store = make_store()
    _dialogue(store)
    before = len(store.audit)
    runs = [Activator(store, "default", _cfg()).activate("What hobbies does Ana have?",
                                                           Buffer.empty(), 2, 1000)
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert len(runs[0].buffer.items) == 2
    assert all(e.op is not AuditOp.ACCESS for e in store.audit.events()[before:])
    assert all(n.access_count == 0 for n in store.list())


def test_text_helpers() -> None:
    assert speaker_of("Ana: hi there") == "Ana"
    assert speaker_of("Note:x") is None and speaker_of("ana: hi") is None
    speakers = {"Ana", "Bo"}
    assert subject_of("Where did Ana's brother go?", speakers) == "Ana"
    assert subject_of("Did Ana meet Bo?", speakers) is None
    assert subject_of("Is Anabel here?", speakers) is None
    assert subject_of("what does ana like?", speakers) is None
    assert in_own_voice("What activities does Ana partake in?", "Ana") == \
        "What activities do I partake in?"
    assert in_own_voice("What do Ana's kids like?", "Ana") == "What do my kids like?"
    assert in_own_voice("Where has Ana camped?", "Ana") == "Where have I camped?"
    assert in_own_voice("Who supports Ana?", "Ana") == "Who supports me?"
    assert in_own_voice("Is Anabel ok?", "Ana") == "Is Anabel ok?"


def test_bad_config_is_rejected() -> None:
    for bad in ({"voice_weight": 1.5}, {"unscoped_weight": -0.1}, {"scope_depth": 0},
                {"speaker_scop": True}):
        with pytest.raises(pydantic.ValidationError):
            ActivatorConfig.model_validate(bad)
