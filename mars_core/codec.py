"""How store state maps onto backend records (the system of record, DESIGN §3).

* A memory is one record in the ``memories`` collection (active) or the ``archive``
  collection (forgotten): its vector, a JSON document holding the whole node and its
  outgoing edges, and flat metadata for filters (namespace, type, status, sensitivity,
  creation time, step, conversation, weight).
* An audit event is one record in the ``audit`` collection (no vector).
* The manifest, the store state (id counter, audit head) and per-namespace state
  (interaction counter) are records in the ``meta`` collection (no vector).

Record ids are UUIDs (Qdrant accepts nothing else): memory ids are derived from the
store seed and a counter (:func:`memory_id`), so a replay gives the same ids.

With encryption on (``MemoryStore(keys_path=...)``, :mod:`mars_core.privacy.crypto`),
the writers take a ``seal`` function and the readers an ``unseal`` function, both
``(key id, text) -> text``: a node's document is sealed under the key of the node id,
and a meta record is sealed when its writer asks (``prefs:<ns>``, which names entities)
under the key of its meta key. Readers recognise a sealed document by its prefix, so
plaintext and sealed records decode through the same functions.

Examples:
    >>> memory_id(0, 1) == memory_id(0, 1) != memory_id(1, 1)
    True
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.audit import AuditEvent, canonical_json
from mars_core.backends.base import MetaValue, Record
from mars_core.errors import CorruptStoreError
from mars_core.model import Edge, MemoryNode
from mars_core.privacy.crypto import is_sealed

__all__ = [
    "ARCHIVE",
    "AUDIT",
    "FORMAT_VERSION",
    "MEMORIES",
    "META",
    "Sealer",
    "audit_record",
    "decode_audit",
    "decode_meta",
    "decode_node",
    "memory_id",
    "meta_id",
    "meta_record",
    "node_metadata",
    "node_record",
]

FORMAT_VERSION = 1
MEMORIES = "memories"
ARCHIVE = "archive"
AUDIT = "audit"
META = "meta"

_IDS = uuid.UUID("6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f")
_AUDIT_IDS = uuid.uuid5(_IDS, "audit")
_META_IDS = uuid.uuid5(_IDS, "meta")

Sealer = Callable[[str, str], str]
"""``(key id, text) -> text``: ``ContentCipher.seal`` (writers) or ``.open`` (readers)."""


def _unsealed(record: Record, key_id: str, unseal: Sealer | None) -> str:
    """The plaintext document of ``record`` (opened with ``unseal`` when sealed)."""
    if not is_sealed(record.document):
        return record.document
    if unseal is None:
        raise CorruptStoreError(f"record {record.id} is encrypted; open the store with the "
                                "keys_path it was written with")
    return unseal(key_id, record.document)


def memory_id(seed: int, counter: int) -> str:
    """The deterministic UUID of the ``counter``-th memory of a store with ``seed``."""
    return str(uuid.uuid5(_IDS, f"{seed}:{counter}"))


def node_metadata(node: MemoryNode) -> dict[str, MetaValue]:
    """Flat filter metadata of a node."""
    return {
        "namespace": node.namespace,
        "type": node.type.value,
        "status": node.status.value,
        "sensitivity": float(node.sensitivity),
        "created_ts": node.created_at.timestamp(),
        "step": node.step,
        "conversation": node.provenance.conversation_id or "",
        "weight": node.weight,
    }


def node_record(
    node: MemoryNode, edges: Iterable[Edge], vector: npt.NDArray[np.float32] | None,
    seal: Sealer | None = None,
) -> Record:
    """The backend record of a node (``vector=None`` keeps the stored vector); with
    ``seal``, the document is sealed under the key of the node id."""
    doc = canonical_json({"v": FORMAT_VERSION, "node": node.model_dump(mode="json"),
                          "edges": [e.model_dump(mode="json") for e in edges]})
    return Record(id=node.id, vector=vector, document=seal(node.id, doc) if seal else doc,
                  metadata=node_metadata(node))


def decode_node(record: Record, unseal: Sealer | None = None) -> tuple[MemoryNode, list[Edge]]:
    """Inverse of :func:`node_record` (``unseal`` opens a sealed document).

    Raises:
        CorruptStoreError: the document is not a node written by this library, or it is
            sealed and cannot be opened (no ``unseal``, or its key was destroyed).
    """
    text = _unsealed(record, record.id, unseal)
    try:
        doc = json.loads(text)
        node = MemoryNode.model_validate(doc["node"])
        edges = [Edge.model_validate(e) for e in doc.get("edges", [])]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptStoreError(f"record {record.id} is not a readable memory") from exc
    return node, edges


def audit_record(ev: AuditEvent) -> Record:
    """The backend record of an audit event."""
    return Record(id=str(uuid.uuid5(_AUDIT_IDS, str(ev.seq))),
                  document=canonical_json(ev.model_dump(mode="json")),
                  metadata={"seq": ev.seq, "namespace": ev.namespace, "op": ev.op.value})


def decode_audit(record: Record) -> AuditEvent:
    """Inverse of :func:`audit_record`."""
    try:
        return AuditEvent.model_validate_json(record.document)
    except ValueError as exc:
        raise CorruptStoreError(f"audit record {record.id} is unreadable") from exc


def meta_id(key: str) -> str:
    """The UUID of a meta record."""
    return str(uuid.uuid5(_META_IDS, key))


def meta_record(key: str, data: dict[str, Any], seal: Sealer | None = None) -> Record:
    """A meta record (manifest, state, namespace state, preferences); with ``seal``, the
    document is sealed under the key named ``key``."""
    doc = canonical_json(data)
    return Record(id=meta_id(key), document=seal(key, doc) if seal else doc,
                  metadata={"key": key})


def decode_meta(record: Record, unseal: Sealer | None = None) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`meta_record`: ``(key, data)`` (``unseal`` opens a sealed one)."""
    key = record.metadata.get("key")
    if not isinstance(key, str):
        raise CorruptStoreError(f"meta record {record.id} is unreadable")
    text = _unsealed(record, key, unseal)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CorruptStoreError(f"meta record {record.id} is unreadable") from exc
    if not isinstance(data, dict):
        raise CorruptStoreError(f"meta record {record.id} is malformed")
    return key, data
