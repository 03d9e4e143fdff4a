"""Where a namespace's views read what they do not hold: its history in the records.

A namespace's views (:class:`~mars_core.views.namespace.NamespaceState`) hold its
active memories whole and nothing of the rest. Anything else a call needs — an archived
memory a search found, the edges of a turn's neighbours, the newest turn of a
conversation, the archived memories of a time window — is read through a
:class:`History`: the record store's rows (:class:`RecordHistory`), or, for tests and
examples, memories held in RAM (:class:`HeldHistory`).

Examples:
    >>> from mars_core.model import MemoryNode
    >>> h = HeldHistory([MemoryNode(id="m1", type="episodic", content="hi", weight=1)])
    >>> [n.id for n in h.memories(["m1", "m2"])], h.latest_episode(None)
    (['m1'], 'm1')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from mars_core.model import Edge, MemoryNode, MemoryStatus, MemoryType
from mars_core.storage.base import RecordStore

__all__ = ["HeldHistory", "History", "RecordHistory"]


class History(Protocol):
    """The reads of one namespace's history (committed state; every method reads once)."""

    def memories(self, ids: Sequence[str]) -> list[MemoryNode]:
        """The memories of the namespace among ``ids``, by ``seq`` (others left out)."""
        ...

    def edges(self, ids: Sequence[str]) -> list[Edge]:
        """The edges that leave or enter one of ``ids``."""
        ...

    def window(self, status: MemoryStatus, since: float | None,
               until: float | None) -> list[str]:
        """Ids of the memories of ``status`` created in ``[since, until]``, by ``seq``."""
        ...

    def latest_episode(self, conversation: str | None) -> str | None:
        """The newest episodic memory of a conversation (``None``: of none)."""
        ...


class RecordHistory:
    """A namespace's history in a record store (each read one committed snapshot).

    Args:
        records: the record store.
        namespace: the namespace.
    """

    def __init__(self, records: RecordStore, namespace: str) -> None:
        self._records, self._ns = records, namespace

    def memories(self, ids: Sequence[str]) -> list[MemoryNode]:
        if not ids:
            return []
        with self._records.read() as tx:
            return tx.memories_by_id(self._ns, ids)

    def edges(self, ids: Sequence[str]) -> list[Edge]:
        if not ids:
            return []
        with self._records.read() as tx:
            return tx.edges_of(self._ns, ids)

    def window(self, status: MemoryStatus, since: float | None,
               until: float | None) -> list[str]:
        with self._records.read() as tx:
            return tx.ids_in_window(self._ns, status, since, until)

    def latest_episode(self, conversation: str | None) -> str | None:
        with self._records.read() as tx:
            return tx.latest_episode(self._ns, conversation)


class HeldHistory:
    """A history held in RAM: every memory and edge given (tests, examples).

    Args:
        nodes: the namespace's memories.
        edges: its edges.
    """

    def __init__(self, nodes: Iterable[MemoryNode] = (), edges: Iterable[Edge] = ()) -> None:
        self.nodes = {n.id: n for n in nodes}
        self.edge_list = list(edges)

    def memories(self, ids: Sequence[str]) -> list[MemoryNode]:
        return sorted((self.nodes[i] for i in dict.fromkeys(ids) if i in self.nodes),
                      key=lambda n: n.seq)

    def edges(self, ids: Sequence[str]) -> list[Edge]:
        wanted = set(ids)
        return [e for e in self.edge_list if e.source in wanted or e.target in wanted]

    def window(self, status: MemoryStatus, since: float | None,
               until: float | None) -> list[str]:
        return [n.id for n in sorted(self.nodes.values(), key=lambda n: n.seq)
                if n.status is status
                and (since is None or n.created_at.timestamp() >= since)
                and (until is None or n.created_at.timestamp() <= until)]

    def latest_episode(self, conversation: str | None) -> str | None:
        turns = [n for n in self.nodes.values() if n.type is MemoryType.EPISODIC
                 and (n.provenance.conversation_id or None) == (conversation or None)]
        return max(turns, key=lambda n: n.seq).id if turns else None
