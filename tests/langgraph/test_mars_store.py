"""``MarsStore``: LangGraph's store contract, with MaRS forgetting and erasure underneath.

Behaviour tests follow LangGraph's own store tests (put/get/search/delete/list_namespaces,
filters, pagination, sync and async); where LangGraph's ``InMemoryStore`` defines the
answer, it is run side by side as the oracle.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from lg_helpers import indexed_ids, raw_text
from typing_extensions import TypedDict

from langchain_mars._keys import decode_namespace, encode_namespace
from langchain_mars.store import MarsStore
from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.errors import (
    BlockedByPreferenceError,
    BudgetExceededError,
    ConfigError,
    ValidationError,
)

ROOT = Path(__file__).resolve().parents[2]
KEY = bytes(range(32))

NAMESPACES = [  # LangGraph's test_list_namespaces_basic
    ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
    ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
    ("admin", "users", "789"),
]


KINDS = [k for k in ("ram", "sqlite", "chroma", "chroma-http", "qdrant",
                      *(["qdrant-url"] if os.environ.get("QDRANT_URL") else []),
                      "postgres", "postgres-chroma")
         if not os.environ.get("MARS_TEST_BACKENDS")
         or k in os.environ["MARS_TEST_BACKENDS"].split(",")]
"""Every kind of the store matrix (``tests/conftest.py``'s ``store_kind``): the erasure
test runs on all of them; the module's other tests on the kinds the conftest's
``MODULE_KINDS`` gives this module."""


@pytest.fixture
def make() -> Iterator[Callable[..., MarsStore]]:
    """``make(budget=..., **MarsStore kwargs)``: a MarsStore over an in-memory MemoryStore."""
    made: list[MemoryStore] = []

    def factory(budget: int = 8000, policy: str = "lru", **kw: Any) -> MarsStore:
        memory = MemoryStore(budget=budget, policy=policy, clock=FakeClock(), audit_key=KEY)
        made.append(memory)
        return MarsStore(memory, **kw)

    yield factory
    for m in made:
        m.close()


# --- namespaces ------------------------------------------------------------------------------


@pytest.mark.backend_neutral
@settings(max_examples=50)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="."),
                        min_size=1, max_size=8).filter(str.strip),
                min_size=1, max_size=5))
def test_namespace_encoding_is_reversible(labels: list[str]) -> None:
    ns = tuple(labels)
    assert decode_namespace(encode_namespace(ns)) == ns


@pytest.mark.backend_neutral
def test_namespace_encoding_escapes_the_separator() -> None:
    assert encode_namespace(("a/b",)) != encode_namespace(("a", "b"))
    assert encode_namespace(("a%2Fb",)) != encode_namespace(("a/b",))
    with pytest.raises(ValidationError):
        encode_namespace(("x" * 300,))


def test_list_namespaces_matches_langgraph(make: Callable[..., MarsStore]) -> None:
    ours, oracle = make(), InMemoryStore()
    for i, ns in enumerate(NAMESPACES):
        for s in (ours, oracle):
            s.put(ns, f"k{i}", {"i": i})
    queries: list[dict[str, Any]] = [
        {}, {"prefix": ("a", "b")}, {"suffix": ("f",)}, {"prefix": ("a",), "suffix": ("f",)},
        {"prefix": ("a", "*", "f")}, {"suffix": ("*", "f")}, {"prefix": ("nonexistent",)},
        {"prefix": ("users", "123")}, {"max_depth": 2}, {"prefix": ("a", "b"), "max_depth": 3},
        {"limit": 3}, {"limit": 3, "offset": 3}, {"offset": 100}, {"prefix": ("users",)},
    ]
    for q in queries:
        assert ours.list_namespaces(**q) == oracle.list_namespaces(**q), q
    assert ours.list_namespaces(prefix=("a", "b"), max_depth=2) == [("a", "b")]
    assert ours.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"),
                                                       ("b", "a", "f")]


def test_list_namespaces_wildcards_depth_and_pages_match_langgraph(
        make: Callable[..., MarsStore]) -> None:
    ours, oracle = make(), InMemoryStore()
    spaces = [("users", "123"), ("users", "456"), ("users", "789", "settings"),
              ("admin", "users", "789"), ("guests", "123"), ("guests", "456", "preferences"),
              ("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"),
              ("h", "i", "j", "k")] + [("namespace", f"sub_{i:02d}") for i in range(20)]
    for i, ns in enumerate(spaces):
        for s in (ours, oracle):
            s.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    queries: list[dict[str, Any]] = [
        {"prefix": ("users", "*")}, {"suffix": ("*", "preferences")},
        {"prefix": ("*", "users"), "suffix": ("*", "settings")}, {"max_depth": 2},
        {"prefix": ("namespace",), "limit": 5, "offset": 15}, {"max_depth": 1}]
    for q in queries:
        assert ours.list_namespaces(**q) == oracle.list_namespaces(**q), q


def test_namespace_rules_are_langgraphs(make: Callable[..., MarsStore]) -> None:
    s, doc = make(), {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            s.put(bad, "foo", doc)
    s.put(("foo", "langgraph", "foo"), "bar", doc)
    assert s.search(("foo", "langgraph", "foo"))[0].value == doc
    s.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # past the public put: allowed
    assert s.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]


def test_namespaces_are_separate_memories(make: Callable[..., MarsStore]) -> None:
    s = make()
    s.put(("users", "ana"), "k", {"text": "Ana likes tea"})
    s.put(("users", "bo"), "k", {"text": "Bo likes coffee"})
    assert s.get(("users", "ana"), "k").value["text"] == "Ana likes tea"  # type: ignore[union-attr]
    assert set(s.memory.stats()["namespaces"]) == {"users/ana", "users/bo"}
    assert [i.namespace for i in s.search(("users", "bo"), query="tea")] == [("users", "bo")]


# --- put / get / update / delete --------------------------------------------------------------


def test_put_get_roundtrip_and_metadata(make: Callable[..., MarsStore]) -> None:
    s = make()
    value = {"text": "Ana moved to Lisbon", "tags": ["move", "city"], "n": 3}
    s.put(("users", "ana"), "home", value)
    item = s.get(("users", "ana"), "home")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("users", "ana"), "home", value)
    item.value["n"] = 99  # what a caller holds is a copy
    assert s.get(("users", "ana"), "home").value["n"] == 3  # type: ignore[union-attr]
    assert s.get(("users", "ana"), "nope") is None
    assert s.get(("users", "bo"), "home") is None
    node = s.memory.get(s.node_id(("users", "ana"), "home") or "", namespace=("users", "ana"))
    assert node.namespace == "users/ana" and node.type.value == "semantic"
    assert "Lisbon" in node.content and node.metadata["langgraph"]["value"] == value


def test_update_in_a_full_namespace_evicts_nothing_else(make: Callable[..., MarsStore]) -> None:
    s = make(budget=60, policy="fifo")
    ns = ("u",)
    for i in range(3):
        s.put(ns, f"k{i}", {"text": f"Ana fact {i}: she collects item{i} stamps"})
    used = s.memory.stats()["namespaces"]["u"]["tokens"]
    assert used + used // 3 > 60  # one more item of this size would not fit
    s.put(ns, "k2", {"text": "Ana fact 2: she collects item9 stamps"})  # FIFO: k0 is next
    assert all(s.memory.get(s.node_id(ns, f"k{i}") or "", namespace=ns).is_active
               for i in range(3))


def test_put_existing_key_is_a_new_version(make: Callable[..., MarsStore]) -> None:
    s = make()
    ns = ("users", "ana")
    s.put(ns, "city", {"text": "Ana lives in Porto"})
    first = s.get(ns, "city")
    old_id = s.node_id(ns, "city")
    s.memory.clock.advance(timedelta(minutes=1))  # type: ignore[attr-defined]
    s.put(ns, "city", {"text": "Ana lives in Lisbon"})
    item, new_id = s.get(ns, "city"), s.node_id(ns, "city")
    assert item is not None and first is not None and old_id and new_id and new_id != old_id
    assert item.value == {"text": "Ana lives in Lisbon"}
    assert item.created_at == first.created_at and item.updated_at > first.updated_at
    versions = s.memory.history(new_id, namespace=ns)
    assert [v.id for v in versions] == [old_id, new_id]
    assert [v.status.value for v in versions] == ["archived", "active"]
    assert old_id in {link.node_id for link in s.memory.explain(new_id, namespace=ns).provenance}
    s.put(ns, "city", {"text": "Ana lives in Lisbon"})  # unchanged: nothing new is stored
    assert s.node_id(ns, "city") == new_id and len(s.memory.list("users/ana", status=None)) == 2
    assert [i.key for i in s.search(ns)] == ["city"]  # one item, whatever its history


@pytest.mark.parametrize("store_kind", KINDS, indirect=True)
def test_delete_is_an_erasure(make: Callable[..., MarsStore], store_kind: str) -> None:
    s = make()
    ns = ("users", "ana")
    s.put(ns, "secret", {"text": "Ana's locker code is Zanzibar-4471"})
    s.put(ns, "secret", {"text": "Ana's locker code is Quokka-9915"})
    s.put(ns, "keep", {"text": "Ana likes tea"})
    assert "Zanzibar-4471" in raw_text(s.memory)
    versions = {v.id for v in s.memory.history(s.node_id(ns, "secret") or "", namespace=ns)}
    assert len(versions) == 2 and versions <= indexed_ids(s.memory, "users/ana")
    receipts = s.erase(ns, "secret")
    assert {i for r in receipts for i in r.erased} == versions  # both versions
    assert not versions & indexed_ids(s.memory, "users/ana")  # gone from the vector index
    assert s.get(ns, "secret") is None and s.search(ns, query="locker code")[0].key == "keep"
    export = json.dumps(s.memory.export_jsonld())
    for secret in ("Zanzibar-4471", "Quokka-9915"):
        assert secret not in raw_text(s.memory) and secret not in export
        assert all(secret not in json.dumps(e.model_dump(mode="json"))
                   for e in s.memory.audit.events())
    s.delete(ns, "keep")  # the BaseStore path: PutOp(value=None)
    assert s.get(ns, "keep") is None and s.list_namespaces() == []
    assert s.erase(ns, "keep") == ()  # deleting a missing item is a no-op


def test_index_fields_and_index_false(make: Callable[..., MarsStore]) -> None:
    s = make(index={"fields": ["title"]})
    ns = ("docs",)
    s.put(ns, "a", {"title": "Python tutorial", "body": "zebra zebra zebra"})
    s.put(ns, "b", {"title": "TypeScript guide", "body": "python python"})
    s.put(ns, "c", {"title": "Python cookbook"}, index=False)
    s.put(ns, "d", {"body": "python"}, index=["body"])
    texts = {k: s.memory.get(s.node_id(ns, k) or "", namespace=ns).content for k in "abcd"}
    assert texts["a"] == "Python tutorial" and texts["d"] == "python"
    hits = s.search(ns, query="python", limit=10)
    assert [h.key for h in hits][-1] == "c" and hits[-1].score is None  # not indexed: last
    assert {h.key for h in hits[:2]} == {"a", "d"}
    assert all(isinstance(h.score, float) for h in hits[:3])
    assert hits[0].score >= hits[1].score >= hits[2].score  # type: ignore[operator]
    assert s.search(ns, query="zebra")[0].key != "a"  # body is not indexed


# --- search ---------------------------------------------------------------------------------


ITEMS = [
    ("docs", "1", {"color": "red", "score": 4.5, "meta": {"lang": "en"}, "tags": ["a", "b"]}),
    ("docs", "2", {"color": "blue", "score": 3.0, "meta": {"lang": "fr"}, "tags": ["a"]}),
    ("docs", "3", {"color": "red", "score": 1.5, "meta": {"lang": "en"}}),
    ("other", "4", {"color": "red", "score": 5.0}),
]


@pytest.mark.parametrize("flt", [
    {"color": "red"}, {"color": "red", "score": {"$gt": 2}}, {"score": {"$gte": 3.0}},
    {"score": {"$lt": 3.0}}, {"score": {"$lte": 3.0}}, {"color": {"$ne": "red"}},
    {"color": {"$eq": "blue"}}, {"meta": {"lang": "en"}}, {"tags": ["a", "b"]},
    {"missing": "x"}, {"score": {"$gt": 1.0, "$lt": 5.0}},
])
def test_filters_match_langgraph(make: Callable[..., MarsStore], flt: dict[str, Any]) -> None:
    ours, oracle = make(), InMemoryStore()
    for root, key, value in ITEMS:
        for s in (ours, oracle):
            s.put((root, "x"), key, value)
    got = {(i.namespace, i.key) for i in ours.search((), filter=flt, limit=50)}
    want = {(i.namespace, i.key) for i in oracle.search((), filter=flt, limit=50)}
    assert got == want
    with_query = {(i.namespace, i.key) for i in ours.search((), query="red", filter=flt,
                                                              limit=50)}
    assert with_query == want  # a query ranks, it never drops a matching item


def test_listing_is_by_recency_and_paginates(make: Callable[..., MarsStore]) -> None:
    s = make()
    for i in range(7):
        s.put(("log",), f"k{i}", {"text": f"entry {i}"})
    s.put(("log",), "k2", {"text": "entry 2, edited"})
    keys = [i.key for i in s.search(("log",), limit=20)]
    assert keys == ["k2", "k6", "k5", "k4", "k3", "k1", "k0"]
    pages = [[i.key for i in s.search(("log",), limit=3, offset=o)] for o in (0, 3, 6)]
    assert [k for p in pages for k in p] == keys and [len(p) for p in pages] == [3, 3, 1]
    assert all(i.score is None for i in s.search(("log",)))
    assert s.search(("nothing",)) == [] and s.search(("log",), limit=0) == []


def test_query_pages_cover_every_item_once(make: Callable[..., MarsStore]) -> None:
    s = make()
    words = ["tea", "coffee", "lisbon", "porto", "cats", "dogs", "jazz", "chess", "rain"]
    for i, w in enumerate(words):
        s.put(("u",), w, {"text": f"Ana talks about {w} on day {i}"})
    ranked = [i.key for i in s.search(("u",), query="coffee", limit=100)]
    assert ranked[0] == "coffee" and sorted(ranked) == sorted(words)
    paged = [i.key for o in range(0, 9, 2) for i in s.search(("u",), query="coffee", limit=2,
                                                             offset=o)]
    assert paged == ranked


def test_update_moves_the_score_and_index_false_stays_out(make: Callable[..., MarsStore]) -> None:
    s = make()  # LangGraph's test_vector_update_with_embedding
    s.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    s.put(("test",), "doc2", {"text": "something about dogs"})
    s.put(("test",), "doc3", {"text": "text about birds"})
    first = s.search(("test",), query="Zany Xerxes")
    assert first[0].key == "doc1"
    s.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(r.score for r in s.search(("test",), query="Zany Xerxes") if r.key == "doc1")
    assert after is not None and first[0].score is not None and after < first[0].score
    new = next(r.score for r in s.search(("test",), query="new text about dogs")
               if r.key == "doc1")
    assert new is not None and new > after
    s.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert all(r.key != "doc4" for r in s.search(("test",), query="new text about dogs",
                                                   limit=3))


def test_query_search_with_filters_and_edge_cases(make: Callable[..., MarsStore]) -> None:
    s = make()  # LangGraph's test_vector_search_with_filters and _edge_cases
    for key, value in [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
                       ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
                       ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
                       ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]:
        s.put(("test",), key, value)
    red_apple = s.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in red_apple][:1] == ["doc1"] and len(red_apple) == 2
    assert s.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    assert len(s.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})) == 3
    both = s.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in both] == ["doc3"]
    for query in ("", None, "red " * 100, "apple!@#$%^&*()"):
        assert len(s.search(("test",), query=query, limit=10)) == 4, query


# --- MaRS underneath: eviction, access --------------------------------------------------------


def test_eviction_reads_through_and_ranks_archived_on_one_scale(
        make: Callable[..., MarsStore]) -> None:
    s = make(budget=60, policy="fifo")
    ns = ("users", "ana")
    for i in range(10):
        s.put(ns, f"k{i}", {"text": f"Ana fact {i}: she collects item{i} stamps"})
    statuses = {f"k{i}": s.memory.get(s.node_id(ns, f"k{i}") or "", namespace=ns).status.value
                for i in range(10)}
    assert statuses["k0"] == "archived" and statuses["k9"] == "active"  # FIFO forgot the first
    assert s.get(ns, "k0").value["text"].startswith("Ana fact 0")  # type: ignore[union-attr]
    hits = s.search(ns, query="item0 stamps", limit=10)
    # the archived item that matches best comes first: one scale, as retrieve's second
    # tier (issue 31: ranked after every active item, it was lost behind weaker ones)
    assert hits[0].key == "k0"
    assert [statuses[h.key] for h in hits].count("archived") >= 1
    assert s.memory.stats()["namespaces"][MarsStore.mars_namespace(ns)]["tokens"] <= 60
    s.put(ns, "k0", {"text": "Ana fact 0: she collects item0 stamps"})  # put again, unchanged
    # restored, not duplicated
    assert s.memory.get(s.node_id(ns, "k0") or "", namespace=ns).is_active
    assert len(s.memory.list("users/ana", status=None)) == 10


def test_maintenance_dedup_keeps_both_keys_and_erases_one(make: Callable[..., MarsStore]) -> None:
    s = make()
    ns = ("u",)
    s.put(ns, "a", {"text": "Ana likes green tea a lot"})
    s.put(ns, "b", {"text": "Ana likes green tea a lot"})  # a duplicate under another key
    counts = s.memory.maintain(MarsStore.mars_namespace(ns))
    assert sum(counts["u"].values()) >= 1
    status = {k: s.memory.get(s.node_id(ns, k) or "", namespace=ns).status.value for k in "ab"}
    assert sorted(status.values()) == ["active", "archived"]  # MaRS merged the duplicate
    assert all(s.get(ns, k).value == {"text": "Ana likes green tea a lot"}  # type: ignore[union-attr]
               for k in "ab")
    kept = next(k for k, v in status.items() if v == "active")
    other = "b" if kept == "a" else "a"
    receipts = s.erase(ns, kept)  # its history links to the other key: not erased with it
    assert len(receipts) == 1 and s.get(ns, kept) is None
    assert s.get(ns, other) is not None and [i.key for i in s.search(ns)] == [other]


def test_private_mode_hides_sensitive_items_from_search(make: Callable[..., MarsStore]) -> None:
    s = make()
    ns = ("users", "ana")
    s.put(ns, "tea", {"text": "Ana likes green tea"})
    s.put(ns, "health", {"text": "Ana was diagnosed with diabetes"})
    s.memory.set_preferences({"private_entities": ["diabetes"], "private_mode": True},
                             namespace=MarsStore.mars_namespace(ns))
    assert [i.key for i in s.search(ns)] == ["tea"]
    assert [i.key for i in s.search(ns, query="diabetes diagnosis")] == ["tea"]
    assert s.get(ns, "health") is not None  # a read by key is not a recall


def test_query_search_is_an_access_and_get_is_not(make: Callable[..., MarsStore]) -> None:
    s = make()
    ns = ("u",)
    for w in ("tea", "coffee", "jazz"):
        s.put(ns, w, {"text": f"Ana likes {w}"})

    def count(key: str) -> int:
        return s.memory.get(s.node_id(ns, key) or "", namespace=ns).access_count

    s.get(ns, "tea")
    s.search(ns)
    assert count("tea") == 0
    top = s.search(ns, query="tea", limit=1)
    assert top[0].key == "tea" and count("tea") == 1 and count("jazz") == 0
    quiet = make(search_access=False)
    quiet.put(ns, "tea", {"text": "Ana likes tea"})
    quiet.search(ns, query="tea")
    assert quiet.memory.get(quiet.node_id(ns, "tea") or "", namespace=ns).access_count == 0


# --- bad input: typed errors, nothing changed ---------------------------------------------------


def test_bad_batches_change_nothing(make: Callable[..., MarsStore]) -> None:
    s = make(budget=40)
    ok = PutOp(("u",), "a", {"text": "fine"})
    bad: list[tuple[Any, type[Exception]]] = [
        (PutOp(("u",), "b", {"x": float("nan")}), ValidationError),
        (PutOp(("u",), "b", {"x": {1, 2}}), ValidationError),
        (PutOp(("u",), "b", {"x": 1}, ttl=-1), ValidationError),  # see test_mars_store_ttl.py
        (PutOp(("u.v",), "b", {"x": 1}), InvalidNamespaceError),
        (PutOp((), "b", {"x": 1}), ValidationError),
        (PutOp(("u",), "", {"x": 1}), ValidationError),
        (PutOp(("u",), "b", {"x": 1}, index="x"), ValidationError),  # type: ignore[arg-type]
        (SearchOp(("u",), filter={"n": {"$regex": "a"}}), ValidationError),
        (SearchOp(("u",), filter={"n": {"$gt": "a"}}), ValidationError),
        (SearchOp(("u",), limit=-1), ValidationError),
        (GetOp(("u",), 3), ValidationError),  # type: ignore[arg-type]
        ("not an op", ValidationError),
    ]
    for op, err in bad:
        with pytest.raises(err):
            s.batch([ok, op])
        assert s.get(("u",), "a") is None and s.memory.stats()["namespaces"] == {}
    with pytest.raises(BudgetExceededError):
        s.put(("u",), "big", {"text": "word " * 200})
    assert s.list_namespaces() == [] and len(s.memory.audit) == 0
    s.put(("u",), "a", {"text": "fine"})
    before = (s.node_id(("u",), "a"), len(s.memory.audit))
    with pytest.raises(BudgetExceededError):  # an update too heavy: the old value stays
        s.put(("u",), "a", {"text": "word " * 200})
    assert (s.node_id(("u",), "a"), len(s.memory.audit)) == before
    assert s.memory.get(before[0] or "", namespace=("u",)).is_active
    s.memory.set_preferences({"blocked_entities": ["Zorro"]}, namespace="u")
    with pytest.raises(BlockedByPreferenceError):  # refused by the user's preferences
        s.put(("u",), "a", {"text": "Zorro was here"})
    assert s.get(("u",), "a").value == {"text": "fine"}  # type: ignore[union-attr]
    assert s.memory.get(before[0] or "", namespace=("u",)).is_active
    with pytest.raises(ValidationError, match="ttl"):  # TTL is supported; a bad ttl is refused
        s.put(("u",), "a", {"x": 1}, ttl=-1.0)
    assert s.get(("u",), "a").value == {"text": "fine"}  # type: ignore[union-attr]
    assert s.memory.get(before[0] or "", namespace=("u",)).expires_at is None
    assert s.supports_ttl is True


def test_config_errors() -> None:
    with MemoryStore(clock=FakeClock()) as memory:
        with pytest.raises(ConfigError, match="LangChainEmbeddings"):  # the fix is named
            MarsStore(memory, index={"embed": lambda texts: [[0.0]] * len(texts)})
        with pytest.raises(ConfigError, match=rf"set 'dims': {memory.embedder.dim}"):
            MarsStore(memory, index={"dims": 3})
        with pytest.raises(ConfigError, match="function texts -> vectors"):
            MarsStore(index={"embed": 42})
        with pytest.raises(ConfigError, match=r"one vector .* per text"):
            MarsStore(index={"embed": lambda texts: [1.0, 2.0]})
        with pytest.raises(ConfigError, match="Embeddings object or a function"):
            MarsStore(index={"embed": "no-such-provider:model"})
        with pytest.raises(ConfigError):
            MarsStore(memory, memory_type="nonsense")
        assert MarsStore(memory, index={"dims": memory.embedder.dim, "fields": ["t"]}).fields \
            == ["t"]


# --- persistence ----------------------------------------------------------------------------------


def test_reopen_rebuilds_the_key_index(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MarsStore.open(path, clock=FakeClock(), audit_key=KEY, budget=200,
                        embedder=HashingEmbedder()) as s:
        s.put(("users", "a/b"), "city", {"text": "Porto"})
        s.put(("users", "a/b"), "city", {"text": "Lisbon"})
        s.put(("users", "a/b"), "pet", {"text": "a cat named Miso"})
        s.put(("users", "c"), "gone", {"text": "temporary"})
        s.delete(("users", "c"), "gone")
        before = [(i.key, i.value) for i in s.search(("users",), query="cat")]
    with MarsStore.open(path, clock=FakeClock(), audit_key=KEY) as s:
        assert s.get(("users", "a/b"), "city").value == {"text": "Lisbon"}  # type: ignore[union-attr]
        assert s.get(("users", "c"), "gone") is None
        assert s.list_namespaces() == [("users", "a/b")]
        assert [(i.key, i.value) for i in s.search(("users",), query="cat")] == before
        assert s.reindex() == 2


@pytest.mark.backend_neutral
def test_on_chroma_delete_purges_and_reopen_finds(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from mars_core.index.chroma import ChromaIndex
    from mars_core.storage import SQLiteRecordStore

    def mars() -> MarsStore:
        return MarsStore(MemoryStore(SQLiteRecordStore(tmp_path / "mars.sqlite3"),
                                     ChromaIndex(path=tmp_path / "chroma"), clock=FakeClock(),
                                     audit_key=KEY))

    s = mars()
    s.put(("u",), "pin", {"text": "my bank PIN is Marmoset-7731"})
    s.put(("u",), "tea", {"text": "I like oolong tea"})
    s.put(("u",), "tea", {"text": "I like jasmine tea"})
    assert s.search(("u",), query="bank PIN")[0].key == "pin"
    pin = s.node_id(("u",), "pin")
    assert pin in indexed_ids(s.memory, "u")
    s.delete(("u",), "pin")
    assert "Marmoset-7731" not in raw_text(s.memory) and pin not in indexed_ids(s.memory, "u")
    s.memory.close()
    s = mars()  # reopen: the key index is rebuilt from the records, over the Chroma index
    assert [(i.key, i.value) for i in s.search(("u",), query="bank PIN")] == \
        [("tea", {"text": "I like jasmine tea"})]
    assert s.get(("u",), "pin") is None and s.reindex() == 1
    s.memory.close()


# --- async ---------------------------------------------------------------------------------------


async def test_async_api(make: Callable[..., MarsStore]) -> None:
    s = make()
    await s.aput(("users", "ana"), "tea", {"text": "Ana drinks green tea"})
    await s.aput(("users", "bo"), "tea", {"text": "Bo drinks black coffee"})
    item = await s.aget(("users", "ana"), "tea")
    assert item is not None and item.value["text"] == "Ana drinks green tea"
    hits = await s.asearch(("users",), query="green tea", filter={"text": {"$ne": "x"}})
    assert [h.namespace for h in hits] == [("users", "ana"), ("users", "bo")]
    assert await s.alist_namespaces(prefix=("users",)) == [("users", "ana"), ("users", "bo")]
    await s.adelete(("users", "ana"), "tea")
    assert await s.aget(("users", "ana"), "tea") is None
    await asyncio.gather(*(s.aput(("many",), f"k{i}", {"i": i}) for i in range(8)))
    assert sorted(i.value["i"] for i in await s.asearch(("many",), limit=20)) == list(range(8))
    results = await s.abatch([GetOp(("users", "bo"), "tea"), SearchOp(("users",))])
    assert results[0].key == "tea" and len(results[1]) == 1  # type: ignore[union-attr,arg-type]


async def test_a_sync_call_on_the_loop_raises_as_langgraphs_async_stores_do(
        make: Callable[..., MarsStore]) -> None:
    s = make()  # building it in a loop is fine: the constructor reads the store once
    for call, twin in ((lambda: s.put(("u",), "k", {"v": 1}), "aput"),
                       (lambda: s.get(("u",), "k"), "aget"),
                       (lambda: s.search(("u",)), "asearch"),
                       (lambda: s.delete(("u",), "k"), "adelete"),
                       (s.list_namespaces, "alist_namespaces"),
                       (lambda: s.batch([GetOp(("u",), "k")]), "abatch"),
                       (s.sweep_ttl, "asweep_ttl")):
        with pytest.raises(asyncio.InvalidStateError, match=rf"await store\.{twin}\("):
            call()
    await s.aput(("u",), "k", {"v": 1})  # nothing was written by the refused calls
    assert [i.value for i in await s.asearch(("u",))] == [{"v": 1}]
    allowed = MarsStore(MemoryStore(clock=FakeClock(), audit_key=KEY, allow_sync_in_loop=True))
    allowed.put(("u",), "k", {"v": 2})  # the documented opt-out
    assert allowed.get(("u",), "k").value == {"v": 2}  # type: ignore[union-attr]
    allowed.memory.close()


# --- in a graph and an agent ----------------------------------------------------------------------


class ToolFake(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools (it answers from its script)."""

    def bind_tools(self, tools: Any, **kw: Any) -> ToolFake:
        return self


@tool
def save_memory(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact about the user."""
    assert runtime.store is not None
    runtime.store.put(("facts",), "f1", {"text": fact})
    return "saved"


class Turn(TypedDict):
    user: str
    text: str
    reply: str


def test_compiled_state_graph_reads_and_writes_the_store(make: Callable[..., MarsStore]) -> None:
    def remember(state: Turn, runtime: Runtime[None]) -> dict[str, str]:
        assert runtime.store is not None
        if state["text"].endswith("?"):
            return {}
        n = len(runtime.store.search(("memories", state["user"]), limit=100))
        runtime.store.put(("memories", state["user"]), f"m{n}", {"text": state["text"]})
        return {}

    def answer(state: Turn, *, store: BaseStore) -> dict[str, str]:
        hits = store.search(("memories", state["user"]), query=state["text"], limit=1)
        return {"reply": hits[0].value["text"] if hits else ""}

    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    s = make()
    graph = builder.compile(store=s)
    graph.invoke({"user": "ana", "text": "I adopted a cat named Miso", "reply": ""})
    graph.invoke({"user": "ana", "text": "My sister lives in Porto", "reply": ""})
    graph.invoke({"user": "bo", "text": "I play the cello", "reply": ""})
    out = graph.invoke({"user": "ana", "text": "what is my cat called?", "reply": ""})
    assert "Miso" in out["reply"]
    assert s.list_namespaces() == [("memories", "ana"), ("memories", "bo")]
    assert len(s.search(("memories", "ana"), limit=10)) == 2  # questions are not stored


def test_create_agent_with_mars_store(make: Callable[..., MarsStore]) -> None:
    model = ToolFake(messages=iter([
        AIMessage("", tool_calls=[{"name": "save_memory", "args": {"fact": "Ana is vegan"},
                                   "id": "c1", "type": "tool_call"}]),
        AIMessage("Noted: you are vegan."),
    ]))
    s = make()
    agent = create_agent(model, tools=[save_memory], store=s)
    out = agent.invoke({"messages": [HumanMessage("Remember that I am vegan")]})
    assert out["messages"][-1].content == "Noted: you are vegan."
    assert s.search(("facts",), query="vegan")[0].value == {"text": "Ana is vegan"}


# --- the example ---------------------------------------------------------------------------------


def test_example_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")  # the semantic default is slow to load
    monkeypatch.setattr(sys, "argv", ["langgraph_store.py", str(tmp_path / "store")])
    runpy.run_path(str(ROOT / "examples" / "langgraph_store.py"), run_name="__main__")
    text = capsys.readouterr().out
    assert "answer from the store: 'My cat is called Miso'" in text
    assert "-> 'I moved to Lisbon last spring'; versions: ['archived', 'active']" in text
    assert "get(m1) still reads through the archive: 'My cat is called Miso'" in text
    assert "one scale: [('m1', 'archived')" in text  # the best match, though archived
    assert "export mentions Zanzibar: False; get(m2) -> None" in text
    assert "reopened: 1 namespace, m0 = 'I moved to Lisbon last spring', m2 = None" in text


@pytest.mark.backend_neutral
def test_docs_quick_start_is_the_example() -> None:
    doc = (ROOT / "docs" / "integrations" / "langgraph_store.md").read_text(encoding="utf-8")
    assert '--8<-- "examples/langgraph_store.py"' in doc  # mkdocs includes the file itself


# --- embed= as LangGraph's IndexConfig takes it ---------------------------------------------


def _letters(texts: list[str]) -> list[list[float]]:
    """A toy embedding: how often a text uses a, e and o (deterministic, 3 dimensions)."""
    return [[t.lower().count(c) + 0.01 for c in "aeo"] for t in texts]


async def _aletters(texts: list[str]) -> list[list[float]]:
    return _letters(texts)


@pytest.mark.parametrize("embed", [_letters, _aletters], ids=["function", "async"])
def test_embed_functions_choose_the_embedder_of_a_new_store(embed: Any) -> None:
    with MarsStore(index={"embed": embed, "dims": 3, "fields": ["text"]}) as store:
        assert store.memory.embedder.dim == 3
        assert store.memory.embedder.name == f"langgraph:{__name__}.{embed.__qualname__}"
        assert store.memory.embedder.embed(["oooo boo"]).tolist()[0] == \
            pytest.approx(_letters(["oooo boo"])[0])  # the function's vectors are the store's
        store.put(("u",), "a", {"text": "aaaa banana"})
        store.put(("u",), "o", {"text": "oooo boo"})
        [hit, *_] = store.search(("u",), query="oooo boo")
        assert hit.key == "o" and (hit.score or 0.0) > 0.0
    assert store.memory.closed  # the store it made is closed with it


def test_an_embeddings_object_and_a_reopened_directory(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    fake = DeterministicFakeEmbedding(size=8)
    with MarsStore(index={"embed": fake, "dims": 8}) as store:
        assert store.memory.embedder.dim == 8
    with MarsStore.open(tmp_path / "s", index={"embed": _letters, "dims": 3},
                        clock=FakeClock()) as store:
        store.put(("u",), "k", {"text": "a note"})
    with MarsStore.open(tmp_path / "s", index={"embed": _letters}, clock=FakeClock()) as store:
        assert store.get(("u",), "k").value == {"text": "a note"}  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="reembed"):  # another function: not this store's
        MarsStore.open(tmp_path / "s", index={"embed": _aletters}, clock=FakeClock())
    from langchain_mars.store import index_embedder

    mine = index_embedder({"embed": _letters})
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), embedder=mine) as memory, \
            pytest.raises(ConfigError, match=r"MarsStore\.open"):
        MarsStore(memory, index={"embed": _aletters})
