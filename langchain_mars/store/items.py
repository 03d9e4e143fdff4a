"""Item encoding: a LangGraph value as a memory's text and metadata record, and back as an
``Item`` or a ``SearchItem``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import (
    Item,
    SearchItem,
    get_text_at_path,
)

from langchain_mars._keys import Namespace, decode_namespace
from mars_core.engine.guard import Shown
from mars_core.errors import (
    ValidationError,
)
from mars_core.model import MemoryNode, Provenance
from mars_core.namespaces import ITEM_KEY

__all__ = ["MARKER"]

MARKER = ITEM_KEY
"""Metadata key under which a memory keeps its LangGraph item (namespace, key, value)."""


def _json(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep, JSON-clean copy of a value (the store never shares the caller's objects)."""
    try:
        data = json.loads(json.dumps(dict(value), allow_nan=False, ensure_ascii=False))
    except RecursionError:
        raise ValidationError("an item value is nested too deeply to store; flatten it") \
            from None
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"an item value must be JSON-serialisable: {exc}") from None
    assert isinstance(data, dict)
    return data


def _text(value: dict[str, Any], fields: Literal[False] | list[str]) -> tuple[str, bool]:
    """The memory text of a value: its indexed fields, or its JSON when nothing is indexed."""
    texts = [] if fields is False else [t for f in fields for t in get_text_at_path(value, f)]
    text = "\n".join(t for t in texts if t.strip())
    if text:
        return text, True
    return json.dumps(value, sort_keys=True, ensure_ascii=False), False


def _new_record(namespace: Namespace, key: str, data: dict[str, Any],
                fields: Literal[False] | list[str], *, ttl: float | None,
                created: str) -> tuple[str, dict[str, Any]]:
    """The memory text of a put and the item record its metadata keeps."""
    text, indexed = _text(data, fields)
    rec: dict[str, Any] = {"namespace": list(namespace), "key": key, "value": data, "index": fields,
           "indexed": indexed, "created_at": created}
    if ttl is not None:
        rec["ttl"] = ttl
    return text, rec


def _provenance(key: str) -> Provenance:
    """Where an item's memory came from (its key, when it fits an external id)."""
    return Provenance(source="langgraph", external_id=key if len(key) <= 256 else None)


def _record(node: MemoryNode) -> dict[str, Any] | None:
    rec = node.metadata.get(MARKER)
    if isinstance(rec, dict) and isinstance(rec.get("key"), str) and \
            isinstance(rec.get("namespace"), list) and isinstance(rec.get("value"), dict):
        return rec
    return None


def _record_or_empty(node: MemoryNode) -> dict[str, Any]:
    return _record(node) or {"value": {}}


def _value(rec: dict[str, Any], shown: Shown) -> dict[str, Any]:
    """An item's value as the output check lets it out (a copy: callers may mutate it)."""
    value = shown.mask(json.loads(json.dumps(rec["value"])))
    assert isinstance(value, dict)
    return value


def _item(node: MemoryNode, shown: Shown) -> Item:
    """The LangGraph item of a memory."""
    rec = _record_or_empty(node)
    return Item(value=_value(rec, shown), key=rec.get("key", node.id),
                namespace=_namespace_of(node, rec), created_at=_created_at(node, rec),
                updated_at=node.created_at)


def _search_item(node: MemoryNode, score: float | None, shown: Shown) -> SearchItem:
    """The LangGraph search result of a memory."""
    rec = _record_or_empty(node)
    return SearchItem(namespace=_namespace_of(node, rec), key=rec.get("key", node.id),
                      value=_value(rec, shown), created_at=_created_at(node, rec),
                      updated_at=node.created_at, score=None if score is None else float(score))


def _namespace_of(node: MemoryNode, rec: dict[str, Any]) -> Namespace:
    return tuple(rec.get("namespace") or decode_namespace(node.namespace))


def _created_at(node: MemoryNode, rec: dict[str, Any]) -> datetime:
    at = rec.get("created_at")
    return datetime.fromisoformat(at) if isinstance(at, str) else node.created_at
