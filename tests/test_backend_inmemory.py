"""InMemoryBackend: the conformance suite (ephemeral and persistent) plus its own guarantees."""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest
from filter_strategies import filter_strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mars_core.backends.base import (
    Eq,
    Filter,
    In,
    MetaValue,
    Not,
    Record,
    VectorBackend,
    WriteBatch,
    matches,
)
from mars_core.backends.memory import InMemoryBackend
from mars_core.errors import (
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    MarsBackendError,
    StoreClosedError,
    ValidationError,
)
from mars_core.testing import VectorBackendConformance

REPO = pathlib.Path(__file__).resolve().parents[1]
C = "mem"


class TestInMemoryEphemeral(VectorBackendConformance):
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return InMemoryBackend()


class TestInMemoryPersistent(VectorBackendConformance):
    persistent = True
    atomic_apply = True

    def make_backend(self, path: pathlib.Path) -> VectorBackend:
        return InMemoryBackend(path, compact_every=7)  # small: compaction runs in the suite


# --- helpers ------------------------------------------------------------------------------


def vec(*head: float, dim: int = 4) -> np.ndarray:
    return np.array([*head, *([0.0] * (dim - len(head)))], dtype=np.float32)


def uid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def journal(path: pathlib.Path) -> pathlib.Path:
    return path / "journal.log"


def write_some(path: pathlib.Path, n: int = 3, compact_every: int = 10_000) -> None:
    with InMemoryBackend(path, compact_every=compact_every) as b:
        b.ensure_collection(C, 4)
        for i in range(n):
            b.upsert(C, [Record(uid(i), vec(1.0, float(i)), f"doc {i}", {"i": i})])


# --- query details ------------------------------------------------------------------------


def test_ties_are_broken_by_id_ascending() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 4)
        ids = [uid(i) for i in (5, 1, 9, 3, 7)]
        b.upsert(C, [Record(i, vec(1.0, 1.0), "", {}) for i in ids])
        b.upsert(C, [Record(uid(0), vec(1.0), "", {})])
        hits = b.query(C, vec(1.0, 1.0), k=3)
        assert [h.record.id for h in hits] == sorted(ids)[:3]
        assert [h.record.id for h in b.query(C, vec(1.0, 1.0), k=6)][-1] == uid(0)


def test_zero_vectors_score_zero() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 4)
        b.upsert(C, [Record("z", vec(), "", {}), Record("a", vec(1.0), "", {})])
        scores = {h.record.id: h.score for h in b.query(C, vec(1.0), k=2)}
        assert scores["z"] == 0.0 and scores["a"] == pytest.approx(1.0)
        assert [h.score for h in b.query(C, vec(), k=2)] == [0.0, 0.0]
        b.upsert(C, [Record("a", vec(), "", {})])  # a zero vector replaces a real one
        assert [h.score for h in b.query(C, vec(1.0), k=2)] == [0.0, 0.0]


def test_get_without_ids_is_insertion_order_across_deletes() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 4)
        b.upsert(C, [Record(f"r{i}", vec(float(i + 1)), "", {"ns": "a"}) for i in range(6)])
        b.delete(C, ["r1", "r3"])  # swap-with-last moves rows around
        b.upsert(C, [Record("r0", None, "edited", {"ns": "a"}), Record("r1", vec(1.0), "", {})])
        assert [r.id for r in b.get(C)] == ["r0", "r2", "r4", "r5", "r1"]
        assert [r.id for r in b.get(C, where=Eq("ns", "a"))] == ["r0", "r2", "r4", "r5"]
        b.get(C, with_vectors=True)[0].vector[:] = 9.0  # type: ignore[index]
        hits = b.query(C, vec(1.0), k=6)
        assert [h.score for h in hits] == pytest.approx([1.0] * 5)


def test_matrix_growth_and_swap_delete_keep_vectors_right() -> None:
    rng = np.random.default_rng(0)
    vectors = {f"r{i}": rng.normal(size=8).astype(np.float32) for i in range(100)}
    with InMemoryBackend() as b:
        b.ensure_collection(C, 8)
        b.upsert(C, [Record(k, v, "", {}) for k, v in vectors.items()])
        for k in list(vectors)[::3]:
            b.delete(C, [k])
            del vectors[k]
        for rec in b.get(C, with_vectors=True):
            v = vectors[rec.id]
            assert rec.vector is not None
            np.testing.assert_allclose(rec.vector, v / np.linalg.norm(v), atol=1e-6)
        for k, v in list(vectors.items())[:10]:
            assert b.query(C, v, k=1)[0].record.id == k


def test_bad_arguments_are_validation_errors() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 4)
        with pytest.raises(ValidationError):
            b.query(C, vec(1.0), k=-1)
        with pytest.raises(ValidationError):
            b.get(C, where={"namespace": "a"})  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            b.get(C, ids="abc")
        with pytest.raises(ValidationError):
            b.ensure_collection("", 4)
        with pytest.raises(ValidationError):
            b.ensure_collection("x", -1)
        with pytest.raises(EmbeddingMismatchError, match="embed with the model"):
            b.upsert(C, [Record("a", vec(1.0, dim=5), "", {})])
        with pytest.raises(ValidationError):
            b.upsert(C, [Record("", vec(1.0), "", {})])
    with pytest.raises(ValidationError):
        InMemoryBackend(compact_every=0)


def test_threads_do_not_corrupt_state(tmp_path: pathlib.Path) -> None:
    with InMemoryBackend(tmp_path, compact_every=50) as b:
        b.ensure_collection(C, 4)

        def writer(t: int) -> None:
            for i in range(100):
                b.upsert(C, [Record(f"{t}-{i}", vec(1.0, float(t)), "", {"t": str(t)})])
                b.query(C, vec(1.0), k=3, where=Eq("t", str(t)))

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(b.get(C)) == 400
    with InMemoryBackend(tmp_path) as b:
        assert len(b.get(C, where=Eq("t", "2"))) == 100


# --- journal recovery ---------------------------------------------------------------------


def test_torn_last_line_is_ignored_and_truncated(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path)
    size = journal(tmp_path).stat().st_size
    with journal(tmp_path).open("ab") as f:
        f.write(b'1234abcd {"t":"b","ops":[{"u":"mem","r":[["torn"')
    with InMemoryBackend(tmp_path) as b:
        assert [r.id for r in b.get(C)] == [uid(0), uid(1), uid(2)]
        assert journal(tmp_path).stat().st_size == size
        b.upsert(C, [Record(uid(3), vec(1.0), "after", {})])
    with InMemoryBackend(tmp_path) as b:
        assert [r.document for r in b.get(C)][-1] == "after"


def test_garbled_complete_last_line_is_dropped(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path)
    data = journal(tmp_path).read_bytes()
    lines = data.split(b"\n")
    lines[-2] = lines[-2].replace(b"doc 2", b"doc X")  # crc no longer matches
    journal(tmp_path).write_bytes(b"\n".join(lines))
    with InMemoryBackend(tmp_path) as b:
        assert [r.id for r in b.get(C)] == [uid(0), uid(1)]
    assert b"doc X" not in journal(tmp_path).read_bytes()


def test_corruption_in_the_middle_is_an_error(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path)
    data = journal(tmp_path).read_bytes()
    assert data.count(b"doc 1") == 1
    journal(tmp_path).write_bytes(data.replace(b"doc 1", b"doc Y"))
    with pytest.raises(CorruptStoreError, match="line 4"):
        InMemoryBackend(tmp_path)
    journal(tmp_path).write_bytes(data)  # the failed open released the lock
    with InMemoryBackend(tmp_path) as b:
        assert len(b.get(C)) == 3


def test_corrupt_snapshot_is_an_error(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path)
    with InMemoryBackend(tmp_path) as b:
        b.compact()
    (tmp_path / "snapshot.json").write_bytes(b'{"format": "mars-inmemory-snapshot", "vers')
    with pytest.raises(CorruptStoreError):
        InMemoryBackend(tmp_path)


def test_stale_journal_after_crashed_compaction_is_not_replayed(tmp_path: pathlib.Path) -> None:
    with InMemoryBackend(tmp_path) as b:
        b.ensure_collection(C, 4)
        for name in ("a", "b", "c"):
            b.upsert(C, [Record(name, vec(1.0), name, {})])
        b.delete(C, ["a"])
        b.upsert(C, [Record("a", vec(1.0), "a again", {})])
        old_journal = journal(tmp_path).read_bytes()
        b.compact()
    journal(tmp_path).write_bytes(old_journal)  # as if we crashed before the truncation
    with InMemoryBackend(tmp_path) as b:
        assert [(r.id, r.document) for r in b.get(C)] == [("b", "b"), ("c", "c"), ("a", "a again")]
    assert b'"a again"' not in journal(tmp_path).read_bytes()


def test_compaction_failing_after_replace_loses_nothing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mars_core.backends import memory

    def fail(path: pathlib.Path) -> None:
        raise OSError("disk on fire")

    write_some(tmp_path)
    with InMemoryBackend(tmp_path, compact_every=100) as b:
        monkeypatch.setattr(memory, "_fsync_dir", fail)
        with pytest.raises(MarsBackendError, match="disk on fire"):
            b.compact()
        with pytest.raises(MarsBackendError, match="reopen"):
            b.upsert(C, [Record(uid(7), vec(1.0), "refused", {})])
        monkeypatch.undo()
        assert len(b.get(C)) == 3
    with InMemoryBackend(tmp_path) as b:
        assert [r.id for r in b.get(C)] == [uid(0), uid(1), uid(2)]
        b.upsert(C, [Record(uid(7), vec(1.0), "accepted", {})])
    with InMemoryBackend(tmp_path) as b:
        assert [r.document for r in b.get(C)][-1] == "accepted"


def test_auto_compaction(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path, n=12, compact_every=5)
    lines = journal(tmp_path).read_bytes().splitlines()
    assert 1 <= len(lines) <= 5
    assert (tmp_path / "snapshot.json").exists()
    with InMemoryBackend(tmp_path) as b:
        assert [r.id for r in b.get(C)] == [uid(i) for i in range(12)]


def test_vectors_round_trip_bit_exact(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(1)
    with InMemoryBackend(tmp_path) as b:
        b.ensure_collection(C, 16)
        b.upsert(
            C, [Record(str(i), rng.normal(size=16).astype(np.float32), "", {}) for i in range(20)]
        )
        before = {r.id: r.vector for r in b.get(C, with_vectors=True)}
        b.upsert(
            C,
            [Record(str(i), rng.normal(size=16).astype(np.float32), "", {}) for i in range(20, 25)],
        )
        b.compact()
        before.update({r.id: r.vector for r in b.get(C, with_vectors=True)})
    with InMemoryBackend(tmp_path) as b:
        after = {r.id: r.vector for r in b.get(C, with_vectors=True)}
    assert before.keys() == after.keys()
    for k, v in before.items():
        assert v is not None and v.tobytes() == after[k].tobytes()  # type: ignore[union-attr]


def test_journal_entry_is_one_crc_line_per_batch(tmp_path: pathlib.Path) -> None:
    import json
    import zlib

    with InMemoryBackend(tmp_path) as b:
        b.ensure_collection(C, 4)
        before = journal(tmp_path).read_bytes().count(b"\n")
        batch = WriteBatch().upsert(C, [Record("a", vec(1.0), "", {})]).delete(C, ["a", "x"])
        b.apply(batch.upsert(C, [Record("b", vec(1.0), "", {})]))
        lines = journal(tmp_path).read_bytes().splitlines()
    assert len(lines) == before + 1
    crc, payload = lines[-1].split(b" ", 1)
    assert int(crc, 16) == zlib.crc32(payload)
    assert [list(op) for op in json.loads(payload)["ops"]] == [["u", "r"], ["d", "i"], ["u", "r"]]


# --- compaction really forgets ------------------------------------------------------------


def all_bytes(path: pathlib.Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_compaction_removes_deleted_text_from_every_file(tmp_path: pathlib.Path) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    with InMemoryBackend(tmp_path) as b:
        b.ensure_collection(C, 4)
        b.ensure_collection("audit", 0)
        b.upsert(C, [Record("keep", vec(1.0), "harmless", {"ns": "a"})])
        b.upsert(C, [Record("gone", vec(0.0, 1.0), f"text {secret}", {"tag": secret})])
        b.upsert("audit", [Record("log", None, f"saw {secret}", {})])
        b.compact()
        b.upsert(C, [Record("gone", None, f"edited {secret}", {"tag": secret})])
        assert all_bytes(tmp_path).count(secret.encode()) >= 3  # the test can fail
        b.delete(C, ["gone"])
        b.delete("audit", ["log"])
        b.compact()
        assert secret.encode() not in all_bytes(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "LOCK",
            "journal.log",
            "snapshot.json",
        ]
    with InMemoryBackend(tmp_path) as b:
        assert [r.id for r in b.get(C)] == ["keep"]


def test_leftover_snapshot_tmp_is_removed_on_open(tmp_path: pathlib.Path) -> None:
    write_some(tmp_path)
    (tmp_path / "snapshot.json.tmp").write_text("SECRET-from-a-crashed-compaction")
    with InMemoryBackend(tmp_path) as b:
        assert len(b.get(C)) == 3
        assert not (tmp_path / "snapshot.json.tmp").exists()


def test_compact_without_path_is_a_noop() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 4)
        b.compact()
        assert b.get(C) == []
    with pytest.raises(StoreClosedError):
        b.compact()


# --- the directory lock -------------------------------------------------------------------


def test_lock_prevents_second_instance_and_is_released(tmp_path: pathlib.Path) -> None:
    first = InMemoryBackend(tmp_path)
    with pytest.raises(ConflictError, match="close it first"):
        InMemoryBackend(tmp_path)
    first.close()
    with InMemoryBackend(tmp_path) as second:
        second.ensure_collection(C, 4)


def test_lock_holds_across_processes(tmp_path: pathlib.Path) -> None:
    code = textwrap.dedent(
        f"""
        from mars_core.backends.memory import InMemoryBackend
        from mars_core.errors import ConflictError
        try:
            InMemoryBackend({str(tmp_path)!r})
        except ConflictError:
            raise SystemExit(3)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with InMemoryBackend(tmp_path):
        held = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    free = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    assert (held.returncode, free.returncode) == (3, 0)


def test_unusable_path_is_a_backend_error(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(MarsBackendError):
        InMemoryBackend(tmp_path / "file")


# --- the posting index agrees with `matches` ----------------------------------------------

KEYS = ("namespace", "type", "n", "flag")
scalars = st.one_of(
    st.sampled_from(["a", "b", "c", "1", "True"]),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 0.5, -1.5, 2.0]),
    st.booleans(),
)
bound = st.one_of(st.none(), st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]))
metadata, filters = filter_strategies(KEYS, scalars, bound, max_in=3, max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    metas=st.lists(metadata, min_size=1, max_size=25),
    flts=st.lists(filters, min_size=1, max_size=5),
    deletes=st.sets(st.integers(0, 24), max_size=5),
)
def test_fast_filter_path_agrees_with_matches(
    metas: list[dict[str, MetaValue]], flts: list[Filter], deletes: set[int]
) -> None:
    with InMemoryBackend() as b:
        b.ensure_collection(C, 2)
        b.upsert(C, [Record(str(i), np.array([1.0, i]), "", m) for i, m in enumerate(metas)])
        b.delete(C, [str(i) for i in deletes])
        # metadata updates exercise un-indexing (str <-> number type changes included)
        kept = [i for i in range(0, len(metas), 2) if i not in deletes]
        b.upsert(C, [Record(str(i), None, "", metas[-1 - i]) for i in kept])
        live = {r.id: r.metadata for r in b.get(C)}
        for flt in flts:
            expected = [rid for rid, m in live.items() if matches(flt, m)]
            assert [r.id for r in b.get(C, where=flt)] == expected
            hits = b.query(C, np.array([1.0, 0.0]), k=len(metas), where=flt)
            assert sorted(h.record.id for h in hits) == sorted(expected)


def test_bool_and_number_equality_follows_matches() -> None:
    with InMemoryBackend() as b:
        b.ensure_collection("p", 0)
        b.upsert("p", [Record("t", None, "", {"x": True}), Record("s", None, "", {"x": "1"})])
        assert [r.id for r in b.get("p", where=Eq("x", 1))] == ["t"]
        assert [r.id for r in b.get("p", where=In("x", (1.0, "1")))] == ["t", "s"]
        b.upsert("p", [Record("i", None, "", {"x": 1})])
        assert [r.id for r in b.get("p", where=Eq("x", True))] == ["t", "i"]
        assert [r.id for r in b.get("p", where=Not(Eq("x", 1)))] == ["s"]


# --- crash loop ---------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from mars_core.backends.base import Record, WriteBatch
    from mars_core.backends.memory import InMemoryBackend

    b = InMemoryBackend(sys.argv[1], compact_every=9)
    b.ensure_collection("v", 4)
    b.ensure_collection("meta", 0)
    got = b.get("meta", ["counter"])
    n = int(got[0].metadata["n"]) if got else 0
    print("ready", flush=True)
    while True:
        n += 1
        batch = WriteBatch()
        batch.upsert("v", [Record(f"r{n}", np.array([1.0, n, 0, 1]), "x" * (n % 50), {"n": n})])
        batch.delete("v", [f"r{n - 3}"])
        batch.upsert("meta", [Record("counter", None, "", {"n": n})])
        b.apply(batch)
    """
)


def check_consistent(path: pathlib.Path) -> int:
    with InMemoryBackend(path) as b:
        b.ensure_collection("v", 4)
        b.ensure_collection("meta", 0)
        got = b.get("meta", ["counter"])
        n = int(got[0].metadata["n"]) if got else 0
        ids = [r.id for r in b.get("v")]
        assert ids == [f"r{i}" for i in range(max(1, n - 2), n + 1)], (n, ids)
        for rec in b.get("v", with_vectors=True):
            i = int(rec.id[1:])
            assert rec.metadata == {"n": i} and rec.document == "x" * (i % 50)
            expected = np.array([1.0, i, 0, 1]) / np.linalg.norm([1.0, i, 0, 1])
            np.testing.assert_allclose(rec.vector, expected, atol=1e-6)  # type: ignore[arg-type]
        return n


@pytest.mark.slow
def test_sigkill_writer_loop_reopens_consistently(tmp_path: pathlib.Path) -> None:
    rng = random.Random(42)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    last = 0
    deadline = time.monotonic() + 12
    rounds = 0
    while time.monotonic() < deadline or rounds < 3:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        n = check_consistent(tmp_path)
        assert n >= last  # acknowledged batches are never lost
        last = n
        rounds += 1
    assert last > 0
