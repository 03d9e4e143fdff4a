"""Supersession users expect (issue 18 item 3): a job change, a move, a renamed pet, a
cancelled plan, a changed diet or taste, said in ordinary words, replace the old fact
— and what is only about someone else, or only imagined, does not.

Every case goes through ``MemoryStore.observe`` (the path the adapters use) and reads
the store back: the new memory is active, the old one is archived and linked by a
``supersedes`` (or ``corrects``) edge. The rendering tests read ``render_context``: the
turn that said the old fact is marked ``outdated`` with what replaced it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from mars_core.knowledge.extract import KnownFacts, extract, parse_deadline
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.store import MemoryStore

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday


def told(*turns: str) -> MemoryStore:
    """A store that observed ``turns`` as the user, one hour apart."""
    store = MemoryStore()
    for i, text in enumerate(turns):
        store.observe("user", text, conversation_id="c", at=NOW + timedelta(hours=i))
    return store


def facts(store: MemoryStore, status: MemoryStatus) -> list[MemoryNode]:
    return [n for n in store.list(status=status) if n.type is not MemoryType.EPISODIC]


def replaced_by(store: MemoryStore, node: MemoryNode) -> list[str]:
    """Contents of the earlier versions of ``node`` (along ``supersedes`` edges)."""
    return [n.content for n in store.history(node.id) if n.id != node.id]


# (case, what was said before, the turn that changes it, the new memory, the old one)
CHANGES: list[tuple[str, list[str], str, str, str]] = [
    ("started at", ["I work at Tidewave."], "I started at Northwind Labs last week.",
     "The user works at Northwind Labs", "The user works at Tidewave"),
    ("left and joined", ["I work at Tidewave."], "I left Tidewave and joined Northwind Labs.",
     "The user works at Northwind Labs", "The user works at Tidewave"),
    ("a job at", ["I work at Tidewave."], "I got a job at Northwind Labs!",
     "The user works at Northwind Labs", "The user works at Tidewave"),
    ("hired by", ["I work at Tidewave."], "I've been hired by Northwind Labs.",
     "The user works at Northwind Labs", "The user works at Tidewave"),
    ("a <job> at", ["I work at Tidewave."], "Now I'm a nurse at St Mary's Hospital.",
     "The user works at St Mary's Hospital", "The user works at Tidewave"),
    ("quit", ["I work at Tidewave."], "I quit Tidewave on Friday.",
     "The user no longer works at Tidewave", "The user works at Tidewave"),
    ("promoted", ["I work as a junior designer."], "I got promoted to art director!",
     "The user works as an art director", "The user works as a junior designer"),
    ("we moved", ["I live in Bristol."], "We moved to Cardiff last month.",
     "The user lives in Cardiff", "The user lives in Bristol"),
    ("based in", ["I live in Bristol."], "We're based in Cardiff now.",
     "The user lives in Cardiff", "The user lives in Bristol"),
    ("renamed the dog", ["I have a dog named Biscuit."], "We renamed the dog to Pepper.",
     "Pepper is the user's dog (renamed from Biscuit)", "Biscuit is the user's dog"),
    ("renamed <Old>", ["I have a dog named Biscuit."], "We renamed Biscuit Pepper.",
     "Pepper is the user's dog (renamed from Biscuit)", "Biscuit is the user's dog"),
    ("new name", ["I have a dog named Biscuit."], "The dog's new name is Pepper.",
     "Pepper is the user's dog (renamed from Biscuit)", "Biscuit is the user's dog"),
    ("goes by", ["I have a dog named Biscuit."], "Biscuit goes by Pepper now.",
     "Pepper is the user's dog (renamed from Biscuit)", "Biscuit is the user's dog"),
    ("breed kept", ["We adopted a rescue greyhound called Biscuit."],
     "We renamed the dog to Pepper.",
     "Pepper is the user's dog, a rescue greyhound (renamed from Biscuit)",
     "Biscuit is the user's dog, a rescue greyhound"),
    ("trip cancelled", ["We're going to Kyoto in April."], "The trip to Kyoto is cancelled.",
     "The user is no longer going to Kyoto in April (cancelled; was due 2026-04-30",
     "The user is going to Kyoto in April"),
    ("trip off", ["We're going to Kyoto in April."], "The Kyoto trip is off, sadly.",
     "The user is no longer going to Kyoto", "The user is going to Kyoto in April"),
    ("we cancelled", ["We're going to Kyoto in April."], "We cancelled Kyoto.",
     "The user is no longer going to Kyoto", "The user is going to Kyoto in April"),
    ("not going after all", ["We're going to Kyoto in April."],
     "We're not going to Kyoto after all.",
     "The user is no longer going to Kyoto", "The user is going to Kyoto in April"),
    ("called off by", ["We're having dinner with Priya on Saturday at 7pm."],
     "Priya called off Saturday's dinner.",
     "The user is no longer having dinner with Priya", "The user is having dinner with Priya"),
    ("cancel the reminder", ["Remind me to call Ana on Friday."],
     "Please cancel the reminder to call Ana.",
     "The user no longer wants a reminder to call Ana", "The user wants a reminder to call Ana"),
    ("rescheduled", ["Remind me to call the landlord on Friday about the boiler."],
     "Can you remind me to call the landlord on Monday instead?",
     "The user wants a reminder to call the landlord on Monday",
     "The user wants a reminder to call the landlord about the boiler on Friday"),
    ("no meat anymore", ["I love meat."], "I don't eat meat anymore.",
     "The user does not eat meat anymore", "The user loves meat"),
    ("gave up", ["I love coffee."], "I gave up coffee in January.",
     "The user gave up coffee", "The user loves coffee"),
    ("stopped eating", ["I love chocolate."], "I've stopped eating chocolate.",
     "The user no longer eats chocolate", "The user loves chocolate"),
    ("used to love", ["I love running."], "I used to love running, but my knees disagree.",
     "The user used to love running", "The user loves running"),
    ("not into anymore", ["I'm really into jazz."], "I'm not into jazz anymore.",
     "The user is no longer into jazz", "The user is into jazz"),
    ("went vegan", ["I'm vegetarian."], "I went vegan last month.",
     "The user is vegan", "The user is vegetarian"),
    ("no longer vegetarian", ["I'm vegetarian."], "I'm no longer vegetarian.",
     "The user is no longer vegetarian", "The user is vegetarian"),
]


@pytest.mark.parametrize(("before", "turn", "new", "old"), [c[1:] for c in CHANGES],
                         ids=[c[0] for c in CHANGES])
def test_a_change_replaces_the_old_fact(before: list[str], turn: str, new: str,
                                        old: str) -> None:
    with told(*before, turn) as store:
        active = facts(store, MemoryStatus.ACTIVE)
        archived = [n.content for n in facts(store, MemoryStatus.ARCHIVED)]
        fresh = [n for n in active if n.content.startswith(new)]
        assert fresh, [n.content for n in active]
        assert any(c.startswith(old) for c in archived), archived
        assert not any(n.content.startswith(old) for n in active)
        assert any(c.startswith(old) for c in replaced_by(store, fresh[0]))


# (case, what was said before, a turn that must change nothing said before)
NOT_CHANGES: list[tuple[str, list[str], str]] = [
    ("a friend moved", ["I live in Bristol."], "My friend moved to Lyon."),
    ("a friend and a city", ["I live in Bristol."], "Jess moved to Lyon for a job."),
    ("might move", ["I live in Bristol."], "I might move to Oslo one day."),
    ("would move", ["I live in Bristol."], "If we moved to Oslo we'd need a bigger car."),
    ("thinking of moving", ["I live in Bristol."], "We're thinking of moving to Oslo."),
    ("moving next month", ["I live in Bristol."], "I'm moving to Oslo next month."),
    ("a childhood move", ["I live in Bristol."], "We moved to Lyon when I was a kid."),
    ("joined a club", ["I work at Tidewave."], "I joined a book club at the library."),
    ("joined a named club", ["I work at Tidewave."], "I joined Toastmasters last month."),
    ("left the building", ["I work at Tidewave."], "I left Tidewave at six today."),
    ("an offer received", ["I work at Tidewave."],
     "I got an offer from Northwind Labs, still thinking."),
    ("a friend's new job", ["I work at Tidewave."],
     "Ana left Tidewave and started at Northwind Labs."),
    ("a friend's dog", ["I have a dog named Biscuit."], "My friend renamed her dog to Max."),
    ("a hypothetical name", ["I have a dog named Biscuit."],
     "If we renamed the dog to Pepper she would ignore it too."),
    ("a device off", ["Remind me to fix the heating on Friday."], "The heating is off again."),
    ("someone else's event", ["We're going to Kyoto in April."],
     "The football match was cancelled."),
    ("a hypothetical cancellation", ["We're going to Kyoto in April."],
     "If the Kyoto trip is cancelled, we'll go to Porto."),
    ("no sign of change", ["I love coffee."], "I don't drink coffee after 6pm."),
    ("another reminder", ["Remind me to call the landlord on Friday."],
     "Remind me to call Priya on Monday instead."),
    ("a question", ["I live in Bristol."], "Should we move to Cardiff?"),
]


@pytest.mark.parametrize(("before", "turn"), [c[1:] for c in NOT_CHANGES],
                         ids=[c[0] for c in NOT_CHANGES])
def test_no_false_supersession(before: list[str], turn: str) -> None:
    with told(*before) as store:
        kept = {n.id for n in facts(store, MemoryStatus.ACTIVE)}
        assert kept
        store.observe("user", turn, conversation_id="c", at=NOW + timedelta(days=1))
        assert kept <= {n.id for n in facts(store, MemoryStatus.ACTIVE)}
        assert facts(store, MemoryStatus.ARCHIVED) == []


def test_a_rename_replaces_the_pet_and_its_name_attribute() -> None:
    with told("I have a dog named Biscuit.", "My dog's name is Biscuit.",
              "We renamed the dog to Pepper.") as store:
        archived = sorted(n.content for n in facts(store, MemoryStatus.ARCHIVED))
        assert archived == ["Biscuit is the user's dog", "The user's dog's name is Biscuit"]
        new = [n for n in facts(store, MemoryStatus.ACTIVE) if n.type is MemoryType.SOCIAL]
        assert sorted(replaced_by(store, new[0])) == archived


def test_a_rename_needs_one_dog_to_know_which() -> None:
    with told("I have a dog named Biscuit.", "I have a dog named Rex.",
              "We renamed the dog to Pepper.") as store:
        assert facts(store, MemoryStatus.ARCHIVED) == []  # which one? neither is replaced
        assert "Pepper is the user's dog" in [n.content for n in facts(store,
                                                                         MemoryStatus.ACTIVE)]


def test_a_cancellation_needs_a_plan_it_names() -> None:
    with told("We're going to Kyoto in April.", "We're going to Porto in May.",
              "The trip is off.") as store:  # which trip? none is cancelled
        assert facts(store, MemoryStatus.ARCHIVED) == []
        assert not any("cancelled" in n.content for n in facts(store, MemoryStatus.ACTIVE))


def test_a_cancelled_plan_is_a_cancelled_task() -> None:
    with told("We're going to Kyoto in April.", "The Kyoto trip is off.") as store:
        task = [n for n in facts(store, MemoryStatus.ACTIVE) if n.type is MemoryType.TASK]
        assert [(t.payload.status.value, t.payload.goal) for t in task] == [
            ("cancelled", "Kyoto")]
        assert task[0].payload.deadline == datetime(2026, 4, 30, 23, 59, tzinfo=UTC)


def test_a_correction_cue_corrects() -> None:
    with told("Remind me to call the landlord on Friday.",
              "Actually, remind me to call the landlord on Monday instead.") as store:
        (new,) = facts(store, MemoryStatus.ACTIVE)
        (old,) = facts(store, MemoryStatus.ARCHIVED)
        assert store.history(new.id) == [new]  # not a supersedes edge ...
        assert "corrected by the newer memory" in store.explain(old.id).rationale
        shown = store.render_context("When do I call the landlord?")
        assert f"| corrected] {old.content}" in shown  # ... a corrects edge


@pytest.mark.parametrize(("phrase", "due"), [
    ("in April", datetime(2026, 4, 30, 23, 59, tzinfo=UTC)),
    ("by March", datetime(2026, 3, 31, 23, 59, tzinfo=UTC)),
    ("in early June 2027", datetime(2027, 6, 30, 23, 59, tzinfo=UTC)),
    ("in January", datetime(2026, 1, 31, 23, 59, tzinfo=UTC)),  # this month
    ("at the end of May", datetime(2026, 5, 31, 23, 59, tzinfo=UTC)),
    ("in May 3", datetime(2026, 5, 3, 23, 59, tzinfo=UTC)),  # a day, not the month
])
def test_a_month_is_a_deadline(phrase: str, due: datetime) -> None:
    assert parse_deadline(phrase, NOW) == due


def test_a_plan_this_month_is_not_clearly_ahead() -> None:
    said = extract("user", "I'm flying to Rome in January.", None, speaker=None,
                   known=KnownFacts(), anchor=NOW)
    ahead = extract("user", "I'm flying to Rome in April.", None, speaker=None,
                    known=KnownFacts(), anchor=NOW)
    assert said == [] and [e.type for e in ahead] == [MemoryType.TASK]


def test_known_facts_finds_relations_and_plans() -> None:
    with told("I have a dog named Biscuit.", "My sister Ana lives in Porto.",
              "Remind me to call Ana on Friday.", "Remind me to call Bo on Friday.") as store:
        known = KnownFacts.from_nodes(store.list())
        assert [(r, e) for r, _, e in known.related("user")] == [("dog", "Biscuit"),
                                                                 ("sister", "Ana")]
        assert [e for _, _, e in known.related("user", "dog")] == ["Biscuit"]
        ana = known.plan_matching({"call", "ana"})
        assert ana is not None and "Ana" in store.get(ana).content
        assert known.plan_matching({"call"}) is None  # both reminders: ambiguous


# --- what render_context shows ---------------------------------------------------------------


def lines(context: str) -> list[str]:
    return [line for line in context.splitlines() if line.startswith("- [")]


def test_the_turn_that_said_the_old_fact_is_marked_outdated() -> None:
    with told("I live in Bristol with my partner.", "We moved to Cardiff last month.") as s:
        shown = lines(s.render_context("Where do I live with my partner?"))
        bristol = [line for line in shown if "I live in Bristol" in line]
        assert bristol, shown
        assert all("| outdated (now: The user lives in Cardiff)]" in line for line in bristol)
        unmarked = [line for line in shown if not re.search(r"\| (outdated|superseded)", line)]
        assert not any("Bristol" in line for line in unmarked)


def test_a_turn_with_a_replaced_plan_is_marked_with_the_cancellation() -> None:
    with told("We're going to Kyoto in April.", "The Kyoto trip is off.") as store:
        shown = lines(store.render_context("Are we going to Kyoto in April?"))
        old = [line for line in shown if "We're going to Kyoto" in line]
        assert old and "outdated (now: The user is no longer going to Kyoto in April " \
                        "(cancelled; was due 2026-04-30 23:59 UTC))]" in old[0]


def test_a_new_version_of_a_fact_outdates_its_turn_and_a_same_one_does_not() -> None:
    with told("I live in Bristol.", "I love jazz.") as store:
        episode, fact = store.list(status=MemoryStatus.ACTIVE)[:2]
        jazz = next(n for n in facts(store, MemoryStatus.ACTIVE) if "jazz" in n.content)
        store.update(fact.id, "The user lives in Cardiff")
        store.update(jazz.id, "The user loves jazz")  # same words: a merged duplicate
        shown = lines(store.render_context("Where did I live, Bristol?"))
        assert any(line.endswith("I live in Bristol.") and "outdated (now: The user lives "
                   "in Cardiff)" in line for line in shown), shown
        shown = lines(store.render_context("I love jazz"))
        assert any(line.endswith("I love jazz.") and "outdated" not in line for line in shown)
        assert episode.content == "I live in Bristol."


def test_an_outdated_turn_that_holds_a_current_fact_stays_evidence() -> None:
    with told("I live in Bristol and I work at Tidewave.", "We moved to Cardiff.") as store:
        shown = lines(store.render_context("Where do I work? Tidewave?"))
        assert any("The user works at Tidewave" in line and "outdated" not in line
                   and "superseded" not in line for line in shown), shown
        assert any("I work at Tidewave" in line and "outdated" in line for line in shown)


def test_private_mode_keeps_a_hidden_replacement_out_of_the_mark() -> None:
    with told("I live in Bristol with my partner.", "We moved to Cardiff last month.") as s:
        s.set_preferences({"private_entities": ["Cardiff"], "private_mode": True})
        shown = lines(s.render_context("Where do I live with my partner?"))
        bristol = [line for line in shown if "I live in Bristol" in line]
        assert bristol and all(line.split("] ")[0].endswith("| outdated") for line in bristol)
        assert not any("Cardiff" in line or "PRIVATE" in line for line in shown), shown
