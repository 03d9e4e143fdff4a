"""Erasure by name leaves no name behind (issue 30, Build 5), on every record store and
index: after erasing a person (named in content, metadata, a speaker and a conversation
id), a conversation and a whole namespace, every file under the store — the record
store's database and write-ahead log, the index's files — and, for PostgreSQL, a
``pg_dump`` of the store's schema is scanned for every erased string, the names
included: none may be found. The store's own outputs (``list``, the export, the audit
events) hold none either, the audit still verifies, and the receipts say what they
checked.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mars_core import FakeClock, HashingEmbedder, MemoryStore
from mars_core.testing import StoreFactory

KEY = bytes(range(32))
PERSON = "Adaeze Okafor"
CONVERSATION = "chat-with-zuriel-okafor"
NAMESPACE = "clients/ngozi-eze-files"
SECRETS = {
    "person": PERSON,
    "person's surname": "Okafor",
    "person's phone": "555-0142-8899",
    "conversation id": CONVERSATION,
    "conversation's words": "Quillfeather Lane",
    "namespace": NAMESPACE,
    "namespace's words": "ngozi-eze",
    "namespace's memory": "Zanzibar ferry timetable",
}
"""Every string an erasure below removes: none may remain anywhere."""
KEPT = "the weather in Lisbon"


def _fill(store: MemoryStore) -> None:
    store.add(f"{PERSON} called from 555-0142-8899", namespace="support")
    store.add("Met a new client for lunch", namespace="support",
              metadata={"attendee": PERSON, "tags": ["lunch"]})
    store.observe("user", "I will send the contract on Friday", speaker=PERSON,
                  namespace="support", conversation_id="chat-2")
    for text in ("Meet me at Quillfeather Lane tomorrow", "The parcel is ready"):
        store.observe("user", text, namespace="support", conversation_id=CONVERSATION)
    store.add("Zanzibar ferry timetable, pier 3", namespace=NAMESPACE,
              metadata={"folder": "ngozi-eze"})
    store.observe("user", "Ngozi asked about the ferry", namespace=NAMESPACE,
                  conversation_id="ngozi-eze-1")
    for i in range(12):
        store.add(f"{KEPT}, note {i}", namespace="support")
    store.retrieve("who called", namespace="support")


def _erase(store: MemoryStore) -> list[str]:
    receipts = [store.erase(conversation=CONVERSATION, namespace="support"),
                store.erase(entity=PERSON, namespace="support"),
                store.erase(namespace=NAMESPACE)]
    assert [len(r.erased) for r in receipts] == [2, 4, 2], [r.erased for r in receipts]
    return [r.physical for r in receipts]


def _found(blob: bytes, where: str) -> list[str]:
    low = blob.lower()
    return [f"{where}: {what}" for what, needle in SECRETS.items()
            if needle.lower().encode() in low]


def scan_files(root: Path) -> list[str]:
    """``file: secret`` for every file under ``root`` that holds a secret (any case)."""
    return [hit for path in sorted(root.rglob("*")) if path.is_file()
            for hit in _found(path.read_bytes(), str(path.relative_to(root)))]


def _outputs(store: MemoryStore) -> list[str]:
    """What the store hands out: every memory, the export, the audit events."""
    memories = [n.model_dump(mode="json") for ns in store.namespaces()
                for n in store.list(ns, status=None)]
    events = [e.model_dump(mode="json") for e in store.audit.events()]
    blob = json.dumps([memories, store.export_jsonld(), events, store.namespaces()],
                      ensure_ascii=False)
    return _found(blob.encode(), "outputs")


def _check(store: MemoryStore, physical: list[str]) -> None:
    assert _outputs(store) == []
    assert {n.content for n in store.list("support")} >= {f"{KEPT}, note 0"}
    report = store.verify()
    assert report.ok and report.sealed, report
    assert "checked: the records hold none of the" in physical[0]
    assert "no namespace record or audit event bears its name" in physical[2]


@pytest.fixture
def _open(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(embedder=HashingEmbedder(dim=32), audit_key=KEY)


@pytest.mark.parametrize("index", ["numpy", "chroma", "qdrant"])
def test_no_erased_name_remains_in_any_file(_open: StoreFactory,
                                            tmp_path: Path, index: str) -> None:
    pytest.importorskip({"numpy": "numpy", "chroma": "chromadb",
                         "qdrant": "qdrant_client"}[index])
    path = tmp_path / "s"
    with _open(path=path, index=index) as store:
        _fill(store)
        assert len(scan_files(path)) >= 6  # the scanner sees them while they are stored
        physical = _erase(store)
        _check(store, physical)
        assert scan_files(path) == []  # at once, with the store still open
    assert scan_files(path) == []
    with _open(path=path, index=index) as store:  # and after a reopen (the index caught up)
        store.retrieve(KEPT, namespace="support")
        _check(store, physical)
    assert scan_files(path) == []


@pytest.fixture
def schema_url(postgres_url: str) -> Iterator[str]:
    yield postgres_url


def _dump(url: str) -> bytes:
    """A ``pg_dump`` of the store's schema (its tables' rows and definitions)."""
    from mars_core.storage.postgres import _split

    libpq, schema = _split(url)
    binary = shutil.which("pg_dump")
    if binary is None:
        pytest.skip("pg_dump is not installed")
    done = subprocess.run([binary, "--schema", schema, "--no-owner", libpq],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def test_no_erased_name_remains_in_a_postgres_dump(schema_url: str) -> None:
    kwargs: dict[str, Any] = {"embedder": HashingEmbedder(dim=32), "clock": FakeClock(),
                              "audit_key": KEY, "index": "numpy"}
    with MemoryStore.open(schema_url, **kwargs) as store:
        _fill(store)
        assert len(_found(_dump(schema_url), "dump")) >= 6
        physical = _erase(store)
        _check(store, physical)
    assert _found(_dump(schema_url), "dump") == []
