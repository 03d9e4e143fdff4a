"""One writer process of the PostgreSQL load tests (``tests/test_load_postgres.py``).

``python load_worker.py URL NAME SEED SECONDS MAX_OPS NAMESPACES BUDGET INDEX [MIN_OPS]``:
opens the store at ``URL`` with ``index=INDEX`` and runs seeded random add / observe /
retrieve / forget / update / erase calls on ``NAMESPACES`` shared namespaces until
``SECONDS`` have passed or ``MAX_OPS`` calls were made (the bound of the run, never
something a test asserts on), or the parent writes ``stop``. It makes at least
``MIN_OPS`` calls (default 0) whatever the clock says, so a test may count on them on
a machine of any speed. It prints one JSON line
per event, flushed:

* ``{"ev": "ready"}`` once the store is open;
* ``{"ev": "ack", "op": ..., ...}`` after a write returned (so a line is a promise:
  what it names was committed); ``{"ev": "begin", "op": "erase", "id": ...}`` before an
  erasure, so a process killed during one leaves it undecided, not lost;
* ``{"ev": "retry", "error": ...}`` for a documented refusal (:class:`ConflictError`,
  :class:`ConcurrentWriteError`: nothing written), after which it repeats the call;
* ``{"ev": "probe", "texts": [...], "ids": [...]}`` answering the parent's
  ``probe NAMESPACE QUERY`` line on stdin (what it retrieves and lists there now);
* ``{"ev": "done", "ops": N}`` at the end.

Any other exception ends the process with a traceback and a non-zero status.
"""

from __future__ import annotations

import json
import random
import select
import sys
from typing import Any

from mars_core import MemoryStore
from mars_core.errors import ConflictError

KEY = bytes(range(32))
WORDS = ("garden trains weather tea Lisbon peanuts Tuesday river music hiking Porto "
         "bread winter chess lemons violin harbour").split()
RETRIES = 20
"""Times a documented refusal is retried before the worker gives up (a failure)."""


def emit(**event: Any) -> None:
    """Print one event line, flushed (the parent reads it through a pipe)."""
    print(json.dumps(event), flush=True)


def command() -> str | None:
    """A line the parent wrote on stdin, if one is waiting (never blocks)."""
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    if not ready:
        return None
    return sys.stdin.readline().strip() or "stop"  # EOF: the parent is gone


def retried(call: Any) -> Any:
    """``call()``, repeated after a documented refusal (nothing was written)."""
    for _ in range(RETRIES):
        try:
            return call()
        except ConflictError as exc:  # ConcurrentWriteError included
            emit(ev="retry", error=type(exc).__name__)
    raise RuntimeError(f"still refused after {RETRIES} tries")


class Worker:
    """The seeded random calls of one process; ``own`` are its active adds (never
    updated), the ones it may forget, update or erase."""

    def __init__(self, store: MemoryStore, name: str, seed: int, namespaces: int) -> None:
        self.store, self.name, self.rng = store, name, random.Random(seed)
        self.namespaces = [f"ns-{i:02d}" for i in range(namespaces)]
        self.own: list[tuple[str, str]] = []
        self.made = 0

    def text(self) -> str:
        self.made += 1
        words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(3, 8)))
        return f"{self.name} note {self.made}: {words}"

    def step(self) -> None:
        op = self.rng.choices(["add", "observe", "retrieve", "forget", "update", "erase"],
                              [5, 2, 4, 1, 1, 1])[0]
        if op in ("forget", "update", "erase") and not self.own:
            op = "add"
        getattr(self, op)()

    def add(self) -> None:
        ns, text = self.rng.choice(self.namespaces), self.text()
        node = retried(lambda: self.store.add(text, namespace=ns))
        self.own.append((node.id, ns))
        emit(ev="ack", op="add", id=node.id, ns=ns)

    def observe(self) -> None:
        ns, text = self.rng.choice(self.namespaces), self.text()
        nodes = retried(lambda: self.store.observe("user", text, namespace=ns))
        emit(ev="ack", op="observe", ids=[n.id for n in nodes], ns=ns)

    def retrieve(self) -> None:
        ns = self.rng.choice(self.namespaces)
        query = " ".join(self.rng.choice(WORDS) for _ in range(3))
        retried(lambda: self.store.retrieve(query, namespace=ns, k=5))

    def _pick(self) -> tuple[str, str]:
        return self.own.pop(self.rng.randrange(len(self.own)))

    def forget(self) -> None:
        node_id, ns = self._pick()
        retried(lambda: self.store.forget(node_id, namespace=ns))
        emit(ev="ack", op="forget", id=node_id, ns=ns)

    def update(self) -> None:
        (node_id, ns), text = self._pick(), self.text()
        newer = retried(lambda: self.store.update(node_id, text, namespace=ns))
        emit(ev="ack", op="update", id=node_id, new=newer.id, ns=ns)

    def erase(self) -> None:
        node_id, ns = self._pick()
        emit(ev="begin", op="erase", id=node_id, ns=ns)
        retried(lambda: self.store.erase(node_id, namespace=ns))
        emit(ev="ack", op="erase", id=node_id, ns=ns)

    def probe(self, ns: str, query: str) -> None:
        hits = retried(lambda: self.store.retrieve(query, namespace=ns, k=50,
                                                   redact=False))  # the stored text
        listed = retried(lambda: self.store.list(ns, status=None))
        emit(ev="probe", texts=[h.node.content for h in hits],
             ids=[n.id for n in listed], listed=[n.content for n in listed])


def main(argv: list[str]) -> int:
    url, name, seed, seconds, max_ops, namespaces, budget, index, *rest = argv
    min_ops = int(rest[0]) if rest else 0
    import time

    with MemoryStore.open(url, index=index, audit_key=KEY, budget=int(budget)) as store:
        worker = Worker(store, name, int(seed), int(namespaces))
        emit(ev="ready")
        deadline = time.monotonic() + float(seconds)  # bounds the run; asserted on by no one
        ops = 0
        while ops < int(max_ops) and (ops < min_ops or time.monotonic() < deadline):
            line = command()
            if line == "stop":
                break
            if line and line.startswith("probe "):
                _, ns, query = line.split(" ", 2)
                worker.probe(ns, query)
                continue
            worker.step()
            ops += 1
        emit(ev="done", ops=ops)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
