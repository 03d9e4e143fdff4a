"""The bounds an import document must respect, and the checks that enforce them.

An import (``MemoryStore.import_jsonld``, ``mars import``, the mem0 and LangGraph
importers) is hostile input: whatever it claims is checked before anything is written,
and a document that breaks any rule below is refused as a whole with an
:class:`~mars_core.errors.ImportFormatError` naming the record and the field. The
bounds are chosen so that a store keeps working after any accepted import: every
counter it adopts leaves room for more writes, every date survives date arithmetic,
every float is a real number.

* **Counters** — ``step``, ``seq``, ``touch_seq``, ``activated_seq``, ``access_count``,
  ``last_access_step``, ``depth``, ``weight``, provenance ``turn``, an edge's ``step``, a
  namespace's ``step``: integers (not booleans) from 0 to ``MAX_COUNTER`` = 2**53 - 1.
  Any other integer: within a signed 64-bit integer (``MAX_INT``).
* **Dates** — ``created_at``, ``last_access_at``, ``expires_at``, a task's ``deadline``:
  ISO 8601 date-times from ``MIN_DATE`` (1900-01-01, included) to ``MAX_DATE``
  (2200-01-01 UTC, excluded).
* **Floats** — finite everywhere (no NaN, no infinity); sensitivity, reliability,
  confidence, generality and priority in [0, 1], valence in [-1, 1], an edge's weight in
  (0, 1e6], a signal within ±``MAX_SIGNAL`` (1e9).
* **Text** — content of 1 to 200,000 characters; namespaces valid paths as
  :mod:`mars_core.namespaces` defines them (1 to 256 characters, no empty or blank part,
  no control character); no string or key anywhere with a lone surrogate.
* **Metadata and payload** — each at most ``MAX_NESTING`` (32) levels deep and
  ``MAX_JSON_CHARS`` (1 MiB) characters of JSON, per memory; at most ``MAX_SIGNALS`` (64)
  signals, named by 1 to 64 characters.
* **The document** — at most ``MAX_DOC_NESTING`` (40) levels deep anywhere; JSON values
  only (objects with string keys, arrays, strings, numbers, booleans, null); no unknown
  keys; a file of at most 512 MiB.
* **Ids** — canonical UUID strings; each memory once in a document and not already in
  the store.
* **Provenance** — ``derived_from`` lists at most ``MAX_REFS`` (10,000) distinct ids, never
  the memory itself, each a memory of the same namespace (in the document or already in
  the store) with the matching ``derivesFrom`` edge in the document.
* **Edges** — each once, from a memory of the document to one of the same namespace (in
  the document or already in the store); ``derivesFrom`` edges form no cycle, nor do
  ``supersedes`` and ``corrects`` edges together.

After an accepted import, a namespace's interaction counter is the largest of its own, the
document's ``mars:namespaces`` step and the steps of the memories imported into it; the
store's counters move past the imported ``seq``, ``touch_seq`` and ``activated_seq``. All
are at most 2**53 - 1, so later writes never overflow the record store's 64-bit integers.

The same bounds hold for every write (:func:`check_storable`, called for each memory the
store writes): what ``add``, ``observe``, ``update`` or ``set_metadata`` would store
beyond them is refused with a :class:`~mars_core.errors.ValidationError`, so a store's
own export always imports. A counter at ``MAX_COUNTER`` is the last: the next write that
would pass it is refused.

Examples:
    >>> check_tree({"a": [1, 2.5, "x", None, True]})
    >>> try:
    ...     check_tree({"a": [float("nan")]})
    ... except ImportFormatError as exc:
    ...     print(exc)
    a[0]: not a finite number
"""

from __future__ import annotations

import json
import math
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mars_core.errors import ImportFormatError, ValidationError
from mars_core.model import Edge, MemoryNode, Predicate, TaskPayload
from mars_core.namespaces import canonical_namespace

__all__ = [
    "LINEAGE_GROUPS",
    "MAX_COUNTER",
    "MAX_DATE",
    "MAX_DOC_NESTING",
    "MAX_INT",
    "MAX_JSON_CHARS",
    "MAX_NESTING",
    "MAX_REFS",
    "MAX_SIGNAL",
    "MAX_SIGNALS",
    "MIN_DATE",
    "check_json_value",
    "check_lineage",
    "check_namespace",
    "check_nesting",
    "check_node",
    "check_storable",
    "check_tree",
    "check_uuid",
    "counter",
]

MAX_COUNTER = 2**53 - 1
"""Largest counter an import may carry (exact in a double, far below SQLite's 2**63)."""
MAX_INT = 2**63 - 1
"""Largest magnitude of any other integer in an import document (SQLite's INTEGER)."""
MIN_DATE = datetime(1900, 1, 1, tzinfo=UTC)
"""Earliest date an import may carry (inclusive)."""
MAX_DATE = datetime(2200, 1, 1, tzinfo=UTC)
"""The first date an import may no longer carry (exclusive)."""
MAX_NESTING = 32
"""Deepest nesting of a memory's metadata or payload (an object or array is one level)."""
MAX_DOC_NESTING = 40
"""Deepest nesting anywhere in an import document (its root object is level 1)."""
MAX_JSON_CHARS = 1 << 20
"""Longest JSON of a memory's metadata, and of its payload (characters)."""
MAX_SIGNALS = 64
"""Most write-time signals one memory may carry."""
MAX_SIGNAL = 1e9
"""Largest magnitude of a signal value."""
MAX_REFS = 10_000
"""Most ids a memory's ``derived_from`` (or a task's ``dependencies``) may list."""
LINEAGE_GROUPS: tuple[frozenset[Predicate], ...] = (
    frozenset({Predicate.DERIVES_FROM}),
    frozenset({Predicate.SUPERSEDES, Predicate.CORRECTS}),
)
"""Predicates whose edges, taken together, must not form a cycle."""

_COUNTERS = ("step", "seq", "touch_seq", "activated_seq", "access_count", "depth", "weight")
_DATES = ("created_at", "last_access_at", "expires_at")
_FREE_FORM = {"metadata", "payload", "provenance", "signals"}


# --- generic JSON ----------------------------------------------------------------------------


def _where(path: Sequence[str | int]) -> str:
    shown = [*path[:6], "…", *path[-2:]] if len(path) > 9 else list(path)
    out = ""
    for part in shown:
        out += f"[{part}]" if isinstance(part, int) else (
            f".{part[:64]}" if out and part != "…" else part)
    return out or "the document"


def _bad_string(value: str) -> bool:
    if value.isascii():  # O(1) in CPython: the common case costs nothing
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# a crumb is how the walk got to a container: (the parent's crumb, the key), built
# cheaply on the way down and turned into a path only for an error message
_Crumb = tuple[Any, str | int] | tuple[()]


def _path(crumb: _Crumb) -> list[str | int]:
    out: list[str | int] = []
    while crumb:
        crumb, key = crumb
        out.append(key)
    return out[::-1]


def _scalar_error(value: object) -> str | None:
    """What is wrong with a leaf of a JSON document, or None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return "text is not valid Unicode (a lone surrogate)" if _bad_string(value) else None
    if isinstance(value, int):
        return None if -MAX_INT <= value <= MAX_INT else "integer beyond the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "not a finite number"
    return f"{type(value).__name__} is not a JSON value"


def check_tree(doc: object, *, max_nesting: int = MAX_DOC_NESTING,
               path: Sequence[str | int] = ()) -> None:
    """Check that ``doc`` is plain JSON within the generic bounds (iteratively: a
    hostile nesting cannot exhaust the stack).

    Objects must have string keys; arrays may be lists or tuples; numbers must be finite
    and integers fit in 64 bits; strings must be valid Unicode; nothing may nest deeper
    than ``max_nesting`` levels (a self-referencing structure fails here too).

    Raises:
        ImportFormatError: the first violation, with its path.
    """
    root: _Crumb = ()
    for part in path:
        root = (root, part)
    stack: list[tuple[object, int, _Crumb]] = [(doc, 1, root)]
    while stack:
        value, level, crumb = stack.pop()
        items: Iterable[tuple[str | int, object]]
        if type(value) is dict or isinstance(value, Mapping):
            for key in value:
                if type(key) is not str or (not key.isascii() and _bad_string(key)):
                    shown = "with a lone surrogate" if isinstance(key, str) else repr(key)[:64]
                    raise ImportFormatError(f"{_where(_path(crumb))}: object key {shown} is "
                                            f"not a valid string")
            items = value.items()
        elif isinstance(value, list | tuple):
            items = enumerate(value)
        else:
            error = _scalar_error(value)
            if error is not None:
                raise ImportFormatError(f"{_where(_path(crumb))}: {error}")
            continue
        if level > max_nesting:
            raise ImportFormatError(f"{_where(_path(crumb))}: nested deeper than "
                                    f"{max_nesting} levels")
        for key, child in items:  # the common leaves inline: this walks whole exports
            kind = type(child)
            if kind is str:
                if child.isascii():  # type: ignore[union-attr]
                    continue
            elif kind is int:
                if -MAX_INT <= child <= MAX_INT:  # type: ignore[operator]
                    continue
            elif kind is float:
                if math.isfinite(child):  # type: ignore[arg-type]
                    continue
            elif child is None or kind is bool:
                continue
            elif kind is dict or kind is list or isinstance(child, Mapping | list | tuple):
                stack.append((child, level + 1, (crumb, key)))
                continue
            error = _scalar_error(child)
            if error is not None:
                raise ImportFormatError(f"{_where(_path((crumb, key)))}: {error}")


def check_nesting(value: object, what: str, max_nesting: int = MAX_NESTING,
                  error: type[ValidationError] = ImportFormatError) -> None:
    """Refuse objects and arrays (any mappings, lists or tuples) nested deeper than
    ``max_nesting`` levels, before anything recursive (``json.dumps``) walks them.

    Examples:
        >>> check_nesting({"a": [1]}, "value", max_nesting=2)
        >>> try:
        ...     check_nesting({"a": [[1]]}, "value", max_nesting=2)
        ... except ImportFormatError as exc:
        ...     print(exc)
        value: nested deeper than 2 levels
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable[object]
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if level > max_nesting:
            raise error(f"{what}: nested deeper than {max_nesting} levels")
        stack.extend((c, level + 1) for c in children)


def check_json_value(value: object, what: str, *, max_nesting: int = MAX_NESTING,
                     max_chars: int = MAX_JSON_CHARS, walked: bool = False) -> None:
    """Check user data (metadata, a payload) as JSON: depth, size, finite numbers.

    Args:
        value: the data.
        what: how the message names it.
        max_nesting: the deepest nesting allowed.
        max_chars: the longest JSON allowed.
        walked: ``value`` is part of a document :func:`check_tree` already passed (its
            types, numbers and strings are known to be fine; depth and size are left).

    Raises:
        ImportFormatError: ``what`` nests too deep, is too large or is not JSON.
    """
    if walked:
        check_nesting(value, what, max_nesting)
    else:
        check_tree(value, max_nesting=max_nesting, path=(what,))
    _check_size(value, what, max_chars)


def _check_size(value: object, what: str, max_chars: int = MAX_JSON_CHARS) -> None:
    if not value:  # {} or (): nothing to measure
        return
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))
    except (TypeError, ValueError) as exc:
        raise ImportFormatError(f"{what}: not JSON ({exc})") from None
    if size > max_chars:
        raise ImportFormatError(f"{what}: {size} characters of JSON, more than {max_chars}")


# --- fields ----------------------------------------------------------------------------------


def counter(value: object, what: str) -> int:
    """A counter: an int (not a bool) in ``[0, MAX_COUNTER]``.

    Examples:
        >>> counter(3, "step")
        3
        >>> try:
        ...     counter(True, "step")
        ... except ImportFormatError as exc:
        ...     print(exc)
        step: True is not a counter (an integer from 0 to 2**53 - 1)
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNTER:
        shown = repr(value) if len(repr(value)) <= 40 else f"a {type(value).__name__}"
        raise ImportFormatError(f"{what}: {shown} is not a counter "
                                f"(an integer from 0 to 2**53 - 1)")
    return value


def check_uuid(value: object, what: str) -> str:
    """A canonical UUID string (what the store's ids are, and Qdrant requires)."""
    try:
        ok = isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        ok = False
    if not ok:
        raise ImportFormatError(f"{what}: {str(value)[:80]!r} is not a canonical UUID "
                                f"(like {uuid.UUID(int=1)})")
    return str(value)


def check_namespace(value: object, what: str) -> str:
    """A namespace as the store keeps it: a valid path string (the rules of
    :mod:`mars_core.namespaces`: 1 to 256 characters, no empty or blank part, no control
    character, ``%`` only as ``%25`` or ``%2F``)."""
    if not isinstance(value, str):
        raise ImportFormatError(f"{what}: a namespace is a string, not {type(value).__name__}")
    try:
        return canonical_namespace(value)
    except ValidationError as exc:
        raise ImportFormatError(f"{what}: {exc}") from None


def _check_date(value: datetime | None, what: str) -> None:
    if value is not None and not MIN_DATE <= value < MAX_DATE:
        raise ImportFormatError(f"{what}: {value.isoformat()} is outside the years 1900 to "
                                f"2199 (UTC)")


def check_node(node: MemoryNode, where: str, *,
               dumped: Mapping[str, Any] | None = None) -> None:
    """The bounds :class:`~mars_core.model.MemoryNode`'s own validation leaves open (the
    node was validated from a document :func:`check_tree` passed; ``dumped``: its
    metadata and payload as JSON, walked by :func:`check_tree` at their depth bound
    already, so only their size is left to check).

    Args:
        node: a memory validated by the model.
        where: how the message names it (``"@graph[3] (memory …)"``).

    Raises:
        ImportFormatError: a counter, date, signal, metadata, payload or ``derived_from``
            out of bounds.
    """
    for name in _COUNTERS:
        counter(getattr(node, name), f"{where}: {name}")
    if node.last_access_step is not None:
        counter(node.last_access_step, f"{where}: last_access_step")
    if node.provenance.turn is not None:
        counter(node.provenance.turn, f"{where}: provenance.turn")
    for name in _DATES:
        _check_date(getattr(node, name), f"{where}: {name}")
    if isinstance(node.payload, TaskPayload):
        _check_date(node.payload.deadline, f"{where}: payload.deadline")
        if len(node.payload.dependencies) > MAX_REFS:
            raise ImportFormatError(f"{where}: payload.dependencies lists more than "
                                    f"{MAX_REFS} ids")
    check_namespace(node.namespace, f"{where}: namespace")
    if len(node.signals) > MAX_SIGNALS:
        raise ImportFormatError(f"{where}: more than {MAX_SIGNALS} signals")
    for name, value in node.signals.items():
        if not 1 <= len(name) <= 64 or not -MAX_SIGNAL <= value <= MAX_SIGNAL:
            raise ImportFormatError(f"{where}: signal {name[:64]!r} must be named by 1 to 64 "
                                    f"characters and lie in [-1e9, 1e9]")
    if dumped is None:
        check_json_value(node.metadata, f"{where}: metadata", walked=True)
        check_json_value(node.payload.model_dump(mode="json"), f"{where}: payload",
                         walked=True)
    else:
        for name in ("metadata", "payload"):
            _check_size(dumped[name], f"{where}: {name}")
    derived = node.provenance.derived_from
    if len(derived) > MAX_REFS:
        raise ImportFormatError(f"{where}: provenance.derived_from lists more than "
                                f"{MAX_REFS} ids")
    if len(set(derived)) != len(derived):
        raise ImportFormatError(f"{where}: provenance.derived_from lists an id twice")
    if node.id in derived:
        raise ImportFormatError(f"{where}: provenance.derived_from names the memory itself")
    for i, target in enumerate(derived):
        check_uuid(target, f"{where}: provenance.derived_from[{i}]")


def check_storable(node: MemoryNode, what: str = "the memory") -> None:
    """What every memory written to a store must satisfy: the bounds of an import
    (:func:`check_tree` over the memory's JSON, then :func:`check_node`), so anything a
    store holds, its export holds and an import of that export takes back.

    ``add``, ``observe``, ``update``, ``set_metadata``, summaries and imports all write
    through it (:meth:`mars_core.engine.engine.Engine.stage_insert` and ``stage_update``);
    ``what`` names the memory in the message.

    Raises:
        ValidationError: the first bound the memory breaks, naming the field.

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> node = MemoryNode(id="00000000-0000-4000-8000-000000000001", type="semantic",
        ...                   content="x", weight=1, payload={"kind": "semantic"},
        ...                   metadata={"n": 2**64})
        >>> try:
        ...     check_storable(node)
        ... except ValidationError as exc:
        ...     print(exc)
        the memory: metadata.n: integer beyond the 64-bit range
    """
    where = what
    # the free-form fields, at their depth bound (each is one level below the root); the
    # model bounds the others (ranges, the content's text)
    dumped = node.model_dump(mode="json", include=_FREE_FORM)
    try:
        check_tree(dumped, max_nesting=MAX_NESTING + 1)
    except ImportFormatError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    try:
        check_node(node, where, dumped=dumped)
    except ImportFormatError as exc:
        raise ValidationError(str(exc)) from None


# --- the graph -------------------------------------------------------------------------------


def _cycle_member(edges: Sequence[Edge]) -> str | None:
    """A node on a cycle of ``edges`` (Kahn's algorithm, then a walk back), or None."""
    incoming: dict[str, list[str]] = defaultdict(list)
    outdeg: dict[str, int] = defaultdict(int)
    for e in edges:
        incoming[e.target].append(e.source)
        outdeg[e.source] += 1
        outdeg.setdefault(e.target, 0)
    todo = [n for n, d in outdeg.items() if d == 0]  # peel sinks off, backwards
    while todo:
        n = todo.pop()
        for src in incoming.get(n, ()):
            outdeg[src] -= 1
            if outdeg[src] == 0:
                todo.append(src)
    left = {n for n, d in outdeg.items() if d > 0}
    if not left:
        return None
    out: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        if e.source in left and e.target in left:
            out[e.source].append(e.target)
    seen: set[str] = set()
    node = min(left)
    while node not in seen:  # every node left has a successor left: walk until a repeat
        seen.add(node)
        node = min(out[node])
    return node


def check_lineage(edges: Sequence[Edge]) -> None:
    """Refuse cycles among ``derivesFrom`` edges, and among ``supersedes`` and
    ``corrects`` edges together (:data:`LINEAGE_GROUPS`).

    An import can only close a cycle within the document: its edges start at memories
    new to the store, and no edge of the store points at those.

    Raises:
        ImportFormatError: names a memory on the cycle.
    """
    for group in LINEAGE_GROUPS:
        member = _cycle_member([e for e in edges if e.predicate in group])
        if member is not None:
            names = "/".join(sorted(p.value for p in group))
            raise ImportFormatError(f"{names} edges form a cycle through memory {member}")
