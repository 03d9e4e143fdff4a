"""The store's audit trail as its users read it: events from the record store, verified.

Events are kept in the record store, one hash chain per namespace
(:class:`~mars_core.audit.AuditChain`); :class:`AuditTrail` reads them — all in commit
order, one namespace's in chain order, or those that name a memory — and verifies every
chain against the head its namespace's record keeps, so an edited, dropped, reordered or
truncated event is found.

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore() as store:
    ...     _ = store.add("Ana likes tea", type="semantic")
    ...     len(store.audit), store.audit.verify().ok
    (1, True)
"""

from __future__ import annotations

import hashlib

from mars_core.audit import AuditChain, AuditEvent, VerifyReport
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
        """A digest of every namespace's chain head: it changes with every event."""
        digest = hashlib.sha256()
        with self._records.read() as tx:
            for name in tx.namespace_names():
                record = tx.namespace(name)
                if record is not None and record.audit_count:
                    digest.update(f"{name}\x00{record.audit_count}\x00{record.audit_head}\x00"
                                  .encode())
        return digest.hexdigest()

    def verify(self) -> VerifyReport:
        """Verify every namespace's chain: hashes, order, links and the recorded head."""
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
        if checked != total:
            return VerifyReport(False, checked, None, f"{total - checked} events belong to no "
                                "namespace's chain")
        return VerifyReport(True, checked)
