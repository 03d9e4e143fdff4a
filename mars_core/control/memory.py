"""Oblivion's hierarchical memory (seed 002 §2.1) as value objects over MaRS memories.

* **L1** dynamic procedural clusters: ``task`` memories (pinned, ``metadata["mars_control"]
  == "l1"``) whose payload goal is the topic; summary keywords, utility, access statistics
  and learned procedures live in their metadata (see :mod:`mars_core.control.clusters`).
* **L2** timestamped semantic facts: the ``semantic``/``social``/``task`` memories that
  ``MemoryStore.observe`` extracts; a newer value supersedes the older one in the store.
* **L3** episodic entries: ``episodic`` memories — each observed message, and every
  ``episode_turns`` turns (a user message and its reply) an episode memory
  (``metadata["mars_control"] == "l3"``) that ``derivesFrom`` their messages.
* **L2↔L3 links**: MaRS ``derivesFrom`` edges — a fact and an episode are linked when they
  derive from the same turn.

Working memory (``WorkingMemory``) is transient: the window of recent turns, the bounded
buffer ``B_t`` of L2/L3 items, the resident L1 clusters and task metadata.

Examples:
    >>> b = Buffer.empty().merge([BufferItem("a", "Ana likes tea", Layer.L2, 4, 1.0)], 60, 100)
    >>> b.tokens, [i.id for i in b.items]
    (4, ['a'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from mars_core.control.access import CONTROL_KEY as _CONTROL_KEY
from mars_core.model import MemoryNode, MemoryType

__all__ = [
    "CONTROL_KEY",
    "Buffer",
    "BufferItem",
    "Layer",
    "Turn",
    "WorkingMemory",
    "layer_of",
]

CONTROL_KEY = _CONTROL_KEY
"""Metadata key marking control-loop memories (``"l1"`` clusters, ``"l3"`` episodes)."""


class Layer(StrEnum):
    """Oblivion's memory layers."""

    L1 = "L1"
    L2 = "L2"
    L3 = "L3"


def layer_of(node: MemoryNode) -> Layer:
    """The Oblivion layer of a MaRS memory (L1 marker, else episodic → L3, else L2)."""
    if node.metadata.get(CONTROL_KEY) == "l1":
        return Layer.L1
    return Layer.L3 if node.type is MemoryType.EPISODIC else Layer.L2


@dataclass(frozen=True, slots=True)
class BufferItem:
    """One L2/L3 memory cached in the buffer.

    Attributes:
        id: the memory id.
        text: its content.
        layer: L2 or L3.
        tokens: its weight in tokens.
        score: the curation priority it was admitted with.
        retention: its retention R when admitted.
        via: the sub-query that found it (``"cache"`` when kept from an earlier round).
    """

    id: str
    text: str
    layer: Layer
    tokens: int
    score: float
    retention: float = 1.0
    via: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible form (for graph state and checkpoints)."""
        return {"id": self.id, "text": self.text, "layer": self.layer.value,
                "tokens": self.tokens, "score": self.score, "retention": self.retention,
                "via": self.via}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> BufferItem:
        """Inverse of :meth:`to_dict`."""
        return cls(str(raw["id"]), str(raw["text"]), Layer(raw["layer"]), int(raw["tokens"]),
                   float(raw["score"]), float(raw.get("retention", 1.0)), str(raw.get("via", "")))


@dataclass(frozen=True, slots=True)
class Buffer:
    """The memory buffer ``B_t``: L2/L3 items under an item cap and a token cap."""

    items: tuple[BufferItem, ...] = ()

    @classmethod
    def empty(cls) -> Buffer:
        """A buffer holding nothing."""
        return cls(())

    @property
    def tokens(self) -> int:
        """Total tokens of the cached items."""
        return sum(i.tokens for i in self.items)

    @property
    def ids(self) -> list[str]:
        """Ids of the cached items, best first."""
        return [i.id for i in self.items]

    def merge(self, ranked: Iterable[BufferItem], max_items: int, max_tokens: int) -> Buffer:
        """Greedy curation: keep items in the given order while both caps hold."""
        out: list[BufferItem] = []
        used, seen = 0, set()
        for item in ranked:
            if item.id in seen or len(out) >= max_items:
                continue
            if used + item.tokens <= max_tokens:
                out.append(item)
                used += item.tokens
                seen.add(item.id)
        return Buffer(tuple(out))

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-compatible items."""
        return [i.to_dict() for i in self.items]

    @classmethod
    def from_list(cls, raw: Sequence[Mapping[str, Any]]) -> Buffer:
        """Inverse of :meth:`to_list`."""
        return cls(tuple(BufferItem.from_dict(r) for r in raw))


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the interaction context."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """Transient working memory: recent turns ``H_t``, buffer ``B_t``, task metadata.

    L1 clusters are resident too, but they are persisted memories and are read from the
    store by :class:`~mars_core.control.clusters.ClusterBook`.
    """

    window: tuple[Turn, ...] = ()
    buffer: Buffer = field(default_factory=Buffer.empty)
    task: Mapping[str, Any] = field(default_factory=dict)

    def with_turn(self, turn: Turn, k: int) -> WorkingMemory:
        """Append a turn, keeping the last ``k``."""
        window = (*self.window, turn)
        return replace(self, window=window[-k:] if k > 0 else ())

    def with_buffer(self, buffer: Buffer) -> WorkingMemory:
        """The same working memory with another buffer."""
        return replace(self, buffer=buffer)
