"""What the store's cost work must not change: a bulk ingest is the same store as single
adds, an access records statistics without re-indexing anything, and the write-behind
index takes a bulk in one call (docs/benchmarks/storage.md, "Store cost")."""

from __future__ import annotations

import pathlib
import random
from datetime import timedelta
from typing import Any

import pytest

from mars_core import MemoryStore
from mars_core.bench.storage import TableEmbedder, make_texts
from mars_core.clock import FakeClock
from mars_core.model import MemoryNode, MemoryType, SocialPayload
from mars_core.policies import make_policy
from mars_core.testing import namespace_state
from mars_core.views.namespace import NamespaceState


def _everything(store: MemoryStore) -> dict[str, Any]:
    """The memories (every field), edges and audit events of a store. An event's record
    of the rows its call wrote (and so its hash) is the call's: one add_many records
    them all on its last event, single adds each on their own; what they leave recorded
    of each row must be the same."""
    nodes = store.list(status=None)
    events = store.audit.events()
    recorded: dict[str, str] = {}
    for ev in events:
        recorded.update(ev.rows)
    return {"memories": [n.model_dump() for n in nodes],
            "history": [[n.id for n in store.history(n.id)] for n in nodes],
            "audit": [e.model_dump(exclude={"rows", "hash", "prev_hash"}) for e in events],
            "rows": recorded, "stats": store.stats()["namespaces"]}


_KEY = b"cost-test-audit-key-0123456789ab"


def _store(path: pathlib.Path, texts: list[str], **kwargs: Any) -> MemoryStore:
    """A store with a fixed clock, seed and audit key: two of them given the same calls
    hold the same memories and the same audit chain."""
    return MemoryStore.open(path, index="numpy", embedder=TableEmbedder(texts),
                            clock=FakeClock(tick=timedelta(seconds=1)), seed=3,
                            audit_key=_KEY, **kwargs)


@pytest.mark.parametrize("budget", [10**6, 60])
def test_add_many_stores_what_single_adds_store(tmp_path: pathlib.Path, budget: int) -> None:
    """Same ids, sensitivities, signals, statistics, archive decisions, audit events and
    recorded rows (see _everything): one transaction, one embedding call, one existence check of the
    ids and batched rows change nothing but the cost. A budget of 60 tokens makes the
    policy archive as the bulk goes."""
    texts = [*make_texts(30, seed=5), "my email is ana@example.com and my doctor is Dr Lee",
             "Ana: I moved to Lisbon last May"]
    with _store(tmp_path / "one", texts, budget=budget) as one, \
            _store(tmp_path / "bulk", texts, budget=budget) as bulk:
        for text in texts:
            one.add(text)
        bulk.add_many(texts)
        expected = _everything(one)
        assert _everything(bulk) == expected
        assert budget > 100 or any(m["status"] == "archived" for m in expected["memories"])
        assert bulk.audit.verify().ok


def test_an_access_changes_statistics_only(tmp_path: pathlib.Path) -> None:
    """The views keep every memory where it was (order, lexical index, known facts:
    the people an entity names stay oldest first), the access is counted, and a
    reopened store reads the same views and statistics."""
    texts = ["Bo is my brother", "Bo plays the cello", "Ana likes green tea"]
    with _store(tmp_path / "s", texts) as store:
        older, newer, _ = store.add_many([
            {"text": texts[0], "type": "social", "payload": {"entity": "Bo"}},
            {"text": texts[1], "type": "social", "payload": {"entity": "Bo"}},
            texts[2]])
        state = namespace_state(store, "default")
        people = state.known.people("Bo")
        ranked = [h.id for h in store.retrieve("Bo brother cello", k=5, read_only=True)]
        order = state.active_ids()
        hits = store.retrieve("Bo is my brother", k=1)
        assert [h.id for h in hits] == [older.id]
        assert store.get(older.id).access_count == 1
        assert state.known.people("Bo") == people == (older.id, newer.id)
        assert [h.id for h in store.retrieve("Bo brother cello", k=5,
                                             read_only=True)] == ranked
        assert state.active_ids() == order
        events = [e for e in store.audit.events() if e.op == "access"]
        assert [e.node_ids for e in events] == [(older.id,)]
    with MemoryStore.open(tmp_path / "s", index="numpy", embedder=TableEmbedder(texts),
                          audit_key=_KEY) as again:
        fresh = namespace_state(again, "default")
        assert fresh.known.people("Bo") == people
        assert again.get(older.id).access_count == 1
        assert again.audit.verify().ok


def test_apply_stats_tells_the_policy_and_touches_nothing_else() -> None:
    """An access moves the memory to the back of the LRU list (the policy hears of it
    through the notice the views return) and leaves the views as they were."""
    nodes = [MemoryNode(id=f"n{i}", type=MemoryType.SOCIAL, content=f"Bo fact {i}",
                        weight=3, namespace="ns", seq=i, touch_seq=i,
                        payload=SocialPayload(entity="Bo"))
             for i in (1, 2, 3)]
    policy = make_policy("lru")
    state = NamespaceState.of("ns", nodes, policy=policy)
    before = (state.known.people("Bo"), state.active_ids(), state.timeline.window(None, None),
              state.used)
    victim = policy.apply(state.view(10**6, nodes[0].created_at, random.Random(0)),
                          3, frozenset()).evictions[0].node_id
    assert victim == "n1"  # least recently used
    state.apply_stats(nodes[0].model_copy(update={"access_count": 1, "touch_seq": 9})).tell(policy)
    assert (state.known.people("Bo"), state.active_ids(), state.timeline.window(None, None),
            state.used) == before
    assert state.node("n1").access_count == 1
    after = policy.apply(state.view(10**6, nodes[0].created_at, random.Random(0)),
                         3, frozenset()).evictions[0].node_id
    assert after == "n2"  # n1 was just used


def test_a_bulk_reaches_a_persistent_index_in_one_write(tmp_path: pathlib.Path) -> None:
    """The write-behind buffer goes to the index in one call per kind of change, which
    the index splits as its client requires (Chroma's max batch size)."""
    pytest.importorskip("chromadb")
    from mars_core.index.chroma import ChromaIndex

    calls: list[int] = []

    class Counting(ChromaIndex):
        def upsert(self, rows: Any, *, new: bool = False) -> None:
            calls.append(len(rows))
            super().upsert(rows, new=new)

    texts = make_texts(1200, seed=9)
    index = Counting(path=tmp_path / "chroma")
    with MemoryStore.open(tmp_path / "s", index=index, embedder=TableEmbedder(texts),
                          budget=10**9) as store:
        store.add_many(texts)
        assert calls == [1200]
        assert len(store.retrieve(texts[7], read_only=True, relative_cutoff=0, k=5)) == 5
