"""One namespace model (mars_core.namespaces) across the core and every adapter.

* the encoding: round trip, injectivity, and which strings are valid paths (hypothesis);
* the collision table: values of every framework written through the real adapters land
  in distinct store namespaces, except the documented equivalences (a path string and its
  tuple; an opaque id and the one-part tuple of it);
* ``MarsStore.put("users", ...)``: refused, the store unchanged, reads still work, also
  after reopening;
* NUL, control characters, whitespace-only and malformed paths: refused by every core
  call with a ValidationError, nothing changed.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.errors import ConfigError, ValidationError
from mars_core.io.importers import import_mem0
from mars_core.namespaces import (
    MAX_ENCODED,
    canonical_namespace,
    decode_namespace,
    encode_namespace,
    id_namespace,
)

# --- the encoding -----------------------------------------------------------------------------

_TRICKY = st.sampled_from(["%", "/", "%2F", "%25", "%2f", "%%", "25", "2F", " ", "a", "é",
                           "名前", "✨", "\u200b", "."])
_PART = st.lists(st.one_of(_TRICKY, st.text(st.characters(blacklist_categories=("Cc", "Cs")),
                                            max_size=4)),
                 min_size=1, max_size=6).map("".join).filter(str.strip)
_TUPLES = st.lists(_PART, min_size=1, max_size=4).map(tuple).filter(
    lambda t: len("/".join(p.replace("%", "%25").replace("/", "%2F") for p in t))
    <= MAX_ENCODED)


@settings(max_examples=300)
@given(_TUPLES)
def test_encode_decode_round_trip_and_the_string_reenters_unchanged(
        ns: tuple[str, ...]) -> None:
    encoded = encode_namespace(ns)
    assert decode_namespace(encoded) == ns
    assert canonical_namespace(encoded) == encoded == canonical_namespace(ns)


@settings(max_examples=300)
@given(_TUPLES, _TUPLES)
def test_encoding_is_injective(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    assert (encode_namespace(a) == encode_namespace(b)) == (a == b)


@pytest.mark.parametrize(("a", "b"), [
    (("a/b",), ("a", "b")),
    (("a%2Fb",), ("a/b",)),
    (("a%25",), ("a%",)),
    (("%2F",), ("/",)),
    (("a", "b/c"), ("a/b", "c")),
    (("a%", "2F"), ("a%2F",)),
])
def test_the_classic_collisions_are_distinct(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    assert encode_namespace(a) != encode_namespace(b)
    assert decode_namespace(encode_namespace(a)) == a


def _violates_the_rules(s: str) -> bool:
    """An independent statement of which strings are not namespace paths."""
    if not s or len(s) > MAX_ENCODED or re.search(r"%(?!25|2F)", s):
        return True
    parts = [p.replace("%2F", "/").replace("%25", "%") for p in s.split("/")]
    return any(not p.strip() or re.search("[\x00-\x1f\x7f-\x9f]", p) for p in parts)


@settings(max_examples=500)
@given(st.text(st.sampled_from("ab /%25Ff\x00\t\x85é"), max_size=10))
def test_a_string_is_either_refused_or_a_canonical_path(s: str) -> None:
    refused = False
    try:
        canonical = canonical_namespace(s)
    except ValidationError:
        refused = True
    assert refused == _violates_the_rules(s)
    if not refused:
        assert canonical == s == encode_namespace(decode_namespace(s))


def test_equivalences_of_the_core() -> None:
    assert canonical_namespace("users") == canonical_namespace(("users",)) == "users"
    assert canonical_namespace("memories/bob") == canonical_namespace(("memories", "bob"))
    assert canonical_namespace("memories%2Fbob") == canonical_namespace(("memories/bob",))
    assert id_namespace("memories/bob") == encode_namespace(("memories/bob",)) \
        == "memories%2Fbob"


@pytest.mark.parametrize(("value", "says"), [
    ("100%", "%25"), ("a//b", "%2F"), ("/a", "tuple such as"), ("a/", "tuple such as"),
    ("a\x00b", "U+0000"), ("   ", "whitespace"), (("a", "\t"), "whitespace"),
    (("a\nb",), "U+000A"), ("x" * 257, "256"), (["a"], "tuple such as"), ((), "at least one"),
])
def test_a_bad_namespace_says_how_to_write_it(value: object, says: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(says)):
        canonical_namespace(value)


# --- the collision table, through the real adapters -------------------------------------------


@dataclass(frozen=True)
class Way:
    """One framework value, and the namespace (as parts) the docs say it names."""

    framework: str
    value: object
    parts: tuple[str, ...]


WAYS = [
    Way("core string", "memories/bob", ("memories", "bob")),
    Way("core tuple", ("memories", "bob"), ("memories", "bob")),
    Way("LangGraph MarsStore", ("memories", "bob"), ("memories", "bob")),
    Way("LangChain template", (("memories", "{user_id}"), "bob"), ("memories", "bob")),
    Way("LangChain string template", ("memories/{user_id}", "bob"), ("memories", "bob")),
    Way("LangChain fixed namespace", "memories/bob", ("memories", "bob")),
    Way("LlamaIndex MarsMemory session", "memories/bob", ("memories/bob",)),
    Way("LlamaIndex MarsMemoryBlock session", "memories/bob", ("memories/bob",)),
    Way("mem0 user_id", "memories/bob", ("memories/bob",)),
    Way("LangGraph MarsStore", ("memories/bob",), ("memories/bob",)),
    Way("core string", "memories%2Fbob", ("memories/bob",)),
    Way("LangChain chat history session", "memories/bob", ("default",)),
    Way("LangChain template", (("memories", "{user_id}"), "bob/x"), ("memories", "bob/x")),
    Way("LangGraph MarsStore", ("memories", "bob/x"), ("memories", "bob/x")),
    Way("LangGraph MarsStore", ("memories", "bob", "x"), ("memories", "bob", "x")),
    Way("LlamaIndex MarsMemory session", "memories%2Fbob", ("memories%2Fbob",)),
    Way("LangGraph MarsStore", ("memories%2Fbob",), ("memories%2Fbob",)),
    Way("LlamaIndex MarsMemory session", "100%", ("100%",)),
    Way("core string", "100%25", ("100%",)),
    Way("LangChain template", (("memories", "{user_id}"), "%2F"), ("memories", "%2F")),
    Way("LangGraph MarsStore", ("memories", "%25"), ("memories", "%25")),
    Way("LlamaIndex MarsMemory session", "名前空間 ✨/ana", ("名前空間 ✨/ana",)),
    Way("LangGraph MarsStore", ("名前空間 ✨", "ana"), ("名前空間 ✨", "ana")),
    Way("core string", "users", ("users",)),
    Way("core tuple", ("users",), ("users",)),
]


def _write(store: MemoryStore, lg: Any, way: Way, text: str, key: str) -> None:
    """Write one memory holding ``text`` the way ``way``'s framework does."""
    from llama_index.core.llms import ChatMessage

    from langchain_mars import MarsChatMessageHistory, memory_tools
    from llamaindex_mars import MarsMemory, MarsMemoryBlock

    value: Any = way.value
    if way.framework.startswith("core"):
        store.add(text, namespace=value)
    elif way.framework == "LangGraph MarsStore":
        lg.put(value, key, {"text": text})
    elif way.framework.startswith("LangChain") and "template" in way.framework:
        template, user = value  # a namespace template and the run's user_id
        (remember,) = memory_tools(store, namespace=template, include=("remember",))
        remember.invoke({"content": text}, config={"configurable": {"user_id": user}})
    elif way.framework == "LangChain fixed namespace":
        (remember,) = memory_tools(store, namespace=value, include=("remember",))
        remember.invoke({"content": text})
    elif way.framework == "LangChain chat history session":
        MarsChatMessageHistory(store, value).add_user_message(text)
    elif way.framework == "LlamaIndex MarsMemory session":
        MarsMemory(store, session_id=value).put(ChatMessage(role="user", content=text))
    elif way.framework == "LlamaIndex MarsMemoryBlock session":
        asyncio.run(MarsMemoryBlock(store).aput([ChatMessage(role="user", content=text)],
                                                session_id=value))
    else:
        assert way.framework == "mem0 user_id"
        import_mem0(store, [{"id": key, "memory": text, "user_id": value}])


@pytest.fixture
def adapters() -> Iterator[tuple[MemoryStore, Any]]:
    pytest.importorskip("langgraph.store.base", reason="needs the langgraph extra")
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    from langchain_mars import MarsStore

    store = MemoryStore(budget=4000, clock=FakeClock(), embedder=HashingEmbedder())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangChain's beta warnings
        yield store, MarsStore(store)
    store.close()


def test_distinct_framework_values_never_share_a_store_namespace(
        adapters: tuple[MemoryStore, Any]) -> None:
    store, lg = adapters
    landed: dict[int, str] = {}
    for i, way in enumerate(WAYS):
        _write(store, lg, way, f"Marker zq{i}x was written by {way.framework}", f"k{i}")
    for ns in store.namespaces():
        for node in store.list(ns):
            for i in (i for i in range(len(WAYS)) if f"zq{i}x" in node.content):
                landed[i] = node.namespace
    assert sorted(landed) == list(range(len(WAYS)))  # every way wrote exactly where it says
    for i, way in enumerate(WAYS):
        assert landed[i] == encode_namespace(way.parts), way
        assert any(f"zq{i}x" in n.content for n in store.list(landed[i]))  # re-enters as is
    meanings: dict[str, set[tuple[str, ...]]] = {}
    for i, way in enumerate(WAYS):
        meanings.setdefault(landed[i], set()).add(way.parts)
    assert all(len(parts) == 1 for parts in meanings.values()), meanings
    assert len(meanings) == len({w.parts for w in WAYS})


def test_a_llamaindex_session_does_not_read_the_langgraph_namespace(
        adapters: tuple[MemoryStore, Any]) -> None:
    """The outside probe: session "memories/bob" read ("memories", "bob")'s items."""
    from llamaindex_mars import MarsMemory, MarsRetriever

    store, lg = adapters
    lg.put(("memories", "bob"), "pin", {"text": "Bob's locker code is 4417"})
    memory = MarsMemory(store, session_id="memories/bob")
    assert memory.namespace == "memories%2Fbob"
    assert memory.get(input="What is Bob's locker code?") == []
    assert MarsRetriever(store, session_id="memories/bob").retrieve("Bob's locker code") == []
    hits = MarsRetriever(store, namespace=("memories", "bob")).retrieve("Bob's locker code")
    assert ["4417" in h.node.get_content() for h in hits] == [True]


def test_string_templates_are_paths_like_namespace_strings() -> None:
    pytest.importorskip("langchain_core", reason="needs the langchain extra")
    from langchain_mars import NamespaceTemplate

    values = {"user_id": "a/b%"}
    assert NamespaceTemplate("memories/{user_id}").format(values) \
        == NamespaceTemplate(("memories", "{user_id}")).format(values) == "memories/a%2Fb%25"
    assert NamespaceTemplate("team%2Fone/{user_id}").parts == ("team/one", "{user_id}")
    with pytest.raises(ValidationError, match="%25"):
        NamespaceTemplate("100%/{user_id}")


# --- MarsStore and a string namespace -----------------------------------------------------------


def _view(lg: Any) -> dict[str, Any]:
    """What a LangGraph user and the core see of a MarsStore."""
    return {
        "namespaces": lg.list_namespaces(),
        "search": [(i.namespace, i.key, i.value) for i in lg.search(())],
        "query": [(i.namespace, i.key) for i in lg.search(("users",), query="tea")],
        "core": lg.memory.namespaces(),
        "events": len(lg.memory.audit.events()),
    }


def test_mars_store_refuses_a_string_namespace_and_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.store.base", reason="needs the langgraph extra")
    from langgraph.store.base import PutOp

    from langchain_mars import MarsStore

    def open_store() -> Any:
        memory = MemoryStore.open(tmp_path, index="numpy", embedder=HashingEmbedder(),
                                  clock=FakeClock())
        return MarsStore(memory, search_access=False)  # a read writes no audit event

    lg = open_store()
    lg.put(("users", "ana"), "drink", {"text": "Ana drinks green tea"})
    before = _view(lg)
    refusals: list[Callable[[], object]] = [
        lambda: lg.put("users", "k", {"text": "poison"}),
        lambda: asyncio.run(lg.aput("users", "k", {"text": "poison"})),
        lambda: lg.batch([PutOp(("users", "bo"), "k", {"text": "fine"}),
                          PutOp("users", "k", {"text": "poison"})]),  # all or nothing
        lambda: lg.get("users", "k"),
        lambda: lg.delete("users", "k"),
        lambda: lg.search("users"),
        lambda: asyncio.run(lg.asearch("users", query="tea")),
        lambda: lg.list_namespaces(prefix="users"),
        lambda: lg.erase("users", "k"),
        lambda: lg.node_id("users", "k"),
    ]
    for refused in refusals:
        with pytest.raises(ValidationError, match=r"tuple such as \('users',\)"):
            refused()
    assert _view(lg) == before
    assert asyncio.run(lg.asearch(("users",), query="tea"))[0].key == "drink"
    lg.memory.close()
    lg = open_store()
    try:
        assert _view(lg)["namespaces"] == [("users", "ana")]
        assert _view(lg)["search"] == before["search"]
        assert ("u", "s", "e", "r", "s") not in lg.list_namespaces()
    finally:
        lg.memory.close()


# --- the core refuses what memory text refuses ----------------------------------------------------

BAD = ["a\x00b", "\x00", "   ", "\t", "a/\n", "a\x7fb", "a\x85b", "a\x1b", "a//b", "/a", "a/",
       "", "50%", "%2f", "x" * 257, ("a", "\x00"), ("  ",), (), ("a", 1), ["a"], 7, b"a"]

CALLS: dict[str, Callable[[MemoryStore, Any], object]] = {
    "add": lambda s, ns: s.add("Ana lives in Lisbon", namespace=ns),
    "add_many": lambda s, ns: s.add_many(["fine", {"text": "Ana", "namespace": ns}]),
    "observe": lambda s, ns: s.observe("user", "I live in Lisbon", namespace=ns),
    "observe_many": lambda s, ns: s.observe_many([{"role": "user", "text": "hi",
                                                   "namespace": ns}]),
    "list": lambda s, ns: s.list(ns),
    "retrieve": lambda s, ns: s.retrieve("Lisbon", namespace=ns),
    "recall": lambda s, ns: s.recall("Ana", namespace=ns),
    "render_context": lambda s, ns: s.render_context("Lisbon", namespace=ns),
    "stats": lambda s, ns: s.stats(ns),
    "erase": lambda s, ns: s.erase(namespace=ns),
    "preferences": lambda s, ns: s.preferences(ns),
    "set_preferences": lambda s, ns: s.set_preferences({"private_mode": True}, namespace=ns),
    "maintain": lambda s, ns: s.maintain(ns),
    "receipt": lambda s, ns: s.receipt(ns),
    "export_jsonld": lambda s, ns: s.export_jsonld(namespace=ns),
}


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_every_core_call_refuses_a_bad_namespace(bad: object) -> None:
    with MemoryStore(budget=500, clock=FakeClock(), embedder=HashingEmbedder()) as store:
        store.add("Ana moved to Lisbon", namespace=("people", "ana"))
        before = (store.namespaces(), store.stats(), len(store.audit.events()))
        for name, call in CALLS.items():
            with pytest.raises(ValidationError, match="namespace"):
                call(store, bad)
            assert (store.namespaces(), store.stats(), len(store.audit.events())) == before, \
                name


@pytest.mark.parametrize("config", [{"default_namespace": "a\x00"},
                                    {"default_namespace": "  "},
                                    {"namespace_budgets": {"a//b": 100}}])
def test_the_config_refuses_a_bad_namespace(config: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        MemoryStore(**config)


def test_every_core_call_takes_the_tuple_and_the_string_alike() -> None:
    with MemoryStore(budget=500, clock=FakeClock(), embedder=HashingEmbedder()) as store:
        node = store.add("Ana moved to Lisbon", namespace=("people", "a/na"))
        assert node.namespace == "people/a%2Fna" == store.namespaces()[0]
        forms: list[Any] = [("people", "a/na"), "people/a%2Fna"]
        reads = [(store.list(ns), store.stats(ns),
                  [h.id for h in store.retrieve("Lisbon", namespace=ns, read_only=True)],
                  store.preferences(ns)) for ns in forms]
        assert reads[0] == reads[1]
        assert reads[0][0] == [node]
        assert store.list("people/a/na") == []  # three parts: another namespace
        assert store.erase(namespace=("people", "a/na")).erased == (node.id,)
        assert store.namespaces() == []
