"""``verify()`` sees edited rows, truncated tails and dropped namespaces (issue 30, Build 4).

Each test builds a store on disk, closes it, edits ``mars.sqlite3`` directly as someone
who can write the store's files would, then opens the store read-only and verifies: the
edit must be reported. Without the audit key nothing can be re-sealed; a key holder's
consistent rewrite passes without an anchor and is found with one, as
docs/concepts/audit.md says. Honest histories (every kind of call, erasures of every
kind, reopens) verify, and a store written before rows and seals existed verifies as
it did until a writer opens it, then under them.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mars_core import HashingEmbedder, MemoryStore
from mars_core.audit import AuditChain, AuditEvent, canonical_json
from mars_core.cli import main
from mars_core.clock import FakeClock
from mars_core.engine.trail import row_state

KEY = bytes(range(32))


def _open(path: Path, **kw: Any) -> MemoryStore:
    return MemoryStore.open(path, index="numpy", embedder=HashingEmbedder(dim=32),
                            clock=FakeClock(), audit_key=KEY, **kw)


def _fill(store: MemoryStore) -> None:
    for ns in ("users/ana", "users/bo"):
        store.add("Ana moved to Lisbon", type="semantic", namespace=ns)
        store.add("Ana's phone is 555-0100", namespace=ns, metadata={"src": "crm"})
        store.observe("user", "My sister Rita is a nurse in Porto", namespace=ns,
                      conversation_id="chat-1")
        store.forget(store.list(ns)[0].id, namespace=ns)


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    with _open(tmp_path / "s") as store:
        _fill(store)
        assert store.verify().ok
    yield tmp_path / "s"


def _db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path / "mars.sqlite3", isolation_level=None)


def _verify(path: Path, head: str | None = None) -> Any:
    with _open(path, read_only=True) as store:
        return store.verify(expected_head=head)


def _one(conn: sqlite3.Connection, sql: str, *args: Any) -> Any:
    return conn.execute(sql, args).fetchone()


def _a_memory(conn: sqlite3.Connection, ns: str = "users/ana",
              status: str = "active") -> str:
    return str(_one(conn, "SELECT id FROM memories WHERE namespace = ? AND status = ? "
                          "ORDER BY seq LIMIT 1", ns, status)[0])


# --- each row edit of the issue ------------------------------------------------------------


def _content(c: sqlite3.Connection) -> None:
    c.execute("UPDATE memories SET content = 'Ana moved to Madrid' WHERE id = ?",
              (_a_memory(c),))


def _status(c: sqlite3.Connection) -> None:
    c.execute("UPDATE memories SET status = 'active' WHERE id = ?",
              (_a_memory(c, status="archived"),))


def _sensitivity(c: sqlite3.Connection) -> None:
    c.execute("UPDATE memories SET sensitivity = 0.0 WHERE id = ?", (_a_memory(c),))


def _deleted(c: sqlite3.Connection) -> None:
    mid = _a_memory(c)
    c.execute("DELETE FROM memories WHERE id = ?", (mid,))
    c.execute("DELETE FROM stats WHERE id = ?", (mid,))
    c.execute("DELETE FROM edges WHERE source = ? OR target = ?", (mid, mid))


def _moved(c: sqlite3.Connection) -> None:
    c.execute("UPDATE memories SET namespace = 'users/bo' WHERE id = ?", (_a_memory(c),))


def _moved_to_a_new_namespace(c: sqlite3.Connection) -> None:
    c.execute("UPDATE memories SET namespace = 'users/eve' WHERE id = ?", (_a_memory(c),))


def _inserted(c: sqlite3.Connection) -> None:
    mid = _a_memory(c)
    c.execute("INSERT INTO memories SELECT '00000000-0000-4000-8000-00000000beef', namespace, "
              "seq + 1000, status, type, weight, conversation, created_ts, sensitivity, "
              "content, body, meta, vector FROM memories WHERE id = ?", (mid,))
    c.execute("INSERT INTO stats SELECT '00000000-0000-4000-8000-00000000beef', access_count, "
              "last_access_at, last_access_step, touch_seq FROM stats WHERE id = ?", (mid,))


def _metadata(c: sqlite3.Connection) -> None:
    mid = _a_memory(c)
    meta = json.loads(_one(c, "SELECT meta FROM memories WHERE id = ?", mid)[0])
    meta["pinned"] = not meta["pinned"]
    c.execute("UPDATE memories SET meta = ? WHERE id = ?", (canonical_json(meta), mid))


def _payload(c: sqlite3.Connection) -> None:
    mid = _a_memory(c)
    body = json.loads(_one(c, "SELECT body FROM memories WHERE id = ?", mid)[0])
    body["provenance"]["source"] = "assistant"
    c.execute("UPDATE memories SET body = ? WHERE id = ?", (canonical_json(body), mid))


ROW_EDITS: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    "content changed": (_content, "differs from the audit's record"),
    "status changed": (_status, "differs from the audit's record"),
    "sensitivity changed": (_sensitivity, "differs from the audit's record"),
    "metadata changed": (_metadata, "differs from the audit's record"),
    "provenance changed": (_payload, "differs from the audit's record"),
    "row deleted": (_deleted, "is missing"),
    "row moved to another namespace": (_moved, "is missing|in no event's record"),
    "row moved to a namespace of its own": (_moved_to_a_new_namespace,
                                            "namespace list|is missing"),
    "row inserted": (_inserted, "in no event's record"),
}


@pytest.mark.parametrize("edit", sorted(ROW_EDITS))
def test_an_edited_memory_row_is_found(path: Path, edit: str) -> None:
    change, found = ROW_EDITS[edit]
    conn = _db(path)
    change(conn)
    conn.close()
    report = _verify(path)
    assert not report.ok and report.sealed
    assert re.search(found, report.reason), report.reason


# --- without the key: a truncated tail, a dropped namespace ---------------------------------


def _truncate(conn: sqlite3.Connection, ns: str, keep: int) -> None:
    """Drop the namespace's newest events, and set its record to the last one left."""
    conn.execute("DELETE FROM audit WHERE namespace = ? AND seq >= ?", (ns, keep))
    last = AuditEvent.model_validate_json(_one(
        conn, "SELECT body FROM audit WHERE namespace = ? AND seq = ?", ns, keep - 1)[0])
    conn.execute("UPDATE namespaces SET audit_count = ?, audit_head = ? WHERE name = ?",
                 (keep, last.hash, ns))


def test_a_truncated_tail_is_found_without_an_anchor(path: Path, capsys: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARS_AUDIT_KEY", KEY.hex())
    conn = _db(path)
    count = _one(conn, "SELECT audit_count FROM namespaces WHERE name = 'users/ana'")[0]
    _truncate(conn, "users/ana", count - 1)  # the forget's event, as if it never happened
    conn.close()
    report = _verify(path)
    assert not report.ok and "not the ones sealed" in report.reason, report.reason
    assert main(["verify", "--path", str(path)]) == 1
    assert "BROKEN" in capsys.readouterr().out


def test_a_truncated_tail_with_its_rows_put_back_is_found(path: Path) -> None:
    """The forget's event dropped and the row made active again: the rows agree with the
    shortened chain, only the seal tells."""
    conn = _db(path)
    count = _one(conn, "SELECT audit_count FROM namespaces WHERE name = 'users/ana'")[0]
    _truncate(conn, "users/ana", count - 1)
    conn.execute("UPDATE memories SET status = 'active', meta = json_set(meta, "
                 "'$.archive_reason', NULL) WHERE namespace = 'users/ana' AND status = "
                 "'archived'")
    conn.close()
    report = _verify(path)
    assert not report.ok and "sealed" in report.reason


def test_a_dropped_namespace_is_found_without_an_anchor(path: Path, capsys: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARS_AUDIT_KEY", KEY.hex())
    conn = _db(path)
    ids = [r[0] for r in conn.execute("SELECT id FROM memories WHERE namespace = 'users/bo'")]
    for table, column in (("memories", "namespace"), ("edges", "namespace"),
                          ("audit", "namespace"), ("namespaces", "name"),
                          ("changes", "namespace")):
        conn.execute(f"DELETE FROM {table} WHERE {column} = 'users/bo'")
    conn.executemany("DELETE FROM stats WHERE id = ?", [(i,) for i in ids])
    conn.close()
    report = _verify(path)
    assert not report.ok and "namespace list" in report.reason, report.reason
    assert main(["verify", "--path", str(path)]) == 1
    assert "namespace list" in capsys.readouterr().out


def test_an_edited_record_head_is_found(path: Path) -> None:
    conn = _db(path)
    conn.execute("UPDATE namespaces SET audit_head = ? WHERE name = 'users/ana'", ("f" * 64,))
    conn.close()
    assert not _verify(path).ok


# --- a key holder: found with an anchor only --------------------------------------------------


def _resign(conn: sqlite3.Connection, ns: str, memory_id: str) -> None:
    """What a key holder can do: edit a row, rewrite the digest its events recorded, chain
    the events again and seal the record again."""
    chain = AuditChain(KEY)
    conn.execute("UPDATE memories SET content = 'Ana moved to Madrid' WHERE id = ?",
                 (memory_id,))
    with _open(Path(conn.execute("PRAGMA database_list").fetchone()[2]).parent,
               read_only=True) as store:
        node = store.get(memory_id, namespace=ns)
    events = [AuditEvent.model_validate_json(r[0]) for r in conn.execute(
        "SELECT body FROM audit WHERE namespace = ? ORDER BY seq", (ns,))]
    prev = events[0].prev_hash
    for ev in events:
        rows = {k: (chain.row_digest(row_state(node)) if k == memory_id and v else v)
                for k, v in ev.rows.items()}
        new = ev.model_copy(update={"rows": rows, "prev_hash": prev})
        new = new.model_copy(update={"hash": chain.chain_hash(new)})
        conn.execute("UPDATE audit SET body = ? WHERE namespace = ? AND seq = ?",
                     (canonical_json(new.model_dump(mode="json")), ns, ev.seq))
        prev = new.hash
    state = json.loads(_one(conn, "SELECT state FROM namespaces WHERE name = ?", ns)[0])
    state["seal"] = chain.seal(ns, len(events), prev)
    conn.execute("UPDATE namespaces SET audit_head = ?, state = ? WHERE name = ?",
                 (prev, canonical_json(state), ns))


def test_a_key_holders_rewrite_passes_alone_and_fails_against_an_anchor(path: Path) -> None:
    with _open(path) as store:
        head = store.audit.head
    conn = _db(path)
    _resign(conn, "users/ana", _a_memory(conn))
    conn.close()
    assert _verify(path).ok  # consistent, and signed with the key
    report = _verify(path, head)
    assert not report.ok and "anchored" in report.reason


# --- honest histories verify --------------------------------------------------------------------


def test_every_kind_of_call_verifies_and_the_anchor_survives_erasures(tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        _fill(store)
        head = store.audit.head
        ana = store.list("users/ana")[0]
        store.update(ana.id, "Ana moved to Braga", namespace="users/ana")
        store.restore(store.list("users/ana", status="archived")[0].id, namespace="users/ana")
        store.set_metadata(ana.id, {"k": 1}, pinned=True, namespace="users/ana")
        store.set_preferences({"private_entities": ["Rita"]}, namespace="users/ana")
        store.maintain()
        store.retrieve("where does Ana live", namespace="users/ana")
        store.erase(entity="Rita", namespace="users/bo")
        store.erase(conversation="chat-1", namespace="users/ana")
        store.erase(namespace="users/bo")
        store.add("Bo is back", namespace="users/bo")
        store.erase(namespace="users/bo")
        with _open(tmp_path / "other") as other:
            other.add("Cy likes jazz", namespace="users/cy")
            doc = other.export_jsonld()
        store.import_jsonld(doc)
        report = store.verify(expected_head=head)
        assert report.ok and report.sealed and report.rows > 0, report
    with _open(tmp_path / "s", budget=500) as store:  # a new configuration: a config event
        assert store.verify(expected_head=head).ok
    assert _verify(tmp_path / "s", head).ok


def _legacy(path: Path) -> None:
    """Make the store one written before rows and seals: scheme-1 events, no seals."""
    chain = AuditChain(KEY)
    conn = _db(path)
    names = [r[0] for r in conn.execute("SELECT name FROM namespaces")]
    for ns in names:
        prev = "0" * 64
        for (body,) in conn.execute("SELECT body FROM audit WHERE namespace = ? ORDER BY seq",
                                    (ns,)).fetchall():
            ev = AuditEvent.model_validate_json(body)
            old = ev.model_copy(update={"scheme": 1, "rows": {}, "prev_hash": prev})
            old = old.model_copy(update={"hash": chain.chain_hash(old)})
            doc = old.model_dump(mode="json")
            del doc["scheme"], doc["rows"]
            conn.execute("UPDATE audit SET body = ? WHERE namespace = ? AND seq = ?",
                         (canonical_json(doc), ns, ev.seq))
            prev = old.hash
        state = json.loads(_one(conn, "SELECT state FROM namespaces WHERE name = ?", ns)[0])
        state.pop("seal", None)
        conn.execute("UPDATE namespaces SET audit_head = ?, state = ? WHERE name = ?",
                     (prev, canonical_json(state), ns))
    manifest = json.loads(_one(conn, "SELECT value FROM meta WHERE key = 'manifest'")[0])
    manifest.pop("audit_format"), manifest.pop("namespaces_seal")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'manifest'", (canonical_json(manifest),))
    conn.close()


def test_a_store_written_before_is_brought_under_rows_and_seals(path: Path) -> None:
    _legacy(path)
    report = _verify(path)
    assert report.ok and not report.sealed and report.rows == 0
    with _open(path) as store:  # a writer's open records the rows, seals the rest
        report = store.verify()
        assert report.ok and report.sealed and report.rows == len(
            store.list("users/ana", status=None)) + len(store.list("users/bo", status=None))
        assert {e.op.value for e in store.audit.events()} >= {"record"}
        store.erase(namespace="users/bo")  # a chain of scheme 1, renamed: chained again
        assert store.verify().ok
    conn = _db(path)
    _content(conn)
    conn.close()
    assert "differs" in _verify(path).reason
