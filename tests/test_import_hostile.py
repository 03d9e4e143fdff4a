"""Hostile imports: every out-of-bounds or inconsistent document is refused, changes nothing.

Each case of :data:`CASES` is a document an attacker (or a broken exporter) could hand to
``MemoryStore.import_jsonld``: counters past 2**53 or 2**63, booleans and floats for
integers, dates in the year 9999, NaN and infinity, provenance pointing into another
namespace, at a missing memory or at the memory itself, cycles, duplicates, nesting that
would exhaust the stack, roots that are not objects. Each must raise
:class:`~mars_core.errors.ImportFormatError` with a message saying where, and leave the
store as it was — every namespace's memories (active and archived), the stats, the audit
length of each namespace, a verifiable audit chain — and writable, also after a reopen.
The bounds themselves are :mod:`mars_core.io.checks`.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from invariants import check_invariants
from typer.testing import CliRunner

from mars_core.cli import app
from mars_core.clock import FakeClock
from mars_core.errors import BlockedByPreferenceError, ImportFormatError, ValidationError
from mars_core.io.checks import MAX_COUNTER, MAX_JSON_CHARS, MAX_NESTING, MAX_REFS
from mars_core.io.importers import import_langgraph, import_mem0
from mars_core.model import MAX_CONTENT_CHARS
from mars_core.namespaces import canonical_namespace
from mars_core.store import MemoryStore

KEY = bytes(range(32))
MEM = "mars:memory/"
MISSING = "00000000-0000-4000-8000-00000000dead"
NAMESPACES = ("default", "other", "elsewhere")


def _open(path: Path) -> MemoryStore:
    return MemoryStore.open(path, index="numpy", clock=FakeClock(), audit_key=KEY, budget=400)


@dataclass
class World:
    """A file-backed store with two namespaces, and a valid export of another store."""

    path: Path
    store: MemoryStore
    a: str  # "default": episodic
    b: str  # "default": semantic, derives from a
    gone: str  # "default": archived
    other: str  # "other": one memory
    tmp: Path


@pytest.fixture(scope="module")
def source_doc() -> dict[str, Any]:
    """A valid export of a store with other ids (seed 1): derivations, an update (so
    supersedes and an archived memory), a task with a deadline, a second namespace."""
    src = MemoryStore(seed=1, clock=FakeClock(), audit_key=KEY, budget=400)
    x = src.add("Carla plays the piano")
    y = src.add("Carla is a musician", type="semantic", provenance={"derived_from": [x.id]},
                metadata={"tags": ["music"], "nested": {"level": 2}})
    src.link(y.id, "isA", x.id)
    src.update(x.id, "Carla plays the grand piano")
    src.add("book the concert hall", type="task",
            payload={"goal": "book the hall", "deadline": datetime(2026, 5, 1, 10)})
    src.add("Dan works at Acme", type="social", namespace="elsewhere",
            payload={"entity": "Dan", "relationship_type": "colleague"})
    src.retrieve("Carla piano")
    doc = src.export_jsonld()
    src.close()
    return doc


@pytest.fixture
def world(tmp_path: Path) -> World:
    path = tmp_path / "db"
    store = _open(path)
    a = store.add("Ana moved to Lisbon in May")
    b = store.add("Ana lives in Lisbon", type="semantic", provenance={"derived_from": [a.id]})
    gone = store.add("an old note about the weather")
    store.forget(gone.id)
    other = store.add("Bob likes green tea", namespace="other")
    store.retrieve("Lisbon")
    return World(path, store, a.id, b.id, gone.id, other.id, tmp_path)


# --- what must not change ----------------------------------------------------------------------


def capture(store: MemoryStore) -> dict[str, Any]:
    """Everything a refused import must leave as it was."""
    stats = store.stats()
    names = sorted(set(stats["namespaces"]) | set(NAMESPACES))
    report = store.verify()
    assert report.ok, report
    return {
        "memories": {ns: [n.model_dump(mode="json") for n in store.list(ns, status=None)]
                     for ns in names},
        "stats": stats,
        "audit": {ns: len(store.audit.events(ns)) for ns in names},
        "audit_total": len(store.audit),
        "export": store.export_jsonld(),
    }


def _doc_namespaces(source: object) -> set[str]:
    """The (well-formed) namespaces a document names: the ones it might have broken."""
    found: set[str] = set()
    if not isinstance(source, Mapping):
        return found
    if isinstance(source.get("mars:namespaces"), Mapping):
        found.update(k for k in source["mars:namespaces"] if isinstance(k, str))
    for item in source.get("@graph") or []:
        if isinstance(item, Mapping) and isinstance(item.get("namespace"), str):
            found.add(item["namespace"])
    return {ns for ns in found if _valid_namespace(ns)}


def _valid_namespace(ns: str) -> bool:
    try:
        return canonical_namespace(ns) == ns
    except ValidationError:
        return False


def assert_unchanged_and_writable(w: World, before: dict[str, Any],
                                  namespaces: set[str]) -> None:
    """The store equals ``before``; then every namespace takes a write, also after a
    reopen of the file-backed store."""
    assert capture(w.store) == before
    check_invariants(w.store)
    touched = sorted(set(NAMESPACES) | namespaces)
    for ns in touched:
        node = w.store.add(f"a write to {ns} after the refusal", namespace=ns)
        assert w.store.get(node.id, namespace=ns).content == node.content
    after_writes = capture(w.store)
    w.store.close()
    w.store = _open(w.path)
    assert capture(w.store) == after_writes
    for ns in touched:
        node = w.store.add(f"a write to {ns} after the reopen", namespace=ns)
        assert node.step == w.store.stats(ns)["namespaces"][ns]["step"]
    check_invariants(w.store)


# --- documents -----------------------------------------------------------------------------------

Doc = dict[str, Any]
Build = Callable[[World, Doc], object]


def nodes(doc: Doc) -> list[dict[str, Any]]:
    return [i for i in doc["@graph"] if i["@type"] != "rdf:Statement"]


def node(doc: Doc, content_start: str) -> dict[str, Any]:
    [found] = [n for n in nodes(doc) if n["content"].startswith(content_start)]
    return found


def ref(node_id: str) -> dict[str, str]:
    return {"@id": MEM + node_id}


def nid(item: Mapping[str, Any]) -> str:
    return str(item["@id"])[len(MEM):]


def edge(source: str, predicate: str, target: str) -> dict[str, Any]:
    return {"@type": "rdf:Statement", "rdf:subject": ref(source),
            "rdf:predicate": {"@id": "mars:" + predicate}, "rdf:object": ref(target),
            "weight": 1.0, "step": 0}


def first(doc: Doc) -> dict[str, Any]:
    return nodes(doc)[0]


def set_ns_step(value: Any) -> Build:
    def build(w: World, doc: Doc) -> Doc:
        doc["mars:namespaces"]["default"] = {"step": value}
        return doc
    return build


def set_field(value: Any, *path: str, which: str = "Carla is") -> Build:
    """Set ``path`` (e.g. ``provenance``, ``turn``) of one memory of the document."""
    def build(w: World, doc: Doc) -> Doc:
        target: dict[str, Any] = node(doc, which)
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return doc
    return build


def derive(target: Callable[[World, Doc], str], *, with_edge: bool = True) -> Build:
    """The musician memory derives (also) from ``target``."""
    def build(w: World, doc: Doc) -> Doc:
        n = node(doc, "Carla is")
        t = target(w, doc)
        n["provenance"]["derived_from"].append(t)
        if with_edge:
            doc["@graph"].append(edge(nid(n), "derivesFrom", t))
        return doc
    return build


def add_edge(source: Callable[[World, Doc], str], predicate: str,
             target: Callable[[World, Doc], str], **fields: Any) -> Build:
    """One more edge (``fields`` override or add to the statement's own)."""
    def build(w: World, doc: Doc) -> Doc:
        doc["@graph"].append({**edge(source(w, doc), predicate, target(w, doc)), **fields})
        return doc
    return build


def musician(w: World, doc: Doc) -> str:
    return nid(node(doc, "Carla is"))


def pianist(w: World, doc: Doc) -> str:  # the old version, archived, superseded
    return nid(node(doc, "Carla plays the piano"))


def grand(w: World, doc: Doc) -> str:  # the new version: derivesFrom + supersedes the old
    return nid(node(doc, "Carla plays the grand"))


def dan(w: World, doc: Doc) -> str:  # namespace "elsewhere"
    return nid(node(doc, "Dan"))


def three_cycle(w: World, doc: Doc) -> Doc:
    # musician -> pianist and grand -> pianist exist; close pianist -> grand -> musician
    doc["@graph"] += [edge(pianist(w, doc), "derivesFrom", musician(w, doc)),
                      edge(grand(w, doc), "derivesFrom", musician(w, doc))]
    return doc


def duplicate_id(w: World, doc: Doc) -> Doc:
    copy_ = copy.deepcopy(node(doc, "Dan"))
    copy_["@id"] = node(doc, "Carla is")["@id"]
    doc["@graph"].append(copy_)
    return doc


def duplicate_id_same_record(w: World, doc: Doc) -> Doc:
    doc["@graph"].append(copy.deepcopy(node(doc, "book the")))
    return doc


def duplicate_edge(w: World, doc: Doc) -> Doc:
    doc["@graph"].append(copy.deepcopy(next(i for i in doc["@graph"]
                                            if i["@type"] == "rdf:Statement")))
    return doc


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


def self_referencing(w: World, doc: Doc) -> Doc:
    loop: dict[str, Any] = {}
    loop["again"] = loop
    node(doc, "Carla is")["metadata"] = loop
    return doc


def file_text(make: Callable[[Doc], str]) -> Build:
    """The document as a file whose text ``make`` writes."""
    def build(w: World, doc: Doc) -> Path:
        path = w.tmp / "hostile.jsonld"
        path.write_text(make(doc), encoding="utf-8")
        return path
    return build


def replace_in_text(old: str, new: str) -> Build:
    def make(doc: Doc) -> str:
        text = json.dumps(doc)
        assert old in text
        return text.replace(old, new, 1)
    return file_text(make)


def nested_json(depth: int) -> str:
    return '{"@type": "mars:MemoryExport", "@graph": ' + "[" * depth + "]" * depth + "}"


def top(key: str, value: Any) -> Build:
    def build(w: World, doc: Doc) -> Doc:
        doc[key] = value
        return doc
    return build


def raw(value: object) -> Build:
    return lambda w, doc: value


def with_many_derivations(w: World, doc: Doc) -> Doc:
    ids = [f"00000000-0000-4000-8000-{i:012x}" for i in range(MAX_REFS + 1)]
    node(doc, "Carla is")["provenance"]["derived_from"] = ids
    return doc


BIG = 10**30
CASES: list[tuple[str, str, Build]] = [
    # counters: the probes, the bounds, the types
    ("ns-step-1e30", "mars:namespaces", set_ns_step(BIG)),
    ("ns-step-2**63-1", "mars:namespaces", set_ns_step(2**63 - 1)),
    ("ns-step-2**53", "mars:namespaces", set_ns_step(MAX_COUNTER + 1)),
    ("ns-step-negative", "mars:namespaces", set_ns_step(-1)),
    ("ns-step-bool", "mars:namespaces", set_ns_step(True)),
    ("ns-step-float", "mars:namespaces", set_ns_step(5.0)),
    ("ns-step-string", "mars:namespaces", set_ns_step("5")),
    ("ns-entry-extra-key", "mars:namespaces",
     top("mars:namespaces", {"default": {"step": 3, "budget": 10**9}})),
    ("ns-empty-name", "mars:namespaces", top("mars:namespaces", {"": {"step": 1}})),
    ("ns-not-object", "mars:namespaces", top("mars:namespaces", [["default", 3]])),
    ("seq-past-2**63", "seq", set_field(2**63 + 5, "seq")),
    ("seq-2**53", "seq", set_field(MAX_COUNTER + 1, "seq")),
    ("touch-seq-1e20", "touch_seq", set_field(10**20, "touch_seq")),
    ("activated-seq-2**62", "activated_seq", set_field(2**62, "activated_seq")),
    ("access-count-1e30", "access_count", set_field(BIG, "access_count")),
    ("access-count-negative", "access_count", set_field(-1, "access_count")),
    ("access-count-bool", "access_count", set_field(True, "access_count")),
    ("step-float", "step", set_field(3.0, "step")),
    ("step-string", "step", set_field("3", "step")),
    ("last-access-step-2**60", "last_access_step", set_field(2**60, "last_access_step")),
    ("depth-2**53", "depth", set_field(MAX_COUNTER + 1, "depth")),
    ("provenance-turn-2**62", "turn", set_field(2**62, "provenance", "turn")),
    ("edge-step-2**53", "step", add_edge(musician, "isA", grand, step=MAX_COUNTER + 1)),
    # dates
    ("created-year-9999", "created_at", set_field("9999-12-31T00:00:00Z", "created_at")),
    ("created-year-1", "created_at", set_field("0001-01-01T00:00:00Z", "created_at")),
    ("expires-2200-exactly", "expires_at", set_field("2200-01-01T00:00:00Z", "expires_at")),
    ("last-access-1899", "last_access_at",
     set_field("1899-12-31T23:59:59Z", "last_access_at")),
    ("deadline-year-9999", "deadline",
     set_field("9999-01-01T00:00:00Z", "payload", "deadline", which="book the")),
    ("created-as-unix-number", "created_at", set_field(1_700_000_000, "created_at")),
    ("created-as-word", "created_at", set_field("yesterday", "created_at")),
    # provenance and edges
    ("derived-from-other-namespace-in-store", "namespace 'default'",
     derive(lambda w, d: w.other)),
    ("derived-from-other-namespace-in-document", "crosses namespaces", derive(dan)),
    ("derived-from-missing", MISSING, derive(lambda w, d: MISSING)),
    ("derived-from-itself", "itself", derive(musician, with_edge=False)),
    ("derived-from-twice", "twice", derive(pianist, with_edge=False)),
    ("derived-from-not-a-uuid", "derived_from[1]", derive(lambda w, d: "abc")),
    ("derived-from-without-edge", "no derivesFrom edge",
     derive(lambda w, d: w.a, with_edge=False)),
    ("derived-from-too-many", "derived_from", with_many_derivations),
    ("edge-to-other-namespace-in-store", "namespace 'default'",
     add_edge(musician, "isA", lambda w, d: w.other)),
    ("edge-to-missing", MISSING, add_edge(musician, "isA", lambda w, d: MISSING)),
    ("edge-from-store-memory", "rdf:subject", add_edge(lambda w, d: w.a, "isA", musician)),
    ("edge-self-loop", "itself", add_edge(musician, "isA", musician)),
    ("edge-unknown-predicate", "predicate", add_edge(musician, "likes", grand)),
    ("derives-from-cycle", "cycle", add_edge(pianist, "derivesFrom", musician)),
    ("derives-from-3-cycle", "cycle", three_cycle),
    ("supersedes-cycle", "cycle", add_edge(pianist, "supersedes", grand)),
    ("supersedes-corrects-cycle", "cycle", add_edge(pianist, "corrects", grand)),
    ("duplicate-id-across-namespaces", "twice", duplicate_id),
    ("duplicate-record", "twice", duplicate_id_same_record),
    ("duplicate-edge", "duplicate edge", duplicate_edge),
    # floats
    ("sensitivity-nan", "finite", set_field(math.nan, "sensitivity")),
    ("sensitivity-inf", "finite", set_field(math.inf, "sensitivity")),
    ("sensitivity-1.5", "sensitivity", set_field(1.5, "sensitivity")),
    ("reliability-negative", "reliability", set_field(-0.1, "provenance", "reliability")),
    ("valence-2", "emotional_valence",
     set_field(2.0, "payload", "emotional_valence", which="Carla plays the grand")),
    ("signal-1e12", "signal", set_field({"omega": 1e12}, "signals")),
    ("signals-too-many", "signals", set_field({f"s{i}": 0.5 for i in range(65)}, "signals")),
    ("edge-weight-zero", "weight", add_edge(musician, "isA", grand, weight=0)),
    ("edge-weight-bool", "weight", add_edge(musician, "isA", grand, weight=True)),
    ("nan-literal-in-file", "NaN", replace_in_text('"sensitivity": 0.0', '"sensitivity": NaN')),
    ("infinity-literal-in-file", "Infinity",
     replace_in_text('"reliability": 1.0', '"reliability": -Infinity')),
    # wrong types
    ("content-number", "content", set_field(42, "content")),
    ("pinned-int", "pinned", set_field(1, "pinned")),
    ("sensitivity-string", "sensitivity", set_field("0.5", "sensitivity")),
    ("status-unknown", "status", set_field("deleted", "status")),
    ("namespace-number", "namespace", set_field(7, "namespace")),
    ("namespace-nul", "namespace", set_field("default\x00x", "namespace")),
    ("namespace-257", "namespace", set_field("n" * 257, "namespace")),
    ("namespace-empty-part", "namespace", set_field("memories//ana", "namespace")),
    ("namespace-bad-escape", "namespace", set_field("100%", "namespace")),
    ("version-bool", "version", top("mars:formatVersion", True)),
    ("id-not-uuid", "UUID", set_field(MEM + "abc", "@id")),
    ("id-uppercase-uuid", "UUID",
     lambda w, d: set_field(node(d, "Carla is")["@id"].upper().replace("MARS:MEMORY/", MEM),
                            "@id")(w, d)),
    ("node-id-field", "'id'", set_field("x", "id")),
    ("node-unknown-at-key", "@base", set_field("x", "@base")),
    ("edge-unknown-field", "colour", add_edge(musician, "isA", grand, colour="red")),
    ("top-level-unknown-key", "top-level", top("mars:budget", 10**6)),
    # sizes and nesting
    ("metadata-nested-33", "nested deeper", set_field(deep(MAX_NESTING + 1), "metadata")),
    ("metadata-self-referencing", "nested deeper", self_referencing),
    ("metadata-1MiB", "characters of JSON",
     set_field({"blob": "x" * MAX_JSON_CHARS}, "metadata")),
    ("metadata-int-1e30", "integer", set_field({"n": BIG}, "metadata")),
    ("metadata-non-string-key", "key", set_field({1: "one"}, "metadata")),
    ("metadata-set", "not a JSON value", set_field({"s": {1, 2}}, "metadata")),
    ("metadata-lone-surrogate", "Unicode", replace_in_text('"music"', '"\\ud800"')),
    ("payload-huge", "payload",
     set_field(["p"] * (MAX_JSON_CHARS // 4), "payload", "participants",
               which="Carla plays the grand")),
    ("content-too-long", "content", set_field("a" * (MAX_CONTENT_CHARS + 1), "content")),
    ("file-nested-100000", "cannot read", file_text(lambda d: nested_json(100_000))),
    ("file-int-5000-digits", "cannot read",
     replace_in_text('"access_count": 0', '"access_count": ' + "9" * 5000)),
    # roots
    ("root-list-file", "object", file_text(lambda d: "[1, 2, 3]")),
    ("root-string-file", "object", file_text(lambda d: '"mars:MemoryExport"')),
    ("root-null-file", "object", file_text(lambda d: "null")),
    ("root-python-list", "list", raw([{"@type": "mars:MemoryExport"}])),
    ("root-python-int", "int", raw(42)),
    ("root-bytes", "bytes", raw(b"{}")),
    ("graph-item-not-object", "@graph[", lambda w, d: {**d, "@graph": [*d["@graph"], 7]}),
    ("graph-not-list", "@graph", top("@graph", {"a": 1})),
]


@pytest.mark.parametrize("fragment, build", [(f, b) for _, f, b in CASES],
                         ids=[c[0] for c in CASES])
def test_hostile_document_is_refused_and_changes_nothing(
        world: World, source_doc: Doc, fragment: str, build: Build) -> None:
    doc = build(world, copy.deepcopy(source_doc))
    before = capture(world.store)
    with pytest.raises(ImportFormatError) as excinfo:
        world.store.import_jsonld(doc)  # type: ignore[arg-type]
    assert fragment in str(excinfo.value), str(excinfo.value)
    assert_unchanged_and_writable(world, before, _doc_namespaces(doc))


def test_the_corpus_is_large_and_its_names_distinct() -> None:
    names = [c[0] for c in CASES]
    assert len(names) >= 40 and len(set(names)) == len(names)


# --- what is accepted ---------------------------------------------------------------------------


def test_the_unmodified_document_imports(world: World, source_doc: Doc) -> None:
    """The corpus breaks a valid document: unbroken, it imports, and the store reopens."""
    assert world.store.import_jsonld(copy.deepcopy(source_doc)) == len(nodes(source_doc))
    exported = world.store.export_jsonld()
    world.store.close()
    world.store = _open(world.path)
    assert world.store.export_jsonld() == exported and world.store.verify().ok
    world.store.add("after the import", namespace="elsewhere")
    check_invariants(world.store)


def test_export_import_round_trip_is_exact(tmp_path: Path, source_doc: Doc) -> None:
    with _open(tmp_path / "a") as a:
        a.import_jsonld(source_doc)
        a.write_jsonld(tmp_path / "a.jsonld")
        doc = a.export_jsonld()
    with _open(tmp_path / "b") as b:
        assert b.import_jsonld(tmp_path / "a.jsonld") == len(nodes(doc))
        assert b.export_jsonld() == doc == source_doc
        assert b.verify().ok
        check_invariants(b)


def test_bounds_are_inclusive_where_documented(world: World, source_doc: Doc) -> None:
    doc = copy.deepcopy(source_doc)
    doc["mars:namespaces"]["default"]["step"] = MAX_COUNTER - 1
    carla = node(doc, "Carla is")
    carla.update(created_at="1900-01-01T00:00:00Z", expires_at="2199-12-31T23:59:59Z",
                 metadata=deep(MAX_NESTING), access_count=MAX_COUNTER)
    world.store.import_jsonld(doc)
    assert world.store.stats("default")["namespaces"]["default"]["step"] == MAX_COUNTER - 1
    world.store.close()
    world.store = _open(world.path)
    n = world.store.add("the counter still moves")
    assert n.step == MAX_COUNTER
    # the bound holds both ways: a write past it is refused (the export of a store that
    # wrote it would not import), typed, and changes nothing
    before = capture(world.store)
    with pytest.raises(ValidationError, match="step"):
        world.store.add("past the last counter")
    assert capture(world.store) == before
    assert world.store.import_jsonld(world.store.export_jsonld(), existing="skip") == 0


def test_derivation_from_a_memory_already_in_the_store_cascades_on_erasure(
        world: World, source_doc: Doc) -> None:
    """derived_from may name a memory of the same namespace that is already here; its
    erasure then takes the imported memory with it."""
    doc = copy.deepcopy(source_doc)
    derive(lambda w, d: w.a)(world, doc)
    world.store.import_jsonld(doc)
    carla = musician(world, doc)
    assert world.store.get(carla).provenance.derived_from[-1] == world.a
    receipt = world.store.erase(world.a)
    assert carla in receipt.erased and world.b in receipt.erased
    assert carla not in {n.id for n in world.store.list(status=None)}
    check_invariants(world.store)


def test_link_refuses_a_replacement_cycle(world: World) -> None:
    """The store refuses the supersedes/corrects cycles an import refuses, so its own
    export always imports."""
    newer = world.store.update(world.b, "Ana lives in Porto")
    before = capture(world.store)
    with pytest.raises(ValidationError, match="replacement cycle"):
        world.store.link(world.b, "corrects", newer.id)
    assert capture(world.store) == before


# --- the command line and the other importers -----------------------------------------------

runner = CliRunner()


@pytest.mark.parametrize("case", ["ns-step-1e30", "derived-from-missing", "created-year-9999",
                                  "supersedes-cycle"])
def test_mars_import_refuses_the_same_documents(world: World, source_doc: Doc,
                                                case: str) -> None:
    [(fragment, build)] = [(f, b) for name, f, b in CASES if name == case]
    path = world.tmp / "hostile.jsonld"
    path.write_text(json.dumps(build(world, copy.deepcopy(source_doc))), encoding="utf-8")
    before = capture(world.store)
    world.store.close()
    result = runner.invoke(app, ["import", str(path), "--path", str(world.path),
                                 "--index", "numpy"], env={"MARS_AUDIT_KEY": KEY.hex()},
                           catch_exceptions=False)
    assert result.exit_code == 2 and fragment in result.output.replace("\n", ""), result.output
    world.store = _open(world.path)
    assert_unchanged_and_writable(world, before, set(NAMESPACES))


def _mem0(records: list[Any]) -> Callable[[MemoryStore], Any]:
    return lambda store: import_mem0(store, {"results": records})


def _lg(items: list[Any]) -> Callable[[MemoryStore], Any]:
    return lambda store: import_langgraph(store, items)


OK = {"id": "m0", "memory": "Prefers aisle seats", "user_id": "ana"}
CYCLE: dict[str, Any] = {}
CYCLE["self"] = CYCLE
OTHER_CASES: list[tuple[str, str, Callable[[MemoryStore], Any]]] = [
    ("mem0-metadata-nan", "record 1", _mem0([OK, {**OK, "metadata": {"x": math.nan}}])),
    ("mem0-metadata-list", "record 1", _mem0([OK, {**OK, "metadata": [1, 2]}])),
    ("mem0-metadata-deep", "nested deeper", _mem0([OK, {**OK, "metadata": deep(5000)}])),
    ("mem0-metadata-cycle", "record 1", _mem0([OK, {**OK, "metadata": CYCLE}])),
    ("mem0-metadata-huge-int", "integer", _mem0([OK, {**OK, "metadata": {"n": BIG}}])),
    ("mem0-lone-surrogate", "Unicode", _mem0([OK, {**OK, "memory": "bad \ud800 text"}])),
    ("mem0-namespace-long", "namespace", _mem0([OK, {**OK, "user_id": "u" * 300}])),
    ("langgraph-namespace-int", "namespace",
     _lg([{"namespace": 5, "key": "k", "value": {"content": "x"}}])),
    ("langgraph-value-deep", "nested deeper",
     _lg([{"namespace": ["m"], "key": "k", "value": {"content": "x", "d": deep(40)}}])),
    ("langgraph-value-huge", "characters of JSON",
     _lg([{"namespace": ["m"], "key": "k",
           "value": {"content": "x", "blob": "y" * MAX_JSON_CHARS}}])),
]


@pytest.mark.parametrize("fragment, action", [(f, a) for _, f, a in OTHER_CASES],
                         ids=[c[0] for c in OTHER_CASES])
def test_hostile_mem0_and_langgraph_records_change_nothing(
        world: World, fragment: str, action: Callable[[MemoryStore], Any]) -> None:
    before = capture(world.store)
    with pytest.raises(ImportFormatError) as excinfo:
        action(world.store)
    assert fragment in str(excinfo.value), str(excinfo.value)
    assert_unchanged_and_writable(world, before, {"ana"})


def test_mem0_import_is_one_transaction(world: World) -> None:
    """Preferences that block the second record leave the first unstored too."""
    world.store.set_preferences({"blocked_entities": ["Zed"]}, namespace="ana")
    before = capture(world.store)
    with pytest.raises(BlockedByPreferenceError):
        import_mem0(world.store, {"results": [OK, {**OK, "id": "m1",
                                                   "memory": "Zed is my neighbour"}]})
    assert capture(world.store) == before
