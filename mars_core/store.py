"""``MemoryStore``: the façade where every path meets (DESIGN §3).

It validates, delegates and audits; the work lives in the collaborators below it
(:mod:`mars_core.engine`): the writer, the reader, the eraser and the maintainer, over a
record store (the system of record, :mod:`mars_core.storage`) and a vector index derived
from it (:mod:`mars_core.index`). Every public call runs under one re-entrant lock and
is one record-store transaction: a rejected input or a failed write changes nothing,
and a call that returned is durable.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> with MemoryStore(budget=50, clock=FakeClock()) as store:
    ...     a = store.add("Ana moved to Lisbon in May", type="episodic")
    ...     hits = store.retrieve("where does Ana live?", budget_tokens=20)
    ...     [h.id == a.id for h in hits]
    [True]
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, Self

from mars_core import layout
from mars_core._async import asyncify
from mars_core.audit import VerifyReport
from mars_core.budget import TokenCounter
from mars_core.clock import Clock
from mars_core.config import StoreConfig
from mars_core.embeddings import Embedder
from mars_core.engine import args, reports
from mars_core.engine.cache import CACHE_MEMORIES
from mars_core.engine.calls import public_call
from mars_core.engine.eraser import Eraser
from mars_core.engine.guard import Shown
from mars_core.engine.maintainer import Maintainer
from mars_core.engine.reader import Reader
from mars_core.engine.trail import AuditTrail
from mars_core.engine.writer import Writer
from mars_core.errors import (
    ConfigError,
    NotFoundError,
    ValidationError,
)
from mars_core.index.base import VectorIndex
from mars_core.knowledge.summarise import Summariser
from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType, Predicate, Provenance
from mars_core.namespaces import NamespaceArg
from mars_core.opening import _embedder, open_engine, open_parts
from mars_core.policies import Policy
from mars_core.progress import ProgressFn, checked
from mars_core.reading.explain import Explanation, explain
from mars_core.reading.rerank import Reranker, check_reranker
from mars_core.reading.retrieval import Hit
from mars_core.rights import DataRights
from mars_core.storage.base import RecordStore
from mars_core.views.namespace import NamespaceState

__all__ = ["MemoryStore"]

class MemoryStore(DataRights):
    """A typed, budgeted, audited memory store: a record store and a vector index.

    Args:
        records: the system of record (default: SQLite in RAM, nothing on disk).
        index: the vector index (default: :class:`~mars_core.index.NumpyIndex`).
        embedder: text → vector (default: the one ``records`` recorded, else for a new
            store the one :meth:`open` takes, :func:`~mars_core.embedders.default_embedder`:
            all-MiniLM-L6-v2 when installed, else the hashing embedder;
            ``MARS_EMBEDDER=hashing|semantic`` overrides). ``stats()["embedder_choice"]``
            says which, and how it was chosen when the store was created.
        config: a :class:`~mars_core.config.StoreConfig`; keyword overrides below win.
        clock: wall-clock source (default: the system clock).
        audit_key: secret for keyed content hashes and the audit chains of a new store
            (default: random; recorded in the store).
        summariser: every summary the store writes — the reflection a budget triggers
            (policies ``reflection``, ``hybrid``, ``meta``), the one ``maintain`` runs,
            and erasure re-summaries (default: extractive, no LLM).
        read_only: open an existing store to read it: nothing is ever written (every
            change raises :class:`~mars_core.errors.ConflictError`; ``retrieve``,
            ``recall`` and ``render_context`` record no access). Each call sees the store
            as its writer last committed it.
        cache_namespaces: how many namespaces stay loaded between calls (the least
            recently used beyond that are dropped; they load again when touched).
        cache_memories: how many memories the loaded namespaces hold together between
            calls (default 4,096, about 25 MB; the least recently used namespaces beyond
            that are dropped, the one used last is always kept): what a process that
            serves many namespaces holds stays bounded by this, not by how many it
            touched.
        allow_sync_in_loop: allow the synchronous methods on a thread that runs an
            event loop (default False: they raise
            :class:`~mars_core.errors.SyncInAsyncError` naming the async twin to await,
            ``aadd`` for ``add``, since they would block the loop for the whole call).
        **overrides: any ``StoreConfig`` field, e.g. ``budget=8000, policy="lru"``. A
            reopened store applies them on top of the configuration it recorded; a whole
            ``config=`` replaces that instead.

    Raises:
        ConfigError: a configuration that :class:`~mars_core.config.StoreConfig` refuses
            (nothing coerced: ``budget=True`` or ``budget="100"`` is refused, not read as
            1 or 100), or one the store cannot take; nothing was changed.

    Reopening a store with smaller budgets (``budget`` or ``namespace_budgets``) brings
    every namespace over its new budget under it before the constructor returns: its
    policy archives memories (audited ``evict`` events after a ``config`` event; nothing
    is deleted). The new budgets and a pending mark are recorded in one transaction, so an
    open interrupted half-way is finished by the next one.

    Examples:
        >>> store = MemoryStore(budget=100, policy="fifo")
        >>> store.add("I prefer window seats", type="semantic").type.value
        'semantic'
        >>> store.close()
    """

    def __init__(self, records: RecordStore | None = None, index: VectorIndex | None = None,
                 embedder: Embedder | None = None, *, config: StoreConfig | None = None,
                 clock: Clock | None = None, audit_key: bytes | None = None,
                 summariser: Summariser | None = None, read_only: bool = False,
                 cache_namespaces: int = 256, cache_memories: int = CACHE_MEMORIES,
                 allow_sync_in_loop: bool = False,
                 _note: str | None = None, **overrides: Any) -> None:
        self._lock = threading.RLock()
        self._closed, self._depth = False, 0
        if not isinstance(allow_sync_in_loop, bool):
            raise ConfigError(f"allow_sync_in_loop must be True or False, not "
                              f"{builtins.type(allow_sync_in_loop).__name__}")
        self._allow_sync_in_loop = allow_sync_in_loop
        self._engine = open_engine(records, index, embedder, config=config, clock=clock,
                                   audit_key=audit_key, summariser=summariser,
                                   read_only=read_only, cache_namespaces=cache_namespaces,
                                   cache_memories=cache_memories,
                                   _note=_note, overrides=overrides)
        self._writer = Writer(self._engine)
        self._reader = Reader(self._engine)
        self._eraser = Eraser(self._engine, self._writer)
        self._maintainer = Maintainer(self._engine, self._writer)
        self.audit = AuditTrail(self._engine.records, self._engine.chain)
        try:
            self._writer.fit_budgets()  # smaller budgets on reopen: fit before any call
        except BaseException:
            self._engine.close()
            raise

    @classmethod
    def open(cls, path: str | os.PathLike[str], *,
             index: layout.IndexKind | str | VectorIndex = "auto",
             embedder: Embedder | None = None, read_only: bool = False,
             lock_timeout: float = 5.0, synchronous: Literal["full", "normal"] = "full",
             **kwargs: Any) -> Self:
        """Open (or create) the store kept under the directory ``path``, or on the
        PostgreSQL server a ``postgresql://`` URL names.

        The records go to ``path/mars.sqlite3``; the vector index is Chroma on disk
        (``path/index/chroma``) when ``chromadb`` is installed (:mod:`mars_core.layout`).
        With a URL the records are in the database (schema ``mars``, or ``?schema=``;
        :mod:`mars_core.storage.postgres`) and several processes may write the store
        at once; the index is numpy in each process unless ``index`` names a server.
        A new store takes the best embedder installed: all-MiniLM-L6-v2 with the
        ``semantic`` extra, else the hashing embedder (``MARS_EMBEDDER=hashing|semantic``
        overrides); a store reopens with the embedder it was built with. ``stats()``
        says which.

        Args:
            path: a directory; created when missing (not with ``read_only``). Or
                ``postgresql://user:password@host:port/dbname[?schema=NAME]``
                (``postgres://`` too; the ``postgres`` extra).
            index: ``"auto"``, ``"chroma"``, ``"qdrant"`` (local mode), ``"numpy"``
                (exact, in the process, no files), a server
                (``"chroma://HOST:PORT"``, ``"qdrant+http://HOST:PORT"``), or an index
                instance. The index is derived: another choice rebuilds it. With a
                PostgreSQL URL: ``"auto"``/``"numpy"``, a server or an instance.
            embedder: the embedder (default: the one the store records).
            read_only: read beside a writer: no lock, nothing written, exact search.
            lock_timeout: seconds to wait for another process that writes the store
                (PostgreSQL: the namespaces a call writes) before
                :class:`~mars_core.errors.ConflictError`.
            synchronous: ``"full"`` (a returned write survives a power cut) or
                ``"normal"`` (it survives a crash of the process).
            **kwargs: passed to :class:`MemoryStore` (``clock``, config fields ...).

        Raises:
            ConfigError: an unknown index, no store here and ``read_only``, a ``path``
                that is a file, a refused configuration or collaborator (checked before
                anything is created or changed), or a recorded configuration that is no
                longer valid (reopen with a valid one).
            CorruptStoreError: a directory written by mars-memory 0.1, or damaged; a
                PostgreSQL schema older than this version's (the message names
                ``mars migrate``).
            ExtraNotInstalledError: the chosen index or embedder is not installed.
            ConflictError: another process writes the store (after ``lock_timeout``).
            StorageUnavailableError: the PostgreSQL server cannot be reached.
        """
        records, chosen, note = open_parts(path, index=index, embedder=embedder,
                                           read_only=read_only, lock_timeout=lock_timeout,
                                           synchronous=synchronous, **kwargs)
        return cls(records, chosen, embedder, read_only=read_only, _note=note, **kwargs)

    # --- writing -----------------------------------------------------------------------------

    @public_call
    def add(self, text: str, *, type: MemoryType | str = MemoryType.EPISODIC,
            payload: Any = None, sensitivity: float | None = None,
            provenance: Provenance | Mapping[str, Any] | None = None,
            namespace: NamespaceArg | None = None, metadata: Mapping[str, Any] | None = None,
            pinned: bool = False, expires_at: datetime | None = None,
            links: Iterable[tuple[Predicate | str, str]] = ()) -> MemoryNode:
        """Store a memory; evict by the policy if the namespace goes over budget.

        Args:
            text: the content (immutable once stored).
            type: ``episodic``, ``semantic``, ``social`` or ``task``.
            payload: the typed payload (a model or a mapping of its fields).
            sensitivity: privacy sensitivity, a number in [0, 1] (default: detected).
            provenance: where it came from; ``derived_from`` ids become derivesFrom edges.
            namespace: tenant/user/session (default ``config.default_namespace``): a
                path string such as ``"memories/ana"`` or a tuple of parts such as
                ``("memories", "ana")`` — the same namespace (:mod:`mars_core.namespaces`).
                Every call that takes a namespace takes both forms.
            metadata: JSON-compatible user metadata.
            pinned: evict only when forced by the budget (``True`` or ``False``).
            expires_at: TTL expiry (a datetime; naive ones are UTC).
            links: extra edges ``(predicate, target_id)`` from this memory.

        Raises:
            ValidationError: bad input (nothing is stored). Nothing is coerced: a bool or
                a string where a number goes (``sensitivity=True``, a payload's
                ``"priority": "0.9"``, a provenance ``"turn": "3"``), anything but a bool
                for ``pinned`` (``"yes"``), anything but a datetime for ``expires_at``.
            BudgetExceededError: heavier than the namespace's whole budget.
            NotFoundError: a linked memory does not exist in the namespace.
        """
        return self._writer.add([args.item(
            text, default_ns=self.config.default_namespace, type=type, payload=payload,
            sensitivity=sensitivity, provenance=provenance, namespace_=namespace,
            metadata=metadata, pinned=pinned, expires_at=expires_at, links=links)])[0]

    @public_call
    def add_many(self, items: Iterable[str | Mapping[str, Any]], *,
                 namespace: NamespaceArg | None = None,
                 type: MemoryType | str = MemoryType.EPISODIC,
                 progress: ProgressFn | None = None) -> builtins.list[MemoryNode]:
        """Store many memories in one transaction, with one embedding call per
        :data:`~mars_core.progress.EMBED_BATCH` texts and one index write; the budget is
        enforced after each as if they came one by one.

        Args:
            items: texts, or mappings of :meth:`add`'s arguments (``text`` and any of
                ``type``, ``payload``, ``sensitivity``, ``provenance``, ``namespace``,
                ``metadata``, ``pinned``, ``expires_at``, ``links``).
            namespace: the namespace of items that name none.
            type: the type of items that name none.
            progress: ``progress(stage, done, total)`` as the call advances
                (:mod:`mars_core.progress`); if it raises, nothing is stored.

        Returns:
            The stored memories, in order (as they are once the call returns).

        Raises:
            ValidationError, BudgetExceededError, NotFoundError: a bad item (nothing of
                the call is stored).
        """
        progress = checked(progress)
        specs = args.items(items, default_ns=self.config.default_namespace,
                           namespace_=namespace, type=type)
        return self._writer.add(specs, progress)

    @public_call
    def update(self, node_id: str, text: str, *, metadata: Mapping[str, Any] | None = None,
               expires_at: datetime | Literal["keep"] | None = "keep",
               namespace: NamespaceArg | None = None) -> MemoryNode:
        """Replace a memory's content: a new memory derivesFrom and supersedes its current
        version, which goes to the archive.

        Content is immutable, so each version is a memory of its own, with its own id;
        the versions form one line along ``supersedes`` edges (:meth:`history`). Any
        version's id is a stable handle for the memory: ``update`` by it replaces the
        memory's current version — the one named when it is active, else the newest
        active version of its line, else its newest — so updating by the first id again
        and again extends one line (never a second branch), and ``get(id,
        current=True)`` reads that version: the habit of mem0's ``update(memory_id,
        ...)`` and LangGraph's ``put`` on a key, with every earlier version kept in the
        archive.

        Args:
            node_id: the memory to replace: any of its versions.
            text: the new content.
            metadata: the new version's metadata (default: a copy of the old one's).
            expires_at: the new version's expiry (default: the old one's; None: none).
            namespace: the memory's namespace (an id of another one is not found).

        Raises:
            NotFoundError: no such memory in the namespace.
        """
        old = self._current(self._node(node_id, namespace))
        metadata = args.mapping(metadata, "metadata")
        keep = isinstance(expires_at, str) and expires_at == "keep"
        return self._writer.update(old, text, metadata, old.expires_at if keep
                                   else args.stored_moment(expires_at, "expires_at"))

    @public_call
    def forget(self, node_id: str, reason: str = "forgotten on request", *,
               namespace: NamespaceArg | None = None) -> MemoryNode:
        """Deliberately forget a memory of ``namespace``: it moves to the archive (still
        explainable and searchable with ``include_archive=True``). Already archived:
        returned unchanged.

        Raises:
            NotFoundError: no such memory in the namespace.
            ValidationError: a ``reason`` that is not text (at most 1,000 characters).
        """
        node = self._node(node_id, namespace)
        return self._writer.forget(node, args.phrase(reason, "reason", max_chars=1000))

    @public_call
    def clear_conversation(self, conversation_id: str, *, namespace: NamespaceArg | None = None,
                           reason: str = "conversation cleared") -> builtins.list[MemoryNode]:
        """Clear a conversation's turns (what a chat history's ``clear()`` does): its
        episodes, active or archived, move to the archive as ``cleared`` and never reach a
        model again — not through the second tier, ``include_archive=True`` or as the raw
        support of a fact (:data:`~mars_core.model.HIDDEN`). The facts learnt from them
        stay (use :meth:`erase` with ``conversation=`` to remove those too); ``explain``,
        ``list`` and ``erase`` still see the turns.

        Returns:
            The turns cleared now (already cleared ones are left as they are).

        Raises:
            ValidationError: an empty or malformed conversation id or reason.
        """
        conversation = args.label(conversation_id, "conversation_id")
        state = self._engine.ns(self._ns(namespace))
        turns = [n for n in self._reader.memories(state, MemoryType.EPISODIC, None)
                 if n.provenance.conversation_id == conversation]
        return self._writer.clear(state.name, turns,
                                  args.phrase(reason, "reason", max_chars=1000))

    @public_call
    def restore(self, node_id: str, *, namespace: NamespaceArg | None = None) -> MemoryNode:
        """Bring an archived memory of ``namespace`` back to the active store (the budget
        is enforced)."""
        return self._writer.restore(self._node(node_id, namespace))

    @public_call
    def link(self, source: str, predicate: Predicate | str, target: str, *,
             namespace: NamespaceArg | None = None) -> Edge:
        """Add a typed edge between two memories of ``namespace``.

        Raises:
            NotFoundError: either memory is not one of the namespace.
            ValidationError: an unknown predicate, a self-loop or a derivation cycle.
        """
        node = self._node(source, namespace)
        return self._writer.link(node, predicate, args.memory_id(target))

    @public_call
    def observe(self, role: str, text: str, *, namespace: NamespaceArg | None = None,
                conversation_id: str | None = None, session_id: str | None = None,
                turn: int | None = None, speaker: str | None = None,
                at: datetime | None = None,
                external_id: str | None = None) -> builtins.list[MemoryNode]:
        """Store one conversational turn and what it says about the user — no LLM call.

        Always one episodic memory per turn (linked ``temporalNext`` from the previous
        turn of the conversation); semantic facts, preferences, constraints, social
        relations and dated plans are extracted by deterministic cue rules
        (:mod:`mars_core.knowledge.extract`), each ``derivesFrom`` the episode. A new value on a
        known topic supersedes (or, after a correction cue, corrects) the old memory,
        which moves to the archive.

        Args:
            role: ``user``, ``assistant``, ``tool``, ... (the provenance source).
            text: the turn.
            namespace: the user/tenant/session.
            conversation_id: groups turns into a conversation.
            session_id: a session within it.
            turn: turn index (an int ≥ 0; not a bool or a string).
            speaker: who "I" is in the text (e.g. a LoCoMo speaker name).
            at: when the turn happened (default: the store's clock).
            external_id: the turn's id in the caller's system.

        Returns:
            The stored memories: the episode first, then the extracted ones (none when
            the namespace's preferences block the turn).
        """
        return self._writer.observe([args.turn(
            role, text, default_ns=self.config.default_namespace, namespace_=namespace,
            conversation_id=conversation_id, session_id=session_id, turn=turn,
            speaker=speaker, at=at, external_id=external_id)])[0]

    @public_call
    def observe_many(self, turns: Iterable[Mapping[str, Any]], *,
                     namespace: NamespaceArg | None = None,
                     conversation_id: str | None = None,
                     progress: ProgressFn | None = None
                     ) -> builtins.list[builtins.list[MemoryNode]]:
        """Store many turns in one transaction, with one embedding call per
        :data:`~mars_core.progress.EMBED_BATCH` texts and one index write, exactly as
        :meth:`observe` would one by one.

        Args:
            turns: mappings of :meth:`observe`'s arguments (``role`` and ``text``, and any
                of ``namespace``, ``conversation_id``, ``session_id``, ``turn``,
                ``speaker``, ``at``, ``external_id``).
            namespace: the namespace of turns that name none.
            conversation_id: the conversation of turns that name none.
            progress: ``progress(stage, done, total)`` as the call advances
                (:mod:`mars_core.progress`); if it raises, nothing is stored.

        Returns:
            What each turn stored, in order.
        """
        progress = checked(progress)
        specs = args.turns(turns, default_ns=self.config.default_namespace,
                           namespace_=namespace, conversation_id=conversation_id)
        return self._writer.observe(specs, progress)

    @public_call
    def set_metadata(self, node_id: str, metadata: Mapping[str, Any] | None = None, *,
                     expires_at: datetime | Literal["keep"] | None = "keep",
                     pinned: bool | None = None,
                     namespace: NamespaceArg | None = None) -> MemoryNode:
        """Change what is mutable about a memory — its metadata, TTL expiry, pin — in place.

        Content is immutable (use :meth:`update`); one ``metadata`` audit event records the
        change (field names, never values).

        Raises:
            NotFoundError: no such memory in ``namespace``.
            ValidationError: metadata that is not JSON-compatible.
        """
        old = self._node(node_id, namespace)
        change: dict[str, Any] = {}
        if metadata is not None:
            change["metadata"] = args.mapping(metadata, "metadata")
        if not (isinstance(expires_at, str) and expires_at == "keep"):
            change["expires_at"] = args.stored_moment(expires_at, "expires_at")
        if pinned is not None:
            change["pinned"] = args.flag(pinned, "pinned")
        return self._writer.set_metadata(old, change)

    # --- reading -----------------------------------------------------------------------------

    @public_call
    def get(self, node_id: str, *, namespace: NamespaceArg | None = None,
            current: bool = False) -> MemoryNode:
        """A memory of ``namespace`` by id (active or archived); not counted as an access.

        With ``current``, the current version of the memory that id is a version of (the
        one named when it is active, else the newest active version of its line, else
        its newest; :meth:`update`: any version's id is a stable handle), else that very
        version.

        Raises:
            NotFoundError: no such memory in the namespace (another namespace's id is
                not found either: ids never cross namespaces).
        """
        node = self._node(node_id, namespace)
        return self._current(node) if args.flag(current, "current") else node

    @public_call
    def list(self, namespace: NamespaceArg | None = None, *, type: MemoryType | str | None = None,
             status: MemoryStatus | str | None = MemoryStatus.ACTIVE,
             newest: int | None = None) -> builtins.list[MemoryNode]:
        """Memories of a namespace, oldest first (``status=None``: active and archived);
        with ``newest``, only that many of the newest (the rest are not read)."""
        return self._reader.memories(self._engine.ns(self._ns(namespace)), type, status,
                                     newest)

    @public_call
    def history(self, node_id: str, *, namespace: NamespaceArg | None = None
                ) -> builtins.list[MemoryNode]:
        """All versions of a memory of ``namespace`` along ``supersedes`` edges, oldest
        first."""
        return self._reader.history(self._holder(node_id, namespace), node_id)

    @public_call
    def retrieve(self, query: str, *, budget_tokens: int | None = None, k: int | None = None,
                 types: Iterable[MemoryType | str] | None = None,
                 max_sensitivity: float | None = None, since: datetime | None = None,
                 until: datetime | None = None, conversation: str | None = None,
                 namespace: NamespaceArg | None = None, include_archive: bool | None = None,
                 read_only: bool = False, relative_cutoff: float | None = None,
                 redact: bool | None = None,
                 jurisdiction: str | Iterable[str] | None = None,
                 template: str | None = None,
                 rerank: Reranker | None = None) -> builtins.list[Hit]:
        """Hybrid (dense + BM25) retrieval, reranked, cut and packed into a token budget,
        then the output check.

        The pipeline is the one measured on LoCoMo (docs/benchmarks/evidence.md), set by
        :class:`~mars_core.config.RetrievalConfig`: ``dense_weight`` · cosine + the rest ·
        BM25, plus ``cue_weight`` · the answerability rerank (the reply to a matching
        question scores at least as the question, ``reply_units``); hits below
        ``relative_cutoff`` × the best score are dropped; what remains fills the budget in
        rank order, at most ``k``. So it may return fewer than ``k`` hits: pass
        ``relative_cutoff=0`` for "the ``k`` best" (the framework adapters whose contract
        is exactly ``k`` do).

        Counts as an access of every hit (statistics, recency, one audit event) unless
        ``read_only`` (always so in a store opened with ``read_only=True``). By default
        the archive is a second tier (``RetrievalConfig.search_archive``): what a policy
        archived to make room, or a summary replaced, is ranked with the active memories
        on one scale (``Hit.archived`` marks it; ties go to the active one); what was
        forgotten on request, superseded, corrected or expired is not.

        Every hit passes the output check (seed 000 §4.3;
        :class:`~mars_core.engine.guard.OutputCheck`): its ``node`` carries its text with
        the sensitive spans masked by typed placeholders (``[PHONE]``, ``[HEALTH]``...;
        ``Hit.masked`` lists the kinds), a memory that restates an erased one is left out,
        and ``rephrase_or_confirm`` is asked as for ``render_context``. ``redact=False``
        (or ``StoreConfig.redact=False``) returns the stored text: the explicit raw read,
        recorded as such (``redact: false``) in the call's access event.

        Args:
            query: the question or cue.
            budget_tokens: token budget (the config's ``default_budget_tokens`` if None).
            k: at most this many hits (no limit if None).
            types: only memories of these types.
            max_sensitivity: only memories at most this sensitive (a number in [0, 1]).
            since: only memories created at or after this time.
            until: only memories created before this time.
            conversation: only memories of this conversation.
            namespace: the namespace (the default one if None).
            include_archive: ``None``: the active memories and the second tier (above);
                ``True``: every archived memory too, scores × 0.9; ``False``: the active
                memories alone.
            read_only: do not count the retrieval as an access.
            relative_cutoff: this call's cut-off in [0, 1] (the config's if None; 0: off).
            redact: the output check on (True) or off (False); None: the store's
                ``StoreConfig.redact`` (on by default).
            jurisdiction: only memories of these jurisdictions (seed 000 §4.3): a code such
                as ``"EU"`` (covers ``"EU-DE"``), a list of codes, ``""`` for memories with
                none; None: no filter (:mod:`mars_core.scope`).
            template: a retrieval template of ``StoreConfig.retrieval_templates`` (a
                department's scope, §4.3): its types, sensitivity cap and jurisdictions
                apply on top of this call's, the narrower winning.
            rerank: your own reranker (:mod:`mars_core.reading.rerank`, e.g. a cross-encoder):
                it reorders the best 20 candidates before the cut-off and the budget.

        Raises:
            ValidationError: bad query or filter values, or an unknown template.
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        q, budget = args.query(query, self.config, namespace_=namespace, types=types,
                               max_sensitivity=max_sensitivity, since=since, until=until,
                               conversation=conversation, budget_tokens=budget_tokens, k=k,
                               jurisdiction=jurisdiction, template=template)
        return self._reader.retrieve(q, budget, k=k,
                                     ratio=args.cutoff(relative_cutoff, self.config),
                                     include_archive=None if include_archive is None
                                     else args.flag(include_archive, "include_archive"),
                                     read_only=args.flag(read_only, "read_only"),
                                     redact=self._redact(redact),
                                     rerank=check_reranker(rerank))

    @public_call
    def recall(self, entity: str | None = None, *, goal: str | None = None,
               namespace: NamespaceArg | None = None, k: int = 10, max_hops: int = 2,
               read_only: bool = False, redact: bool | None = None) -> builtins.list[Hit]:
        """Memories around an entity or a goal: a walk of a small ball in the semantic and
        social graph, reranked by similarity to the goal (seed 000 §4.1), through the
        output check as in :meth:`retrieve` (``redact``). The hits count as an access
        unless ``read_only`` (always so in a store opened with ``read_only=True``).

        Raises:
            ValidationError: neither or both of ``entity`` and ``goal``.
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        if (entity is None) == (goal is None) or not isinstance(entity or goal, str) \
                or not (entity or goal or "").strip():
            raise ValidationError("recall needs exactly one of entity= or goal=")
        args.phrase(entity or goal, "entity" if goal is None else "goal", max_chars=1000)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise ValidationError("k must be a positive integer")
        return self._reader.recall(self._ns(namespace), entity=entity, goal=goal, k=k,
                                   max_hops=args.count(max_hops, "max_hops"),
                                   read_only=args.flag(read_only, "read_only"),
                                   redact=self._redact(redact))

    @public_call
    def render_context(self, query: str, *, budget_tokens: int | None = None,
                       namespace: NamespaceArg | None = None, conversation: str | None = None,
                       active_turns: int = 6, evidence: int = 5, redact: bool | None = None,
                       evidence_only: bool = False,
                       jurisdiction: str | Iterable[str] | None = None,
                       template: str | None = None, rerank: Reranker | None = None) -> str:
        """Prompt-ready context: recalled evidence, its raw support, then the active
        conversation — the layout of DMF §9.3 step 6, within ``budget_tokens``.

        ``evidence_only=True`` leaves the active-conversation section out (for
        integrations that render the conversation themselves); the active turns are
        still not repeated as evidence.

        Each memory passes the output check before it is placed, as in :meth:`retrieve`
        (seed 000 §4.3): typed placeholders replace its sensitive spans, a memory that
        restates an erased one is withheld (the next takes its place), and the surface
        pass runs over the lines' tags and notes too. ``redact=False`` (or
        ``StoreConfig.redact=False``) renders the stored text. The evidence counts as an
        access (one audit event, with the check's counts), except in a store opened with
        ``read_only=True``.

        ``jurisdiction`` and ``template`` scope the recalled evidence as in
        :meth:`retrieve` (seed 000 §4.3); the active conversation is shown as it is.
        ``rerank`` reorders the best candidate evidence as in :meth:`retrieve`.

        Raises:
            ValidationError: bad query values, or an unknown template.
            PrivacyHookError: the rephrase-or-confirm hook failed (nothing recorded).
        """
        q, budget = args.query(query, self.config, namespace_=namespace,
                               budget_tokens=budget_tokens, jurisdiction=jurisdiction,
                               template=template)
        if conversation is not None and not isinstance(conversation, str):
            raise ValidationError("conversation must be a string or None")
        return self._reader.render(q, budget, conversation=conversation,
                                   active_turns=args.count(active_turns, "active_turns"),
                                   evidence=args.count(evidence, "evidence"),
                                   redact=self._redact(redact),
                                   evidence_only=args.flag(evidence_only, "evidence_only"),
                                   rerank=check_reranker(rerank))

    @public_call
    def check_output(self, nodes: Iterable[MemoryNode], *, namespace: NamespaceArg | None = None,
                     redact: bool | None = None) -> builtins.list[Shown]:
        """The output check over memories read by other means (``get``, ``list``), for
        code that hands them to a model: the framework adapters' chat histories and
        LangGraph items go through it, as ``retrieve`` and ``render_context`` do.

        Returns:
            One :class:`~mars_core.engine.guard.Shown` per memory, in order: ``node`` is
            the memory as it may be shown (``None``: withheld), ``mask(value)`` applies
            its masks to another text or JSON value of it.

        Raises:
            ValidationError: something that is not a memory of ``namespace``.
            PrivacyHookError: the rephrase-or-confirm hook failed.

        Examples:
            >>> with MemoryStore() as store:
            ...     node = store.add("call me on 555-123-4567", type="semantic")
            ...     [s.node.content for s in store.check_output(store.list())]
            ['call me on [PHONE]']
        """
        ns = self._ns(namespace)
        items = builtins.list(args.collection(nodes, "nodes"))
        for node in items:
            if not isinstance(node, MemoryNode) or node.namespace != ns:
                raise ValidationError("check_output takes memories of the namespace it is "
                                      f"given ({ns!r}), as get() and list() return them")
        return self._reader.check_output(self._engine.ns(ns), items, self._redact(redact))

    def _redact(self, redact: object) -> bool:
        """A read's ``redact=``: the store's setting when None."""
        return self.config.redact if redact is None else args.flag(redact, "redact")

    @public_call
    def credit(self, used: Iterable[str], offered: Iterable[str],
               namespace: NamespaceArg | None = None) -> None:
        """Feedback after an answer: of the memories ``offered`` to it, ``used`` were used.

        It feeds the policies' observable rewards (the meta-controller, the per-type
        shares; seed 002's Recognizer credit). Nothing is stored.

        Raises:
            ValidationError: ``used`` is not a subset of ``offered``.
        """
        state = self._engine.ns(self._ns(namespace))
        used_l, offered_l = args.id_list(used, "used"), args.id_list(offered, "offered")
        if not set(used_l) <= set(offered_l):
            raise ValidationError("credited memories must be among those offered")
        # an id that is not (or no longer) the namespace's is left out, whoever's it is
        used_l = [i for i in used_l if i in state]
        offered_l = [i for i in offered_l if i in state]
        state.policy.on_credit(state.name, used_l, offered_l, state.step)

    @public_call
    def reinforce(self, ids: Iterable[str], namespace: NamespaceArg | None = None,
                  reason: str = "credited use", *, credit: bool = True) -> None:
        """Record a use of exactly these memories: an access each (statistics, LRU order,
        Oblivion's frequency), one audit event, and — with ``credit`` — the policies'
        credit hook (an answer used them; ``credit=False`` for a plain read, e.g. a
        LangGraph store search).

        Raises:
            ValidationError: an archived memory, or ``ids`` that are not a list of ids.
            NotFoundError: an id that is not a memory of the namespace.
        """
        state = self._engine.ns(self._ns(namespace))
        self._reader.reinforce(state, args.id_list(ids, "ids"),
                               args.phrase(reason, "reason", max_chars=1000),
                               args.flag(credit, "credit"))

    @public_call
    def namespaces(self) -> builtins.list[str]:
        """Every namespace that holds memories (active or archived), sorted: the encoded
        strings (:mod:`mars_core.namespaces`), which every call takes back unchanged."""
        with self._engine.records.read() as tx:
            return builtins.list(tx.totals())

    @public_call
    def policy_for(self, namespace: NamespaceArg | None = None) -> Policy:
        """The policy instance that decides for a namespace (each has its own, so one
        tenant's traffic never shapes another's forgetting)."""
        return self._engine.ns(self._ns(namespace)).policy

    @public_call
    def explain(self, node_id: str, *,
                namespace: NamespaceArg | None = None) -> Explanation:
        """The provenance chain and the audit rationale of a memory of ``namespace``
        (also when forgotten or erased).

        Raises:
            NotFoundError: no memory of the namespace ever had that id.
        """
        state = self._engine.ns(self._ns(namespace))
        node_id = args.memory_id(node_id)
        events = [e for e in self.audit.for_node(node_id) if e.namespace == state.name]
        return explain(state, events, node_id)

    @public_call
    def verify(self, *, expected_head: str | None = None) -> VerifyReport:
        """Verify every namespace's audit chain: hashes, order, links and recorded head.

        Args:
            expected_head: a ``store.audit.head`` kept outside the store earlier: the
                trail up to it must be the one anchored (a rewrite by someone holding
                the audit key is found too).

        Raises:
            ValidationError: ``expected_head`` is not a head the store gave.
        """
        return self.audit.verify(expected_head)

    @public_call
    def stats(self, namespace: NamespaceArg | None = None) -> dict[str, Any]:
        """Counts, token use and configuration (of one namespace, or of all). Per
        namespace: ``active``, ``archived``, ``tokens``, ``budget``, ``tokens_by_type``
        and ``step``: what the store holds, the same in every process (what one process
        holds in RAM is :meth:`resident`)."""
        e = self._engine
        return reports.report(e.records, e.config, e.describe(),
                              None if namespace is None else self._ns(namespace))

    @public_call
    def resident(self, namespace: NamespaceArg | None = None) -> dict[str, int]:
        """How many memories this process holds in RAM, per namespace (of one, or of every
        namespace it has loaded): a loaded namespace holds its active memories, and a call
        holds what it read of the archive until the next call begins; a namespace not
        loaded holds none. The archive itself stays in the records, so this is bounded by
        the budget, not the history.

        Examples:
            >>> with MemoryStore(budget=100) as store:
            ...     _ = store.add("Ana lives in Porto")
            ...     store.resident()
            {'default': 1}
        """
        return self._engine.cache.resident(None if namespace is None else self._ns(namespace))

    # --- maintenance -------------------------------------------------------------------------

    @public_call
    def maintain(self, namespace: NamespaceArg | None = None, *, ttl: bool = True,
                 graduated: bool = False, dedup: bool = True,
                 reflect: bool = True) -> dict[str, dict[str, int]]:
        """Background hygiene, off the ``add`` path (seed 003, seed 000 §5.1):

        1. ``ttl``: archive memories past their expiry or their type's TTL (seed 003,
           overridden by the user's retention horizons);
        2. ``graduated``: seed 003 graduated retention (opt-in: it archives idle memories
           after 90 days regardless of type);
        3. ``dedup``: merge near-duplicates (cosine > ``config.dedup_threshold``), the newer
           memory absorbing the older;
        4. ``reflect``: consolidate redundant episodes into summaries when the namespace
           is above ``config.reflect_at`` of its budget.

        Pinned memories, active goals and their prerequisites are never touched. Each
        namespace is one transaction. Returns counts per namespace.
        """
        names = [self._ns(namespace)] if namespace is not None else self.namespaces()
        phases = {name: args.flag(value, name) for name, value in (
            ("ttl", ttl), ("graduated", graduated), ("dedup", dedup), ("reflect", reflect))}
        return {ns: self._maintainer.maintain_namespace(ns, **phases) for ns in names}

    @public_call
    def reembed(self, embedder: Embedder, batch_size: int = 256, *,
                progress: ProgressFn | None = None) -> int:
        """Move the store to a new embedder; returns how many memories were re-embedded
        (``progress``: :mod:`mars_core.progress`, stages ``embed`` and ``write``).

        Every memory gets its new vector in one transaction (with the manifest and a
        ``config`` audit event): the store is on the old embedder or on the new one,
        never between. The vector index is then rebuilt from the new vectors.

        Raises:
            ConfigError: ``embedder`` is not an embedder (``name``, ``dim``, ``embed``).
            ValidationError: a bad ``batch_size``, or an embedder whose vectors are not
                ``dim`` finite numbers each (nothing changes).
        """
        return self._maintainer.reembed(_embedder(embedder), batch_size, checked(progress))

    @public_call
    def reindex(self, *, progress: ProgressFn | None = None) -> int:
        """Rebuild the vector index from the records; returns how many entries it holds.

        The index is derived: this is what to run after deleting its files or when it
        is suspected to lag (an index that loads on demand is simply dropped).
        ``progress`` (:mod:`mars_core.progress`) counts the entries written (stage
        ``index``); an interrupted rebuild is finished by the next open or ``reindex``.
        """
        return self._engine.reindex(checked(progress))

    @classmethod
    def from_jsonld(cls, source: str | os.PathLike[str] | Mapping[str, Any],
                    **kwargs: Any) -> MemoryStore:
        """A new store (in RAM unless ``records=`` is given) holding a JSON-LD export."""
        store = cls(**kwargs)
        store.import_jsonld(source)
        return store

    # --- properties and lifecycle ------------------------------------------------------------

    @property
    def config(self) -> StoreConfig:
        """The configuration in force (the recorded one when reopened without one)."""
        return self._engine.config

    @property
    def clock(self) -> Clock:
        """The store's clock."""
        return self._engine.clock

    @property
    def summariser(self) -> Summariser:
        """What writes reflection and erasure summaries (extractive unless given)."""
        return self._engine.summariser

    @property
    def token_counter(self) -> TokenCounter:
        """How the store weighs a text in tokens (recorded in the manifest)."""
        return self._engine.counter

    @property
    def embedder(self) -> Embedder:
        """The store's embedder."""
        return self._engine.embedder

    @property
    def allow_sync_in_loop(self) -> bool:
        """Whether the synchronous methods run on a thread that runs an event loop
        (``MemoryStore(..., allow_sync_in_loop=True)``) instead of raising
        :class:`~mars_core.errors.SyncInAsyncError`."""
        return self._allow_sync_in_loop

    @property
    def read_only(self) -> bool:
        """Whether the store was opened ``read_only=True`` (it then never writes)."""
        return self._engine.read_only

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Save what the cached namespaces' policies learned and close (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._engine.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- validation --------------------------------------------------------------------------

    def _ns(self, namespace: object) -> str:
        return args.namespace(namespace, default=self.config.default_namespace)

    def _holder(self, node_id: object, namespace: object) -> NamespaceState:
        """The namespace's views, if it holds ``node_id`` (ids never cross namespaces)."""
        state = self._engine.ns(self._ns(namespace))
        memory_id = args.memory_id(node_id)
        if memory_id not in state:
            raise NotFoundError(f"no memory with id {memory_id!r} in namespace {state.name!r}")
        return state

    def _node(self, node_id: object, namespace: object) -> MemoryNode:
        return self._holder(node_id, namespace).node(node_id)  # type: ignore[arg-type]

    def _current(self, node: MemoryNode) -> MemoryNode:
        """The current version of the memory ``node`` is a version of (along
        ``supersedes``): ``node`` when it is active, else the newest active version,
        else the newest."""
        if node.is_active:
            return node
        versions = self._reader.history(self._engine.ns(node.namespace), node.id)
        active = [v for v in versions if v.is_active]
        return (active or versions)[-1]

    # --- async twins (written once) ----------------------------------------------------------

    aadd = asyncify(add)
    aadd_many = asyncify(add_many)
    aupdate = asyncify(update)
    aforget = asyncify(forget)
    aclear_conversation = asyncify(clear_conversation)
    arestore = asyncify(restore)
    alink = asyncify(link)
    aobserve = asyncify(observe)
    aobserve_many = asyncify(observe_many)
    arecall = asyncify(recall)
    arender_context = asyncify(render_context)
    acheck_output = asyncify(check_output)
    aget = asyncify(get)
    alist = asyncify(list)
    ahistory = asyncify(history)
    aretrieve = asyncify(retrieve)
    acredit = asyncify(credit)
    areinforce = asyncify(reinforce)
    aset_metadata = asyncify(set_metadata)
    aexplain = asyncify(explain)
    astats = asyncify(stats)
    averify = asyncify(verify)
    areembed = asyncify(reembed)
    areindex = asyncify(reindex)
    amaintain = asyncify(maintain)
    aerase = asyncify(DataRights.erase)
    areceipt = asyncify(DataRights.receipt)
    apreferences = asyncify(DataRights.preferences)
    aset_preferences = asyncify(DataRights.set_preferences)
    agrant_consent = asyncify(DataRights.grant_consent)
    arevoke_consent = asyncify(DataRights.revoke_consent)
    aexport_jsonld = asyncify(DataRights.export_jsonld)
    awrite_jsonld = asyncify(DataRights.write_jsonld)
    aimport_jsonld = asyncify(DataRights.import_jsonld)
    anamespaces = asyncify(namespaces)
    apolicy_for = asyncify(policy_for)
    aresident = asyncify(resident)
    aclose = asyncify(close)
