"""Moving from a LangGraph store: what ``import_langgraph`` brings in, ``MarsStore`` serves."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore

from langchain_mars import MarsStore
from mars_core.clock import FakeClock
from mars_core.io.importers import import_langgraph
from mars_core.store import MemoryStore


def test_items_imported_from_a_live_langgraph_store_are_langgraph_items_again() -> None:
    old = InMemoryStore()
    old.put(("memories", "ana"), "k1", {"text": "Ana prefers aisle seats"})
    old.put(("memories", "ana"), "k2", {"text": "Ana is allergic to peanuts", "tag": "health"})
    old.put(("memories", "bo"), "k1", {"text": "Bo plays the cello"})
    with MemoryStore(clock=FakeClock()) as memory:
        assert import_langgraph(memory, old.search(("memories",), limit=100)) == 3
        store = MarsStore(memory)
        item = store.get(("memories", "ana"), "k2")
        assert item is not None and item.value == {"text": "Ana is allergic to peanuts",
                                                   "tag": "health"}
        assert item.created_at == old.get(("memories", "ana"), "k2").created_at  # type: ignore[union-attr]
        hits = store.search(("memories", "ana"), query="what is Ana allergic to?", limit=1)
        assert [h.key for h in hits] == ["k2"]
        assert [h.key for h in store.search(("memories",), filter={"tag": "health"})] == ["k2"]
        assert sorted(store.list_namespaces()) == [("memories", "ana"), ("memories", "bo")]
        store.put(("memories", "bo"), "k1", {"text": "Bo plays the viola"})  # a new version
        assert store.get(("memories", "bo"), "k1").value["text"] == "Bo plays the viola"  # type: ignore[union-attr]


def test_an_explicit_target_namespace_keeps_them_plain_memories() -> None:
    old = InMemoryStore()
    old.put(("memories", "ana"), "k1", {"text": "Ana prefers aisle seats"})
    with MemoryStore(clock=FakeClock()) as memory:
        import_langgraph(memory, old.search(("memories",)), namespace="ana")
        assert [n.content for n in memory.list("ana")] == ["Ana prefers aisle seats"]
        assert MarsStore(memory).list_namespaces() == []
