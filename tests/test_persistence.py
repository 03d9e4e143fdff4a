"""Persistence: reopen exactly, survive SIGKILL, erase to the last byte, one writer.

* Reopen: a child process writes memories (adds, links, retrievals, forgets, updates,
  restores), prints a JSON summary of its export, stats and audit, then exits without
  closing, closes cleanly, or is killed; the parent reopens and compares everything.
* Crash loop: a child does random adds, observes, forgets, updates, erasures and
  maintenance, printing each id (or erased text) only *after* the call returned, and is
  killed with SIGKILL once it has acknowledged a random (seeded) number of calls, so the
  kill lands inside one of the next calls, wherever the scheduler has the child: the
  store must reopen, verify, keep every invariant and every acknowledged write, and no
  file under its directory may hold an acknowledged erasure's text. 38 trials on the
  numpy index and on Chroma on disk (``make test``: the first 11 of them).
* Erasure, step by step: a child dies (``os._exit``) at each step of an erasure — before
  the transaction commits, after it, before the record store's purge, before the index's
  mark, before its compaction — and the reopened store holds the erasure whole or not at
  all, and no erased byte once it is whole.
* One writer: two processes opening one store (with the same or different ``index=``)
  at once: one writes, the other waits ``lock_timeout`` and gets ``ConflictError``; a
  reader process beside a busy writer only ever sees whole transactions.

No assertion depends on timing: processes coordinate through their output and files.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import children
import pytest
from invariants import check_invariants
from run_once import once_per_run

from mars_core.bench.storage import make_texts
from mars_core.clock import FakeClock
from mars_core.errors import ConflictError
from mars_core.model import MemoryStatus
from mars_core.store import MemoryStore
from mars_core.testing import index_fault, index_sync, memory_graph, record_store, vector_index

KEY_HEX = bytes(range(32)).hex()
KEY = bytes.fromhex(KEY_HEX)  # the children's audit key: the parent passes it too
ROOT = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent("""
    import json, os, sys, time
    from datetime import timedelta
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    path, mode, index = sys.argv[1], sys.argv[2], sys.argv[4]
    store = MemoryStore.open(path, index=index, clock=FakeClock(tick=timedelta(seconds=3)),
                             audit_key=bytes.fromhex(sys.argv[3]), budget=40,
                             namespace_budgets={"bob": 25}, policy="lru", seed=5)
    a = store.add("Ana moved to Lisbon in May", type="episodic", sensitivity=0.2,
                  provenance={"source": "user", "conversation_id": "c1", "turn": 1})
    b = store.add("Ana lives in Lisbon", type="semantic",
                  payload={"concept": "Ana", "relations": [["livesIn", "Lisbon"]]},
                  provenance={"source": "summary", "derived_from": [a.id]})
    t = store.add("book the flight to Lisbon", type="task",
                  payload={"goal": "book flight", "status": "active", "dependencies": [a.id],
                           "priority": 0.9})
    s = store.add("Bob is Ana's brother", type="social", namespace="bob",
                  payload={"entity": "Bob", "relationship_type": "brother",
                           "attributes": {"city": "Porto"}}, metadata={"k": [1, "two"]})
    store.link(b.id, "isA", a.id)
    store.link(t.id, "attachesToGoal", b.id)
    for q in ("where does Ana live", "Lisbon flight", "Ana Lisbon"):
        store.retrieve(q, budget_tokens=30)
    store.retrieve("Bob brother", namespace="bob")
    store.retrieve("Ana", read_only=True)
    old = store.add("an old note about the weather in Porto", pinned=False)
    store.forget(old.id, reason="no longer relevant")
    upd = store.update(b.id, "Ana lives in Lisbon since May")
    for i in range(12):  # over budget: evictions by the policy
        store.add(f"filler memory number {i} about nothing much", namespace="bob")
    store.restore(old.id)
    summary = {"export": store.export_jsonld(), "stats": store.stats(),
               "audit_len": len(store.audit), "audit_head": store.audit.head,
               "audit": [e.model_dump(mode="json") for e in store.audit.events()],
               "ids": {"a": a.id, "b": b.id, "t": t.id, "s": s.id, "old": old.id,
                       "upd": upd.id}}
    print(json.dumps(summary), flush=True)
    if mode == "exit":
        os._exit(0)  # no close, no cleanup
    elif mode == "close":
        store.close()
    else:
        time.sleep(60)  # the parent kills us
""")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _files_holding(root: Path, needles: list[str]) -> list[str]:
    """Files under ``root`` whose bytes hold any of ``needles`` (UTF-8)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(root)}: {n!r}" for n in needles if n.encode() in data]
    return found


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("index", "mode"), [  # Qdrant path mode: the kill case only
    *((i, m) for i in ("numpy", "chroma") for m in ("exit", "close", "kill")),
    ("qdrant", "kill")])
def test_reopen_after_another_process_wrote(tmp_path: Path, mode: str, index: str) -> None:
    pytest.importorskip({"numpy": "numpy", "chroma": "chromadb", "qdrant": "qdrant_client"}[index])
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    path = tmp_path / "store"
    proc = children.popen([sys.executable, str(script), str(path), mode, KEY_HEX, index],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=_env(), cwd=tmp_path)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"writer failed: {proc.communicate(timeout=30)[1]}")
        if mode == "kill":
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if mode == "kill":
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    summary = json.loads(line)
    ids = summary["ids"]

    with MemoryStore.open(path, clock=FakeClock(), audit_key=KEY) as store:  # index: manifest
        assert store.stats()["index"] == index
        # memories, edges, access statistics and archive: the whole export
        assert store.export_jsonld() == summary["export"]
        stats = json.loads(json.dumps(store.stats()))
        assert {k: v for k, v in stats.items() if k != "index_choice"} == {
            k: v for k, v in summary["stats"].items() if k != "index_choice"}
        # audit: same length, same head, same events, chains verify
        assert len(store.audit) == summary["audit_len"]
        assert store.audit.head == summary["audit_head"]
        assert [e.model_dump(mode="json") for e in store.audit.events()] == summary["audit"]
        assert store.verify().ok
        check_invariants(store)
        # spot checks, so a vacuous summary cannot pass
        assert store.config.budget == 40 and store.config.namespace_budgets == {"bob": 25}
        assert store.get(ids["b"]).status is MemoryStatus.ARCHIVED
        assert store.get(ids["upd"]).content == "Ana lives in Lisbon since May"
        assert ids["b"] in memory_graph(store, "default").ancestors(ids["upd"])
        assert store.get(ids["a"]).access_count >= 1
        assert store.get(ids["a"]).provenance.conversation_id == "c1"
        assert store.get(ids["s"], namespace="bob").payload.attributes == {"city": "Porto"}
        assert store.get(ids["old"]).is_active  # forgotten, then restored
        assert summary["stats"]["namespaces"]["bob"]["archived"] > 0  # the policy evicted
        assert store.get(ids["s"], namespace="bob").metadata == {"k": [1, "two"]}
        # and the reopened store keeps working and keeps the same id sequence
        nxt = store.add("one more after reopen")
        assert nxt.id not in json.dumps(summary["export"])
        check_invariants(store)


# --- crash loop ---------------------------------------------------------------------------

CRASHER = textwrap.dedent("""
    import random, sys
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    path, seed, key, index = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rng = random.Random(seed)
    words = "ana bob tea coffee lisbon porto flight meeting invoice piano garden rain".split()
    store = MemoryStore.open(path, index=index, clock=FakeClock(), audit_key=bytes.fromhex(key),
                             budget=60, namespace_budgets={"b": 30}, policy="lru")
    ids = [n.id for n in store.list("a", status=None) + store.list("b", status=None)]
    print("READY", flush=True)
    n = 0
    while True:
        n += 1
        ns = "ab"[n % 2]
        marker = f"zq{seed}x{n}q"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + " " + marker
        roll = rng.random()
        live = [i for i in ids[-30:] if i in {m.id for m in store.list(ns, status=None)}]
        if roll < 0.45 or not live:
            node = store.add(text, namespace=ns, type=rng.choice(["episodic", "semantic"]))
            ids.append(node.id)
            print("ADD", node.id, flush=True)
        elif roll < 0.6:
            for node in store.observe("user", "I live in Porto now " + text, namespace=ns,
                                      conversation_id="c"):
                ids.append(node.id)
                print("ADD", node.id, flush=True)
        elif roll < 0.68:
            store.retrieve(text, namespace=ns, budget_tokens=20)
        elif roll < 0.76:
            victim = rng.choice(live)
            store.forget(victim, namespace=ns)
            print("FORGET", victim, flush=True)
        elif roll < 0.84:
            node = store.update(rng.choice(live), text, namespace=ns)
            ids.append(node.id)
            print("ADD", node.id, flush=True)
        elif roll < 0.94:
            victim = store.get(rng.choice(live), namespace=ns)
            receipt = store.erase(victim.id, namespace=ns)
            for gone in receipt.erased:
                print("ERASED", gone, flush=True)
            mark = victim.content.split()[-1]
            if not any(mark in m.content for s in ("a", "b") for m in store.list(s, status=None)):
                print("ERASE_TEXT", mark, flush=True)  # no survivor holds it (a fact, say)
        else:
            store.maintain(ns)
            print("MAINTAINED", flush=True)
""")

ITERATIONS = {"numpy": 28, "chroma": 10}
"""Kill -9 iterations per index in the full run (38 in all; a Chroma child needs ~2 s of
CPU to start)."""

SMOKE_ITERATIONS = {"numpy": 8, "chroma": 3}
"""The iterations ``make test`` runs: the first ones of the full loop (same seeds)."""

LOOPS = [*(pytest.param((index, n), id=index) for index, n in SMOKE_ITERATIONS.items()),
         *(pytest.param((index, n), id=f"{index}-full", marks=pytest.mark.heavy)
           for index, n in ITERATIONS.items())]
"""The crash loops the tests below take (indirect ``crash_runs``): each index's smoke,
and its full loop (``heavy``)."""


@pytest.fixture(scope="module")
def crash_runs(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Run the crash loop once per index and length (and per run of the suite, whichever
    worker asks first); what each iteration observed."""
    index, iterations = request.param
    if index == "chroma":
        pytest.importorskip("chromadb")
    return once_per_run(tmp_path_factory, f"crash-{index}-{iterations}",
                        lambda base: _crash_loop(base, index, iterations))


def _crash_loop(base: Path, index: str, iterations: int) -> list[dict[str, Any]]:
    script = base / "crasher.py"
    script.write_text(CRASHER, encoding="utf-8")
    rng = random.Random(20260101)
    runs: list[dict[str, Any]] = []
    erased_texts: dict[Path, list[str]] = {}
    for it in range(iterations):
        # every second iteration reopens the store the previous child was killed in
        path = base / f"store{it // 2}"
        target = rng.randint(0, 40)  # acknowledged lines before the kill
        lines = _run_until_killed(script, [str(path), str(it), KEY_HEX, index], target, base)
        acked = [ln.split() for ln in lines]
        erased_texts.setdefault(path, []).extend(p[1] for p in acked if p[0] == "ERASE_TEXT")
        run: dict[str, Any] = {
            "it": it, "of": iterations, "path": path, "target": target, "index": index,
            "error": None,
            "added": [p[1] for p in acked if p[0] == "ADD"],
            "forgotten": [p[1] for p in acked if p[0] == "FORGET"],
            "erased": {p[1] for p in acked if p[0] == "ERASED"},
            "erasures": sum(1 for p in acked if p[0] == "ERASE_TEXT"),
            "maintained": sum(1 for p in acked if p[0] == "MAINTAINED")}
        runs.append(run)
        try:  # the parent reopens right away (the next child may reopen the same directory)
            with MemoryStore.open(path, clock=FakeClock(), audit_key=KEY) as store:
                assert store.stats()["index"] == index
                check_invariants(store)
                nodes = {n.id: n for ns in ("a", "b") for n in store.list(ns, status=None)}
                # an erasure may commit and be killed before it printed its ids: gone, but
                # by an erasure the audit records (invariant 4 checked that too)
                erased = {i for e in store.audit.events() if e.op.value == "erase"
                          for i in e.node_ids}
            run["missing"] = [i for i in run["added"] if i not in nodes and i not in erased]
            run["not_archived"] = [i for i in run["forgotten"] if i in nodes
                                   and nodes[i].is_active]
            run["resurrected"] = [i for i in run["erased"] if i in nodes]
            run["leaks"] = _files_holding(path, erased_texts[path])
        except AssertionError as exc:  # reported per iteration below
            run["error"] = f"{type(exc).__name__}: {exc}"
    return runs


def _run_until_killed(script: Path, args: list[str], target: int, cwd: Path) -> list[str]:
    """Run the crasher until it has acknowledged ``target`` lines, then SIGKILL it: the
    kill lands wherever the child is by then (somewhere in the next calls, as the
    scheduler has it); returns its complete output lines (what it acknowledged)."""
    proc = children.popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=_env(), cwd=cwd)
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[bytes] = []
    enough = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        acked = -1  # READY comes first
        for raw in iter(proc.stdout.readline, b""):
            lines.append(raw)
            acked += 1
            if acked >= target:
                enough.set()
        enough.set()  # the child ended on its own: reported below

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if not enough.wait(timeout=600):
        proc.kill()
        pytest.fail(f"the crasher did not acknowledge {target} calls")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reader.join(timeout=30)
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, f"the crasher died on its own:\n{err}"
    return [ln.decode() for ln in lines if ln.endswith(b"\n") and ln != b"READY\n"]


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", LOOPS, indirect=True)
def test_crash_loop_did_real_work(crash_runs: list[dict[str, Any]]) -> None:
    iterations = crash_runs[0]["of"]
    assert len(crash_runs) == iterations
    total = sum(len(r["added"]) for r in crash_runs)
    assert total > 2 * iterations, f"only {total} acknowledged writes in {iterations} runs"
    assert sum(1 for r in crash_runs if r["added"]) >= iterations // 2
    assert any(r["forgotten"] for r in crash_runs)
    assert sum(r["erasures"] for r in crash_runs) >= iterations // 4
    assert any(r["maintained"] for r in crash_runs)


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", LOOPS, indirect=True)
def test_sigkill_loses_no_acknowledged_write_and_leaves_no_erased_byte(
        crash_runs: list[dict[str, Any]]) -> None:
    """Every iteration of the loop (one test per index: a test per iteration would run
    the whole module-scoped loop again for each)."""
    failures = [_lost(run) for run in crash_runs]
    assert not any(failures), "\n".join(f for f in failures if f)


def _lost(run: dict[str, Any]) -> str:
    """What iteration ``run`` lost or leaked ("" when nothing)."""
    where = f"iteration {run['it']} (killed after {run['target']} acknowledged calls)"
    if run["error"] is not None:
        return f"{where}: {run['error']}"
    for key, what in (("missing", "acknowledged adds lost"),
                      ("not_archived", "acknowledged forgets lost"),
                      ("resurrected", "acknowledged erasures undone"),
                      ("leaks", "erased text left on disk")):
        if run[key]:
            return f"{where}: {what}: {run[key][:5]}"
    return ""


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", LOOPS, indirect=True)
def test_crashed_store_keeps_working(crash_runs: list[dict[str, Any]]) -> None:
    """After the last crash the store accepts writes, and they survive a clean reopen."""
    path = crash_runs[-1]["path"]
    with MemoryStore.open(path, clock=FakeClock(), audit_key=KEY) as store:
        node = store.add("written after all the crashes", namespace="a")
        export = store.export_jsonld()
    with MemoryStore.open(path, clock=FakeClock(), audit_key=KEY) as store:
        assert store.get(node.id, namespace="a").content == "written after all the crashes"
        assert store.export_jsonld() == export
        check_invariants(store)


# --- an erasure, step by step --------------------------------------------------------------

ERASER = textwrap.dedent("""
    import os, sys
    from mars_core.clock import FakeClock
    from mars_core.engine import indexing
    from mars_core.engine.unit import Unit
    from mars_core.storage import sqlite
    from mars_core.store import MemoryStore
    from mars_core.testing import vector_index

    path, step, index = sys.argv[1], sys.argv[2], sys.argv[3]
    store = MemoryStore.open(path, index=index, clock=FakeClock())
    target = next(n for n in store.list() if "zqsecretq" in n.content)

    def die(*args, **kwargs):
        os._exit(9)  # as a kill -9 at exactly this step

    if step == "before-commit":  # the transaction is written, not committed
        real_write = Unit.write
        def write(self, tx, **kw):
            real_write(self, tx, **kw)
            if self.deleted():
                die()
        Unit.write = write
    elif step == "after-commit":  # committed; nothing purged, the index untouched
        indexing.IndexSync.after_commit = die
    elif step == "before-purge":
        sqlite.SQLiteRecordStore.purge = die
    elif step == "before-mark":
        indexing.IndexSync.flush = die
    elif step == "before-compact":
        type(vector_index(store)).compact = die
    store.erase(target.id)
    print("ERASED", flush=True)
    store.close()
""")

STEPS = ("before-commit", "after-commit", "before-purge", "before-mark", "before-compact",
         "none")


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("index", "step"), [  # numpy keeps no deleted vector: no compaction
    *(("numpy", s) for s in STEPS if s != "before-compact"), *(("chroma", s) for s in STEPS)])
def test_a_crash_at_any_step_of_an_erasure_leaves_it_whole_or_undone(
        tmp_path: Path, index: str, step: str) -> None:
    if index == "chroma":
        pytest.importorskip("chromadb")
    path = tmp_path / "s"
    with MemoryStore.open(path, index=index, clock=FakeClock()) as store:
        secret = store.add("my PIN is zqsecretq zq4821q, tell no one")
        fact = store.add("the PIN zqsecretq opens the safe", provenance={
            "derived_from": [secret.id]})
        keep = store.add("Bo likes jazz")
    script = tmp_path / "eraser.py"
    script.write_text(ERASER, encoding="utf-8")
    done = children.run([sys.executable, str(script), str(path), step, index], env=_env(),
                        cwd=tmp_path, capture_output=True, text=True, timeout=120,
                        check=False)
    assert done.returncode == (0 if step == "none" else 9), done.stderr
    with MemoryStore.open(path, clock=FakeClock()) as store:
        check_invariants(store)
        left = {n.id for n in store.list(status=None)}
        if step == "before-commit":  # not committed: not erased, all of it still there
            assert left == {secret.id, fact.id, keep.id}
            return
        assert left == {keep.id}  # committed: the cascade is whole
        erased = [e for e in store.audit.events() if e.op.value == "erase"]
        assert {i for e in erased for i in e.node_ids} == {secret.id, fact.id}
    assert _files_holding(path, ["zqsecretq", "zq4821q"]) == []


# --- the index's position, recorded after the index write --------------------------------------

RECORDER = textwrap.dedent("""
    import json, os, sys
    from mars_core.bench.storage import make_texts
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore
    from mars_core.testing import index_fault

    path, step, index = sys.argv[1], sys.argv[2], sys.argv[3]
    store = MemoryStore.open(path, index=index, clock=FakeClock())

    def die():
        os._exit(9)  # as a kill -9 at exactly this step

    # after-index-write: the index holds the writes, the records not yet their position;
    # before-index-write: committed, the index not yet written
    with index_fault("index-position" if step == "after-index-write" else "index-write", die):
        nodes = store.add_many(make_texts(40, seed=11))
        print(json.dumps([n.id for n in nodes]), flush=True)
        store.close()  # writes the index, then records its position
    print("CLOSED", flush=True)
""")


@pytest.mark.backend_neutral
@pytest.mark.parametrize("step", ["after-index-write", "before-index-write"])
def test_a_crash_around_recording_the_index_position_is_caught_up(
        tmp_path: Path, step: str) -> None:
    """The records keep the index's position, written after the index write it covers:
    a crash between the two leaves a lower position (never a higher one), and the next
    open replays the change log from it instead of rebuilding."""
    pytest.importorskip("chromadb")
    from mars_core.index.chroma import partition_name

    path = tmp_path / "s"
    with MemoryStore.open(path, index="chroma", clock=FakeClock()) as store:
        before = {store.add(text).id for text in make_texts(3, seed=12)}
        stamp = vector_index(store).stamp
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, encoding="utf-8")
    done = children.run([sys.executable, str(script), str(path), step, "chroma"],
                        env=_env(), cwd=tmp_path, capture_output=True, text=True,
                        timeout=300, check=False)
    assert done.returncode == 9 and "CLOSED" not in done.stdout, done.stderr
    acknowledged = set(json.loads(done.stdout.splitlines()[0]))
    with MemoryStore.open(path, clock=FakeClock()) as store:
        sync = index_sync(store)
        assert not sync.rebuilt and vector_index(store).stamp == stamp
        with record_store(store).read() as tx:
            assert tx.index_positions() == {sync.key: tx.last_change()}
        index = vector_index(store)
        store.retrieve("a river", read_only=True)  # the index is current before a query
        held = index.inner._collection(partition_name("mars_", index.token("default"),
                                                      MemoryStatus.ACTIVE))
        assert set(held.get(include=[])["ids"]) == before | acknowledged  # all of them
        check_invariants(store)


# --- one writer, any number of readers ------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys
    from mars_core.clock import FakeClock
    from mars_core.errors import ConflictError
    from mars_core.store import MemoryStore

    path, index, name = sys.argv[1], sys.argv[2], sys.argv[3]
    print("STARTED", flush=True)
    try:
        store = MemoryStore.open(path, index=index, clock=FakeClock(), lock_timeout=1.0)
    except ConflictError as exc:
        print("CONFLICT", str(exc).replace(chr(10), " "), flush=True)
        sys.exit(0)
    for i in range(5):
        store.add(f"{name} wrote memory {i}")
    print("WROTE", flush=True)
    sys.stdin.read()  # hold the store until the test has seen both answers (EOF)
    store.close()
    print("CLOSED", flush=True)
""")


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("first", "second"), [("numpy", "numpy"), ("chroma", "numpy"),
                                               ("numpy", "chroma")])
def test_two_processes_opening_one_store_at_once_one_writes(
        tmp_path: Path, first: str, second: str) -> None:
    if "chroma" in (first, second):
        pytest.importorskip("chromadb")
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    path = tmp_path / "s"
    procs = {name: children.popen(
        [sys.executable, str(script), str(path), index, name], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
        for name, index in (("one", first), ("two", second))}
    try:
        answers = {}
        for name, proc in procs.items():
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "STARTED"
            answers[name] = proc.stdout.readline().strip()
        assert sorted(a.split()[0] for a in answers.values()) == ["CONFLICT", "WROTE"], answers
        loser = next(a for a in answers.values() if a.startswith("CONFLICT"))
        assert "is writing the store" in loser and "read_only=True" in loser
    finally:
        for proc in procs.values():  # closing their stdin releases them
            proc.communicate(timeout=60)
    with MemoryStore.open(path, clock=FakeClock()) as store:
        assert len(store.list()) == 5  # the winner's writes, nothing of the other
        check_invariants(store)


BUSY = textwrap.dedent("""
    import sys
    from pathlib import Path
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    path, stop = sys.argv[1], Path(sys.argv[2])
    with MemoryStore.open(path, index="numpy", clock=FakeClock(), budget=10**6) as store:
        print("READY", flush=True)
        n = 0
        while not stop.exists():  # batches of five, one transaction each
            store.add_many([f"batch {n} memory {i}" for i in range(5)])
            n += 1
        print("BATCHES", n, flush=True)
""")


@pytest.mark.backend_neutral
def test_a_reader_beside_a_busy_writer_sees_only_whole_transactions(tmp_path: Path) -> None:
    path, stop = tmp_path / "s", tmp_path / "stop"
    MemoryStore.open(path, index="numpy", clock=FakeClock(), budget=10**6).close()
    script = tmp_path / "busy.py"
    script.write_text(BUSY, encoding="utf-8")
    proc = children.popen([sys.executable, str(script), str(path), str(stop)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=_env(), cwd=tmp_path)
    seen: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        with MemoryStore.open(path, read_only=True, clock=FakeClock()) as reader:
            while len(set(seen)) < 8:  # until it has seen eight different states
                stats = reader.stats()  # one call, one snapshot: counts and audit agree
                active = stats["namespaces"].get("default", {}).get("active", 0)
                assert active % 5 == 0 and stats["audit_events"] == active, stats
                nodes = reader.list()
                seen.append(len(nodes))
                assert len(nodes) % 5 == 0, f"saw {len(nodes)} memories: half a batch"
                texts = {n.content for n in nodes}
                for batch in range(len(nodes) // 5):  # whole batches, in order
                    assert {f"batch {batch} memory {i}" for i in range(5)} <= texts
    finally:
        stop.touch()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert seen == sorted(seen)  # never back in time


def test_fifo_eviction_order_survives_reopen(tmp_path: Path) -> None:
    """The policy's order is a view rebuilt on load: it must equal the live order, so the
    same calls evict the same memory whether or not the store was reopened in between."""
    live = _fifo_restore_scenario(tmp_path / "live", reopen=False)
    reopened = _fifo_restore_scenario(tmp_path / "reopened", reopen=True)
    assert reopened == live


def _fifo_restore_scenario(path: Path, reopen: bool) -> dict[str, str]:
    kw: dict[str, Any] = {"clock": FakeClock(), "audit_key": bytes(range(32)), "budget": 9,
                          "policy": "fifo"}  # on the matrix's kind (tests/conftest.py)
    store = MemoryStore.open(path, **kw)
    try:
        a = store.add("alpha one two")
        store.add("beta one two")
        store.add("gamma one two")
        store.forget(a.id)
        store.restore(a.id)  # the restored memory re-enters the FIFO queue
        if reopen:
            store.close()
            store = MemoryStore.open(path, **kw)
        store.add("delta one two")  # over budget: FIFO evicts one memory
        return {n.content: n.status.value for n in store.list(status=None)}
    finally:
        store.close()


@pytest.mark.backend_neutral
@pytest.mark.parametrize("index", ["numpy", "chroma", "qdrant"])
def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path, index: str) -> None:
    pytest.importorskip({"numpy": "numpy", "chroma": "chromadb", "qdrant": "qdrant_client"}[index])
    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), index=index) as store:
        store.add("held")
        with pytest.raises(ConflictError, match="is writing the store"):
            MemoryStore.open(tmp_path / "s", clock=FakeClock(), lock_timeout=0)
        assert store.list()[0].content == "held"
    with MemoryStore.open(tmp_path / "s", clock=FakeClock()) as store:
        assert store.list()[0].content == "held" and store.stats()["index"] == index


@pytest.mark.backend_neutral
def test_an_open_catches_up_more_changes_than_one_mark_spans(tmp_path: Path) -> None:
    """An index more than ``MARK_EVERY`` changes behind its records (a crash after
    commits whose buffered index writes never ran: seen after a benchmark's process died
    at 100,000 turns, 2,145 behind) is caught up by the next open, which records the
    position it reached after its read of the change log, not inside it."""
    pytest.importorskip("chromadb")
    from mars_core.engine.indexing import MARK_EVERY

    path = tmp_path / "s"
    texts = [f"note {i} on the harbour and its {i % 7} boats" for i in range(MARK_EVERY + 200)]
    with MemoryStore.open(path, index="chroma", clock=FakeClock(), budget=10**9) as store:
        ids = [store.add("the harbour opened in May").id]  # the index has a position
    with index_fault("index-write", lambda: None), \
            MemoryStore.open(path, index="chroma", clock=FakeClock()) as store:
        ids += [n.id for n in store.add_many(texts)]  # writes that never reach the index
    with MemoryStore.open(path, index="chroma", clock=FakeClock()) as store:
        hits = store.retrieve(texts[-1], k=1, read_only=True)
        assert [h.id for h in hits] == [ids[-1]]
        assert len(store.list()) == len(ids)
