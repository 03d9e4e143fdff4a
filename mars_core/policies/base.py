"""The forgetting-policy interface: a template method over a read-only view.

Seed 000 §3.3 models a policy as ``f(M, B) -> M'`` with three invariants: feasibility
(Σw ≤ B), structure (M' ∈ F: provenance closure and task-safety) and auditability.
Here the public :meth:`Policy.apply` owns the invariants and each policy only *orders*
candidates (``_candidates``): it yields memories in the order it would forget them,
with a score, features and a short reason.

``apply`` walks that order in protection tiers (the documented order in which
protections yield to the hard budget, DESIGN §3 invariant 1):

1. unpinned leaves of the dependency forest that are not task-protected;
2. unpinned non-leaves (archiving keeps provenance closure, but leaves go first, as
   seed 000 §5.3 asks);
3. pinned memories, active goals and their prerequisites (task-safety) — only when
   nothing else is left, with a "forced by budget" rationale.

Any active memory a policy does not yield is appended, oldest first, after its own
order, so every policy terminates with the budget restored (the new memory is never a
candidate: a memory heavier than the whole budget is refused before a policy runs).

Example:
    >>> from mars_core.policies import available
    >>> "lru" in available() and "fifo" in available()
    True
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol

from mars_core.errors import ConfigError, PolicyError
from mars_core.graph import MemoryGraph
from mars_core.model import MemoryNode

__all__ = [
    "Candidate",
    "Eviction",
    "Policy",
    "PolicyView",
    "available",
    "make_policy",
    "register",
]


class PolicyView(Protocol):
    """What a policy may read about one namespace (never mutate)."""

    namespace: str
    budget: int
    now: datetime
    rng: random.Random

    @property
    def step(self) -> int:
        """The namespace's interaction counter."""
        ...

    @property
    def used(self) -> int:
        """Active tokens in the namespace."""
        ...

    @property
    def count(self) -> int:
        """Active memories in the namespace."""
        ...

    @property
    def graph(self) -> MemoryGraph:
        """The memory graph."""
        ...

    def active(self) -> Iterable[MemoryNode]:
        """Active memories of the namespace, oldest first."""
        ...

    def node(self, node_id: str) -> MemoryNode:
        """A memory by id."""
        ...

    def is_leaf(self, node_id: str) -> bool:
        """No active memory derives from it."""
        ...

    def task_protected(self, node_id: str) -> bool:
        """An active goal, or a prerequisite of one without an equivalent summary."""
        ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory a policy proposes to forget, with the evidence for the audit."""

    node_id: str
    score: float | None = None
    features: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Eviction:
    """A decided eviction: the node goes to the archive with this rationale."""

    node_id: str
    weight: int
    score: float | None
    features: Mapping[str, float]
    rationale: str
    forced: bool = False


class Policy(abc.ABC):
    """Base class of forgetting policies (template method ``apply``).

    Subclasses set ``name`` and implement ``_candidates``; they may keep incremental
    per-namespace indices through the ``on_*`` hooks, which the store calls on every
    insert, access and removal (and replays on open).
    """

    name: ClassVar[str] = ""

    def params(self) -> dict[str, Any]:
        """Parameters recorded in the audit (override to report yours)."""
        return {}

    # --- incremental hooks (default: stateless) -----------------------------------------

    def replay_key(self, node: MemoryNode) -> tuple[int, ...]:
        """Order in which :meth:`rebuild` replays active memories (creation order)."""
        return (node.seq,)

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Rebuild incremental indices from the active memories (on open)."""
        for node in sorted(nodes, key=self.replay_key):
            self.on_insert(node)

    def on_insert(self, node: MemoryNode) -> None:  # noqa: B027 - optional hook
        """A memory became active (insert, restore, or replay on open)."""

    def on_access(self, node: MemoryNode) -> None:  # noqa: B027 - optional hook
        """A memory was accessed (``node`` carries the new statistics)."""

    def on_remove(self, node: MemoryNode) -> None:  # noqa: B027 - optional hook
        """A memory left the active set (evicted, forgotten, erased)."""

    # --- the template ------------------------------------------------------------------

    @abc.abstractmethod
    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        """Yield active memories in the order this policy would forget them."""

    def apply(self, view: PolicyView, need: int, exclude: frozenset[str] = frozenset()
              ) -> list[Eviction]:
        """Choose evictions freeing at least ``need`` tokens, honouring the tiers above.

        Raises:
            PolicyError: the namespace cannot free ``need`` tokens even by force.
        """
        if need <= 0:
            return []
        total = view.count
        chosen: list[Eviction] = []
        seen: set[str] = set(exclude)
        deferred: tuple[list[Candidate], list[Candidate]] = ([], [])
        freed = 0
        for cand in self._complete(view, seen):
            node = view.node(cand.node_id)
            if node.pinned or view.task_protected(node.id):
                deferred[1].append(cand)
                continue
            if not view.is_leaf(node.id):
                deferred[0].append(cand)
                continue
            freed += self._take(chosen, node, cand, total, forced=False)
            if freed >= need:
                return chosen
        for tier, forced in ((deferred[0], False), (deferred[1], True)):
            for cand in tier:
                freed += self._take(chosen, view.node(cand.node_id), cand, total, forced)
                if freed >= need:
                    return chosen
        raise PolicyError(f"{self.name}: cannot free {need} tokens in {view.namespace!r}")

    def _complete(self, view: PolicyView, seen: set[str]) -> Iterator[Candidate]:
        for cand in self._candidates(view):
            if cand.node_id not in seen:
                seen.add(cand.node_id)
                yield cand
        for node in view.active():
            if node.id not in seen:
                seen.add(node.id)
                yield Candidate(node.id, None, {}, "not ranked by the policy; oldest first")

    def _take(self, chosen: list[Eviction], node: MemoryNode, cand: Candidate, total: int,
              forced: bool) -> int:
        why = f"evicted by {self.name}: {cand.reason}"
        if forced:
            why += "; forced by budget (pinned or a prerequisite of an active goal, " \
                   "and nothing else was left)"
        chosen.append(Eviction(node.id, node.weight, cand.score, dict(cand.features),
                               f"{why} [{len(chosen) + 1} of {total} active]", forced))
        return node.weight


_REGISTRY: dict[str, Callable[..., Policy]] = {}


def register(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator registering a policy under ``name``."""

    def deco(cls: type[Policy]) -> type[Policy]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available() -> list[str]:
    """Names of registered policies."""
    return sorted(_REGISTRY)


def make_policy(name: str, **params: Any) -> Policy:
    """Instantiate a registered policy.

    Raises:
        ConfigError: unknown name or bad parameters.
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ConfigError(f"unknown policy {name!r}; choose one of {available()}")
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for policy {name!r}: {exc}") from exc
