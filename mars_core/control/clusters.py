"""L1 dynamic procedural clusters (seed 002 §2.1), persisted as MaRS memories.

A cluster is a pinned ``task`` memory (payload goal = topic, priority = utility) whose
metadata holds what the seed puts in a cluster node:

* summary ``s_c`` — the topic and its keywords (grown from the queries routed to it);
* statistics ``α_c`` — utility ``U``, credited accesses, and the interaction step of the
  last access (so ``n`` and ``R = exp(-n/S)`` are computed, never stored);
* procedures ``π_c`` — meta-instructions learned from feedback ("next time, …").

Memory content is immutable in MaRS, so a changed cluster is a **new version**: a new
memory that ``supersedes`` the old one, which goes to the archive (``store.history(id)``
lists every version, each with its audit event).

Procedures are learned deterministically from feedback text: a sentence with an
imperative cue ("always …", "never …", "next time …", "remember to …", "please … from now
on", "when I ask …") becomes an instruction; anything else leaves the cluster unchanged.

Examples:
    >>> learn_procedure("Wrong. Next time, always give the temperature in Celsius.")
    'always give the temperature in Celsius.'
    >>> learn_procedure("thanks!") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from mars_core.control.access import TurnClock, current_step
from mars_core.control.config import ClusterConfig
from mars_core.control.memory import CONTROL_KEY
from mars_core.control.text import content_words
from mars_core.errors import ValidationError
from mars_core.model import MemoryNode, Predicate, TaskPayload, TaskStatus
from mars_core.scoring.retention import OblivionConfig, RetentionState, state_retention
from mars_core.store import MemoryStore

__all__ = ["Cluster", "ClusterBook", "cluster_words", "learn_procedure", "relevance"]

_CUE = re.compile(
    r"(?:^|\b)(?:next time,?\s*|from now on,?\s*|in future,?\s*|in the future,?\s*)?"
    r"((?:always|never|remember to|make sure to|please|don't|do not|when i ask)\b.*)",
    re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def learn_procedure(feedback: str) -> str | None:
    """The meta-instruction in a feedback message, or None when it carries none."""
    for sentence in _SENTENCE.split(feedback.strip()):
        m = _CUE.search(sentence)
        if m and len(content_words(m.group(1))) >= 2:
            return m.group(1).strip()
    return None


def cluster_words(cluster: Cluster) -> set[str]:
    """The content words of a cluster's topic and keywords (what routing matches).

    Examples:
        >>> sorted(cluster_words(Cluster("1", "personal details", ("live",), (), 0.5, 0, 0)))
        ['detail', 'live', 'person']
    """
    return content_words(" ".join([cluster.topic, *cluster.keywords]))


def relevance(query: str, cluster: Cluster) -> float:
    """Share of the query's content words the cluster's topic and keywords hold (what
    routing matches; 0 for a query without content words).

    Examples:
        >>> relevance("Ana cello", Cluster("2", "music", ("cello", "guitar"), (), 0.5, 0, 0))
        0.5
    """
    words = content_words(query)
    return len(words & cluster_words(cluster)) / len(words) if words else 0.0


@dataclass(frozen=True, slots=True)
class Cluster:
    """One L1 cluster version (a value object; see :class:`ClusterBook` for persistence)."""

    id: str
    topic: str
    keywords: tuple[str, ...]
    procedures: tuple[str, ...]
    utility: float
    accesses: int
    last_step: int

    def retention(self, clock: TurnClock, config: OblivionConfig) -> float:
        """``R = exp(-n/S)``, ``n`` = user turns since the cluster's last access."""
        state = RetentionState(utility=self.utility, access_count=self.accesses,
                               turns_since_access=clock.since(self.last_step))
        return state_retention(state, config)

    def summary(self) -> str:
        """The cluster summary ``s_c`` (topic and keywords)."""
        kw = ", ".join(self.keywords[:12])
        return f"{self.topic}: {kw}" if kw else self.topic

    def render(self) -> str:
        """The memory content of this version."""
        text = f"[L1 cluster] {self.summary()}"
        if self.procedures:
            text += " | procedures: " + " ; ".join(self.procedures)
        return text

    def metadata(self) -> dict[str, Any]:
        """Metadata persisted with the version."""
        return {CONTROL_KEY: "l1", "topic": self.topic, "keywords": list(self.keywords),
                "procedures": list(self.procedures), "utility": self.utility,
                "accesses": self.accesses, "last_step": self.last_step}

    @classmethod
    def from_node(cls, node: MemoryNode) -> Cluster:
        """Read a cluster from its memory."""
        m = node.metadata
        return cls(node.id, str(m["topic"]), tuple(m.get("keywords", ())),
                   tuple(m.get("procedures", ())), float(m.get("utility", 0.5)),
                   int(m.get("accesses", 0)), int(m.get("last_step", node.step)))


class ClusterBook:
    """The L1 clusters of one namespace, read from and written to the store.

    Args:
        store: the memory store.
        namespace: whose clusters.
        config: taxonomy and routing.
        retention: Oblivion constants.

    Examples:
        >>> from mars_core import MemoryStore, FakeClock
        >>> with MemoryStore(clock=FakeClock()) as store:
        ...     book = ClusterBook(store, "u1")
        ...     c = book.route("Which restaurant should I book for Friday?")
        ...     c.topic if c else None
        'activities and services'
    """

    def __init__(self, store: MemoryStore, namespace: str,
                 config: ClusterConfig | None = None,
                 retention: OblivionConfig | None = None) -> None:
        self.store, self.namespace = store, namespace
        self.config = config or ClusterConfig()
        self.retention_config = retention or OblivionConfig()

    def all(self) -> list[Cluster]:
        """The current clusters (creating the initial taxonomy on first use)."""
        found = self._load()
        if not found:
            for topic, words in self.config.taxonomy.items():
                self._write(Cluster("", topic, tuple(words), (),
                                    self.retention_config.initial_utility, 0,
                                    current_step(self.store, self.namespace)), None)
            found = self._load()
        return found

    def retentions(self) -> dict[str, float]:
        """R of every cluster, by topic, at the current step."""
        clock = TurnClock(self.store, self.namespace)
        return {c.topic: c.retention(clock, self.retention_config) for c in self.all()}

    def route(self, query: str, create: bool = True) -> Cluster | None:
        """The cluster a query belongs to; a new topic when none matches (dynamic topics).

        With ``create=False`` (the read path) nothing is written: None when no cluster
        matches and a new topic would be needed.
        """
        words = content_words(query)
        clusters = self.all()
        scored = [(self._match(words, c), c.topic, c) for c in clusters]
        best = max(scored, key=lambda s: (s[0], s[1])) if scored else None
        if best is not None and best[0] >= self.config.min_match:
            return best[2]
        if self.config.dynamic_topics and words:
            if not create:
                return None
            topic = " ".join(sorted(words)[:3])
            existing = [c for c in clusters if c.topic == topic]
            if existing:
                return existing[0]
            return self._write(Cluster("", topic, tuple(sorted(words)), (),
                                       self.retention_config.initial_utility, 0,
                                       current_step(self.store, self.namespace)), None)
        by_topic = {c.topic: c for c in clusters}
        if self.config.fallback not in by_topic:
            raise ValidationError(f"fallback topic {self.config.fallback!r} is not in the taxonomy")
        return by_topic[self.config.fallback]

    def touch(self, cluster: Cluster, query: str, utility: float | None,
              procedure: str | None) -> Cluster:
        """Record an access: keywords grow, U moves toward ``utility``, a procedure is added.

        Returns the new version (one new memory superseding the old one).
        """
        cfg = self.retention_config
        u = cluster.utility
        if utility is not None:
            target = min(cfg.utility_max, max(cfg.utility_min, utility))
            u = round(u + cfg.utility_rate * (target - u), 6)
        words = tuple(dict.fromkeys([*cluster.keywords, *sorted(content_words(query))]))
        procs = cluster.procedures
        if procedure and procedure not in procs:
            procs = (*procs, procedure)
        new = replace(cluster, keywords=words[-self.config.max_keywords:], procedures=procs,
                      utility=u, accesses=cluster.accesses + 1,
                      last_step=current_step(self.store, self.namespace))
        return self._write(new, cluster.id)

    def _match(self, words: set[str], cluster: Cluster) -> float:
        kw = cluster_words(cluster)
        return len(words & kw) / len(words) if words else 0.0

    def _load(self) -> list[Cluster]:
        nodes = [n for n in self.store.list(self.namespace, type="task")
                 if n.metadata.get(CONTROL_KEY) == "l1"]
        return [Cluster.from_node(n) for n in nodes]

    def _write(self, cluster: Cluster, previous: str | None) -> Cluster:
        links: Sequence[tuple[Predicate, str]] = \
            [(Predicate.SUPERSEDES, previous)] if previous else []
        node = self.store.add(cluster.render(), type="task", namespace=self.namespace,
                              payload=TaskPayload(goal=cluster.topic, status=TaskStatus.ACTIVE,
                                                  priority=cluster.utility),
                              metadata=cluster.metadata(), pinned=True,
                              links=links)
        if previous:
            self.store.forget(previous, reason=f"superseded by cluster version {node.id}",
                              namespace=self.namespace)
        return replace(cluster, id=node.id)
