"""Opening a store: its manifest and its audit key.

:class:`Manifest` reads a store's manifest when it opens — creates it for a new store, or
adopts a reopened one (its format, embedder and configuration checked, the recorded
configuration taken unless the caller gave one), finds the audit key (the caller's, the
key ring's, :mod:`mars_core.keys`) and records a new configuration with a ``config``
audit event — and keeps what later calls ask of it: the index identity and the pending
budget fit. The engine (:class:`~mars_core.engine.engine.Engine`) starts from what it
settled (:class:`Opened`).

Examples:
    >>> FORMAT_VERSION
    2
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mars_core.audit import AuditChain, AuditOp
from mars_core.clock import Clock
from mars_core.config import StoreConfig, parse_config
from mars_core.embeddings import Embedder
from mars_core.engine.keyed import KeyedIndex
from mars_core.engine.trail import AUDIT_FORMAT, enlist, sealed
from mars_core.errors import ConfigError, CorruptStoreError, EmbeddingMismatchError
from mars_core.keys import KEY_ENV, KeyRing, check_key, env_key, key_id
from mars_core.knowledge.enrich import Enricher
from mars_core.storage.base import AppendAudit, NamespaceRecord, RecordStore, RecordTxn

__all__ = ["FIT_PENDING", "FORMAT_VERSION", "Manifest", "Opened", "recorded_config"]

FORMAT_VERSION = 2
"""The store format: 2 is the record store + derived index layout (1: vector collections)."""

FIT_PENDING = "fit_pending"
"""Manifest key set, in the transaction that records new budgets, until every namespace
is within its budget again: an open that finds it brings them under (a crash in between
is finished by the next open)."""


def _budgets(config: object) -> tuple[object, object, object]:
    """The budget fields of a recorded configuration (a dict), for comparison."""
    cfg = config if isinstance(config, Mapping) else {}
    return cfg.get("budget"), cfg.get("namespace_budgets"), cfg.get("elastic")


def recorded_config(manifest: Mapping[str, Any],
                    overrides: Mapping[str, Any] | None = None) -> StoreConfig:
    """The configuration a store recorded (with a caller's keyword ``overrides`` on top),
    checked as strictly as a caller's.

    Raises:
        ConfigError: it is not valid (a store written by a version that accepted a value
            now refused, such as a namespace budget of 0, or an edited manifest); the
            message says how to replace it.
    """
    try:
        return parse_config({**manifest.get("config", {}), **(overrides or {})})
    except ConfigError as exc:
        raise ConfigError(
            f"the configuration recorded in this store is refused ({exc}); reopen the "
            "store once, not read-only, with a valid configuration (e.g. "
            "MemoryStore.open(path, budget=8000, namespace_budgets={...})): it replaces "
            "the recorded one") from None

@dataclass(frozen=True)
class Opened:
    """What opening read: the manifest, the audit key, the record store's counter."""

    manifest: dict[str, Any]
    key: bytes
    seq: int


class Manifest:
    """A store's manifest, as opening reads it (see the module).

    Args:
        records: the system of record.
        index: the vector index (its name and choice are recorded).
        embedder: the store's embedder (checked against a reopened store's).
        config: the configuration (``explicit``: given by the caller, so it replaces a
            reopened store's recorded one); :attr:`config` is the one the store runs on.
        check_policy: raises ConfigError when a configuration's policy is refused.
        clock: wall-clock source (of a new configuration's audit event).
        read_only: a reader: the manifest is only read.
        note: how the index was chosen.
        embedder_note: how the embedder of a new store was chosen.
        overrides: keyword fields given without a config object (applied on top of a
            reopened store's recorded configuration).
    """

    def __init__(self, records: RecordStore, index: KeyedIndex, embedder: Embedder, *,
                 config: StoreConfig, check_policy: Callable[[StoreConfig], object],
                 clock: Clock, read_only: bool, note: str, embedder_note: str,
                 overrides: Mapping[str, Any] | None) -> None:
        self.records, self.index, self.embedder = records, index, embedder
        self.config, self.check_policy, self.clock = config, check_policy, clock
        self.read_only, self.note, self.overrides = read_only, note, overrides
        self.embedder_note = embedder_note
        self.enricher = Enricher(config.nlp)
        self.ring = KeyRing() if records.capabilities.durable else None
        self.store_id = ""
        self.fit_pending = False
        """The budgets changed on reopen and some namespace may not fit yet."""

    def open(self, audit_key: bytes | None, explicit: bool) -> Opened:
        """Read (a reader) or create or adopt (a writer) the manifest, in one transaction.

        Raises:
            ConfigError: a reader of no store; a configuration, policy or audit key
                refused.
            CorruptStoreError: a format this version cannot read, or records without a
                manifest.
            EmbeddingMismatchError: another embedder than the store's.
        """
        given = check_key(audit_key) if audit_key is not None else env_key()
        if self.read_only:
            with self.records.read() as tx:
                manifest = tx.manifest()
                if manifest is None:
                    raise ConfigError(f"read_only=True opens an existing store, and there is "
                                      f"none at {self.records.location}; open it once "
                                      "without read_only to create it")
                self._adopt(manifest, explicit=False)
                key = self._key(manifest, given, None)
                seq = tx.counter()
        else:
            with self.records.write() as tx:
                # the default namespace first, as every writer holds namespaces before
                # the manifest (a new configuration writes an event into it)
                tx.lock_namespaces([self.config.default_namespace])
                manifest = tx.manifest()
                if manifest is None:
                    _refuse_headless(tx, self.records.location)
                    manifest, key = self._create(tx, given)
                else:
                    self._adopt(manifest, explicit)
                    key = self._key(manifest, given, tx)
                    self._record_changes(tx, manifest, explicit, key)
                seq = tx.counter()
            self.fit_pending = bool(manifest.get(FIT_PENDING))
        self.store_id = str(manifest["store_id"])
        return Opened(manifest, key, seq)

    def index_identity(self, embedder: Embedder, generation: int) -> str:
        """What the vector index is bound as: the store, its embedder and the index's
        generation (``:keyed``: an index written before it held keyed tokens, not names,
        is another one, rebuilt from the records)."""
        return f"{self.store_id}:{embedder.name}:{embedder.dim}:{generation}:keyed"

    def _create(self, tx: RecordTxn, given: bytes | None) -> tuple[dict[str, Any], bytes]:
        """A new store's manifest: a random store id and id secret (the seed's, when
        configured), and the audit key's id — the key itself goes to the key ring, or
        nowhere when the caller gave it (:mod:`mars_core.keys`)."""
        self.check_policy(self.config)  # refuse a bad one now
        store_id = os.urandom(16).hex()
        seed = self.config.seed
        key = given if given is not None else \
            self.ring.create(store_id) if self.ring is not None else os.urandom(32)
        manifest = {**self.fields(), "store_id": store_id,
                    "id_secret": str(seed) if seed is not None else os.urandom(16).hex(),
                    "audit_key_id": key_id(key),
                    "audit_key": "caller" if given is not None or self.ring is None else "ring",
                    "audit_format": AUDIT_FORMAT}
        manifest = enlist(AuditChain(key), manifest)  # no namespace yet
        tx.put_manifest(manifest)
        return manifest, key

    def _key(self, manifest: dict[str, Any], given: bytes | None,
             tx: RecordTxn | None) -> bytes:
        """The audit key of a reopened store: the caller's, else the key ring's; a key
        recorded in the manifest by an earlier build moves to the ring (when writing).

        Raises:
            ConfigError: no key, or another store's.
        """
        store_id, recorded = str(manifest["store_id"]), manifest.get("audit_key")
        legacy = bytes.fromhex(recorded) if isinstance(recorded, str) and \
            recorded not in ("caller", "ring") else None
        key = given or legacy or (self.ring.load(store_id) if self.ring is not None else None)
        if key is None:
            where = f"in {self.ring.path(store_id)}" if self.ring is not None else "here"
            raise ConfigError(
                f"the audit key of this store is not {where}: pass audit_key= (or set "
                f"${KEY_ENV}) if the store was created with one, else copy its key file from "
                "the machine that created it (mars_core.keys)")
        if manifest.get("audit_key_id", key_id(key)) != key_id(key):
            raise ConfigError("this audit key is not the one this store was created with "
                              f"(key id {manifest.get('audit_key_id')}); nothing was changed")
        if legacy is not None and tx is not None and self.ring is not None and given is None:
            if self.ring.load(store_id) is None:
                self.ring.save(store_id, legacy)
            manifest.update(audit_key="ring", audit_key_id=key_id(legacy))
            tx.put_manifest(manifest)
        return key

    def budgets_fitted(self) -> None:
        """Every namespace is within its budget: take the pending mark off the manifest."""
        with self.records.write() as tx:
            manifest = dict(tx.manifest() or {})
            if manifest.pop(FIT_PENDING, None) is not None:
                tx.put_manifest(manifest)
        self.fit_pending = False

    def fields(self, generation: int = 0) -> dict[str, Any]:
        """The manifest fields this store's configuration determines."""
        return {"format_version": FORMAT_VERSION, "token_counter": self.config.token_counter,
                "embedder": {"name": self.embedder.name, "dim": self.embedder.dim,
                             "choice": self.embedder_note},
                "index": {"name": self.index.name, "generation": generation,
                          "choice": self.note, "server": self.index.capabilities.shared},
                "records": self.records.name, "id_scheme": "uuid5(id_secret:counter)",
                "signals": self.enricher.name, "config": self.config.model_dump(mode="json")}

    def _adopt(self, manifest: Mapping[str, Any], explicit: bool) -> None:
        """Check a reopened store's manifest; take its configuration unless given one."""
        if manifest.get("format_version") != FORMAT_VERSION:
            raise CorruptStoreError(
                f"store format {manifest.get('format_version')} is not supported by this "
                f"version (format {FORMAT_VERSION}); export it with the version that wrote "
                "it (mars export) and import the JSON-LD")
        emb = manifest.get("embedder", {})
        if (emb.get("name"), emb.get("dim")) != (self.embedder.name, self.embedder.dim):
            raise EmbeddingMismatchError(
                f"this store was built with embedder {emb.get('name')!r} (dim "
                f"{emb.get('dim')}), not {self.embedder.name!r} (dim {self.embedder.dim}); "
                "open it with the original embedder, then call store.reembed(new_embedder)")
        # how the store's embedder was chosen when it was created (or re-embedded): a
        # reopen does not change it, so stats() reads the same before and after one
        self.embedder_note = str(emb.get("choice", self.embedder_note))
        if not explicit or self.overrides is not None:
            # keywords alone apply on top of what the store recorded, not of the defaults
            self.config = recorded_config(manifest, self.overrides if explicit else None)
            self.enricher = Enricher(self.config.nlp)
        if manifest.get("token_counter") != self.config.token_counter:
            raise ConfigError(
                f"this store counts tokens with {manifest.get('token_counter')!r}; "
                f"token_counter={self.config.token_counter!r} would change every weight")
        self.check_policy(self.config)  # refuse a bad one now

    def _record_changes(self, tx: RecordTxn, manifest: dict[str, Any], explicit: bool,
                        key: bytes) -> None:
        """Write a new configuration or index choice into the manifest (a new
        configuration with a ``config`` audit event)."""
        generation = int((manifest.get("index") or {}).get("generation", 0))
        wanted = {**manifest, **self.fields(generation)}
        if explicit and _budgets(manifest.get("config")) != _budgets(wanted["config"]):
            wanted[FIT_PENDING] = True  # cleared once every namespace fits (Writer.fit_budgets)
        if wanted == manifest:
            return
        if explicit and manifest.get("config") != wanted["config"]:
            chain = AuditChain(key)
            ns = self.config.default_namespace
            tx.lock_namespaces([ns])  # the recorded configuration may name another one
            found = tx.namespace(ns)
            record = found or NamespaceRecord(ns)
            txn = chain.begin(ns, record.audit_count, record.audit_head)
            txn.add(op=AuditOp.CONFIG, namespace=ns, params=wanted["config"], step=record.step,
                    at=self.clock.now(), rationale="store reopened with a new configuration")
            tx.apply([AppendAudit(tuple(txn.events))])
            tx.put_namespace(sealed(chain, NamespaceRecord(
                ns, record.version + 1, record.step, record.touch, txn.next_seq, txn.head,
                record.state)))
            if found is None and int(wanted.get("audit_format", 1)) >= AUDIT_FORMAT:
                wanted = enlist(chain, wanted, [ns])  # a new namespace, in the sealed list
        tx.put_manifest(wanted)
        manifest.update(wanted)


def _refuse_headless(tx: RecordTxn, location: str) -> None:
    """Refuse a record store that holds records but no manifest (it was damaged: a new
    manifest would claim them for another store, with another key).

    Raises:
        CorruptStoreError: records without a manifest.
    """
    if tx.audit_size() or tx.namespace_names():
        raise CorruptStoreError(
            f"the record store at {location} holds records but its manifest is missing: it "
            "is damaged; restore it from a backup (nothing was changed)")
