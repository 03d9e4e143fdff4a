"""A seeded mixed workload shared by the policies' reopen tests.

The same script run with and without reopens must decide identically: every policy
rebuilds its indices from what the store persisted.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from invariants import check_invariants

from mars_core import MemoryStore

AddFn = Callable[[MemoryStore, random.Random], str]


def reopen_script(open_store: Callable[[], MemoryStore], seed: int, add: AddFn, *,
                  ops: int, reopen_every: int | None = None,
                  cuts: tuple[float, float, float, float] = (0.55, 0.75, 0.85, 0.93),
                  words: Callable[[random.Random, int, int], str]) -> dict[str, Any]:
    """Run ``ops`` random operations (add / retrieve / forget / update / restore, split at
    ``cuts``), reopening every ``reopen_every``; returns the audit and the export."""
    rng = random.Random(seed)
    store, ids = open_store(), list[str]()
    try:
        for i in range(ops):
            if reopen_every and i and i % reopen_every == 0:
                store.close()
                store = open_store()
            roll = rng.random()
            if roll < cuts[0] or not ids:
                ids.append(add(store, rng))
            elif roll < cuts[1]:
                store.retrieve(words(rng, 1, 3), k=rng.randint(1, 4))
            elif roll < cuts[2]:
                store.forget(rng.choice(ids))
            elif roll < cuts[3]:
                ids.append(store.update(rng.choice(ids), words(rng, 1, 9)).id)
            else:
                store.restore(rng.choice(ids))
        check_invariants(store)
        return {"audit": [e.model_dump(mode="json") for e in store.audit.events()],
                "export": store.export_jsonld()}
    finally:
        store.close()
