"""Search where the data lives (DESIGN §3): the lexical analysis meets the forms of a word,
a long history is read only as far as a query needs, and what a process holds of a
namespace is its active memories, whatever its history.

The reads are counted by :class:`mars_core.testing.CountingRecords` (the memories the
record store returned), never timed."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.bench.history import conversation
from mars_core.engine.cache import NamespaceCache
from mars_core.errors import ConfigError
from mars_core.index.numpy import NumpyIndex
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.policies import LRUPolicy
from mars_core.storage import SQLiteRecordStore
from mars_core.storage.base import NamespaceRecord
from mars_core.testing import CountingEmbedder, CountingRecords
from mars_core.views.history import HeldHistory
from mars_core.views.namespace import KEEP_READ, KEEP_READ_STORE, NamespaceState

QUERY = "Where does Ana's sister live and what did Greta say about jazz?"


def _filled(path: pathlib.Path, turns: int, budget: int = 600) -> None:
    with MemoryStore(records=SQLiteRecordStore(path), index=NumpyIndex(),
                     embedder=HashingEmbedder(), budget=budget) as store:
        store.observe_many([{"role": r, "text": t, "speaker": "Ana" if r == "user" else None,
                             "conversation_id": "c1"} for r, t in conversation(turns)])


def _reopened(path: pathlib.Path) -> tuple[MemoryStore, CountingRecords]:
    records = CountingRecords(SQLiteRecordStore(path))
    return MemoryStore(records=records, index=NumpyIndex(), embedder=HashingEmbedder()), records


def test_a_long_history_is_read_only_as_far_as_a_query_needs(tmp_path: pathlib.Path) -> None:
    """Opening a namespace reads its active memories; a render_context reads its
    candidates and their neighbours: the same few hundred memories after 300 turns and
    after 1,500, where the archive grew fivefold."""
    read: dict[int, tuple[int, int, int]] = {}
    for turns in (300, 1500):
        path = tmp_path / f"s{turns}.sqlite3"
        _filled(path, turns)
        store, records = _reopened(path)
        with store:
            stats = store.stats("default")["namespaces"]["default"]
            records.memories_read = 0
            store.render_context(QUERY)
            read[turns] = (records.memories_read, stats["active"], stats["archived"])
            # the next call keeps at most KEEP_READ_STORE of what this one read beyond the
            # active memories: what a process holds is bounded by the budget, not the history
            assert stats["active"] < store.resident("default")["default"] <= \
                stats["active"] + KEEP_READ_STORE
    (small, active_s, archived_s), (large, active_l, archived_l) = read[300], read[1500]
    assert archived_l > 4 * archived_s  # the history grew ...
    assert small <= active_s + 1000 and large <= active_l + 1000  # ... what is read did not
    assert large - active_l <= 1.6 * (small - active_s) + 100


def test_opening_holds_the_active_memories_not_the_archive(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.sqlite3"
    _filled(path, 800)
    store, records = _reopened(path)
    with store:
        stats = store.stats("default")["namespaces"]["default"]
        assert store.resident("default") == {"default": 0}  # opening loaded nothing
        assert stats["archived"] > 5 * stats["active"]
        records.memories_read = 0
        store.add("Ana's sister lives in Lyon now")
        assert records.memories_read <= stats["active"] + 5
        assert store.resident("default")["default"] == \
            store.stats("default")["namespaces"]["default"]["active"]
        # listing the archive reads it from the records, and keeps at most KEEP_READ of it
        archived = store.list(status="archived")
        assert len(archived) == store.stats("default")["namespaces"]["default"]["archived"]
        assert len(archived) > KEEP_READ
        assert store.resident("default")["default"] <= \
            store.stats("default")["namespaces"]["default"]["active"] + KEEP_READ


def test_what_calls_read_beyond_the_active_memories_is_kept_within_one_allowance() -> None:
    """Alone, a namespace keeps the store's allowance of what its calls read (an agent's
    loop reads the same few thousand memories again and again); beside others, each
    keeps at least KEEP_READ and together they keep no more than the larger bound."""
    history = {name: [MemoryNode(id=f"{name}{i}", type=MemoryType.EPISODIC, content="x",
                                 weight=1, seq=i + 1, status=MemoryStatus.ARCHIVED)
                      for i in range(KEEP_READ_STORE + 100)] for name in ("a", "b")}
    cache = NamespaceCache(lambda name: NamespaceState(
        NamespaceRecord(name), [], [], LRUPolicy(), history=HeldHistory(history[name])),
        max_held=4 * KEEP_READ_STORE)  # no namespace dropped: this is about the trim
    a = cache.get("a")
    a.read(n.id for n in history["a"])
    cache.new_call()
    assert cache.get("a") is a and a.kept() == a.held() == KEEP_READ_STORE
    assert set(a.nodes) == {n.id for n in history["a"][-KEEP_READ_STORE:]}  # the last read
    b = cache.get("b")
    b.read(n.id for n in history["b"])
    cache.new_call()
    cache.get("b")
    assert b.held() == KEEP_READ  # what "a" keeps leaves it the floor
    assert a.held() == KEEP_READ_STORE  # not trimmed until a call touches it
    cache.new_call()
    cache.get("a")  # read nothing since, and lets go of what "b" keeps now
    assert a.held() == KEEP_READ_STORE - KEEP_READ
    assert set(a.nodes) == {n.id for n in history["a"][-a.held():]}
    assert sum(cache.resident().values()) == KEEP_READ_STORE


@pytest.mark.parametrize("query", ["Where does Ana live?", "Where is Ana living now?",
                                   "Ana lived where?"])
def test_the_forms_of_a_word_meet(query: str) -> None:
    """"live", "lives", "lived", "living": one term (the hand-made stemmer made "liv" of
    "lives" and "live" of "live", so the question never met the answer)."""
    with MemoryStore(embedder=HashingEmbedder()) as store:
        answer = store.add("Ana lives in Porto")
        for text in ("Bo likes jazz", "Cy plays chess on Sundays", "Dev works in Lisbon",
                     "Ana bought a red bike"):
            store.add(text)
        hits = store.retrieve(query, k=2, read_only=True, relative_cutoff=0)
        assert hits[0].id == answer.id and hits[0].lexical == 1.0


def test_a_possessive_makes_no_term_of_its_own() -> None:
    """"Bo's" is "bo": no memory with a possessive matches a query's "'s"."""
    with MemoryStore(embedder=HashingEmbedder(dim=8)) as store:  # dense: near nothing
        for text in ("Bo's car is red", "Cy's dog barks at night", "Di's flat is small"):
            store.add(text)
        target = store.add("Ana's sister teaches maths")
        hits = store.retrieve("Who is Ana's sister?", read_only=True, relative_cutoff=0)
        lexical = {h.id: h.lexical for h in hits}
        assert hits[0].id == target.id and lexical[target.id] == 1.0
        assert all(score == 0.0 for i, score in lexical.items() if i != target.id)


class _Profile:
    """An embedder that places one fact near the question, the way a sentence model
    does, and the rest far from it (a model's geometry, without a model)."""

    name, dim = "profile-test", 16

    def __init__(self, near: str, question: str) -> None:
        self.near, self.question = near, question
        self._base = HashingEmbedder(dim=self.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = self._base.embed(texts)
        anchor = self._base.embed([self.question])[0]
        for i, text in enumerate(texts):
            if text in (self.near, self.question):
                out[i] = anchor + 0.35 * out[i] / np.linalg.norm(out[i])
        return out


def test_the_embeddings_best_hit_of_a_profile_reaches_the_top_three() -> None:
    """A 20-fact profile where every fact names its subject with a possessive: the
    keyword channel must not outvote the embedding's clear best hit (cosine ≈ 0.94 here;
    the old analyser gave every decoy the shared "ana" and "s" terms)."""
    question = "What does Ana like to eat?"
    best = "Ana's favourite food is grilled octopus"
    facts = [best] + [f"Ana's {w} is {v}" for w, v in (
        ("brother", "called Tom"), ("car", "a green Fiat"), ("job", "nursing"),
        ("city", "Porto"), ("sister", "in Lyon"), ("dog", "a beagle"), ("cat", "grey"),
        ("hobby", "climbing"), ("band", "Radiohead"), ("book", "Dune"), ("phone", "old"),
        ("bike", "red"), ("school", "in Braga"), ("team", "FC Porto"), ("drink", "tea"),
        ("garden", "small"), ("flat", "on the third floor"), ("boss", "Rui"),
        ("birthday", "in May"))]
    embedder = CountingEmbedder(_Profile(best, question))
    with MemoryStore(embedder=embedder) as store:
        ids = {store.add(f, type="semantic").content: None for f in facts}
        assert len(ids) == 20
        hits = store.retrieve(question, k=5, read_only=True, relative_cutoff=0)
        dense_best = max(hits, key=lambda h: h.dense)
        assert dense_best.text == best and dense_best.dense > 0.9
        assert best in [h.text for h in hits[:3]]


def test_the_namespaces_a_process_keeps_hold_at_most_cache_memories(
        tmp_path: pathlib.Path) -> None:
    """A process that touches many namespaces keeps the least recently used ones only as
    long as they hold at most ``cache_memories`` memories together (the one it used last
    is always kept); what it renders is the same as with every namespace kept."""
    path = tmp_path / "s.sqlite3"
    names = [f"user-{i}" for i in range(6)]
    with MemoryStore(records=SQLiteRecordStore(path), index=NumpyIndex(),
                     embedder=HashingEmbedder(), budget=400) as store:
        for k, name in enumerate(names):
            store.observe_many([{"role": r, "text": t, "conversation_id": "c1"}
                                for r, t in conversation(60 + 10 * k, seed=k)],
                               namespace=name)
    contexts: dict[int, list[str]] = {}
    for bound in (10**6, 50):
        copy = tmp_path / f"copy{bound}.sqlite3"
        copy.write_bytes(path.read_bytes())
        with MemoryStore(records=SQLiteRecordStore(copy), index=NumpyIndex(),
                         embedder=HashingEmbedder(), cache_memories=bound) as store:
            contexts[bound] = []
            for name in names + names[::-1]:
                contexts[bound].append(store.render_context(QUERY, namespace=name))
                held = store.resident()
                assert sum(held.values()) - held[name] <= bound
            if bound == 50:  # each namespace holds more than 50: only the last is kept
                assert [n for n, k in store.resident().items() if k] == [names[0]]
            else:
                assert all(store.resident().values())
    assert contexts[50] == contexts[10**6]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "many"])
def test_cache_memories_is_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigError, match="cache_memories"):
        MemoryStore(cache_memories=bad)  # type: ignore[arg-type]
