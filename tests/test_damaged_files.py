"""Damaged files are refused or repaired, never a crash (issue 30, Build 6).

Every damaged case runs in a child process (``CHILD`` below), so a SIGSEGV would fail
its test instead of killing pytest: bytes flipped in the embedded Chroma index's HNSW
files (after a clean close, with the modification time kept; after a crash; a fuzz of
random flips over every file of a segment) are found before Chroma loads them, and the
namespace's collections rebuilt from the records; a 0-byte record store beside an index
and another program's SQLite database are ``CorruptStoreError`` with nothing changed; a
deleted write-ahead log that leaves the index ahead of its records is reported and the
index rebuilt, with no ghost of the lost writes in what the store returns.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import textwrap
from pathlib import Path

import children
import pytest

pytest.importorskip("chromadb")

ROOT = Path(__file__).resolve().parents[1]
CHILD = textwrap.dedent("""
    import glob, json, os, random, shutil, signal, sqlite3, sys
    from mars_core import HashingEmbedder, MemoryStore
    from mars_core.clock import FakeClock
    from mars_core.engine import indexing
    from mars_core.errors import MarsError
    from mars_core.testing import index_sync, vector_index

    path, step = sys.argv[1], sys.argv[2]

    def store(where=path, **kw):
        return MemoryStore.open(where, index="chroma", embedder=HashingEmbedder(dim=32),
                                clock=FakeClock(), audit_key=bytes(32), **kw)

    def live_segment(where):
        chroma = os.path.join(where, "index", "chroma")
        conn = sqlite3.connect(os.path.join(chroma, "chroma.sqlite3"))
        rows = conn.execute("SELECT s.id FROM segments s JOIN collections c ON "
                            "c.id = s.collection WHERE s.scope = 'VECTOR' AND "
                            "c.name != 'mars_state'").fetchall()
        conn.close()
        found = [os.path.join(chroma, r[0]) for r in rows
                 if os.path.exists(os.path.join(chroma, r[0], "header.bin"))]
        return max(found, key=lambda d: os.path.getsize(os.path.join(d, "data_level0.bin")))

    def flip(file, positions, keep_time):
        info = os.stat(file)
        data = bytearray(open(file, "rb").read())
        for at, value in positions:
            data[at % len(data)] = value
        open(file, "wb").write(data)
        if keep_time:
            os.utime(file, ns=(info.st_atime_ns, info.st_mtime_ns))

    def ask(where):
        with store(where) as s:
            hits = s.retrieve("tea by the sea", namespace="a", k=50)
            known = {n.id for n in s.list("a", status=None)}
            assert all(h.node.id in known for h in hits)
            inner = vector_index(s).inner
            return {"hits": len(hits), "repaired": len(inner.repaired),
                    "ahead": index_sync(s).ahead, "verify": s.verify().ok,
                    "memories": len(known)}

    if step == "fill":
        with store() as s:
            for i in range(200):
                s.add(f"note {i}: tea by the sea, the river and the hills", namespace="a")
            s.retrieve("tea", namespace="a")
    elif step == "links":  # every element's first neighbour id far past the end
        segment = live_segment(path)
        header = open(os.path.join(segment, "header.bin"), "rb").read()
        size = int.from_bytes(header[28:36], "little")
        count = int.from_bytes(header[20:28], "little")
        flip(os.path.join(segment, "data_level0.bin"),
             [(i * size + 4 + b, 0xFF) for i in range(count) for b in range(3)],
             keep_time=sys.argv[3] == "keep-time")
        if sys.argv[4] == "crashed":
            os.remove(os.path.join(path, "index", "chroma", "mars-closed"))
        print(json.dumps(ask(path)))
    elif step == "fuzz":  # random flips in every file of the segment, one copy per trial
        pristine, results = path, []
        for trial in range(int(sys.argv[3])):
            where = f"{pristine}-{trial}"
            shutil.copytree(pristine, where)
            rng = random.Random(trial)
            segment = live_segment(where)
            for name in ("header.bin", "data_level0.bin", "link_lists.bin", "length.bin",
                         "index_metadata.pickle"):
                file = os.path.join(segment, name)
                if os.path.exists(file) and os.path.getsize(file):
                    flip(file, [(rng.randrange(os.path.getsize(file)), rng.randrange(256))
                                for _ in range(rng.randint(1, 8))], keep_time=trial % 2 == 0)
            if trial % 3 == 0:
                os.remove(os.path.join(where, "index", "chroma", "mars-closed"))
            try:
                results.append(ask(where))
            except MarsError as exc:  # refused, typed: allowed
                results.append({"refused": type(exc).__name__})
            shutil.rmtree(where)
        print(json.dumps(results))
    elif step == "crash-after-writes":
        indexing.FLUSH_AT = 10  # the index writes what it buffers every 10 entries, so it
        s = store()  # holds the writes the log still holds (a query merges the buffer in)
        for i in range(30):
            s.add(f"late note {i}: tea by the sea", namespace="a")
        print("acknowledged", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    elif step == "ask":
        print(json.dumps(ask(path)))
    elif step == "open":
        try:
            store().close()
            print(json.dumps({"opened": True}))
        except MarsError as exc:
            print(json.dumps({"refused": type(exc).__name__, "why": str(exc)}))
""")


def _run(tmp_path: Path, *argv: str) -> tuple[str, str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = children.run([sys.executable, str(script), *argv], env=env, cwd=tmp_path,
                        capture_output=True, text=True, timeout=50, check=False)
    assert done.returncode == 0, f"child died with {done.returncode}:\n{done.stderr[-3000:]}"
    return (done.stdout.strip().splitlines() or [""])[-1], done.stderr


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed store of 200 memories with an embedded Chroma index (copied per test)."""
    tmp = tmp_path_factory.mktemp("damaged")
    _run(tmp, str(tmp / "store"), "fill")
    return tmp / "store"


def _copy(pristine: Path, tmp_path: Path) -> Path:
    shutil.copytree(pristine, tmp_path / "store")
    return tmp_path / "store"


@pytest.mark.parametrize(("keep_time", "crashed"), [("keep-time", "closed"),
                                                    ("new-time", "closed"),
                                                    ("keep-time", "crashed")])
def test_flipped_neighbour_ids_are_found_and_the_namespace_rebuilt(
        pristine: Path, tmp_path: Path, keep_time: str, crashed: str) -> None:
    """Bytes flipped in ``data_level0.bin`` killed the process on the first retrieve."""
    path = _copy(pristine, tmp_path)
    out, err = _run(tmp_path, str(path), "links", keep_time, crashed)
    found = json.loads(out)
    assert found["repaired"] == 1 and found["hits"] > 0 and found["verify"], found
    assert "damaged index files" in err
    assert json.loads(_run(tmp_path, str(path), "ask")[0])["repaired"] == 0  # now sound


def test_random_flips_never_crash(pristine: Path, tmp_path: Path) -> None:
    """Twelve random damages to every file of the segment: each store opens and answers
    (repaired when its files were found damaged), or refuses with our error."""
    out, _ = _run(tmp_path, str(_copy(pristine, tmp_path)), "fuzz", "12")
    results = json.loads(out)
    assert len(results) == 12
    answered = [r for r in results if "hits" in r]
    assert all(r["hits"] > 0 and r["verify"] for r in answered), results
    assert sum(r.get("repaired", 0) for r in answered) >= 6, results  # found, not luck


def test_an_empty_record_store_beside_an_index_is_refused(pristine: Path,
                                                          tmp_path: Path) -> None:
    path = _copy(pristine, tmp_path)
    (path / "mars.sqlite3").write_bytes(b"")
    out = json.loads(_run(tmp_path, str(path), "open")[0])
    assert out["refused"] == "CorruptStoreError" and "0 bytes" in out["why"], out
    assert (path / "mars.sqlite3").stat().st_size == 0  # nothing written over it


def test_another_programs_database_is_refused(pristine: Path, tmp_path: Path) -> None:
    path = _copy(pristine, tmp_path)
    (path / "mars.sqlite3").unlink()
    with sqlite3.connect(path / "mars.sqlite3") as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    before = (path / "mars.sqlite3").read_bytes()
    out = json.loads(_run(tmp_path, str(path), "open")[0])
    assert out["refused"] == "CorruptStoreError" and "another database" in out["why"], out
    assert (path / "mars.sqlite3").read_bytes() == before
    (path / "mars.sqlite3").write_bytes(b"not a database at all" * 100)
    assert json.loads(_run(tmp_path, str(path), "open")[0])["refused"] == "CorruptStoreError"


def test_a_deleted_write_ahead_log_is_reported_and_the_index_rebuilt(
        pristine: Path, tmp_path: Path) -> None:
    """A killed writer's log holds its acknowledged writes; deleting it leaves the index
    ahead of the records: the next open says so and rebuilds the index, and nothing the
    store returns names a lost memory."""
    path = _copy(pristine, tmp_path)
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = children.run([sys.executable, str(script), str(path), "crash-after-writes"],
                        env=env, capture_output=True, text=True, timeout=50, check=False)
    assert done.returncode == -9 and "acknowledged" in done.stdout, done.stderr[-2000:]
    (path / "mars.sqlite3-wal").unlink()
    out, err = _run(tmp_path, str(path), "ask")
    found = json.loads(out)
    assert found["ahead"] is not None and found["ahead"][0] > found["ahead"][1], found
    assert found["memories"] == 200 and found["verify"], found  # the checkpointed state
    assert "lost committed writes" in err and "rebuilt" in err
