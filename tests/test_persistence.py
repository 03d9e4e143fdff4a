"""Persistence: a store written by another process reopens exactly, and survives SIGKILL.

Both run on the in-memory journal backend and on Chroma persistent (the default of
``MemoryStore.open``; encrypted, keys in ``path/keys``); the reopen test also on Qdrant's
path mode.

* Reopen: a child process writes memories (adds, links, retrievals, forgets, updates,
  restores), prints a JSON summary of its export, stats and audit, then exits without
  closing, closes cleanly, or is killed; the parent reopens with ``MemoryStore.open``
  and compares everything.
* Crash: 20 times, a write-heavy child prints every id *after* ``add`` returned and is
  killed with SIGKILL at a random (seeded) moment; the store must reopen, keep every
  invariant and hold every acknowledged id.
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
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from invariants import check_invariants

from mars_core.clock import FakeClock
from mars_core.model import MemoryStatus
from mars_core.store import MemoryStore

KEY_HEX = bytes(range(32)).hex()
ROOT = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent("""
    import json, os, sys, time
    from datetime import timedelta
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    path, mode, backend = sys.argv[1], sys.argv[2], sys.argv[4]
    store = MemoryStore.open(path, backend=backend, clock=FakeClock(tick=timedelta(seconds=3)),
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
    env["PYTHONHASHSEED"] = "0"
    return env


@pytest.mark.backend_neutral
@pytest.mark.parametrize(("backend", "mode"), [  # Qdrant path mode: the kill case only
    *((b, m) for b in ("inmemory", "chroma") for m in ("exit", "close", "kill")),
    ("qdrant", "kill")])
def test_reopen_after_another_process_wrote(tmp_path: Path, mode: str, backend: str) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    path = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, str(script), str(path), mode, KEY_HEX, backend],
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

    with MemoryStore.open(path, clock=FakeClock()) as store:  # detects the backend
        assert store.stats()["backend"] == backend
        assert store.stats()["encrypted"] is (backend != "inmemory")
        # memories, edges, access statistics and archive: the whole export
        assert store.export_jsonld() == summary["export"]
        stats = json.loads(json.dumps(store.stats()))
        assert stats == summary["stats"]
        # audit: same length, same head, same events, chain verifies
        assert len(store.audit) == summary["audit_len"]
        assert store.audit.head == summary["audit_head"]
        assert [e.model_dump(mode="json") for e in store.audit.events()] == summary["audit"]
        assert store.verify().ok
        check_invariants(store)
        # spot checks, so a vacuous summary cannot pass
        assert store.config.budget == 40 and store.config.namespace_budgets == {"bob": 25}
        assert store.get(ids["b"]).status is MemoryStatus.ARCHIVED
        assert store.get(ids["upd"]).content == "Ana lives in Lisbon since May"
        assert ids["b"] in store._state.graph.ancestors(ids["upd"])
        assert store.get(ids["a"]).access_count >= 1
        assert store.get(ids["a"]).provenance.conversation_id == "c1"
        assert store.get(ids["s"]).payload.attributes == {"city": "Porto"}
        assert store.get(ids["old"]).is_active  # forgotten, then restored
        assert summary["stats"]["namespaces"]["bob"]["archived"] > 0  # the policy evicted
        assert store.get(ids["s"]).metadata == {"k": [1, "two"]}
        # and the reopened store keeps working and keeps the same id sequence
        nxt = store.add("one more after reopen")
        assert nxt.id not in json.dumps(summary["export"])
        check_invariants(store)


# --- crash loop ---------------------------------------------------------------------------

CRASHER = textwrap.dedent("""
    import random, sys
    from mars_core.backends.memory import InMemoryBackend
    from mars_core.clock import FakeClock
    from mars_core.store import MemoryStore

    path, seed, compact_every, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    words = "ana bob tea coffee lisbon porto flight meeting invoice piano garden rain".split()
    kw = dict(clock=FakeClock(), audit_key=bytes.fromhex(key), budget=60,
              namespace_budgets={"b": 30}, policy="lru")
    if sys.argv[5] == "chroma":  # the default of open(): Chroma on disk, encrypted
        store = MemoryStore.open(path, backend="chroma", **kw)
    else:
        store = MemoryStore(InMemoryBackend(path, compact_every=compact_every), **kw)
    ids = [n.id for n in store.list("a", status=None) + store.list("b", status=None)]
    print("READY", flush=True)
    n = 0
    while True:
        n += 1
        ns = "ab"[n % 2]
        text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + f" #{seed}.{n}"
        roll = rng.random()
        if roll < 0.7 or not ids:
            same = [i for i in ids[-20:] if store.get(i).namespace == ns]
            prov = {"derived_from": [rng.choice(same)]} if same and rng.random() < 0.2 else None
            node = store.add(text, namespace=ns, type=rng.choice(["episodic", "semantic"]),
                             provenance=prov)
            ids.append(node.id)
            print("ADD", node.id, flush=True)
        elif roll < 0.82:
            store.retrieve(text, namespace=ns, budget_tokens=20)
        elif roll < 0.9:
            victim = rng.choice(ids)
            store.forget(victim)
            print("FORGET", victim, flush=True)
        else:
            node = store.update(rng.choice(ids), text)
            ids.append(node.id)
            print("ADD", node.id, flush=True)
""")

ITERATIONS = {"inmemory": 20, "chroma": 8}
"""Kill -9 iterations per backend (a Chroma child needs ~2 s of CPU to start)."""

@pytest.fixture(scope="module")
def crash_runs(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    """Run the crash loop once per backend; yields what each iteration observed."""
    backend: str = request.param
    base = tmp_path_factory.mktemp(f"crash-{backend}")
    script = base / "crasher.py"
    script.write_text(CRASHER, encoding="utf-8")
    rng = random.Random(20260101)
    runs: list[dict[str, Any]] = []
    for it in range(ITERATIONS[backend]):
        # every second iteration reopens the store the previous child was killed in
        path = base / f"store{it // 2}"
        compact_every = 23 if it % 3 == 0 else 10_000
        delay = rng.uniform(0.05, 0.6) * (3 if backend == "chroma" else 1)
        proc = subprocess.Popen(
            [sys.executable, str(script), str(path), str(it), str(compact_every), KEY_HEX,
             backend],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=base)
        assert proc.stdout is not None and proc.stderr is not None
        lines: list[bytes] = []
        ready = threading.Event()

        def pump(out: Any = proc.stdout, lines: list[bytes] = lines,
                 ready: threading.Event = ready) -> None:
            for raw in iter(out.readline, b""):
                lines.append(raw)
                if raw == b"READY\n":
                    ready.set()
            ready.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        if not ready.wait(timeout=60):
            proc.kill()
            pytest.fail("the crasher never became ready")
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        reader.join(timeout=30)
        err = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL, f"the crasher died on its own:\n{err}"
        acked = [ln.decode().split() for ln in lines if ln.endswith(b"\n")]
        runs.append({"it": it, "path": path, "delay": delay, "compact_every": compact_every,
                     "backend": backend,
                     "added": [p[1] for p in acked if p[0] == "ADD"],
                     "forgotten": [p[1] for p in acked if p[0] == "FORGET"]})
        # the parent reopens right away (the next child may reopen the same directory)
        with MemoryStore.open(path, clock=FakeClock()) as store:
            assert store.stats()["backend"] == backend
            runs[-1]["error"] = None
            try:
                check_invariants(store)
                missing = [i for i in runs[-1]["added"] if i not in store._state.nodes]
                not_archived = [i for i in runs[-1]["forgotten"]
                                if store._state.nodes.get(i) is None
                                or store._state.nodes[i].is_active]
                runs[-1]["missing"] = missing
                runs[-1]["not_archived"] = not_archived
                runs[-1]["count"] = len(store._state.nodes)
            except AssertionError as exc:  # reported per iteration below
                runs[-1]["error"] = f"{type(exc).__name__}: {exc}"
    yield runs


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", list(ITERATIONS), indirect=True)
def test_crash_loop_did_real_work(crash_runs: list[dict[str, Any]]) -> None:
    iterations = ITERATIONS[crash_runs[0]["backend"]]
    assert len(crash_runs) == iterations
    total = sum(len(r["added"]) for r in crash_runs)
    assert total > 2 * iterations, f"only {total} acknowledged writes in {iterations} runs"
    assert sum(1 for r in crash_runs if r["added"]) >= iterations // 2
    assert any(r["forgotten"] for r in crash_runs)


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", list(ITERATIONS), indirect=True)
def test_sigkill_loses_no_acknowledged_write(crash_runs: list[dict[str, Any]]) -> None:
    """Every iteration of the loop (one test per backend: a test per iteration made pytest
    run the whole module-scoped loop again for each, 30 loops instead of 2)."""
    failures = [_lost(run) for run in crash_runs]
    assert not any(failures), "\n".join(f for f in failures if f)


def _lost(run: dict[str, Any]) -> str:
    """What iteration ``run`` lost ("" when nothing)."""
    where = f"iteration {run['it']} (delay {run['delay']:.2f}s)"
    if run["error"] is not None:
        return f"{where}: {run['error']}"
    if run["missing"]:
        return f"{where}: acknowledged adds lost after SIGKILL: {run['missing'][:5]}"
    if run["not_archived"]:
        return f"{where}: acknowledged forgets lost: {run['not_archived'][:5]}"
    if run["count"] < len(set(run["added"])):
        return f"{where}: {run['count']} memories after reopen, {len(set(run['added']))} acked"
    return ""


@pytest.mark.backend_neutral
@pytest.mark.parametrize("crash_runs", list(ITERATIONS), indirect=True)
def test_crashed_store_keeps_working(crash_runs: list[dict[str, Any]]) -> None:
    """After the last crash the store accepts writes, and they survive a clean reopen."""
    path = crash_runs[-1]["path"]
    with MemoryStore.open(path, clock=FakeClock()) as store:
        node = store.add("written after all the crashes", namespace="a")
        export = store.export_jsonld()
    with MemoryStore.open(path, clock=FakeClock()) as store:
        assert store.get(node.id).content == "written after all the crashes"
        assert store.export_jsonld() == export
        check_invariants(store)


# --- single-process regressions ------------------------------------------------------------


def _fifo_restore_scenario(path: Path, reopen: bool) -> dict[str, str]:
    kw: dict[str, Any] = {"clock": FakeClock(), "audit_key": bytes(range(32)), "budget": 9,
                          "policy": "fifo"}  # on the matrix's backend (tests/conftest.py)
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


def test_fifo_eviction_order_survives_reopen(tmp_path: Path) -> None:
    """The policy's order is a view rebuilt on open: it must equal the live order, so the
    same calls evict the same memory whether or not the store was reopened in between."""
    live = _fifo_restore_scenario(tmp_path / "live", reopen=False)
    reopened = _fifo_restore_scenario(tmp_path / "reopened", reopen=True)
    assert reopened == live


@pytest.mark.backend_neutral
@pytest.mark.parametrize("backend", ["inmemory", "chroma", "qdrant"])
def test_a_second_open_of_a_held_directory_is_refused(tmp_path: Path, backend: str) -> None:
    from mars_core.errors import ConflictError

    with MemoryStore.open(tmp_path / "s", clock=FakeClock(), backend=backend) as store:
        store.add("held")
        with pytest.raises(ConflictError):
            MemoryStore.open(tmp_path / "s", clock=FakeClock())
        assert store.list()[0].content == "held"
    with MemoryStore.open(tmp_path / "s", clock=FakeClock()) as store:
        assert store.list()[0].content == "held" and store.stats()["backend"] == backend
