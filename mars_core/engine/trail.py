"""The store's audit trail as its users read it: events from the record store, verified.

Events are kept in the record store, one hash chain per namespace
(:class:`~mars_core.audit.AuditChain`); :class:`AuditTrail` reads them — all in commit
order, one namespace's in chain order, or those that name a memory — and verifies every
chain against the head its namespace's record keeps, so an edited, dropped, reordered or
truncated event is found. Whoever holds the audit key could rewrite a chain and its head
(:mod:`mars_core.keys` says who can); an anchored :attr:`AuditTrail.head`, kept outside the
store and given back to :meth:`AuditTrail.verify`, finds that too.

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore() as store:
    ...     _ = store.add("Ana likes tea", type="semantic")
    ...     head = store.audit.head  # keep it elsewhere
    ...     _ = store.add("Ana moved to Porto", type="semantic")
    ...     len(store.audit), store.audit.verify(expected_head=head).ok
    (2, True)
"""

from __future__ import annotations

import hashlib

from mars_core.audit import AuditChain, AuditEvent, VerifyReport
from mars_core.errors import ValidationError
from mars_core.storage.base import RecordStore

__all__ = ["AuditTrail"]


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

    def __len__(self) -> int:
        with self._records.read() as tx:
            return tx.audit_size()

    @property
    def head(self) -> str:
        """The anchor of the whole trail as it is now: ``mars-head-1:<position>:<digest>``.

        Keep it outside the store (a ticket, a log, another database); later,
        ``verify(expected_head=...)`` recomputes each namespace's chain head at that
        commit position and compares: an event up to it that was changed, dropped or
        reordered is found even by someone who holds the audit key (they cannot make a
        rewritten chain end in the same hash). It changes with every event.
        """
        with self._records.read() as tx:
            position, heads = tx.audit_heads()
        return f"{_ANCHOR}:{position}:{_digest(heads)}"

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        """Verify every namespace's chain: hashes, order, links and the recorded head;
        with ``expected_head`` (a :attr:`head` kept earlier), also that the trail up to
        it is the one anchored.

        Raises:
            ValidationError: ``expected_head`` is not a head this method gave.
        """
        anchor = _parse(expected_head) if expected_head is not None else None
        checked = 0
        with self._records.read() as tx:
            total = tx.audit_size()
            for name in tx.namespace_names():
                record = tx.namespace(name)
                events = tx.audit(name)
                expected = (record.audit_count, record.audit_head) if record is not None \
                    else (0, "")
                report = self._chain.verify(events, expected)
                checked += report.checked
                if not report.ok:
                    return VerifyReport(False, checked, report.first_bad_seq,
                                        f"namespace {name!r}: {report.reason}")
            heads = tx.audit_heads(anchor[0])[1] if anchor is not None else {}
        if checked != total:
            return VerifyReport(False, checked, None, f"{total - checked} events belong to no "
                                "namespace's chain")
        if anchor is not None and _digest(heads) != anchor[1]:
            return VerifyReport(False, checked, None, f"the trail up to the anchored head "
                                f"(position {anchor[0]}) is not the one anchored: an event "
                                "was changed, dropped or reordered, or the chain rewritten")
        return VerifyReport(True, checked)


_ANCHOR = "mars-head-1"


def _digest(heads: dict[str, tuple[int, str]]) -> str:
    digest = hashlib.sha256()
    for name in sorted(heads):
        count, last = heads[name]
        digest.update(f"{name}\x00{count}\x00{last}\n".encode())
    return digest.hexdigest()


def _parse(head: object) -> tuple[int, str]:
    """``(position, digest)`` of an anchored head."""
    parts = head.split(":") if isinstance(head, str) else []
    if len(parts) != 3 or parts[0] != _ANCHOR or not parts[1].isascii() or \
            not parts[1].isdigit() or len(parts[1]) > 18 or \
            len(parts[2]) != 64 or not all(c in "0123456789abcdef" for c in parts[2]):
        raise ValidationError("expected_head must be a head the store gave "
                              f"(store.audit.head or `mars verify`: '{_ANCHOR}:<position, at most "
                              "18 digits>:<64 hex digits>')")
    return int(parts[1]), parts[2]
