"""What the control loop reads and writes through the store's public API.

* :func:`current_step` — the namespace's interaction counter Δn (DESIGN §3), the clock of
  retention: ``n`` of ``R = exp(-n/S)`` counts interactions since the last credited use.
* :func:`namespace_version` — a value that changes with every write that can change what
  a namespace holds (the key of what the control loop derives from it and caches).
* :func:`memory_retention` — R of one memory from the statistics the store keeps
  (``access_count``, ``last_access_step``), with the initial utility U₀ of seed 002 (the
  store keeps no per-memory utility; cluster utility lives in L1 metadata).
* :func:`record_use` — reinforcement of *credited* memories only (seed 002 §2.3), through
  ``store.reinforce(ids, namespace=...)``: one access per memory, one audit event.
* :func:`links` — L2↔L3 neighbours: memories sharing a ``derivesFrom`` turn.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     n = store.add("Ana keeps bees in Porto", type="semantic")
    ...     _ = store.add("Bo sells old maps", type="semantic")
    ...     record_use(store, [n.id], "default"), store.get(n.id).access_count
    ([...], 1)
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from collections.abc import Sequence

from mars_core.model import MemoryNode
from mars_core.namespaces import canonical_namespace
from mars_core.scoring.retention import OblivionConfig, RetentionState, state_retention
from mars_core.store import MemoryStore

__all__ = ["TurnClock", "current_step", "links", "memory_retention", "namespace_version",
           "record_use"]

CONTROL_KEY = "mars_control"

log = logging.getLogger(__name__)


def current_step(store: MemoryStore, namespace: str) -> int:
    """The namespace's interaction counter (0 for a namespace that holds nothing yet)."""
    per = store.stats(namespace)["namespaces"]
    return int(per.get(canonical_namespace(namespace), {}).get("step", 0))


def namespace_version(store: MemoryStore, namespace: str) -> tuple[int, int]:
    """``(step, audit events)``, read in one snapshot: it changes whenever what
    ``namespace`` holds may have changed.

    The step alone does not: only adds and observed turns advance it, while a forget, an
    eviction, a reflection or an erasure leaves it where it was. Every change writes an
    audit event, and the audit log only grows, so the pair is a version of the namespace
    (the count is store-wide: a write elsewhere changes it too, which only costs a
    recomputation). What is derived from a namespace and cached under its version is
    the same as what a fresh reader derives.

    Examples:
        >>> from mars_core import MemoryStore, FakeClock
        >>> with MemoryStore(clock=FakeClock()) as store:
        ...     n = store.add("Ana keeps bees in Porto", namespace="u")
        ...     before = namespace_version(store, "u")
        ...     _ = store.forget(n.id, namespace="u", reason="wrong")
        ...     after = namespace_version(store, "u")
        ...     before[0] == after[0], before != after
        (True, True)
    """
    report = store.stats(namespace)
    per = report["namespaces"].get(canonical_namespace(namespace), {})
    return int(per.get("step", 0)), int(report["audit_events"])


class TurnClock:
    """Counts user turns: ``n`` of seed 002 is "the number of turns since last access".

    A turn is a user message the store observed (an episodic memory with source ``user``
    that derives from nothing), active or archived; the clock reads them once.

    Examples:
        >>> from mars_core import MemoryStore, FakeClock
        >>> with MemoryStore(clock=FakeClock()) as store:
        ...     first = store.observe("user", "hello there")[0]
        ...     _ = store.observe("assistant", "hi")
        ...     _ = store.observe("user", "how are you")
        ...     TurnClock(store, "default").since(first.step)
        1
    """

    def __init__(self, store: MemoryStore, namespace: str) -> None:
        self.steps = sorted(
            n.step for n in store.list(namespace, type="episodic", status=None)
            if n.provenance.source == "user" and not n.provenance.derived_from
            and CONTROL_KEY not in n.metadata)

    def since(self, step: int) -> int:
        """User turns strictly after interaction ``step``."""
        return len(self.steps) - bisect.bisect_right(self.steps, step)


def memory_retention(node: MemoryNode, clock: TurnClock, config: OblivionConfig,
                     utility: float | None = None) -> float:
    """``R = exp(-n/S)`` of a memory, ``n`` = user turns since its last access (or birth)."""
    last = node.last_access_step if node.last_access_step is not None else node.step
    state = RetentionState(utility=config.initial_utility if utility is None else utility,
                           access_count=node.access_count,
                           turns_since_access=clock.since(last))
    return state_retention(state, config)


def record_use(store: MemoryStore, ids: Sequence[str], namespace: str) -> list[str]:
    """Record a credited use of each active memory in ``ids``; returns the ids recorded.

    One access each and one audit event (:meth:`MemoryStore.reinforce`); memories that
    left active memory meanwhile are skipped.
    """
    active = [i for i in dict.fromkeys(ids) if store.get(i, namespace=namespace).is_active]
    store.reinforce(active, namespace=namespace)
    return active


def links(store: MemoryStore, namespace: str, ids: Sequence[str]) -> dict[str, list[str]]:
    """For each id, the active memories of the other layer sharing a source turn with it.

    A fact (L2) and an episode (L3) are linked when one ``derivesFrom`` a turn the other
    is, or derives from (seed 002 §2.1 "L2–L3 memory linking").
    """
    by_turn: dict[str, list[MemoryNode]] = defaultdict(list)
    nodes = {n.id: n for n in store.list(namespace)}
    for n in nodes.values():
        for src in _sources(n):
            by_turn[src].append(n)
    out: dict[str, list[str]] = {}
    for i in ids:
        node = nodes.get(i)
        if node is None:
            continue
        kind = node.type.value == "episodic"
        found = [m.id for src in _sources(node) for m in by_turn[src]
                 if m.id != i and (m.type.value == "episodic") != kind]
        out[i] = list(dict.fromkeys(found))
    return out


def _sources(node: MemoryNode) -> tuple[str, ...]:
    """The turns a memory stands on: what it derives from, or itself when it is a turn."""
    return node.provenance.derived_from or (node.id,)
