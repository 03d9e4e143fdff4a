"""A namespace's views tell its policy nothing; the engine does, and a policy holds exactly
what the views hold: the committed state plus what the current unit staged.

:mod:`mars_core.views.namespace` returns a :class:`~mars_core.views.namespace.Notice` for
each staged change and the engine hands it to the policy as it stages it (a later step of
the same call — an eviction after an insert — plans on it). A unit that fails drops the
namespace's views and its policy with them; both are read again from the records, so no
policy keeps a change that never committed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.errors import MarsBackendError, NotFoundError
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.policies import LRUPolicy, Policy
from mars_core.testing import policy_view, record_store
from mars_core.views import NamespaceState
from mars_core.views.namespace import Notice

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Recorder(LRUPolicy):
    """LRU that writes down every hook it hears, and which memories it tracks."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: list[tuple[str, str]] = []
        self.tracked: set[str] = set()

    def on_insert(self, node: MemoryNode) -> None:
        super().on_insert(node)
        self.heard.append(("insert", node.id))
        self.tracked.add(node.id)

    def on_access(self, node: MemoryNode) -> None:
        super().on_access(node)
        self.heard.append(("access", node.id))

    def on_update(self, node: MemoryNode) -> None:
        super().on_update(node)
        self.heard.append(("update", node.id))

    def on_remove(self, node: MemoryNode) -> None:
        super().on_remove(node)
        self.heard.append(("remove", node.id))
        self.tracked.discard(node.id)


def _node(nid: str, seq: int, **kw: Any) -> MemoryNode:
    return MemoryNode(id=nid, type=MemoryType.EPISODIC, content=f"turn {nid}", weight=2,
                      seq=seq, created_at=T0, **kw)


def test_a_staged_change_tells_the_policy_nothing_until_the_engine_passes_it_on() -> None:
    policy = Recorder()
    state = NamespaceState.of("ns", policy=policy)
    first = _node("m1", 1)
    notice = state.apply_put(first, new=True)
    assert policy.heard == [] and state.is_active("m1")  # the views moved, the policy not
    assert notice == Notice("insert", first)
    notice.tell(policy)
    assert policy.heard == [("insert", "m1")]

    used = first.model_copy(update={"touch_seq": first.touch_seq + 1})
    assert state.apply_stats(used) == Notice("access", used)
    pinned = used.model_copy(update={"pinned": True})
    assert state.apply_put(pinned) == Notice("update", pinned)
    archived = pinned.model_copy(update={"status": MemoryStatus.ARCHIVED})
    assert state.apply_put(archived) == Notice("remove", archived)
    assert state.apply_put(pinned) == Notice("insert", pinned)  # restored
    assert state.apply_delete(pinned) == Notice("remove", pinned)
    assert policy.heard == [("insert", "m1")]  # none of these was passed on
    assert state.apply_delete(_node("m2", 2)) == Notice(None, _node("m2", 2))


def test_a_notice_of_nothing_calls_no_hook() -> None:
    policy = Recorder()
    Notice(None, _node("m1", 1)).tell(policy)
    assert policy.heard == []


def test_stats_of_a_memory_the_views_do_not_hold_is_refused() -> None:
    with pytest.raises(NotFoundError):
        NamespaceState.of("ns").apply_stats(_node("m9", 9))


def _store() -> MemoryStore:
    return MemoryStore(policy="lru", budget=10_000, clock=FakeClock(), audit_key=b"k" * 32,
                       nlp="rules")


def _tracked(store: MemoryStore) -> set[str]:
    """The memories the namespace's policy would forget, all of them: what it tracks."""
    view = policy_view(store)
    return {e.node_id for e in store.policy_for().apply(view, view.used).evictions}


def _listen(policy: Policy, heard: list[tuple[str, str]],
            monkeypatch: pytest.MonkeyPatch) -> None:
    """Write down the hooks ``policy`` hears (its public methods, wrapped)."""
    def listener(hook: str) -> Callable[[MemoryNode], None]:
        real = getattr(policy, hook)

        def wrapped(node: MemoryNode) -> None:
            heard.append((hook, node.id))
            real(node)
        return wrapped

    for hook in ("on_insert", "on_access", "on_update", "on_remove"):
        monkeypatch.setattr(policy, hook, listener(hook))


def test_the_policy_holds_what_the_views_hold_after_every_call() -> None:
    with _store() as store:
        ids = [store.add(f"ana visited city number {i}").id for i in range(4)]
        store.retrieve("city number 2")
        store.forget(ids[0])
        assert _tracked(store) == {n.id for n in store.list()} >= set(ids[1:])
        assert ids[0] not in _tracked(store)


def test_a_failed_unit_leaves_no_staged_change_in_the_policy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy heard the failed call's insert while it was staged; the failure drops
    that policy with the views, and the one read again from the records holds exactly
    the committed memories."""
    with _store() as store:
        for i in range(3):
            store.add(f"bo likes song number {i}")
        kept = {n.id for n in store.list()}
        before = store.policy_for()
        heard: list[tuple[str, str]] = []

        def fails(**_: Any) -> Any:  # write(durable=...)
            raise MarsBackendError("the disk is full")

        with monkeypatch.context() as m:
            _listen(before, heard, m)
            m.setattr(record_store(store), "write", fails)
            with pytest.raises(MarsBackendError):
                store.add("bo likes one more song")
        staged = {nid for hook, nid in heard if hook == "on_insert"} - kept
        assert staged  # heard while the unit was staging
        assert store.policy_for() is not before
        assert _tracked(store) == kept == {n.id for n in store.list()}


def test_a_trim_keeps_the_last_read_and_lets_go_of_the_rest_exactly() -> None:
    """What a trim keeps beyond the active memories is the ``keep`` read last; what a
    call archived, erased or activated is accounted for as it happens (no scan finds it
    later), and the edges of what was let go of go with it."""
    from mars_core.model import Edge, Predicate

    active = [_node(f"a{i}", i) for i in range(3)]
    old = [_node(f"h{i}", 10 + i, status=MemoryStatus.ARCHIVED) for i in range(6)]
    links = [Edge(source=f"h{i}", predicate=Predicate.TEMPORAL_NEXT, target=f"h{i + 1}")
             for i in range(5)]
    state = NamespaceState.of("ns", [*active, *old], links)
    state.trim(keep=0)
    assert set(state.nodes) == {"a0", "a1", "a2"}
    state.read(["h0", "h1", "h2", "h3"], edges=True)  # a search read four
    restored = state.node("h1").model_copy(update={"status": MemoryStatus.ACTIVE})
    state.apply_put(restored)  # one of them made active again
    evicted = state.node("a0").model_copy(update={"status": MemoryStatus.ARCHIVED})
    state.apply_put(evicted)  # an active one archived by this call
    state.apply_delete(state.node("h2"))  # one erased
    state.trim(keep=1)
    # h5: read last (archiving a0 asked which turn of its conversation is the newest)
    assert set(state.nodes) == {"a1", "a2", "h1", "h5"}
    assert state.kept() == 1 and state.count() == 3
    # h0 → h1 stays (h1 is kept); h3 → h4 went with h3; h2's went with the erasure
    assert state.graph.held() == 1
    assert [(e.source, e.target) for e in state.graph.in_edges("h1")] == [("h0", "h1")]
    state.trim(keep=0)
    assert set(state.nodes) == {"a1", "a2", "h1"} and state.kept() == 0
    assert state.node("h3").status is MemoryStatus.ARCHIVED  # read again when asked
    assert "a0" not in state.nodes  # archived by a call: let go of at the first trim
