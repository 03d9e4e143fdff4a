"""Copy a whole store to another record store: SQLite to PostgreSQL, and back.

:func:`copy_store` (``mars copy SOURCE DESTINATION``) moves everything a store keeps,
not only what an export carries: the memories with their exact vectors, statistics and
metadata, the edges, every audit event (the chains verify, and an audit anchor kept
before the copy, ``store.audit.head``, holds on the copy), each namespace's record
(interaction and recency counters, the policy's learned state, the differential-privacy
accountant, the privacy preferences), the memory counter and the manifest (the store's
id, its id secret and its audit key's id: new memories are numbered after the copied
ones, and the audit key is the source's).

How it goes:

1. The source is opened to read (``read_only``: a writer may go on beside it) and its
   audit trail verified, in one snapshot that the copy then reads; a trail that does not
   verify is refused (:class:`~mars_core.errors.CorruptStoreError`), nothing written.
2. The destination is written in **one transaction**, which first makes sure it holds
   no store (:class:`~mars_core.errors.DestinationNotEmptyError` otherwise: a manifest,
   a namespace or an audit event; a directory with other files). An error, an
   interruption or a killed process before the commit leaves the destination as it was
   (the empty tables of a PostgreSQL schema the copy created stay, as does the record
   file of a new directory: they hold no store, and a copy may go there again).
3. The destination is opened with ``index`` (its vector index is a new generation of the
   store's, so an index that served the source is never taken for this one's: it is
   built from the copied records, or on demand for numpy) and checked: its audit trail
   verifies up to the source's head, and its counts per namespace, its audit events and
   its counter equal the source's.

The audit key is not copied (it is never in a store): the destination uses the
source's, from ``audit_key=``, ``$MARS_AUDIT_KEY`` or the key ring of this machine
(:mod:`mars_core.keys`), found under the store's id, which the copy keeps. Processes on
other machines need the key file or ``$MARS_AUDIT_KEY`` (:attr:`CopyReport.key`).

Examples:
    >>> import tempfile
    >>> from mars_core import MemoryStore
    >>> key = bytes(range(32))
    >>> src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> with MemoryStore.open(src, index="numpy", audit_key=key) as store:
    ...     _ = store.add("Ana moved to Lisbon", namespace="users/ana")
    >>> report = copy_store(src, dst, index="numpy", audit_key=key)
    >>> report.memories, report.namespaces, report.audit_events
    (1, 1, 1)
    >>> with MemoryStore.open(dst, index="numpy", audit_key=key) as copy:
    ...     [n.content for n in copy.list(namespace="users/ana")]
    ['Ana moved to Lisbon']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mars_core import layout
from mars_core._env import env
from mars_core.errors import (
    ConfigError,
    CorruptStoreError,
    DestinationNotEmptyError,
    MarsError,
)
from mars_core.index.base import VectorIndex
from mars_core.index.numpy import NumpyIndex
from mars_core.progress import ProgressFn, checked, report
from mars_core.storage.base import AddEdges, AppendAudit, InsertMemory, RecordStore, RecordTxn
from mars_core.storage.postgres import PostgresRecordStore, is_postgres_url, shown_url
from mars_core.storage.sqlite import SQLiteRecordStore
from mars_core.store import MemoryStore

__all__ = ["CopyReport", "copy_store"]

_DROPPED = ("compact_pending",)
"""Manifest entries about the source's own index, which the copy does not take."""


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What :func:`copy_store` copied, and how the copy checked out.

    Attributes:
        source: where the store was (a URL without its password).
        destination: where it is now.
        namespaces: namespaces copied (with a record or memories).
        memories: memories copied (active and archived).
        edges: edges copied.
        audit_events: audit events copied; the copy's chains verify.
        head: the audit anchor of the source at the copy, which the copy's trail
            holds (``mars verify --head HEAD`` on either).
        index: the destination's index, as ``stats()["index_choice"]`` says.
        key: where the destination's audit key comes from, and what other machines
            need.

    Examples:
        >>> CopyReport("a", "b", 1, 2, 0, 3, "mars-head-2:3:x", "numpy", "caller").memories
        2
    """

    source: str
    destination: str
    namespaces: int
    memories: int
    edges: int
    audit_events: int
    head: str
    index: str
    key: str


def _shown(where: str | os.PathLike[str]) -> str:
    text = os.fspath(where)
    return shown_url(text)[0] if is_postgres_url(text) else text


def _records(where: str | os.PathLike[str], *, read_only: bool,
             lock_timeout: float) -> RecordStore:
    """The record store at ``where`` (a directory or a ``postgresql://`` URL).

    Raises:
        ConfigError: ``read_only`` and no store there, or a path that is a file.
        CorruptStoreError: a directory of mars-memory 0.1.
    """
    text = os.fspath(where)
    if is_postgres_url(text):
        return PostgresRecordStore(text, read_only=read_only, lock_timeout=lock_timeout)
    directory = Path(text)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory} is a file; a store is a directory (or a "
                          "postgresql:// URL)")
    layout.refuse_old_layout(directory)
    if read_only and not layout.holds_store(directory):
        raise ConfigError(f"there is no store at {directory} to copy")
    others = sorted(p.name for p in directory.iterdir()
                    if not p.name.startswith(layout.RECORDS_FILE)) \
        if not read_only and directory.is_dir() else []
    if others:
        raise DestinationNotEmptyError(
            f"{directory} holds other files ({', '.join(others[:5])}); a copy goes to a new "
            "or empty directory, and nothing was written")
    return SQLiteRecordStore(directory / layout.RECORDS_FILE, read_only=read_only,
                             lock_timeout=lock_timeout)


def _refuse_filled(tx: RecordTxn, where: str) -> None:
    """Refuse a destination that holds anything of a store (checked in the copy's
    transaction, after its manifest is held).

    Raises:
        DestinationNotEmptyError: it holds a manifest, a namespace or an audit event.
    """
    found = [what for what, there in (
        ("a store (its manifest)", tx.manifest() is not None),
        ("namespaces or memories", bool(tx.namespace_names())),
        ("audit events", tx.audit_size() > 0)) if there]
    if found:
        raise DestinationNotEmptyError(
            f"{where} already holds {' and '.join(found)}; a copy goes to a place that "
            "holds no store, and nothing was written: name another (a new directory, or "
            "?schema=NAME for another schema of the database), or remove that store first")


def _manifest(source: dict[str, Any], records: RecordStore) -> dict[str, Any]:
    """The destination's manifest: the source's, with its records named and its index
    a new generation (built from the records when the copy is opened)."""
    manifest = {k: v for k, v in source.items() if k not in _DROPPED}
    recorded = dict(manifest.get("index") or {})
    manifest["index"] = {"name": "numpy", "generation": int(recorded.get("generation", 0)) + 1,
                         "choice": "numpy (a copy, until it is opened with its index)",
                         "server": False}
    manifest["records"] = records.name
    return manifest


def _counts(store: MemoryStore) -> tuple[Any, ...]:
    """What the source and its copy must agree on: per namespace its memories, tokens
    and interaction counter, and the audit events."""
    stats = store.stats()
    return ({ns: (s["active"], s["archived"], s["tokens"], s["step"])
             for ns, s in stats["namespaces"].items()}, stats["audit_events"])


def _write(source: RecordTxn, destination: RecordStore, where: str,
           progress: ProgressFn | None) -> tuple[int, int, int, int]:
    """Copy every row of ``source`` to ``destination`` in one transaction: ``(namespaces,
    memories, edges, audit events)``."""
    manifest = source.manifest()
    if manifest is None:
        raise ConfigError("the source holds no store to copy")
    names = source.namespace_names()
    total = sum(t.active + t.archived for t in source.totals().values())
    memories = edges = 0
    with destination.write() as tx:
        _refuse_filled(tx, where)  # holds the manifest (PostgreSQL) till the commit
        report(progress, "store", 0, total)
        for name in names:
            nodes = source.memories(name)
            vectors = source.vectors([n.id for n in nodes])
            for node in nodes:
                tx.apply([InsertMemory(node, vectors[node.id])])
                memories += 1
                report(progress, "store", memories, total)
            links = source.edges(name)
            tx.apply([AddEdges(name, tuple(links))])
            edges += len(links)
            record = source.namespace(name)
            if record is not None:
                tx.put_namespace(record)
        events = source.audit()
        tx.apply([AppendAudit(tuple(events))])
        tx.set_counter(source.counter())
        tx.put_manifest(_manifest(manifest, destination))
        report(progress, "write", 0, total)
    report(progress, "write", total, total)
    return len(names), memories, edges, len(events)


def _key_note(manifest: dict[str, Any], audit_key: bytes | None) -> str:
    from mars_core.keys import KEY_ENV, KeyRing

    if audit_key is not None or env(KEY_ENV) is not None:
        return ("the audit key you gave (audit_key= or $MARS_AUDIT_KEY): every process "
                "that opens the copy needs it")
    if manifest.get("audit_key") == "ring":
        return (f"this machine's key file {KeyRing().path(str(manifest['store_id']))}: copy "
                "it to every machine that opens the copy (or give them $MARS_AUDIT_KEY)")
    return "the key the store records"


def copy_store(source: str | os.PathLike[str], destination: str | os.PathLike[str], *,
               index: layout.IndexKind | str | VectorIndex = "auto",
               audit_key: bytes | None = None, lock_timeout: float = 5.0,
               progress: ProgressFn | None = None) -> CopyReport:
    """Copy the store at ``source`` to ``destination``, which holds no store (see the
    module): one transaction on the destination, then the copy is opened with ``index``
    and checked.

    Args:
        source: a store directory or a ``postgresql://`` URL; read only.
        destination: a directory or a ``postgresql://`` URL (``?schema=NAME``) that holds
            no store: a new or empty directory, a schema not there yet or left empty.
        index: the destination's index, as :meth:`MemoryStore.open` takes it
            (``"auto"``: numpy on PostgreSQL, the embedded default in a directory; or a
            server, ``"chroma://HOST:PORT?prefix=NAME"``, ``"qdrant+http://..."``).
        audit_key: the store's audit key, when it was created with one (else
            ``$MARS_AUDIT_KEY``, else this machine's key ring).
        lock_timeout: seconds to wait for the destination (and a source writer).
        progress: ``progress(stage, done, total)`` (:mod:`mars_core.progress`):
            ``store`` (memories copied), ``write`` (the commit), then ``index`` when
            the destination's index is built; if it raises before the commit, nothing
            is written.

    Returns:
        What was copied (:class:`CopyReport`).

    Raises:
        DestinationNotEmptyError: the destination holds a store (or any of its rows);
            nothing was written.
        CorruptStoreError: the source's audit trail does not verify (nothing written),
            or the copy does not check out after its commit (the message says what
            differs; remove the copy).
        ConfigError: no store at ``source``, a bad ``index``, or the audit key is
            missing.
        StorageUnavailableError: a PostgreSQL server cannot be reached.
    """
    progress = checked(progress)
    shown_source, shown_destination = _shown(source), _shown(destination)
    if is_postgres_url(os.fspath(destination)):
        layout.check_shared_kind(index)
    else:
        layout.check_kind(index)
    records = _records(source, read_only=True, lock_timeout=lock_timeout)
    with MemoryStore(records, NumpyIndex(), read_only=True, audit_key=audit_key) as src, \
            records.read() as snapshot:  # the store's calls below read this snapshot
        trail = src.verify()
        if not trail.ok:
            raise CorruptStoreError(
                f"the audit trail of {shown_source} does not verify ({trail.reason}); "
                "nothing was copied: restore the source from a backup first")
        head, expected = src.audit.head, _counts(src)
        manifest = snapshot.manifest() or {}
        target = _records(destination, read_only=False, lock_timeout=lock_timeout)
        try:
            namespaces, memories, edges, events = _write(snapshot, target,
                                                         shown_destination, progress)
        finally:
            target.close()
    try:
        with MemoryStore.open(destination, index=index, audit_key=audit_key,
                              lock_timeout=lock_timeout) as copy:
            checked_trail = copy.verify(expected_head=head)
            found = _counts(copy)
            choice = str(copy.stats()["index_choice"])
            copied_head = copy.audit.head
    except MarsError as exc:
        raise CorruptStoreError(f"the copy at {shown_destination} was committed but does not "
                                f"open ({exc}); remove it and copy again") from exc
    if not checked_trail.ok or copied_head != head or found != expected:
        why = checked_trail.reason if not checked_trail.ok else \
            "another audit head" if copied_head != head else "other counts"
        raise CorruptStoreError(f"the copy at {shown_destination} does not match "
                                f"{shown_source} ({why}); remove it and copy again")
    return CopyReport(shown_source, shown_destination, namespaces, memories, edges, events,
                      head, choice, _key_note(manifest, audit_key))
