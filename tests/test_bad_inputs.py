"""Bad inputs are refused with a specific error of ours, and refusing changes nothing.

Every case in the corpus asserts (a) the exact exception class from
:mod:`mars_core.errors` and (b) that the store is unchanged: its JSON-LD export, the
length of its audit log and its stats are the same before and after. Unicode edge
cases that must be *accepted* are checked to round-trip exactly through a reopen and
through JSON-LD.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from invariants import check_caches, check_invariants, snapshot
from shared_world import SharedWorld

from mars_core.clock import FakeClock
from mars_core.config import StoreConfig
from mars_core.embeddings import HashingEmbedder
from mars_core.errors import (
    BudgetExceededError,
    ConfigError,
    ConflictError,
    EmbeddingMismatchError,
    ImportFormatError,
    MarsError,
    NotFoundError,
    ValidationError,
)
from mars_core.model import MAX_CONTENT_CHARS, SemanticPayload
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory

BUDGET = 60
OTHER_BUDGET = 20


@dataclass
class World:
    """A populated store plus a few handles the cases refer to."""

    store: MemoryStore
    a: str  # episodic, namespace "default"
    b: str  # semantic, derives from a
    task: str  # task requiring a
    other: str  # a memory of namespace "other"
    archived: str  # a forgotten memory
    export: dict[str, Any]  # a valid export of *another* store (other seed, disjoint ids)
    tmp: Path


@pytest.fixture
def world(make_store: Callable[..., MemoryStore], tmp_path: Path) -> World:
    return build_world(make_store, tmp_path)


def build_world(make_store: Callable[..., MemoryStore], tmp_path: Path) -> World:
    """The populated store of :class:`World` (on the test's kind of store)."""
    store = make_store(budget=BUDGET, namespace_budgets={"other": OTHER_BUDGET})
    a = store.add("Ana moved to Lisbon in May", type="episodic")
    b = store.add("Ana lives in Lisbon", type="semantic",
                  provenance={"source": "summary", "derived_from": (a.id,)})
    task = store.add("book flights to Lisbon", type="task",
                     payload={"goal": "book flights", "dependencies": (a.id,)})
    other = store.add("Bob likes green tea", namespace="other", sensitivity=0.4)
    gone = store.add("an old note about the weather", type="episodic")
    store.forget(gone.id)
    store.retrieve("where does Ana live", budget_tokens=40)
    store.link(b.id, "isA", a.id)
    # a valid export of another store (seed 1: ids that do not clash with seed 0's)
    src = make_store(budget=BUDGET, seed=1)
    x = src.add("Carla plays the piano", namespace="default")
    y = src.add("Carla is a musician", type="semantic", namespace="default",
                provenance={"derived_from": (x.id,)})
    src.add("Dan works at Acme", type="social", namespace="elsewhere",
            payload={"entity": "Dan", "relationship_type": "colleague"})
    src.link(y.id, "isA", x.id)
    src.forget(x.id)
    return World(store, a.id, b.id, task.id, other.id, gone.id, src.export_jsonld(), tmp_path)


def _nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in doc["@graph"] if i["@type"] != "rdf:Statement"]


def _edges(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in doc["@graph"] if i["@type"] == "rdf:Statement"]


def _ref(node: dict[str, Any]) -> dict[str, str]:
    return {"@id": node["@id"]}


def _edge(src: dict[str, Any], pred: str, tgt: dict[str, Any]) -> dict[str, Any]:
    return {"@type": "rdf:Statement", "rdf:subject": _ref(src),
            "rdf:predicate": {"@id": "mars:" + pred}, "rdf:object": _ref(tgt),
            "weight": 1.0, "step": 0}


def _mutate(fn: Callable[[dict[str, Any]], Any]) -> Callable[[World], Any]:
    """A case importing a mutated copy of the valid export."""

    def action(w: World) -> Any:
        doc = copy.deepcopy(w.export)
        out = fn(doc)
        return w.store.import_jsonld(doc if out is None else out)

    return action


def _import_file(text: str) -> Callable[[World], Any]:
    def action(w: World) -> Any:
        path = w.tmp / "bad.jsonld"
        path.write_text(text, encoding="utf-8")
        return w.store.import_jsonld(path)

    return action


def _set_node(index: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    def fn(doc: dict[str, Any]) -> None:
        _nodes(doc)[index].update(fields)

    return fn


def _dup_id(doc: dict[str, Any]) -> None:
    nodes = _nodes(doc)
    nodes[1]["@id"] = nodes[0]["@id"]


def _missing_target(doc: dict[str, Any]) -> None:
    doc["@graph"].append(_edge(_nodes(doc)[0], "isA",
                               {"@id": "mars:memory/00000000-0000-4000-8000-00000000dead"}))


def _unknown_predicate(doc: dict[str, Any]) -> None:
    n = _nodes(doc)
    doc["@graph"].append(_edge(n[0], "likes", n[1]))


def _cycle(doc: dict[str, Any]) -> None:
    n = _nodes(doc)  # the export already has n[1] derivesFrom n[0]; close the loop
    assert any(e["rdf:predicate"]["@id"] == "mars:derivesFrom" for e in _edges(doc))
    doc["@graph"].append(_edge(n[0], "derivesFrom", n[1]))


def _crossing(doc: dict[str, Any]) -> None:
    n = _nodes(doc)
    assert n[0]["namespace"] != n[2]["namespace"]
    doc["@graph"].append(_edge(n[0], "friendOf", n[2]))


def _dup_edge(doc: dict[str, Any]) -> None:
    doc["@graph"].append(copy.deepcopy(_edges(doc)[0]))


def _self_loop(doc: dict[str, Any]) -> None:
    n = _nodes(doc)
    doc["@graph"].append(_edge(n[0], "isA", n[0]))


def _wrong_payload_kind(doc: dict[str, Any]) -> None:
    node = _nodes(doc)[0]
    node["@type"] = "Task"  # payload stays episodic


def _heavy(doc: dict[str, Any]) -> None:
    node = _nodes(doc)[1]
    assert node["status"] == "active"
    node["content"] = "word " * (BUDGET + 1)  # weights are recounted on import


def _own_export(w: World) -> Any:
    return w.store.import_jsonld(w.store.export_jsonld())


def _partial_clash(w: World) -> Any:
    doc = copy.deepcopy(w.export)
    mine = w.store.export_jsonld()
    doc["@graph"].append(_nodes(mine)[0])  # one id already present among new ones
    return w.store.import_jsonld(doc)


def _nan_literal(w: World) -> Any:
    """A file with a bare ``NaN`` (Python's json accepts it; the model must not)."""
    text = json.dumps(w.export)
    assert '"sensitivity": 0.0' in text
    return _import_file(text.replace('"sensitivity": 0.0', '"sensitivity": NaN', 1))(w)


# --- add -----------------------------------------------------------------------------------


def _add(text: Any, **kw: Any) -> Callable[[World], Any]:
    return lambda w: w.store.add(text, **kw)


def _add_with(make_kw: Callable[[World], dict[str, Any]], text: str = "a fine text"
              ) -> Callable[[World], Any]:
    return lambda w: w.store.add(text, **make_kw(w))


# --- retrieve ------------------------------------------------------------------------------


def _retrieve(query: Any, **kw: Any) -> Callable[[World], Any]:
    return lambda w: w.store.retrieve(query, **kw)


CASES: list[tuple[str, type[MarsError], Callable[[World], Any]]] = [
    # JSON-LD import
    ("jsonld-not-json", ImportFormatError, _import_file("{not json at all")),
    ("jsonld-top-level-list", ImportFormatError, _import_file("[1, 2, 3]")),
    ("jsonld-missing-file", ImportFormatError, lambda w: w.store.import_jsonld(w.tmp / "nope")),
    ("jsonld-wrong-type", ImportFormatError, _mutate(lambda d: d.update({"@type": "Export"}))),
    ("jsonld-wrong-version", ImportFormatError,
     _mutate(lambda d: d.update({"mars:formatVersion": 2}))),
    ("jsonld-version-as-string", ImportFormatError,
     _mutate(lambda d: d.update({"mars:formatVersion": "1"}))),
    ("jsonld-graph-not-list", ImportFormatError, _mutate(lambda d: d.update({"@graph": {}}))),
    ("jsonld-graph-missing", ImportFormatError,
     _mutate(lambda d: {k: v for k, v in d.items() if k != "@graph"})),
    ("jsonld-graph-item-not-object", ImportFormatError,
     _mutate(lambda d: d["@graph"].append(42))),
    ("jsonld-unknown-node-type", ImportFormatError, _mutate(_set_node(0, **{"@type": "Habit"}))),
    ("jsonld-sensitivity-1.5", ImportFormatError, _mutate(_set_node(0, sensitivity=1.5))),
    ("jsonld-sensitivity-nan", ImportFormatError, _mutate(_set_node(0, sensitivity=math.nan))),
    ("jsonld-sensitivity-nan-literal", ImportFormatError, _nan_literal),
    ("jsonld-weight-0", ImportFormatError, _mutate(_set_node(0, weight=0))),
    ("jsonld-weight-negative", ImportFormatError, _mutate(_set_node(0, weight=-3))),
    ("jsonld-empty-content", ImportFormatError, _mutate(_set_node(0, content=""))),
    ("jsonld-unknown-field", ImportFormatError, _mutate(_set_node(0, colour="red"))),
    ("jsonld-bad-date", ImportFormatError, _mutate(_set_node(0, created_at="yesterday"))),
    ("jsonld-id-without-prefix", ImportFormatError,
     _mutate(_set_node(0, **{"@id": "00000000-0000-4000-8000-000000000001"}))),
    ("jsonld-payload-kind-mismatch", ImportFormatError, _mutate(_wrong_payload_kind)),
    ("jsonld-duplicate-id", ImportFormatError, _mutate(_dup_id)),
    ("jsonld-edge-to-missing-node", ImportFormatError, _mutate(_missing_target)),
    ("jsonld-unknown-predicate", ImportFormatError, _mutate(_unknown_predicate)),
    ("jsonld-derivesfrom-cycle", ImportFormatError, _mutate(_cycle)),
    ("jsonld-edge-crossing-namespaces", ImportFormatError, _mutate(_crossing)),
    ("jsonld-duplicate-edge", ImportFormatError, _mutate(_dup_edge)),
    ("jsonld-self-loop", ImportFormatError, _mutate(_self_loop)),
    ("jsonld-negative-step", ImportFormatError,
     _mutate(lambda d: d.update({"mars:namespaces": {"default": {"step": -1}}}))),
    ("jsonld-over-budget", BudgetExceededError, _mutate(_heavy)),
    ("jsonld-ids-exist", ConflictError, _own_export),
    ("jsonld-one-id-exists", ConflictError, _partial_clash),
    # add
    ("add-bytes", ValidationError, _add(b"Ana likes tea")),
    ("add-none", ValidationError, _add(None)),
    ("add-int", ValidationError, _add(42)),
    ("add-empty", ValidationError, _add("")),
    ("add-whitespace", ValidationError, _add(" \n\t  ")),
    ("add-nul", ValidationError, _add("before\x00after")),
    ("add-lone-surrogate", ValidationError, _add("broken \ud800 text")),
    ("add-too-long", ValidationError, _add("a" * (MAX_CONTENT_CHARS + 1))),
    ("add-heavier-than-budget", BudgetExceededError, _add("word " * (BUDGET + 1))),
    ("add-heavier-than-ns-budget", BudgetExceededError,
     _add("word " * (OTHER_BUDGET + 1), namespace="other")),  # fits "default", not "other"
    ("add-unknown-type", ValidationError, _add("ok text", type="procedural")),
    ("add-sensitivity-negative", ValidationError, _add("ok text", sensitivity=-0.1)),
    ("add-sensitivity-above-one", ValidationError, _add("ok text", sensitivity=1.1)),
    ("add-sensitivity-nan", ValidationError, _add("ok text", sensitivity=math.nan)),
    ("add-sensitivity-inf", ValidationError, _add("ok text", sensitivity=math.inf)),
    ("add-payload-wrong-kind", ValidationError,
     _add("ok text", type="task", payload=SemanticPayload(concept="x"))),
    ("add-payload-not-a-mapping", ValidationError, _add("ok text", type="task", payload="urgent")),
    ("add-task-priority-2", ValidationError,
     _add("ok text", type="task", payload={"priority": 2.0})),
    ("add-payload-unknown-field", ValidationError,
     _add("ok text", type="social", payload={"colour": "red"})),
    ("add-reliability-2", ValidationError, _add("ok text", provenance={"reliability": 2})),
    ("add-provenance-unknown-field", ValidationError, _add("ok text", provenance={"who": "me"})),
    ("add-link-missing-id", NotFoundError,
     _add("ok text", links=[("isA", "00000000-0000-4000-8000-00000000dead")])),
    ("add-derived-from-missing-id", NotFoundError,
     _add("ok text", provenance={"derived_from": ("00000000-0000-4000-8000-00000000dead",)})),
    ("add-dependency-missing-id", NotFoundError,
     _add("ok text", type="task", payload={"dependencies": ("no-such-id",)})),
    # another namespace's id is treated exactly as a missing one (DESIGN §3)
    ("add-link-other-namespace", NotFoundError,
     _add_with(lambda w: {"links": [("isA", w.other)]})),
    ("add-derived-from-other-namespace", NotFoundError,
     _add_with(lambda w: {"provenance": {"derived_from": (w.other,)}})),
    ("add-unknown-predicate", ValidationError, _add_with(lambda w: {"links": [("likes", w.a)]})),
    ("add-link-not-a-pair", ValidationError, _add("ok text", links=["isA"])),
    ("add-empty-namespace", ValidationError, _add("ok text", namespace="")),
    ("add-namespace-not-str", ValidationError, _add("ok text", namespace=7)),
    ("add-namespace-too-long", ValidationError, _add("ok text", namespace="n" * 257)),
    ("add-bad-expiry", ValidationError, _add("ok text", expires_at="never")),
    ("add-metadata-nan", ValidationError, _add("ok text", metadata={"x": math.nan})),
    ("add-metadata-not-json", ValidationError, _add("ok text", metadata={"x": object()})),
    # retrieve
    ("retrieve-empty-query", ValidationError, _retrieve("")),
    ("retrieve-whitespace-query", ValidationError, _retrieve("   ")),
    ("retrieve-query-not-str", ValidationError, _retrieve(None)),
    ("retrieve-budget-0", ValidationError, _retrieve("Ana", budget_tokens=0)),
    ("retrieve-budget-negative", ValidationError, _retrieve("Ana", budget_tokens=-1)),
    ("retrieve-budget-float", ValidationError, _retrieve("Ana", budget_tokens=10.5)),
    ("retrieve-k-0", ValidationError, _retrieve("Ana", k=0)),
    ("retrieve-max-sensitivity-2", ValidationError, _retrieve("Ana", max_sensitivity=2)),
    ("retrieve-max-sensitivity-nan", ValidationError,
     _retrieve("Ana", max_sensitivity=math.nan)),
    ("retrieve-unknown-type", ValidationError, _retrieve("Ana", types=["procedural"])),
    ("retrieve-empty-namespace", ValidationError, _retrieve("Ana", namespace="")),
    # unknown ids and other refusals
    ("get-unknown", NotFoundError, lambda w: w.store.get("no-such-id")),
    ("forget-unknown", NotFoundError, lambda w: w.store.forget("no-such-id")),
    ("update-unknown", NotFoundError, lambda w: w.store.update("no-such-id", "new text")),
    ("restore-unknown", NotFoundError, lambda w: w.store.restore("no-such-id")),
    ("history-unknown", NotFoundError, lambda w: w.store.history("no-such-id")),
    ("link-unknown-source", NotFoundError, lambda w: w.store.link("no-such-id", "isA", w.a)),
    ("link-unknown-target", NotFoundError, lambda w: w.store.link(w.a, "isA", "no-such-id")),
    ("link-cycle", ValidationError, lambda w: w.store.link(w.a, "derivesFrom", w.b)),
    ("link-other-namespace", NotFoundError, lambda w: w.store.link(w.a, "isA", w.other)),
    ("link-unknown-predicate", ValidationError, lambda w: w.store.link(w.a, "likes", w.task)),
    ("update-empty-text", ValidationError, lambda w: w.store.update(w.a, "")),
    ("update-too-heavy", BudgetExceededError,
     lambda w: w.store.update(w.a, "word " * (BUDGET + 1))),
    ("list-unknown-type", ValidationError, lambda w: w.store.list(type="procedural")),
    ("list-unknown-status", ValidationError, lambda w: w.store.list(status="deleted")),
]


REUSES = 15
"""Refusal cases one shared world serves before it is built afresh (it gathers one
archived memory per case, which every snapshot reads)."""


SHAREABLE = ("ram", "chroma")
"""The kinds whose world the refusal cases share: the two ends of the matrix. On
``chroma`` the shared world's stores are opened by path under a directory of the module
(SQLite and the embedded Chroma, ``MemoryStore.open``'s default): a store made without a
path lives only as long as the test that made it (``kind_parts`` removes its files when
the test ends). On the other kinds each case builds its own world, as before."""


def _shared_builder(factory: StoreFactory, root: Path) -> Callable[[Path, str], World]:
    """Builds a shared world of a kind (see :data:`SHAREABLE`): in memory on ``ram``,
    opened by path under ``root`` on ``chroma``."""
    def build(tmp: Path, kind: str) -> World:
        if kind == "ram":
            return build_world(factory, tmp)
        return build_world(lambda budget=None, **kw: factory(
            budget, path=tempfile.mkdtemp(dir=root), **kw), tmp)
    return build


@pytest.fixture(scope="module")
def shared_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedWorld]:
    root = tmp_path_factory.mktemp("shared-worlds")
    with StoreFactory(audit_key=bytes(range(32))) as factory:  # conftest's `key`
        shared = SharedWorld(_shared_builder(factory, root), lambda _: factory.close(), REUSES,
                             lambda world: check_invariants(world.store),
                             lambda world: check_caches(world.store))
        yield shared
        shared.finish()


@pytest.fixture
def refusal_world(shared_world: SharedWorld, store_kind: str, tmp_path: Path,
                  make_store: Callable[..., MemoryStore]) -> World:
    """The :class:`World` of :func:`world`, shared by the refusal cases of one kind
    (building one is most of a case's time): each case compares the state before and
    after its call. Built while the test's kind is in force, as :func:`world` is."""
    if store_kind not in SHAREABLE:
        return build_world(make_store, tmp_path)
    return shared_world.get(tmp_path, store_kind)


@pytest.mark.parametrize(("expected", "action"), [(e, a) for _, e, a in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_refused_and_changes_nothing(
        refusal_world: World, shared_world: SharedWorld, store_kind: str,
        expected: type[MarsError], action: Callable[[World], Any]) -> None:
    world = refusal_world
    before = snapshot(world.store)
    with pytest.raises(MarsError) as excinfo:
        action(world)
    assert excinfo.type is expected, f"{excinfo.type.__name__}: {excinfo.value}"
    assert str(excinfo.value), "an error must say what went wrong"
    assert snapshot(world.store) == before
    # the records are as they were; the caches agree with them (and every invariant
    # holds on a shared world's first and last case, and after each unshared one)
    if store_kind in SHAREABLE:
        shared_world.check(world)
    else:
        check_invariants(world.store)
    # the store still works after the refusal
    node = world.store.add("still working after a refusal")
    assert world.store.get(node.id).content == "still working after a refusal"
    # the next case shares this world: it gets the same active memories
    assert world.store.forget(node.id).status.value == "archived"
    shared_world.dirty = False


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


def test_heavy_texts_that_fit_are_accepted(world: World) -> None:
    """The budget refusals above are about the budget, not the text: the same texts are
    stored where they fit (and exactly a whole budget fits)."""
    node = world.store.add("word " * (OTHER_BUDGET + 1), namespace="default")
    assert node.is_active and node.weight == OTHER_BUDGET + 1
    full = world.store.add("word " * OTHER_BUDGET, namespace="other")
    assert full.is_active and full.weight == OTHER_BUDGET
    assert world.store.stats("other")["namespaces"]["other"]["tokens"] == OTHER_BUDGET
    check_invariants(world.store)


def test_explain_unknown_id_is_not_found(world: World) -> None:
    before = snapshot(world.store)
    with pytest.raises(NotFoundError):  # no memory ever had it: nothing to explain
        world.store.explain("no-such-id")
    assert snapshot(world.store) == before
    # and a known, archived one is explained, not refused
    assert world.store.explain(world.archived).status == "archived"
    assert world.store.explain(world.a).status == "active"


def test_forget_and_restore_are_idempotent(world: World) -> None:
    before = snapshot(world.store)
    assert world.store.forget(world.archived).status.value == "archived"
    assert world.store.restore(world.a).status.value == "active"
    assert snapshot(world.store) == before


# --- embedders -------------------------------------------------------------------------------


class WrongShapeEmbedder:
    """Claims ``dim`` 16 and returns 17 columns."""

    name = "wrong-shape"
    dim = 16

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim + 1), dtype=np.float32)


class NaNEmbedder:
    """Returns NaN vectors."""

    name = "nan"
    dim = 16

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), np.nan, dtype=np.float32)


@pytest.mark.parametrize("embedder", [WrongShapeEmbedder(), NaNEmbedder()],
                         ids=["wrong-shape", "nan"])
def test_bad_embedder_output_is_refused(make_store: Callable[..., MemoryStore],
                                        embedder: Any) -> None:
    store = make_store(embedder=embedder)
    before = snapshot(store)
    with pytest.raises(MarsError) as excinfo:
        store.add("Ana likes green tea")
    assert excinfo.type is ValidationError
    with pytest.raises(MarsError) as excinfo:
        store.retrieve("tea")
    assert excinfo.type is ValidationError
    assert snapshot(store) == before
    assert store.list(status=None) == []


def _persisted(path: Path, key: bytes) -> dict[str, Any]:
    with MemoryStore.open(path, clock=FakeClock(), audit_key=key) as store:
        store.add("Ana moved to Lisbon", type="episodic")
        store.add("Bob likes tea", type="semantic")
        return store.export_jsonld()


@pytest.mark.parametrize("embedder", [HashingEmbedder(dim=64),
                                      HashingEmbedder(dim=384, char_ngrams=2)],
                         ids=["other-dim", "same-dim-other-model"])
def test_reopen_with_another_embedder_names_the_way_out(tmp_path: Path, key: bytes,
                                                        embedder: HashingEmbedder) -> None:
    export = _persisted(tmp_path / "s", key)
    with pytest.raises(MarsError) as excinfo:
        MemoryStore.open(tmp_path / "s", embedder=embedder, clock=FakeClock(), audit_key=key)
    assert excinfo.type is EmbeddingMismatchError
    assert "reembed" in str(excinfo.value), str(excinfo.value)
    assert "64" in str(excinfo.value) or "c2" in str(excinfo.value)
    # the refused open released the directory and changed nothing on disk
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=key) as store:
        assert store.export_jsonld() == export
        check_invariants(store)


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"budgett": 100},
    {"budget": 0},
    {"budget": -5},
    {"policy": "no-such-policy"},
    {"policy_params": {"no_such_param": 1}},
    {"retrieval": {"dense_weight": 2.0}},
    {"retrieval": {"unknown": 1}},
    {"token_counter": "no-such-counter"},
    {"seed": -1},
], ids=lambda kw: next(iter(kw)) + "=" + repr(next(iter(kw.values()))))
def test_bad_config_is_a_config_error(kwargs: dict[str, Any], key: bytes) -> None:
    with pytest.raises(MarsError) as excinfo:
        MemoryStore(clock=FakeClock(), audit_key=key, **kwargs)
    assert excinfo.type is ConfigError, f"{excinfo.type.__name__}: {excinfo.value}"


def test_config_object_rejects_unknown_keys(key: bytes) -> None:
    with pytest.raises(MarsError) as excinfo:
        MemoryStore(config=StoreConfig(), clock=FakeClock(), audit_key=key, colour="red")
    assert excinfo.type is ConfigError


@pytest.mark.parametrize("kwargs", [{"budgett": 100}, {"policy": "no-such-policy"}],
                         ids=["unknown-key", "unknown-policy"])
def test_bad_config_on_open_leaves_the_directory_usable(tmp_path: Path, key: bytes,
                                                        kwargs: dict[str, Any]) -> None:
    export = _persisted(tmp_path / "s", key)
    with pytest.raises(MarsError) as excinfo:
        MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=key, **kwargs)
    assert excinfo.type is ConfigError, f"{excinfo.type.__name__}: {excinfo.value}"
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), audit_key=key) as store:
        assert store.export_jsonld() == export


# --- unicode that must be accepted -----------------------------------------------------------

UNICODE_TEXTS = {
    "emoji": "Ana loves 🍵 and 🐈 — 👍🏽",
    "zwj-family": "family: 👩\u200d👩\u200d👧\u200d👦 went hiking",
    "rtl-hebrew-arabic": "שלום עולם و مرحبا بالعالم",
    "bidi-mixed": "meeting with \u202eדני\u202c at 10:00",
    "combining": "cafe\u0301 and Zalgo Z\u0364\u0351\u0313 text",
    "cjk": "東京で寿司を食べた。北京烤鸭很好吃。",
    "hangul": "서울에서 친구를 만났다",
    "zero-width": "zero\u200bwidth\u200cnon\u200djoiner\ufeff",
    "astral": "math 𝔸𝕓𝕔 and musical 𝄞 symbols",
    "line-separators": "line one\u2028line two\u2029para\r\nwindows\ttab",
    "nfd-vs-nfc": "Amélie e\u0301 \u00e9",
}


def test_unicode_is_accepted_and_round_trips_exactly(tmp_path: Path, key: bytes) -> None:
    path = tmp_path / "u"
    with MemoryStore.open(path, clock=FakeClock(), audit_key=key, budget=10_000) as store:
        ids = {name: store.add(text, namespace="uni").id for name, text in UNICODE_TEXTS.items()}
        ids["ns"] = store.add("namespace test", namespace="名前空間 ✨").id
        for name, nid in ids.items():
            if name != "ns":
                assert store.get(nid, namespace="uni").content == UNICODE_TEXTS[name]
        store.write_jsonld(tmp_path / "u.jsonld")
        export = store.export_jsonld()
        check_invariants(store)
    # reopen: byte-exact contents
    with MemoryStore.open(path, clock=FakeClock(), audit_key=key) as store:
        for name, text in UNICODE_TEXTS.items():
            got = store.get(ids[name], namespace="uni").content
            assert got == text and got.encode("utf-8") == text.encode("utf-8"), name
        assert store.get(ids["ns"], namespace="名前空間 ✨").namespace == "名前空間 ✨"
        assert store.export_jsonld() == export
        hits = store.retrieve("東京で寿司を食べた", namespace="uni", read_only=True)
        assert hits and hits[0].id == ids["cjk"]
    # JSON-LD file round trip into a fresh store
    with MemoryStore(clock=FakeClock(), audit_key=key, budget=10_000) as fresh:
        assert fresh.import_jsonld(tmp_path / "u.jsonld") == len(ids)
        for name, text in UNICODE_TEXTS.items():
            assert fresh.get(ids[name], namespace="uni").content == text, name
        assert fresh.export_jsonld() == export
        check_invariants(fresh)
    raw = (tmp_path / "u.jsonld").read_text(encoding="utf-8")
    assert UNICODE_TEXTS["cjk"] in raw  # written as UTF-8, not \\u escapes


def test_the_way_out_named_by_the_mismatch_error_exists() -> None:
    """EmbeddingMismatchError tells the user to call ``store.reembed(new_embedder)``;
    that method must exist (DESIGN §3, "Namespaces, ids and the manifest")."""
    assert callable(getattr(MemoryStore, "reembed", None)), "MemoryStore.reembed is missing"
