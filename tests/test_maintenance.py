"""Maintenance planners (seed 003): dedup at 0.92, TTL expiry, graduated retention."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from mars_core.errors import ValidationError
from mars_core.maintenance import (
    DEDUP_THRESHOLD,
    Merge,
    memory_kind,
    plan_dedup,
    plan_expiry,
    plan_graduated,
)
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryType,
    Predicate,
    TaskPayload,
    TaskStatus,
    default_payload,
)
from mars_core.scoring.retention import LifecycleConfig, PracticeKind
from mars_core.views.namespace import NamespaceState, NamespaceView, ViewIO

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 8


def node(i: int, *, mtype: MemoryType = MemoryType.EPISODIC, created: datetime = T0,
         pinned: bool = False, payload: Any = None, depth: int = 0,
         metadata: Mapping[str, Any] | None = None, access_count: int = 0,
         last_access: datetime | None = None, expires_at: datetime | None = None
         ) -> MemoryNode:
    return MemoryNode(id=f"n{i:03d}", type=mtype, content=f"memory {i}", namespace="ns",
                      created_at=created, step=i, seq=i, weight=3, pinned=pinned, depth=depth,
                      payload=payload or default_payload(mtype), metadata=dict(metadata or {}),
                      access_count=access_count, last_access_at=last_access,
                      expires_at=expires_at)


def make_view(nodes: Sequence[MemoryNode], vectors: Mapping[str, Any] | None = None,
              edges: Sequence[Edge] = (), now: datetime = T0) -> NamespaceView:
    state = NamespaceState.of("ns", nodes=nodes, edges=edges)
    rng = np.random.default_rng(0)
    vecs = {n.id: rng.normal(size=DIM) for n in nodes}
    vecs.update(vectors or {})
    unit = {k: (np.asarray(v, dtype=np.float32) / np.linalg.norm(v)).astype(np.float32)
            for k, v in vecs.items()}

    def get(ids: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        return np.stack([unit[i] for i in ids]) if ids else np.zeros((0, DIM), np.float32)

    io = ViewIO(get, lambda texts: np.zeros((len(texts), DIM), np.float32), lambda t: 1)
    return state.view(10_000, now, random.Random(0), io=io)


def at_cos(c: float, side: float = 1.0) -> list[float]:
    """A unit vector whose cosine with e1 is ``c`` (``side`` -1: the other half-plane)."""
    return [c, side * math.sqrt(1 - c * c), *([0.0] * (DIM - 2))]


E1 = [1.0, *([0.0] * (DIM - 1))]


def active_goal(i: int) -> MemoryNode:
    return node(i, mtype=MemoryType.TASK,
                payload=TaskPayload(goal="ship", status=TaskStatus.ACTIVE))


# --- dedup ------------------------------------------------------------------------------------


def test_dedup_merges_above_092_and_keeps_the_newer() -> None:
    newest, older, oldest = (node(3, created=T0 + timedelta(hours=3)),
                             node(2, created=T0 + timedelta(hours=2)),
                             node(1, created=T0 + timedelta(hours=1)))
    view = make_view([oldest, older, newest], {newest.id: E1, older.id: at_cos(0.95),
                                               oldest.id: at_cos(0.90, -1.0)})
    [merge] = plan_dedup(view)
    assert (merge.kept_id, merge.dropped_id) == (newest.id, older.id)
    assert merge.cosine == pytest.approx(0.95, abs=1e-6)
    assert merge.rationale == f"duplicate of {newest.id} (cosine 0.950 > 0.92); " \
                              "the newer memory is kept"
    # the 0.90 one is not a duplicate of the newest; of the dropped one it is not compared
    assert plan_dedup(view, threshold=0.96) == []
    assert {m.dropped_id for m in plan_dedup(view, threshold=0.85)} == {older.id, oldest.id}


def test_dedup_threshold_is_strict() -> None:
    a, b = node(2, created=T0 + timedelta(1)), node(1)
    view = make_view([b, a], {a.id: E1, b.id: E1})
    assert plan_dedup(view, threshold=1.0) == []
    assert len(plan_dedup(view, threshold=0.999)) == 1
    with pytest.raises(ValidationError):
        plan_dedup(view, threshold=1.5)
    with pytest.raises(ValidationError):
        plan_dedup(view, block=0)
    assert DEDUP_THRESHOLD == 0.92


def test_dedup_compares_within_one_type() -> None:
    a = node(2, mtype=MemoryType.SEMANTIC, created=T0 + timedelta(1))
    b = node(1)
    assert plan_dedup(make_view([b, a], {a.id: E1, b.id: E1})) == []


def naive_dedup(ids: Sequence[str], x: np.ndarray[Any, Any], droppable: Sequence[bool],
                threshold: float) -> list[Merge]:
    """Seed 003's loop, verbatim in spirit: newest first against the kept list."""
    kept: list[int] = []
    out = []
    for j in range(len(ids)):
        match = next((k for k in kept if float(x[j] @ x[k]) > threshold), None)
        if match is None or not droppable[j]:
            kept.append(j)
        else:
            out.append(Merge(ids[match], ids[j], float(x[j] @ x[match]), threshold))
    return sorted(out, key=lambda m: (m.kept_id, m.dropped_id))


@pytest.mark.parametrize("block", [1, 3, 7, 512])
def test_blocked_dedup_equals_the_naive_loop(block: int) -> None:
    rng = np.random.default_rng(42)
    base = rng.normal(size=(6, DIM))
    n = 40
    rows = base[rng.integers(0, 6, size=n)] + 0.25 * rng.normal(size=(n, DIM))
    nodes = [node(i, created=T0 + timedelta(minutes=i), pinned=(i % 9 == 0)) for i in range(n)]
    view = make_view(nodes, {nd.id: rows[i] for i, nd in enumerate(nodes)})
    got = plan_dedup(view, threshold=0.9, block=block)
    order = sorted(range(n), key=lambda i: -i)  # newest first
    x = view.vectors([nodes[i].id for i in order])
    expected = naive_dedup([nodes[i].id for i in order], x,
                           [not nodes[i].pinned for i in order], 0.9)
    assert [(m.kept_id, m.dropped_id) for m in got] == \
        [(m.kept_id, m.dropped_id) for m in expected]
    assert got, "the fixture must contain duplicates"


def test_dedup_never_drops_pinned_or_task_protected_memories() -> None:
    goal = active_goal(9)
    prereq = node(1)
    pinned = node(2, pinned=True)
    newest = node(3, created=T0 + timedelta(days=1))
    plain = node(4)
    edge = Edge(source=goal.id, predicate=Predicate.REQUIRES, target=prereq.id)
    vecs = {n.id: E1 for n in (prereq, pinned, newest, plain)}
    merges = plan_dedup(make_view([goal, prereq, pinned, newest, plain], vecs, [edge]))
    assert {m.dropped_id for m in merges} == {plain.id}
    assert all(m.kept_id == newest.id for m in merges)


# --- TTL expiry -------------------------------------------------------------------------------


@pytest.mark.parametrize(("mtype", "metadata", "ttl"), [
    (MemoryType.TASK, None, timedelta(days=30)),           # project_status (a done task)
    (MemoryType.EPISODIC, None, timedelta(days=30)),       # observation (ours)
    (MemoryType.SEMANTIC, None, timedelta(days=730)),      # preference
    (MemoryType.EPISODIC, {"kind": "session_state"}, timedelta(hours=24)),
    (MemoryType.EPISODIC, {"kind": "tool_output"}, timedelta(days=7)),
])
def test_ttl_boundaries_are_strict(mtype: MemoryType, metadata: dict[str, str] | None,
                                   ttl: timedelta) -> None:
    done = TaskPayload(status=TaskStatus.DONE) if mtype is MemoryType.TASK else None
    n = node(1, mtype=mtype, metadata=metadata, payload=done)
    assert plan_expiry(make_view([n]), T0 + ttl) == []
    [ev] = plan_expiry(make_view([n]), T0 + ttl + timedelta(microseconds=1))
    assert ev.node_id == n.id and not ev.forced and ev.weight == n.weight
    assert ev.rationale.startswith("expired: TTL ")


def test_expiry_rationale() -> None:
    task = node(1, mtype=MemoryType.TASK,
                payload=TaskPayload(goal="x", status=TaskStatus.DONE))
    [ev] = plan_expiry(make_view([task]), T0 + timedelta(days=41))
    assert ev.rationale == ("expired: TTL 30 days for task memories (seed 003 kind "
                            "project_status), created 41 days ago")
    assert ev.features["ttl_days"] == 30 and ev.features["age_days"] == 41
    session = node(2, metadata={"kind": "session_state"})
    [ev] = plan_expiry(make_view([session]), T0 + timedelta(hours=30))
    assert "TTL 24 hours" in ev.rationale and "created 30 hours ago" in ev.rationale


def test_identity_never_expires_and_explicit_expiry_is_honoured() -> None:
    ident = node(1, metadata={"kind": "identity"})
    assert plan_expiry(make_view([ident]), T0 + timedelta(days=10_000)) == []
    soon = node(2, mtype=MemoryType.SEMANTIC, expires_at=T0 + timedelta(hours=1))
    assert plan_expiry(make_view([soon]), T0 + timedelta(hours=1)) == []
    [ev] = plan_expiry(make_view([soon]), T0 + timedelta(hours=2))
    assert ev.rationale.startswith("expired: explicit expiry at 2026-01-01T01:00:00+00:00")


def test_summaries_use_the_compacted_summary_ttl() -> None:
    summary = node(1, mtype=MemoryType.SEMANTIC, depth=1)
    assert memory_kind(summary) is PracticeKind.COMPACTED_SUMMARY
    assert plan_expiry(make_view([summary]), T0 + timedelta(days=365)) == []
    assert len(plan_expiry(make_view([summary]), T0 + timedelta(days=366))) == 1
    assert memory_kind(node(2, metadata={"kind": "nonsense"})) is PracticeKind.OBSERVATION


def test_expiry_never_proposes_pinned_or_task_protected_memories() -> None:
    goal = active_goal(9)
    prereq, pinned, plain = node(1), node(2, pinned=True), node(3)
    edge = Edge(source=goal.id, predicate=Predicate.REQUIRES, target=prereq.id)
    view = make_view([goal, prereq, pinned, plain], edges=[edge])
    late = T0 + timedelta(days=5000)
    assert [e.node_id for e in plan_expiry(view, late)] == [plain.id]
    open_task = node(5, mtype=MemoryType.TASK)  # a pending goal is an active goal
    assert plan_expiry(make_view([open_task]), late) == []
    assert [e.node_id for e in plan_graduated(view, late).archive] == [plain.id]
    assert plan_dedup(view) == [] or all(m.dropped_id == plain.id for m in plan_dedup(view))


def test_expiry_defaults_to_the_view_clock() -> None:
    n = node(1)
    assert len(plan_expiry(make_view([n], now=T0 + timedelta(days=31)))) == 1


# --- graduated retention ---------------------------------------------------------------------


def test_should_archive_needs_idle_over_90_days_and_low_relevance() -> None:
    n = node(1, mtype=MemoryType.SEMANTIC)
    cfg = LifecycleConfig()
    assert plan_graduated(make_view([n]), T0 + timedelta(days=90), cfg, tiers=False).archive == []
    [ev] = plan_graduated(make_view([n]), T0 + timedelta(days=91), cfg, tiers=False).archive
    assert ev.rationale.startswith("archived: idle 91 days (> 90) and relevance 0.25 ≤ 0.50")
    busy = node(2, mtype=MemoryType.SEMANTIC, access_count=10,
                last_access=T0 + timedelta(days=90))
    assert plan_graduated(make_view([busy]), T0 + timedelta(days=91), tiers=False).archive == []
    decision = node(3, metadata={"kind": "active_decision"})
    assert plan_graduated(make_view([decision]), T0 + timedelta(days=999)).archive == []


def test_graduated_tiers() -> None:
    tool = node(1, metadata={"kind": "tool_output"})
    obs = node(2)
    pref = node(3, mtype=MemoryType.SEMANTIC, access_count=10,
                last_access=T0 + timedelta(days=44))
    view = make_view([tool, obs, pref])
    assert plan_graduated(view, T0 + timedelta(days=7)) == plan_graduated(view, T0)
    week = plan_graduated(view, T0 + timedelta(days=8))
    assert [e.node_id for e in week.archive] == [tool.id] and week.compact == ()
    assert "tool_output 8 days old (7–30 days: raw outputs are archived)" in \
        week.archive[0].rationale
    month = plan_graduated(view, T0 + timedelta(days=45))
    assert obs.id in month.compact and pref.id not in month.compact
    assert plan_graduated(view, T0 + timedelta(days=8), tiers=False).archive == []


def test_planners_ignore_excluded_ids() -> None:
    a, b = node(2, created=T0 + timedelta(1)), node(1)
    view = make_view([b, a], {a.id: E1, b.id: E1})
    late = T0 + timedelta(days=400)
    assert plan_dedup(view, exclude=frozenset({a.id})) == []
    assert [e.node_id for e in plan_expiry(view, late, exclude=frozenset({a.id}))] == [b.id]
    assert [e.node_id for e in plan_graduated(view, late, exclude=frozenset({b.id})).archive] \
        == [a.id]
