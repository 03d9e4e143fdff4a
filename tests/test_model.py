"""The memory model validates its values and serialises round-trip."""

from __future__ import annotations

import math
import weakref
from datetime import UTC, datetime, timedelta, timezone

import pydantic
import pytest

from mars_core.model import (
    Edge,
    EpisodicPayload,
    MemoryNode,
    MemoryType,
    Predicate,
    Provenance,
    SocialPayload,
    TaskPayload,
    default_payload,
)

NID = "00000000-0000-4000-8000-000000000001"


def node(**kw: object) -> MemoryNode:
    base: dict[str, object] = {"id": NID, "type": "episodic", "content": "hello", "weight": 1}
    base.update(kw)
    return MemoryNode.model_validate(base)


@pytest.mark.parametrize(
    "kw",
    [
        {"sensitivity": 1.5},
        {"sensitivity": -0.01},
        {"sensitivity": math.nan},
        {"weight": 0},
        {"weight": -3},
        {"type": "procedural"},
        {"content": ""},
        {"content": "   \n"},
        {"content": "a\x00b"},
        {"content": "bad \ud800 surrogate"},
        {"payload": {"kind": "task"}},
        {"signals": {"omega": math.inf}},
        {"unknown_field": 1},
        {"provenance": {"reliability": 1.2}},
    ],
)
def test_invalid_values_are_rejected(kw: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        node(**kw)


def test_payload_defaults_and_types() -> None:
    for t in MemoryType:
        n = node(type=t, payload=default_payload(t))
        assert n.payload.kind == t.value
    with pytest.raises(pydantic.ValidationError):
        TaskPayload(priority=2.0)
    with pytest.raises(pydantic.ValidationError):
        EpisodicPayload(emotional_valence=-1.5)


def test_node_is_frozen_and_copy_changes_metadata_only() -> None:
    n = node()
    with pytest.raises(pydantic.ValidationError):
        n.content = "other"  # type: ignore[misc]
    m = n.model_copy(update={"access_count": 3})
    assert (m.access_count, m.content, n.access_count) == (3, "hello", 0)


def test_timestamps_become_utc() -> None:
    local = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    n = node(created_at=local)
    assert n.created_at.tzinfo is UTC and n.created_at.hour == 10
    assert node(created_at=datetime(2026, 5, 1)).created_at.tzinfo is UTC


def test_json_round_trip_is_exact() -> None:
    n = node(type="social", payload=SocialPayload(entity="Ana", attributes={"city": "Lisbon"}),
             provenance=Provenance(source="user", turn=4, derived_from=("x",)),
             metadata={"k": [1, "two"]}, signals={"omega": 0.5})
    assert MemoryNode.model_validate_json(n.model_dump_json()) == n


def test_edges_are_typed_and_reject_self_loops() -> None:
    e = Edge(source="a", predicate="derivesFrom", target="b")
    assert e.predicate is Predicate.DERIVES_FROM
    with pytest.raises(pydantic.ValidationError):
        Edge(source="a", predicate="derivesFrom", target="a")
    with pytest.raises(pydantic.ValidationError):
        Edge(source="a", predicate="likes", target="b")


# --- what a namespace of loaded memories shares (issue 17: peak RSS) -------------------------


def test_equal_field_sets_are_shared_and_a_copy_does_not_touch_them() -> None:
    a, b = node(id="m-a", sensitivity=0.1), node(id="m-b", sensitivity=0.2)
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    c = a.model_copy(update={"access_count": 3, "last_access_step": 2})
    assert "last_access_step" in c.model_fields_set
    assert "last_access_step" not in a.model_fields_set | b.model_fields_set


def test_signal_names_and_zero_one_values_are_shared_but_kept_exact() -> None:
    a = node(id="m-a", signals={"".join(["om", "ega"]): 0.0, "durable": 1.0, "x": -0.0})
    b = node(id="m-b", signals={"omega": 0.0, "durable": 1.0, "x": 0.25})
    ka, kb = (next(k for k in n.signals if k == "omega") for n in (a, b))
    assert ka is kb and a.signals["omega"] is b.signals["omega"]
    assert a.signals["durable"] is b.signals["durable"]
    assert math.copysign(1.0, a.signals["x"]) == -1.0 and b.signals["x"] == 0.25
    assert MemoryNode.model_validate_json(a.model_dump_json()) == a


def test_default_provenance_and_empty_payload_are_one_instance_each() -> None:
    a, b = node(id="m-a"), node(id="m-b", provenance=Provenance(source="user"))
    assert a.provenance is b.provenance and a.payload is b.payload
    c = node(id="m-c", provenance=Provenance(source="user", turn=4))
    assert c.provenance is not a.provenance and c.provenance.turn == 4
    assert a.provenance.turn is None  # sharing never leaks a field from another memory


# --- what a conversation's turns share (peak RSS on the observe path) ----------------------


def fresh(text: str) -> str:
    """A string equal to ``text`` but another object, as each decoded row gives one
    (literals of a module may already be one object)."""
    out = "".join(list(text))
    assert out == text and out is not text
    return out


def test_provenance_strings_are_shared_and_each_turn_keeps_its_own_values() -> None:
    def turn(n: int) -> Provenance:
        return Provenance(source=fresh("assistant"), conversation_id=fresh("conv-1"),
                          session_id=fresh("s-7"), turn=n, jurisdiction=fresh("EU"),
                          derived_from=(fresh("m-root"),))

    a, b = turn(1), turn(2)
    for field in ("source", "conversation_id", "session_id", "jurisdiction"):
        assert getattr(a, field) is getattr(b, field)
    assert a.derived_from[0] is b.derived_from[0]
    assert (a.turn, b.turn) == (1, 2)
    c = Provenance(conversation_id=fresh("conv-2"), session_id=fresh("s-8"), turn=1)
    assert (c.source, c.conversation_id, c.session_id, c.jurisdiction) == \
        ("user", "conv-2", "s-8", None)
    assert a.conversation_id == "conv-1" and a.session_id == "s-7"


def test_an_edge_holds_its_memories_ids_not_copies() -> None:
    a, b = node(id=fresh("m-first"), namespace=fresh("ns-x")), node(id=fresh("m-second"))
    e = Edge(source=fresh("m-first"), predicate=Predicate.TEMPORAL_NEXT,
             target=fresh("m-second"), weight=float("1"))
    assert e.source is a.id and e.target is b.id and e.key == ("m-first", "temporalNext",
                                                                "m-second")
    assert node(id=fresh("m-third"), namespace=fresh("ns-x")).namespace is a.namespace
    assert e.weight is Edge(source="m-x", predicate="isA", target="m-y").weight


def test_a_speakers_turns_share_one_payload_and_nothing_else() -> None:
    def turn(n: int, **payload: object) -> MemoryNode:
        return node(id=f"m-{n}", payload=EpisodicPayload.model_validate(payload))

    a, b = turn(1, participants=(fresh("Ana Lima"),)), turn(2, participants=(fresh("Ana Lima"),))
    assert a.payload is b.payload and a.speaker == "Ana Lima"
    others = [turn(3, participants=("Bo Chen",)),
              turn(4, participants=("Ana Lima",), event="met Bo"),
              turn(5, participants=("Ana Lima",), emotional_valence=-0.0),
              turn(6, participants=("Ana Lima",), emotional_valence=0.5),
              turn(7, participants=("Ana Lima", "Bo Chen"))]
    assert all(o.payload is not a.payload for o in others)
    assert [o.speaker for o in others] == ["Bo Chen", "Ana Lima", "Ana Lima", "Ana Lima",
                                           "Ana Lima"]
    assert isinstance(others[2].payload, EpisodicPayload)
    assert math.copysign(1.0, others[2].payload.emotional_valence) == -1.0  # sign kept
    assert getattr(others[1].payload, "event", None) == "met Bo"
    assert getattr(a.payload, "event", "") is None
    # what a loaded memory passes (every field) is not merged with what a caller set
    loaded = MemoryNode.model_validate_json(a.model_dump_json())
    assert loaded.payload == a.payload and loaded.payload is not a.payload
    assert loaded.payload.model_fields_set != a.payload.model_fields_set
    again = MemoryNode.model_validate_json(b.model_dump_json())
    assert again.payload is loaded.payload


def test_a_shared_payload_goes_with_the_last_memory_holding_it() -> None:
    a = node(id="m-1", payload=EpisodicPayload(participants=(fresh("Zed Quinn"),)))
    b = node(id="m-2", payload=EpisodicPayload(participants=(fresh("Zed Quinn"),)))
    held = weakref.ref(a.payload)
    del a  # freed as its last reference goes: no cycle holds a memory or its payload
    assert held() is b.payload  # b still holds it
    del b  # (a full gc.collect() here took 2 s in a worker of the suite)
    assert held() is None  # no name outlives its memories
    c = node(id="m-3", payload=EpisodicPayload(participants=("Zed Quinn",)))
    assert c.speaker == "Zed Quinn"
