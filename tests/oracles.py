"""The oracles the policies' tests share: what a policy should evict, worked out by brute
force, and a plan of operations after each of which the budget must hold.

* :func:`exact_evictions` — a policy that evicts in the order of a key, lowest first,
  takes the shortest prefix of that order whose weights free what the add needs.
* :func:`run_plan` — runs a Hypothesis plan of ``(op, text, type, pin, pick)`` on a store
  and asserts the budget after every operation.
"""

from __future__ import annotations

from collections.abc import Iterable

from mars_core.model import MemoryNode
from mars_core.store import MemoryStore

__all__ = ["Plan", "exact_evictions", "run_plan"]

Plan = list[tuple[str, str, str, bool, int]]
"""Operations: ``(op, text, type, pin, pick)``, op one of ``add``, ``supersede``,
``retrieve``, ``forget``, ``restore``."""


def exact_evictions(order: Iterable[MemoryNode], need: int) -> list[str]:
    """The ids an exact policy evicts: the shortest prefix of ``order`` (the memories by
    the policy's key, first to go first) whose weights reach ``need`` tokens."""
    expect, freed = [], 0
    for m in order:
        if freed >= need:
            break
        expect.append(m.id)
        freed += m.weight
    return expect


def run_plan(store: MemoryStore, plan: Plan, budget: int) -> None:
    """Run ``plan`` on ``store``'s default namespace; after every operation the active
    memories weigh at most ``budget`` tokens, by the list and by the stats.

    ``add`` adds a memory of the type (pinned when ``pin`` and ``pick % 4 == 0``),
    ``supersede`` adds one that supersedes the active memory ``pick`` picks, ``retrieve``
    retrieves two, ``forget`` and ``restore`` (every other op) act on the memory ``pick``
    picks among those added.
    """
    ids: list[str] = []
    for op, text, mtype, pin, pick in plan:
        if op == "add":
            ids.append(store.add(text, type=mtype, pinned=pin and pick % 4 == 0).id)
        elif op == "supersede" and (act := [n.id for n in store.list()]):
            ids.append(store.add(text, links=[("supersedes", act[pick % len(act)])]).id)
        elif op == "retrieve":
            store.retrieve(text, k=2)
        elif ids and op == "forget":
            store.forget(ids[pick % len(ids)])
        elif ids:
            store.restore(ids[pick % len(ids)])
        assert store.stats()["namespaces"].get("default", {"tokens": 0})["tokens"] <= budget
        assert sum(n.weight for n in store.list()) <= budget
