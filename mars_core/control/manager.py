"""The Memory Manager (seed 002 §2.3): persist the turn, reinforce what was used.

After each turn it

1. observes the user message and the answer into the store (one episodic memory per
   message, plus the L2 facts ``observe`` extracts; a newer value supersedes an older one);
2. closes L3 episodes: every ``episode_turns`` **turns** of the conversation not yet in
   an episode — a turn is one user message and its reply (:func:`complete_turns`), so the
   default 4 turns are about 8 messages — become one episodic memory ``derivesFrom`` their
   messages: raw text by default, or the output of an optional
   ``rewrite(messages) -> str`` (the seed's "preemptive" rewrite). Seed 002 counts an
   episode's length in turns ("turns per chunk", D.3; "4 turns", E.4);
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
    ...     first = m.persist("I moved to Lisbon", "Nice, Lisbon is sunny.")
    ...     second = m.persist("I work in a bakery", "Lovely.")
    ...     first.episodes, [len(n.provenance.derived_from) for n in second.episodes]
    ((), [4])
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

__all__ = ["MemoryManager", "Persisted", "Rewriter", "complete_turns"]

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
        episode_turns: turns (a user message and its reply) per L3 episode (seed 002
            E.4: 4).
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
        turns = complete_turns([n.provenance.source for n in pending])
        out = []
        while len(turns) >= self.episode_turns:
            chunk, turns = turns[: self.episode_turns], turns[self.episode_turns:]
            members = [pending[i] for turn in chunk for i in turn]
            texts = [f"{n.provenance.source}: {n.content}" for n in members]
            text = self.rewrite(texts) if self.rewrite is not None else "\n".join(texts)
            out.append(self.store.add(
                text, type="episodic", namespace=self.namespace,
                provenance={"source": "summary", "conversation_id": self.conversation_id,
                            "derived_from": tuple(n.id for n in members)},
                metadata={CONTROL_KEY: "l3", "rewritten": self.rewrite is not None,
                          "turns": len(chunk)}))
        return out


def complete_turns(roles: Sequence[str]) -> list[list[int]]:
    """Group messages (by their roles, in order) into complete turns.

    A turn is one user message and its reply: it opens at a ``"user"`` message and holds
    every following message up to the next user message (the same unit the
    :class:`~mars_core.control.access.TurnClock` counts). Messages before the first user
    message (a greeting) join the first turn. A turn followed by another user message is
    complete, reply or not; the last one is complete once it holds a reply.

    Examples:
        >>> complete_turns(["user", "assistant", "user", "assistant", "user"])
        [[0, 1], [2, 3]]
        >>> complete_turns(["assistant", "user", "assistant", "tool", "assistant"])
        [[0, 1, 2, 3, 4]]
        >>> complete_turns(["user", "user", "assistant"])
        [[0], [1, 2]]
    """
    turns: list[list[int]] = []
    lead: list[int] = []
    for i, role in enumerate(roles):
        if role == "user":
            turns.append([*lead, i])
            lead = []
        elif turns:
            turns[-1].append(i)
        else:
            lead.append(i)
    if turns and roles[turns[-1][-1]] == "user":  # still waiting for its reply
        turns.pop()
    return turns
