"""What a policy plans over and what it proposes: the value types of forgetting.

:class:`PolicyView` (what a policy may read about one namespace), :class:`Candidate`,
:class:`Eviction`, :class:`Summary`, :class:`Plan` and the two stage kinds. The policy
framework (:mod:`mars_core.policies.base`) and the soft per-type shares
(:mod:`mars_core.shares`) both build on them, so neither imports the other for them.

Examples:
    >>> plan = Plan()
    >>> plan.freed, plan.evictions
    (0, [])
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mars_core.graph import MemoryGraph
from mars_core.model import MemoryNode, MemoryType

__all__ = [
    "MAX_DEPTH",
    "Candidate",
    "EvictStage",
    "Eviction",
    "Plan",
    "PolicyView",
    "Stage",
    "SummariseStage",
    "Summary",
]


class PolicyView(Protocol):
    """What a policy may read about one namespace (never mutate)."""

    budget: int
    now: datetime
    rng: random.Random

    @property
    def namespace(self) -> str:
        """The namespace."""
        ...

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

    def used_by_type(self) -> dict[MemoryType, int]:
        """Active tokens of each memory type."""
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

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalised embeddings of active memories, one row per id, in order."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts with the store's embedder (rows L2-normalised)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Weight a text would have as a memory."""
        ...

    def goal_vector(self) -> npt.NDArray[np.float32] | None:
        """Mean embedding of the active goals of the namespace (None without goals)."""
        ...


MAX_DEPTH = 2
"""Deepest compaction allowed: a summary of a summary, never more (seed 003)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory a policy proposes to forget, with the evidence for the audit.

    ``protection`` names a protection the policy grants the memory (DMF's healthy tier):
    the template then takes it only when every unprotected memory is gone (tier 3 of the
    module docstring), with a "forced by budget" rationale naming it.
    """

    node_id: str
    score: float | None = None
    features: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""
    protection: str = ""


@dataclass(frozen=True, slots=True)
class Eviction:
    """A decided eviction: the node goes to the archive with this rationale."""

    node_id: str
    weight: int
    score: float | None
    features: Mapping[str, float]
    rationale: str
    forced: bool = False


@dataclass(frozen=True, slots=True)
class Summary:
    """A proposed consolidation: replace ``member_ids`` by one semantic memory.

    Attributes:
        member_ids: the memories summarised (archived when accepted).
        text: the summary's content.
        distortion: D(C ⇒ c̄), the mean embedding distance of the members to the summary.
        sensitivity: the summary's sensitivity s̄.
        features: numbers for the audit (cluster size, gates, ...).
        rationale: a human-readable sentence (no memory text).
        concept: what the summary is about (the semantic payload's concept).
    """

    member_ids: tuple[str, ...]
    text: str
    distortion: float
    sensitivity: float
    features: Mapping[str, float] = field(default_factory=dict)
    rationale: str = ""
    concept: str | None = None


@dataclass
class Plan:
    """What a policy decided: summaries (applied first) and evictions.

    ``dp`` holds the audit record of a differential-privacy tie-break, when one ran.
    """

    evictions: list[Eviction] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    freed: int = 0
    dp: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class EvictStage:
    """A stage proposing evictions in order; ``label`` names it in rationales.

    ``densities`` declares that candidate scores are eq-7 densities (lowest first):
    only such a stage may have its boundary re-chosen by the differential-privacy
    tie-break (:attr:`Policy.dp`).
    """

    label: str
    candidates: Callable[[PolicyView], Iterator[Candidate]]
    densities: bool = False


@dataclass(frozen=True, slots=True)
class SummariseStage:
    """A stage proposing summaries: ``propose(view, need, taken)``."""

    label: str
    propose: Callable[[PolicyView, int, frozenset[str]], Iterable[Summary]]


Stage = EvictStage | SummariseStage
