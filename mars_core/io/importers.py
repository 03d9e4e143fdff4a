"""Importers for users who switch: a MaRS JSON-LD export, a mem0 store, a LangGraph store.

Each importer reads plain records (what ``mem0.Memory.get_all()`` and LangGraph's
``BaseStore.search`` return, or a JSON dump of them), validates all of them first and
only then writes, in one transaction — a bad record is a
:class:`~mars_core.errors.ImportFormatError` and nothing is stored, and an import
interrupted before its commit (a crash, a kill, an exception from ``progress``) leaves
the store as it was. Imported memories keep their origin in ``provenance``
(``source="import"``, ``external_id``) and their original timestamps in ``metadata``;
the store's budget and policy act on them as on any other write.

Importing is idempotent: a record already imported into its namespace — the same
``external_id`` (a mem0 ``id``, a LangGraph namespace and key) and the same text — is
skipped, so a re-run after an interruption, or of the same dump, imports each record
once (a JSON-LD file is re-run the same way: memories already here under their ids are
skipped). A record whose text changed since is imported as a new memory. ``progress``
(:mod:`mars_core.progress`) follows the embedding, the staging and the commit.

Examples:
    >>> from mars_core import MemoryStore
    >>> dump = {"results": [{"id": "m1", "memory": "Prefers aisle seats",
    ...                      "user_id": "ana", "created_at": "2025-01-02T10:00:00"}]}
    >>> with MemoryStore(budget=200) as store:
    ...     import_mem0(store, dump)
    ...     [n.content for n in store.list("ana")]
    1
    ['Prefers aisle seats']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mars_core.errors import ImportFormatError, ValidationError
from mars_core.io.checks import check_json_value, check_nesting, check_tree
from mars_core.model import MAX_CONTENT_CHARS
from mars_core.namespaces import (
    ITEM_KEY,
    NamespaceArg,
    canonical_namespace,
    encode_namespace,
    id_namespace,
)
from mars_core.progress import ProgressFn, checked

if TYPE_CHECKING:
    from mars_core.store import MemoryStore

__all__ = ["ImportKind", "ImportReport", "import_file", "import_langgraph", "import_mem0",
           "run_import"]

ImportKind = str  # "jsonld" | "mem0" | "langgraph"


@dataclass(frozen=True)
class ImportReport:
    """What an import did.

    Attributes:
        imported: memories stored by this import.
        skipped: records already in the store (imported before), left as they were.

    Examples:
        >>> ImportReport(imported=3, skipped=1).records
        4
    """

    imported: int
    skipped: int = 0

    @property
    def records(self) -> int:
        """Every record of the source."""
        return self.imported + self.skipped


@dataclass(frozen=True)
class _Row:
    text: str
    namespace: str | None
    metadata: dict[str, Any]
    external_id: str


def import_file(store: MemoryStore, path: str | Path, *, kind: ImportKind = "jsonld",
                namespace: NamespaceArg | None = None,
                progress: ProgressFn | None = None) -> int:
    """Import a file: a MaRS JSON-LD export, or a JSON dump of mem0 / LangGraph records.

    Returns:
        How many memories were stored (records imported before are skipped:
        :func:`run_import` also says how many).

    Raises:
        ImportFormatError: unreadable file or malformed records (nothing is stored).
        ValidationError: an unknown ``kind``.
    """
    return run_import(store, path, kind=kind, namespace=namespace, progress=progress).imported


def run_import(store: MemoryStore, path: str | Path, *, kind: ImportKind = "jsonld",
               namespace: NamespaceArg | None = None,
               progress: ProgressFn | None = None,
               skip_erased: bool = False) -> ImportReport:
    """:func:`import_file`, saying how many records were imported and how many skipped
    (what ``mars import`` prints). ``skip_erased``: a JSON-LD export's memories erased
    from this store since are left out (counted as skipped) instead of refusing the file.

    Raises:
        ImportFormatError: unreadable file or malformed records (nothing is stored).
        ErasedMemoryError: a JSON-LD export holds memories erased from this store, and
            not ``skip_erased`` (nothing is stored).
        ValidationError: an unknown ``kind``.
    """
    progress = checked(progress)
    if kind == "jsonld":
        from mars_core.io.jsonld import load_jsonld, memory_count

        doc = load_jsonld(path)
        imported = store.import_jsonld(doc, existing="skip",
                                       erased="skip" if skip_erased else "error",
                                       progress=progress)
        return ImportReport(imported, memory_count(doc) - imported)
    readers: dict[str, Callable[..., ImportReport]] = {"mem0": _mem0, "langgraph": _langgraph}
    if kind not in readers:
        raise ValidationError(f"unknown import kind {kind!r}: use jsonld, mem0 or langgraph")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except RecursionError:
        raise ImportFormatError(f"{path} is nested too deeply to hold {kind} records") from None
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON, a NUL in the path
        raise ImportFormatError(f"cannot read {path} as JSON: {exc}") from exc
    return readers[kind](store, data, namespace=namespace, progress=progress)


def import_mem0(store: MemoryStore, records: Mapping[str, Any] | Sequence[Any], *,
                namespace: NamespaceArg | None = None,
                progress: ProgressFn | None = None) -> int:
    """Import mem0 memories (``Memory.get_all()`` output, or its ``results`` list).

    Each mem0 memory becomes a ``semantic`` MaRS memory in ``namespace`` (default: its
    ``user_id``, else ``agent_id``/``run_id``, as one namespace part —
    :func:`mars_core.namespaces.id_namespace`, so ``"team/ana"`` is the namespace
    ``"team%2Fana"`` —, else the store's default namespace). Returns how many were
    stored: a record imported before (same ``id`` and text, same namespace) is skipped.
    """
    return _mem0(store, records, namespace=namespace, progress=checked(progress)).imported


def _mem0(store: MemoryStore, records: Mapping[str, Any] | Sequence[Any], *,
          namespace: NamespaceArg | None, progress: ProgressFn | None) -> ImportReport:
    namespace = None if namespace is None else canonical_namespace(namespace)
    items = records.get("results", []) if isinstance(records, Mapping) else records
    rows = [_mem0_row(i, r, namespace) for i, r in enumerate(_as_list(items, "mem0"))]
    return _write(store, rows, "mem0", "semantic", progress)


def import_langgraph(store: MemoryStore, items: Iterable[Any], *,
                     namespace: NamespaceArg | None = None,
                     namespace_of: Callable[[tuple[str, ...]], str] | None = None,
                     text_of: Callable[[Mapping[str, Any]], str] | None = None,
                     progress: ProgressFn | None = None) -> int:
    """Import LangGraph store items (``Item`` objects or their ``dict()`` form).

    Returns how many were stored: an item imported before (same namespace, key and
    text) is skipped.

    Args:
        store: the MaRS store written to.
        items: e.g. ``lg_store.search(("memories",), limit=10_000)``.
        namespace: put everything in this namespace; otherwise ``namespace_of``
            maps each item's namespace tuple (default: the encoding ``MarsStore`` uses,
            :func:`mars_core.namespaces.encode_namespace`; with it, each memory also keeps
            the item record ``langchain_mars.MarsStore`` reads, so imported items are
            visible through it — ``get``/``search``/``list_namespaces`` — after it opens
            or ``reindex()``es the store).
        text_of: the memory text of a value (default: its ``"content"``, ``"text"``,
            ``"memory"`` or ``"data"`` field, else the JSON of the whole value).
        progress: ``progress(stage, done, total)`` (:mod:`mars_core.progress`).
    """
    return _langgraph(store, items, namespace=namespace, namespace_of=namespace_of,
                      text_of=text_of, progress=checked(progress)).imported


def _langgraph(store: MemoryStore, items: Iterable[Any], *, namespace: NamespaceArg | None,
               progress: ProgressFn | None,
               namespace_of: Callable[[tuple[str, ...]], str] | None = None,
               text_of: Callable[[Mapping[str, Any]], str] | None = None) -> ImportReport:
    namespace = None if namespace is None else canonical_namespace(namespace)
    to_ns = namespace_of or encode_namespace
    as_items = namespace is None and namespace_of is None  # where MarsStore looks for them
    rows = [_langgraph_row(i, it, namespace, to_ns, text_of or _default_text,
                          as_item=as_items)
            for i, it in enumerate(_as_list(items, "LangGraph"))]
    return _write(store, rows, "langgraph", "semantic", progress)


def _write(store: MemoryStore, rows: list[_Row], origin: str, type_: str,
           progress: ProgressFn | None) -> ImportReport:
    """Check every row, leave out those imported before, then store the others in one
    transaction (``add_many``)."""
    spaces = []
    for i, row in enumerate(rows):  # everything checked before the first write
        try:
            ns = canonical_namespace(row.namespace or store.config.default_namespace)
        except ValidationError as exc:
            raise ImportFormatError(f"{origin} record {i}: {exc}") from None
        budget = store.config.budget_for(ns)
        check_tree(row.text, path=(f"{origin} record {i}", "text"))
        if len(row.text) > MAX_CONTENT_CHARS or store.token_counter.count(row.text) > budget:
            raise ImportFormatError(f"{origin} record {i} is larger than the budget of "
                                    f"namespace {ns!r}; nothing was imported")
        spaces.append(ns)
    done = _imported(store, set(spaces))
    fresh = [row for row, ns in zip(rows, spaces, strict=True)
             if (ns, _external_id(row), row.text) not in done]
    if fresh:
        store.add_many([{"text": row.text, "type": type_, "namespace": row.namespace,
                         "metadata": row.metadata,
                         "provenance": {"source": "import", "external_id": _external_id(row),
                                        "reliability": 1.0}} for row in fresh],
                       progress=progress)
    return ImportReport(len(fresh), len(rows) - len(fresh))


def _external_id(row: _Row) -> str:
    return row.external_id[:256]


def _imported(store: MemoryStore, spaces: set[str]) -> set[tuple[str, str, str]]:
    """``(namespace, external id, text)`` of the memories an import stored in ``spaces``
    (active or archived; an erased memory is gone, and would be imported again)."""
    known = set(store.namespaces())
    return {(ns, node.provenance.external_id, node.content)
            for ns in sorted(spaces & known) for node in store.list(ns, status=None)
            if node.provenance.source == "import" and node.provenance.external_id is not None}


def _as_list(items: Any, what: str) -> list[Any]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ImportFormatError(f"expected a list of {what} records, got {type(items).__name__}")
    return list(items)


def _mem0_row(i: int, rec: Any, namespace: str | None) -> _Row:
    if not isinstance(rec, Mapping) or not isinstance(rec.get("memory"), str) \
            or not rec["memory"].strip():
        raise ImportFormatError(f"mem0 record {i} has no 'memory' text")
    owner = rec.get("user_id") or rec.get("agent_id") or rec.get("run_id")
    extra = rec.get("metadata") or {}
    if not isinstance(extra, Mapping):
        raise ImportFormatError(f"mem0 record {i}: 'metadata' must be an object")
    meta = {k: rec[k] for k in ("created_at", "updated_at") if rec.get(k)}
    meta.update({"origin": "mem0", **extra})
    try:
        ns = namespace or (id_namespace(str(owner), what="user_id") if owner else None)
    except ValidationError as exc:
        raise ImportFormatError(f"mem0 record {i}: {exc}") from None
    return _Row(rec["memory"], ns, _jsonable(meta, i), str(rec.get("id", i)))


def _langgraph_row(i: int, item: Any, namespace: str | None,
                   to_ns: Callable[[tuple[str, ...]], str],
                   text_of: Callable[[Mapping[str, Any]], str], *, as_item: bool) -> _Row:
    rec = item.dict() if hasattr(item, "dict") and callable(item.dict) else item
    if not isinstance(rec, Mapping) or not isinstance(rec.get("value"), Mapping) \
            or "key" not in rec:
        raise ImportFormatError(f"LangGraph item {i} needs 'namespace', 'key' and a dict 'value'")
    labels = rec.get("namespace") or ()
    if isinstance(labels, str | bytes) or not isinstance(labels, Sequence):
        raise ImportFormatError(f"LangGraph item {i}: 'namespace' must be a list of labels")
    ns = tuple(str(p) for p in labels)
    if any(not p for p in ns):
        raise ImportFormatError(f"LangGraph item {i} has an empty namespace label")
    value = _jsonable(rec["value"], i)  # plain JSON within the bounds, before any use
    text = text_of(value)
    if not isinstance(text, str) or not text.strip():
        raise ImportFormatError(f"LangGraph item {i} has an empty text")
    meta: dict[str, Any] = {
        "origin": "langgraph", "key": str(rec["key"]), "value": value,
        **{k: str(rec[k]) for k in ("created_at", "updated_at") if rec.get(k)}}
    if as_item and ns:  # the record langchain_mars.MarsStore reads an item from
        meta[ITEM_KEY] = {"namespace": list(ns), "key": str(rec["key"]),
                          "value": value, "index": None, "indexed": True,
                          **({"created_at": meta["created_at"]} if "created_at" in meta else {})}
    try:
        row_ns = namespace or (to_ns(ns) if ns else None)
    except ValidationError as exc:
        raise ImportFormatError(f"LangGraph item {i}: {exc}") from None
    return _Row(text, row_ns, _jsonable(meta, i), f"{'/'.join(ns)}:{rec['key']}")


def _default_text(value: Mapping[str, Any]) -> str:
    for field in ("content", "text", "memory", "data"):
        if isinstance(value.get(field), str):
            return str(value[field])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _jsonable(meta: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Metadata as plain JSON (dates and other objects as their text) within the bounds
    an import of the store's own export keeps (:mod:`mars_core.io.checks`: nesting,
    size, finite numbers, valid Unicode), so what is imported can be exported and
    imported again."""
    check_nesting(meta, f"record {i}: metadata")
    try:
        text = json.dumps(meta, default=str, allow_nan=False, ensure_ascii=False)
        out = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:  # a cycle, NaN, nested too deep
        raise ImportFormatError(f"record {i} has metadata that is not JSON: "
                                f"{str(exc)[:200] or type(exc).__name__}") from None
    check_json_value(out, f"record {i}: metadata")
    return dict(out)
