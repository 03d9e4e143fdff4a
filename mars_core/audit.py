"""The append-only, hash-chained audit log (seed 000 §3.2.8, §5.4).

Every mutation of the store emits exactly one :class:`AuditEvent` with the operation,
the policy and its parameters, the local features, the score and a human-readable
rationale. Events never hold raw text: content is represented by a *keyed* hash
(HMAC-SHA256 with the store's audit key), so an event cannot be matched against guessed
text by someone without the key. Events are chained, one chain per namespace — each
event's ``hash`` is an HMAC over the previous hash and the event's canonical JSON — and
:meth:`AuditChain.verify` finds any edit, deletion or reordering (the namespace's record
also keeps the head of its chain, so a truncated tail is found too).

Examples:
    >>> chain = AuditChain(key=b"k" * 32)
    >>> txn = chain.begin("ns", 0, GENESIS)
    >>> ev = txn.add(op="insert", namespace="ns", node_ids=("n1",), rationale="stored",
    ...              step=1, at=None)
    >>> chain.verify(txn.events).ok
    True
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "GENESIS",
    "AuditChain",
    "AuditEvent",
    "AuditOp",
    "AuditTxn",
    "VerifyReport",
    "canonical_json",
]

GENESIS = "0" * 64


class AuditOp(StrEnum):
    """Kinds of audited operations."""

    INSERT = "insert"
    UPDATE = "update"
    EVICT = "evict"
    SUMMARISE = "summarise"
    ACCESS = "access"
    ERASE = "erase"
    RESTORE = "restore"
    METADATA = "metadata"
    CONFIG = "config"
    IMPORT = "import"


class AuditEvent(BaseModel):
    """One audit record; ``hash`` chains it to its predecessor.

    Attributes:
        seq: position in its namespace's chain (0-based).
        op: the operation.
        namespace: the namespace it acted on.
        node_ids: the memories it touched (ids are not content).
        policy: the policy that decided, if any.
        params: policy parameters in effect (numbers and short strings only).
        features: per-node numeric features used by the decision.
        score: the decisive score, if any.
        rationale: a human-readable sentence; never raw memory text.
        content_hashes: keyed hashes of the touched contents, by node id.
        at: wall-clock time from the store's clock.
        step: the namespace's interaction counter.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    seq: int = Field(..., ge=0)
    op: AuditOp
    namespace: str
    node_ids: tuple[str, ...] = ()
    policy: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    features: dict[str, dict[str, float]] = Field(default_factory=dict)
    score: float | None = None
    rationale: str = ""
    content_hashes: dict[str, str] = Field(default_factory=dict)
    at: datetime | None = None
    step: int = 0
    prev_hash: str = GENESIS
    hash: str = ""


def canonical_json(data: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8) used for hashing and storage."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _event_body(ev: AuditEvent) -> str:
    return canonical_json(ev.model_dump(mode="json", exclude={"hash"}))


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Result of :meth:`AuditLog.verify`: ``ok`` and, if not, where and why."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    reason: str = ""


@dataclass
class AuditTxn:
    """Events prepared for one namespace in one store operation, chained, not committed."""

    chain: AuditChain
    namespace: str
    next_seq: int
    head: str
    events: list[AuditEvent] = field(default_factory=list)

    def add(
        self,
        *,
        op: AuditOp | str,
        namespace: str,
        node_ids: Iterable[str] = (),
        rationale: str,
        step: int,
        at: datetime | None,
        policy: str | None = None,
        params: Mapping[str, Any] | None = None,
        features: Mapping[str, Mapping[str, float]] | None = None,
        score: float | None = None,
        contents: Mapping[str, str] | None = None,
    ) -> AuditEvent:
        """Append a chained event; ``contents`` (id -> text) is stored as keyed hashes only."""
        if namespace != self.namespace:
            raise ValueError(f"this chain is {self.namespace!r}'s, not {namespace!r}'s")
        hashes = {nid: self.chain.content_hash(text) for nid, text in (contents or {}).items()}
        draft = AuditEvent(
            seq=self.next_seq, op=AuditOp(op), namespace=namespace, node_ids=tuple(node_ids),
            policy=policy, params=dict(params or {}),
            features={k: {f: float(x) for f, x in v.items()} for k, v in (features or {}).items()},
            score=score, rationale=rationale, content_hashes=hashes, at=at, step=step,
            prev_hash=self.head,
        )
        ev = draft.model_copy(update={"hash": self.chain.chain_hash(draft)})
        self.events.append(ev)
        self.next_seq += 1
        self.head = ev.hash
        return ev


class AuditChain:
    """Builds and verifies the audit chains of a store: one chain per namespace.

    Persisting events is the store's job (they travel in the same transaction as the
    mutation they describe); the chain only hashes, links and verifies them. A chain per
    namespace keeps tenants apart (a namespace's history is read, verified and exported
    without another's) and lets writers of different namespaces proceed independently.

    Args:
        key: the secret HMAC key (at least 16 bytes; 32 recommended).

    Examples:
        >>> chain = AuditChain(b"k" * 32)
        >>> txn = chain.begin("ns", 0, GENESIS)
        >>> ev = txn.add(op="insert", namespace="ns", node_ids=("n1",), rationale="stored",
        ...              step=1, at=None)
        >>> chain.verify(txn.events, (1, txn.head)).ok
        True
    """

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the audit key must have at least 16 bytes")
        self._key = key

    def content_hash(self, text: str) -> str:
        """Keyed hash of a text (HMAC-SHA256, hex); cannot be matched without the key."""
        msg = b"content\x00" + text.encode("utf-8")
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()

    def chain_hash(self, ev: AuditEvent) -> str:
        """The chained hash of an event (over its predecessor hash and canonical body)."""
        body = (ev.prev_hash + "\x00" + _event_body(ev)).encode("utf-8")
        return hmac.new(self._key, b"chain\x00" + body, hashlib.sha256).hexdigest()

    def begin(self, namespace: str, next_seq: int, head: str) -> AuditTxn:
        """Start preparing a namespace's events: its chain holds ``next_seq`` events
        ending in ``head``."""
        return AuditTxn(self, namespace, next_seq, head)

    def verify(self, events: Iterable[AuditEvent],
               expected_head: tuple[int, str] | None = None) -> VerifyReport:
        """Check one namespace's chain: hashes, sequence numbers, links, and the head.

        Args:
            events: the chain, in order.
            expected_head: ``(count, head_hash)`` recorded elsewhere (the namespace's
                record); finds a truncated tail.
        """
        prev, n = GENESIS, 0
        for i, ev in enumerate(events):
            if ev.seq != i:
                return VerifyReport(False, i, ev.seq, f"sequence gap or reorder at {i}")
            if ev.prev_hash != prev:
                return VerifyReport(False, i, ev.seq, "broken link to the previous event")
            if not hmac.compare_digest(ev.hash, self.chain_hash(ev)):
                return VerifyReport(False, i, ev.seq, "event content does not match its hash")
            prev, n = ev.hash, i + 1
        if expected_head is not None and (n, prev) != tuple(expected_head):
            return VerifyReport(False, n, None, "chain head differs from the recorded head "
                                "(events missing at the end)")
        return VerifyReport(True, n)

