"""A hostile-input corpus over every way in: the API, its async twins, the command line,
the importers and the adapters (issue 30, Show).

Each case is one call with one bad argument (a value of the wrong kind, out of range, not
valid Unicode, nested thousands deep, an id of another namespace, a document that breaks
one rule). The corpus demands, of every case:

* **a typed refusal** — the error is the library's (a :class:`~mars_core.errors.MarsError`
  of the class the case names), never a ``TypeError``, ``RecursionError``,
  ``OverflowError`` or a third party's; the command line exits with code 2 and says
  ``error:`` or ``Usage:``, without a traceback;
* **no wrong acceptance** — every case must raise (or, on the command line, fail);
* **nothing changed** — a digest of the store (its export, audit head and length,
  namespaces, preferences and counts; for the command line, the store's files) is the
  same after the refusal.

Cases are built from tables (:data:`VALUES` × the parameters that refuse them), so the
count grows with the tables; ``test_the_corpus_is_large_enough`` pins it at 300 or more.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.clock import FakeClock
from mars_core.errors import (
    ConfigError,
    ImportFormatError,
    MarsError,
    NotFoundError,
    ValidationError,
)

KEY = bytes(range(32))
FOREIGN_ID = "00000000-0000-4000-8000-00000000dead"


def _deep(levels: int, kind: str = "list") -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value] if kind == "list" else {"k": value}
    return value


class _Weird:
    def __repr__(self) -> str:
        raise RuntimeError("a repr that raises")


# --- values, by what they break ---------------------------------------------------------------

BAD_TEXT: dict[str, Any] = {
    "none": None, "int": 7, "bytes": b"hello", "empty": "", "blank": " \t\n", "nul": "a\x00b",
    "surrogate": "a\ud800b", "list": ["hello"], "deep list": _deep(5000),
    "too long": "x" * 200_001, "object": _Weird(),
}
BAD_LABEL = {**{k: v for k, v in BAD_TEXT.items() if k != "too long"},
             "control": "chat\x1b[31m", "newline": "a\nb", "long": "c" * 257}
BAD_NAMESPACE: dict[str, Any] = {
    "empty": "", "empty part": "a//b", "trailing slash": "a/", "nul": "a\x00b",
    "control": "a\x07", "surrogate": "\ud800", "bad escape": "a%zz", "too long": "n" * 300,
    "int": 3, "list": ["a"], "empty tuple part": ("a", ""), "bytes": b"ns",
    "deep": _deep(5000), "blank part": "a/ /b",
}
BAD_UNIT: dict[str, Any] = {
    "bool": True, "string": "0.5", "negative": -0.01, "above one": 1.01, "nan": math.nan,
    "inf": math.inf, "huge int": 10**400, "list": [0.5], "none-like": "None",
}
BAD_FLAG: dict[str, Any] = {"string": "yes", "int": 1, "none": None, "list": [True],
                            "float": 0.0}
BAD_POSITIVE: dict[str, Any] = {"zero": 0, "negative": -3, "bool": True, "float": 2.5,
                                "string": "10", "huge": 10**400, "nan": math.nan}
BAD_MOMENT: dict[str, Any] = {
    "string": "2026-01-01", "int": 1700000000, "float": 1.5, "date list": [2026, 1, 1],
    "past the calendar in UTC": datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))),
}
BAD_STORED_MOMENT = {**BAD_MOMENT, "year 1": datetime(1, 1, 1), "year 9999": datetime(
    9999, 1, 1), "year 1899": datetime(1899, 12, 31), "year 2200": datetime(2200, 1, 1)}
BAD_METADATA: dict[str, Any] = {
    "string": "tags", "list": ["a"], "int key": {1: "x"}, "tuple key": {("a",): 1},
    "nan": {"x": math.nan}, "inf": {"x": -math.inf}, "2**64": {"n": 2**64},
    "2**63": {"n": 2**63}, "-2**63 - 1": {"n": -(2**63) - 1}, "surrogate value": {"x": "\udc00"},
    "surrogate key": {"\ud800": 1}, "object": {"x": object()}, "set": {"x": {1, 2}},
    "33 levels": {"x": _deep(33)}, "5000 levels": {"x": _deep(5000, "dict")},
    "over 1 MiB": {"x": "z" * (1 << 20)}, "bytes": {"x": b"raw"}, "datetime": {
        "x": datetime(2026, 1, 1)},
}
BAD_ID: dict[str, Any] = {"none": None, "int": 5, "empty": "", "nul": "a\x00", "long": "i" * 129,
                          "surrogate": "\udfff", "list": ["x"], "unknown": FOREIGN_ID}
"""Ids; an unknown one is NotFoundError, the others ValidationError."""
BAD_TYPE: dict[str, Any] = {"unknown": "memo", "upper": "SEMANTIC", "int": 1, "none-string":
                            "None", "list": ["task"], "empty": ""}


@dataclass(frozen=True)
class Case:
    """One hostile call: ``call(world)`` must raise ``error`` (ours) and change nothing."""

    id: str
    call: Callable[[World], Any]
    error: type[MarsError] = ValidationError


class World:
    """The store every case runs against, its adapters, and a store on disk for the CLI."""

    def __init__(self, root: Path) -> None:
        self.store = MemoryStore(budget=3000, embedder=HashingEmbedder(dim=32),
                                 clock=FakeClock(), audit_key=KEY,
                                 namespace_budgets={"tiny": 5})
        self.home = self.store.add("Ana moved to Lisbon", type="semantic", namespace="home").id
        self.store.observe("user", "My sister Rita is a nurse", namespace="home",
                           conversation_id="chat-1")
        self.work = self.store.add("The report is due Friday", type="task", namespace="work",
                                   payload={"goal": "report"}).id
        self.path = root / "cli-store"
        with MemoryStore.open(self.path, index="numpy", embedder=HashingEmbedder(dim=32),
                              clock=FakeClock(), audit_key=KEY) as disk:
            disk.add("Bo plays the cello", namespace="home")
        self.root = root

    def digest(self) -> str:
        return _digest(self.store)

    def on_disk(self) -> str:
        """The digest of the store on disk, read by a read-only open."""
        with MemoryStore.open(self.path, read_only=True, embedder=HashingEmbedder(dim=32),
                              audit_key=KEY) as disk:
            return _digest(disk)


def _digest(s: MemoryStore) -> str:
    """Everything a refused call must leave as it was."""
    names = s.namespaces()
    doc = {"export": s.export_jsonld(), "head": s.audit.head, "events": len(s.audit),
           "names": names, "stats": {n: s.stats(n)["namespaces"][n] for n in names},
           "prefs": {n: s.preferences(n).model_dump(mode="json") for n in names}}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: Any) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("hostile"))
    yield made
    made.store.close()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MARS_AUDIT_KEY", KEY.hex())
        yield patch


# --- the API --------------------------------------------------------------------------------


def _each(prefix: str, values: dict[str, Any], call: Callable[[World, Any], Any],
          error: type[MarsError] = ValidationError, skip: tuple[str, ...] = ()) -> list[Case]:
    return [Case(f"{prefix}: {name}", lambda w, v=value: call(w, v), error)
            for name, value in values.items() if name not in skip]


def _id_error(name: str) -> type[MarsError]:
    return NotFoundError if name == "unknown" else ValidationError


def _ids(prefix: str, call: Callable[[World, Any], Any], skip: tuple[str, ...] = ()
         ) -> list[Case]:
    return [Case(f"{prefix}: {name}", lambda w, v=value: call(w, v), _id_error(name))
            for name, value in BAD_ID.items() if name not in skip] + [
        Case(f"{prefix}: another namespace's id", lambda w: call(w, w.work), NotFoundError)]


def api_cases() -> list[Case]:
    s = "add"
    cases = [
        *_each(f"{s}(text)", BAD_TEXT, lambda w, v: w.store.add(v, namespace="home")),
        *_each(f"{s}(type)", BAD_TYPE, lambda w, v: w.store.add("x", type=v)),
        *_each(f"{s}(sensitivity)", BAD_UNIT, lambda w, v: w.store.add("x", sensitivity=v)),
        *_each(f"{s}(namespace)", BAD_NAMESPACE, lambda w, v: w.store.add("x", namespace=v)),
        *_each(f"{s}(metadata)", BAD_METADATA, lambda w, v: w.store.add("x", metadata=v)),
        *_each(f"{s}(pinned)", BAD_FLAG, lambda w, v: w.store.add("x", pinned=v)),
        *_each(f"{s}(expires_at)", BAD_STORED_MOMENT,
               lambda w, v: w.store.add("x", expires_at=v)),
        *_each(f"{s}(provenance)", {
            "string": "user", "list": ["user"], "unknown field": {"bogus": 1},
            "negative turn": {"turn": -1}, "string turn": {"turn": "3"}, "bool turn": {
                "turn": True}, "turn past 2**53": {"turn": 2**53}, "turn past 2**64": {
                "turn": 2**64}, "reliability 2": {"reliability": 2.0}, "empty source": {
                "source": ""}, "empty conversation": {"conversation_id": ""},
            "control conversation": {"conversation_id": "c\x1b"}, "long external id": {
                "external_id": "e" * 257}, "consent": {"consent": "maybe"},
        }, lambda w, v: w.store.add("x", provenance=v)),
        Case(f"{s}(provenance): derived from no memory",
             lambda w: w.store.add("x", provenance={"derived_from": ["not-an-id"]}),
             NotFoundError),
        *_each(f"{s}(payload, task)", {
            "string": "goal", "priority 2": {"priority": 2}, "priority string": {
                "priority": "high"}, "deadline string": {"deadline": "tomorrow"},
            "deadline 9999": {"deadline": datetime(9999, 1, 1)}, "status": {"status": "maybe"},
            "unknown field": {"bogus": 1}, "other kind": {"kind": "semantic"},
        }, lambda w, v: w.store.add("x", type="task", payload=v)),
        *_each(f"{s}(links)", {"string": "derivesFrom", "bad pair": [("derivesFrom",)],
                               "unknown predicate": [("likes", FOREIGN_ID)],
                               "target of another kind": [("derivesFrom", 5)]},
               lambda w, v: w.store.add("x", links=v)),
        Case(f"{s}(links): a target that does not exist",
             lambda w: w.store.add("x", links=[("derivesFrom", FOREIGN_ID)]), NotFoundError),
        Case(f"{s}: heavier than the namespace's budget",
             lambda w: w.store.add("a rather long memory text " * 4, namespace="tiny")),
        *_each("add_many(items)", {
            "string": "text", "mapping": {"text": "x"}, "int": 3, "item int": [3],
            "item unknown key": [{"text": "x", "bogus": 1}], "item no text": [{"type": "task"}],
            "second item bad": [{"text": "fine"}, {"text": "x", "metadata": {"n": 2**64}}],
            "deep": _deep(5000)}, lambda w, v: w.store.add_many(v, namespace="home")),
    ]
    o = "observe"
    cases += [
        *_each(f"{o}(role)", {**BAD_LABEL, "long role": "r" * 65},
               lambda w, v: w.store.observe(v, "hello", namespace="home")),
        *_each(f"{o}(text)", BAD_TEXT, lambda w, v: w.store.observe("user", v, namespace="home")),
        *_each(f"{o}(conversation_id)", {k: v for k, v in BAD_LABEL.items() if k != "none"},
               lambda w, v: w.store.observe("user", "hi", conversation_id=v)),
        *_each(f"{o}(session_id)", {k: v for k, v in BAD_LABEL.items() if k != "none"},
               lambda w, v: w.store.observe("user", "hi", session_id=v)),
        *_each(f"{o}(at)", BAD_STORED_MOMENT, lambda w, v: w.store.observe("user", "hi", at=v)),
        *_each(f"{o}(turn)", {"string": "3", "bool": True, "negative": -1, "float": 1.5,
                              "past 2**64": 2**64},
               lambda w, v: w.store.observe("user", "hi", turn=v)),
        *_each(f"{o}(speaker)", {"int": 3, "list": ["Ana"], "bytes": b"Ana"},
               lambda w, v: w.store.observe("user", "hi", speaker=v)),
        *_each(f"{o}(namespace)", BAD_NAMESPACE,
               lambda w, v: w.store.observe("user", "hi", namespace=v)),
        *_each("observe_many(turns)", {
            "string": "hi", "mapping": {"role": "user", "text": "hi"}, "item string": ["hi"],
            "item missing text": [{"role": "user"}], "item unknown key": [
                {"role": "user", "text": "hi", "mood": "x"}],
            "second item bad": [{"role": "user", "text": "fine"},
                                {"role": "user", "text": "x", "at": datetime(1, 1, 1)}],
            "deep": _deep(5000, "dict")},
               lambda w, v: w.store.observe_many(v, namespace="home")),
    ]
    r = "retrieve"
    cases += [
        *_each(f"{r}(query)", BAD_TEXT, lambda w, v: w.store.retrieve(v, namespace="home")),
        *_each(f"{r}(budget_tokens)", BAD_POSITIVE,
               lambda w, v: w.store.retrieve("Ana", budget_tokens=v)),
        *_each(f"{r}(k)", BAD_POSITIVE, lambda w, v: w.store.retrieve("Ana", k=v)),
        *_each(f"{r}(types)", {**BAD_TYPE, "string": "semantic", "deep": _deep(5000),
                               "mapping": {"semantic": 1}},
               lambda w, v: w.store.retrieve("Ana", types=v if isinstance(v, list | dict)
                                             or v == "semantic" else [v]), skip=("list",)),
        *_each(f"{r}(max_sensitivity)", BAD_UNIT,
               lambda w, v: w.store.retrieve("Ana", max_sensitivity=v)),
        *_each(f"{r}(since)", BAD_MOMENT, lambda w, v: w.store.retrieve("Ana", since=v)),
        *_each(f"{r}(until)", BAD_MOMENT, lambda w, v: w.store.retrieve("Ana", until=v)),
        *_each(f"{r}(conversation)", {"int": 3, "list": ["chat-1"], "bytes": b"chat-1"},
               lambda w, v: w.store.retrieve("Ana", conversation=v)),
        *_each(f"{r}(read_only)", BAD_FLAG, lambda w, v: w.store.retrieve("Ana", read_only=v)),
        *_each(f"{r}(namespace)", BAD_NAMESPACE, lambda w, v: w.store.retrieve("Ana",
                                                                               namespace=v)),
        *_each("render_context(query)", BAD_TEXT,
               lambda w, v: w.store.render_context(v, namespace="home")),
        *_each("render_context(budget_tokens)", BAD_POSITIVE,
               lambda w, v: w.store.render_context("Ana", budget_tokens=v)),
    ]
    cases += [
        *_ids("get(id)", lambda w, v: w.store.get(v, namespace="home")),
        *_ids("forget(id)", lambda w, v: w.store.forget(v, namespace="home")),
        *_ids("restore(id)", lambda w, v: w.store.restore(v, namespace="home")),
        *_ids("history(id)", lambda w, v: w.store.history(v, namespace="home")),
        *_ids("explain(id)", lambda w, v: w.store.explain(v, namespace="home")),
        *_ids("update(id)", lambda w, v: w.store.update(v, "new text", namespace="home")),
        *_ids("set_metadata(id)", lambda w, v: w.store.set_metadata(v, {"a": 1},
                                                                   namespace="home")),
        *_ids("erase(node_id)", lambda w, v: w.store.erase(v, namespace="home"),
              skip=("none",)),  # erase(None, namespace=...) erases the namespace
        *_each("update(text)", BAD_TEXT,
               lambda w, v: w.store.update(w.home, v, namespace="home")),
        *_each("update(metadata)", BAD_METADATA,
               lambda w, v: w.store.update(w.home, "Ana moved to Porto", metadata=v,
                                           namespace="home")),
        *_each("update(expires_at)", BAD_STORED_MOMENT,
               lambda w, v: w.store.update(w.home, "Ana moved to Porto", expires_at=v,
                                           namespace="home")),
        *_each("set_metadata(metadata)", BAD_METADATA,
               lambda w, v: w.store.set_metadata(w.home, v, namespace="home")),
        *_each("set_metadata(pinned)", BAD_FLAG,
               lambda w, v: w.store.set_metadata(w.home, pinned=v, namespace="home"),
               skip=("none",)),
        *_each("set_metadata(expires_at)", {k: v for k, v in BAD_STORED_MOMENT.items()
                                            if k != "string"},
               lambda w, v: w.store.set_metadata(w.home, expires_at=v, namespace="home")),
        *_each("link(predicate)", {"unknown": "likes", "int": 3, "none": None, "empty": ""},
               lambda w, v: w.store.link(w.home, v, w.home, namespace="home")),
        Case("link: a memory to itself",
             lambda w: w.store.link(w.home, "derivesFrom", w.home, namespace="home")),
        Case("link: to another namespace's memory",
             lambda w: w.store.link(w.home, "derivesFrom", w.work, namespace="home"),
             NotFoundError),
        Case("erase: no selector", lambda w: w.store.erase()),
        Case("erase: two selectors", lambda w: w.store.erase(w.home, entity="Ana",
                                                             namespace="home")),
        *_each("erase(entity)", {k: v for k, v in BAD_TEXT.items() if k != "too long"},
               lambda w, v: w.store.erase(entity=v, namespace="home"), skip=("none",)),
        *_each("erase(conversation)", {k: v for k, v in BAD_LABEL.items() if k != "none"},
               lambda w, v: w.store.erase(conversation=v, namespace="home")),
        *_each("erase(partial)", {"string": "no", "int": 0},
               lambda w, v: w.store.erase(entity="Rita", namespace="home", partial=v)),
        *_each("verify(expected_head)", {
            "empty": "", "int": 5, "garbage": "head", "400 digits": f"mars-head-2:{'9' * 400}:"
            f"{'a' * 64}", "unicode digits": "mars-head-2:²:" + "a" * 64, "short digest":
            "mars-head-2:1:abc", "upper hex": "mars-head-2:1:" + "A" * 64,
            "unknown version": "mars-head-9:1:" + "a" * 64}, lambda w, v: w.store.verify(
            expected_head=v)),
        *_each("set_preferences", {"string": "private", "list": ["Ana"], "unknown key": {
            "bogus": 1}, "entities string": {"private_entities": 5}, "deep": _deep(5000)},
            lambda w, v: w.store.set_preferences(v, namespace="home")),
        *_each("grant_consent(types)", {"unknown": ["memo"], "string": "task", "int": 3},
               lambda w, v: w.store.grant_consent(types=v, namespace="home")),
        *_each("grant_consent(expires_at)", BAD_MOMENT,
               lambda w, v: w.store.grant_consent(types=["task"], expires_at=v,
                                                  namespace="home")),
        Case("revoke_consent: unknown", lambda w: w.store.revoke_consent("consent-999",
                                                                         namespace="home"),
             NotFoundError),
        *_each("maintain(flag)", BAD_FLAG, lambda w, v: w.store.maintain(ttl=v)),
        *_each("list(status)", {"unknown": "deleted", "int": 1},
               lambda w, v: w.store.list("home", status=v)),
        *_each("list(type)", BAD_TYPE, lambda w, v: w.store.list("home", type=v),
               skip=("list",)),
        *_each("stats(namespace)", BAD_NAMESPACE, lambda w, v: w.store.stats(v)),
        *_each("receipt(namespace)", BAD_NAMESPACE, lambda w, v: w.store.receipt(v)),
        *_each("write_jsonld(path)", {"empty": "", "nul": "a\x00b", "int": 3},
               lambda w, v: w.store.write_jsonld(v)),
        *_each("reembed(embedder)", {"string": "hashing", "none": None, "int": 3},
               lambda w, v: w.store.reembed(v), ConfigError),
        *_each("reembed(batch_size)", {"zero": 0, "bool": True, "string": "8"},
               lambda w, v: w.store.reembed(HashingEmbedder(dim=16), batch_size=v)),
        *_each("MemoryStore(budget)", {"zero": 0, "bool": True, "string": "100",
                                       "huge": 10**400, "float": 10.5},
               lambda w, v: MemoryStore(budget=v, embedder=HashingEmbedder()), ConfigError),
        *_each("MemoryStore(policy)", {"unknown": "random-forest", "int": 3, "empty": ""},
               lambda w, v: MemoryStore(policy=v, embedder=HashingEmbedder()), ConfigError),
        *_each("MemoryStore(audit_key)", {"short": b"k", "string": "key", "int": 5},
               lambda w, v: MemoryStore(audit_key=v, embedder=HashingEmbedder()), ConfigError),
        *_each("MemoryStore.open(lock_timeout)", {
            "inf": math.inf, "nan": math.nan, "negative": -1, "bool": True, "string": "5",
            "past 24.8 days": 3e6}, lambda w, v: MemoryStore.open(
                w.root / "never-made", lock_timeout=v, embedder=HashingEmbedder())),
        *_each("MemoryStore.open(read_only)", {"string": "yes", "int": 1},
               lambda w, v: MemoryStore.open(w.path, read_only=v, embedder=HashingEmbedder(
                   dim=32), audit_key=KEY), ValidationError),
        *_each("MemoryStore.open(path)", {"empty": "", "nul": "a\x00b", "int": 3,
                                          "a file": "FILE", "under a file": "FILE/s"},
               lambda w, v: MemoryStore.open(_a_file(w, v), embedder=HashingEmbedder()),
               ConfigError),
        *_each("MemoryStore.open(index)", {"unknown": "faiss", "int": 3,
                                           "bad url": "chroma://"},
               lambda w, v: MemoryStore.open(w.root / "never-made", index=v,
                                             embedder=HashingEmbedder()), ConfigError),
    ]
    return cases


def _a_file(w: World, value: Any) -> Any:
    """``value``, with ``FILE`` standing for a plain file's path."""
    if not isinstance(value, str) or "FILE" not in value:
        return value
    plain = w.root / "plain-file.txt"
    plain.write_text("not a store", encoding="utf-8")
    return value.replace("FILE", str(plain))


def async_cases() -> list[Case]:
    """The async twins refuse as their sync methods do."""
    def run(coro: Any) -> Any:
        return asyncio.run(coro)
    return [
        *_each("aadd(text)", {k: BAD_TEXT[k] for k in ("none", "empty", "nul", "surrogate")},
               lambda w, v: run(w.store.aadd(v))),
        *_each("aadd(metadata)", {k: BAD_METADATA[k] for k in ("2**64", "33 levels", "nan")},
               lambda w, v: run(w.store.aadd("x", metadata=v))),
        *_each("aretrieve(k)", {k: BAD_POSITIVE[k] for k in ("zero", "bool", "huge")},
               lambda w, v: run(w.store.aretrieve("Ana", k=v))),
        *_each("aobserve(at)", {k: BAD_STORED_MOMENT[k] for k in ("year 1", "year 9999")},
               lambda w, v: run(w.store.aobserve("user", "hi", at=v))),
        *_each("aerase(conversation)", {k: BAD_LABEL[k] for k in ("empty", "control")},
               lambda w, v: run(w.store.aerase(conversation=v, namespace="home"))),
    ]


# --- imports ------------------------------------------------------------------------------


def _doc(w: World, change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(w.store.export_jsonld(namespace="home")))
    for item in doc["@graph"]:
        if item["@type"] != "rdf:Statement":
            item["@id"] = "mars:memory/" + FOREIGN_ID  # a memory new to the store
            item["provenance"]["derived_from"] = []
            break
    doc["@graph"] = [i for i in doc["@graph"] if i["@type"] != "rdf:Statement"][:1]
    change(doc)
    return doc


def _node(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = doc["@graph"][0]
    return found


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: _node(d).__setitem__(field, value)


JSONLD_MUTATIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "wrong type": lambda d: d.__setitem__("@type", "Export"),
    "version 2": lambda d: d.__setitem__("mars:formatVersion", 2),
    "version string": lambda d: d.__setitem__("mars:formatVersion", "1"),
    "unknown top key": lambda d: d.__setitem__("extra", 1),
    "graph not a list": lambda d: d.__setitem__("@graph", {}),
    "item not an object": lambda d: d["@graph"].append(3),
    "unknown item type": lambda d: d["@graph"].append({"@type": "Thing"}),
    "id not a uuid": _set("@id", "mars:memory/abc"),
    "id upper case": _set("@id", "mars:memory/" + FOREIGN_ID.upper()),
    "id twice": lambda d: d["@graph"].append(dict(_node(d))),
    "content empty": _set("content", ""),
    "content nul": _set("content", "a\x00"),
    "sensitivity 2": _set("sensitivity", 2.0),
    "sensitivity string": _set("sensitivity", "0.5"),
    "weight zero": _set("weight", 0),
    "step past 2**53": _set("step", 2**53),
    "seq negative": _set("seq", -1),
    "created year 1": _set("created_at", "0001-01-01T00:00:00Z"),
    "created year 9999": _set("created_at", "9999-01-01T00:00:00Z"),
    "created not a date": _set("created_at", "yesterday"),
    "metadata 33 deep": _set("metadata", {"x": _deep(33)}),
    "metadata 2**64": _set("metadata", {"n": 2**64}),
    "metadata over 1 MiB": _set("metadata", {"x": "z" * (1 << 20)}),
    "unknown field": _set("colour", "red"),
    "status unknown": _set("status", "lost"),
    "namespace invalid": _set("namespace", "a//b"),
    "derived from missing": lambda d: _node(d)["provenance"].__setitem__(
        "derived_from", [FOREIGN_ID.replace("dead", "beef")]),
    "edge to nowhere": lambda d: d["@graph"].append({
        "@type": "rdf:Statement", "rdf:subject": {"@id": _node(d)["@id"]},
        "rdf:predicate": {"@id": "mars:derivesFrom"},
        "rdf:object": {"@id": "mars:memory/" + FOREIGN_ID.replace("dead", "beef")}}),
    "edge unknown predicate": lambda d: d["@graph"].append({
        "@type": "rdf:Statement", "rdf:subject": {"@id": _node(d)["@id"]},
        "rdf:predicate": {"@id": "mars:likes"}, "rdf:object": {"@id": _node(d)["@id"]}}),
    "namespace step string": lambda d: d["mars:namespaces"].__setitem__("home", {"step": "1"}),
    "document 50 deep": lambda d: d.__setitem__("@context", _deep(50, "dict")),
}


def import_cases() -> list[Case]:
    from mars_core.io.importers import import_langgraph, import_mem0

    cases = [Case(f"import_jsonld: {name}",
                  lambda w, m=change: w.store.import_jsonld(_doc(w, m)), ImportFormatError)
             for name, change in JSONLD_MUTATIONS.items()]
    cases += _each("import_jsonld(source)", {"int": 3, "list": [], "missing file":
                                             "/nonexistent/x.jsonld", "nul path": "a\x00"},
                   lambda w, v: w.store.import_jsonld(v), ImportFormatError)
    cases += _each("import_mem0", {
        "string": "memories", "int": 3, "record not a mapping": [3],
        "no memory": [{"id": "m1"}], "empty memory": [{"memory": "  "}],
        "metadata list": [{"memory": "x", "metadata": [1]}],
        "metadata 2**64": [{"memory": "x", "metadata": {"n": 2**64}}],
        "metadata deep": [{"memory": "x", "metadata": {"d": _deep(5000, "dict")}}],
        "user id bad": [{"memory": "x", "user_id": "a\x00"}],
        "text surrogate": [{"memory": "a\ud800"}],
    }, lambda w, v: import_mem0(w.store, v), ImportFormatError)
    cases += _each("import_langgraph", {
        "string": "items", "item int": [3], "no value": [{"namespace": ["a"], "key": "k"}],
        "value list": [{"namespace": ["a"], "key": "k", "value": [1]}],
        "empty label": [{"namespace": ["a", ""], "key": "k", "value": {"text": "x"}}],
        "namespace string": [{"namespace": "a", "key": "k", "value": {"text": "x"}}],
        "value deep": [{"namespace": ["a"], "key": "k", "value": {"d": _deep(5000)}}],
        "value nan": [{"namespace": ["a"], "key": "k", "value": {"x": math.nan}}],
        "empty text": [{"namespace": ["a"], "key": "k", "value": {"text": " "}}],
    }, lambda w, v: import_langgraph(w.store, v), ImportFormatError)
    return cases


# --- adapters -----------------------------------------------------------------------------


def langgraph_cases() -> list[Case]:
    from langchain_mars import MarsStore

    def lg(w: World) -> Any:
        return MarsStore(w.store)

    ns = ("memories", "ana")
    return [
        *_each("MarsStore.put(namespace)", {
            "string": "memories", "empty label": ("a", ""), "empty tuple": (),
            "dot in label": ("a.b",), "reserved root": ("langgraph", "x"),
            "int label": ("a", 3), "deep": _deep(5000)},
            lambda w, v: lg(w).put(v, "k", {"text": "x"})),
        *_each("MarsStore.put(key)", {"int": 5, "none": None, "empty": "", "list": ["k"]},
               lambda w, v: lg(w).put(ns, v, {"text": "x"})),
        *_each("MarsStore.put(value)", {"string": "x", "list": [1], "int key": {1: "x"},
                                        "nan": {"x": math.nan}, "deep": {"x": _deep(5000)},
                                        "object": {"x": object()}},
               lambda w, v: lg(w).put(ns, "k", v)),
        *_each("MarsStore.put(index)", {"string": "text", "int": 3, "empty field": [""]},
               lambda w, v: lg(w).put(ns, "k", {"text": "x"}, index=v)),
        *_each("MarsStore.put(ttl)", {"string": "5", "negative": -1, "nan": math.nan,
                                      "huge": 1e30},
               lambda w, v: lg(w).put(ns, "k", {"text": "x"}, ttl=v)),
        *_each("MarsStore.get(key)", {"none": None, "int": 5, "empty": ""},
               lambda w, v: lg(w).get(ns, v)),
        *_each("MarsStore.search(filter)", {"string": "x", "list": [1], "deep": _deep(5000,
                                                                                  "dict"),
                                            "bad operator": {"x": {"$regex": "a"}},
                                            "comparison string": {"x": {"$gt": "a"}}},
               lambda w, v: lg(w).search(ns, filter=v)),
        *_each("MarsStore.search(limit)", {"negative": -1, "string": "10", "bool": True},
               lambda w, v: lg(w).search(ns, limit=v)),
        *_each("MarsStore.search(query)", {"int": 3, "nul": "a\x00"},
               lambda w, v: lg(w).search(ns, query=v)),
        *_each("MarsStore.list_namespaces(max_depth)", {"zero": 0, "string": "2"},
               lambda w, v: lg(w).list_namespaces(max_depth=v)),
        *_each("MarsStore.delete(key)", {"int": 5, "none": None},
               lambda w, v: lg(w).delete(ns, v)),
    ]


def langchain_cases() -> list[Case]:
    from langchain_core.messages import HumanMessage

    from langchain_mars import MarsChatMessageHistory, MarsRetriever
    from langchain_mars.classic import MarsMemory

    return [
        *_each("MarsRetriever(k)", {"zero": 0, "string": "5", "bool": True},
               lambda w, v: MarsRetriever(store=w.store, k=v)),
        *_each("MarsRetriever(max_sensitivity)", {"bool": True, "two": 2.0, "nan": math.nan},
               lambda w, v: MarsRetriever(store=w.store, max_sensitivity=v)),
        *_each("MarsRetriever(namespace)", {"empty": "", "int": 3, "empty part": "a//b"},
               lambda w, v: MarsRetriever(store=w.store, namespace=v)),
        *_each("MarsRetriever.invoke", {"empty": "", "nul": "a\x00"},
               lambda w, v: MarsRetriever(store=w.store).invoke(v)),
        *_each("MarsChatMessageHistory(session_id)", {"empty": "", "int": 3, "nul": "a\x00"},
               lambda w, v: MarsChatMessageHistory(w.store, v)),
        *_each("MarsChatMessageHistory.add_messages", {
            "not a message": ["hello"], "nul text": [HumanMessage(content="a\x00")],
            "surrogate text": [HumanMessage(content="a\ud800")]},
            lambda w, v: MarsChatMessageHistory(w.store, "s1",
                                                namespace="home").add_messages(v)),
        *_each("MarsMemory(classic).save_context", {
            "input not a dict": ("hi", {"output": "x"}), "nul input": (
                {"input": "a\x00"}, {"output": "ok"})},
            lambda w, v: MarsMemory(store=w.store, namespace="home").save_context(*v)),
    ]


def llamaindex_cases() -> list[Case]:
    from llama_index.core.base.llms.types import ChatMessage

    from llamaindex_mars import MarsMemory

    def memory(w: World) -> Any:
        return MarsMemory.from_defaults(store=w.store, session_id="s1")

    return [
        *_each("llamaindex MarsMemory.put", {
            "nul": ChatMessage(role="user", content="a\x00"),
            "surrogate": ChatMessage(role="user", content="a\ud800"),
            "not a message": "hello"}, lambda w, v: memory(w).put(v)),
        *_each("llamaindex MarsMemory.from_defaults(session_id)", {"empty": "", "int": 3,
                                                                   "nul": "a\x00"},
               lambda w, v: MarsMemory.from_defaults(store=w.store, session_id=v)),
        *_each("llamaindex MarsMemory(token_limit)", {"zero": 0, "string": "10", "bool": True},
               lambda w, v: MarsMemory(w.store, "s1", token_limit=v)),
    ]


ALL: list[Case] = [*api_cases(), *async_cases(), *import_cases()]
ADAPTERS: list[Case] = [*langgraph_cases(), *langchain_cases(), *llamaindex_cases()]


def _refused(world: World, case: Case) -> None:
    before = world.digest()
    with pytest.raises(MarsError) as caught:
        case.call(world)
    assert isinstance(caught.value, case.error), (case.id, type(caught.value), caught.value)
    assert world.digest() == before, f"{case.id} changed the store"


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_core_refuses_and_changes_nothing(world: World, case: Case) -> None:
    _refused(world, case)


@pytest.mark.parametrize("case", ADAPTERS, ids=[c.id for c in ADAPTERS])
def test_adapters_refuse_and_change_nothing(world: World, case: Case) -> None:
    _refused(world, case)


# --- the command line -------------------------------------------------------------------------

CLI: dict[str, list[str]] = {
    "inspect: a bad namespace": ["inspect", "-n", "a//b"],
    "inspect: a control-character namespace": ["inspect", "-n", "a\x1b[31m"],
    "inspect: an unknown status": ["inspect", "--status", "deleted"],
    "inspect: a zero limit": ["inspect", "--limit", "0"],
    "explain: a short prefix": ["explain", "ab"],
    "explain: no such id": ["explain", "ffffffff"],
    "explain: a NUL in the id": ["explain", "ab\x00cd"],
    "erase: no selector": ["erase", "--yes"],
    "erase: two selectors": ["erase", "--entity", "Bo", "--conversation", "c", "--yes"],
    "erase: an empty conversation": ["erase", "--conversation", "", "--yes"],
    "erase: a control-character conversation": ["erase", "--conversation", "c\x07", "--yes"],
    "erase: an unknown id": ["erase", "--id", "ffffffff", "--yes"],
    "erase: a bad namespace": ["erase", "-n", "a//b", "--yes"],
    "verify: a bad head": ["verify", "--head", "mars-head-2:1:zz"],
    "verify: a 400-digit head": ["verify", "--head", f"mars-head-2:{'9' * 400}:{'a' * 64}"],
    "import: a missing file": ["import", "/nonexistent/file.jsonld"],
    "import: an unknown kind": ["import", "FILE", "--from", "notion"],
    "import: a hostile mem0 dump": ["import", "DEEP", "--from", "mem0"],
    "import: not JSON": ["import", "NOTJSON"],
    "export: into a missing directory under a file": ["export", "FILE/x.jsonld"],
    "a path with a NUL": ["stats", "--path", "a\x00b"],
    "a path that is a file": ["stats", "--path", "FILE"],
    "reindex: an unknown index": ["reindex", "--index", "faiss"],
    "an unknown command": ["shred"],
}


@pytest.mark.parametrize("name", sorted(CLI))
def test_the_command_line_refuses_and_changes_nothing(world: World, name: str,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    from mars_core.cli import main

    files = {"FILE": world.root / "plain.txt", "DEEP": world.root / "deep.json",
             "NOTJSON": world.root / "not.json"}
    files["FILE"].write_text("not a store", encoding="utf-8")
    files["DEEP"].write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    files["NOTJSON"].write_text("{oops", encoding="utf-8")
    argv = [str(files[a]) if a in files else a.replace("FILE", str(files["FILE"]))
            for a in CLI[name]]
    if argv[0] not in ("stats", "shred") or "--path" not in argv:
        argv += ["--path", str(world.path)] if argv[0] != "shred" else []
    before = world.on_disk()
    code = main(argv)  # raises (a traceback) on an untyped error
    out = capsys.readouterr()
    assert code == 2, (name, code, out.out[-500:], out.err[-500:])
    said = out.out + out.err
    assert "error:" in said.lower() or "usage:" in said.lower(), said[-500:]
    assert "Traceback" not in said and "\x1b[31" not in said
    assert world.on_disk() == before, f"{name} changed the store"


def test_the_corpus_is_large_enough() -> None:
    assert len(ALL) + len(ADAPTERS) + len(CLI) >= 300


def test_a_case_that_is_accepted_fails_the_corpus(world: World) -> None:
    """The check itself: a call that stores is reported, not passed."""
    with pytest.raises(pytest.fail.Exception):
        _refused(world, Case("accepted", lambda w: None))
