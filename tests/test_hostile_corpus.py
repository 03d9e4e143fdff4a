"""A hostile-input corpus: every public entry point refuses bad input with a typed error.

Issue 19, item 6: "one typed error for every bad input". Each case calls one public
method — of :class:`~mars_core.store.MemoryStore` (and a few async twins), of the
LangChain/LangGraph adapters, of the LlamaIndex adapters, or a ``mars`` CLI command —
with one bad input, and checks that

* the error is the specific :class:`~mars_core.errors.MarsError` subclass the case
  names (``ValidationError``, ``ConfigError``, ``NotFoundError``, ``ImportFormatError``,
  ``BudgetExceededError``, ``ConflictError``), with a message;
* the store is unchanged: every namespace's memories, archived ones included, and edges
  (the JSON-LD export), ``stats()``, the audit length and head, every namespace's
  privacy preferences, and ``verify()`` still passes (plus the DESIGN §3 invariants);
* for the CLI: a non-zero exit, no traceback, a one-line ``error:`` message for our own
  refusals (click's usage box for arguments it cannot parse), and the store directory's
  content unchanged (a command that would create a store leaves no directory behind).

The cases are data (``(id, expected error, action)``); the ids say the method and the
input. :mod:`tests.test_bad_inputs` holds the first, smaller corpus (JSON-LD documents,
embedders, configuration, accepted Unicode).
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from invariants import check_caches, check_invariants, snapshot
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp
from llama_index.core.base.llms.types import ChatMessage as LIMessage
from shared_world import SharedWorld
from typer.testing import CliRunner

from langchain_mars import (
    MarsChatMessageHistory,
    MarsMemoryMiddleware,
    MarsRetriever,
    MarsStore,
    memory_tools,
)
from langchain_mars.classic import MarsMemory as ClassicMemory
from langchain_mars.store import InvalidNamespaceLabelError
from llamaindex_mars import MarsMemory, MarsMemoryBlock
from llamaindex_mars import MarsRetriever as LIRetriever
from mars_core.cli import app
from mars_core.clock import FakeClock
from mars_core.config import StoreConfig
from mars_core.errors import (
    BudgetExceededError,
    ConfigError,
    ConflictError,
    ImportFormatError,
    MarsError,
    NotFoundError,
    ValidationError,
)
from mars_core.model import MAX_CONTENT_CHARS, MemoryType, SemanticPayload
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory

BUDGET = 200
OTHER_BUDGET = 40
MISSING = "00000000-0000-4000-8000-00000000dead"
NAN, INF = math.nan, math.inf
PAST_END = datetime.max.replace(tzinfo=timezone(timedelta(hours=-5)))  # no UTC time
BEFORE_START = datetime.min.replace(tzinfo=timezone(timedelta(hours=5)))


def _deep(depth: int = 5000) -> dict[str, Any]:
    """A mapping nested ``depth`` levels (deeper than Python's recursion limit)."""
    out: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        out = {"n": out}
    return out


def _deep_list(depth: int = 5000) -> list[Any]:
    out: list[Any] = [1]
    for _ in range(depth):
        out = [out]
    return out


class _Opaque:
    """An object no JSON encoder, enum or path knows."""

    def __repr__(self) -> str:
        return "<opaque>"


OPAQUE = _Opaque()


@dataclass
class World:
    """A populated store (several namespaces, an archived memory, edges, preferences, a
    consent grant, accesses) and the adapters over it."""

    store: MemoryStore
    a: str  # episodic, "default"
    b: str  # semantic, derives from a, isA a
    task: str  # task requiring a
    other: str  # a memory of namespace "other"
    tup: str  # a memory of ("users", "ana")
    archived: str  # a forgotten memory of "default"
    consent: str  # a consent grant of namespace "private"
    lc: MarsStore  # LangGraph store over it, one item in ("items", "bo")
    tmp: Path


@pytest.fixture
def world(make_store: Callable[..., MemoryStore], tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.chdir(tmp_path)  # a path that resolves to the working directory stays here
    return build_world(make_store, tmp_path)


def build_world(make_store: Callable[..., MemoryStore], tmp_path: Path) -> World:
    """The populated store of :class:`World` and the adapters over it."""
    store = make_store(budget=BUDGET, namespace_budgets={"other": OTHER_BUDGET})
    a = store.add("Ana moved to Lisbon in May", type="episodic")
    b = store.add("Ana lives in Lisbon", type="semantic",
                  provenance={"source": "summary", "derived_from": (a.id,)})
    task = store.add("book flights to Lisbon", type="task",
                     payload={"goal": "book flights", "dependencies": (a.id,)})
    other = store.add("Bob likes green tea", namespace="other", sensitivity=0.4)
    tup = store.add("Ana prefers window seats", type="semantic", namespace=("users", "ana"))
    gone = store.add("an old note about the weather", type="episodic")
    store.forget(gone.id)
    store.observe("user", "My sister Carla lives in Porto.", conversation_id="c1")
    store.set_preferences({"private_entities": ["Dora"]}, namespace="private")
    store.add("Dora plays chess on Sundays", namespace="private")
    grant = store.grant_consent(types=["semantic"], purpose="testing", namespace="private")
    store.retrieve("where does Ana live", budget_tokens=40)
    store.link(b.id, "isA", a.id)
    lc = MarsStore(store)
    lc.put(("items", "bo"), "k1", {"text": "Bo drinks black coffee"})
    return World(store, a.id, b.id, task.id, other.id, tup.id, gone.id, grant.id, lc, tmp_path)


def state(store: MemoryStore) -> tuple[Any, ...]:
    """Everything a refused call must leave as it was (and ``verify()`` passes after it:
    :func:`check_invariants`, or the test itself)."""
    prefs = {ns: store.preferences(ns).model_dump(mode="json") for ns in store.namespaces()}
    return (*snapshot(store), store.audit.head, prefs)


class Case(NamedTuple):
    id: str
    expected: type[MarsError]
    action: Callable[[World], Any]


V, N, C, F, B, X, L = (ValidationError, NotFoundError, ConfigError, ImportFormatError,
                       BudgetExceededError, ConflictError, InvalidNamespaceLabelError)

# --- shared bad values ---------------------------------------------------------------------

BAD_NAMESPACES: dict[str, Any] = {
    "empty": "", "blank": "   ", "double-slash": "a//b", "leading-slash": "/a",
    "trailing-slash": "a/", "bare-percent": "100%", "bad-escape": "a%2G", "nul": "a\x00b",
    "bell": "bell\x07", "del-char": "x\x7f", "lone-surrogate": "x\ud800", "too-long": "n" * 300,
    "int": 7, "float": 1.5, "nan": NAN, "bool": True, "bytes": b"ns", "list": ["a"],
    "dict": {"a": 1}, "set": {"a"}, "object": OPAQUE, "empty-tuple": (),
    "tuple-empty-part": ("",), "tuple-blank-part": ("a", " "), "tuple-int-part": ("a", 1),
    "tuple-none-part": (None,), "tuple-nul-part": ("a\x00",), "tuple-too-long": ("x" * 300,),
    "nested-tuple": (("a",),),
}
"""Namespaces every call refuses (ValidationError)."""

FEW_NAMESPACES = ("empty", "double-slash", "nul", "int", "tuple-int-part")
"""The subset tried on every call that takes a namespace (the full set on a few)."""

BAD_IDS: dict[str, Any] = {
    "none": None, "int": 7, "empty": "", "too-long": "x" * 129, "bytes": b"id",
    "list": ["id"], "object": OPAQUE, "nul": "abc\x00", "surrogate": "id\udc00",
}
"""Ids that are not ids at all (ValidationError)."""

BAD_TEXTS: dict[str, Any] = {
    "none": None, "int": 42, "float": 1.5, "bool": True, "bytes": b"Ana likes tea",
    "list": ["Ana"], "dict": {"text": "Ana"}, "object": OPAQUE, "empty": "",
    "whitespace": " \n\t ", "nul": "before\x00after", "lone-surrogate": "broken \ud800 text",
    "low-surrogate": "\udfff", "too-long": "a" * (MAX_CONTENT_CHARS + 1),
}
"""Memory texts every writing call refuses (ValidationError)."""

BAD_PROGRESS: dict[str, Any] = {"bool": True, "string": "bar", "int": 1, "list": [],
                                "object": OPAQUE}
"""``progress=`` values every long call refuses (ValidationError): not None, not callable."""


def _cases_for(prefix: str, values: dict[str, Any], expected: type[MarsError],
               call: Callable[[World, Any], Any], only: tuple[str, ...] | None = None
               ) -> list[Case]:
    names = only if only is not None else tuple(values)
    return [Case(f"{prefix}-{name}", expected,
                 (lambda w, v=values[name]: call(w, v))) for name in names]


def _ns_cases(method: str, call: Callable[[World, Any], Any], *, full: bool = False
              ) -> list[Case]:
    return _cases_for(f"{method}-namespace", BAD_NAMESPACES, V, call,
                      None if full else FEW_NAMESPACES)


def _id_cases(method: str, call: Callable[[World, Any], Any]) -> list[Case]:
    return [*_cases_for(f"{method}-id", BAD_IDS, V, call),
            Case(f"{method}-id-unknown", N, lambda w: call(w, MISSING)),
            Case(f"{method}-id-of-another-namespace", N, lambda w: call(w, w.other))]


# --- MemoryStore: writing ------------------------------------------------------------------

CORE: list[Case] = [
    *_cases_for("add-text", BAD_TEXTS, V, lambda w, v: w.store.add(v)),
    *_ns_cases("add", lambda w, v: w.store.add("fine text", namespace=v), full=True),
    Case("add-heavier-than-budget", B, lambda w: w.store.add("word " * (BUDGET + 1))),
    Case("add-heavier-than-namespace-budget", B,
         lambda w: w.store.add("word " * (OTHER_BUDGET + 1), namespace="other")),
    *_cases_for("add-type", {
        "opinion": "opinion", "empty": "", "upper": "EPISODIC", "none": None, "int": 3,
        "list": ["semantic"], "object": OPAQUE, "bytes": b"semantic",
    }, V, lambda w, v: w.store.add("fine text", type=v)),
    *_cases_for("add-sensitivity", {
        "negative": -0.1, "above-one": 1.1, "nan": NAN, "inf": INF, "minus-inf": -INF,
        "string": "high", "list": [0.5], "object": OPAQUE, "huge-int": 10**400,
        "giant-int": 10**5000,
    }, V, lambda w, v: w.store.add("fine text", sensitivity=v)),
    *_cases_for("add-payload", {
        "string": "urgent", "int": 5, "list": [1, 2], "object": OPAQUE,
        "wrong-model": SemanticPayload(concept="x"), "unknown-field": {"colour": "red"},
        "priority-2": {"priority": 2.0}, "priority-nan": {"priority": NAN},
        "deadline-string": {"deadline": "whenever"}, "status-unknown": {"status": "maybe"},
        "goal-dict": {"goal": {"x": 1}}, "dependencies-string": {"dependencies": "abc"},
        "dependency-missing": {"dependencies": (MISSING,)}, "deep": _deep(),
        "kind-mismatch": {"kind": "semantic"},
    }, V, lambda w, v: w.store.add("fine text", type="task", payload=v),
        only=("string", "int", "list", "object", "wrong-model", "unknown-field", "priority-2",
              "priority-nan", "deadline-string", "status-unknown", "goal-dict",
              "dependencies-string", "deep", "kind-mismatch")),
    Case("add-payload-dependency-missing", N,
         lambda w: w.store.add("fine text", type="task", payload={"dependencies": (MISSING,)})),
    Case("add-payload-dependency-of-another-namespace", N,
         lambda w: w.store.add("fine text", type="task", payload={"dependencies": (w.other,)})),
    *_cases_for("add-provenance", {
        "string": "user", "int": 5, "list": ["user"], "object": OPAQUE,
        "unknown-field": {"who": "me"}, "reliability-2": {"reliability": 2},
        "reliability-nan": {"reliability": NAN}, "source-empty": {"source": ""},
        "source-too-long": {"source": "s" * 65}, "turn-negative": {"turn": -1},
        "turn-float": {"turn": 1.5}, "consent-maybe": {"consent": "maybe"},
        "conversation-int": {"conversation_id": 5},
        "conversation-too-long": {"conversation_id": "c" * 257},
        "derived-from-string": {"derived_from": "abc"},
        "derived-from-none": {"derived_from": [None]},
        "jurisdiction-too-long": {"jurisdiction": "j" * 33}, "deep": _deep(),
    }, V, lambda w, v: w.store.add("fine text", provenance=v)),
    Case("add-provenance-derived-from-missing", N,
         lambda w: w.store.add("fine text", provenance={"derived_from": (MISSING,)})),
    Case("add-provenance-derived-from-other-namespace", N,
         lambda w: w.store.add("fine text", provenance={"derived_from": (w.other,)})),
    *_cases_for("add-metadata", {
        "nan": {"x": NAN}, "inf": {"x": INF}, "set": {"x": {1, 2}},
        "datetime": {"x": datetime(2026, 1, 1)}, "object": {"x": OPAQUE},
        "bytes": {"x": b"raw"}, "int-key": {1: "a"}, "tuple-key": {("a",): 1},
        "deep-dict": _deep(), "deep-list": {"x": _deep_list()}, "string": "colour=red",
        "int": 5, "list": [1, 2], "not-a-mapping": OPAQUE, "surrogate-value": {"x": "\ud800"},
        "surrogate-key": {"\udc00": 1}, "surrogate-nested": {"x": [{"y": "a\ud800"}]},
    }, V, lambda w, v: w.store.add("fine text", metadata=v)),
    *_cases_for("add-pinned", {"string": "yes", "int-2": 2, "none-list": [None],
                               "object": OPAQUE},
                V, lambda w, v: w.store.add("fine text", pinned=v)),
    *_cases_for("add-expires-at", {
        "word": "never", "int": 5, "float-nan": NAN, "list": [2026], "object": OPAQUE,
        "date-string-garbage": "2026-13-45", "past-the-calendar": PAST_END,
        "before-the-calendar": BEFORE_START,
    }, V, lambda w, v: w.store.add("fine text", expires_at=v)),
    Case("add-payload-deadline-past-the-calendar", V, lambda w: w.store.add(
        "fine text", type="task", payload={"deadline": PAST_END})),
    *_cases_for("add-links", {
        "int": 5, "string": "isA", "not-pairs": ["isA"], "triple": [("isA", "x", "y")],
        "single": [("isA",)], "predicate-none": [(None, "x")], "predicate-int": [(5, "x")],
        "predicate-unknown": [("likes", "x")], "object": OPAQUE, "dict": {"isA": "x"},
    }, V, lambda w, v: w.store.add("fine text", links=v)),
    Case("add-links-target-missing", N,
         lambda w: w.store.add("fine text", links=[("isA", MISSING)])),
    Case("add-links-target-none", V, lambda w: w.store.add("fine text", links=[("isA", None)])),
    Case("add-links-target-int", V, lambda w: w.store.add("fine text", links=[("isA", 5)])),
    Case("add-payload-surrogate", V, lambda w: w.store.add(
        "fine text", type="social", payload={"entity": "Ana\ud800"})),
    Case("add-links-target-other-namespace", N,
         lambda w: w.store.add("fine text", links=[("isA", w.other)])),
    # add_many: a bad item anywhere stores none of the call
    *_cases_for("add_many-items", {
        "none": None, "int": 5, "string": "abc", "bytes": b"abc", "object": OPAQUE,
        "mapping": {"text": "a fine text"}, "item-none": [None], "item-int": ["ok", 5],
        "item-empty-mapping": [{}], "item-unknown-field": [{"text": "x", "colour": "red"}],
        "item-text-none": [{"text": None}], "item-bytes": [b"x"],
        "second-empty": ["a fine text", ""], "second-nul": ["a fine text", "bad\x00"],
        "second-bad-namespace": ["a fine text", {"text": "y", "namespace": "a//b"}],
        "second-bad-type": ["a fine text", {"text": "y", "type": "opinion"}],
        "second-bad-metadata": ["a fine text", {"text": "y", "metadata": {"x": {1}}}],
        "second-bad-sensitivity": ["a fine text", {"text": "y", "sensitivity": 7}],
        "item-deep": [_deep()],
    }, V, lambda w, v: w.store.add_many(v)),
    Case("add_many-second-link-missing", N,
         lambda w: w.store.add_many(["a fine text", {"text": "y", "links": [("isA", MISSING)]}])),
    Case("add_many-second-too-heavy", B,
         lambda w: w.store.add_many(["a fine text", "word " * (BUDGET + 1)])),
    Case("add_many-type-opinion", V, lambda w: w.store.add_many(["x y"], type="opinion")),
    *_ns_cases("add_many", lambda w, v: w.store.add_many(["fine text"], namespace=v)),
    # update
    *_id_cases("update", lambda w, v: w.store.update(v, "new text")),
    *_cases_for("update-text", BAD_TEXTS, V, lambda w, v: w.store.update(w.a, v),
                only=("none", "int", "bytes", "empty", "nul", "lone-surrogate", "too-long")),
    Case("update-too-heavy", B, lambda w: w.store.update(w.a, "word " * (BUDGET + 1))),
    *_cases_for("update-metadata", {
        "string": "colour=red", "int": 5, "set": {"x": {1}}, "nan": {"x": NAN},
        "deep": _deep(), "object": OPAQUE,
    }, V, lambda w, v: w.store.update(w.a, "new text", metadata=v)),
    *_cases_for("update-expires-at", {"word": "soon", "int": 5, "object": OPAQUE},
                V, lambda w, v: w.store.update(w.a, "new text", expires_at=v)),
    *_ns_cases("update", lambda w, v: w.store.update(w.a, "new text", namespace=v)),
    # forget / restore
    *_id_cases("forget", lambda w, v: w.store.forget(v)),
    *_cases_for("forget-reason", {"none": None, "int": 5, "bytes": b"why", "object": OPAQUE,
                                  "nul": "why\x00", "too-long": "r" * 10_001, "empty": "",
                                  "surrogate": "why\ud800"},
                V, lambda w, v: w.store.forget(w.a, v)),
    *_ns_cases("forget", lambda w, v: w.store.forget(w.a, namespace=v)),
    *_id_cases("restore", lambda w, v: w.store.restore(v)),
    *_ns_cases("restore", lambda w, v: w.store.restore(w.archived, namespace=v)),
    # link
    *_id_cases("link-source", lambda w, v: w.store.link(v, "isA", w.a)),
    *_id_cases("link-target", lambda w, v: w.store.link(w.task, "isA", v)),
    *_cases_for("link-predicate", {
        "unknown": "likes", "empty": "", "none": None, "int": 5, "upper": "ISA",
        "object": OPAQUE, "list": ["isA"],
    }, V, lambda w, v: w.store.link(w.task, v, w.a)),
    Case("link-self", V, lambda w: w.store.link(w.a, "isA", w.a)),
    Case("link-derivesfrom-cycle", V, lambda w: w.store.link(w.a, "derivesFrom", w.b)),
    *_ns_cases("link", lambda w, v: w.store.link(w.task, "isA", w.a, namespace=v)),
    # observe
    *_cases_for("observe-text", BAD_TEXTS, V, lambda w, v: w.store.observe("user", v),
                only=("none", "int", "bytes", "list", "nul", "lone-surrogate", "too-long",
                      "empty", "whitespace")),
    *_cases_for("observe-role", {
        "none": None, "empty": "", "blank": "  ", "int": 5, "too-long": "r" * 65,
        "nul": "us\x00er", "bytes": b"user", "object": OPAQUE,
    }, V, lambda w, v: w.store.observe(v, "I live in Porto")),
    *_cases_for("observe-conversation-id", {"int": 5, "too-long": "c" * 257, "list": ["c"],
                                            "object": OPAQUE},
                V, lambda w, v: w.store.observe("user", "hello", conversation_id=v)),
    *_cases_for("observe-session-id", {"int": 5, "too-long": "s" * 257},
                V, lambda w, v: w.store.observe("user", "hello", session_id=v)),
    *_cases_for("observe-turn", {"negative": -1, "float": 1.5, "string": "first",
                                 "object": OPAQUE, "nan": NAN},
                V, lambda w, v: w.store.observe("user", "hello", turn=v)),
    *_cases_for("observe-speaker", {"int": 5, "bytes": b"Ana", "list": ["Ana"],
                                    "surrogate": "A\ud800"},
                V, lambda w, v: w.store.observe("user", "hello", speaker=v)),
    *_cases_for("observe-at", {
        "string": "yesterday", "int": 5, "float": 1.5, "object": OPAQUE, "date-string":
        "2026-01-01", "past-the-calendar": PAST_END, "before-the-calendar": BEFORE_START,
    }, V, lambda w, v: w.store.observe("user", "I will fly to Rome tomorrow", at=v)),
    *_cases_for("observe-conversation-id", {"surrogate": "c\ud800"},
                V, lambda w, v: w.store.observe("user", "hello", conversation_id=v)),
    *_cases_for("observe-external-id", {"int": 5, "too-long": "e" * 257},
                V, lambda w, v: w.store.observe("user", "hello", external_id=v)),
    *_ns_cases("observe", lambda w, v: w.store.observe("user", "hello", namespace=v)),
    # observe_many
    *_cases_for("observe_many-turns", {
        "none": None, "int": 5, "string": "hello", "object": OPAQUE,
        "turn-none": [None], "turn-string": ["hello"], "turn-no-text": [{"role": "user"}],
        "turn-unknown-field": [{"role": "user", "text": "x", "colour": "red"}],
        "turn-text-none": [{"role": "user", "text": None}],
        "second-nul": [{"role": "user", "text": "fine"}, {"role": "user", "text": "a\x00"}],
        "second-bad-role": [{"role": "user", "text": "fine"}, {"role": "", "text": "x"}],
        "second-bad-namespace": [{"role": "user", "text": "fine"},
                                 {"role": "user", "text": "x", "namespace": ""}],
        "mapping": {"role": "user", "text": "x"},
    }, V, lambda w, v: w.store.observe_many(v)),
    Case("observe_many-conversation-int", V,
         lambda w: w.store.observe_many([{"role": "user", "text": "x"}], conversation_id=5)),
    *_ns_cases("observe_many",
               lambda w, v: w.store.observe_many([{"role": "user", "text": "x"}], namespace=v)),
    # set_metadata
    *_id_cases("set_metadata", lambda w, v: w.store.set_metadata(v, {"x": 1})),
    *_cases_for("set_metadata-metadata", {
        "nan": {"x": NAN}, "set": {"x": {1}}, "datetime": {"x": datetime(2026, 1, 1)},
        "object": {"x": OPAQUE}, "bytes": {"x": b"b"}, "int-key": {1: "a"},
        "deep": _deep(), "deep-list": {"x": _deep_list()}, "string": "colour=red",
        "int": 5, "list-of-ints": [1, 2], "not-a-mapping": OPAQUE,
        "surrogate": {"x": "\ud800"},
    }, V, lambda w, v: w.store.set_metadata(w.a, v)),
    *_cases_for("set_metadata-expires-at", {"word": "never", "int": 5, "object": OPAQUE,
                                            "past-the-calendar": PAST_END},
                V, lambda w, v: w.store.set_metadata(w.a, expires_at=v)),
    *_cases_for("set_metadata-pinned", {"string": "yes", "int-2": 2, "object": OPAQUE},
                V, lambda w, v: w.store.set_metadata(w.a, pinned=v)),
    *_ns_cases("set_metadata", lambda w, v: w.store.set_metadata(w.a, {"x": 1}, namespace=v)),
]

# --- MemoryStore: reading ------------------------------------------------------------------

READ: list[Case] = [
    *_id_cases("get", lambda w, v: w.store.get(v)),
    *_ns_cases("get", lambda w, v: w.store.get(w.a, namespace=v), full=True),
    Case("get-tuple-namespace-id-in-default", N, lambda w: w.store.get(w.tup)),
    *_ns_cases("list", lambda w, v: w.store.list(v)),
    *_cases_for("list-type", {"opinion": "opinion", "int": 5, "list": [], "object": OPAQUE},
                V, lambda w, v: w.store.list(type=v)),
    *_cases_for("list-status", {"deleted": "deleted", "int": 5, "bool": True,
                                "object": OPAQUE},
                V, lambda w, v: w.store.list(status=v)),
    *_id_cases("history", lambda w, v: w.store.history(v)),
    *_ns_cases("history", lambda w, v: w.store.history(w.a, namespace=v)),
    *_cases_for("retrieve-query", {
        "none": None, "int": 5, "bytes": b"Ana", "list": ["Ana"], "empty": "",
        "whitespace": "   ", "object": OPAQUE, "lone-surrogate": "where \ud800",
        "nul": "Ana\x00", "too-long": "q" * (MAX_CONTENT_CHARS + 1),
    }, V, lambda w, v: w.store.retrieve(v)),
    *_cases_for("retrieve-budget", {
        "zero": 0, "negative": -1, "float": 10.5, "string": "10", "bool": True, "nan": NAN,
        "inf": INF, "list": [10],
    }, V, lambda w, v: w.store.retrieve("Ana", budget_tokens=v)),
    *_cases_for("retrieve-k", {"zero": 0, "negative": -3, "bool": True, "string": "3",
                               "float": 1.5, "nan": NAN},
                V, lambda w, v: w.store.retrieve("Ana", k=v)),
    *_cases_for("retrieve-types", {
        "unknown": ["opinion"], "string": "semantic", "int": 5, "none-item": [None],
        "object": OPAQUE, "nested": [["semantic"]],
    }, V, lambda w, v: w.store.retrieve("Ana", types=v)),
    *_cases_for("retrieve-max-sensitivity", {
        "two": 2.0, "negative": -0.5, "nan": NAN, "inf": INF, "string": "0.5", "bool": True,
        "huge-int": 10**400, "giant-int": 10**5000,
    }, V, lambda w, v: w.store.retrieve("Ana", max_sensitivity=v)),
    *_cases_for("retrieve-since", {"string": "yesterday", "int": 5, "date-string": "2026-01-01",
                                   "past-the-calendar": PAST_END},
                V, lambda w, v: w.store.retrieve("Ana", since=v)),
    *_cases_for("retrieve-until", {"string": "tomorrow", "float": 1.5,
                                   "before-the-calendar": BEFORE_START},
                V, lambda w, v: w.store.retrieve("Ana", until=v)),
    *_cases_for("retrieve-conversation", {"int": 5, "bytes": b"c1", "list": ["c1"]},
                V, lambda w, v: w.store.retrieve("Ana", conversation=v)),
    *_cases_for("retrieve-relative-cutoff", {"two": 2, "negative": -0.1, "nan": NAN,
                                             "string": "0.5", "bool": True},
                V, lambda w, v: w.store.retrieve("Ana", relative_cutoff=v)),
    *_cases_for("retrieve-include-archive", {"string": "yes", "int": 2},
                V, lambda w, v: w.store.retrieve("Ana", include_archive=v)),
    *_cases_for("retrieve-read-only", {"string": "no", "none": None},
                V, lambda w, v: w.store.retrieve("Ana", read_only=v)),
    *_ns_cases("retrieve", lambda w, v: w.store.retrieve("Ana", namespace=v), full=True),
    # recall
    Case("recall-neither", V, lambda w: w.store.recall()),
    Case("recall-both", V, lambda w: w.store.recall("Ana", goal="book flights")),
    *_cases_for("recall-entity", {"int": 5, "empty": "", "blank": "  ", "bytes": b"Ana",
                                  "list": ["Ana"], "nul": "A\x00na",
                                  "lone-surrogate": "\ud800"},
                V, lambda w, v: w.store.recall(v)),
    *_cases_for("recall-goal", {"int": 5, "empty": "", "object": OPAQUE},
                V, lambda w, v: w.store.recall(goal=v)),
    *_cases_for("recall-k", {"zero": 0, "negative": -1, "bool": True, "string": "5",
                             "float": 2.5},
                V, lambda w, v: w.store.recall("Ana", k=v)),
    *_cases_for("recall-max-hops", {"negative": -1, "string": "2", "float": 1.5, "none": None,
                                    "bool": True},
                V, lambda w, v: w.store.recall("Ana", max_hops=v)),
    *_ns_cases("recall", lambda w, v: w.store.recall("Ana", namespace=v)),
    # render_context
    *_cases_for("render_context-query", {"none": None, "int": 5, "empty": "", "bytes": b"q",
                                         "lone-surrogate": "\ud800?"},
                V, lambda w, v: w.store.render_context(v)),
    *_cases_for("render_context-budget", {"zero": 0, "negative": -5, "string": "100",
                                          "float": 99.5},
                V, lambda w, v: w.store.render_context("Ana", budget_tokens=v)),
    *_cases_for("render_context-active-turns", {"negative": -1, "string": "6", "float": 2.5,
                                                "none": None, "bool": True},
                V, lambda w, v: w.store.render_context("Ana", active_turns=v)),
    *_cases_for("render_context-evidence", {"negative": -1, "string": "5", "none": None,
                                            "float": 1.5},
                V, lambda w, v: w.store.render_context("Ana", evidence=v)),
    *_cases_for("render_context-conversation", {"int": 5, "list": ["c1"]},
                V, lambda w, v: w.store.render_context("Ana", conversation=v)),
    *_ns_cases("render_context", lambda w, v: w.store.render_context("Ana", namespace=v)),
    # credit / reinforce
    Case("credit-used-not-offered", V, lambda w: w.store.credit([w.a], [w.b])),
    *_cases_for("credit-used", {"none": None, "int": 5, "string": "abc", "object": OPAQUE,
                                "item-int": [5], "item-none": [None]},
                V, lambda w, v: w.store.credit(v, [w.a])),
    *_cases_for("credit-offered", {"none": None, "int": 5, "string": "abc"},
                V, lambda w, v: w.store.credit([], v)),
    *_ns_cases("credit", lambda w, v: w.store.credit([w.a], [w.a], namespace=v)),
    Case("reinforce-unknown", N, lambda w: w.store.reinforce([MISSING])),
    Case("reinforce-other-namespace", N, lambda w: w.store.reinforce([w.other])),
    Case("reinforce-archived", V, lambda w: w.store.reinforce([w.archived])),
    Case("reinforce-second-unknown", N, lambda w: w.store.reinforce([w.a, MISSING])),
    *_cases_for("reinforce-ids", {"none": None, "int": 5, "string": "abc", "object": OPAQUE,
                                  "item-int": [5], "item-none": [None], "item-list": [[]]},
                V, lambda w, v: w.store.reinforce(v)),
    *_cases_for("reinforce-reason", {"none": None, "int": 5},
                V, lambda w, v: w.store.reinforce([w.a], reason=v)),
    *_ns_cases("reinforce", lambda w, v: w.store.reinforce([w.a], namespace=v)),
    # explain, policy_for, stats, verify, namespaces-taking reads
    *_id_cases("explain", lambda w, v: w.store.explain(v)),
    *_ns_cases("explain", lambda w, v: w.store.explain(w.a, namespace=v)),
    *_ns_cases("policy_for", lambda w, v: w.store.policy_for(v)),
    *_ns_cases("stats", lambda w, v: w.store.stats(v)),
    *_ns_cases("resident", lambda w, v: w.store.resident(v)),
    *_ns_cases("clear_conversation",
               lambda w, v: w.store.clear_conversation("c1", namespace=v)),
    *_cases_for("clear_conversation-id", {"none": None, "int": 5, "empty": "", "blank": "  ",
                                          "nul": "a\x00b", "list": ["c1"]},
                V, lambda w, v: w.store.clear_conversation(v)),
    *_cases_for("clear_conversation-reason", {"none": None, "int": 5, "empty": ""},
                V, lambda w, v: w.store.clear_conversation("c1", reason=v)),
    *_ns_cases("check_output", lambda w, v: w.store.check_output([], namespace=v)),
    *_cases_for("check_output-nodes", {"none": None, "int": 5, "string": "abc",
                                       "object": OPAQUE, "item-int": [5], "item-dict": [{}],
                                       "item-id": ["x"]},
                V, lambda w, v: w.store.check_output(v)),
    *_ns_cases("preferences", lambda w, v: w.store.preferences(v)),
    *_ns_cases("receipt", lambda w, v: w.store.receipt(v)),
    *_cases_for("verify-expected-head", {
        "unknown": "f" * 64, "word": "nope", "empty": "", "int": 5, "bytes": b"head",
        "list": ["x"], "too-long": "a" * 10_000, "nul": "a\x00",
    }, V, lambda w, v: w.store.verify(expected_head=v)),
]

# --- MemoryStore: maintenance, privacy, export/import --------------------------------------


class _WrongDim:
    """An embedder that returns the wrong number of columns."""

    name, dim = "wrong-dim", 16

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        return np.ones((len(texts), 17), dtype=np.float32)


class _NoName(_WrongDim):
    """An embedder without a name."""

    name = ""


ADMIN: list[Case] = [
    *_ns_cases("maintain", lambda w, v: w.store.maintain(v)),
    *_cases_for("maintain-flag", {"string": "yes", "int": 2, "none": None},
                V, lambda w, v: w.store.maintain(ttl=v)),
    *_cases_for("reembed-embedder", {
        "none": None, "string": "hashing", "int": 5, "object": OPAQUE, "no-name": _NoName(),
    }, C, lambda w, v: w.store.reembed(v)),
    Case("reembed-embedder-wrong-dim", V, lambda w: w.store.reembed(_WrongDim())),
    *_cases_for("reembed-batch-size", {"zero": 0, "negative": -1, "string": "10",
                                       "float": 2.5, "bool": True},
                V, lambda w, v: w.store.reembed(w.store.embedder, batch_size=v)),
    # progress callbacks of the long calls: None or a callable, nothing else
    *_cases_for("reindex-progress", BAD_PROGRESS, V, lambda w, v: w.store.reindex(progress=v)),
    *_cases_for("reembed-progress", BAD_PROGRESS, V,
                lambda w, v: w.store.reembed(w.store.embedder, progress=v)),
    *_cases_for("add_many-progress", BAD_PROGRESS, V,
                lambda w, v: w.store.add_many(["fine text"], progress=v)),
    *_cases_for("observe_many-progress", BAD_PROGRESS, V, lambda w, v: w.store.observe_many(
        [{"role": "user", "text": "I live in Porto"}], progress=v)),
    *_cases_for("import-progress", BAD_PROGRESS, V,
                lambda w, v: w.store.import_jsonld(_export_doc(w), progress=v)),
    *_cases_for("import-existing", {"other": "overwrite", "none": None, "bool": True,
                                    "list": ["skip"]},
                V, lambda w, v: w.store.import_jsonld(_export_doc(w), existing=v)),
    # erase
    Case("erase-no-selector", V, lambda w: w.store.erase()),
    Case("erase-two-selectors", V, lambda w: w.store.erase(w.a, entity="Ana")),
    Case("erase-three-selectors", V,
         lambda w: w.store.erase(w.a, entity="Ana", conversation="c1")),
    *_id_cases("erase", lambda w, v: w.store.erase(v)),
    *_cases_for("erase-entity", {"empty": "", "blank": "  ", "int": 5, "bytes": b"Ana",
                                 "list": ["Ana"], "nul": "A\x00na", "object": OPAQUE,
                                 "surrogate": "\ud800"},
                V, lambda w, v: w.store.erase(entity=v)),
    *_cases_for("erase-conversation", {"empty": "", "int": 5, "list": ["c1"],
                                       "object": OPAQUE},
                V, lambda w, v: w.store.erase(conversation=v)),
    *_ns_cases("erase", lambda w, v: w.store.erase(namespace=v), full=True),
    Case("erase-node-of-another-namespace-with-namespace", N,
         lambda w: w.store.erase(w.a, namespace="other")),
    # preferences
    *_cases_for("set_preferences", {
        "none": None, "int": 5, "string": "private", "list": ["Ana"], "object": OPAQUE,
        "unknown-field": {"colour": "red"}, "entities-string": {"private_entities": "Ana"},
        "entities-int": {"private_entities": [5]},
        "retention-unknown-type": {"retention_days": {"opinion": 5}},
        "retention-negative": {"retention_days": {"episodic": -1}},
        "retention-nan": {"retention_days": {"episodic": NAN}},
        "private-floor-2": {"private_floor": 2}, "private-mode-string": {"private_mode": "yes"},
        "consents-garbage": {"consents": [5]}, "deep": _deep(),
        "entities-surrogate": {"private_entities": ["An\ud800"]},
    }, V, lambda w, v: w.store.set_preferences(v)),
    *_ns_cases("set_preferences", lambda w, v: w.store.set_preferences({}, v)),
    *_cases_for("grant_consent-types", {"unknown": ["opinion"], "int": 5, "string": "semantic",
                                        "none-item": [None], "object": OPAQUE},
                V, lambda w, v: w.store.grant_consent(types=v)),
    *_cases_for("grant_consent-entities", {"int": 5, "item-int": [5], "item-none": [None],
                                           "object": OPAQUE, "string": "Ana"},
                V, lambda w, v: w.store.grant_consent(entities=v)),
    *_cases_for("grant_consent-purpose", {"int": 5, "none": None, "list": ["x"]},
                V, lambda w, v: w.store.grant_consent(types=["semantic"], purpose=v)),
    *_cases_for("grant_consent-expires-at", {"word": "never", "int": 5,
                                             "past-the-calendar": PAST_END},
                V, lambda w, v: w.store.grant_consent(types=["semantic"], expires_at=v)),
    *_ns_cases("grant_consent",
               lambda w, v: w.store.grant_consent(types=["semantic"], namespace=v)),
    Case("revoke_consent-unknown", N, lambda w: w.store.revoke_consent("consent-999", "private")),
    Case("revoke_consent-other-namespace", N, lambda w: w.store.revoke_consent(w.consent)),
    *_cases_for("revoke_consent-id", {"none": None, "int": 5, "empty": "", "list": ["x"]},
                V, lambda w, v: w.store.revoke_consent(v, "private")),
    *_ns_cases("revoke_consent", lambda w, v: w.store.revoke_consent(w.consent, v)),
    # export
    Case("export-to-a-directory", V, lambda w: w.store.write_jsonld(w.tmp)),
    Case("export-under-a-file", V, lambda w: w.store.write_jsonld(_file(w) / "x.jsonld")),
    Case("export-path-int", V, lambda w: w.store.write_jsonld(5)),
    Case("export-path-object", V, lambda w: w.store.write_jsonld(OPAQUE)),
    Case("export-path-empty", V, lambda w: w.store.write_jsonld("")),
    Case("export-path-nul", V, lambda w: w.store.write_jsonld(str(w.tmp / "a\x00b"))),
    *_ns_cases("export_jsonld", lambda w, v: w.store.export_jsonld(namespace=v)),
    *_ns_cases("write_jsonld", lambda w, v: w.store.write_jsonld(w.tmp / "ns.jsonld",
                                                                 namespace=v)),
    # import
    Case("import-source-int", F, lambda w: w.store.import_jsonld(5)),
    Case("import-source-none", F, lambda w: w.store.import_jsonld(None)),
    Case("import-source-list", F, lambda w: w.store.import_jsonld([])),
    Case("import-source-object", F, lambda w: w.store.import_jsonld(OPAQUE)),
    Case("import-source-bytes-json", F, lambda w: w.store.import_jsonld(b"{}")),
    Case("import-directory", F, lambda w: w.store.import_jsonld(w.tmp)),
    Case("import-missing-file", F, lambda w: w.store.import_jsonld(w.tmp / "nope.jsonld")),
    Case("import-path-nul", F, lambda w: w.store.import_jsonld(str(w.tmp / "a\x00b"))),
    Case("import-empty-file", F, lambda w: w.store.import_jsonld(_write(w, ""))),
    Case("import-not-utf8", F, lambda w: w.store.import_jsonld(_write(w, b"\xff\xfe{"))),
    Case("import-deeply-nested-json", F,
         lambda w: w.store.import_jsonld(_write(w, "[" * 100_000 + "]" * 100_000))),
    Case("import-deep-mapping", F, lambda w: w.store.import_jsonld(_deep())),
    Case("import-deep-metadata", F, lambda w: w.store.import_jsonld(_export_with(
        w, metadata=_deep()))),
    Case("import-huge-number", F, lambda w: w.store.import_jsonld(_write(
        w, json.dumps(_export_doc(w)).replace('"sensitivity": 0.0', '"sensitivity": 1e999', 1)))),
    Case("import-graph-deep-list", F, lambda w: w.store.import_jsonld(
        {"@type": "mars:MemoryExport", "mars:formatVersion": 1, "@graph": _deep_list()})),
    Case("import-namespaces-not-mapping", F,
         lambda w: w.store.import_jsonld({**_export_doc(w), "mars:namespaces": [1]})),
    Case("import-namespace-key-bad", F, lambda w: w.store.import_jsonld(
        {**_export_doc(w), "mars:namespaces": {"a//b": {"step": 1}}})),
    Case("import-node-namespace-bad", F, lambda w: w.store.import_jsonld(_export_with(
        w, namespace="a//b"))),
    Case("import-node-content-nul", F, lambda w: w.store.import_jsonld(_export_with(
        w, content="bad\x00text"))),
    Case("import-node-metadata-set-like", F, lambda w: w.store.import_jsonld(_export_with(
        w, metadata={"x": OPAQUE}))),
    Case("import-node-signals-string", F, lambda w: w.store.import_jsonld(_export_with(
        w, signals={"omega": "high"}))),
    Case("import-node-created-year-0", F, lambda w: w.store.import_jsonld(_export_with(
        w, created_at="0000-01-01T00:00:00Z"))),
    Case("import-node-id-not-string", F, lambda w: w.store.import_jsonld(_export_with(
        w, **{"@id": 5}))),
    Case("import-node-type-list", F, lambda w: w.store.import_jsonld(_export_with(
        w, **{"@type": ["Episodic"]}))),
    Case("import-own-export", X, lambda w: w.store.import_jsonld(w.store.export_jsonld())),
    Case("from_jsonld-bad-source", F, lambda w: MemoryStore.from_jsonld(5)),
    Case("from_jsonld-bad-config", C, lambda w: MemoryStore.from_jsonld(
        _export_doc(w), budgett=5)),
]


def _file(w: World) -> Path:
    path = w.tmp / "a-file"
    path.write_text("not a directory", encoding="utf-8")
    return path


def _write(w: World, content: str | bytes) -> Path:
    path = w.tmp / "bad.jsonld"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _export_doc(w: World) -> dict[str, Any]:
    """A valid export of another store (its ids clash with none of ``w.store``'s)."""
    with MemoryStore(budget=BUDGET, clock=FakeClock(), audit_key=bytes(32), seed=7) as src:
        src.add("Carla plays the piano", sensitivity=0.0)
        return src.export_jsonld()


def _export_with(w: World, **fields: Any) -> dict[str, Any]:
    doc = _export_doc(w)
    doc["@graph"][0].update(fields)
    return doc


# --- constructors and open -----------------------------------------------------------------


def _ctor(**kw: Any) -> Callable[[World], Any]:
    def action(w: World) -> Any:
        kw.setdefault("clock", FakeClock())
        store = MemoryStore(**kw)
        store.close()  # reached only when the bad input was accepted

    return action


def _open(where: Callable[[World], Any], **kw: Any) -> Callable[[World], Any]:
    def action(w: World) -> Any:
        store = MemoryStore.open(where(w), index="numpy", **kw)
        store.close()

    return action


CONSTRUCT: list[Case] = [
    *_cases_for("init-budget", {"zero": 0, "negative": -5, "string": "100", "bool": True,
                                "float": 10.5, "nan": NAN, "none": None},
                C, lambda w, v: _ctor(budget=v)(w)),
    Case("init-unknown-option", C, _ctor(budgett=5)),
    Case("init-policy-unknown", C, _ctor(policy="no-such-policy")),
    Case("init-policy-int", C, _ctor(policy=5)),
    Case("init-policy-params-unknown", C, _ctor(policy_params={"no_such": 1})),
    Case("init-namespace-budgets-zero", C, _ctor(namespace_budgets={"a": 0})),
    Case("init-namespace-budgets-bad-key", C, _ctor(namespace_budgets={"a//b": 5})),
    Case("init-namespace-budgets-list", C, _ctor(namespace_budgets=[("a", 5)])),
    Case("init-type-shares-unknown", C, _ctor(type_shares={"opinion": 0.5})),
    Case("init-type-shares-negative", C, _ctor(type_shares={"episodic": -0.5})),
    Case("init-default-namespace-bad", C, _ctor(default_namespace="a//b")),
    Case("init-seed-negative", C, _ctor(seed=-1)),
    Case("init-seed-string", C, _ctor(seed="abc")),
    Case("init-token-counter-unknown", C, _ctor(token_counter="no-such-counter")),
    Case("init-nlp-unknown", C, _ctor(nlp="gpt")),
    Case("init-retrieval-dense-weight", C, _ctor(retrieval={"dense_weight": 2.0})),
    Case("init-retrieval-not-mapping", C, _ctor(retrieval=5)),
    Case("init-config-not-config", C, _ctor(config={"budget": 5})),
    Case("init-config-plus-unknown", C, _ctor(config=StoreConfig(), colour="red")),
    Case("init-sensitivity-scoring-string", C, _ctor(sensitivity_scoring="yes")),
    Case("init-dedup-threshold-2", C, _ctor(dedup_threshold=2.0)),
    Case("init-reflect-at-nan", C, _ctor(reflect_at=NAN)),
    Case("init-audit-key-string", C, _ctor(audit_key="secret")),
    Case("init-audit-key-short", C, _ctor(audit_key=b"k")),
    Case("init-audit-key-int", C, _ctor(audit_key=5)),
    Case("init-cache-namespaces-zero", C, _ctor(cache_namespaces=0)),
    Case("init-cache-namespaces-string", C, _ctor(cache_namespaces="many")),
    Case("init-embedder-object", C, _ctor(embedder=OPAQUE)),
    Case("init-embedder-string", C, _ctor(embedder="hashing")),
    Case("init-index-string", C, _ctor(index="numpy")),
    Case("init-records-object", C, _ctor(records=OPAQUE)),
    Case("init-clock-object", C, _ctor(clock=OPAQUE)),
    Case("init-summariser-int", C, _ctor(summariser=5)),
    Case("open-path-is-a-file", C, _open(_file)),
    Case("open-path-under-a-file", C, _open(lambda w: _file(w) / "store")),
    Case("open-path-empty", C, _open(lambda w: "")),
    Case("open-path-int", C, _open(lambda w: 5)),
    Case("open-path-nul", C, _open(lambda w: str(w.tmp / "a\x00b"))),
    Case("open-read-only-no-store", C, lambda w: MemoryStore.open(w.tmp / "none",
                                                                  read_only=True)),
    Case("open-index-unknown", C, lambda w: MemoryStore.open(w.tmp / "s", index="faiss")),
    Case("open-index-list", C, lambda w: MemoryStore.open(w.tmp / "s", index=["numpy"])),
    Case("open-synchronous-unknown", V, _open(lambda w: w.tmp / "s", synchronous="sometimes")),
    Case("open-lock-timeout-negative", V, _open(lambda w: w.tmp / "s", lock_timeout=-1)),
    Case("open-lock-timeout-string", V, _open(lambda w: w.tmp / "s", lock_timeout="soon")),
    Case("open-budget-zero", C, _open(lambda w: w.tmp / "s", budget=0)),
]

# --- async twins ---------------------------------------------------------------------------

ASYNC: list[Case] = [
    Case("aadd-text-none", V, lambda w: asyncio.run(w.store.aadd(None))),
    Case("aadd-namespace-empty", V, lambda w: asyncio.run(w.store.aadd("x", namespace=""))),
    Case("aadd_many-string", V, lambda w: asyncio.run(w.store.aadd_many("abc"))),
    Case("aretrieve-budget-zero", V,
         lambda w: asyncio.run(w.store.aretrieve("Ana", budget_tokens=0))),
    Case("aget-unknown", N, lambda w: asyncio.run(w.store.aget(MISSING))),
    Case("aexplain-unknown", N, lambda w: asyncio.run(w.store.aexplain(MISSING))),
    Case("aforget-id-int", V, lambda w: asyncio.run(w.store.aforget(5))),
    Case("aobserve-role-empty", V, lambda w: asyncio.run(w.store.aobserve("", "hi"))),
    Case("aerase-no-selector", V, lambda w: asyncio.run(w.store.aerase())),
    Case("aset_metadata-set", V,
         lambda w: asyncio.run(w.store.aset_metadata(w.a, {"x": {1}}))),
    Case("aimport_jsonld-int", F, lambda w: asyncio.run(w.store.aimport_jsonld(5))),
    Case("awrite_jsonld-directory", V, lambda w: asyncio.run(w.store.awrite_jsonld(w.tmp))),
    Case("alink-self", V, lambda w: asyncio.run(w.store.alink(w.a, "isA", w.a))),
    Case("arecall-neither", V, lambda w: asyncio.run(w.store.arecall())),
    Case("areinforce-none", V, lambda w: asyncio.run(w.store.areinforce(None))),
]

# --- LangChain / LangGraph adapters --------------------------------------------------------

NS = ("items", "bo")
BAD_LG_NAMESPACES: dict[str, Any] = {
    "string": "users", "empty": (), "dotted": ("a.b",), "empty-label": ("a", ""),
    "nul-label": ("a\x00",), "int-label": (1,), "none-label": (None,), "root-langgraph":
    ("langgraph", "x"), "none": None, "int": 5, "dict": {"a": 1}, "object": OPAQUE,
    "control-label": ("bell\x07",), "surrogate-label": ("\ud800",), "blank-label": ("  ",),
    "too-long": ("x" * 300,),
}
BAD_LG_VALUES: dict[str, Any] = {
    "string": "Ana", "int": 5, "list": [1, 2], "object": OPAQUE, "int-key": {1: "a"},
    "nan": {"x": NAN}, "inf": {"x": INF}, "set": {"x": {1, 2}},
    "datetime": {"x": datetime(2026, 1, 1)}, "bytes": {"x": b"b"}, "deep": _deep(),
    "deep-list": {"x": _deep_list()}, "surrogate-text": {"text": "\ud800"},
    "surrogate-key": {"\udc00": "x"}, "surrogate-unindexed": {"x": 1, "y": ["\ud800"]},
}


def _labels(prefix: str, names: tuple[str, ...], call: Callable[[World, Any], Any]
            ) -> list[Case]:
    """Namespaces LangGraph's own label rules refuse: InvalidNamespaceLabelError."""
    return _cases_for(prefix, BAD_LG_NAMESPACES, L, call, only=names)


def _lc_retriever(**kw: Any) -> Callable[[World], Any]:
    return lambda w: MarsRetriever(store=w.store, **kw)


def _lc_invoke(query: Any = "Ana", config: Any = None, **kw: Any) -> Callable[[World], Any]:
    return lambda w: MarsRetriever(store=w.store).invoke(query, config, **kw)


def _history(w: World, **kw: Any) -> MarsChatMessageHistory:
    return MarsChatMessageHistory(w.store, "s1", **kw)


def _tool(name: str, raise_errors: bool = True, **kw: Any) -> Callable[[World, Any], Any]:
    def call(w: World, args: Any) -> Any:
        tools = {t.name: t for t in memory_tools(w.store, raise_errors=raise_errors, **kw)}
        return tools[name].invoke(args)

    return call


LANGCHAIN: list[Case] = [
    # MarsStore (LangGraph BaseStore)
    *_cases_for("lg.put-namespace", BAD_LG_NAMESPACES, V,
                lambda w, v: w.lc.put(v, "k", {"text": "x"}),
                only=("string", "none", "int", "dict", "object", "control-label",
                      "surrogate-label", "blank-label", "too-long")),
    *_labels("lg.put-namespace", ("empty", "dotted", "empty-label", "nul-label", "int-label",
                                  "none-label", "root-langgraph"),
             lambda w, v: w.lc.put(v, "k", {"text": "x"})),
    *_cases_for("lg.put-value", BAD_LG_VALUES, V, lambda w, v: w.lc.put(NS, "k2", v)),
    Case("lg.put-value-too-heavy", B, lambda w: w.lc.put(NS, "k2", {"text": "word " * 500})),
    Case("lg.put-update-too-heavy", B, lambda w: w.lc.put(NS, "k1", {"text": "word " * 500})),
    Case("lg.put-key-empty", V, lambda w: w.lc.put(NS, "", {"text": "x"})),
    *_cases_for("lg.put-index", {"string": "text", "int-field": [5], "empty-field": [""],
                                 "true": True, "dict": {"text": 1}},
                V, lambda w, v: w.lc.put(NS, "k2", {"text": "x"}, index=v)),
    *_cases_for("lg.put-ttl", {"negative": -1, "nan": NAN, "inf": INF, "string": "5",
                               "bool": True, "huge": 1e10},
                V, lambda w, v: w.lc.put(NS, "k2", {"text": "x"}, ttl=v)),
    *_cases_for("lg.get-namespace", BAD_LG_NAMESPACES, V, lambda w, v: w.lc.get(v, "k1"),
                only=("string", "empty", "none", "object", "control-label")),
    *_labels("lg.get-namespace", ("dotted", "empty-label", "int-label", "nul-label"),
             lambda w, v: w.lc.get(v, "k1")),
    Case("lg.get-key-empty", V, lambda w: w.lc.get(NS, "")),
    *_cases_for("lg.search-prefix", BAD_LG_NAMESPACES, V, lambda w, v: w.lc.search(v),
                only=("string", "none", "object", "int")),
    *_labels("lg.search-prefix", ("dotted", "empty-label", "int-label"),
             lambda w, v: w.lc.search(v)),
    *_cases_for("lg.search-query", {"int": 5, "list": ["Bo"], "bytes": b"Bo",
                                    "surrogate": "\ud800", "nul": "Bo\x00"},
                V, lambda w, v: w.lc.search(("items",), query=v)),
    *_cases_for("lg.search-filter", {
        "string": "text", "list": [1], "regex": {"text": {"$regex": "a"}},
        "gt-string": {"n": {"$gt": "a"}}, "gt-bool": {"n": {"$gt": True}},
        "unknown-op-nested": {"a": {"b": {"$in": [1]}}}, "object": OPAQUE,
        "int-key": {1: "a"},
    }, V, lambda w, v: w.lc.search(("items",), filter=v)),
    *_cases_for("lg.search-limit", {"negative": -1, "string": "5", "bool": True, "float": 2.5,
                                    "nan": NAN, "none": None},
                V, lambda w, v: w.lc.search(("items",), limit=v)),
    *_cases_for("lg.search-offset", {"negative": -1, "string": "0", "float": 0.5},
                V, lambda w, v: w.lc.search(("items",), offset=v)),
    *_cases_for("lg.delete-namespace", BAD_LG_NAMESPACES, V, lambda w, v: w.lc.delete(v, "k1"),
                only=("string", "empty", "none", "too-long")),
    *_labels("lg.delete-namespace", ("dotted", "int-label"), lambda w, v: w.lc.delete(v, "k1")),
    Case("lg.delete-key-empty", V, lambda w: w.lc.delete(NS, "")),
    *_cases_for("lg.list_namespaces-prefix", {"string": "items", "int": 5},
                V, lambda w, v: w.lc.list_namespaces(prefix=v)),
    *_labels("lg.list_namespaces-prefix", ("dotted", "int-label"),
             lambda w, v: w.lc.list_namespaces(prefix=v)),
    Case("lg.list_namespaces-suffix-string", V, lambda w: w.lc.list_namespaces(suffix="bo")),
    *_cases_for("lg.list_namespaces-max-depth", {"zero": 0, "negative": -1, "string": "2",
                                                 "bool": True},
                V, lambda w, v: w.lc.list_namespaces(max_depth=v)),
    *_cases_for("lg.list_namespaces-limit", {"negative": -1, "string": "10"},
                V, lambda w, v: w.lc.list_namespaces(limit=v)),
    *_cases_for("lg.batch", {
        "int": 5, "none": None, "string-op": ["not an op"], "none-op": [None],
        "get-key-int": [GetOp(NS, 3)],  # type: ignore[arg-type]
        "put-then-bad": [PutOp(NS, "k3", {"text": "fine"}), PutOp(NS, "k4", {"x": NAN})],
        "put-string-namespace": [PutOp("users", "k", {"x": 1})],  # type: ignore[arg-type]
        "search-bad-limit": [SearchOp(("items",), limit=-1)],
        "list-bad-match": [ListNamespacesOp(match_conditions=(5,))],  # type: ignore[arg-type]
    }, V, lambda w, v: w.lc.batch(v)),
    Case("lg.batch-put-dotted", L, lambda w: w.lc.batch([PutOp(("a.b",), "k", {"x": 1})])),
    Case("lg.abatch-bad-op", V, lambda w: asyncio.run(w.lc.abatch([None]))),
    Case("lg.aput-dotted", L, lambda w: asyncio.run(w.lc.aput(("a.b",), "k", {"x": 1}))),
    Case("lg.aget-none", V, lambda w: asyncio.run(w.lc.aget(None, "k1"))),
    Case("lg.adelete-string", V, lambda w: asyncio.run(w.lc.adelete("items", "k1"))),
    Case("lg.alist_namespaces-prefix-int", V,
         lambda w: asyncio.run(w.lc.alist_namespaces(prefix=5))),
    Case("lg.asearch-string", V, lambda w: asyncio.run(w.lc.asearch("items"))),
    *_cases_for("lg.erase-namespace", {"string": "items", "none": None},
                V, lambda w, v: w.lc.erase(v, "k1")),
    Case("lg.erase-namespace-dotted", L, lambda w: w.lc.erase(("a.b",), "k1")),
    *_cases_for("lg.start_ttl_sweeper", {"negative": -1, "nan": NAN, "string": "5",
                                         "zero": 0},
                V, lambda w, v: w.lc.start_ttl_sweeper(v)),
    *_cases_for("lg.init", {
        # memory=None is a new store in RAM, as LangGraph's InMemoryStore() (issue 34)
        "memory-string": {"memory": "./mars_data"}, "index-embed-int": {"index": {"embed": 5}},
        "memory-type-opinion": {"memory_type": "opinion"},
        "memory-type-int": {"memory_type": 5}, "index-unknown-key": {"index": {"colour": 1}},
        "index-dims": {"index": {"dims": 7}}, "index-fields-int": {"index": {"fields": [5]}},
        "index-int": {"index": 5}, "index-string": {"index": "text"},
        "ttl-string": {"ttl": "5"}, "ttl-negative": {"ttl": {"default_ttl": -1}},
        "ttl-unknown": {"ttl": {"colour": 1}}, "ttl-refresh-string": {
            "ttl": {"refresh_on_read": "yes"}},
        "search-access-string": {"search_access": "yes"},
    }, C, lambda w, v: MarsStore(**{"memory": w.store, **v})),
    # MarsRetriever (LangChain)
    *_cases_for("lc.retriever-init", {
        "k-negative": {"k": -1}, "k-zero": {"k": 0}, "k-bool": {"k": True},
        "k-string": {"k": "3"}, "k-float": {"k": 1.5},
        "max-sensitivity-2": {"max_sensitivity": 2.0},
        "max-sensitivity-negative": {"max_sensitivity": -0.1},
        "max-sensitivity-nan": {"max_sensitivity": NAN},
        "max-sensitivity-string": {"max_sensitivity": "high"},
        "score-cutoff-zero": {"score_cutoff": 0.0}, "score-cutoff-2": {"score_cutoff": 2.0},
        "score-cutoff-nan": {"score_cutoff": NAN}, "types-unknown": {"types": ["opinion"]},
        "types-string": {"types": "semantic"}, "types-int": {"types": 5},
        "budget-zero": {"budget_tokens": 0}, "budget-negative": {"budget_tokens": -5},
        "namespace-empty": {"namespace": ""}, "namespace-int": {"namespace": 5},
        "namespace-nul": {"namespace": ("a\x00",)}, "namespace-bad-template": {
            "namespace": ("{user id}",)}, "unknown-field": {"colour": "red"},
        "include-archive-string": {"include_archive": "maybe"},
    }, V, lambda w, v: MarsRetriever(store=w.store, **v)),
    Case("lc.retriever-init-store-none", V, lambda w: MarsRetriever(store=None)),
    *_cases_for("lc.retriever-invoke", {
        "k-negative": {"k": -1}, "k-string": {"k": "2"},
        "max-sensitivity-2": {"max_sensitivity": 2.0}, "unknown": {"top_k": 3},
        "namespace-empty": {"namespace": ""}, "types-unknown": {"types": ["opinion"]},
        "budget-zero": {"budget_tokens": 0}, "score-cutoff-2": {"score_cutoff": 2.0},
    }, V, lambda w, v: MarsRetriever(store=w.store).invoke("Ana", **v)),
    *_cases_for("lc.retriever-query", {"none": None, "int": 5, "empty": "", "bytes": b"Ana"},
                V, lambda w, v: MarsRetriever(store=w.store).invoke(v)),
    Case("lc.retriever-template-unfilled", V,
         lambda w: MarsRetriever(store=w.store, namespace=("m", "{user_id}")).invoke("Ana")),
    Case("lc.retriever-template-filled-bad", V, lambda w: MarsRetriever(
        store=w.store, namespace=("m", "{user_id}")).invoke(
        "Ana", {"configurable": {"user_id": "a\x00"}})),
    Case("lc.retriever-ainvoke-k", V,
         lambda w: asyncio.run(MarsRetriever(store=w.store).ainvoke("Ana", k=0))),
    # middleware
    *_cases_for("lc.middleware-init", {
        "budget-zero": {"budget_tokens": 0}, "budget-string": {"budget_tokens": "512"},
        "budget-bool": {"budget_tokens": True}, "evidence-zero": {"evidence": 0},
        "min-overlap-zero": {"min_overlap": 0.0}, "min-overlap-2": {"min_overlap": 2.0},
        "min-overlap-nan": {"min_overlap": NAN}, "min-overlap-string": {"min_overlap": "0.5"},
        "min-overlap-none": {"min_overlap": None}, "namespace-int": {"namespace": 5},
        "namespace-bad-path": {"namespace": "a//b"}, "preamble-int": {"preamble": 5},
        "observe-string": {"observe": "yes"}, "store-none": {"store": None},
    }, V, lambda w, v: MarsMemoryMiddleware(**{"store": w.store, **v})),
    # tools
    *_cases_for("lc.tools-init", {
        "k-zero": {"k": 0}, "k-string": {"k": "5"}, "include-unknown": {"include": ("x",)},
        "include-empty": {"include": ()}, "include-string": {"include": "recall"},
        "namespace-int": {"namespace": 5}, "budget-zero": {"budget_tokens": 0},
        "budget-string": {"budget_tokens": "many"}, "store-none": {"store": None},
    }, V, lambda w, v: memory_tools(**{"store": w.store, **v})),
    *_cases_for("lc.tools-remember", {
        "content-int": {"content": 5}, "content-none": {"content": None},
        "content-empty": {"content": ""}, "content-nul": {"content": "a\x00b"},
        "type-opinion": {"content": "x", "memory_type": "opinion"}, "missing": {},
    }, V, _tool("remember")),
    *_cases_for("lc.tools-recall", {"query-empty": {"query": ""}, "query-int": {"query": 5},
                                    "missing": {}},
                V, _tool("recall")),
    *_cases_for("lc.tools-forget", {"unknown": {"memory_id": MISSING}},
                N, _tool("forget")),
    *_cases_for("lc.tools-forget", {"id-int": {"memory_id": 5}, "id-empty": {"memory_id": ""}},
                V, _tool("forget")),
    # chat history
    *_cases_for("lc.history-init", {
        "session-none": {"session_id": None}, "session-empty": {"session_id": ""},
        "session-int": {"session_id": 5}, "session-blank": {"session_id": "  "},
        "session-nul": {"session_id": "s\x00"}, "session-too-long": {"session_id": "s" * 257},
        "budget-zero": {"budget_tokens": 0}, "budget-string": {"budget_tokens": "x"},
        "max-messages-zero": {"max_messages": 0}, "clear-mode": {"clear_mode": "delete"},
        "namespace-bad": {"namespace": "a//b"}, "namespace-int": {"namespace": 5},
        "store-none": {"store": None},
    }, V, lambda w, v: MarsChatMessageHistory(**{"store": w.store, "session_id": "s1", **v})),
    *_cases_for("lc.history-add_messages", {
        "none-item": [None], "string-item": ["hello"], "string": "hello", "int": 5,
        "none": None, "dict-item": [{"role": "user", "content": "x"}],
        "second-none": [HumanMessage("fine"), None],
        "nul": [HumanMessage("a\x00b")], "surrogate": [HumanMessage("\ud800")],
        "second-nul": [HumanMessage("fine"), AIMessage("bad\x00")],
        "role-empty": [ChatMessage(content="x", role="")],
        "role-too-long": [ChatMessage(content="x", role="r" * 65)],
        "too-long": [HumanMessage("a" * (MAX_CONTENT_CHARS + 1))],
    }, V, lambda w, v: _history(w).add_messages(v)),
    Case("lc.history-aadd_messages-nul", V,
         lambda w: asyncio.run(_history(w).aadd_messages([HumanMessage("x"),
                                                          HumanMessage("\x00")]))),
    # classic memory
    *_cases_for("lc.classic-init", {
        "budget-zero": {"budget_tokens": 0}, "session-empty": {"session_id": ""},
        "namespace-bad": {"namespace": "a//b"}, "clear-mode": {"clear_mode": "wipe"},
        "evidence-negative": {"evidence": -1},
    }, V, lambda w, v: ClassicMemory(**{"store": w.store, **v})),
    *_cases_for("lc.classic-save_context", {
        "input-int": ({"input": 5}, {"output": "ok"}),
        "output-none": ({"input": "hi"}, {"output": None}),
        "output-nul": ({"input": "hi"}, {"output": "bad\x00"}),
        "two-inputs": ({"a": "x", "b": "y"}, {"output": "ok"}),
        "inputs-none": (None, {"output": "ok"}),
    }, V, lambda w, v: ClassicMemory(store=w.store).save_context(*v)),
    Case("lc.classic-load-input-int", V,
         lambda w: ClassicMemory(store=w.store).load_memory_variables({"input": 5})),
]

# --- LlamaIndex adapters -------------------------------------------------------------------


def _mem(w: World, **kw: Any) -> MarsMemory:
    return MarsMemory(w.store, session_id="alice", **kw)


LLAMAINDEX: list[Case] = [
    *_cases_for("li.memory-init", {
        "session-int": {"session_id": 5}, "session-empty": {"session_id": ""},
        "session-blank": {"session_id": "  "}, "session-nul": {"session_id": "a\x00"},
        "session-too-long": {"session_id": "s" * 300}, "session-list": {"session_id": ["a"]},
        "token-limit-zero": {"token_limit": 0}, "token-limit-string": {"token_limit": "100"},
        "token-limit-bool": {"token_limit": True}, "recall-negative": {"recall_tokens": -1},
        "recall-above-limit": {"token_limit": 100, "recall_tokens": 200},
        "evidence-zero": {"evidence": 0}, "observe-roles-string": {"observe_roles": "user"},
        "observe-roles-int": {"observe_roles": [5]}, "insert": {"insert": "middle"},
        "conversation-int": {"conversation_id": 5}, "conversation-blank": {
            "conversation_id": "  "}, "store-none": {"store": None},
        "redact-string": {"redact": "no"},
    }, V, lambda w, v: MarsMemory(**{"store": w.store, **v})),
    *_cases_for("li.memory-put", {
        "none": None, "string": "hello", "dict": {"role": "user", "content": "x"},
        "langchain-message": HumanMessage("x"), "nul": LIMessage(role="user", content="a\x00"),
        "surrogate": LIMessage(role="user", content="\udfff"),
        "too-long": LIMessage(role="user", content="a" * (MAX_CONTENT_CHARS + 1)),
    }, V, lambda w, v: _mem(w).put(v)),
    Case("li.memory-aput-none", V, lambda w: asyncio.run(_mem(w).aput(None))),
    *_cases_for("li.memory-set", {
        "none": None, "string": "hello", "none-item": [None], "int": 5,
        "second-nul": [LIMessage(role="user", content="fine"),
                       LIMessage(role="assistant", content="bad\x00")],
        "second-none": [LIMessage(role="user", content="fine"), None],
    }, V, lambda w, v: _mem(w).set(v)),
    Case("li.memory-aset-second-nul", V, lambda w: asyncio.run(_mem(w).aset(
        [LIMessage(role="user", content="fine"), LIMessage(role="user", content="\x00")]))),
    Case("li.memory-put_messages-second-nul", V, lambda w: _mem(w).put_messages(
        [LIMessage(role="user", content="fine"), LIMessage(role="user", content="\x00")])),
    *_cases_for("li.memory-get", {
        "input-int": {"input": 5}, "input-bytes": {"input": b"q"},
        "initial-negative": {"initial_token_count": -1},
        "initial-string": {"initial_token_count": "10"},
        "initial-bool": {"initial_token_count": True},
        "input-surrogate": {"input": "\ud800 tea"}, "input-nul": {"input": "tea\x00"},
    }, V, lambda w, v: _mem(w).get(**v)),
    Case("li.memory-aget-input-int", V, lambda w: asyncio.run(_mem(w).aget(input=5))),
    *_cases_for("li.retriever-init", {
        "k-zero": {"k": 0}, "k-string": {"k": "3"}, "budget-zero": {"budget_tokens": 0},
        "types-unknown": {"types": ["opinion"]}, "types-int": {"types": 5},
        "types-string": {"types": "semantic"}, "max-sensitivity-2": {"max_sensitivity": 2.0},
        "max-sensitivity-string": {"max_sensitivity": "high"},
        "max-sensitivity-nan": {"max_sensitivity": NAN},
        "score-cutoff-zero": {"score_cutoff": 0}, "namespace-empty": {"namespace": ""},
        "namespace-int": {"namespace": 5}, "both": {"namespace": "a", "session_id": "b"},
        "session-int": {"session_id": 5}, "session-nul": {"session_id": "\x00"},
        "store-none": {"store": None}, "include-archive-string": {"include_archive": "no"},
    }, V, lambda w, v: LIRetriever(**{"store": w.store, **v})),
    *_cases_for("li.retriever-retrieve", {"empty": "", "int": 5, "none": None,
                                          "surrogate": "\ud800"},
                V, lambda w, v: LIRetriever(w.store).retrieve(v)),
    Case("li.retriever-aretrieve-empty", V,
         lambda w: asyncio.run(LIRetriever(w.store).aretrieve(""))),
    *_cases_for("li.block-init", {
        "store-none": {"store": None}, "name-empty": {"name": ""},
        "namespace-bad": {"namespace": "a//b"}, "budget-zero": {"budget_tokens": 0},
        "budget-tiny": {"budget_tokens": 1}, "evidence-zero": {"evidence": 0},
        "priority-negative": {"priority": -1}, "observe-roles-string": {"observe_roles": "user"},
    }, V, lambda w, v: MarsMemoryBlock(**{"store": w.store, **v})),
    Case("li.block-aput-nul", V, lambda w: asyncio.run(MarsMemoryBlock(w.store).aput(
        [LIMessage(role="user", content="fine"), LIMessage(role="user", content="a\x00")],
        session_id="alice"))),
    Case("li.block-aput-bad-session", V, lambda w: asyncio.run(MarsMemoryBlock(w.store).aput(
        [LIMessage(role="user", content="fine")], session_id="a\x00"))),
]

ALL: list[Case] = [*CORE, *READ, *ADMIN, *CONSTRUCT, *ASYNC, *LANGCHAIN, *LLAMAINDEX]


REUSES = 25
"""Refusal cases one shared world serves before it is built afresh (it gathers one
archived memory per case, which every ``state`` comparison reads)."""


@pytest.fixture(scope="module")
def shared_world() -> Iterator[SharedWorld]:
    with StoreFactory(audit_key=bytes(range(32))) as factory:  # conftest's `key`
        shared = SharedWorld(lambda tmp, _: build_world(factory, tmp),
                             lambda world: world.store.close(), REUSES,
                             lambda world: check_invariants(world.store),
                             lambda world: check_caches(world.store))
        yield shared
        shared.finish()


@pytest.fixture
def refusal_world(shared_world: SharedWorld, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> World:
    """The :class:`World` of :func:`world`, shared by the refusal cases (building one is
    most of a case's time): each case compares the state before and after its call."""
    monkeypatch.chdir(tmp_path)
    return shared_world.get(tmp_path)


@pytest.mark.parametrize(("expected", "action"), [(c.expected, c.action) for c in ALL],
                         ids=[c.id for c in ALL])
def test_hostile_input_is_refused_and_changes_nothing(
        refusal_world: World, shared_world: SharedWorld, expected: type[MarsError],
        action: Callable[[World], Any]) -> None:
    world = refusal_world
    before = state(world.store)
    with pytest.raises(MarsError) as excinfo:
        action(world)
    assert excinfo.type is expected, f"{excinfo.type.__name__}: {excinfo.value}"
    message = str(excinfo.value)
    assert message.strip(), "an error must say what went wrong"
    assert "Traceback" not in message
    after = state(world.store)
    assert after == before
    assert not (world.tmp / "s").exists() and not (world.tmp / "none").exists(), \
        "a refused open created a store"
    # the records are as they were; the caches agree with them (and, on the world's
    # first and last case, every invariant holds and verify() passes)
    shared_world.check(world)
    # the store and its adapters still work after the refusal
    node = world.store.add("still working after a refusal")
    assert world.store.get(node.id).content == "still working after a refusal"
    assert world.lc.get(NS, "k1") is not None
    # the next case shares this world: it gets the same active memories
    assert world.store.forget(node.id).status.value == "archived"
    shared_world.dirty = False


# --- the CLI -------------------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store directory the CLI cases copy (built once)."""
    path = tmp_path_factory.mktemp("cli") / "store"
    with MemoryStore.open(path, index="numpy", budget=400) as store:
        store.observe("user", "My sister Ana lives in Lisbon.", conversation_id="c1")
        store.observe("user", "I am allergic to peanuts.", namespace="other")
        gone = store.add("an old note about the weather")
        store.forget(gone.id)
    return path


@dataclass
class Disk:
    """A copy of the template store, and a scratch directory beside it."""

    path: Path
    tmp: Path

    def file(self, name: str, content: str | bytes) -> str:
        where = self.tmp / name
        if isinstance(content, bytes):
            where.write_bytes(content)
        else:
            where.write_text(content, encoding="utf-8")
        return str(where)


@pytest.fixture
def disk(template: Path, tmp_path: Path) -> Disk:
    path = tmp_path / "store"
    shutil.copytree(template, path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Disk(path, scratch)


def disk_state(path: Path) -> tuple[Any, ...]:
    with MemoryStore.open(path, read_only=True) as store:
        report = store.verify()
        return (store.export_jsonld(), len(store.audit), store.audit.head,
                {ns: store.stats(ns)["namespaces"] for ns in store.namespaces()},
                report.ok, report.checked)


class CliCase(NamedTuple):
    id: str
    usage: bool  # click refuses the arguments itself (its usage box), else our "error:" line
    args: Callable[[Disk], list[str]]


def _p(d: Disk) -> list[str]:
    return ["--path", str(d.path)]


def _jsonld_with(d: Disk, **fields: Any) -> str:
    with MemoryStore(budget=BUDGET, clock=FakeClock(), audit_key=bytes(32), seed=9) as src:
        src.add("Carla plays the piano")
        doc = src.export_jsonld()
    doc["@graph"][0].update(fields)
    return d.file("doc.jsonld", json.dumps(doc))


def _own_export(d: Disk) -> str:
    with MemoryStore.open(d.path, read_only=True) as store:
        return d.file("own.jsonld", json.dumps(store.export_jsonld()))


def _own_export_changed(d: Disk) -> str:
    """The store's own export with one memory's text changed: another memory under an
    id the store holds (a re-run skips the memories already here, not this)."""
    with MemoryStore.open(d.path, read_only=True) as store:
        doc = store.export_jsonld()
    node = next(item for item in doc["@graph"] if "content" in item)
    node["content"] = "a different memory under the same id"
    return d.file("own-changed.jsonld", json.dumps(doc))


def _missing(d: Disk) -> str:
    return str(d.tmp / "missing")


def _a_file(d: Disk) -> str:
    return d.file("a-file", "not a store")


CLI: list[CliCase] = [
    # paths that hold no store
    *[CliCase(f"{cmd}-path-{name}", False, lambda d, c=cmd, f=where: [*c.split(), "--path", f(d)])
      for cmd in ("inspect", "stats", "verify", "reindex", "reembed")
      for name, where in (("missing", _missing), ("file", _a_file),
                          ("empty-dir", lambda d: str(d.tmp)))],
    CliCase("inspect-path-nul", True, lambda d: ["inspect", "--path", str(d.tmp / "a\x00")]),
    CliCase("explain-path-missing", False, lambda d: ["explain", "abcd1234", "--path",
                                                      _missing(d)]),
    CliCase("export-path-file", False, lambda d: ["export", str(d.tmp / "o.jsonld"),
                                                  "--path", _a_file(d)]),
    CliCase("erase-path-missing", False, lambda d: ["erase", "--entity", "Ana", "--yes",
                                                    "--path", _missing(d)]),
    # inspect
    *[CliCase(f"inspect-namespace-{name}", False, lambda d, v=v: ["inspect", *_p(d), "-n", v])
      for name, v in (("empty", ""), ("double-slash", "a//b"), ("percent", "100%"),
                      ("nul", "a\x00b"), ("blank", "  "), ("too-long", "n" * 300))],
    CliCase("inspect-status-unknown", False, lambda d: ["inspect", *_p(d), "--status", "gone"]),
    CliCase("inspect-limit-zero", True, lambda d: ["inspect", *_p(d), "--limit", "0"]),
    CliCase("inspect-limit-word", True, lambda d: ["inspect", *_p(d), "--limit", "many"]),
    CliCase("inspect-unknown-option", True, lambda d: ["inspect", *_p(d), "--colour", "red"]),
    # explain
    CliCase("explain-id-empty", False, lambda d: ["explain", "", *_p(d)]),
    CliCase("explain-id-short", False, lambda d: ["explain", "ab", *_p(d)]),
    CliCase("explain-id-unknown", False, lambda d: ["explain", "ffffffff", *_p(d)]),
    CliCase("explain-id-nul", False, lambda d: ["explain", "abcd\x00", *_p(d)]),
    CliCase("explain-id-too-long", False, lambda d: ["explain", "a" * 500, *_p(d)]),
    CliCase("explain-namespace-bad", False, lambda d: ["explain", "abcd", *_p(d), "-n", "a//b"]),
    CliCase("explain-no-id", True, lambda d: ["explain", *_p(d)]),
    # erase
    CliCase("erase-no-selector", False, lambda d: ["erase", *_p(d), "--yes"]),
    CliCase("erase-two-selectors", False,
            lambda d: ["erase", *_p(d), "--yes", "--entity", "Ana", "--conversation", "c1"]),
    CliCase("erase-id-unknown", False, lambda d: ["erase", *_p(d), "--yes", "--id", "ffffffff"]),
    CliCase("erase-id-short", False, lambda d: ["erase", *_p(d), "--yes", "--id", "ab"]),
    CliCase("erase-entity-empty", False, lambda d: ["erase", *_p(d), "--yes", "--entity", ""]),
    CliCase("erase-entity-nul", False,
            lambda d: ["erase", *_p(d), "--yes", "--entity", "A\x00na"]),
    CliCase("erase-conversation-empty", False,
            lambda d: ["erase", *_p(d), "--yes", "--conversation", ""]),
    CliCase("erase-namespace-bad", False,
            lambda d: ["erase", *_p(d), "--yes", "--entity", "Ana", "-n", "a//b"]),
    CliCase("erase-namespace-only-bad", False, lambda d: ["erase", *_p(d), "--yes", "-n", "%"]),
    *[CliCase(f"erase-index-{name}", False,
              lambda d, v=v: ["erase", *_p(d), "--yes", "--entity", "Ana", "--index", v])
      for name, v in (("unknown", "faiss"), ("chroma-no-host", "chroma://"),
                      ("http", "http://localhost:1"), ("qdrant-no-host", "qdrant+http://"),
                      ("empty", ""))],
    CliCase("erase-declined", False, lambda d: ["erase", *_p(d), "--entity", "Ana"]),
    # export
    CliCase("export-to-a-directory", False, lambda d: ["export", str(d.tmp), *_p(d)]),
    CliCase("export-under-a-file", False,
            lambda d: ["export", str(Path(_a_file(d)) / "o.jsonld"), *_p(d)]),
    CliCase("export-to-nul-path", True, lambda d: ["export", str(d.tmp / "a\x00"), *_p(d)]),
    CliCase("export-no-target", True, lambda d: ["export", *_p(d)]),
    # import
    CliCase("import-missing-file", False, lambda d: ["import", _missing(d), *_p(d)]),
    CliCase("import-directory", False, lambda d: ["import", str(d.tmp), *_p(d)]),
    CliCase("import-not-json", False, lambda d: ["import", d.file("x.json", "{nope"), *_p(d)]),
    CliCase("import-empty-file", False, lambda d: ["import", d.file("x.json", ""), *_p(d)]),
    CliCase("import-not-utf8", False,
            lambda d: ["import", d.file("x.json", b"\xff\xfe\x00"), *_p(d)]),
    CliCase("import-top-level-list", False,
            lambda d: ["import", d.file("x.json", "[1, 2]"), *_p(d)]),
    CliCase("import-deeply-nested", False, lambda d: [
        "import", d.file("x.json", "[" * 100_000 + "]" * 100_000), *_p(d)]),
    CliCase("import-deeply-nested-mem0", False, lambda d: [
        "import", d.file("x.json", "[" * 100_000 + "]" * 100_000), "--from", "mem0", *_p(d)]),
    CliCase("import-own-export-changed", False,
            lambda d: ["import", _own_export_changed(d), *_p(d)]),
    CliCase("import-bad-memory", False,
            lambda d: ["import", _jsonld_with(d, sensitivity=7), *_p(d)]),
    CliCase("import-bad-namespace-in-doc", False,
            lambda d: ["import", _jsonld_with(d, namespace="a//b"), *_p(d)]),
    CliCase("import-from-unknown", False,
            lambda d: ["import", d.file("x.json", "{}"), "--from", "csv", *_p(d)]),
    CliCase("import-mem0-bad-records", False, lambda d: [
        "import", d.file("x.json", '{"results": [{"memory": 5}]}'), "--from", "mem0", *_p(d)]),
    CliCase("import-mem0-not-records", False,
            lambda d: ["import", d.file("x.json", '"text"'), "--from", "mem0", *_p(d)]),
    CliCase("import-langgraph-bad-records", False, lambda d: [
        "import", d.file("x.json", '[{"namespace": "x", "key": 1}]'), "--from", "langgraph",
        *_p(d)]),
    CliCase("import-mem0-bad-namespace", False, lambda d: [
        "import", d.file("x.json", '{"results": [{"id": "m", "memory": "tea", '
                         '"user_id": "ana"}]}'), "--from", "mem0", "-n", "a//b", *_p(d)]),
    CliCase("import-index-unknown", False,
            lambda d: ["import", _jsonld_with(d), "--index", "faiss", *_p(d)]),
    CliCase("import-into-a-file", False,
            lambda d: ["import", _jsonld_with(d), "--path", _a_file(d)]),
    CliCase("import-new-store-bad-doc", False, lambda d: [
        "import", d.file("x.json", "[1]"), "--path", str(d.tmp / "new")]),
    # verify
    *[CliCase(f"verify-head-{name}", False, lambda d, v=v: ["verify", *_p(d), "--head", v])
      for name, v in (("word", "nope"), ("empty", ""), ("unknown", "f" * 64),
                      ("nul", "a\x00"), ("too-long", "a" * 5000))],
    # reindex / reembed
    *[CliCase(f"reindex-index-{name}", False, lambda d, v=v: ["reindex", *_p(d), "--index", v])
      for name, v in (("unknown", "faiss"), ("chroma-no-host", "chroma://"),
                      ("scheme", "ftp://x"))],
    CliCase("reembed-embedder-unknown", False,
            lambda d: ["reembed", *_p(d), "--embedder", "gpt"]),
    CliCase("reembed-index-unknown", False, lambda d: ["reembed", *_p(d), "--index", "faiss"]),
    # learn
    CliCase("learn-log-missing", False,
            lambda d: ["learn", "--log", _missing(d), "--out", str(d.tmp / "m.json")]),
    CliCase("learn-log-not-json", False, lambda d: [
        "learn", "--log", d.file("log.jsonl", "{nope\n"), "--out", str(d.tmp / "m.json")]),
    CliCase("learn-log-directory", False,
            lambda d: ["learn", "--log", str(d.tmp), "--out", str(d.tmp / "m.json")]),
    CliCase("learn-kind-unknown", False, lambda d: [
        "learn", "--log", d.file("log.jsonl", ""), "--out", str(d.tmp / "m.json"),
        "--kind", "magic"]),
    CliCase("learn-out-directory", False, lambda d: [
        "learn", "--log", d.file("log.jsonl", ""), "--out", str(d.tmp)]),
    # benchmarks and the demo: refused before anything runs
    CliCase("bench-store-indexes-unknown", False,
            lambda d: ["bench", "store", "--indexes", "faiss", "--out", str(d.tmp)]),
    CliCase("bench-store-indexes-empty", False,
            lambda d: ["bench", "store", "--indexes", ",", "--out", str(d.tmp)]),
    CliCase("bench-locomo-data-missing", False,
            lambda d: ["bench", "locomo", "--data", _missing(d), "--out", str(d.tmp)]),
    CliCase("bench-locomo-data-not-json", False, lambda d: [
        "bench", "locomo", "--data", d.file("l.json", "{nope"), "--out", str(d.tmp)]),
    CliCase("bench-locomo-data-wrong-shape", False, lambda d: [
        "bench", "locomo", "--data", d.file("l.json", '{"a": 1}'), "--out", str(d.tmp),
        "--quick"]),
    CliCase("bench-longmemeval-data-missing", False,
            lambda d: ["bench", "longmemeval", "--data", _missing(d), "--out", str(d.tmp)]),
    CliCase("bench-longmemeval-data-not-json", False, lambda d: [
        "bench", "longmemeval", "--data", d.file("l.json", "[[["), "--out", str(d.tmp)]),
    CliCase("bench-activator-embedder-unknown", False, lambda d: [
        "bench", "activator", "--data", d.file("l.json", "[]"), "--embedder", "gpt"]),
    CliCase("bench-activator-data-missing", False,
            lambda d: ["bench", "activator", "--data", _missing(d)]),
    CliCase("bench-policies-n-word", True, lambda d: ["bench", "policies", "--n", "many"]),
    CliCase("demo-path-is-a-file", False, lambda d: ["demo", "--path", _a_file(d)]),
    CliCase("unknown-command", True, lambda d: ["frobnicate"]),
]


@pytest.mark.parametrize(("usage", "make_args"), [(c.usage, c.args) for c in CLI],
                         ids=[f"cli.{c.id}" for c in CLI])
def test_cli_refuses_with_one_line_and_changes_nothing(
        disk: Disk, usage: bool, make_args: Callable[[Disk], list[str]]) -> None:
    args = make_args(disk)
    before = disk_state(disk.path)
    scratch = sorted(p.name for p in disk.tmp.iterdir())
    result = runner.invoke(app, args, input="n\n")
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{type(result.exception).__name__}: {result.exception}"
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    if usage:
        assert result.exit_code == 2 and "Usage" in result.output, result.output
    elif args[0] == "erase" and "--yes" not in args:
        assert result.exit_code == 1 and lines[-1] == "nothing erased", result.output
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert disk_state(disk.path) == before
    assert sorted(p.name for p in disk.tmp.iterdir()) == scratch, "a refusal left files"


def test_corpus_is_large_and_covers_every_surface() -> None:
    ids = [c.id for c in ALL] + [f"cli.{c.id}" for c in CLI]
    assert len(ids) == len(set(ids)), "case ids must be distinct"
    assert len(ids) >= 250
    public = {name for name in dir(MemoryStore) if not name.startswith("_")
              and callable(getattr(MemoryStore, name)) and not name.startswith("a")}
    public |= {"add", "add_many"}  # "a..." skipped the async twins above, not these
    untested = {"close", "namespaces"}  # they take no input
    covered = {c.id.split("-", 1)[0].split(".")[-1] for c in ALL}
    covered |= {"init", "open", "from_jsonld", "import_jsonld", "export_jsonld"}
    assert public - untested <= covered | {"import", "export"}, public - untested - covered
    assert {c.id.split(".")[0] for c in LANGCHAIN} == {"lg", "lc"}
    assert {c.id.split(".")[0] for c in LLAMAINDEX} == {"li"}


# --- the edges of the corpus: what looks hostile and is accepted ---------------------------


def test_cli_import_of_the_stores_own_export_is_a_rerun_that_changes_nothing(
        disk: Disk) -> None:
    """Every memory of the file is already here, under its id, with its text: a re-run
    of an import, which skips them (it used to be refused as an id clash)."""
    before = disk_state(disk.path)
    result = runner.invoke(app, ["import", _own_export(disk), *_p(disk)])
    assert result.exit_code == 0, result.output
    assert "imported 0 memories" in result.output and "were skipped" in result.output
    assert disk_state(disk.path) == before

CONTROL_TEXTS = {"bell": "ring\x07ring", "ansi-escape": "\x1b[31mred\x1b[0m text",
                 "c1-next-line": "one\x85two", "form-feed": "page one\x0cpage two",
                 "vertical-tab": "a\x0bb", "del": "rub\x7fout"}


def test_control_characters_in_memory_text_are_kept_exactly(world: World) -> None:
    """Only NUL is refused in memory text (a namespace part refuses every control
    character): terminal logs and PDF text carry the others, and they round-trip."""
    ids = {name: world.store.add(text, namespace="ctl").id for name, text in CONTROL_TEXTS.items()}
    doc = world.store.export_jsonld(namespace="ctl")
    with MemoryStore(budget=BUDGET, clock=FakeClock(), audit_key=bytes(32)) as fresh:
        assert fresh.import_jsonld(json.loads(json.dumps(doc))) == len(ids)
        for name, text in CONTROL_TEXTS.items():
            assert fresh.get(ids[name], namespace="ctl").content == text, name
    check_invariants(world.store)


def test_relative_dates_past_the_storable_years_store_the_turn(world: World) -> None:
    """"Tomorrow" on the last day a memory can keep (2199-12-31, io_checks.MAX_DATE)
    names a day no stored memory can: the turn and its plan are stored, the plan without
    a deadline; a turn dated outside the years a memory keeps is refused, nothing stored."""
    nodes = world.store.observe("user", "I will fly to Rome tomorrow",
                                at=datetime(2199, 12, 31, 23, 0), namespace="edge")
    tasks = [n for n in nodes if n.type is MemoryType.TASK]
    assert nodes[0].content == "I will fly to Rome tomorrow" and len(tasks) == 1
    assert tasks[0].payload.deadline is None  # type: ignore[union-attr]
    before = state(world.store)
    for when in (datetime(9999, 12, 31, 23, 0), datetime(1, 1, 1, 1, 0)):
        with pytest.raises(ValidationError, match="outside the years"):
            world.store.observe("user", "I will fly to Rome tomorrow", at=when,
                                namespace="edge")
    assert state(world.store) == before
    check_invariants(world.store)


def test_a_langgraph_label_error_is_both_langgraphs_and_ours(world: World) -> None:
    from langgraph.store.base import InvalidNamespaceError

    before = state(world.store)
    for bad in [("a.b",), ("a", ""), ()]:
        with pytest.raises(InvalidNamespaceError) as excinfo:
            world.lc.put(bad, "k", {"text": "x"})
        assert isinstance(excinfo.value, ValidationError), bad
    assert state(world.store) == before
    assert world.store.verify().ok


def test_tool_argument_errors_go_back_to_the_model_by_default(world: World) -> None:
    before = state(world.store)
    remember = {t.name: t for t in memory_tools(world.store)}["remember"]
    answer = remember.invoke({"content": 5})
    assert isinstance(answer, str) and "remember arguments" in answer and "content" in answer
    answer = remember.invoke({"content": "bad\x00text"})
    assert "NUL" in answer
    assert state(world.store) == before
    assert world.store.verify().ok
