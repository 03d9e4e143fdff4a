"""Tenants cannot reach each other by id; the audit cannot be forged (issue 19).

* Cross-tenant: every id-based call, made from one namespace with another namespace's
  ids (and with the ids a default seed would give), finds nothing and changes nothing.
* Ids: two stores made without a seed share no id; a seed gives the same ids again.
* Audit key: never in the store's files; a caller's key is never persisted and is
  required again; a wrong key is refused.
* Forgery: an attacker who can write every file of the store but lacks the key cannot
  change, drop or reorder an event without ``verify`` failing; one who holds the key and
  re-chains is caught by an anchored head (``verify(expected_head=...)``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mars_core import FakeClock, MemoryStore
from mars_core.audit import AuditChain, AuditEvent, AuditOp
from mars_core.cli import app
from mars_core.engine.writer import mint_id
from mars_core.errors import ConfigError, CorruptStoreError, NotFoundError, ValidationError
from mars_core.keys import KeyRing, key_id

KEY = bytes(range(32))


def _open(path: Path, **kw: Any) -> MemoryStore:
    return MemoryStore.open(path, index="numpy", clock=FakeClock(), **kw)


def _snapshot(store: MemoryStore) -> dict[str, Any]:
    """Everything a caller can see, per namespace, archived included."""
    return {"nodes": {ns: [n.model_dump() for n in store.list(ns, status=None)]
                      for ns in store.namespaces()},
            "audit": len(store.audit), "head": store.audit.head,
            "verify": store.verify().ok}


def _tenants(store: MemoryStore) -> tuple[list[str], list[str]]:
    alice = [store.add(f"alice fact {i}", type="semantic", namespace="alice").id
             for i in range(3)]
    bob = [store.add(f"bob fact {i}", type="semantic", namespace="bob").id for i in range(3)]
    store.forget(bob[1], namespace="bob")  # an archived one too
    return alice, bob


ID_CALLS: dict[str, Callable[[MemoryStore, str, str], Any]] = {
    "get": lambda s, i, ns: s.get(i, namespace=ns),
    "history": lambda s, i, ns: s.history(i, namespace=ns),
    "update": lambda s, i, ns: s.update(i, "overwritten", namespace=ns),
    "forget": lambda s, i, ns: s.forget(i, namespace=ns),
    "restore": lambda s, i, ns: s.restore(i, namespace=ns),
    "link": lambda s, i, ns: s.link(i, "relatedTo", i, namespace=ns),
    "set_metadata": lambda s, i, ns: s.set_metadata(i, {"x": 1}, namespace=ns),
    "explain": lambda s, i, ns: s.explain(i, namespace=ns),
    "erase": lambda s, i, ns: s.erase(i, namespace=ns),
    "reinforce": lambda s, i, ns: s.reinforce([i], namespace=ns),
}


@pytest.mark.parametrize("call", sorted(ID_CALLS))
def test_another_namespaces_ids_are_missing_ids(call: str, tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        alice, bob = _tenants(store)
        before = _snapshot(store)
        for foreign in [*bob, *[mint_id("0", n) for n in range(1, 12)]]:
            with pytest.raises(NotFoundError, match="no memory"):
                ID_CALLS[call](store, foreign, "alice")
        assert _snapshot(store) == before
        # the default namespace is a namespace like any other: alice's ids are not its
        with pytest.raises(NotFoundError):
            ID_CALLS[call](store, alice[0], None)  # type: ignore[arg-type]
        assert _snapshot(store) == before


def test_the_owner_still_reaches_its_memories(tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        alice, bob = _tenants(store)
        assert store.get(bob[1], namespace="bob").status.value == "archived"
        assert store.restore(bob[1], namespace="bob").is_active
        assert store.explain(alice[0], namespace="alice").status == "active"
        new = store.update(alice[0], "alice fact 0, revised", namespace="alice")
        assert [n.id for n in store.history(new.id, namespace="alice")] == [alice[0], new.id]
        store.erase(bob[0], namespace="bob")
        assert store.explain(bob[0], namespace="bob").status == "erased"
        with pytest.raises(NotFoundError):  # erased in bob: alice never had it
            store.explain(bob[0], namespace="alice")


def test_credit_leaves_out_ids_that_are_not_the_namespaces() -> None:
    with MemoryStore(clock=FakeClock()) as store:
        _, bob = _tenants(store)
        before = _snapshot(store)
        store.credit(bob[:1], bob, namespace="alice")
        assert _snapshot(store) == before


@pytest.mark.parametrize("bad", [None, 7, b"id", "", "x" * 500, ["a"]])
def test_a_malformed_id_is_a_typed_error(bad: object) -> None:
    with MemoryStore(clock=FakeClock()) as store:
        store.add("something", namespace="alice")
        with pytest.raises(ValidationError, match="memory id"):
            store.get(bad)  # type: ignore[arg-type]


def test_stores_without_a_seed_share_no_id_and_a_seed_replays(tmp_path: Path) -> None:
    ids = []
    for name, seed in (("a", None), ("b", None), ("c", 7), ("d", 7)):
        with _open(tmp_path / name, seed=seed) as store:
            ids.append([store.add(f"fact {i}").id for i in range(5)])
    assert not set(ids[0]) & set(ids[1])
    assert not {mint_id("0", n) for n in range(1, 50)} & set(ids[0] + ids[1])
    assert ids[2] == ids[3] and not set(ids[2]) & set(ids[0])
    with _open(tmp_path / "a") as store:  # a reopened store keeps its own secret
        more = store.add("fact 5").id
    with _open(tmp_path / "e") as fresh:
        assert more not in {fresh.add(f"fact {i}").id for i in range(6)}


# --- the audit key ---------------------------------------------------------------------------


def _files(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_a_callers_key_is_never_persisted_and_is_required_again(tmp_path: Path) -> None:
    with _open(tmp_path / "s", audit_key=KEY) as store:
        store.add("Ana likes tea")
    blob = _files(tmp_path / "s")
    assert KEY not in blob and KEY.hex().encode() not in blob
    assert key_id(KEY).encode() in blob  # only its id
    with pytest.raises(ConfigError, match="audit key"):
        _open(tmp_path / "s")
    with pytest.raises(ConfigError, match="not the one"):
        _open(tmp_path / "s", audit_key=bytes(32))
    with _open(tmp_path / "s", audit_key=KEY) as store:
        assert store.verify().ok


def test_the_environment_key_is_a_callers_key(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARS_AUDIT_KEY", KEY.hex())
    with _open(tmp_path / "s") as store:
        store.add("Ana likes tea")
    assert KEY.hex().encode() not in _files(tmp_path / "s")
    result = CliRunner().invoke(app, ["verify", "--path", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("MARS_AUDIT_KEY", "not hex")
    with pytest.raises(ConfigError, match="MARS_AUDIT_KEY"):
        _open(tmp_path / "s")


def test_a_generated_key_lives_in_the_key_ring_only(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ring = tmp_path / "ring"
    monkeypatch.setenv("MARS_KEY_DIR", str(ring))
    with _open(tmp_path / "s") as store:
        store.add("Ana likes tea")
    (key_file,) = ring.iterdir()
    key = key_file.read_bytes()
    assert key_file.stat().st_mode & 0o777 == 0o600 and ring.stat().st_mode & 0o777 == 0o700
    blob = _files(tmp_path / "s")
    assert key not in blob and key.hex().encode() not in blob
    key_file.rename(tmp_path / "elsewhere.key")
    with pytest.raises(ConfigError, match=str(key_file)):  # names the file it looked for
        _open(tmp_path / "s")
    (tmp_path / "elsewhere.key").rename(key_file)
    with _open(tmp_path / "s") as store:
        assert store.verify().ok


def test_a_store_with_the_key_in_its_manifest_moves_it_to_the_ring(tmp_path: Path) -> None:
    """Stores written by the first format-2 build kept the key in the manifest."""
    with _open(tmp_path / "s", audit_key=KEY) as store:
        store.add("Ana likes tea")
    db = sqlite3.connect(tmp_path / "s" / "mars.sqlite3")
    (body,) = db.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
    manifest = json.loads(body)
    manifest["audit_key"] = KEY.hex()
    manifest.pop("audit_key_id")
    db.execute("UPDATE meta SET value = ? WHERE key = 'manifest'", (json.dumps(manifest),))
    db.commit()
    db.close()
    with _open(tmp_path / "s") as store:
        assert store.verify().ok
    assert KEY.hex().encode() not in _files(tmp_path / "s")
    assert KeyRing().load(manifest["store_id"]) == KEY
    with _open(tmp_path / "s") as store:  # from the ring now
        assert store.verify().ok


# --- forgery ---------------------------------------------------------------------------------


def _history(path: Path, key: bytes | None = None) -> str:
    """A namespace with inserts, accesses and an erasure; returns the anchored head."""
    with _open(path, audit_key=key or KEY) as store:
        ids = [store.add(f"Ana fact {i}", namespace="ana").id for i in range(4)]
        store.retrieve("Ana fact", namespace="ana")
        store.erase(ids[0], namespace="ana")
        store.add("Bo fact", namespace="bo")
        return store.audit.head


def _rows(db: sqlite3.Connection, ns: str) -> list[tuple[int, AuditEvent]]:
    return [(o, AuditEvent.model_validate_json(b)) for o, b in db.execute(
        "SELECT ordinal, body FROM audit WHERE namespace = ? ORDER BY seq", (ns,))]


def _set(db: sqlite3.Connection, ordinal: int, ev: AuditEvent) -> None:
    db.execute("UPDATE audit SET body = ?, seq = ? WHERE ordinal = ?",
               (ev.model_dump_json(), ev.seq, ordinal))


def _turn_erase_into_access(db: sqlite3.Connection) -> None:
    for o, ev in _rows(db, "ana"):
        if ev.op.value == "erase":
            _set(db, o, ev.model_copy(update={"op": AuditOp.ACCESS}))


def _drop_middle(db: sqlite3.Connection) -> None:
    rows = _rows(db, "ana")
    db.execute("DELETE FROM audit WHERE ordinal = ?", (rows[2][0],))


def _swap(db: sqlite3.Connection) -> None:
    (o1, e1), (o2, e2) = _rows(db, "ana")[1:3]
    db.execute("UPDATE audit SET seq = -1 WHERE ordinal = ?", (o1,))
    _set(db, o2, e1.model_copy(update={"seq": e2.seq}))
    _set(db, o1, e2.model_copy(update={"seq": e1.seq}))


def _truncate_and_fix_head(db: sqlite3.Connection) -> None:
    rows = _rows(db, "ana")
    db.execute("DELETE FROM audit WHERE ordinal = ?", (rows[-1][0],))
    last = rows[-2][1]
    db.execute("UPDATE namespaces SET audit_count = ?, audit_head = ? WHERE name = 'ana'",
               (last.seq + 1, last.hash))


TAMPERS = {"change an erase into an access": _turn_erase_into_access,
           "drop an event": _drop_middle, "reorder two events": _swap,
           "drop the newest event and fix the recorded head": _truncate_and_fix_head}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_an_attacker_without_the_key_cannot_forge(tamper: str, tmp_path: Path) -> None:
    head = _history(tmp_path / "s")
    db = sqlite3.connect(tmp_path / "s" / "mars.sqlite3")
    TAMPERS[tamper](db)
    db.commit()
    db.close()
    with _open(tmp_path / "s", audit_key=KEY) as store:
        assert not store.verify(expected_head=head).ok
        if tamper != "drop the newest event and fix the recorded head":
            assert not store.verify().ok  # no anchor needed
    result = CliRunner().invoke(app, ["verify", "--path", str(tmp_path / "s"), "--head", head],
                                env={**os.environ, "MARS_AUDIT_KEY": KEY.hex()})
    assert result.exit_code == 1 and "BROKEN" in result.output


def test_a_key_holder_who_rechains_is_caught_by_the_anchor(tmp_path: Path) -> None:
    head = _history(tmp_path / "s")
    chain = AuditChain(KEY)
    db = sqlite3.connect(tmp_path / "s" / "mars.sqlite3")
    prev: str | None = None
    for ordinal, ev in _rows(db, "ana"):  # the erasure becomes an access, re-signed
        op = AuditOp.ACCESS if ev.op is AuditOp.ERASE else ev.op
        forged = ev.model_copy(update={"op": op, "prev_hash": prev or ev.prev_hash})
        forged = forged.model_copy(update={"hash": chain.chain_hash(forged)})
        _set(db, ordinal, forged)
        prev = forged.hash
    (count, state), = db.execute("SELECT audit_count, state FROM namespaces WHERE name = "
                                 "'ana'").fetchall()
    sealed = {**json.loads(state), "seal": chain.seal("ana", count, prev or "")}
    db.execute("UPDATE namespaces SET audit_head = ?, state = ? WHERE name = 'ana'",
               (prev, json.dumps(sealed)))  # the key holder seals the record again too
    db.commit()
    db.close()
    with _open(tmp_path / "s", audit_key=KEY) as store:
        assert "erase" not in [e.op.value for e in store.audit.events("ana")]
        assert store.verify().ok  # the key holder's forgery passes a plain verify ...
        report = store.verify(expected_head=head)
        assert not report.ok and "anchored" in report.reason  # ... not the anchored one


def test_an_anchor_holds_while_the_trail_grows(tmp_path: Path) -> None:
    head = _history(tmp_path / "s")
    with _open(tmp_path / "s", audit_key=KEY) as store:
        store.add("Ana fact 9", namespace="ana")
        store.add("Cy fact", namespace="cy")
        assert store.audit.head != head
        assert store.verify(expected_head=head).ok
        assert store.verify(expected_head=store.audit.head).ok


@pytest.mark.parametrize("bad", ["", "mars-head-1:x:y", "mars-head-1:3:" + "g" * 64, 42,
                                 "mars-head-3:1:" + "0" * 64])
def test_a_malformed_anchor_is_a_typed_error(bad: object) -> None:
    with MemoryStore(clock=FakeClock()) as store:
        store.add("x")
        with pytest.raises(ValidationError, match="expected_head"):
            store.verify(expected_head=bad)  # type: ignore[arg-type]


def test_an_anchor_of_another_state_fails(tmp_path: Path) -> None:
    with MemoryStore(clock=FakeClock(), audit_key=KEY) as store:
        store.add("x")
        head = store.audit.head
        position = int(head.split(":")[1])
        forged = f"mars-head-1:{position}:{'0' * 64}"
        assert not store.verify(expected_head=forged).ok


# --- damaged stores --------------------------------------------------------------------------


def test_a_store_without_its_record_file_is_refused_and_nothing_created(
        tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    with MemoryStore.open(tmp_path / "s", index="chroma", clock=FakeClock()) as store:
        store.add("Ana likes tea")
    (tmp_path / "s" / "mars.sqlite3").unlink()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for read_only in (False, True):
        with pytest.raises(CorruptStoreError, match=r"mars\.sqlite3 is missing"):
            MemoryStore.open(tmp_path / "s", read_only=read_only)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_record_store_without_its_manifest_is_refused_unchanged(tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        store.add("Ana likes tea")
    db = sqlite3.connect(tmp_path / "s" / "mars.sqlite3")
    db.execute("DELETE FROM meta WHERE key = 'manifest'")
    db.commit()
    counts = [db.execute(f"SELECT count(*) FROM {t}").fetchone()
              for t in ("meta", "memories", "audit")]
    db.close()
    with pytest.raises(CorruptStoreError, match="manifest is missing"):
        _open(tmp_path / "s")
    db = sqlite3.connect(tmp_path / "s" / "mars.sqlite3")
    assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()
            for t in ("meta", "memories", "audit")] == counts
    db.close()


@pytest.mark.parametrize("kw", [{"policy": "nonsense"}, {"policy": "lru", "budget": 0},
                                {"policy": "priority", "policy_params": {"no_such": 1}}])
def test_a_refused_open_of_a_new_directory_creates_nothing(kw: dict[str, Any],
                                                           tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _open(tmp_path / "new", **kw)
    assert not (tmp_path / "new").exists()
