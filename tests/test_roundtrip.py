"""Anything ``add``/``observe`` accept, an export brings back (issue 30, Build 3).

One validator decides what a memory may hold in both directions
(:func:`mars_core.io.checks.check_storable` for every write, :mod:`mars_core.io.jsonld` for an
import), so a store's own backup always restores. A hypothesis property builds 500
small stores (``make test``: 80) from random calls — hostile values included: metadata
near and past its size and depth bounds, integers past 64 bits, dates outside
1900–2199, lone surrogates, control characters, empty or oversized ids — and checks
that every call either stores or raises one of the library's errors and changes
nothing, and that the export, through its JSON text, imports into a fresh store as the
same memories, edges and counters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mars_core import HashingEmbedder, MemoryStore
from mars_core.errors import MarsError, ValidationError
from mars_core.io.checks import MAX_COUNTER, MAX_INT, MAX_JSON_CHARS, MAX_NESTING
from mars_core.testing import StoreFactory

KEY = bytes(range(32))
NAMESPACES = ["alpha", "beta/gamma"]


@pytest.fixture
def _store(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(budget=20_000, embedder=HashingEmbedder(dim=32), audit_key=KEY)


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels - 1):
        value = {"k": value}
    return value


# --- values a caller may try ----------------------------------------------------------------

_words = st.sampled_from(["Ana", "moved", "to", "Lisbon", "tea", "nurse", "Friday", "plan",
                          "sister", "café", "東京", "🙂", "a\tb", "x\x1by", "line\nbreak"])
texts = st.lists(_words, min_size=1, max_size=6).map(" ".join)
integers = st.one_of(st.integers(-2**63, 2**63), st.sampled_from(
    [MAX_INT, -MAX_INT, MAX_INT + 1, 2**64, -(2**64), 10**30, 0, -1]))
floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([math.nan, math.inf, -0.0, 1e308, 5e-324]))
strings = st.one_of(st.text(max_size=12), st.sampled_from(["\ud800", "a\udfffb", "\x00"]))
scalars = st.one_of(st.none(), st.booleans(), integers, floats, strings)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
metadata = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    st.sampled_from([{"deep": _deep(MAX_NESTING - 1)}, {"deep": _deep(MAX_NESTING)},
                     {"deep": _deep(MAX_NESTING + 8)}, {"big": "z" * (MAX_JSON_CHARS - 20)},
                     {"big": "z" * 2_000_000}, {"t": (1, 2)}, {3: "int key"},
                     {"set": {1, 2}}]))
dates = st.one_of(st.none(), st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(
    9999, 12, 30)), st.sampled_from([datetime(1900, 1, 1), datetime(2199, 12, 31, 23),
                                     datetime(2200, 1, 1), datetime(1899, 12, 31, 23)]))
ids = st.one_of(st.none(), st.sampled_from(["", " ", "chat-1", "x" * 300, "a\nb", "c-2"]))
turns = st.one_of(st.none(), st.sampled_from([0, 7, MAX_COUNTER, MAX_COUNTER + 1, 2**64, -1]))
payloads = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "goal": texts, "priority": floats, "deadline": dates,
    "dependencies": st.lists(st.just("not-an-id"), max_size=1)}))


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """One call a user could make, with what they pass."""
    kind = draw(st.sampled_from(["add", "add", "observe", "update", "set_metadata",
                                 "forget", "add_task"]))
    ns = draw(st.sampled_from(NAMESPACES))
    if kind == "observe":
        return kind, {"role": draw(st.sampled_from(["user", "assistant"])),
                      "text": draw(texts), "namespace": ns, "at": draw(dates),
                      "conversation_id": draw(ids), "speaker": draw(st.none() | _words)}
    if kind == "add_task":
        return "add", {"text": draw(texts), "type": "task", "namespace": ns,
                       "payload": draw(payloads)}
    return kind, {"text": draw(texts), "namespace": ns, "metadata": draw(metadata),
                  "type": draw(st.sampled_from(["episodic", "semantic", "social"])),
                  "sensitivity": draw(st.none() | st.floats(0, 1)),
                  "expires_at": draw(dates), "pinned": draw(st.booleans()),
                  "provenance": {"conversation_id": draw(ids), "turn": draw(turns),
                                 "external_id": draw(ids)},
                  "pick": draw(st.integers(0, 10))}


def _apply(store: MemoryStore, kind: str, a: dict[str, Any]) -> bool:
    """Make the call; False when there was nothing to call it on."""
    ns = a["namespace"]
    if kind == "observe":
        store.observe(a["role"], a["text"], namespace=ns, at=a["at"],
                      conversation_id=a["conversation_id"], speaker=a["speaker"])
        return True
    prov = {k: v for k, v in a.get("provenance", {}).items() if v is not None}
    if kind == "add":
        store.add(a["text"], type=a["type"], namespace=ns, metadata=a.get("metadata"),
                  payload=a.get("payload"), sensitivity=a.get("sensitivity"),
                  expires_at=a.get("expires_at"), pinned=a.get("pinned", False),
                  provenance=prov or None)
        return True
    known = store.list(ns, status=None)
    if not known:
        return False
    target = known[a["pick"] % len(known)]
    if kind == "update":
        store.update(target.id, a["text"], metadata=a["metadata"], namespace=ns)
    elif kind == "set_metadata":
        store.set_metadata(target.id, a["metadata"], expires_at=a["expires_at"],
                           pinned=a["pinned"], namespace=ns)
    elif target.is_active:
        store.forget(target.id, namespace=ns)
    return True


def _contents(store: MemoryStore) -> dict[str, Any]:
    """Everything an export carries, as plain data: memories, edges and counters."""
    doc = json.loads(json.dumps(store.export_jsonld(), ensure_ascii=False))
    graph = sorted(doc["@graph"], key=lambda item: json.dumps(item, sort_keys=True))
    return {"graph": graph, "namespaces": doc["mars:namespaces"]}


def _check_call(store: MemoryStore, kind: str, a: dict[str, Any]) -> None:
    """The call stores, or raises our error and leaves the store as it was."""
    before = (_contents(store), store.audit.head)
    try:
        called = _apply(store, kind, a)
    except MarsError as exc:
        event(f"{kind} refused: {type(exc).__name__}")
        assert (_contents(store), store.audit.head) == before, (kind, a)
    else:
        event(f"{kind} {'stored' if called else 'on nothing'}")


@pytest.mark.parametrize("examples", [
    pytest.param(80, id="smoke"), pytest.param(500, marks=pytest.mark.heavy, id="full")])
def test_every_stored_memory_comes_back_from_its_export(_store: StoreFactory,
                                                        examples: int) -> None:
    """The property on ``examples`` scripts (make test: 80; the full run: 500)."""

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(calls(), min_size=1, max_size=5))
    def roundtrip(script: list[Any]) -> None:
        with _store() as store:
            for ns in NAMESPACES:  # something for update, set_metadata and forget to act on
                store.add("Ana moved to Lisbon", type="semantic", namespace=ns)
                store.observe("user", "My sister is a nurse", namespace=ns,
                              conversation_id="c")
            for kind, a in script:
                _check_call(store, kind, a)
            doc = json.loads(json.dumps(store.export_jsonld(), ensure_ascii=False))
            with _store() as fresh:
                assert fresh.import_jsonld(doc) == len([i for i in doc["@graph"]
                                                        if i["@type"] != "rdf:Statement"])
                assert _contents(fresh) == _contents(store)
                assert fresh.verify().ok

    roundtrip()


# --- the repro of the issue, and the bounds at their edges ----------------------------------


def test_the_issues_repro_is_refused_at_add_and_the_backup_restores(_store: StoreFactory) -> None:
    """``add(metadata={"d": "z" * 2_000_000})`` was stored, and its export refused."""
    with _store() as store:
        store.add("kept", metadata={"d": "z" * 1000})
        before = _contents(store)
        with pytest.raises(ValidationError, match="1048576"):
            store.add("x", metadata={"d": "z" * 2_000_000})
        assert _contents(store) == before
        with _store() as fresh:
            assert fresh.import_jsonld(store.export_jsonld()) == 1
            assert _contents(fresh) == before


BOUNDS: list[tuple[str, Callable[[MemoryStore], Any]]] = [
    ("metadata over 1 MiB", lambda s: s.add("x", metadata={"d": "z" * MAX_JSON_CHARS})),
    ("metadata nested 40 deep", lambda s: s.add("x", metadata={"d": _deep(40)})),
    ("an integer of 2**64", lambda s: s.add("x", metadata={"n": 2**64})),
    ("an integer of 2**63", lambda s: s.add("x", metadata={"n": 2**63})),
    ("expiry in year 1", lambda s: s.add("x", expires_at=datetime(1, 1, 1))),
    ("expiry in year 9999", lambda s: s.add("x", expires_at=datetime(9999, 1, 1))),
    ("a turn in year 1", lambda s: s.observe("user", "hi there", at=datetime(1, 1, 2))),
    ("a turn in year 9999", lambda s: s.observe("user", "hi", at=datetime(9999, 1, 1))),
    ("a deadline in year 9999", lambda s: s.add("x", type="task", payload={
        "goal": "g", "deadline": datetime(9999, 1, 1)})),
    ("a turn number past 2**53", lambda s: s.add("x", provenance={"turn": 2**53})),
    ("an empty conversation id", lambda s: s.observe("user", "hi", conversation_id="")),
    ("metadata changed past its bounds", lambda s: s.set_metadata(
        s.list()[0].id, {"n": 2**64})),
    ("a new version past its bounds", lambda s: s.update(
        s.list()[0].id, "y", metadata={"d": _deep(40)})),
]


@pytest.mark.parametrize(("what", "call"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_what_an_import_refuses_is_refused_at_the_call(_store: StoreFactory,
        what: str, call: Callable[[MemoryStore], Any]) -> None:
    with _store() as store:
        store.add("kept", expires_at=datetime(2199, 12, 31, 23, tzinfo=UTC),
                  metadata={"n": MAX_INT, "m": -MAX_INT, "d": _deep(MAX_NESTING)})
        before = (_contents(store), store.audit.head)
        with pytest.raises(ValidationError):
            call(store)
        assert (_contents(store), store.audit.head) == before, what


def test_the_largest_accepted_values_round_trip(_store: StoreFactory) -> None:
    """The bounds are inclusive where documented (io_checks), in both directions."""
    with _store() as store:
        store.add("edge", metadata={"n": MAX_INT, "m": -MAX_INT, "d": _deep(MAX_NESTING),
                                    "big": "z" * (MAX_JSON_CHARS - 400)},
                  expires_at=datetime(2199, 12, 31, 23, 59, 59), provenance={
                      "turn": MAX_COUNTER, "conversation_id": "c" * 256})
        store.observe("user", "I will fly to Rome tomorrow", at=datetime(1900, 1, 1) +
                      timedelta(hours=1))
        with _store() as fresh:
            fresh.import_jsonld(json.loads(json.dumps(store.export_jsonld())))
            assert _contents(fresh) == _contents(store)
