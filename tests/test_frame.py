"""The query frame and the symbolic card channel (DMF §9.3 steps 1 and 3; mars_core.reading.frame),
and the assistant's reply as a unit with the turn it answers (mars_core.reading.retrieval)."""

from __future__ import annotations

import pytest

from mars_core.config import RetrievalConfig
from mars_core.knowledge.extract import Topic
from mars_core.reading.frame import CARD_WEIGHTS, answers, card_classes, parse_query, symbolic_score

# --- the frame ------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "subjects", "predicates", "answer", "past"), [
    ("Where do I work now?", {"user"}, {"worksAt"}, "place", False),
    ("What's my job?", {"user"}, {"worksAs"}, "job", False),
    ("Where did I work before?", {"user"}, {"worksAt", "formerlyWorkedAt"}, "place", True),
    ("Which city do I live in?", {"user"}, {"livesIn"}, None, False),
    ("What's my dog's name?", {"user"}, {"rel:dog", "attr:name"}, "name", False),
    ("Who is my manager?", {"user"}, {"rel:manager"}, "person", False),
    ("Where does Tom live?", {"tom"}, {"livesIn"}, "place", False),
    ("What diet does our family follow?", {"user"}, {"diet"}, None, False),
    ("What's my favourite film?", {"user"}, {"favourite:film"}, None, False),
    ("When should I call the landlord?", {"user"}, set(), "time", False),
    ("How old is my mum turning in June?", {"user"}, {"rel:mum"}, "age", False),
    ("where do i live", {"user"}, {"livesIn"}, "place", False),
    ("My sister Ana lives in Lisbon.", set(), set(), None, False),  # not a question
])
def test_a_question_is_parsed_into_its_frame(question, subjects, predicates, answer,
                                             past) -> None:
    frame = parse_query(question)
    assert (set(frame.subjects), set(frame.predicates), frame.answer, frame.past) == \
        (subjects, predicates, answer, past)


def test_card_classes_coarsen_the_extractors_topics() -> None:
    assert card_classes(Topic("user", "attitude:olives", "-")) == {"dislikes"}
    assert card_classes(Topic("user", "favourite:band", "radiohead")) == \
        {"likes", "favourite:band"}
    assert card_classes(Topic("pepper", "relationshipTo:user",
                              "dog|kind=rescue greyhound")) == {"rel:dog", "kind"}
    assert card_classes(Topic("helen", "relationshipTo:user", "mother|")) == {"rel:mum"}


# --- the card score: DMF Table 4's weights -------------------------------------------------


def test_the_card_score_uses_dmf_table_4s_weights() -> None:
    assert CARD_WEIGHTS == (0.9, 0.55, 1.2, 1.35, 0.2)
    frame = parse_query("Where do I work now?")
    card = Topic("user", "worksAt", "northwind labs")
    # subject 0.55 + predicate 1.2 + answer type (a place) 1.35, over 4.2
    assert symbolic_score(frame, card, "The user works at Northwind Labs") == \
        pytest.approx((0.55 + 1.2 + 1.35) / 4.2)
    tom = Topic("tom", "relationshipTo:user", "best friend|livesin=manchester")
    # + the query's entity (Tom) in the card 0.9 and "best friend" in its fields 0.2
    assert symbolic_score(parse_query("Where does my best friend Tom live?"), tom,
                          "Tom is the user's best friend, who lives in Manchester") == 1.0
    assert symbolic_score(parse_query("Where does Tom live?"), tom,
                          "Tom is the user's best friend, who lives in Manchester") == \
        pytest.approx((0.9 + 0.55 + 1.2 + 1.35) / 4.2)
    pet = Topic("pepper", "relationshipTo:user", "dog|kind=rescue greyhound")
    # "dog" is a word of both the question and the card's fields: all but the entity
    assert symbolic_score(parse_query("What's my dog's name?"), pet,
                          "Pepper is the user's dog") == pytest.approx(3.3 / 4.2)


def test_a_card_answers_only_for_its_subject_and_predicate() -> None:
    work = Topic("user", "worksAt", "acme")
    assert answers(parse_query("Where do I work?"), work)
    assert not answers(parse_query("Where does Tom work?"), work)  # another subject
    assert not answers(parse_query("Where do I live?"), work)  # another predicate
    likes = Topic("user", "attitude:arsenal", "+")
    assert answers(parse_query("Which team do I support?"), likes)
    assert not answers(parse_query("Which team do I support?"), likes, specific=True)


# --- the channel in retrieve and render_context ----------------------------------------------


def _chat(store, turns) -> None:
    for role, text in turns:
        store.observe(role, text, conversation_id="c")


JOB = [("user", "I started at Northwind Labs on Monday as a data engineer."),
       ("assistant", "Congratulations on the new job!"),
       ("user", "The job interview questions were brutal though."),
       ("user", "Job hunting is exhausting, I'm glad it's over."),
       ("user", "My old job at Tidewave had a terrible coffee machine.")]


def test_a_card_with_no_word_in_common_is_found(make_store) -> None:
    """"What's my job?" shares no word with "The user works as a data engineer" (the
    card the extractor drew): without the channel, the 'job' turns win and the relative
    cut-off drops it."""
    store = make_store()
    _chat(store, JOB)
    card = next(n for n in store.list() if n.content == "The user works as a data engineer")
    hits = store.retrieve("What's my job?", read_only=True)
    got = {h.id: h for h in hits}
    assert card.id in got and got[card.id].answers and got[card.id].card > 0
    off = make_store(retrieval=RetrievalConfig(card_weight=0))
    _chat(off, JOB)
    assert "The user works as a data engineer" not in {
        h.text for h in off.retrieve("What's my job?", read_only=True)}
    assert "data engineer" in store.render_context("What's my job?", evidence_only=True)


def test_the_cards_bonus_does_not_cut_the_other_evidence(make_store) -> None:
    """A card that answers gets a bonus; the bar of the relative cut-off is set without
    it, so the turn that matched best before is still there."""
    store = make_store()
    _chat(store, [*JOB, ("user", "I get the train to work now, it's quicker.")])
    hits = store.retrieve("How do I get to work these days?", read_only=True)
    texts = {h.text for h in hits}
    assert "The user works at Northwind Labs" in texts
    assert "I get the train to work now, it's quicker." in texts


def test_a_replaced_card_is_not_an_answer(make_store) -> None:
    store = make_store()
    _chat(store, [("user", "I work at Tidewave as an analyst."),
                  ("user", "I left Tidewave and joined Northwind Labs.")])
    hits = store.retrieve("Where do I work now?", read_only=True)
    answering = [h.text for h in hits if h.answers]
    assert answering == ["The user works at Northwind Labs"]


def test_cards_of_a_many_valued_predicate_are_not_kept_past_the_cut_off(make_store) -> None:
    """'What do I like' has many answers: their cards gain the bonus but are not exempt
    from the cut-off (they would crowd the context)."""
    store = make_store()
    _chat(store, [("user", "I love maps."), ("user", "I like watching the clouds."),
                  ("user", "I love hiking in the hills."),
                  ("user", "Hiking boots are expensive, I like hiking anyway.")])
    hits = store.retrieve("Do I like hiking?", read_only=True)
    assert not any(h.answers for h in hits)
    assert "The user loves maps" not in {h.text for h in hits}


# --- the assistant's reply and the turn it answers -------------------------------------------


def test_an_assistants_reply_brings_the_turn_it_answers(make_store) -> None:
    turns = [("user", "I'm a huge fan of Arsenal, which makes weekends stressful."),
             ("assistant", "Football does that to people."),
             ("user", "Anyway, the garden needs work.")]
    store = make_store()
    _chat(store, turns)
    hits = store.retrieve("Which football team do I support?", read_only=True)
    got = {h.text: h.score for h in hits}
    assert got[turns[0][1]] == got[turns[1][1]]  # one unit: the user's turn borrows
    assert turns[2][1] not in got
    plain = make_store(retrieval=RetrievalConfig(reply_units=False))
    _chat(plain, turns)
    assert turns[0][1] not in {
        h.text for h in plain.retrieve("Which football team do I support?", read_only=True)}


def test_a_users_turn_lends_nothing_backwards(make_store) -> None:
    """Only an assistant's turn lends to the turn before it: a user's statement does not
    pull in what the assistant said before it."""
    store = make_store()
    _chat(store, [("assistant", "How was your weekend?"),
                  ("user", "We went sailing on the lake."),
                  ("user", "The lake was freezing.")])
    hits = store.retrieve("Did we go sailing?", read_only=True)
    assert "How was your weekend?" not in {h.text for h in hits}
