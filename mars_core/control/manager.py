"""The Memory Manager (seed 002 §2.3): persist the turn, reinforce what was used.

After each turn it

1. observes the user message and the answer into the store (one episodic memory per
   message, plus the L2 facts ``observe`` extracts; a newer value supersedes an older one);
2. closes L3 episodes: every ``episode_turns`` messages of the conversation not yet in an
   episode become one episodic memory ``derivesFrom`` them — raw text by default, or the
   output of an optional ``rewrite(messages) -> str`` (the seed's "preemptive" rewrite);
3. reinforces the credited memories only (:func:`~mars_core.control.access.record_use`:
   access count + 1, ``n`` back to 0) and reports the credit to the store's policies
   (``store.credit``); unused memories are not touched, so their ``n`` keeps growing with
   the namespace's interaction counter and their retention decays;
4. updates the turn's L1 cluster: utility toward the credited share, keywords, and a
   procedure when the feedback carries one.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     m = MemoryManager(store, "u", conversation_id="c1", episode_turns=2)
    ...     out = m.persist("I moved to Lisbon", "Nice, Lisbon is sunny.")
    ...     [n.metadata.get("mars_control") for n in out.episodes]
    ['l3']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mars_core.control.access import record_use
from mars_core.control.clusters import Cluster, ClusterBook, learn_procedure
from mars_core.control.memory import CONTROL_KEY
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode
from mars_core.store import MemoryStore

__all__ = ["MemoryManager", "Persisted", "Rewriter"]

Rewriter = Callable[[Sequence[str]], str]
"""``rewrite(messages)``: the text of an L3 episode built from its messages."""


@dataclass(frozen=True, slots=True)
class Persisted:
    """What one turn wrote.

    Attributes:
        observed: memories ``observe`` stored (episodes and extracted facts).
        episodes: L3 episodes closed by this turn.
        reinforced: ids whose credited use was recorded.
        cluster: the new version of the turn's L1 cluster (None when not updated).
    """

    observed: tuple[MemoryNode, ...]
    episodes: tuple[MemoryNode, ...]
    reinforced: tuple[str, ...]
    cluster: Cluster | None


class MemoryManager:
    """Write path over a store namespace.

    Args:
        store: the memory store.
        namespace: whose memory.
        conversation_id: groups the turns (L3 episodes never span conversations).
        episode_turns: messages per L3 episode (seed 002 E.4: 4).
        rewrite: optional episode rewriter (default: the raw messages).
        clusters: the namespace's L1 clusters (default: a new book with the default taxonomy).
    """

    def __init__(self, store: MemoryStore, namespace: str, *, conversation_id: str = "main",
                 episode_turns: int = 4, rewrite: Rewriter | None = None,
                 clusters: ClusterBook | None = None) -> None:
        if episode_turns < 1:
            raise ValidationError("episode_turns must be >= 1")
        self.store, self.namespace = store, namespace
        self.conversation_id, self.episode_turns = conversation_id, episode_turns
        self.rewrite = rewrite
        self.clusters = clusters or ClusterBook(store, namespace)

    def persist(self, query: str, answer: str) -> Persisted:
        """Steps 1–2: observe both messages and close full L3 episodes."""
        observed: list[MemoryNode] = []
        for role, text in (("user", query), ("assistant", answer)):
            if text.strip():
                observed += self.store.observe(role, text, namespace=self.namespace,
                                               conversation_id=self.conversation_id)
        return Persisted(tuple(observed), tuple(self._close_episodes()), (), None)

    def reinforce(self, used: Sequence[str], offered: Sequence[str]) -> list[str]:
        """Step 3: credit to the policies, reinforcement of the used memories only."""
        self.store.credit(used, offered, namespace=self.namespace)
        return record_use(self.store, used, self.namespace)

    def update_cluster(self, query: str, used: Sequence[str], offered: Sequence[str],
                       feedback: str | None = None) -> Cluster:
        """Step 4: the L1 cluster of ``query`` learns from the turn (a new version)."""
        cluster = self.clusters.route(query)
        assert cluster is not None  # route(create=True) always returns a cluster
        utility = len(used) / len(offered) if offered else None
        procedure = learn_procedure(feedback) if feedback else None
        return self.clusters.touch(cluster, query, utility, procedure)

    def learn(self, query: str, feedback: str) -> Cluster | None:
        """Feedback on an earlier answer: add its procedure to the query's cluster."""
        procedure = learn_procedure(feedback)
        if procedure is None:
            return None
        cluster = self.clusters.route(query)
        assert cluster is not None
        return self.clusters.touch(cluster, query, None, procedure)

    def _close_episodes(self) -> list[MemoryNode]:
        nodes = [n for n in self.store.list(self.namespace, type="episodic")
                 if n.provenance.conversation_id == self.conversation_id]
        covered = {d for n in nodes if n.metadata.get(CONTROL_KEY) == "l3"
                   for d in n.provenance.derived_from}
        pending = [n for n in nodes if n.metadata.get(CONTROL_KEY) is None
                   and not n.provenance.derived_from and n.id not in covered]
        out = []
        while len(pending) >= self.episode_turns:
            chunk, pending = pending[: self.episode_turns], pending[self.episode_turns:]
            texts = [f"{n.provenance.source}: {n.content}" for n in chunk]
            text = self.rewrite(texts) if self.rewrite is not None else "\n".join(texts)
            out.append(self.store.add(
                text, type="episodic", namespace=self.namespace,
                provenance={"source": "summary", "conversation_id": self.conversation_id,
                            "derived_from": tuple(n.id for n in chunk)},
                metadata={CONTROL_KEY: "l3", "rewritten": self.rewrite is not None}))
        return out
