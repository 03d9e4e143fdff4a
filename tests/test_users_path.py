"""The path users run (issue 18): ``observe`` into a store with its default budget, read
through ``retrieve`` and ``render_context``.

* forgetting to make room does not make a memory unreachable: the archive is a second tier
  of the same ranking (``RetrievalConfig.search_archive``), and a policy's eviction changes
  nothing ``retrieve`` finds — while what was forgotten on request, superseded or expired
  stays out of it;
* ``observe(speaker=...)`` makes the speaker's name part of what is matched;
* a question and the reply after it are one unit of evidence
  (``RetrievalConfig.reply_units``).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from mars_core import RetrievalConfig
from mars_core.clock import FakeClock
from mars_core.model import ArchiveReason, MemoryStatus
from mars_core.store import MemoryStore

CHAT = [
    ("Ana", "I started pottery classes at the community centre"),
    ("Bo", "Nice, I went hiking near the lake with my brother"),
    ("Bo", "Where did Ines move after the summer?"),
    ("Ana", "To Porto, for a nursing job"),
    ("Bo", "I am reading a novel about trains in Siberia"),
    ("Ana", "The pottery teacher says my bowls are getting better"),
    ("Bo", "We brought a grey cat home from the shelter yesterday"),
    ("Ana", "I ran a charity race for the animal shelter last Sunday"),
    ("Bo", "My brother plays the cello in a jazz band"),
    ("Ana", "Lisbon was sunny all week, perfect for long walks"),
    ("Bo", "The cat sleeps on my keyboard all day"),
] * 3
QUESTIONS = ["What did Ana start at the community centre?", "Where did Ines move?",
             "What did Bo bring home from the shelter?", "Who plays the cello?",
             "What race did Ana run?", "What is Bo reading about?"]


def _chat(store: MemoryStore) -> None:
    for i, (who, text) in enumerate(CHAT):
        store.observe("user", f"{text} ({i})", speaker=who, conversation_id="c1")


def _found(store: MemoryStore, query: str) -> list[tuple[str, float]]:
    return [(h.text, round(h.score, 9)) for h in store.retrieve(query, read_only=True)]


# --- the second tier ----------------------------------------------------------------------

def test_eviction_to_make_room_changes_nothing_retrieve_finds(make_store) -> None:
    roomy, tight = make_store(budget=100_000, seed=0), make_store(budget=120, seed=0)
    for store in (roomy, tight):
        _chat(store)
    assert not roomy.list(status="archived")
    assert {n.type.value for n in roomy.list()} == {"episodic"}  # no facts: the same memories
    evicted = tight.list(status="archived")
    assert len(evicted) > len(CHAT) // 2  # most of the conversation left the active store
    assert {n.archive_reason for n in evicted} == {ArchiveReason.EVICTED}
    for q in QUESTIONS:  # ties list the active memory first: compare as sets
        assert sorted(_found(tight, q)) == sorted(_found(roomy, q))
    assert any(h.archived for q in QUESTIONS for h in tight.retrieve(q, read_only=True))


def test_without_the_second_tier_evicted_memories_are_out_of_reach(make_store) -> None:
    tight = make_store(budget=120, seed=0,
                       retrieval=RetrievalConfig(search_archive=False))
    _chat(tight)
    first = tight.list(status="archived")[0]
    hits = tight.retrieve("pottery classes at the community centre", read_only=True)
    assert hits and first.id not in {h.id for h in hits}
    assert all(not h.archived for h in hits)
    # retrieve(include_archive=False) asks for the active memories alone, whatever the config
    on = make_store(budget=120, seed=0)
    _chat(on)
    assert all(not h.archived for h in on.retrieve("pottery classes", include_archive=False,
                                                   read_only=True))


def test_render_context_marks_what_it_recalls_from_the_archive(make_store) -> None:
    store = make_store(budget=120, seed=0)
    _chat(store)
    text = store.render_context("What did Ana start at the community centre?",
                                evidence_only=True)
    line = next(ln for ln in text.splitlines() if "pottery classes" in ln)
    assert "| archived]" in line


def test_forgotten_superseded_and_expired_memories_stay_out_of_the_second_tier(
        make_store) -> None:
    clock = FakeClock()
    store = make_store(budget=100_000, clock=clock)
    secret = store.add("the spare key hides under the blue flowerpot")
    store.forget(secret.id)
    old = store.add("the spare key hides under the red doormat")
    store.update(old.id, "the spare key hides with the neighbour")
    brief = store.add("the spare key code is 4411 this week",
                      expires_at=clock.now() + timedelta(hours=1))
    clock.advance(timedelta(hours=2))
    store.maintain()
    reasons = {n.content: n.archive_reason for n in store.list(status="archived")}
    assert reasons == {secret.content: ArchiveReason.FORGOTTEN,
                       old.content: ArchiveReason.SUPERSEDED,
                       brief.content: ArchiveReason.EXPIRED}
    found = {h.text for h in store.retrieve("where does the spare key hide?", read_only=True,
                                            relative_cutoff=0)}
    assert found == {"the spare key hides with the neighbour"}
    assert secret.content not in store.render_context("where does the spare key hide?")
    # asked for explicitly, the archive is still there
    everything = store.retrieve("spare key", include_archive=True, relative_cutoff=0,
                                read_only=True)
    assert {secret.id, old.id, brief.id} <= {h.id for h in everything}


def test_an_evicted_turn_whose_statement_changed_is_found_and_marked(make_store) -> None:
    """An outdated turn (what it said was replaced later) was still said: once evicted it
    stays in the second tier, shown archived and outdated beside what replaced it."""
    store = make_store(budget=60)
    said = store.observe("user", "I live in Bristol", conversation_id="c")[0]
    store.observe("user", "We moved to Cardiff last month", conversation_id="c")
    for i in range(12):
        store.observe("user", f"Small talk number {i} about the weather.", conversation_id="c")
    assert store.get(said.id).archive_reason is ArchiveReason.EVICTED
    assert said.id in {h.id for h in store.retrieve("Did I live in Bristol?", read_only=True)}
    line = next(ln for ln in store.render_context("Did I live in Bristol?",
                                                  evidence_only=True).splitlines()
                if ln.endswith("I live in Bristol"))
    assert "outdated (now: The user lives in Cardiff)" in line and "| archived]" in line


def test_the_reason_is_kept_across_reopen_and_cleared_by_restore(open_store,
                                                                 tmp_path: Path) -> None:
    with open_store(tmp_path / "s", budget=60) as store:
        _chat(store)
        evicted = store.list(status="archived")[0]
    with open_store(tmp_path / "s") as store:
        again = store.get(evicted.id)
        assert again.archive_reason is ArchiveReason.EVICTED
        restored = store.restore(evicted.id)
        assert restored.status is MemoryStatus.ACTIVE and restored.archive_reason is None


# --- speakers -----------------------------------------------------------------------------

def test_a_question_naming_a_speaker_matches_what_they_said(make_store) -> None:
    store = make_store()
    said = {who: store.observe("user", text, speaker=who)[0].id for who, text in
            [("Bo", "Lovely weather today."), ("Ana", "I walked a puppy from the shelter"),
             ("Cy", "The puppy chewed my shoes")]}
    hits = {h.id: h for h in store.retrieve("What did Ana say about the puppy?",
                                            read_only=True, relative_cutoff=0)}
    assert hits[said["Ana"]].lexical == 1.0  # "ana" and "puppy": the best lexical match
    assert hits[said["Cy"]].lexical < 1.0
    assert max(hits.values(), key=lambda h: h.score).id == said["Ana"]
    assert store.get(said["Ana"]).content == "I walked a puppy from the shelter"


# --- a question and its reply -------------------------------------------------------------

def test_the_reply_to_a_matching_question_is_retrieved_with_it(make_store) -> None:
    store = make_store()
    turns = [("assistant", "Where did you go on holiday last summer?"),
             ("user", "Lisbon, with my sister."),
             ("assistant", "Sounds lovely."),
             ("user", "We should plan the next trip soon."),
             ("user", "Also, my holiday photos are on the laptop.")]
    ids = [store.observe(role, text, conversation_id="c")[0].id for role, text in turns]
    hits = store.retrieve("Where did I go on holiday last summer?", read_only=True)
    found = [h.id for h in hits]
    assert ids[0] in found and ids[1] in found  # the answer shares no word with the query
    reply = next(h for h in hits if h.id == ids[1])
    assert reply.score == next(h for h in hits if h.id == ids[0]).score
    assert ids[2] not in found  # the reply passes nothing on: no chain of turns
    plain = make_store(retrieval=RetrievalConfig(reply_units=False))
    for role, text in turns:
        plain.observe(role, text, conversation_id="c")
    assert "Lisbon, with my sister." not in {
        h.text for h in plain.retrieve("Where did I go on holiday last summer?",
                                       read_only=True)}


def test_a_turn_by_the_same_speaker_is_not_a_reply(make_store) -> None:
    store = make_store()
    first = store.observe("user", "Where did I leave the car keys?", conversation_id="c")
    then = store.observe("user", "Anyway, dinner is at eight.", conversation_id="c")
    hits = store.retrieve("where did I leave the car keys", read_only=True)
    assert first[0].id in {h.id for h in hits}
    assert then[0].id not in {h.id for h in hits}



def test_a_stored_copy_of_the_query_lends_no_score_to_its_reply(make_store) -> None:
    """``render_context`` never offers the question itself as evidence; its reply (an
    earlier answer, here an empty one) must not take its perfect score either, or the
    relative cut-off drops the real evidence."""
    store = make_store()
    store.observe("user", "My locker code is behind the blue door.", conversation_id="mon")
    store.observe("user", "Where is my locker code?", conversation_id="fri")
    store.observe("assistant", "Noted.", conversation_id="fri")
    text = store.render_context("Where is my locker code?", evidence_only=True)
    assert "blue door" in text
