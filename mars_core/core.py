"""The machinery under :class:`~mars_core.store.MemoryStore`: loading, transactions,
staging and budget enforcement.

Every public operation of the store runs under one re-entrant lock, stages its writes
(memory records, audit events, store state) in one
:class:`~mars_core.backends.base.WriteBatch`, applies the batch, and only then updates
the in-memory views (:mod:`mars_core.state`) — so a rejected input or a failed write
changes nothing, and a write that returned is durable. This module is internal; the
public API is :class:`~mars_core.store.MemoryStore`.

Examples:
    >>> from mars_core.core import StoreCore
    >>> StoreCore.__name__
    'StoreCore'
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, Self, TypeVar

import numpy as np
import pydantic

from mars_core import codec
from mars_core._guard import guarded
from mars_core.audit import AuditLog, AuditOp
from mars_core.audit import _LogTxn as AuditTxn
from mars_core.backends.base import VectorBackend, WriteBatch
from mars_core.backends.layout import KEYS_DIR, BackendKind, no_store, purges_physically
from mars_core.budget import TokenCounter, make_counter
from mars_core.clock import Clock, SystemClock
from mars_core.config import StoreConfig
from mars_core.embeddings import Embedder, HashingEmbedder, embed_one
from mars_core.enrich import Enricher
from mars_core.errors import (
    BlockedByPreferenceError,
    BudgetExceededError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    ImportFormatError,
    MarsError,
    NotFoundError,
    ValidationError,
)
from mars_core.extract import extract
from mars_core.graph import MemoryGraph
from mars_core.lexical import tokenize
from mars_core.maintenance import Merge, plan_dedup, plan_expiry, plan_graduated
from mars_core.model import (
    Edge,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    SemanticPayload,
    TaskPayload,
    default_payload,
)
from mars_core.policies import Eviction, Policy, Summary, make_policy
from mars_core.policies.reflection import ReflectionSummaryPolicy
from mars_core.privacy.crypto import ContentCipher, KeyStore
from mars_core.privacy.dp import PrivacyAccountant
from mars_core.privacy.erasure import ErasurePlan
from mars_core.privacy.preferences import PrivacyPreferences
from mars_core.privacy.redaction import sensitive_phrases
from mars_core.privacy.sensitivity import SensitivityScorer
from mars_core.retrieval import Hit, Query, rank
from mars_core.scoring.retention import KIND_BY_TYPE, LifecycleConfig
from mars_core.shares import TypeShares
from mars_core.state import NamespaceView, StoreState, ViewIO
from mars_core.summarise import ExtractiveSummariser, Summariser

__all__ = ["StoreCore"]

S = TypeVar("S", bound="StoreCore")
log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")



_op = guarded

_READ_WAITS = (0.02, 0.05, 0.1, 0.2, 0.4)
"""Seconds a read-only open waits before reading again when a writer changed the store
while it was read (under a second in all; see ``StoreCore._read_consistent``)."""


_LEASE_STALL = 0.5
"""Most seconds between reading the lease record and the return of the write that takes
it when a rival may be taking it too (a takeover, a renewal in the lease's last third); a
writer slower than that (a stalled process or server) may have overwritten the rival's
take, and gives up (``ConflictError``). An earlier renewal has until its lease's expiry,
less this margin."""

_LEASE_SETTLE = 1.0
"""Seconds a contended take waits between writing its record and reading it back: any
rival that read the record before this write has written its own by then (see
:data:`_LEASE_STALL`), so the read-back sees the last of them, and only that one goes on."""

_LEASE_MIN_TTL = 3.0
"""The shortest ``lease_ttl``: a contended take spends up to :data:`_LEASE_STALL` +
:data:`_LEASE_SETTLE` of its lease before it knows it holds it."""


def _backend_hook(backend: VectorBackend, name: str) -> int:
    """Call ``recover`` or ``pending_batches``, which only some backends have (0 if not)."""
    hook = getattr(backend, name, None)
    return int(hook()) if callable(hook) else 0


def _validation(exc: pydantic.ValidationError) -> ValidationError:
    return ValidationError.from_pydantic(exc, "memory")


@dataclass
class _Txn:
    """The staged writes of one operation."""

    batch: WriteBatch
    audit: AuditTxn
    counter: int
    touch: int
    steps: dict[str, int] = field(default_factory=dict)
    puts: list[tuple[MemoryNode, list[Edge]]] = field(default_factory=list)
    centroid: list[tuple[Any, str]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    policy_state: dict[str, Any] | None = None  # what the batch saves of the policy



class StoreCore:
    """Internal base of :class:`~mars_core.store.MemoryStore` (not public API)."""

    def __init__(
        self,
        backend: VectorBackend | None = None,
        embedder: Embedder | None = None,
        *,
        config: StoreConfig | None = None,
        clock: Clock | None = None,
        audit_key: bytes | None = None,
        summariser: Summariser | None = None,
        keys_path: str | os.PathLike[str] | None = None,
        read_only: bool = False,
        lease_ttl: float = 60.0,
        _backend_note: str | None = None,
        **overrides: Any,
    ) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self.backend: VectorBackend = backend if backend is not None else _ephemeral_backend()
        self._read_only = bool(read_only)
        self._lease: _Lease | None = None
        if getattr(self.backend, "shared", False) and not read_only:
            self._lease = _Lease(self.backend, lease_ttl)
        self._backend_note = _backend_note or (
            f"{self.backend.name} (passed)" if backend is not None else
            "inmemory (default of MemoryStore(): ephemeral)")
        # Encryption (crypto-shredding, mars_core.privacy.crypto) is on iff keys_path is
        # given; _seal/_unseal are passed to the codec (None: plaintext documents).
        self._cipher: ContentCipher | None = None
        self._seal: codec.Sealer | None = None
        self._unseal: codec.Sealer | None = None
        self._keyring: str | None = None
        try:
            if keys_path is not None:
                self._cipher = ContentCipher(KeyStore(keys_path))
                self._seal, self._unseal = self._cipher.seal, self._cipher.open
            self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
            self.clock: Clock = clock if clock is not None else SystemClock()
            self.summariser: Summariser = summariser or ExtractiveSummariser()
            self._explicit = config is not None or bool(overrides)
            self.config = self._configure(config, overrides)
            self._state = StoreState()
            self._prefs: dict[str, PrivacyPreferences] = {}
            self._colls = {MemoryStatus.ACTIVE: codec.MEMORIES,
                           MemoryStatus.ARCHIVED: codec.ARCHIVE}
            self._io = ViewIO(self._vectors, self._embed_rows,
                              lambda text: max(1, self.counter.count(text)))
            self._load(audit_key)
        except BaseException:
            self._release_lease()
            self.backend.close()  # release the directory lock: a failed open holds nothing
            if self._cipher is not None:
                self._cipher.close()
            raise

    def _release_lease(self) -> None:
        """Give the writer lease back (best effort: an unreachable server keeps it until
        it expires)."""
        if self._lease is not None:
            with contextlib.suppress(MarsError):
                self._lease.release()
            self._lease = None

    @staticmethod
    def _configure(config: StoreConfig | None, overrides: Mapping[str, Any]) -> StoreConfig:
        base = config or StoreConfig()
        try:
            return base.model_validate({**base.model_dump(), **overrides})
        except pydantic.ValidationError as exc:
            raise ConfigError(f"invalid store configuration: {exc}") from exc

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        backend: BackendKind | VectorBackend = "auto",
        embedder: Embedder | None = None,
        encrypt: bool | None = None,
        **kwargs: Any,
    ) -> Self:
        """Open (or create) a store persisted under ``path``.

        The embedded default is Chroma on disk (``path/chroma``) with the best embedder
        installed: all-MiniLM-L6-v2 with the ``semantic`` extra, else the hashing
        embedder (``MARS_EMBEDDER=hashing|semantic|auto`` overrides the choice for new
        stores). A directory that already holds a store reopens with the backend, the
        embedder and the encryption it was created with. ``stats()`` says which.

        Args:
            path: a directory; created when missing.
            backend: ``"auto"`` (Chroma when ``chromadb`` is installed, else the
                in-memory journal backend, with a warning), ``"chroma"``,
                ``"inmemory"``, ``"qdrant"`` (local mode, ``path/qdrant``), or a backend
                instance (a Chroma or Qdrant server); see :mod:`mars_core.backends.layout`.
            embedder: the embedder (default: the one the store's manifest names, else
                :func:`~mars_core.embedders.default_embedder`).
            encrypt: seal documents for crypto-shredding, keys in ``path/keys`` unless
                ``keys_path`` is given. ``None`` (default): on for a new Chroma or Qdrant
                store on disk when the ``crypto`` extra is installed (they cannot purge
                deleted bytes, see :mod:`mars_core.privacy.crypto`), off otherwise;
                an existing store keeps what it was created with.
            **kwargs: passed to :class:`MemoryStore` (``clock``, ``keys_path``, config
                fields such as ``budget``).

        Raises:
            ConfigError: an unknown backend, one that differs from the directory's, or an
                encryption choice the existing store cannot take.
            ExtraNotInstalledError: the chosen backend or embedder is not installed.
            ConflictError: another process has the directory open.
        """
        from mars_core.backends.layout import open_backend

        directory = Path(path)
        keys = kwargs.pop("keys_path", None)
        if keys is not None and Path(keys).resolve() == directory.resolve():
            raise ConfigError("keys_path must be a directory of its own, not the store's path")
        if isinstance(backend, str):
            chosen, note = open_backend(directory, backend,
                                        create=not kwargs.get("read_only", False))
        elif isinstance(backend, VectorBackend):
            directory.mkdir(parents=True, exist_ok=True)
            chosen, note = backend, f"{backend.name} (instance passed)"
        else:
            raise ConfigError("backend must be 'auto', 'chroma', 'inmemory', 'qdrant' or a "
                              f"VectorBackend, not {type(backend).__name__}")
        try:
            manifest = _read_manifest(chosen, create=not kwargs.get("read_only", False))
            if manifest is None and kwargs.get("read_only", False):
                raise no_store(directory)  # before a key directory is made for it
            if embedder is None:
                embedder = _embedder_for_manifest(manifest)
            keys = _keys_for(directory, keys, encrypt, manifest,
                             auto=isinstance(backend, str), backend=chosen)
        except BaseException:
            chosen.close()
            raise
        return cls(chosen, embedder, keys_path=keys, _backend_note=note, **kwargs)

    # --- opening ---------------------------------------------------------------------------

    def _load(self, audit_key: bytes | None) -> None:
        if not self._read_only:  # a reader creates and tunes nothing
            self.backend.ensure_collection(codec.META, 0)
        if self._lease is not None:
            self._lease.acquire()
            _backend_hook(self.backend, "recover")  # the batches a crashed writer left
        if self._read_only:
            self._read_consistent(audit_key)
            return
        manifest, key = self._read(audit_key)
        if manifest is None:
            if self._lease is not None:
                self._lease.check()
            self.backend.apply(WriteBatch().upsert(codec.META, [
                codec.meta_record("manifest", self._manifest()),
                codec.meta_record("keys", {"audit": key.hex()})]))
        elif manifest.get("config") != self._config_doc():
            txn = self._begin()
            txn.batch.upsert(codec.META, [codec.meta_record("manifest", self._manifest())])
            txn.audit.add(op=AuditOp.CONFIG, namespace=self.config.default_namespace,
                          params=self._config_doc(), step=0, at=self.clock.now(),
                          rationale="store reopened with a new configuration")
            self._commit(txn)
        if self._cipher is not None:  # keys of never-written or already-deleted records
            self._cipher.gc([*self._state.nodes, *(f"prefs:{ns}" for ns in self._prefs)])

    def _read_consistent(self, audit_key: bytes | None) -> None:
        """A reader's load: read everything, and again if a writer changed it meanwhile.

        The backends have no snapshot reads, so a reader whose reads interleave with a
        writer's batch could see part of it. A load is clean when no batch was pending at
        its end and the store state record (which every batch rewrites last, with the
        audit chain's head) did not change during it; otherwise it is read again after
        each of :data:`_READ_WAITS`. A store that stays busy (or keeps the pending batch
        of a writer that crashed, until a writer opens it) is read as it is then, with a
        warning: its memories and audit chain are those the state record counts
        (:meth:`_read_nodes`, :meth:`_restore`), but some may show changes made after it.
        A read that finds the audit chain shorter than the state record says (a replica
        behind the one that served the state record) is a corrupt store only if it stays so.
        """
        for wait in (*_READ_WAITS, None):
            self._mark = self._state_mark()
            try:
                self._read(audit_key)
            except CorruptStoreError:
                if wait is None:
                    raise
            else:
                if not _backend_hook(self.backend, "pending_batches") \
                        and self._state_mark() == self._mark:
                    return
            if wait is None:
                log.warning("opened read-only while a writer kept writing: some memories "
                            "may show changes made after the audit chain read; refresh() "
                            "once it pauses (a crashed writer's batch waits for the next "
                            "writer to open the store)")
                return
            time.sleep(wait)
            self._state, self._prefs = StoreState(), {}

    def _refresh(self) -> bool:
        """A reader's :meth:`_read_consistent` again, when the state record changed since
        (one small read otherwise); on any error the store stays as it was."""
        if not self._read_only or self._state_mark() == self._mark:
            return False
        saved = {**vars(self), "_colls": dict(self._colls)}
        self._state, self._prefs = StoreState(), {}
        try:
            self._read_consistent(None)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise
        return True

    def _state_mark(self) -> tuple[str, dict[str, Any]] | None:
        """The raw store state record (every committed batch rewrites it, last)."""
        try:
            found = self.backend.get(codec.META, [codec.meta_id("state")])
        except NotFoundError:  # no store here (a reader creates nothing; _read says so)
            return None
        return (found[0].document, dict(found[0].metadata)) if found else None

    def _read(self, audit_key: bytes | None) -> tuple[dict[str, Any] | None, bytes]:
        """Read the manifest, the state and every memory; returns the manifest and the
        audit key."""
        manifest = _read_manifest(self.backend, create=False)  # never sealed
        if self._read_only and manifest is None:
            raise no_store(self.backend.name)
        self._check_keys(manifest)
        meta = dict(codec.decode_meta(r, self._unseal) for r in self.backend.get(codec.META))
        manifest = meta.get("manifest")
        if manifest is not None:
            self._check_manifest(manifest)
        for name, dim in ((self._colls[MemoryStatus.ACTIVE], self.embedder.dim),
                          (self._colls[MemoryStatus.ARCHIVED], self.embedder.dim),
                          (codec.AUDIT, 0)):
            if not self._read_only:  # a reader's embedder is checked by the manifest
                self.backend.ensure_collection(name, dim)
        self.counter: TokenCounter = make_counter(self.config.token_counter)
        self.enricher = Enricher(self.config.nlp)
        self._unprimed: dict[str, builtins.list[str]] = {}  # centroids to rebuild, by ns
        self.scorer = SensitivityScorer(analyzer=self.enricher.analyzer)
        self.policy: Policy = _make_policy(self.config.policy, self.config.policy_params)
        self._policy_state: dict[str, Any] = self.policy.state_dict()
        self._phrases: dict[str, tuple[str, ...]] = {}  # sensitive phrases by memory id
        if self.config.type_shares is not None:
            self.policy.type_shares = TypeShares(initial=self.config.type_shares)
        if self.config.dp.enabled:
            self.policy.dp = self.config.dp
            state = meta.get("dp", {}).get("accountant")
            self.policy.accountant = PrivacyAccountant.from_state(state) if state else \
                PrivacyAccountant.from_config(self.config.dp)
        self._state.policies = [self.policy]
        key_hex = meta.get("keys", {}).get("audit")
        key = bytes.fromhex(key_hex) if key_hex else (audit_key or os.urandom(32))
        self.audit = AuditLog(key)
        self._restore(meta)
        return manifest, key

    def _check_keys(self, manifest: Mapping[str, Any] | None) -> None:
        """Refuse a key directory that does not belong to this store (its gc would destroy
        another store's keys), and an encrypted store opened without its keys."""
        enc = None if manifest is None else manifest.get("encryption")
        if enc is not None and self._cipher is None:
            raise ConfigError("this store is encrypted: open it with keys_path=<the directory "
                              "of its keys>")
        if self._cipher is None:
            return
        keys = self._cipher.keystore
        if manifest is None:  # a new store needs a new, empty key directory
            if len(keys) or keys.keyring_id is not None:
                raise ConfigError("keys_path already belongs to another store (or, if it "
                                  "holds no keys, to one whose creation was interrupted); "
                                  "give this store an empty key directory of its own")
            self._keyring = keys.bind()
        elif enc is None:
            raise ConfigError("this store was created without encryption, so keys_path cannot "
                              "be added to it (its records are plaintext): export it to "
                              "JSON-LD and import that into a new store opened with keys_path")
        elif enc.get("keyring") != keys.keyring_id:
            raise ConfigError("keys_path is not the key directory of this store; open it with "
                              "the keys_path it was created with")
        else:
            self._keyring = keys.keyring_id

    def _config_doc(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")

    def _manifest(self, embedder: Embedder | None = None,
                  colls: Mapping[MemoryStatus, str] | None = None) -> dict[str, Any]:
        emb, names = embedder or self.embedder, colls or self._colls
        return {"format_version": codec.FORMAT_VERSION, "token_counter": self.config.token_counter,
                "embedder": {"name": emb.name, "dim": emb.dim},
                "collections": {s.value: n for s, n in names.items()},
                "id_scheme": "uuid5(seed:counter)", "backend": self.backend.name,
                "backend_choice": self._backend_note,
                "signals": self.enricher.name, "config": self._config_doc(),
                "encryption": None if self._keyring is None else {
                    "cipher": "AES-256-GCM", "scope": "one key per memory and per prefs:<ns>",
                    "keyring": self._keyring}}

    def _check_manifest(self, manifest: Mapping[str, Any]) -> None:
        if manifest.get("format_version") != codec.FORMAT_VERSION:
            raise CorruptStoreError(
                f"store format {manifest.get('format_version')} is not supported by this "
                f"version (format {codec.FORMAT_VERSION}); export it with the version that "
                "wrote it and import the JSON-LD")
        emb = manifest.get("embedder", {})
        if (emb.get("name"), emb.get("dim")) != (self.embedder.name, self.embedder.dim):
            raise EmbeddingMismatchError(
                f"this store was built with embedder {emb.get('name')!r} (dim {emb.get('dim')}), "
                f"not {self.embedder.name!r} (dim {self.embedder.dim}); open it with the original "
                "embedder, then call store.reembed(new_embedder) to move it")
        if not self._explicit:
            self.config = StoreConfig.model_validate(manifest.get("config", {}))
        self._backend_note = str(manifest.get("backend_choice", self._backend_note))
        for status, name in manifest.get("collections", {}).items():
            self._colls[MemoryStatus(status)] = name
        if manifest.get("token_counter") != self.config.token_counter:
            raise ConfigError(
                f"this store counts tokens with {manifest.get('token_counter')!r}; "
                f"token_counter={self.config.token_counter!r} would change every weight")

    def _restore(self, meta: Mapping[str, Mapping[str, Any]]) -> None:
        st = self._state
        nodes, owned = self._read_nodes(meta.get("state", {}))
        for node in nodes:
            st.apply_put(node, notify=False)
        for node in nodes:
            st.owned[node.id] = owned[node.id]
            for edge in owned[node.id]:
                st.graph.add(edge)
        self.policy.rebuild(n for n in nodes if n.is_active)
        saved = meta.get("policy") or {}
        if saved.get("name") == self.policy.name and saved.get("state"):
            self.policy.load_state(saved["state"])  # ValidationError on a corrupt record
        self._policy_state = self.policy.state_dict()
        self._prime_centroids(nodes)
        state = meta.get("state", {})
        st.counter, st.touch = int(state.get("counter", 0)), int(state.get("touch", 0))
        for key, data in meta.items():
            if key.startswith("ns:"):
                st.steps[key[3:]] = int(data["step"])
            elif key.startswith("prefs:"):
                self._prefs[key[6:]] = PrivacyPreferences.model_validate(data)
        events = sorted((codec.decode_audit(r) for r in self.backend.get(codec.AUDIT)),
                        key=lambda e: e.seq)
        count = int(state.get("audit_count", 0))
        # A reader may read the audit after a writer appended to it: the chain it holds is
        # the one the state record (read before) names; the rest is a later batch's.
        self.audit.load(events[:count] if self._read_only else events)
        head = (count, state.get("audit_head", self.audit.head))
        if (len(self.audit), self.audit.head) != head:
            raise CorruptStoreError("the audit log does not match the recorded chain head; "
                                    "run store.verify() on a copy and restore from a snapshot")

    def _read_nodes(self, state: Mapping[str, Any]
                    ) -> tuple[builtins.list[MemoryNode], dict[str, builtins.list[Edge]]]:
        """Every memory (by ``seq``) with the edges its record owns.

        A reader keeps only the memories the state record (read before them) counts: a
        writer's later batches may add some while it reads, and their inserts are not in
        the audit chain it takes; edges to them go too. (Later changes to the memories it
        keeps are kept: the backends have no older versions to read.)
        """
        newest = int(state.get("counter", 0)) if self._read_only else None
        nodes: builtins.list[MemoryNode] = []
        owned: dict[str, builtins.list[Edge]] = {}
        later: set[str] = set()
        for coll in self._colls.values():
            for rec in self.backend.get(coll):
                node, edges = codec.decode_node(rec, self._unseal)
                if newest is not None and node.seq > newest:
                    later.add(node.id)
                    continue
                nodes.append(node)
                owned[node.id] = edges
        if later:
            owned = {nid: [e for e in edges if e.source not in later and e.target not in later]
                     for nid, edges in owned.items()}
        nodes.sort(key=lambda n: n.seq)
        return nodes, owned

    def _prime_centroids(self, nodes: Sequence[MemoryNode]) -> None:
        """Mark each namespace's moving centroid for a rebuild from its most recent memories.

        The texts are embedded again rather than read back from the backend: backends
        may renormalise stored vectors, and the centroid must be bit-identical to the
        one the live process had, so reopening never changes a later score. They are
        embedded lazily, before the namespace's next write needs the centroid
        (:meth:`_centroid`): a store opened to be read never loads its embedding model.
        """
        if not self.enricher.enabled:
            return
        window = self.enricher.config.centroid_window
        recent: dict[str, builtins.list[MemoryNode]] = {}
        for node in nodes:  # sorted by seq
            recent.setdefault(node.namespace, []).append(node)
        for ns, members in recent.items():
            self._unprimed[ns] = [n.content for n in members[-window:]]

    def _centroid(self, ns: str) -> None:
        """Rebuild ``ns``'s centroid now if :meth:`_prime_centroids` left it pending."""
        texts = self._unprimed.pop(ns, None)
        if texts is not None:
            self.enricher.prime(ns, [embed_one(self.embedder, t) for t in texts])

    # --- transactions ------------------------------------------------------------------------

    def _begin(self) -> _Txn:
        if self._read_only:
            raise ConflictError("this store was opened with read_only=True; open it without "
                                "read_only (one writer at a time) to change it")
        if self._cipher is not None:
            self._cipher.discard()  # keys of an operation that failed before writing
        return _Txn(WriteBatch(), self.audit.begin(), self._state.counter, self._state.touch)

    def _step(self, txn: _Txn, namespace: str, advance: bool = False) -> int:
        if advance:
            txn.steps[namespace] = txn.steps.get(namespace, self._state.step(namespace)) + 1
        return txn.steps.get(namespace, self._state.step(namespace))

    def _stage_put(self, txn: _Txn, node: MemoryNode, vector: Any = None,
                   old_status: MemoryStatus | None = None, edges: Sequence[Edge] = ()) -> None:
        owned = list(self._state.owned.get(node.id, [])) + [
            e for e in edges if e.key not in {x.key for x in self._state.owned.get(node.id, [])}]
        if old_status is not None and old_status is not node.status:
            txn.batch.delete(self._colls[old_status], [node.id])
        txn.batch.upsert(self._colls[node.status],
                         [codec.node_record(node, owned, vector, self._seal)])
        txn.puts.append((node, list(edges)))

    def _commit(self, txn: _Txn) -> None:
        st = self._state
        events = txn.audit.events
        state_doc = {"counter": txn.counter, "touch": txn.touch,
                     "audit_count": len(self.audit) + len(events), "audit_head": txn.audit.head}
        txn.batch.upsert(codec.AUDIT, [codec.audit_record(e) for e in events])
        txn.batch.upsert(codec.META, [codec.meta_record("state", state_doc)] + [
            codec.meta_record(f"ns:{ns}", {"step": step}) for ns, step in txn.steps.items()])
        self._stage_policy_state(txn)  # as of the last commit, plus this one's decisions
        if self._lease is not None:
            self._lease.check()
        if self._cipher is not None:
            self._cipher.flush()  # keys are durable before the records sealed with them
        self.backend.apply(txn.batch)
        if txn.policy_state is not None:
            self._policy_state = txn.policy_state
        st.counter, st.touch = txn.counter, txn.touch
        st.steps.update(txn.steps)
        for node, edges in txn.puts:
            st.apply_put(node, edges)
        for nid in txn.deletes:
            st.apply_delete(nid)
        for vector, ns in txn.centroid:
            self.enricher.commit(vector, ns)
        self.audit.commit(txn.audit)

    # --- building nodes ----------------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        ns = self.config.default_namespace if namespace is None else namespace
        if not isinstance(ns, str) or not ns or len(ns) > 256:
            raise ValidationError("namespace must be a non-empty string of at most 256 characters")
        return ns

    def _new_id(self, txn: _Txn) -> str:
        while True:
            txn.counter += 1
            nid = codec.memory_id(self.config.seed, txn.counter)
            if nid not in self._state.nodes:
                return nid

    def _build(self, txn: _Txn, text: object, mtype: object, ns: str, step: int,
               **fields: Any) -> tuple[MemoryNode, Any]:
        if not isinstance(text, str):
            raise ValidationError(f"memory text must be a str, not {type(text).__name__}")
        prov = fields.get("provenance")
        conv = prov.get("conversation_id") if isinstance(prov, Mapping) else \
            getattr(prov, "conversation_id", None)
        self._check_allowed(text, ns, conv)
        try:
            mt = MemoryType(str(mtype))
        except ValueError:
            raise ValidationError(
                f"unknown memory type {mtype!r}; use one of {[t.value for t in MemoryType]}"
            ) from None
        payload = fields.pop("payload", None)
        if payload is None:
            payload = default_payload(mt)
        elif isinstance(payload, Mapping):
            payload = {"kind": mt.value, **payload}
        sens = fields.pop("sensitivity", None)
        fields = {k: v for k, v in fields.items() if v is not None}
        try:
            node = MemoryNode(
                id=self._new_id(txn), type=mt, content=text, payload=payload, namespace=ns,
                created_at=fields.pop("created_at", None) or self.clock.now(), step=step,
                seq=txn.counter,
                sensitivity=0.0 if sens is None else sens,
                weight=max(1, self.counter.count(text)), touch_seq=txn.touch + 1,
                activated_seq=txn.touch + 1, **fields)
        except pydantic.ValidationError as exc:
            raise _validation(exc) from None
        budget = self.config.budget_for(ns)
        if node.weight > budget:
            raise BudgetExceededError(
                f"this memory needs {node.weight} tokens but namespace {ns!r} has a budget of "
                f"{budget}; split the text or raise the budget")
        txn.touch += 1
        vector = embed_one(self.embedder, text)
        self._centroid(ns)
        sig = self.enricher.analyze(text)
        signals = self.enricher.compute(text, vector, ns, node.provenance.source, sig)
        detected = node.sensitivity
        if sens is None and self.config.sensitivity_scoring:
            detected = self.scorer.score(text, provenance=node.provenance, type=mt,
                                         signals=sig).score
        signals["sensitivity_detected"] = detected
        txn.centroid.append((vector, ns))
        node = node.model_copy(update={"signals": signals})
        return node.model_copy(update={"sensitivity": self._user_sensitivity(node, detected)}), \
            vector

    def _user_sensitivity(self, node: MemoryNode, detected: float) -> float:
        """Sensitivity after the namespace's preferences, with private inheritance."""
        prefs = self._prefs.get(node.namespace)
        if prefs is None:
            return detected
        s = prefs.adjust(detected, (), node.content)
        ancestors = set(node.provenance.derived_from)
        for parent in node.provenance.derived_from:
            ancestors.update(self._state.graph.ancestors(parent))
        if any(a in self._state.nodes and prefs.mentions_private(self._state.nodes[a].content)
               for a in ancestors):
            s = max(s, prefs.private_floor)  # what derives from a private memory inherits it
        return s

    def _check_allowed(self, text: str, ns: str, conversation: str | None) -> None:
        prefs = self._prefs.get(ns)
        if prefs is not None and prefs.blocks(text, conversation):
            raise BlockedByPreferenceError(
                f"namespace {ns!r} blocks this entity or conversation from long-term storage")

    def _recallable(self, ns: str) -> Callable[[MemoryNode], bool]:
        prefs, now = self._prefs.get(ns), self.clock.now()
        if prefs is None or not prefs.private_mode:
            return lambda node: True
        return lambda node: prefs.recallable(node, now)

    def _edges_for(self, node: MemoryNode, links: Iterable[tuple[Predicate | str, str]],
                   implicit: bool = True) -> list[Edge]:
        pairs: list[tuple[Predicate, str]] = []
        if implicit:
            pairs += [(Predicate.DERIVES_FROM, t) for t in node.provenance.derived_from]
            if isinstance(node.payload, TaskPayload):
                pairs += [(Predicate.REQUIRES, t) for t in node.payload.dependencies]
        try:
            pairs += [(Predicate(p), t) for p, t in links]
        except (ValueError, TypeError):
            raise ValidationError(
                f"links must be (predicate, target id) pairs; predicates: "
                f"{[p.value for p in Predicate]}") from None
        edges = []
        for pred, target in dict.fromkeys(pairs):
            other = self._state.nodes.get(target)
            if other is None:
                raise NotFoundError(f"linked memory {target!r} does not exist")
            if other.namespace != node.namespace:
                raise ValidationError("memories may only be linked within one namespace")
            try:
                edges.append(Edge(source=node.id, predicate=pred, target=target, step=node.step))
            except pydantic.ValidationError as exc:
                raise _validation(exc) from None
        return edges

    def _stage_insert(self, txn: _Txn, node: MemoryNode, vector: Any, edges: Sequence[Edge],
                      why: str = "") -> None:
        """Stage a new memory with its edges and its ``insert`` audit event."""
        self._stage_put(txn, node, vector, edges=edges)
        ns, used = node.namespace, self._state.ledger.used(node.namespace)
        txn.audit.add(op=AuditOp.INSERT, namespace=ns, node_ids=[node.id], step=node.step,
                      at=node.created_at, features={node.id: {"weight": node.weight,
                                                              "sensitivity": node.sensitivity}},
                      rationale=f"stored {node.type.value} memory of {node.weight} tokens "
                                f"({used + node.weight} of {self.config.budget_for(ns)} tokens "
                                f"before forgetting){why}",
                      contents={node.id: node.content})

    def _stage_observe(self, txn: _Txn, ns: str, text: str, *, prov: Provenance,
                       speaker: str | None, at: datetime | None) -> list[MemoryNode]:
        """One turn: its episode, the memories extracted from it, their edges."""
        step = self._step(txn, ns, advance=True)
        episode, vector = self._build(
            txn, text, MemoryType.EPISODIC, ns, step, provenance=prov, created_at=at,
            payload={"participants": (speaker,) if speaker else ()})
        prev = self._state.last_episode.get((ns, prov.conversation_id or ""))
        links = [Edge(source=prev, predicate=Predicate.TEMPORAL_NEXT, target=episode.id,
                      step=step)] if prev in self._state.nodes else []
        role = prov.source
        self._stage_insert(txn, episode, vector, links, f"; turn of {role}")
        out = [episode]
        for item in extract(role, text, None, speaker=speaker, known=self._state.known[ns],
                            anchor=at or self.clock.now()):
            node, vec = self._build(
                txn, item.text, item.type, ns, step, payload=dict(item.payload), created_at=at,
                provenance=prov.model_copy(update={"derived_from": (episode.id,)}))
            edges = [Edge(source=node.id, predicate=p, target=t, step=step)
                     for p, t in item.edges(episode.id)
                     if t == episode.id or t in self._state.nodes]
            self._stage_insert(txn, node, vec, edges, f"; {item.kind} extracted ({item.reason})")
            old = self._state.nodes.get(item.replaces or "")
            if old is not None and old.is_active:
                verb = "corrected" if item.corrects else "superseded"
                self._stage_archive(txn, ns, [Eviction(old.id, old.weight, None, {},
                                                       f"{verb} by the newer memory {node.id}")],
                                    "observe", {})
            out.append(node)
        return out

    # --- budget --------------------------------------------------------------------------

    def _enforce_budget(self, txn: _Txn, ns: str, incoming: int, exclude: Iterable[str]) -> None:
        """Sweep (hygiene the policy does at every write), then restore the budget."""
        view, taken = self._view(txn, ns), frozenset(exclude)
        swept = self.policy.sweep(view, taken)
        self._stage_archive(txn, ns, swept.evictions, self.policy.name, self.policy.params())
        need = self._state.ledger.used(ns) - swept.freed + incoming - view.budget
        if need <= 0:
            return
        plan = self.policy.apply(view, need, taken | {e.node_id for e in swept.evictions})
        params = self.policy.params()
        for summary in plan.summaries:
            self._stage_summary(txn, ns, summary, self.policy.name, params)
        if plan.dp is not None and self.policy.accountant is not None:
            params = {**params, "dp": plan.dp, "accountant": self.policy.accountant.totals(ns)}
            txn.batch.upsert(codec.META, [codec.meta_record(
                "dp", {"accountant": self.policy.accountant.state()})])
        self._stage_archive(txn, ns, plan.evictions, self.policy.name, params)

    def _flush_policy_state(self) -> None:
        """Write the policy state if it changed since the last commit (at close: what the
        last commit's own adds and later retrievals taught the policy)."""
        lost = self._lease is not None and self._lease.lost  # nothing may be written
        if not (self._read_only or lost) and self.policy.state_dict() != self._policy_state:
            self._commit(self._begin())

    def _stage_policy_state(self, txn: _Txn) -> None:
        """Persist what the policy learned (hysteresis, bandit statistics) when it changed.

        Staged in every commit, so the record lags the in-memory state by what the commit
        itself applies (its adds); :meth:`_flush_policy_state` closes that gap at close.
        The state holds ids and numbers only, never memory text."""
        state = self.policy.state_dict()
        if state != self._policy_state:
            txn.batch.upsert(codec.META, [codec.meta_record(
                "policy", {"name": self.policy.name, "state": state})])
            txn.policy_state = state  # saved once the batch lands

    def _view(self, txn: _Txn, ns: str) -> NamespaceView:
        # A generator per operation, derived from the seed and persisted counters: seeded
        # choices (Random-Drop) are the same whether or not the store was reopened.
        rng = random.Random(f"{self.config.seed}:{ns}:{txn.counter}:{txn.touch}")
        return self._state.view(ns, self.config.budget_for(ns), self.clock.now(), rng,
                                step=self._step(txn, ns), io=self._io)

    def _vectors(self, ids: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.zeros((len(ids), self.embedder.dim), dtype=np.float32)
        pos = {nid: i for i, nid in enumerate(ids)}
        for rec in self.backend.get(self._colls[MemoryStatus.ACTIVE], list(ids),
                                    with_vectors=True):
            if rec.vector is not None:
                norm = float(np.linalg.norm(rec.vector))
                out[pos[rec.id]] = rec.vector / norm if norm > 0 else rec.vector
        return out

    def _embed_rows(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        out = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32).reshape(
            len(texts), self.embedder.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray[Any, np.dtype[np.float32]] = np.divide(
            out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit

    def _move_to_archive(self, txn: _Txn, ids: Sequence[str]) -> None:
        recs = self.backend.get(self._colls[MemoryStatus.ACTIVE], list(ids), with_vectors=True)
        vectors = {r.id: r.vector for r in recs}
        for nid in ids:
            node = self._state.nodes[nid].model_copy(update={"status": MemoryStatus.ARCHIVED})
            self._stage_put(txn, node, vectors.get(nid), MemoryStatus.ACTIVE)

    def _stage_archive(self, txn: _Txn, ns: str, evictions: Sequence[Eviction],
                       policy: str, params: Mapping[str, Any]) -> None:
        self._move_to_archive(txn, [e.node_id for e in evictions])
        step = self._step(txn, ns)
        for ev in evictions:
            node = self._state.nodes[ev.node_id]
            txn.audit.add(op=AuditOp.EVICT, namespace=ns, node_ids=[node.id], policy=policy,
                          params=params, features={node.id: dict(ev.features)}, score=ev.score,
                          rationale=ev.rationale, step=step, at=self.clock.now(),
                          contents={node.id: node.content})

    def _stage_summary(self, txn: _Txn, ns: str, summary: Summary, policy: str,
                       params: Mapping[str, Any]) -> MemoryNode:
        members = [self._state.nodes[i] for i in summary.member_ids]
        convs = {m.provenance.conversation_id for m in members}
        prov = Provenance(source="summary", derived_from=summary.member_ids,
                          conversation_id=convs.pop() if len(convs) == 1 else None)
        step = self._step(txn, ns)
        node, vector = self._build(
            txn, summary.text, MemoryType.SEMANTIC, ns, step, provenance=prov,
            payload={"concept": summary.concept,
                     "confidence": min(1.0, max(0.0, 1.0 - summary.distortion))},
            sensitivity=summary.sensitivity, depth=max(m.depth for m in members) + 1)
        self._stage_put(txn, node, vector, edges=self._edges_for(node, ()))
        self._move_to_archive(txn, summary.member_ids)
        txn.audit.add(op=AuditOp.SUMMARISE, namespace=ns, node_ids=[node.id, *summary.member_ids],
                      policy=policy, params=params, score=summary.distortion,
                      features={node.id: {"distortion": summary.distortion,
                                          "sensitivity": summary.sensitivity,
                                          "members": float(len(members)),
                                          "tokens_saved": float(sum(m.weight for m in members)
                                                                - node.weight),
                                          **summary.features}},
                      rationale=summary.rationale or f"summarised {len(members)} memories",
                      step=step, at=node.created_at,
                      contents={n.id: n.content for n in [node, *members]})
        return node

    def _rank(self, status: MemoryStatus, qvec: Any, q: Query) -> builtins.list[Hit]:
        return rank(self._state, self.backend, collection=self._colls[status], status=status,
                    qvec=qvec, q=q, cfg=self.config.retrieval)

    @property
    def read_only(self) -> bool:
        """Whether the store was opened ``read_only=True`` (it then never writes)."""
        return self._read_only

    def _derivation(self, node_id: str) -> list[str]:
        """A memory's derivation neighbours: what it was derived from, what derives from it."""
        g = self._state.graph
        return [e.target for e in g.out_edges(node_id, Predicate.DERIVES_FROM)] + \
            [e.source for e in g.in_edges(node_id, Predicate.DERIVES_FROM)]

    def _cutoff(self, ratio: object) -> float:
        """A call's relative cut-off: the config's when None, else a number in [0, 1]."""
        if ratio is None:
            return self.config.retrieval.relative_cutoff
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) \
                or not 0.0 <= ratio <= 1.0:
            raise ValidationError("relative_cutoff must be a number in [0, 1] or None")
        return float(ratio)

    def _query(self, text: object, *, namespace: str | None, types: Iterable[Any] | None,
               max_sensitivity: float | None, since: datetime | None, until: datetime | None,
               conversation: str | None, budget_tokens: int | None, k: int | None
               ) -> tuple[Query, int]:
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("a query must be a non-empty string")
        budget = self.config.retrieval.default_budget_tokens if budget_tokens is None \
            else budget_tokens
        if not isinstance(budget, int) or budget <= 0:
            raise ValidationError("budget_tokens must be a positive integer")
        if k is not None and (not isinstance(k, int) or k <= 0):
            raise ValidationError("k must be a positive integer")
        _check_filters(max_sensitivity, since, until, conversation)
        try:
            tset = None if types is None else frozenset(MemoryType(t) for t in types)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        return Query(text, self._ns(namespace), tset, max_sensitivity, since, until,
                     conversation), budget

    def _record_access(self, ns: str, hits: Sequence[Hit], budget: int, query: str,
                       params: Mapping[str, Any] | None = None, *,
                       rationale: str | None = None) -> None:
        if self._read_only:  # a reader reads; it records no access
            return
        txn = self._begin()
        step, now = self._step(txn, ns), self.clock.now()
        for h in reversed(hits):  # the best hit becomes the most recently used
            txn.touch += 1
            node = self._state.nodes[h.node.id]
            self._stage_put(txn, node.model_copy(update={
                "access_count": node.access_count + 1, "last_access_at": now,
                "last_access_step": step, "touch_seq": txn.touch}))
        txn.audit.add(op=AuditOp.ACCESS, namespace=ns, node_ids=[h.id for h in hits], step=step,
                      at=now, features={h.id: {"score": h.score, "dense": h.dense,
                                               "lexical": h.lexical} for h in hits},
                      rationale=rationale or f"retrieved {len(hits)} memories "
                                f"({sum(h.node.weight for h in hits)} of {budget} tokens)",
                      contents={"query": query}, params=params)
        self._commit(txn)

    def _check_import_edges(self, nodes: Sequence[MemoryNode], edges: Sequence[Edge]) -> None:
        known = {n.id: n for n in nodes}
        scratch = MemoryGraph()
        for e in edges:
            src, tgt = known.get(e.source), known.get(e.target) or self._state.nodes.get(e.target)
            if src is None or tgt is None:
                raise ImportFormatError(f"edge {e.key} names a memory that is not in the export")
            if src.namespace != tgt.namespace:
                raise ImportFormatError(f"edge {e.key} crosses namespaces")
            try:
                scratch.add(e)
            except ValidationError as exc:
                raise ImportFormatError(str(exc)) from None

    # --- erasure ---------------------------------------------------------------------------------

    def _stage_erase(self, txn: _Txn, ns: str, plan: ErasurePlan, request: str,
                     params: Mapping[str, Any]) -> dict[str, str]:
        """Stage an erasure plan; returns ``{old summary id: regenerated id}``."""
        step = self._step(txn, ns)
        staged: dict[str, MemoryNode] = {}
        renamed: dict[str, str] = {}
        for old_id, members in plan.regenerate:
            new = self._stage_regenerated(txn, ns, old_id,
                                          [renamed.get(m, m) for m in members], staged)
            staged[new.id], renamed[old_id] = new, new.id
        gone = set(plan.erased) | set(renamed)
        for nid in [*plan.erased, *renamed]:
            node = self._state.nodes[nid]
            txn.batch.delete(self._colls[node.status], [nid])
            txn.deletes.append(nid)
            why = (f"regenerated as {renamed[nid]} without the erased material" if nid in renamed
                   else "erased on request" if nid in plan.targets
                   else "erased: derived from erased material")
            txn.audit.add(op=AuditOp.ERASE, namespace=ns, node_ids=[nid], policy="erasure",
                          params={"request": request, **params}, step=step, at=self.clock.now(),
                          rationale=why, contents={nid: node.content})
        self._stage_edge_cleanup(txn, gone)
        self._stage_leftover_purge(txn, [*plan.erased, *renamed])
        return renamed

    def _generation(self) -> int:
        """How many times the store was re-embedded (its collections' ``_g<n>`` suffix)."""
        return sum(1 for e in self.audit.events() if e.op is AuditOp.CONFIG
                   and "embedder" in e.params)

    def _reembed_targets(self) -> dict[MemoryStatus, str]:
        """The collections the next :meth:`reembed` copies into (``memories_g<n>``, ...)."""
        gen = self._generation() + 1
        return {s: f"{base}_g{gen}" for s, base in
                ((MemoryStatus.ACTIVE, codec.MEMORIES), (MemoryStatus.ARCHIVED, codec.ARCHIVE))}

    def _stage_leftover_purge(self, txn: _Txn, ids: Sequence[str]) -> None:
        """Stage deleting ``ids`` wherever a re-embedding may have left copies of them
        (their texts included): the next one's collections (a failed or crashed try) and
        every earlier generation's (a crash after the switch, before they were emptied)."""
        names = {f"{base}{f'_g{g}' if g else ''}" for base in (codec.MEMORIES, codec.ARCHIVE)
                 for g in range(self._generation() + 2)} - set(self._colls.values())
        for name in sorted(names):
            try:
                found = self.backend.get(name, list(ids))
            except NotFoundError:
                continue
            if found:
                txn.batch.delete(name, [r.id for r in found])

    def _empty(self, collections: Iterable[str]) -> None:
        """Delete every record of ``collections`` (those that exist), after completing
        this writer's unfinished batch (which could write more of them). A store that
        lost its lease writes nothing: the next writer's erasures and re-embeddings purge."""
        if self._lease is not None and self._lease.lost:
            return
        _backend_hook(self.backend, "recover")
        for name in collections:
            try:
                ids = [r.id for r in self.backend.get(name)]
            except NotFoundError:
                continue
            if ids:
                self.backend.apply(WriteBatch().delete(name, ids))

    def _stage_regenerated(self, txn: _Txn, ns: str, old_id: str, members: Sequence[str],
                           staged: Mapping[str, MemoryNode]) -> MemoryNode:
        old = self._state.nodes[old_id]
        nodes = [staged.get(m) or self._state.nodes[m] for m in members]
        text = self.summariser([n.content for n in nodes], target_tokens=old.weight)
        concept = old.payload.concept if isinstance(old.payload, SemanticPayload) else None
        prov = Provenance(source="summary", derived_from=tuple(members),
                          conversation_id=old.provenance.conversation_id)
        node, vector = self._build(txn, text, MemoryType.SEMANTIC, ns, self._step(txn, ns),
                                   provenance=prov, payload={"concept": concept},
                                   sensitivity=max(n.sensitivity for n in nodes),
                                   depth=old.depth)
        node = node.model_copy(update={"status": old.status})
        edges = [Edge(source=node.id, predicate=Predicate.DERIVES_FROM, target=m, step=node.step)
                 for m in members]
        self._stage_put(txn, node, vector, edges=edges)
        txn.audit.add(op=AuditOp.SUMMARISE, namespace=ns, node_ids=[node.id, *members],
                      policy="erasure", step=node.step, at=node.created_at,
                      rationale=f"regenerated summary {old_id} from {len(members)} surviving "
                                "memories, without the erased material",
                      contents={node.id: node.content})
        return node

    def _stage_edge_cleanup(self, txn: _Txn, gone: set[str]) -> None:
        """Rewrite surviving records whose stored edges touch erased memories."""
        for owner, edges in sorted(self._state.owned.items()):
            if owner in gone or owner not in self._state.nodes:
                continue
            keep = [e for e in edges if e.source not in gone and e.target not in gone]
            if len(keep) != len(edges):
                node = self._state.nodes[owner]
                txn.batch.upsert(self._colls[node.status],
                                 [codec.node_record(node, keep, None, self._seal)])

    def _purpose_filter(self, ns: str, goal: str | None) -> Callable[[str], bool]:
        """Purpose limitation (seed 000 §4.3): private mode hides what consent does not
        cover; for a goal, social memories must be linked to a task of that goal."""
        recallable = self._recallable(ns)
        goal_words = set(tokenize(goal or ""))

        def linked_to_goal(nid: str) -> bool:
            for e in self._state.graph.in_edges(nid) + self._state.graph.out_edges(nid):
                other = self._state.nodes.get(e.target if e.source == nid else e.source)
                if other is not None and other.type is MemoryType.TASK and \
                        goal_words & set(tokenize(other.content)):
                    return True
            return False

        def allowed(nid: str) -> bool:
            node = self._state.nodes[nid]
            if not recallable(node):
                return False
            return goal is None or node.type is not MemoryType.SOCIAL or linked_to_goal(nid)

        return allowed

    def _stage_preferences(self, txn: _Txn, ns: str, prefs: PrivacyPreferences) -> None:
        """Stage new preferences: the meta record, re-scored memories, one config event."""
        old, self._prefs[ns] = self._prefs.get(ns), prefs
        try:
            step, now = self._step(txn, ns), self.clock.now()
            nodes = [self._state.nodes[i] for s in MemoryStatus for i in self._state.ids(ns, s)]
            for node in sorted(nodes, key=lambda n: n.seq):
                detected = node.signals.get("sensitivity_detected", node.sensitivity)
                new_s = self._user_sensitivity(node, detected)
                if abs(new_s - node.sensitivity) > 1e-12:
                    self._stage_put(txn, node.model_copy(update={"sensitivity": new_s}))
                    txn.audit.add(op=AuditOp.METADATA, namespace=ns, node_ids=[node.id],
                                  step=step, at=now, features={node.id: {
                                      "before": node.sensitivity, "after": new_s}},
                                  rationale=f"sensitivity {node.sensitivity:.2f} -> {new_s:.2f} "
                                            "by the user's privacy preferences")
        finally:
            if old is None:
                del self._prefs[ns]
            else:
                self._prefs[ns] = old
        txn.batch.upsert(codec.META, [codec.meta_record(  # names entities: sealed
            f"prefs:{ns}", prefs.model_dump(mode="json"), self._seal)])
        txn.audit.add(op=AuditOp.CONFIG, namespace=ns, step=self._step(txn, ns),
                      at=self.clock.now(), params={
                          "private_entities": len(prefs.private_entities),
                          "blocked_entities": len(prefs.blocked_entities),
                          "blocked_conversations": len(prefs.blocked_conversations),
                          "private_mode": prefs.private_mode, "consents": len(prefs.consents),
                          "retention_days": {t.value: d for t, d in prefs.retention_days.items()}},
                      rationale="privacy preferences updated by the user")

    def _stage_prefs_erasure(self, txn: _Txn, ns: str) -> list[str]:
        """A whole-namespace erasure also erases its preferences (they name entities);
        returns the key ids to shred once the batch is written."""
        if ns in self._prefs:
            txn.batch.delete(codec.META, [codec.meta_id(f"prefs:{ns}")])
            txn.audit.add(op=AuditOp.CONFIG, namespace=ns, step=self._step(txn, ns),
                          at=self.clock.now(),
                          rationale="privacy preferences erased with the namespace")
        return [f"prefs:{ns}"]

    def _shred(self, key_ids: Iterable[str]) -> int:
        """Crypto-shred: destroy the keys of deleted records (after the delete is written;
        a crash in between leaves orphan keys that the next open collects)."""
        return self._cipher.shred(key_ids) if self._cipher is not None else 0

    def _protected_phrases(self, ns: str, threshold: float = 0.7) -> list[str]:
        """What the second redaction pass protects: the sensitive phrases of the
        namespace's high-sensitivity memories, and the user's private/blocked entities."""
        phrases: list[str] = []
        cache = self._phrases
        for status in MemoryStatus:
            for nid in self._state.ids(ns, status):
                node = self._state.nodes[nid]
                if node.sensitivity >= threshold:
                    if nid not in cache:  # content is immutable: detect once per memory
                        cache[nid] = tuple(sensitive_phrases(
                            node.content, self.scorer.detect(node.content)))
                    phrases += cache[nid]
        prefs = self._prefs.get(ns)
        if prefs is not None:
            phrases += [*prefs.private_entities, *prefs.blocked_entities]
        return list(dict.fromkeys(phrases))

    def _purge(self, shredded: int = 0) -> str:
        """Physically drop deleted data where the backend can; says what was done."""
        compact = getattr(self.backend, "compact", None)
        shred = f"documents: crypto-shredded ({shredded} keys destroyed)"
        if callable(compact):
            compact()
            done = f"{self.backend.name}: rewritten without the erased records (compacted)"
            return f"{done}; {shred}" if self._cipher is not None else done
        if self._cipher is not None:
            return f"{self.backend.name}: {shred}; vectors remain until the backend vacuums"
        return f"{self.backend.name}: deleted through the client (see the privacy docs)"

    # --- maintenance -----------------------------------------------------------------------------

    def _lifecycle(self, ns: str) -> LifecycleConfig:
        """Seed 003 TTLs, with the user's per-type retention horizons taking precedence."""
        prefs = self._prefs.get(ns)
        cfg = LifecycleConfig()
        if prefs is None or not prefs.retention_days:
            return cfg
        ttl = dict(cfg.ttl)
        for mtype, days in prefs.retention_days.items():
            ttl[KIND_BY_TYPE[mtype]] = timedelta(days=days)
        return cfg.model_copy(update={"ttl": ttl})

    def _stage_merges(self, txn: _Txn, ns: str, merges: Sequence[Merge]) -> None:
        """Dedup (seed 003): archive each duplicate; the kept memory records what it absorbed
        (``metadata["also_from"]``) and ``supersedes`` it; the merge log is the audit."""
        step, now = self._step(txn, ns), self.clock.now()
        absorbed: dict[str, list[str]] = {}
        for m in merges:
            absorbed.setdefault(m.kept_id, []).append(m.dropped_id)
        self._stage_archive(txn, ns, [Eviction(m.dropped_id, self._state.nodes[m.dropped_id].weight,
                                               m.cosine, {"cosine": m.cosine}, m.rationale)
                                      for m in merges], "dedup", {"threshold": merges[0].threshold})
        for kept_id, dropped in sorted(absorbed.items()):
            kept = self._state.nodes[kept_id]
            also = sorted({*kept.metadata.get("also_from", []), *dropped})
            edges = [Edge(source=kept_id, predicate=Predicate.SUPERSEDES, target=d, step=step)
                     for d in dropped]
            self._stage_put(txn, kept.model_copy(update={"metadata": {**kept.metadata,
                                                                      "also_from": also}}),
                            edges=edges)
            txn.audit.add(op=AuditOp.METADATA, namespace=ns, node_ids=[kept_id],
                          policy="dedup", step=step, at=now, params={"absorbed": dropped},
                          rationale=f"absorbed {len(dropped)} duplicate(s): {', '.join(dropped)}")

    def _maintain_namespace(self, ns: str, *, ttl: bool, graduated: bool, dedup: bool,
                            reflect: bool) -> dict[str, int]:
        """One namespace's maintenance phases in one write (seed 003 order)."""
        txn, report = self._begin(), {"expired": 0, "archived": 0, "merged": 0, "summarised": 0}
        view, taken = self._view(txn, ns), set[str]()
        cfg = self._lifecycle(ns)
        if ttl:
            evs = plan_expiry(view, view.now, cfg, exclude=frozenset(taken))
            self._stage_archive(txn, ns, evs, "ttl", {})
            taken.update(e.node_id for e in evs)
            report["expired"] = len(evs)
        compact: tuple[str, ...] = ()
        if graduated:
            gp = plan_graduated(view, view.now, cfg, exclude=frozenset(taken))
            self._stage_archive(txn, ns, gp.archive, "graduated", {})
            taken.update(e.node_id for e in gp.archive)
            report["archived"], compact = len(gp.archive), gp.compact
        if dedup:
            merges = plan_dedup(view, self.config.dedup_threshold, exclude=frozenset(taken))
            if merges:
                self._stage_merges(txn, ns, merges)
            taken.update(m.dropped_id for m in merges)
            report["merged"] = len(merges)
        if reflect and (compact or view.used >= self.config.reflect_at * view.budget):
            reflector = ReflectionSummaryPolicy(summariser=self.summariser)
            plan = reflector.consolidate(view, max(1, view.used), frozenset(taken))
            for summary in plan.summaries:
                self._stage_summary(txn, ns, summary, "reflection", reflector.params())
            report["summarised"] = len(plan.summaries)
        if txn.audit.events:
            self._commit(txn)
        return report


class _Lease:
    """The writer lease of a store on a shared backend: a ``lease`` record in ``meta``.

    Taken on open (refused while another holder's lease is unexpired), checked before
    every write (a write fails once someone else holds it), renewed by a write of its own
    before a batch once a third of ``ttl`` has passed, released on close. Every take and
    renewal is read back. When a rival may be taking it at the same time (a takeover of
    another holder's expired lease, a renewal in the lease's last third) it must be
    written within :data:`_LEASE_STALL` of the read that allowed it (timed on the
    monotonic clock) and the read-back waits :data:`_LEASE_SETTLE`, so of two contenders
    only the last to write goes on; an earlier renewal must be written before the lease
    it read could expire. A take that fails anywhere after its write leaves the lease
    *lost*, as does a check that finds another holder: every later write is refused until
    the store is reopened. Only after a take does the store replay the batches left
    behind. The lease is a record, not a compare-and-set (see docs/deployment.md for what
    that leaves open). Expiry is wall-clock time, not the store's clock: a lease is about
    processes, not memories.
    """

    def __init__(self, backend: VectorBackend, ttl: float) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl >= _LEASE_MIN_TTL:
            raise ConfigError(f"lease_ttl must be a number of seconds of at least "
                              f"{_LEASE_MIN_TTL}, not {ttl!r}")
        self.backend, self.ttl = backend, float(ttl)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.renewed = 0.0
        self.lost = False

    def _current(self) -> dict[str, Any]:
        found = self.backend.get(codec.META, [codec.meta_id("lease")])
        return codec.decode_meta(found[0])[1] if found else {}

    def _take(self, read_at: float, settle: float, bound: float | None) -> None:
        """Write this holder's record (allowed by a read at monotonic ``read_at``; the
        write must return within ``bound`` seconds of it, if given), wait ``settle``, read
        it back. Lost unless all of it succeeds."""
        at, self.lost = time.time(), True
        self.backend.apply(WriteBatch().upsert(codec.META, [codec.meta_record(
            "lease", {"holder": self.holder, "expires": at + self.ttl})]))
        if bound is not None and time.monotonic() - read_at > bound:
            self.release()
            raise ConflictError(
                f"taking this store's lease took over {max(bound, 0.0):.1f} s (a slow server "
                "or a paused process), so another writer may have taken it meanwhile; "
                "nothing was written: open the store again")
        if settle:
            time.sleep(settle)
        holder = self._current().get("holder")
        if holder != self.holder:
            raise ConflictError(f"another writer ({holder}) took this store's lease at the same "
                                "moment; nothing was written: open it with read_only=True to "
                                "read, or again once that writer has closed")
        self.renewed, self.lost = at, False

    def acquire(self) -> None:
        read_at = time.monotonic()
        cur = self._current()
        other = cur.get("holder", self.holder) != self.holder
        left = float(cur.get("expires", 0)) - time.time()
        if other and left > 0:
            raise ConflictError(
                f"another writer ({cur.get('holder')}) holds this store's lease for {left:.0f} "
                "more seconds; open it with read_only=True to read, or, if that writer "
                "crashed, open it again once the lease has expired")
        # contended only when taking another's expired lease (a fresh one: item 5 of the
        # deployment guide's limits)
        self._take(read_at, *((_LEASE_SETTLE, _LEASE_STALL) if other else (0.0, None)))

    def check(self) -> None:
        """Refuse a write unless this store holds the lease; renew it first when due."""
        if self.lost:
            raise ConflictError("this store lost its writer lease (another writer took it, "
                                "or a renewal failed or stalled); nothing was written: close "
                                "and reopen the store")
        read_at, age = time.monotonic(), time.time() - self.renewed
        if self._current().get("holder") != self.holder:
            self.lost = True
            raise ConflictError("another writer has taken this store's lease (this one was "
                                "idle past it); nothing was written: close and reopen the store")
        if age > self.ttl * 2 / 3:  # its last third: a rival's clock may call it expired
            self._take(read_at, _LEASE_SETTLE, _LEASE_STALL)
        elif age > self.ttl / 3:  # it must land while the lease read still holds
            self._take(read_at, 0.0, self.ttl - age - _LEASE_STALL)

    def release(self) -> None:
        if self._current().get("holder") == self.holder:
            self.backend.apply(WriteBatch().delete(codec.META, [codec.meta_id("lease")]))


# --- opening by path --------------------------------------------------------------------------


def _make_policy(spec: str, params: Mapping[str, Any]) -> Policy:
    """A policy by name; ``"name:ARG"`` passes ARG as ``path`` (``policy="learned:model.json"``)."""
    name, _, arg = spec.partition(":")
    return make_policy(name, **{**params, **({"path": arg} if arg else {})})


def _ephemeral_backend() -> VectorBackend:
    """The backend of ``MemoryStore()`` without one: in-memory, nothing on disk."""
    from mars_core.backends.memory import InMemoryBackend

    return InMemoryBackend()


def _read_manifest(backend: VectorBackend, *, create: bool = True) -> dict[str, Any] | None:
    """The manifest of the store in ``backend`` (never sealed), or ``None`` (no store yet;
    a writer (``create``) makes the ``meta`` collection, a reader makes nothing)."""
    if create:
        backend.ensure_collection(codec.META, 0)
    try:
        found = backend.get(codec.META, [codec.meta_id("manifest")])
    except NotFoundError:
        return None
    return codec.decode_meta(found[0])[1] if found else None


def _embedder_for_manifest(manifest: Mapping[str, Any] | None) -> Embedder:
    """The embedder a store was built with (rebuilt from its name), or the best installed."""
    from mars_core.embedders import default_embedder, embedder_for

    name = (manifest or {}).get("embedder", {}).get("name")
    return embedder_for(name) if isinstance(name, str) else default_embedder()


def _keys_for(directory: Path, keys: str | os.PathLike[str] | None, encrypt: bool | None,
              manifest: Mapping[str, Any] | None, *, auto: bool,
              backend: VectorBackend) -> str | os.PathLike[str] | None:
    """The key directory :meth:`StoreCore.open` passes on (``None``: no encryption)."""
    if keys is not None:
        if encrypt is False:
            raise ConfigError("encrypt=False contradicts keys_path=; drop one of them")
        return keys
    default = directory / KEYS_DIR
    if manifest is not None:
        encrypted = manifest.get("encryption") is not None
        if encrypt is not None and encrypt != encrypted:
            raise ConfigError(
                f"this store was created {'with' if encrypted else 'without'} encryption and "
                f"cannot be opened with encrypt={encrypt}: export it to JSON-LD and import "
                "that into a new store")
        return default if encrypted and default.is_dir() else None
    if encrypt is None:
        encrypt = auto and not purges_physically(backend)
        if encrypt and importlib.util.find_spec("cryptography") is None:
            log.warning("the crypto extra is not installed: erasure cannot remove plaintext "
                        "from %s's files (pip install 'mars-memory[crypto]')", backend.name)
            encrypt = False
    return default if encrypt else None


def _check_filters(max_sensitivity: object, since: object, until: object,
                   conversation: object) -> None:
    """A retrieve's filters, checked before anything is read (:class:`ValidationError`)."""
    if max_sensitivity is not None and (
            isinstance(max_sensitivity, bool) or not isinstance(max_sensitivity, int | float)
            or not 0.0 <= max_sensitivity <= 1.0):
        raise ValidationError("max_sensitivity must be a number in [0, 1]")
    for name, when in (("since", since), ("until", until)):
        if when is not None and not isinstance(when, datetime):
            raise ValidationError(f"{name} must be a datetime (naive ones are UTC) or None")
    if conversation is not None and not isinstance(conversation, str):
        raise ValidationError('conversation must be a string ("": no conversation) or None')
