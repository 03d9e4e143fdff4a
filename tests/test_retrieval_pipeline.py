"""The default retrieval pipeline: the one measured best on LoCoMo, and its per-call cut-off.

``RetrievalConfig()`` = 0.3 · cosine + 0.7 · BM25 + 0.3 · answerability, then a relative
cut-off at 0.85 of the best score, applied per unit of evidence (a turn and the facts
derived from it stand or fall together); ``retrieve(relative_cutoff=0)`` is "the k best".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import RetrievalConfig, ValidationError, retrieval
from mars_core.backends.base import Record, matches
from mars_core.backends.memory import InMemoryBackend
from mars_core.clock import FakeClock
from mars_core.codec import node_metadata
from mars_core.model import MemoryType
from mars_core.retrieval import Query
from mars_core.store import MemoryStore

FACTS = ["Ana moved to Lisbon in May", "Ana works as a nurse in Lisbon",
         "the weather was mild on Tuesday", "Bruno plays the cello", "Ana's cat is called Tom",
         "we talked about trains", "Lisbon has many hills"]


def _filled(make_store: Callable[..., MemoryStore], **kw: object) -> MemoryStore:
    store = make_store(**kw)
    for text in FACTS:
        store.add(text)
    return store


@pytest.mark.backend_neutral
def test_the_defaults_are_the_measured_pipeline() -> None:
    cfg = RetrievalConfig()
    assert (cfg.dense_weight, cfg.cue_weight, cfg.relative_cutoff) == (0.3, 0.3, 0.85)


def test_the_cutoff_drops_weak_matches_and_zero_gives_the_k_best(make_store) -> None:
    store = _filled(make_store)
    cut = store.retrieve("where did Ana move to?", k=5, read_only=True)
    full = store.retrieve("where did Ana move to?", k=5, read_only=True, relative_cutoff=0)
    assert cut and cut[0].text == "Ana moved to Lisbon in May"
    assert len(cut) < len(full) == 5
    assert [h.id for h in cut] == [h.id for h in full[:len(cut)]]  # a prefix of the ranking
    assert all(h.score >= 0.85 * cut[0].score for h in cut)
    plain = _filled(make_store, retrieval=RetrievalConfig(relative_cutoff=0))
    assert len(plain.retrieve("where did Ana move to?", k=5, read_only=True)) == 5


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, float("nan")])
def test_a_bad_per_call_cutoff_is_refused_and_changes_nothing(make_store, bad: object) -> None:
    store = _filled(make_store)
    before = store.audit.head
    with pytest.raises(ValidationError, match="relative_cutoff"):
        store.retrieve("Ana", relative_cutoff=bad)  # type: ignore[arg-type]
    assert store.audit.head == before


def test_a_turn_and_the_facts_drawn_from_it_are_cut_together(make_store) -> None:
    store = make_store()
    turn = store.observe("user", "I live in Porto and I work at Tidewave.", speaker="Maya")
    for text in ("Nice weather today.", "Let us talk about trains."):
        store.observe("user", text, speaker="Maya")
    derived = [n for n in store.list() if turn[0].id in n.provenance.derived_from]
    assert derived  # the rule-based extractor drew facts from the turn
    hits = store.retrieve("Where does Maya live?", read_only=True)
    ids = {h.id for h in hits}
    assert turn[0].id in ids and {n.id for n in derived} <= ids


def test_render_context_never_offers_the_question_as_its_own_evidence(make_store) -> None:
    store = make_store()
    store.observe("user", "My locker code is behind the blue door.", conversation_id="monday")
    store.observe("user", "Where is my locker code?",  # the question, stored before the render
                  conversation_id="friday")
    text = store.render_context("Where is my locker code?", conversation="friday",
                                evidence_only=True)
    assert "blue door" in text
    assert "Where is my locker code?" not in text


# --- the dense channel's plan: send the filter, or filter an unfiltered list here --------

TOPICS = ["trains", "cello", "Lisbon", "tea", "hills", "nurses", "cats", "weather"]


def _two_namespaces(make_store: Callable[..., MemoryStore], **kw: object) -> MemoryStore:
    """40 memories in ``big`` (5 of them tasks), 8 in ``small``."""
    store = make_store(budget=100_000, **kw)
    for i in range(40):
        store.add(f"note {i}: we talked about {TOPICS[i % 8]} and {TOPICS[(3 * i) % 8]}",
                  namespace="big", type="task" if i % 8 == 0 else "episodic")
    for i in range(8):
        store.add(f"small note {i} on {TOPICS[i]}", namespace="small")
    return store


def _record_queries(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The ``where`` of every query the store sends its backend, in order."""
    wheres: list[object] = []
    query = store.backend.query

    def recording(collection: str, vector: object, k: int, where: object = None) -> object:
        wheres.append(where)
        return query(collection, vector, k, where)  # type: ignore[arg-type]

    monkeypatch.setattr(store.backend, "query", recording)
    return wheres


def test_a_dominant_namespace_filters_the_nearest_records_itself(make_store, monkeypatch) -> None:
    store = _two_namespaces(make_store)
    wheres = _record_queries(store, monkeypatch)
    ask = {"k": 10, "read_only": True, "relative_cutoff": 0}
    big = store.retrieve("what about trains and tea?", namespace="big", **ask)
    assert wheres == [None]  # 40 of 48 records: one unfiltered query, filtered here
    assert big and {h.node.namespace for h in big} == {"big"}
    small = store.retrieve("what about trains and tea?", namespace="small", **ask)
    assert len(wheres) == 2 and wheres[1] is not None  # 8 of 48: the backend filters
    assert small and {h.node.namespace for h in small} == {"small"}
    monkeypatch.setattr(retrieval, "POST_FILTER_SHARE", 2.0)  # always send the filter
    assert [h.id for h in store.retrieve("what about trains and tea?", namespace="big",
                                         **ask)] == [h.id for h in big]
    assert wheres[2] is not None


def test_too_few_admitted_neighbours_fall_back_to_the_filtered_query(
        make_store, monkeypatch) -> None:
    store = _two_namespaces(make_store, retrieval=RetrievalConfig(candidates=4))
    wheres = _record_queries(store, monkeypatch)
    hits = store.retrieve("a note on the cello", namespace="big", types=["task"], read_only=True,
                          relative_cutoff=0)
    # the 15 nearest (about the cello) hold fewer than 4 of the 5 tasks (about trains): the
    # filter is sent after all
    assert wheres[0] is None and wheres[1] is not None and len(wheres) == 2
    assert hits and {h.node.type.value for h in hits} == {"task"}


@pytest.mark.backend_neutral
@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), k=st.integers(1, 12),
       share_of_a=st.floats(0.05, 1.0))
def test_filtering_here_gives_the_filtered_query_on_an_exact_backend(
        seed: int, n: int, k: int, share_of_a: float) -> None:
    rng = np.random.default_rng(seed)
    backend = InMemoryBackend()
    backend.ensure_collection("m", 8)
    spaces = ["a" if rng.random() < share_of_a else "b" for _ in range(n)]
    backend.upsert("m", [Record(f"r{i}", rng.normal(size=8).astype(np.float32), "",
                                {"namespace": ns}) for i, ns in enumerate(spaces)])
    admitted = {f"r{i}" for i, ns in enumerate(spaces) if ns == "a"}
    q, qvec = Query(text="", namespace="a"), rng.normal(size=8).astype(np.float32)
    share = max(len(admitted) / n, retrieval.POST_FILTER_SHARE)  # always take the plan
    here = retrieval.dense(backend, "m", qvec, q, k, share=share, admits=admitted.__contains__)
    sent = retrieval.dense(backend, "m", qvec, q, k)
    assert list(here) == list(sent)  # the same records in the same order
    assert list(here.values()) == pytest.approx(list(sent.values()), abs=1e-6)  # float32 sums


# --- Query.admits is the twin of the filter the backend is sent --------------------------

WORDS = ["trains", "cello", "Lisbon", "tea", "hills", "nurses", "cats", "weather", "maps"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def _random_store(rng: np.random.Generator, n: int) -> MemoryStore:
    """``n`` memories over two namespaces, four types, three conversations (one: none),
    spread sensitivities, one an hour apart."""
    store = MemoryStore(budget=1_000_000, clock=FakeClock(START))
    for i in range(n):
        words = " ".join(rng.choice(WORDS, size=3))
        conv = ["c1", "c2", None][int(rng.integers(3))]
        store.add(f"memory {i} on {words}", namespace="a" if rng.random() < 0.8 else "b",
                  type=["episodic", "semantic", "social", "task"][int(rng.integers(4))],
                  sensitivity=round(float(rng.random()), 2),
                  provenance={"conversation_id": conv})
        store.clock.advance(timedelta(hours=1))  # type: ignore[attr-defined]
    return store


_filters = st.fixed_dictionaries({}, optional={
    "types": st.sets(st.sampled_from(["episodic", "semantic", "social", "task"]), min_size=1),
    "max_sensitivity": st.floats(0.0, 1.0),
    "since": st.integers(-2, 40).map(lambda h: datetime(2026, 1, 1) + timedelta(hours=h)),
    "until": st.integers(-2, 40).map(lambda h: START + timedelta(hours=h, minutes=30)),
    "conversation": st.sampled_from(["c1", "c2", "", "c9"]),
})
"""A retrieve's filters; ``since`` naive (taken as UTC), ``conversation=""``: none."""


@pytest.mark.backend_neutral
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), filters=_filters)
def test_query_admits_exactly_what_the_backend_filter_matches(
        seed: int, n: int, filters: dict[str, Any]) -> None:
    store = _random_store(np.random.default_rng(seed), n)
    try:
        types = filters.get("types")
        q = Query("trains", "a", **{**filters, "types": types and frozenset(
            MemoryType(t) for t in types)})
        flt = q.backend_filter()
        for node in store.list("a", status=None) + store.list("b", status=None):
            assert q.admits(node) is matches(flt, node_metadata(node)), (node, filters)
    finally:
        store.close()


@pytest.mark.backend_neutral
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), k=st.integers(1, 8),
       filters=_filters)
def test_the_plan_and_the_sent_filter_retrieve_the_same_on_an_exact_backend(
        seed: int, n: int, k: int, filters: dict[str, Any]) -> None:
    store = _random_store(np.random.default_rng(seed), n)
    ask = {"namespace": "a", "k": k, "read_only": True, "relative_cutoff": 0, **filters}
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(retrieval, "POST_FILTER_SHARE", 0.0)  # always filter here
            here = store.retrieve("trains and tea in Lisbon", **ask)
            patch.setattr(retrieval, "POST_FILTER_SHARE", 2.0)  # always send the filter
            sent = store.retrieve("trains and tea in Lisbon", **ask)
        assert [h.id for h in here] == [h.id for h in sent]
    finally:
        store.close()


def test_no_conversation_and_naive_times_filter_like_the_backend(make_store) -> None:
    store = make_store(budget=100_000)
    for i in range(10):  # a store smaller than the plan's width: no fallback query
        store.add(f"we talked about trains, part {i}",
                  provenance={"conversation_id": "c1"} if i % 2 else None)
    ask = {"read_only": True, "relative_cutoff": 0}
    loose = store.retrieve("trains", conversation="", **ask)
    assert len(loose) == 5 and all(h.node.provenance.conversation_id is None for h in loose)
    naive = datetime(2000, 1, 1)  # taken as UTC; comparing it raised TypeError before
    assert len(store.retrieve("zzqx trains", since=naive, **ask)) == 10
    assert store.retrieve("trains", until=naive, **ask) == []


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("bad", "message"), [
    ({"since": "2026-01-01"}, "since must be a datetime"),
    ({"until": 5}, "until must be a datetime"),
    ({"conversation": 7}, "conversation must be a string"),
    ({"max_sensitivity": "0.5"}, "max_sensitivity must be a number"),
    ({"max_sensitivity": True}, "max_sensitivity must be a number"),
])
def test_bad_filters_are_refused_before_anything_is_read(
        make_store, bad: dict[str, object], message: str) -> None:
    store = _filled(make_store)
    before = store.audit.head
    with pytest.raises(ValidationError, match=message):
        store.retrieve("Ana", **bad)  # type: ignore[arg-type]
    assert store.audit.head == before
