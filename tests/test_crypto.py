"""Crypto-shredding (DESIGN §3 invariant 6): sealed documents, destroyed keys, no text left.

The cipher alone (round trip, AAD binding, tampering, physical shredding of keys), then a
store opened with ``keys_path``: identical logical behaviour to a plaintext store, no
plaintext on disk even before an erasure, nothing recoverable after one (also on a
backend that cannot purge), and crash windows that leave only orphan keys. The store
tests run on each on-disk backend of the matrix (``tests/conftest.py``): the files they
scan are the store's own.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from invariants import check_invariants

from mars_core import FakeClock, MemoryStore
from mars_core.backends.layout import purges_physically
from mars_core.backends.memory import InMemoryBackend
from mars_core.codec import MEMORIES, META, decode_meta, decode_node, meta_id
from mars_core.errors import ConfigError, CorruptStoreError, MarsBackendError
from mars_core.privacy.crypto import ContentCipher, KeyStore, is_sealed

pytestmark = pytest.mark.local_files  # it scans the files of the stores it makes

KEY = bytes(range(32))
PLANTED = ["555-0199", "Rua Augusta", "Zephyrine"]


def files_holding(root: Path, needles: Sequence[str | bytes]) -> list[str]:
    """Every file under ``root`` holding any of ``needles``, as bytes."""
    found = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            data = (Path(dirpath) / name).read_bytes()
            if any((n.encode() if isinstance(n, str) else n) in data for n in needles):
                found.append(name)
    return found


def mk(path: Path | None, keys: Path | None, **kw: Any) -> MemoryStore:
    args: dict[str, Any] = {"clock": FakeClock(), "audit_key": KEY, "nlp": "rules",
                            "budget": 100_000, **kw}
    if keys is not None:
        args["keys_path"] = keys
    if path is None:
        return MemoryStore(**args)
    return MemoryStore.open(path, **args)  # on the matrix's backend (tests/conftest.py)


# --- the cipher --------------------------------------------------------------------------------


@pytest.mark.backend_neutral
def test_seal_open_round_trip_and_random_ciphertext() -> None:
    with KeyStore() as ks:
        c = ContentCipher(ks)
        text = "Zephyrine's PIN is 4321 — café ☕"
        t1, t2 = c.seal("m1", text), c.seal("m1", text)
        assert is_sealed(t1) and t1 != t2  # random nonces
        assert "Zephyrine" not in t1 and c.open("m1", t1) == c.open("m1", t2) == text
        assert c.flush() == 1 and "m1" in ks and c.flush() == 0
        assert c.open("m1", t1) == text  # from the persisted key


@pytest.mark.backend_neutral
def test_associated_data_binds_a_ciphertext_to_its_record() -> None:
    with KeyStore() as ks:
        ks.put({"a": bytes(32), "b": bytes(32)})  # the same key: only the AAD differs
        c = ContentCipher(ks)
        token = c.seal("a", "Rua Augusta 12")
        with pytest.raises(CorruptStoreError, match="sealed for another record") as err:
            c.open("b", token)
        assert "Augusta" not in str(err.value)
        assert c.open("a", token) == "Rua Augusta 12"


@pytest.mark.backend_neutral
def test_tampering_and_garbage_are_detected() -> None:
    with KeyStore() as ks:
        c = ContentCipher(ks)
        token = c.seal("m1", "call 555-0199")
        raw = bytearray(base64.b64decode(token[5:]))
        for i in (0, 12, len(raw) - 1):  # nonce, ciphertext, tag
            bad = raw.copy()
            bad[i] ^= 1
            with pytest.raises(CorruptStoreError, match="tampered"):
                c.open("m1", "enc1:" + base64.b64encode(bytes(bad)).decode())
        for garbage in ("enc1:@@@", "enc1:AAAA", "plain text", token[:-8]):
            with pytest.raises(CorruptStoreError) as err:
                c.open("m1", garbage)
            assert "555" not in str(err.value)


@pytest.mark.backend_neutral
def test_shred_destroys_keys_physically(tmp_path: Path) -> None:
    ks = KeyStore(tmp_path / "keys")
    c = ContentCipher(ks)
    tokens = {k: c.seal(k, f"secret {k}") for k in ("m1", "m2", "m3")}
    c.flush()
    hexes = {k: ks.get(k).hex() for k in tokens}  # type: ignore[union-attr]
    assert files_holding(tmp_path / "keys", [hexes["m1"]])  # journalled before shredding
    assert c.shred(["m1", "m2", "missing"]) == 2
    for k in ("m1", "m2"):
        with pytest.raises(CorruptStoreError, match=r"key of .* is missing") as err:
            c.open(k, tokens[k])
        assert "secret" not in str(err.value)
    assert files_holding(tmp_path / "keys", [hexes["m1"], hexes["m2"]]) == []
    assert c.open("m3", tokens["m3"]) == "secret m3"
    c.close()
    with KeyStore(tmp_path / "keys") as again:  # the survivor survives a reopen
        assert again.ids() == {"m3"} and again.get("m3").hex() == hexes["m3"]  # type: ignore[union-attr]


@pytest.mark.backend_neutral
def test_gc_removes_orphans_and_unflushed_keys_vanish(tmp_path: Path) -> None:
    with KeyStore(tmp_path / "keys") as ks:
        c = ContentCipher(ks)
        for k in ("live", "orphan1", "orphan2"):
            c.seal(k, "x")
        c.flush()
        c.seal("never-flushed", "x")
        c.discard()
        assert ks.ids() == {"live", "orphan1", "orphan2"}
        assert c.gc(["live", "unknown"]) == 2 and ks.ids() == {"live"}


# --- a store with keys_path ----------------------------------------------------------------------


def scenario(s: MemoryStore) -> dict[str, str]:
    """The same operations on any store; returns ids by role."""
    a = s.add("Zephyrine's phone is 555-0199, she lives on Rua Augusta",
              provenance={"conversation_id": "c1"})
    b = s.add("Bo likes jazz and plays the saxophone", type="semantic")
    fact = s.add("Zephyrine lives on Rua Augusta", type="semantic",
                 provenance={"derived_from": [a.id]})
    s.add("book the concert tickets for Bo", type="task",
          payload={"goal": "concert", "status": "active", "dependencies": [b.id]})
    s.retrieve("where does Zephyrine live", budget_tokens=50)
    s.retrieve("jazz", budget_tokens=50)
    new_b = s.update(b.id, "Bo likes jazz and blues")
    s.forget(fact.id)
    s.observe("user", "I moved to Porto last spring and I love the river", namespace="u2")
    s.set_preferences({"private_entities": ["Zephyrine"], "private_mode": True})
    return {"a": a.id, "b": b.id, "fact": fact.id, "new_b": new_b.id}


def test_encrypted_store_behaves_like_a_plain_one(tmp_path: Path) -> None:
    plain = mk(tmp_path / "plain", None, encrypt=False)  # Chroma and Qdrant would encrypt
    enc = mk(tmp_path / "enc", tmp_path / "keys")
    assert scenario(plain) == scenario(enc)
    assert enc.export_jsonld() == plain.export_jsonld()
    assert enc.audit.head == plain.audit.head  # the logical history is the same
    assert [h.id for h in enc.retrieve("Bo jazz", read_only=True)] == \
        [h.id for h in plain.retrieve("Bo jazz", read_only=True)]
    check_invariants(enc)
    export = enc.export_jsonld()
    enc.close()
    plain.close()
    with mk(tmp_path / "enc", tmp_path / "keys") as again:
        assert again.export_jsonld() == export
        assert again.preferences().private_entities == ("Zephyrine",)
        check_invariants(again)
        again.add("after the reopen")
        check_invariants(again)


def test_documents_on_disk_hold_no_plaintext_before_any_erasure(tmp_path: Path) -> None:
    with mk(tmp_path / "plain", None, encrypt=False) as plain:
        scenario(plain)
    assert files_holding(tmp_path / "plain", PLANTED)  # the scanner does find plaintext
    with mk(tmp_path / "enc", tmp_path / "keys") as enc:
        scenario(enc)
        docs = [r.document for r in enc.backend.get(MEMORIES)]
        assert docs and all(is_sealed(d) for d in docs)
        prefs = enc.backend.get(META, [meta_id("prefs:default")])[0]
        assert is_sealed(prefs.document)  # it names a private entity
        with pytest.raises(CorruptStoreError, match="keys_path") as err:
            decode_node(enc.backend.get(MEMORIES)[0])  # no unseal given
        with pytest.raises(CorruptStoreError, match="keys_path"):
            decode_meta(prefs)
        assert "Zephyrine" not in str(err.value)
    assert files_holding(tmp_path / "enc", PLANTED) == []
    assert files_holding(tmp_path / "keys", PLANTED) == []


def test_entity_erasure_shreds_keys_and_leaves_nothing(tmp_path: Path) -> None:
    s = mk(tmp_path / "db", tmp_path / "keys")
    ids = scenario(s)
    keys = s._cipher.keystore  # type: ignore[union-attr]
    hexes = {i: keys.get(i).hex() for i in (ids["a"], ids["fact"])}  # type: ignore[union-attr]
    s.set_preferences({})  # the preferences no longer name Zephyrine
    receipt = s.erase(entity="Zephyrine")
    assert set(receipt.erased) == {ids["a"], ids["fact"]}
    assert "crypto-shredded (2 keys destroyed)" in receipt.physical
    # the in-memory backend purges as well; Chroma and Qdrant keep the (sealed) bytes
    assert ("compacted" in receipt.physical) == purges_physically(s.backend)
    assert all(i not in keys for i in hexes)
    check_invariants(s)
    live = {n.id for n in s.list(status=None)} | {n.id for n in s.list("u2", status=None)}
    assert keys.ids() == live | {"prefs:default"}
    s.close()
    assert files_holding(tmp_path / "db", PLANTED) == []
    assert files_holding(tmp_path / "keys", [*PLANTED, *hexes.values()]) == []
    with mk(tmp_path / "db", tmp_path / "keys") as again:
        assert not any("Zephyrine" in n.content for n in again.list(status=None))
        check_invariants(again)


class NoPurgeBackend(InMemoryBackend):
    """A backend that cannot purge physically: deleted records stay in its journal."""

    compact = None  # type: ignore[assignment]


@pytest.mark.backend_neutral
def test_on_a_backend_that_cannot_purge_only_keyless_ciphertext_remains(tmp_path: Path) -> None:
    s = MemoryStore(NoPurgeBackend(tmp_path / "db"), clock=FakeClock(), audit_key=KEY,
                    nlp="rules", budget=100_000, keys_path=tmp_path / "keys")
    ids = scenario(s)
    s.set_preferences({})
    receipt = s.erase(entity="Zephyrine")
    assert receipt.physical == ("inmemory: documents: crypto-shredded (2 keys destroyed); "
                                "vectors remain until the backend vacuums")
    s.close()
    assert files_holding(tmp_path / "db", PLANTED) == []
    assert files_holding(tmp_path / "keys", PLANTED) == []
    journal = (tmp_path / "db" / "journal.log").read_text()
    left = re.findall(rf'\["{ids["a"]}",(?:null|"[^"]*"),"(enc1:[^"]+)"', journal)
    assert left  # the deleted record's sealed document is still in the journal...
    with KeyStore(tmp_path / "keys") as ks:
        for token in left:  # ...and nothing opens it any more
            with pytest.raises(CorruptStoreError, match="missing"):
                ContentCipher(ks).open(ids["a"], token)


def test_namespace_erasure_shreds_the_preferences_key(tmp_path: Path) -> None:
    s = mk(tmp_path / "db", tmp_path / "keys")
    s.add("Zephyrine called about the lease", namespace="u3")
    s.set_preferences({"private_entities": ["Zephyrine"]}, namespace="u3")
    assert "prefs:u3" in s._cipher.keystore  # type: ignore[union-attr]
    receipt = s.erase(namespace="u3")
    assert "crypto-shredded (2 keys destroyed)" in receipt.physical
    assert s.preferences("u3").private_entities == ()
    assert s._cipher.keystore.ids() == frozenset()  # type: ignore[union-attr]
    check_invariants(s)
    s.close()
    assert files_holding(tmp_path, PLANTED) == []
    with mk(tmp_path / "db", tmp_path / "keys") as again:
        assert again.preferences("u3").private_entities == ()


def test_keys_path_is_checked_on_open(tmp_path: Path) -> None:
    mk(tmp_path / "enc", tmp_path / "keys").close()
    mk(tmp_path / "plain", None, encrypt=False).close()
    with pytest.raises(ConfigError, match="keys_path"):
        mk(tmp_path / "enc", None)  # encrypted, opened without its keys
    with pytest.raises(ConfigError, match="created without encryption"):
        mk(tmp_path / "plain", tmp_path / "keys2")
    with pytest.raises(ConfigError, match="not the key directory of this store"):
        mk(tmp_path / "enc", tmp_path / "keys3")
    with pytest.raises(ConfigError, match="belongs to another store"):
        mk(tmp_path / "new", tmp_path / "keys")  # another store's key directory
    with pytest.raises(ConfigError, match="directory of its own"):
        mk(tmp_path / "same", tmp_path / "same")
    with mk(tmp_path / "enc", tmp_path / "keys") as s:  # failed opens left no lock behind
        s.add("still opens")


def test_crash_after_keys_before_records_leaves_only_orphans(tmp_path: Path) -> None:
    s = mk(tmp_path / "db", tmp_path / "keys")
    kept = s.add("kept memory").id
    keys = s._cipher.keystore  # type: ignore[union-attr]
    # the pieces of add(), stopped after the keys are written and before the records are
    txn = s._begin()
    node, vec = s._build(txn, "Zephyrine lost in a crash", "episodic", "default",
                         s._step(txn, "default", advance=True))
    s._stage_put(txn, node, vec)
    s._cipher.flush()  # type: ignore[union-attr]
    assert node.id in keys and node.id not in s._state.nodes
    s.close()  # "crash": the batch is never applied
    with mk(tmp_path / "db", tmp_path / "keys") as again:
        assert again._cipher.keystore.ids() == {kept}  # type: ignore[union-attr]
        check_invariants(again)


def test_failed_write_orphans_a_key_that_is_reused_or_collected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = mk(tmp_path / "db", tmp_path / "keys")
    keys = s._cipher.keystore  # type: ignore[union-attr]

    def broken(batch: object) -> None:
        raise MarsBackendError("disk full")

    monkeypatch.setattr(s.backend, "apply", broken)
    with pytest.raises(MarsBackendError):
        s.add("Zephyrine never stored")
    assert len(keys) == 1 and not s.list()  # the key was written first: an orphan
    monkeypatch.undo()
    again_id = s.add("stored this time").id  # the same id again: its key is reused
    assert keys.ids() == {again_id}
    check_invariants(s)
    s.close()
    with mk(tmp_path / "db", tmp_path / "keys") as reopened:
        assert [n.content for n in reopened.list()] == ["stored this time"]


def test_crash_after_delete_before_shred_is_collected_on_open(tmp_path: Path) -> None:
    s = mk(tmp_path / "db", tmp_path / "keys")
    a = s.add("Zephyrine at Rua Augusta").id
    b = s.add("Bo likes jazz").id
    hexa = s._cipher.keystore.get(a).hex()  # type: ignore[union-attr]
    s._shred = lambda ids: 0  # type: ignore[method-assign]  # "crash" before shredding
    s.erase(node_id=a)
    assert a in s._cipher.keystore  # type: ignore[union-attr]
    s.close()
    with mk(tmp_path / "db", tmp_path / "keys") as again:
        assert again._cipher.keystore.ids() == {b}  # type: ignore[union-attr]
    assert files_holding(tmp_path / "keys", [hexa]) == []
    assert files_holding(tmp_path / "db", ["Zephyrine", "Augusta"]) == []


def test_reembed_keeps_documents_sealed(tmp_path: Path) -> None:
    from mars_core.embeddings import HashingEmbedder

    s = mk(tmp_path / "db", tmp_path / "keys")
    scenario(s)
    before = s.export_jsonld()
    assert s.reembed(HashingEmbedder(dim=64)) == len(s._state.nodes)
    s.close()
    with mk(tmp_path / "db", tmp_path / "keys", embedder=HashingEmbedder(dim=64)) as again:
        assert again.export_jsonld() == before
        docs = [r.document for c in again._colls.values() for r in again.backend.get(c)]
        assert len(docs) == len(again._state.nodes) == 7
        assert all(is_sealed(d) for d in docs)
    assert files_holding(tmp_path / "db", PLANTED) == []
