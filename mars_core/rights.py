"""The data subject's rights on a :class:`~mars_core.store.MemoryStore`: erasure, privacy
preferences and consent, the privacy receipt, and portability (the JSON-LD export and
its import). :class:`DataRights` holds these public calls; ``MemoryStore`` has them as
its own (the same guard, lock and transaction as every other call), and their async
twins.

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore() as store:
    ...     node = store.add("Ana's phone is 555-0199", type="semantic")
    ...     receipt = store.erase(node.id)
    ...     receipt.erased == (node.id,), store.export_jsonld()["@graph"]
    (True, [])
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from mars_core.engine import args, reports
from mars_core.engine.calls import public_call
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode, MemoryStatus, MemoryType
from mars_core.namespaces import NamespaceArg
from mars_core.privacy.preferences import ConsentGrant, PrivacyPreferences
from mars_core.privacy.receipts import ErasureReceipt, PrivacyReceipt, build_receipt
from mars_core.progress import ProgressFn, checked

if TYPE_CHECKING:
    import threading

    from mars_core.engine.engine import Engine
    from mars_core.engine.eraser import Eraser
    from mars_core.engine.trail import AuditTrail
    from mars_core.engine.writer import Writer
    from mars_core.io.jsonld import ExportSummary

__all__ = ["DataRights"]


class DataRights:
    """Erasure, privacy preferences, consent, receipts and portability: the calls of
    :class:`~mars_core.store.MemoryStore` that serve the person the memories are about
    (documented there, with every other call)."""

    _allow_sync_in_loop: bool
    _lock: threading.RLock
    _closed: bool
    _depth: int
    _engine: Engine
    _eraser: Eraser
    _writer: Writer
    audit: AuditTrail

    if TYPE_CHECKING:  # MemoryStore's own
        def _ns(self, namespace: object) -> str: ...

        def list(self, namespace: NamespaceArg | None = None, *,
                 type: MemoryType | str | None = None,
                 status: MemoryStatus | str | None = MemoryStatus.ACTIVE
                 ) -> builtins.list[MemoryNode]: ...

    # --- privacy -----------------------------------------------------------------------------

    @public_call
    def erase(self, node_id: str | None = None, *, entity: str | None = None,
              conversation: str | None = None,
              namespace: NamespaceArg | None = None,
              partial: bool = True) -> ErasureReceipt:
        """Right to be forgotten: remove memories and everything derived from them.

        Give exactly one selector — ``node_id``, ``entity`` (every memory mentioning it),
        ``conversation`` (every memory from it) — scoped to ``namespace``; or give only
        ``namespace`` to erase the whole namespace. A name of two parts or more also
        reaches memories naming the person by a part ("Mr Doe", "Jane's") that no other
        person of the namespace shares; the ambiguous ones are kept and listed in the
        receipt for review (:mod:`mars_core.privacy.names`; ``partial=False``: the whole
        entity only). Summaries built on erased memories are regenerated from what
        survives, or erased when too little does (:mod:`mars_core.privacy.erasure`). The
        text leaves the record store (overwritten in its file, its write-ahead log
        truncated) and the vector index; the receipt says what was done on disk. The
        audit keeps one ``erase`` event per memory, with keyed hashes only. Erasing a
        whole namespace also erases its privacy preferences.

        Raises:
            ValidationError: no selector, or several.
            NotFoundError: ``node_id`` is not a memory of ``namespace`` (default: the
                default namespace; ids never cross namespaces).
        """
        state = self._engine.ns(self._ns(namespace))
        if node_id is not None:
            node_id = args.memory_id(node_id)
        if entity is not None:
            args.phrase(entity, "entity", max_chars=1000)
        if conversation is not None:
            args.conversation(conversation)
        whole = namespace is not None and node_id is None and entity is None \
            and conversation is None
        return self._eraser.erase(state, node_id=node_id, entity=entity,
                                  conversation=conversation, whole=whole,
                                  partial=args.flag(partial, "partial"))

    @public_call
    def preferences(self, namespace: NamespaceArg | None = None) -> PrivacyPreferences:
        """The namespace's privacy preferences (defaults when none were set)."""
        return self._engine.ns(self._ns(namespace)).prefs or PrivacyPreferences()

    @public_call
    def set_preferences(self, preferences: PrivacyPreferences | Mapping[str, Any],
                        namespace: NamespaceArg | None = None) -> PrivacyPreferences:
        """Set a namespace's privacy preferences and apply them to what it already holds.

        Sensitivities are recomputed from each memory's detected sensitivity (kept in its
        signals) under the new preferences — private entities and their descendants
        included; every changed memory gets one ``metadata`` audit event. The change of
        preferences itself is one ``config`` event (counts only, no entity names).
        """
        state = self._engine.ns(self._ns(namespace))
        try:
            prefs = preferences if isinstance(preferences, PrivacyPreferences) else \
                PrivacyPreferences.model_validate(preferences)
        except pydantic.ValidationError as exc:
            raise ValidationError.from_pydantic(exc, "privacy preferences") from None
        self._eraser.set_preferences(state, prefs)
        return prefs

    @public_call
    def grant_consent(self, *, types: Iterable[MemoryType | str] = (),
                      entities: Iterable[str] = (), purpose: str = "",
                      expires_at: datetime | None = None,
                      namespace: NamespaceArg | None = None) -> ConsentGrant:
        """Allow private memories (by type and/or entity) to be recalled in private mode.

        Raises:
            ValidationError: a bad grant (nothing changes).
        """
        state = self._engine.ns(self._ns(namespace))
        return self._eraser.grant(state, types=args.collection(types, "types"),
                                  entities=args.collection(entities, "entities"),
                                  purpose=purpose,
                                  expires_at=args.moment(expires_at, "expires_at"))

    @public_call
    def revoke_consent(self, consent_id: str, namespace: NamespaceArg | None = None) -> None:
        """Withdraw a consent grant (recorded in the audit).

        Raises:
            NotFoundError: no such grant in the namespace.
            ValidationError: ``consent_id`` is not a consent id.
        """
        state = self._engine.ns(self._ns(namespace))
        self._eraser.revoke(state, args.label(consent_id, "consent_id"))

    @public_call
    def receipt(self, namespace: NamespaceArg | None = None) -> PrivacyReceipt:
        """The privacy receipt of a namespace: stored, summarised, removed, and why."""
        ns = self._ns(namespace)
        return build_receipt(ns, self.list(ns, status=None), self.audit.events(ns))

    # --- export / import ---------------------------------------------------------------------

    @public_call
    def export_jsonld(self, *, namespace: NamespaceArg | None = None) -> dict[str, Any]:
        """The JSON-LD export of one namespace or of all (memories, edges, the archive),
        as one document held in memory; :meth:`write_jsonld` writes it to a file without
        holding it.

        Raises:
            ValidationError: a bad namespace.
        """
        return reports.export(self._engine.records,
                              None if namespace is None else self._ns(namespace))

    @public_call
    def write_jsonld(self, path: str | os.PathLike[str], *,
                     namespace: NamespaceArg | None = None) -> ExportSummary:
        """Write the JSON-LD export of one namespace or of all to ``path``, streamed: read
        from the records a batch at a time, one ``@graph`` item a line, written to a
        temporary file renamed onto ``path`` (a failure leaves ``path`` as it was).
        ``mars export`` calls this; :meth:`import_jsonld` reads the file.

        Raises:
            ValidationError: a bad namespace, or a ``path`` that cannot be written (a
                directory, under a file, ...); nothing is written then.
        """
        target = args.path(path, "the export path")
        ns = None if namespace is None else self._ns(namespace)
        try:
            return reports.write_export(self._engine.records, ns, target)
        except OSError as exc:
            raise ValidationError(f"cannot write the export to {target}: "
                                  f"{exc.strerror or exc}; pass a writable file path") from exc

    @public_call
    def import_jsonld(self, source: str | os.PathLike[str] | Mapping[str, Any], *,
                      existing: Literal["error", "skip"] = "error",
                      erased: Literal["error", "skip"] = "error",
                      progress: ProgressFn | None = None) -> int:
        """Import a JSON-LD export (ids preserved); returns how many memories were imported.

        The document is treated as hostile input and imported all or nothing: counters
        are integers in ``[0, 2**53)``, dates lie in the years 1900 to 2199, floats are
        finite and in their ranges, metadata and payloads nest at most 32 levels and
        hold at most 1 MiB of JSON, ids are UUIDs found once, and ``derived_from`` and
        edges name memories of the same namespace — in the document or already here —
        without cycles (every bound: :mod:`mars_core.io.checks`). A refused document
        changes nothing, and every namespace stays writable.

        Args:
            source: a file path or the parsed document.
            existing: ``"error"``: an id already here is a conflict; ``"skip"``: a memory
                already here with its id, namespace and text is left as it is and not
                counted (a re-run of an import imports nothing twice), any other memory
                under one of the ids is still a conflict.
            erased: what to do with memories erased from this store before (their id,
                or their text in their namespace, is in an ``erase`` event of the
                audit): ``"error"`` refuses the document, ``"skip"`` leaves them out (with
                their edges) — a restored backup never brings back what was erased.
            progress: ``progress(stage, done, total)`` (:mod:`mars_core.progress`).

        Raises:
            ImportFormatError: malformed or out-of-bounds document, saying where
                (nothing imported).
            ConflictError: an id already exists here (nothing imported).
            ErasedMemoryError: the document holds memories erased here and ``erased`` is
                ``"error"`` (nothing imported).
            BudgetExceededError: a namespace's imported active memories exceed its
                budget (nothing imported).
        """
        from mars_core.io.jsonld import from_jsonld

        for name, value in (("existing", existing), ("erased", erased)):
            if value not in ("error", "skip"):
                raise ValidationError(f"{name} must be 'error' or 'skip', not {value!r}")
        progress = checked(progress)
        nodes, edges, steps = from_jsonld(source)
        for ns in {n.namespace for n in nodes}:
            self._ns(ns)
        return self._writer.import_nodes(nodes, edges, steps,
                                         skip_existing=existing == "skip",
                                         skip_erased=erased == "skip", progress=progress)
