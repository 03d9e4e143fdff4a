"""The append-only, hash-chained audit log (seed 000 §3.2.8, §5.4).

Every mutation of the store emits exactly one :class:`AuditEvent` with the operation,
the policy and its parameters, the local features, the score and a human-readable
rationale. Events never hold raw text: content is represented by a *keyed* hash
(HMAC-SHA256 with the store's audit key), so an event cannot be matched against guessed
text by someone without the key. Events are chained, one chain per namespace — each
event's ``hash`` is an HMAC over the previous hash and the event's canonical JSON — and
:meth:`AuditChain.verify` finds any edit, deletion or reordering (the namespace's record
also keeps the head of its chain, so a truncated tail is found too).

Events of scheme 2 (every event written since issue 30) hash the namespace as a keyed
token (:meth:`AuditChain.namespace_token`) rather than its name, so an erased
namespace's chain can be renamed to ``erased//<token>//<n>`` without breaking a hash,
and the last event a call writes in a namespace records the state of every memory row
the call wrote there (``rows``: id → keyed digest of the row, ``""`` once deleted), which
:mod:`mars_core.engine.trail` checks the rows against. Events of scheme 1 (written before)
hash as they always did.

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
    "ERASED_PREFIX",
    "GENESIS",
    "SCHEME",
    "AuditChain",
    "AuditEvent",
    "AuditOp",
    "AuditTxn",
    "VerifyReport",
    "canonical_json",
    "erased_name",
    "erased_token",
]

GENESIS = "0" * 64
SCHEME = 2
"""The hash scheme of new events (see the module)."""
ERASED_PREFIX = "erased//"
"""What an erased namespace's chain is renamed to starts with: ``erased//<token>//<n>``.
An empty part (``//``) is in no valid namespace, so no namespace of a user's can take
the name."""
_TOKEN_CHARS = 32


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
    RECORD = "record"
    """The audit recorded the state of memory rows that no event of theirs had recorded
    (a store written before rows were audited, brought under the check)."""


def erased_name(token: str, generation: int) -> str:
    """The name an erased namespace's chain and record are kept under.

    Examples:
        >>> erased_name("ab" * 16, 0)
        'erased//abababababababababababababababab//0'
    """
    return f"{ERASED_PREFIX}{token}//{generation}"


def erased_token(name: str) -> str | None:
    """The token an erased namespace's stored name holds, or ``None`` for any other
    name.

    Examples:
        >>> erased_token(erased_name("ab" * 16, 2)), erased_token("users/ana")
        ('abababababababababababababababab', None)
    """
    if not name.startswith(ERASED_PREFIX):
        return None
    token, sep, generation = name[len(ERASED_PREFIX):].partition("//")
    ok = sep and len(token) == _TOKEN_CHARS and generation.isascii() and generation.isdigit()
    return token if ok else None


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
        scheme: how the event is hashed (1: written before issue 30; 2: see the module).
        rows: the memory rows the call wrote in the namespace, as the call left them
            (id → keyed digest; ``""``: deleted); on the last event of a call only.
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
    scheme: int = Field(1, ge=1, le=SCHEME)
    rows: dict[str, str] = Field(default_factory=dict)


def canonical_json(data: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8) used for hashing and storage."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _event_body(ev: AuditEvent, token: str) -> str:
    """What an event's hash covers: the event as it was hashed when written (scheme 1:
    the fields it had then; scheme 2: the namespace as its token)."""
    if ev.scheme == 1:
        return canonical_json(ev.model_dump(mode="json", exclude={"hash", "scheme", "rows"}))
    return canonical_json({**ev.model_dump(mode="json", exclude={"hash"}), "namespace": token})


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Result of a verification: ``ok`` and, if not, where and why.

    Attributes:
        ok: nothing was found.
        checked: audit events verified.
        first_bad_seq: the first bad event's position in its chain, when one is.
        reason: what was found.
        rows: memory rows checked against the audit's record of them.
        sealed: whether the recorded heads and the namespace list were checked against
            their keyed seals (a store written before they existed has none until a
            writer opens it).
    """

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    reason: str = ""
    rows: int = 0
    sealed: bool = False


@dataclass
class AuditTxn:
    """Events prepared for one namespace in one store operation, chained, not committed.

    ``deferred``: the events are chained (linked and hashed) only by :meth:`finish`, once
    the operation knows the memory rows it wrote (the store's units of work); until then
    they hold no hash.
    """

    chain: AuditChain
    namespace: str
    next_seq: int
    head: str
    events: list[AuditEvent] = field(default_factory=list)
    deferred: bool = False

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
            prev_hash=self.head, scheme=SCHEME,
        )
        if self.deferred:
            self.events.append(draft)
            self.next_seq += 1
            return draft
        ev = draft.model_copy(update={"hash": self.chain.chain_hash(draft)})
        self.events.append(ev)
        self.next_seq += 1
        self.head = ev.hash
        return ev

    def finish(self, rows: Mapping[str, str] | None = None) -> None:
        """Chain a deferred transaction's events, the memory rows the operation wrote
        (as :meth:`record_rows` takes them) on its last event.

        Raises:
            ValueError: rows and no event to record them on.
        """
        if rows:
            if not self.events:
                raise ValueError(f"no event of namespace {self.namespace!r} to record rows on")
            last = self.events[-1]
            self.events[-1] = last.model_copy(update={"rows": {**last.rows, **rows}})
        if not self.deferred:
            if rows:
                self._rehash_last()
            return
        prev = self.head
        for i, ev in enumerate(self.events):
            linked = ev.model_copy(update={"prev_hash": prev})
            linked = linked.model_copy(update={"hash": self.chain.chain_hash(linked)})
            self.events[i] = linked
            prev = linked.hash
        self.head, self.deferred = prev, False

    def _rehash_last(self) -> None:
        last = self.events[-1]
        last = last.model_copy(update={"hash": self.chain.chain_hash(last)})
        self.events[-1] = last
        self.head = last.hash

    def record_rows(self, rows: Mapping[str, str]) -> None:
        """Record on the last event prepared what the call left of the memory rows it
        wrote (id → :meth:`AuditChain.row_digest`, ``""``: deleted); the event is hashed
        again (nothing follows it yet).

        Raises:
            ValueError: no event was prepared.
        """
        self.finish(rows)


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
        self._token: tuple[str, str] = ("", "")  # the last name tokenised: a bulk call
        # hashes thousands of events of one namespace

    def content_hash(self, text: str) -> str:
        """Keyed hash of a text (HMAC-SHA256, hex); cannot be matched without the key."""
        msg = b"content\x00" + text.encode("utf-8")
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()

    def chain_hash(self, ev: AuditEvent) -> str:
        """The chained hash of an event (over its predecessor hash and canonical body)."""
        body = (ev.prev_hash + "\x00" + _event_body(ev, self.namespace_token(ev.namespace))
                ).encode("utf-8")
        return hmac.new(self._key, b"chain\x00" + body, hashlib.sha256).hexdigest()

    def _mac(self, domain: bytes, text: str) -> str:
        return hmac.new(self._key, domain + b"\x00" + text.encode("utf-8"),
                        hashlib.sha256).hexdigest()

    def namespace_token(self, name: str) -> str:
        """A namespace as events hash it and an index partitions by it: a keyed hash of
        its name (32 hex digits) — for an erased namespace's stored name
        (:func:`erased_name`), the token it holds.

        Examples:
            >>> chain = AuditChain(b"k" * 32)
            >>> t = chain.namespace_token("users/ana")
            >>> len(t), chain.namespace_token(erased_name(t, 0)) == t
            (32, True)
        """
        last = self._token
        if last[0] == name and name:
            return last[1]
        token = erased_token(name) or self._mac(b"namespace", name)[:_TOKEN_CHARS]
        self._token = (name, token)
        return token

    def field_token(self, field: str, value: str) -> str:
        """A filter field's value as an index keeps it (a conversation id): a keyed hash,
        so the index's files never hold it (``""`` stays ``""``: no conversation)."""
        return value and self._mac(b"field\x00" + field.encode("utf-8"),
                                   value)[:_TOKEN_CHARS]

    def row_digest(self, row: Mapping[str, Any]) -> str:
        """The keyed digest of a memory row as the audit records it (the row as
        :func:`mars_core.engine.trail.row_state` gives it)."""
        return self._mac(b"row", canonical_json(row))[:_TOKEN_CHARS]

    def seal(self, name: str, count: int, head: str) -> str:
        """The keyed seal of a namespace's recorded chain length and head: whoever edits
        the record without the key (a truncated tail) cannot make a matching one."""
        return self._mac(b"seal", f"{name}\x00{count}\x00{head}")

    def name_mark(self, name: str) -> int:
        """A namespace's share of the seal of the namespace list (the XOR of every
        stored name's mark; dropping a namespace without the key cannot keep it)."""
        return int(self._mac(b"listed", name), 16)

    def begin(self, namespace: str, next_seq: int, head: str, *,
              deferred: bool = False) -> AuditTxn:
        """Start preparing a namespace's events: its chain holds ``next_seq`` events
        ending in ``head`` (``deferred``: see :class:`AuditTxn`)."""
        return AuditTxn(self, namespace, next_seq, head, deferred=deferred)

    def renamed(self, events: Iterable[AuditEvent], name: str) -> list[AuditEvent]:
        """A chain's events under another stored name (an erased namespace's,
        :func:`erased_name`), in order: events of scheme 2 keep their hashes (they hash
        the namespace's token, which the erased name holds); a chain written before
        holds events of scheme 1, which hash the name itself, and is chained again as
        scheme 2 from its first event (an anchor kept before then no longer covers it)."""
        out: list[AuditEvent] = []
        prev = GENESIS
        for ev in events:
            moved = ev.model_copy(update={"namespace": name, "prev_hash": prev,
                                          "scheme": SCHEME})
            if ev.scheme != SCHEME or ev.prev_hash != prev or \
                    self.namespace_token(name) != self.namespace_token(ev.namespace):
                moved = moved.model_copy(update={"hash": self.chain_hash(moved)})
            out.append(moved)
            prev = moved.hash
        return out

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

