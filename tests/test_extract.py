"""Deterministic extraction (mars_core.knowledge.extract): the rule table, speakers, lineage,
deadlines, the store round trip, and a precision sample on real LoCoMo turns."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mars_core.clock import FakeClock
from mars_core.knowledge.extract import (
    EPISODE,
    Extracted,
    KnownFacts,
    Topic,
    extract,
    parse_deadline,
    split_speaker,
    topic_of,
)
from mars_core.model import (
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
    TaskStatus,
)
from mars_core.nlp import Analyzer
from mars_core.store import MemoryStore

pytestmark = pytest.mark.backend_neutral
"""Only the tests marked ``backend_neutral(False)`` build stores: they run on each backend
of the matrix (``tests/conftest.py``), the others once."""

NOW = datetime(2026, 5, 6, 10, 0, tzinfo=UTC)  # a Wednesday
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev7.json"


def run(text: str, known: KnownFacts | None = None, *, role: str = "user",
        speaker: str | None = None, anchor: datetime | None = NOW) -> list[Extracted]:
    return extract(role, text, None, speaker=speaker, known=known or KnownFacts(),
                   anchor=anchor)


def kinds_texts(text: str, **kw: Any) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in run(text, **kw)]


# --- the rule table: (turn, expected (kind, text) pairs) ----------------------------------

POSITIVE: list[tuple[str, list[tuple[str, str]]]] = [
    ("I live in Lisbon.", [("fact", "The user lives in Lisbon")]),
    ("I just moved to New York City with my family.",
     [("fact", "The user lives in New York City")]),
    ("I'm originally from Porto Alegre", [("fact", "The user is from Porto Alegre")]),
    ("I work at Acme Corp as an engineer.", [("fact", "The user works at Acme Corp")]),
    ("I work as a nurse at the local hospital.", [("fact", "The user works as a nurse")]),
    ("I'm a software engineer.", [("fact", "The user is a software engineer")]),
    ("I have a dog named Rex.", [("fact", "The user has a dog"),
                                 ("social", "Rex is the user's dog")]),
    ("I have two kids.", [("fact", "The user has two kids")]),
    ("My birthday is March 3rd.", [("fact", "The user's birthday is March 3rd")]),
    ("My name is Ana Souza.", [("fact", "The user's name is Ana Souza")]),
    ("I prefer window seats over aisle seats.",
     [("preference", "The user prefers window seats")]),
    ("I love hiking in the mountains.",
     [("preference", "The user loves hiking in the mountains")]),
    ("I don't like cilantro.", [("preference", "The user does not like cilantro")]),
    ("I hate spam calls", [("preference", "The user hates spam calls")]),
    ("My favourite colour is green.", [("preference", "The user's favourite colour is green")]),
    ("Pizza is my favorite food.", [("preference", "The user's favourite food is Pizza")]),
    ("I'm a huge fan of jazz.", [("preference", "The user is a fan of jazz")]),
    ("I love action and sci-fi movies!",
     [("preference", "The user loves action and sci-fi movies")]),
    ("Don't use external APIs.",
     [("constraint", "Constraint from the user: Don't use external APIs")]),
    ("Never call me before 9am.",
     [("constraint", "Constraint from the user: Never call the user before 9am")]),
    ("Please always answer in French.",
     [("constraint", "Constraint from the user: Always answer in French")]),
    ("I'm allergic to peanuts.", [("constraint", "The user is allergic to peanuts")]),
    ("I'm vegetarian.", [("constraint", "The user is vegetarian")]),
    ("I don't eat pork.", [("constraint", "The user does not eat pork")]),
    ("My sister Ana lives in Porto.",
     [("social", "Ana is the user's sister, who lives in Porto")]),
    ("Bo is my colleague.", [("social", "Bo is the user's colleague")]),
    ("I had lunch with my friend Bo.", [("social", "Bo is the user's friend")]),
    ("Ana's husband Tom is a chef.", [("social", "Tom is Ana's husband")]),
    ("Tom is Ana's husband.", [("social", "Tom is Ana's husband")]),
    ("Meet Toby, my puppy.", [("social", "Toby is the user's puppy")]),
    ("Remind me to call Ana on Friday at 5pm.",
     [("task", "The user wants a reminder to call Ana on Friday at 5pm "
               "(due 2026-05-08 17:00 UTC)")]),
    ("I will submit the report tomorrow.",
     [("task", "The user will submit the report tomorrow (due 2026-05-07 23:59 UTC)")]),
    ("I'm going to visit my parents next week.",
     [("task", "The user is going to visit the user's parents next week "
               "(due 2026-05-17 23:59 UTC)")]),
    ("I need to renew my passport by May 20.",
     [("task", "The user needs to renew the user's passport by May 20 "
               "(due 2026-05-20 23:59 UTC)")]),
    ("I have a dentist appointment on 3 June at 14:30.",
     [("task", "The user has a dentist appointment on 3 June at 14:30 "
               "(due 2026-06-03 14:30 UTC)")]),
    ("We're flying to Rome tomorrow night.",
     [("task", "The user is flying to Rome tomorrow night (due 2026-05-07 23:59 UTC)")]),
    ("Can you remind me to buy milk tonight?",
     [("task", "The user wants a reminder to buy milk tonight (due 2026-05-06 23:59 UTC)")]),
    ("I'll send the invoice on 2026-05-12.",
     [("task", "The user will send the invoice on 2026-05-12 (due 2026-05-12 23:59 UTC)")]),
    ("I'm going to a concert on Saturday.",
     [("task", "The user is going to a concert on Saturday (due 2026-05-09 23:59 UTC)")]),
    ("I live in Lisbon and I love hiking.", [("fact", "The user lives in Lisbon"),
                                             ("preference", "The user loves hiking")]),
]

NEGATIVE: list[str] = [
    "Hi! How are you?",
    "What's your favourite movie?",
    "Do you like tea?",
    "I love that!",
    "I love your painting, it's gorgeous.",
    "I love how you use colour.",
    "I'd love to see it sometime.",
    "If I lived in Paris I would eat croissants every day.",
    "If I live in Paris next year, I'll learn French.",
    "Don't worry about it.",
    "Never been to Paris, but it sounds great!",
    "I'm a bit tired today.",
    "I'm a part of a support group.",
    "I'll let you know tomorrow.",
    "I'll see you on Friday!",
    "I went to the park yesterday.",
    "I will never forget that day.",
    "I have a question about my order.",
    "Thanks, that's really helpful.",
    "I'm going to think about it.",
    "Something I love is cooking.",
    "It's the job I enjoy every day.",
    "I joined a programming group last Friday.",
    "I live in a small town.",
    "My girlfriend, Toby and I are going camping.",
    "I'm working hard this week.",
    "That's what I like to hear!",
    "Yeah, I love to.",
    "I hate not being on the court.",
    "I have a painting in my room to remind me to stay true.",
    "Ok.",
    "",
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_rule_table_extracts(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds_texts(text) == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_rule_table_extracts_nothing(text: str) -> None:
    assert run(text) == []


def test_table_is_large_enough() -> None:
    assert len(POSITIVE) + len(NEGATIVE) >= 40


def test_payloads_are_valid_node_payloads() -> None:
    for text, _ in POSITIVE:
        for e in run(text):
            node = MemoryNode(id="x", type=e.type, content=e.text, weight=1,
                              payload={"kind": e.type.value, **e.payload})
            assert topic_of(node.type, node.payload) == e.topic
            assert e.links[0] == (Predicate.DERIVES_FROM, EPISODE)


def test_payload_shapes() -> None:
    fact = run("I work at Acme Corp.")[0]
    assert fact.type is MemoryType.SEMANTIC
    assert dict(fact.payload) == {"concept": "user", "relations": (("worksAt", "Acme Corp"),),
                                  "confidence": 0.9, "generality": 0.5}
    social = run("my best friend Jon works at Globex")[0]
    assert social.type is MemoryType.SOCIAL
    assert dict(social.payload) == {"entity": "Jon", "relationship_type": "best friend",
                                    "attributes": {"related_to": "user", "worksAt": "Globex"}}
    task = run("Remind me to water the plants")[0]
    assert task.type is MemoryType.TASK
    assert dict(task.payload) == {"goal": "water the plants", "status": "pending",
                                  "deadline": None}
    with pytest.raises(TypeError):
        task.payload["goal"] = "x"  # type: ignore[index]


def test_tasks_need_a_future_date_unless_a_reminder_is_asked_for() -> None:
    assert run("I will call Ana.") == []
    assert run("I'll call Ana tomorrow.")[0].payload["deadline"] == datetime(
        2026, 5, 7, 23, 59, tzinfo=UTC)
    assert run("I'm meeting Bo tomorrow at 8pm.")[0].payload["deadline"] == datetime(
        2026, 5, 7, 20, 0, tzinfo=UTC)
    assert run("I will pay the rent on 2026-01-03.") == []  # a past date is no plan
    assert run("I'll call Ana tomorrow.", anchor=None)[0].payload["deadline"] is None


def test_questions_are_skipped_sentence_by_sentence() -> None:
    assert kinds_texts("I live in Oslo. Where do you live?") == [
        ("fact", "The user lives in Oslo")]


# --- speakers -------------------------------------------------------------------------------


def test_first_person_is_the_speaker() -> None:
    assert kinds_texts("Caroline: I live in Boston") == [("fact", "Caroline lives in Boston")]
    assert run("Caroline: I live in Boston")[0].payload["concept"] == "Caroline"
    assert kinds_texts("I'm a teacher", speaker="Melanie") == [
        ("fact", "Melanie is a teacher")]
    assert kinds_texts("Melanie: I'm a teacher", speaker="Melanie") == [
        ("fact", "Melanie is a teacher")]
    assert kinds_texts("my sister Ana is visiting", speaker="Jon") == [
        ("social", "Ana is Jon's sister")]


def test_assistant_turns_without_a_speaker_give_nothing() -> None:
    assert run("I prefer concise answers.", role="assistant") == []
    assert kinds_texts("Nova: I prefer concise answers.", role="assistant") == [
        ("preference", "Nova prefers concise answers")]


def test_imperatives_between_people_are_not_constraints() -> None:
    assert run("Don't use the car tomorrow.", speaker="Jon") == []
    assert run("Don't give up!") == []
    assert kinds_texts("I'm allergic to cats", speaker="Jon") == [
        ("constraint", "Jon is allergic to cats")]


def test_split_speaker() -> None:
    assert split_speaker("Jon Snow: hello there") == ("Jon Snow", "hello there")
    assert split_speaker("Reminder: call Bo") == (None, "Reminder: call Bo")
    assert split_speaker("no speaker here") == (None, "no speaker here")
    assert kinds_texts("Note: I live in Rome") == [("fact", "The user lives in Rome")]


# --- lineage: supersedes, corrects, duplicates ------------------------------------------------


def semantic(nid: str, concept: str, pred: str, obj: str, *, seq: int = 0,
             status: MemoryStatus = MemoryStatus.ACTIVE) -> MemoryNode:
    return MemoryNode(id=nid, type=MemoryType.SEMANTIC, content=f"{concept} {pred} {obj}",
                      weight=3, seq=seq, status=status,
                      payload=SemanticPayload(concept=concept, relations=((pred, obj),)))


def social(nid: str, entity: str, rel: str, related_to: str = "user") -> MemoryNode:
    return MemoryNode(id=nid, type=MemoryType.SOCIAL, content=f"{entity} {rel}", weight=2,
                      payload=SocialPayload(entity=entity, relationship_type=rel,
                                            attributes={"related_to": related_to}))


def task(nid: str, goal: str, deadline: datetime | None = None) -> MemoryNode:
    return MemoryNode(id=nid, type=MemoryType.TASK, content=goal, weight=2,
                      payload=TaskPayload(goal=goal, deadline=deadline))


def test_a_new_value_supersedes_and_a_correction_corrects() -> None:
    known = KnownFacts.from_nodes([semantic("n1", "user", "livesIn", "Lisbon")])
    new = run("I live in Paris now.", known)[0]
    assert (new.supersedes, new.corrects, new.replaces) == ("n1", None, "n1")
    assert new.edges("ep") == [(Predicate.DERIVES_FROM, "ep"), (Predicate.SUPERSEDES, "n1")]
    fixed = run("Actually, I live in Paris.", known)[0]
    assert (fixed.supersedes, fixed.corrects) == (None, "n1")
    assert "corrects n1" in fixed.reason
    assert run("I live in Lisbon.", known) == []  # unchanged: nothing new
    assert run("I live in Paris.", KnownFacts.from_nodes(
        [semantic("n1", "Caroline", "livesIn", "Lisbon")]))[0].supersedes is None


def test_correction_cue_from_signals() -> None:
    known = KnownFacts.from_nodes([semantic("n1", "user", "worksAt", "Acme")])
    signals = Analyzer("rules", sentiment="lexicon").analyze("I mean, I work at Globex")
    e = extract("user", "I mean, I work at Globex", signals, speaker=None, known=known)[0]
    assert e.corrects == "n1"


def test_topics_of_preferences() -> None:
    known = KnownFacts.from_nodes([semantic("s", "user", "loves", "sushi"),
                                   semantic("w", "user", "prefers", "window seats")])
    assert run("I hate sushi.", known)[0].supersedes == "s"
    assert run("I like sushi.", known) == []  # same polarity: already known
    assert run("I prefer aisle seats.", known)[0].supersedes == "w"
    assert run("I prefer tea.", known)[0].supersedes is None


def test_last_mention_in_a_turn_wins() -> None:
    out = run("I live in Rome. Sorry, I meant that I live in Milan.")
    assert [e.text for e in out] == ["The user lives in Milan"]


def test_rescheduled_reminder_corrects_the_old_task() -> None:
    first = run("Remind me to call Ana on Friday")[0]
    node = task("t1", str(first.payload["goal"]), first.payload["deadline"])
    known = KnownFacts.from_nodes([node])
    again = run("Actually, remind me to call Ana on Saturday", known)[0]
    assert again.corrects == "t1"
    assert run("Remind me to call Ana on Friday", known) == []


def test_links_to_people_and_goals() -> None:
    known = KnownFacts.from_nodes([social("ana", "Ana", "sister"), task("t1", "call Ana")])
    reminder = run("Remind me to call Ana tomorrow", known)[0]
    assert (Predicate.REQUIRES, "ana") in reminder.links
    husband = run("Tom is Ana's husband", known)[0]
    assert (Predicate.FRIEND_OF, "ana") in husband.links
    sister = run("my sister Ana is a doctor", KnownFacts.from_nodes([task("t1", "call Ana")]))
    assert (Predicate.ATTACHES_TO_GOAL, "t1") in sister[0].links


def test_known_people_follow_adds_and_removes_as_a_rebuild_would() -> None:
    """A social memory removed leaves no trace in :meth:`KnownFacts.people` or
    :meth:`KnownFacts.related`; the index after adds and removes answers as one rebuilt
    from the memories left (what a reopened store holds)."""
    sister, dog, friend = (social("s", "Ana", "sister"), social("d", "Rex", "dog"),
                           social("f", "Bo", "friend", related_to="Ana"))
    live = KnownFacts.from_nodes([sister, dog, friend])
    live.remove("s")
    live.remove("d")
    assert live.people("Ana") == () and live.related("user") == ()
    live.add(dog)
    live.add(sister)
    rebuilt = KnownFacts.from_nodes([friend, dog, sister])
    for who in ("user", "Ana"):
        assert live.related(who) == rebuilt.related(who)
    assert live.related("user") == (("dog", "d", "Rex"), ("sister", "s", "Ana"))
    assert (live.people("Ana"), live.people("Rex"), live.people("Bo")) == (("s",), ("d",), ("f",))


def test_known_facts_index() -> None:
    old = semantic("n1", "user", "livesIn", "Lisbon", seq=1)
    new = semantic("n2", "user", "livesIn", "Paris", seq=2)
    archived = semantic("n3", "user", "worksAt", "Acme", status=MemoryStatus.ARCHIVED)
    known = KnownFacts.from_nodes([new, old, archived, social("b", "Bo", "friend")])
    assert known.lookup("User", "livesIn") == "n2"
    assert known.lookup("user", "worksAt") is None
    assert known.people("bo") == ("b",)
    known.remove("n1")  # not the holder of the topic: nothing changes
    assert known.lookup("user", "livesIn") == "n2"
    known.remove("n2")
    known.remove("b")
    assert known.lookup("user", "livesIn") is None and known.people("Bo") == ()
    assert len(known) == 0
    pending = task("t1", "call Bo")
    known.add(pending)
    assert known.goals_mentioning(["bo"]) == ("t1",) and len(known) == 1
    known.add(pending.model_copy(update={"payload": TaskPayload(goal="call Bo",
                                                                status=TaskStatus.DONE)}))
    assert known.goals_mentioning(["bo"]) == () and len(known) == 0
    known.add(new.model_copy(update={"status": MemoryStatus.ARCHIVED}))
    assert known.lookup("user", "livesIn") is None


def test_topic_of_edge_cases() -> None:
    assert topic_of("semantic", {"concept": "x"}) is None
    assert topic_of("episodic", {}) is None
    assert topic_of("social", {"entity": None}) is None
    assert topic_of("task", {"goal": "x", "status": "done"}) is None
    assert topic_of("semantic", {"concept": "u", "relations": [("isA", "A Teacher")]}) == \
        Topic("u", "isA:teacher", "teacher")


# --- deadlines ------------------------------------------------------------------------------

D = datetime


@pytest.mark.parametrize(("phrase", "expected"), [
    ("on Friday", D(2026, 5, 8, 23, 59)),
    ("Friday at 9am", D(2026, 5, 8, 9, 0)),
    ("on Wednesday", D(2026, 5, 13, 23, 59)),  # today is Wednesday: the next one
    ("this Wednesday", D(2026, 5, 6, 23, 59)),
    ("this Monday", D(2026, 5, 11, 23, 59)),  # already past this week: the next one
    ("next Monday", D(2026, 5, 11, 23, 59)),
    ("next Friday", D(2026, 5, 15, 23, 59)),
    ("tomorrow", D(2026, 5, 7, 23, 59)),
    ("tomorrow at 5:30 pm", D(2026, 5, 7, 17, 30)),
    ("the day after tomorrow", D(2026, 5, 8, 23, 59)),
    ("today", D(2026, 5, 6, 23, 59)),
    ("tonight at 8pm", D(2026, 5, 6, 20, 0)),
    ("this evening", D(2026, 5, 6, 23, 59)),
    ("next week", D(2026, 5, 17, 23, 59)),
    ("this week", D(2026, 5, 10, 23, 59)),
    ("this weekend", D(2026, 5, 10, 23, 59)),
    ("next weekend", D(2026, 5, 17, 23, 59)),
    ("next month", D(2026, 6, 30, 23, 59)),
    ("this month", D(2026, 5, 31, 23, 59)),
    ("next year", D(2027, 12, 31, 23, 59)),
    ("in 3 days", D(2026, 5, 9, 23, 59)),
    ("in two weeks", D(2026, 5, 20, 23, 59)),
    ("in a month", D(2026, 6, 6, 23, 59)),
    ("May 3", D(2027, 5, 3, 23, 59)),  # already past this year
    ("May 20", D(2026, 5, 20, 23, 59)),
    ("3 May", D(2027, 5, 3, 23, 59)),
    ("the 3rd of June", D(2026, 6, 3, 23, 59)),
    ("June 3rd, 2027", D(2027, 6, 3, 23, 59)),
    ("3 June 2027 at noon", D(2027, 6, 3, 12, 0)),
    ("2026-05-03", D(2026, 5, 3, 23, 59)),
    ("at 17:00", D(2026, 5, 6, 17, 0)),
    ("at 9am", D(2026, 5, 7, 9, 0)),  # already past today: tomorrow
    ("at midnight", D(2026, 5, 6, 23, 59)),
    ("by 12pm", D(2026, 5, 6, 12, 0)),
    ("12am", D(2026, 5, 7, 0, 0)),
])
def test_parse_deadline(phrase: str, expected: datetime) -> None:
    assert parse_deadline(phrase, NOW) == expected.replace(tzinfo=UTC)


@pytest.mark.parametrize("phrase", [
    "soon", "last Friday", "every Friday", "yesterday", "last week", "Fridays", "Feb 30",
    "I may 3 times", "at 25:00", "at 13pm", "",
])
def test_parse_deadline_ignores(phrase: str) -> None:
    assert parse_deadline(phrase, NOW) is None


def test_parse_deadline_timezones_and_missing_anchor() -> None:
    lisbon_summer = timezone(timedelta(hours=1))
    anchor = datetime(2026, 5, 6, 10, 0, tzinfo=lisbon_summer)
    assert parse_deadline("tomorrow at 9am", anchor) == datetime(2026, 5, 7, 8, 0, tzinfo=UTC)
    assert parse_deadline("tomorrow", datetime(2026, 5, 6, 10, 0)) == datetime(
        2026, 5, 7, 23, 59, tzinfo=UTC)  # naive anchors are UTC
    assert parse_deadline("tomorrow", None) is None
    assert parse_deadline("May 3", None) is None
    assert parse_deadline("May 3, 2026", None) == datetime(2026, 5, 3, 23, 59, tzinfo=UTC)
    assert parse_deadline("December 31", datetime(2026, 12, 31, tzinfo=UTC)) == datetime(
        2026, 12, 31, 23, 59, tzinfo=UTC)
    assert parse_deadline("next month", datetime(2026, 12, 5, tzinfo=UTC)) == datetime(
        2027, 1, 31, 23, 59, tzinfo=UTC)


# --- determinism and the store round trip ---------------------------------------------------


def test_extraction_is_deterministic() -> None:
    text = "I live in Rome, my sister Ana loves jazz and I'll visit her on Friday."
    assert run(text) == run(text)


@pytest.mark.backend_neutral(False)
def test_store_round_trip() -> None:
    """What observe will do: episode, then each extraction linked to it, then index it."""
    with MemoryStore(budget=2000, clock=FakeClock(NOW)) as store:
        known = KnownFacts()

        def observe(text: str) -> list[MemoryNode]:
            episode = store.add(text, type="episodic")
            stored = []
            for e in extract("user", text, None, speaker=None, known=known,
                             anchor=store.clock.now()):
                node = store.add(e.text, type=e.type, payload=dict(e.payload),
                                 links=e.edges(episode.id))
                if e.replaces:
                    store.forget(e.replaces, reason=f"replaced by {node.id}")
                    known.remove(e.replaces)
                known.add(node)
                stored.append(node)
            return stored

        first = observe("I live in Lisbon. Remind me to call my sister Ana on Friday.")
        assert [n.type.value for n in first] == ["semantic", "task", "social"]  # text order
        assert isinstance(first[1].payload, TaskPayload)
        assert first[1].payload.deadline == datetime(2026, 5, 8, 23, 59, tzinfo=UTC)
        moved = observe("I moved to Porto.")
        assert store.get(first[0].id).status is MemoryStatus.ARCHIVED
        assert [n.id for n in store.history(moved[0].id)] == [first[0].id, moved[0].id]
        rebuilt = KnownFacts.from_nodes(store.list())
        assert rebuilt.lookup("user", "livesIn") == moved[0].id


# --- real turns -----------------------------------------------------------------------------


def locomo_turns(stride: int) -> list[list[tuple[str, str, datetime]]]:
    """Every ``stride``-th turn of each conversation: (speaker, text, session time)."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    out = []
    for conv in data:
        c = conv["conversation"]
        sessions = sorted((int(k.split("_")[1]), k) for k in c if re.fullmatch(r"session_\d+", k))
        turns = []
        for _, key in sessions:
            anchor = datetime.strptime(c[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
            turns += [(t["speaker"], t["text"], anchor.replace(tzinfo=UTC)) for t in c[key]]
        out.append(turns[::stride])
    return out


@pytest.mark.data
@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_locomo_sample(capsys: pytest.CaptureFixture[str]) -> None:
    conversations = locomo_turns(20)  # about 206 turns spread over 7 conversations
    turns = [t for conv in conversations for t in conv]
    assert len(turns) >= 200
    found: list[Extracted] = []
    for conv in conversations:
        known = KnownFacts()
        for speaker, text, anchor in conv:
            found += extract("user", f"{speaker}: {text}", None, speaker=None, known=known,
                             anchor=anchor)
    counts = Counter(e.kind for e in found)
    with capsys.disabled():
        print(f"\nLoCoMo {len(turns)} turns -> {dict(counts)}")
    assert 0 < len(found) < len(turns) // 2
    speakers = {s for s, _, _ in turns}
    for e in found:
        subject = e.payload.get("concept") or e.payload.get("attributes", {}).get("related_to")
        assert subject in speakers or e.type is MemoryType.TASK
        assert not re.search(r"\b(?:I|me|my|you|your)\b", e.text), e.text
