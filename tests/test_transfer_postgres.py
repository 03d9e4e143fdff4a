"""``copy_store`` / ``mars copy``: a SQLite store copied to a real PostgreSQL server (and
back), everything it keeps carried over and checked; a destination that holds a store
refused; a failure raised mid-copy and a copying process killed with ``SIGKILL``
mid-transaction leave the destination as it was; a source whose audit trail was
tampered with is refused. The copy's index on a real ``chroma run`` server is built
from the copied records."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import children
import pytest
from typer.testing import CliRunner

from mars_core import MemoryStore
from mars_core.cli import app
from mars_core.clock import FakeClock
from mars_core.errors import ConflictError, CorruptStoreError, DestinationNotEmptyError
from mars_core.io.transfer import copy_store
from mars_core.layout import RECORDS_FILE
from mars_core.storage import PostgresRecordStore, SQLiteRecordStore
from mars_core.storage import postgres as pg
from mars_core.storage.base import RecordStore

TABLES = ("meta", "namespaces", "memories", "stats", "edges", "audit", "audit_refs",
          "changes")


def _fill(path: Path) -> None:
    """A store with what a store keeps: several namespaces, observed turns (edges),
    updates, forgotten and erased memories, accesses, preferences and policy state."""
    with MemoryStore.open(path, index="numpy", clock=FakeClock(), budget=120,
                          policy="hybrid") as store:
        store.observe("user", "My sister Ana lives in Lisbon. I am allergic to peanuts.",
                      namespace="users/ana")
        store.observe("user", "Bo works at Acme and plays jazz on Fridays.",
                      namespace="users/ana", conversation_id="c1")
        old = store.add("The team meets every Tuesday at nine", type="task",
                        namespace="team")
        store.update(old.id, "The team meets every Wednesday at ten", namespace="team")
        gone = store.add("Carla's phone number is 555 0199", namespace="team")
        store.forget(store.add("a passing remark about the weather", namespace="team").id,
                     namespace="team")
        store.set_preferences({"private_entities": ["Carla"]}, namespace="team")
        for i in range(12):  # past the budget: the policy archives, its state moves
            store.add(f"note {i}: the trains ran on time and the tea was warm",
                      namespace=("tenant", "x"))
        store.retrieve("Ana Lisbon", namespace="users/ana")
        store.retrieve("when does the team meet", namespace="team")
        store.erase(gone.id, namespace="team")


def _rows(records: RecordStore) -> dict[str, Any]:
    """Everything a store keeps, through the record-store protocol (vectors as bytes)."""
    with records.read() as tx:
        names = tx.namespace_names()
        out: dict[str, Any] = {"names": names, "counter": tx.counter(),
                               "audit": [e.model_dump() for e in tx.audit()]}
        for name in names:
            nodes = tx.memories(name)
            out[name] = {
                "record": tx.namespace(name),
                "memories": [n.model_dump() for n in nodes],
                "vectors": {k: v.tobytes() for k, v in tx.vectors([n.id for n in nodes]).items()},
                "edges": [e.model_dump() for e in tx.edges(name)],
                "audit_for": {n.id: [e.hash for e in tx.audit_for(n.id)] for n in nodes}}
        manifest = dict(tx.manifest() or {})
    out["manifest"] = {k: v for k, v in manifest.items() if k not in ("index", "records")}
    return out


def _dump(url: str) -> dict[str, list[Any]] | None:
    """Every row of the schema's tables, as the server holds them (None: no schema)."""
    import psycopg

    libpq, schema = pg._split(url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (f'"{schema}".meta',)).fetchone()[0] is None:
            return None
        return {t: conn.execute(f'SELECT * FROM "{schema}".{t} ORDER BY 1').fetchall()
                for t in TABLES}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src"
    _fill(path)
    return path


def test_a_sqlite_store_copied_to_postgres_keeps_everything(source: Path,
                                                             postgres_url: str) -> None:
    with MemoryStore.open(source, index="numpy", clock=FakeClock()) as before:
        head, export = before.audit.head, before.export_jsonld()
        ranked = [h.node.id for h in before.retrieve("trains tea", namespace=("tenant", "x"),
                                                     read_only=True)]
        stats = before.stats()
    seen: list[tuple[str, int, int]] = []
    done = copy_store(source, postgres_url, progress=lambda *e: seen.append(e))
    assert (done.namespaces, done.audit_events, done.head) == (3, stats["audit_events"], head)
    assert done.memories == sum(s["active"] + s["archived"]
                                for s in stats["namespaces"].values())
    assert done.edges > 0 and "key file" in done.key  # the store's key is in the key ring
    assert seen[-1] == ("write", done.memories, done.memories)
    assert [e for e in seen if e[0] == "store"][-1] == ("store", done.memories, done.memories)
    with SQLiteRecordStore(source / RECORDS_FILE, read_only=True) as a, \
            PostgresRecordStore(postgres_url, read_only=True) as b:
        assert _rows(b) == _rows(a)  # rows, vectors bit for bit, state, audit, manifest
    # the copy opens without a key given (the same store id: the same key file)
    with MemoryStore.open(postgres_url, clock=FakeClock()) as copy:
        assert copy.verify(expected_head=head).ok and copy.audit.head == head
        assert copy.export_jsonld() == export
        assert [h.node.id for h in copy.retrieve(
            "trains tea", namespace=("tenant", "x"), read_only=True)] == ranked
        assert copy.preferences("team").private_entities == ("Carla",)
        fresh = copy.add("a new memory after the copy", namespace="team")
        assert fresh.id not in {n["@id"] for n in export["@graph"] if "@id" in n}
        assert copy.verify().ok
    # and back to a directory: the same again
    back = source.parent / "back"
    again = copy_store(postgres_url, back, index="numpy")
    assert again.memories == done.memories + 1
    with MemoryStore.open(back, index="numpy", clock=FakeClock()) as restored:
        assert restored.verify(expected_head=head).ok
        assert [n.content for n in restored.list("team")][-1] == fresh.content


def test_the_copy_on_a_chroma_server_index_is_built_from_the_records(
        source: Path, postgres_url: str, chroma_server: Any) -> None:
    index = (f"chroma://{chroma_server.host}:{chroma_server.port}"
             f"?prefix=t{uuid.uuid4().hex[:12]}_")
    done = copy_store(source, postgres_url, index=index)
    assert done.index == f"{index} (asked for)"
    with MemoryStore.open(source, index="numpy") as before, \
            MemoryStore.open(postgres_url, index=index) as copy:
        for ns, query in (("users/ana", "Ana Lisbon"), ("team", "team meets")):
            assert [h.node.id for h in copy.retrieve(query, namespace=ns, read_only=True)] \
                == [h.node.id for h in before.retrieve(query, namespace=ns, read_only=True)]
        assert copy.stats()["index"] == "chroma"


def test_a_destination_that_holds_a_store_is_refused_unchanged(source: Path,
                                                               postgres_url: str) -> None:
    with MemoryStore.open(postgres_url) as there:
        there.add("someone else's memory")
    rows = _dump(postgres_url)
    with pytest.raises(DestinationNotEmptyError, match="already holds") as caught:
        copy_store(source, postgres_url)
    assert isinstance(caught.value, ConflictError)
    assert _dump(postgres_url) == rows
    copy_store(source, source.parent / "elsewhere", index="numpy")  # a new directory is fine
    with pytest.raises(DestinationNotEmptyError):
        copy_store(source, source.parent / "elsewhere", index="numpy")
    mine = source.parent / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own files")
    with pytest.raises(DestinationNotEmptyError, match="other files"):
        copy_store(source, mine, index="numpy")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


class Injected(Exception):
    """The failure a test raises inside the copy."""


def test_a_failure_mid_copy_leaves_the_destination_as_it_was(source: Path,
                                                             postgres_url: str) -> None:
    PostgresRecordStore(postgres_url).close()  # the empty tables: no store yet
    rows = _dump(postgres_url)
    assert rows is not None and not pg.holds_store(postgres_url)

    def fail_half_way(stage: str, done: int, total: int) -> None:
        if stage == "store" and done == total // 2:
            raise Injected

    with pytest.raises(Injected):
        copy_store(source, postgres_url, progress=fail_half_way)
    assert _dump(postgres_url) == rows
    # a schema that was not there: afterwards it holds no store either; a retry copies
    other = pg.shown_url(postgres_url)[0].replace("schema=", "schema=n")
    with pytest.raises(Injected):
        copy_store(source, other, progress=fail_half_way)
    try:
        assert not pg.holds_store(other)
        assert copy_store(source, other).memories > 0
    finally:
        from postgres_server import drop_schema

        drop_schema(other, pg.shown_url(other)[1])


_COPIER = textwrap.dedent("""
    import sys
    from mars_core.cli import main

    def pause(stage, done, total):
        if stage == "store" and done == total // 2:
            print("half", flush=True)
            sys.stdin.readline()  # killed here, the transaction open
    sys.exit(main(["copy", sys.argv[1], sys.argv[2], "--no-progress"], progress=pause))
""")


def test_a_copy_killed_mid_transaction_leaves_the_destination_as_it_was(
        source: Path, postgres_url: str) -> None:
    PostgresRecordStore(postgres_url).close()
    rows = _dump(postgres_url)
    child = children.popen([sys.executable, "-c", _COPIER, str(source), postgres_url],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                           env=os.environ.copy())
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "half"
        assert _dump(postgres_url) == rows  # half the rows written, none committed
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert _dump(postgres_url) == rows and not pg.holds_store(postgres_url)
    out = CliRunner().invoke(app, ["copy", str(source), postgres_url], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "the copy verifies up to the source's head" in out.output
    assert pg.holds_store(postgres_url)


def test_a_source_whose_trail_was_tampered_with_is_refused(source: Path,
                                                           postgres_url: str) -> None:
    with sqlite3.connect(source / RECORDS_FILE) as db:
        ordinal, body = db.execute("SELECT ordinal, body FROM audit WHERE ordinal = "
                                   "(SELECT max(ordinal) FROM audit)").fetchone()
        event = json.loads(body)
        event["rationale"] = str(event.get("rationale")) + " (rewritten)"
        db.execute("UPDATE audit SET body = ? WHERE ordinal = ?", (json.dumps(event), ordinal))
    with pytest.raises(CorruptStoreError, match="does not verify"):
        copy_store(source, postgres_url)
    assert not pg.holds_store(postgres_url)


def test_mars_copy_messages_never_show_the_password(source: Path, postgres_url: str) -> None:
    bad = "postgresql://ana:s3cret@127.0.0.1:1/agents"
    out = CliRunner().invoke(app, ["copy", str(source), bad])
    assert out.exit_code == 1 and "s3cret" not in out.output and "cannot copy" in out.output
    out = CliRunner().invoke(app, ["copy", str(source.parent / "none"), postgres_url])
    assert out.exit_code == 2 and "no store" in out.output
    assert pg.schema_version(postgres_url) == 0
