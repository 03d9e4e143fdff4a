"""The store's audit trail as its users read it: events from the record store, verified.

Events are kept in the record store, one hash chain per namespace
(:class:`~mars_core.audit.AuditChain`); :class:`AuditTrail` reads them — all in commit
order, one namespace's in chain order, or those that name a memory — and verifies:

* **every chain** against the head its namespace's record keeps, so an edited, dropped,
  reordered or truncated event is found;
* **every memory row** against the audit's record of it: the last event a call writes in
  a namespace records a keyed digest of each memory row the call wrote there
  (:func:`row_state`: content, status, sensitivity, namespace and every other field but
  the access statistics), so a row edited, deleted, added or moved to another namespace
  outside the store is found;
* **the recorded heads and the namespace list** against their keyed seals
  (:meth:`~mars_core.audit.AuditChain.seal` in each namespace's record,
  :meth:`~mars_core.audit.AuditChain.name_mark` in the manifest), so someone who can
  write the records but does not hold the audit key cannot truncate a chain's tail (and
  set its recorded head to the last surviving event) or drop a whole namespace unseen.

Whoever holds the audit key could rewrite a chain, its rows' digests and its seals
(:mod:`mars_core.keys` says who can); an anchored :attr:`AuditTrail.head`, kept outside
the store and given back to :meth:`AuditTrail.verify`, finds that too, up to the anchor.
A store written before rows and seals existed is brought under them the first time a
writer opens it (:func:`upgrade`: one ``record`` event per namespace).

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore() as store:
    ...     _ = store.add("Ana likes tea", type="semantic")
    ...     head = store.audit.head  # keep it elsewhere
    ...     _ = store.add("Ana moved to Porto", type="semantic")
    ...     report = store.audit.verify(expected_head=head)
    ...     len(store.audit), report.ok, report.rows, report.sealed
    (2, True, 2, True)
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from mars_core.audit import (
    AuditChain,
    AuditEvent,
    AuditOp,
    VerifyReport,
    erased_token,
)
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode
from mars_core.storage.base import AppendAudit, NamespaceRecord, RecordStore, RecordTxn

__all__ = ["AUDIT_FORMAT", "AuditTrail", "enlist", "row_state", "sealed", "upgrade"]

AUDIT_FORMAT = 2
"""The manifest's ``audit_format`` of a store whose rows and heads are under the audit
(1, or none: written before; :func:`upgrade` brings it up)."""

_STATS = {"access_count", "last_access_at", "last_access_step", "touch_seq"}
"""A memory's access statistics: a row of their own, written by reads, not audited."""
_RECORD_BATCH = 1000
"""Rows one ``record`` event of :func:`upgrade` carries."""
_LIST = "namespaces_seal"
"""The manifest key of the namespace list's seal."""


def row_state(node: MemoryNode) -> dict[str, Any]:
    """What the audit records of a memory row: every field but the access statistics.

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> n = MemoryNode(id="m1", type="semantic", content="x", weight=1,
        ...                payload={"kind": "semantic"}, access_count=3)
        >>> "content" in row_state(n), "access_count" in row_state(n)
        (True, False)
    """
    return node.model_dump(mode="json", exclude=_STATS)


def sealed(chain: AuditChain, record: NamespaceRecord) -> NamespaceRecord:
    """``record`` with its keyed seal (over its name, chain length and head) in its
    state."""
    seal = chain.seal(record.name, record.audit_count, record.audit_head)
    return replace(record, state={**record.state, "seal": seal})


def enlist(chain: AuditChain, manifest: Mapping[str, Any], added: Sequence[str] = (),
           removed: Sequence[str] = ()) -> dict[str, Any]:
    """The manifest with the namespace list's seal moved by namespaces added and removed
    (a keyed XOR of their names: no list is read)."""
    value = int(str(manifest.get(_LIST, "0")), 16)
    for name in [*added, *removed]:
        value ^= chain.name_mark(name)
    return {**manifest, _LIST: f"{value:064x}"}


def upgrade(tx: RecordTxn, chain: AuditChain, at: datetime) -> None:
    """Bring a store written before rows and seals were audited under them, in the
    write transaction ``tx`` (which holds every namespace): each namespace's memory rows
    are recorded by ``record`` events (:data:`_RECORD_BATCH` rows each), every record is
    sealed and the namespace list too, and the manifest says so (``audit_format``)."""
    names = tx.namespace_names()
    tx.lock_namespaces(names)  # first, as every writer holds namespaces before the manifest
    manifest = tx.manifest() or {}
    if int(manifest.get("audit_format", 1)) >= AUDIT_FORMAT:
        return  # another process brought it up meanwhile
    for name in names:
        record = tx.namespace(name) or NamespaceRecord(name)
        txn = chain.begin(name, record.audit_count, record.audit_head)
        for batch in _chunks(tx, chain, name):
            txn.add(op=AuditOp.RECORD, namespace=name, rationale=(
                f"recorded the state of {len(batch)} memories written before rows were "
                "audited"), step=record.step, at=at)
            txn.record_rows(batch)
        tx.apply([AppendAudit(tuple(txn.events))])
        tx.put_namespace(sealed(chain, replace(record, version=record.version + 1,
                                               audit_count=txn.next_seq,
                                               audit_head=txn.head)))
    tx.put_manifest({**enlist(chain, {**manifest, _LIST: "0"}, names),
                     "audit_format": AUDIT_FORMAT})


def _chunks(tx: RecordTxn, chain: AuditChain, name: str) -> list[dict[str, str]]:
    """A namespace's memory rows as the audit records them, :data:`_RECORD_BATCH` a
    chunk."""
    out: list[dict[str, str]] = []
    for batch in tx.scan(name):
        for node in batch:
            if not out or len(out[-1]) == _RECORD_BATCH:
                out.append({})
            out[-1][node.id] = chain.row_digest(row_state(node))
    return out


class AuditTrail:
    """Read-only access to a store's audit events (see the module)."""

    def __init__(self, records: RecordStore, chain: AuditChain) -> None:
        self._records, self._chain = records, chain

    def events(self, namespace: str | None = None) -> list[AuditEvent]:
        """Every event in commit order, or one namespace's in chain order."""
        with self._records.read() as tx:
            return tx.audit(namespace)

    def for_node(self, memory_id: str) -> list[AuditEvent]:
        """The events that name a memory, in commit order."""
        with self._records.read() as tx:
            return tx.audit_for(memory_id)

    def content_hash(self, text: str) -> str:
        """The keyed hash events hold for a text."""
        return self._chain.content_hash(text)

    def token(self, namespace: str) -> str:
        """The keyed token a namespace's events are hashed with and the vector index
        partitions it by; an erased namespace's chain is kept as
        ``erased//<token>//<n>`` (so the name finds its erasures, and nothing else
        does)."""
        return self._chain.namespace_token(namespace)

    def __len__(self) -> int:
        with self._records.read() as tx:
            return tx.audit_size()

    @property
    def head(self) -> str:
        """The anchor of the whole trail as it is now: ``mars-head-2:<position>:<digest>``.

        Keep it outside the store (a ticket, a log, another database); later,
        ``verify(expected_head=...)`` recomputes each namespace's chain head at that
        commit position and compares: an event up to it that was changed, dropped or
        reordered is found even by someone who holds the audit key (they cannot make a
        rewritten chain end in the same hash). It changes with every event. Chains are
        named in it by their namespace's keyed token, so it still holds after a
        namespace is erased (its chain is renamed, not rewritten).
        """
        with self._records.read() as tx:
            position, heads = tx.audit_heads()
            names = tx.namespace_names()
        return f"{_ANCHOR}:{position}:{self._digest(heads, names)}"

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        """Verify every namespace's chain (hashes, order, links, recorded head), its
        memory rows against the audit's record of them and, in a store under them, the
        seals of the recorded heads and of the namespace list; with ``expected_head`` (a
        :attr:`head` kept earlier), also that the trail up to it is the one anchored.

        Raises:
            ValidationError: ``expected_head`` is not a head this method gave.
        """
        anchor = _parse(expected_head) if expected_head is not None else None
        with self._records.read() as tx:
            return _Verification(tx, self._chain).run(anchor, self._digest)

    def _digest(self, heads: Mapping[str, tuple[int, str]], names: Sequence[str],
                version: int = 2) -> str:
        """The digest of chain heads: version 2 names each chain by its namespace's
        token and how many erased namespaces had that token before it (stable when the
        namespace is erased and its chain renamed); version 1 by its name."""
        digest = hashlib.sha256()
        if version == 1:
            for name in sorted(heads):
                count, last = heads[name]
                digest.update(f"{name}\x00{count}\x00{last}\n".encode())
            return digest.hexdigest()
        erased = Counter(t for n in names if (t := erased_token(n)) is not None)
        keyed = {}
        for name, head in heads.items():
            token = self._chain.namespace_token(name)
            generation = name.rsplit("//", 1)[1] if erased_token(name) else erased[token]
            keyed[f"{token}:{generation}"] = head
        for key in sorted(keyed):
            count, last = keyed[key]
            digest.update(f"{key}\x00{count}\x00{last}\n".encode())
        return digest.hexdigest()


class _Verification:
    """One run of :meth:`AuditTrail.verify` over a snapshot of the records."""

    def __init__(self, tx: RecordTxn, chain: AuditChain) -> None:
        self.tx, self.chain = tx, chain
        self.checked = self.rows = 0
        manifest = tx.manifest() or {}
        self.manifest = manifest
        self.sealed = int(manifest.get("audit_format", 1)) >= AUDIT_FORMAT

    def fail(self, reason: str, seq: int | None = None) -> VerifyReport:
        return VerifyReport(False, self.checked, seq, reason, self.rows, self.sealed)

    def run(self, anchor: tuple[int, int, str] | None, digest: Any) -> VerifyReport:
        tx = self.tx
        total = tx.audit_size()
        names = tx.namespace_names()
        if self.sealed and enlist(self.chain, {}, names)[_LIST] != \
                self.manifest.get(_LIST):
            return self.fail("the namespace list is not the one sealed with the audit key: a "
                             "namespace was dropped (or added, or renamed) outside the store")
        for name in names:
            reason, seq = self.namespace(name)
            if reason:
                return self.fail(f"namespace {name!r}: {reason}", seq)
        if self.checked != total:
            return self.fail(f"{total - self.checked} events belong to no namespace's chain")
        if anchor is not None:
            version, position, expected = anchor
            heads = tx.audit_heads(position)[1]
            if digest(heads, names, version) != expected:
                return self.fail(f"the trail up to the anchored head (position {position}) "
                                 "is not the one anchored: an event was changed, dropped or "
                                 "reordered, or the chain rewritten")
        return VerifyReport(True, self.checked, rows=self.rows, sealed=self.sealed)

    def namespace(self, name: str) -> tuple[str, int | None]:
        """What is wrong with one namespace (``""``: nothing) and the event where."""
        record = self.tx.namespace(name)
        events = self.tx.audit(name)
        expected = (record.audit_count, record.audit_head) if record is not None else (0, "")
        report = self.chain.verify(events, expected)
        self.checked += report.checked
        if not report.ok:
            return report.reason, report.first_bad_seq
        if not self.sealed:
            return "", None
        if record is None or record.state.get("seal") != self.chain.seal(
                name, record.audit_count, record.audit_head):
            return ("its recorded chain length and head are not the ones sealed with the "
                    "audit key (events dropped at the end, or the record edited)"), None
        return self.memory_rows(name, events), None

    def memory_rows(self, name: str, events: Sequence[AuditEvent]) -> str:
        """Every memory row of the namespace against the audit's record of it."""
        recorded: dict[str, str] = {}
        for ev in events:
            for memory_id, row in ev.rows.items():
                if row:
                    recorded[memory_id] = row
                else:
                    recorded.pop(memory_id, None)
        for batch in self.tx.scan(name):
            for node in batch:
                self.rows += 1
                want = recorded.pop(node.id, None)
                if want is None:
                    return (f"memory {node.id} is in no event's record of the namespace (a "
                            "row added, or moved here from another namespace, outside the "
                            "store)")
                if want != self.chain.row_digest(row_state(node)):
                    return (f"memory {node.id} differs from the audit's record of it (its "
                            "content, status, sensitivity or another field was edited "
                            "outside the store)")
        if recorded:
            return (f"memory {min(recorded)} of the audit's record is missing (a row "
                    "deleted, or moved to another namespace, outside the store)")
        return ""


_ANCHOR = "mars-head-2"
_ANCHORS = {"mars-head-1": 1, _ANCHOR: 2}


def _parse(head: object) -> tuple[int, int, str]:
    """``(version, position, digest)`` of an anchored head."""
    parts = head.split(":") if isinstance(head, str) else []
    if len(parts) != 3 or parts[0] not in _ANCHORS or not parts[1].isascii() or \
            not parts[1].isdigit() or len(parts[1]) > 18 or \
            len(parts[2]) != 64 or not all(c in "0123456789abcdef" for c in parts[2]):
        raise ValidationError("expected_head must be a head the store gave "
                              f"(store.audit.head or `mars verify`: '{_ANCHOR}:<position, "
                              "at most 18 digits>:<64 hex digits>')")
    return _ANCHORS[parts[0]], int(parts[1]), parts[2]

