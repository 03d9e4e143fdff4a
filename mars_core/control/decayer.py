"""The Decayer (seed 002 §2.2): whether to retrieve, and which clusters stay accessible.

**Uncertainty per L1 cluster.** "For each L1 cluster c in B_t, the Decayer estimates an
uncertainty score u_t(c) ∈ [0, 1] (higher means weaker support for q_t)". The buffer's
L2/L3 items are attributed to the resident clusters (:func:`attribute`: the cluster whose
topic and keywords share most content words with the item; items sharing none form the
*unclustered* group), and each cluster holding items is judged on **its own** items by
two deterministic signals (DESIGN §6):

* **embedding** — ``s̄_c``, the mean cosine of the query with the cluster's
  ``similarity_top`` best items; the signal's uncertainty is ``u^emb = 1 − max(0, s̄_c)``
  and it votes *uncertain* when ``s̄_c < min_similarity``;
* **lexical** — ``cov_c``, the share of the query's content words the cluster's items
  hold; ``u^lex = 1 − cov_c``, a vote when ``cov_c < min_coverage``;
* an optional **judge** ``(query, texts) -> bool`` (True: the texts suffice), e.g. an LLM
  through :func:`langchain_mars.models.judge_from_chat_model`, conditioned — as the
  paper's judge is — on the cluster summary, its procedures and its cached items;
  ``u^judge`` is 0 or 1.

``u_t(c)`` is the mean of the cluster's signal uncertainties (reported, and what ranks the
clusters); the gate is the paper's rule over the signals' votes: in the first round one
vote makes a cluster uncertain (OR, recall first), in later rounds every signal must vote
(AND, no redundant retrieval). The buffer suffices when **some cluster** is not uncertain;
otherwise — every cluster uncertain — the Activator runs. With no L2/L3 item in the buffer
retrieval is always triggered. Without clusters (``clusters=()``) every item is in one
group and the gate is the former whole-buffer gate.

Retention ``R = exp(-n/S)`` gates L1 clusters: a cluster whose R is below
``min_cluster_retention`` is inaccessible (its summary leaves the prompt) until a query
routed to it reactivates it.

Examples:
    >>> from mars_core.control.memory import Buffer, BufferItem, Layer
    >>> from mars_core.embeddings import HashingEmbedder
    >>> d = Decayer(HashingEmbedder())
    >>> d.assess("where does Ana live?", Buffer.empty(), 0).retrieve
    True
    >>> full = Buffer((BufferItem("a", "Ana lives in Lisbon", Layer.L2, 5, 1.0),))
    >>> d.assess("where does Ana live?", full, 0).retrieve
    False
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mars_core.control.clusters import Cluster, cluster_words
from mars_core.control.config import DecayerConfig
from mars_core.control.memory import Buffer, BufferItem
from mars_core.control.text import content_words, cosines, coverage
from mars_core.embeddings import Embedder, embed_one

__all__ = ["UNCLUSTERED", "ClusterUncertainty", "Decayer", "Judge", "Uncertainty",
           "attribute"]

Judge = Callable[[str, Sequence[str]], bool]
"""``judge(query, texts)``: True when the texts suffice to answer."""

UNCLUSTERED = "(unclustered)"
"""The group of buffer items that share no content word with any cluster."""


@dataclass(frozen=True, slots=True)
class ClusterUncertainty:
    """``u_t(c)`` of one cluster (or of the unclustered group) in one round.

    Attributes:
        topic: the cluster's topic (:data:`UNCLUSTERED` for the group).
        items: ids of the buffer items attributed to it, in buffer order.
        similarity: ``s̄_c``, mean of the query's best cosines with its items.
        coverage: ``cov_c``, share of the query's content words its items hold.
        judge: the judge's verdict on it (None without a judge).
        votes: the signals that voted uncertain.
        uncertainty: ``u_t(c)``, the mean of the signals' uncertainties, in [0, 1].
        uncertain: whether the round's rule (OR, then AND) finds it uncertain.
    """

    topic: str
    items: tuple[str, ...]
    similarity: float
    coverage: float
    judge: bool | None
    votes: tuple[str, ...]
    uncertainty: float
    uncertain: bool


@dataclass(frozen=True, slots=True)
class Uncertainty:
    """The Decayer's verdict for one round.

    ``similarity``, ``coverage``, ``judge`` and ``votes`` are those of the best-supported
    cluster (lowest ``u_t(c)``); ``clusters`` holds every assessed cluster, least uncertain
    first.

    Attributes:
        retrieve: whether the Activator runs (every cluster uncertain, or an empty buffer).
        similarity: the best cluster's embedding signal.
        coverage: the best cluster's lexical signal.
        judge: the best cluster's judge verdict (None without a judge).
        votes: which signals voted uncertain for the best cluster.
        round: 0 for the first round.
        reason: a one-line rationale.
        clusters: ``u_t(c)`` of each cluster holding buffer items.
    """

    retrieve: bool
    similarity: float
    coverage: float
    judge: bool | None
    votes: tuple[str, ...]
    round: int
    reason: str
    clusters: tuple[ClusterUncertainty, ...] = ()

    @property
    def uncertain_topics(self) -> tuple[str, ...]:
        """Topics of the clusters the round found uncertain (most uncertain last)."""
        return tuple(c.topic for c in self.clusters if c.uncertain)


def attribute(items: Sequence[BufferItem], clusters: Sequence[Cluster]) -> list[str]:
    """The topic each buffer item belongs to (:data:`UNCLUSTERED` when none matches).

    An item goes to the cluster whose topic and keywords share most of its content
    words (ties: the larger share of the cluster's words, then the topic's name).

    Examples:
        >>> from mars_core.control.memory import BufferItem, Layer
        >>> home = Cluster("1", "personal details", ("live", "home"), (), 0.5, 0, 0)
        >>> attribute([BufferItem("a", "Ana lives in Lisbon", Layer.L2, 5, 1.0),
        ...            BufferItem("b", "Bo plays the cello", Layer.L2, 4, 1.0)], [home])
        ['personal details', '(unclustered)']
    """
    vocab = [(c.topic, cluster_words(c)) for c in clusters]
    out: list[str] = []
    for item in items:
        words = content_words(item.text)
        ranked = sorted((-len(words & kw), -len(words & kw) / len(kw), topic)
                        for topic, kw in vocab if kw and words & kw)
        out.append(ranked[0][2] if ranked else UNCLUSTERED)
    return out


class Decayer:
    """Uncertainty gate per L1 cluster, plus cluster accessibility.

    Args:
        embedder: the store's embedder (query and buffer in one space).
        config: thresholds.
        judge: optional third signal (True = the texts suffice).
    """

    def __init__(self, embedder: Embedder, config: DecayerConfig | None = None,
                 judge: Judge | None = None) -> None:
        self.embedder = embedder
        self.config = config or DecayerConfig()
        self.judge = judge

    def assess(self, query: str, buffer: Buffer, round_: int,
               clusters: Sequence[Cluster] = ()) -> Uncertainty:
        """Decide whether round ``round_`` (0-based) retrieves, judging each cluster.

        Args:
            query: the user's message.
            buffer: the buffer ``B_t``.
            round_: 0 for the first round (OR rule), later rounds use AND.
            clusters: the namespace's L1 clusters (none: the buffer is one group).
        """
        items = buffer.items
        if not items:
            return Uncertainty(True, 0.0, 0.0, None, ("empty",), round_,
                               "the buffer holds no L2/L3 item: retrieve")
        qvec = embed_one(self.embedder, query)
        rows = np.asarray(self.embedder.embed([i.text for i in items]), dtype=np.float32)
        sims = cosines(qvec, rows)
        by_topic: dict[str, list[int]] = {}
        for pos, topic in enumerate(attribute(items, clusters)):
            by_topic.setdefault(topic, []).append(pos)
        known = {c.topic: c for c in clusters}
        assessed = [self._cluster(query, [items[p] for p in ps], [sims[p] for p in ps],
                                  known.get(topic), round_=round_, topic=topic)
                    for topic, ps in by_topic.items()]
        assessed.sort(key=lambda c: (c.uncertainty, -len(c.items), c.topic))
        best = assessed[0]
        retrieve = all(c.uncertain for c in assessed)
        rule = "OR" if round_ == 0 else "AND"
        reason = (f"round {round_} ({rule}): {len(assessed)} cluster(s) judged; best "
                  f"{best.topic!r} u {best.uncertainty:.3f} (similarity "
                  f"{best.similarity:.3f}, coverage {best.coverage:.2f}"
                  + (f", judge {'sufficient' if best.judge else 'insufficient'}"
                     if best.judge is not None else "")
                  + f") -> {'retrieve' if retrieve else 'buffer suffices'}")
        return Uncertainty(retrieve, best.similarity, best.coverage, best.judge, best.votes,
                           round_, reason, tuple(assessed))

    def accessible(self, retentions: Mapping[str, float]) -> list[str]:
        """Topics whose retention keeps them accessible."""
        return [t for t, r in retentions.items() if r >= self.config.min_cluster_retention]

    def _cluster(self, query: str, items: Sequence[BufferItem], sims: Sequence[float],
                 cluster: Cluster | None, *, round_: int, topic: str) -> ClusterUncertainty:
        """``u_t(c)`` of one cluster from its own items (module docstring)."""
        texts = [i.text for i in items]
        sim = _top_mean(sims, self.config.similarity_top)
        cov = coverage(query, texts)
        verdict = None
        if self.judge is not None:
            context = ([cluster.summary(), *(f"procedure: {p}" for p in cluster.procedures)]
                       if cluster is not None else [])
            verdict = bool(self.judge(query, [*context, *texts]))
        parts = [1.0 - max(0.0, sim), 1.0 - cov]
        if verdict is not None:
            parts.append(0.0 if verdict else 1.0)
        votes = tuple(name for name, uncertain in (
            ("embedding", sim < self.config.min_similarity),
            ("lexical", cov < self.config.min_coverage),
            ("judge", verdict is False)) if uncertain)
        uncertain = bool(votes) if round_ == 0 else len(votes) == len(parts)
        return ClusterUncertainty(topic, tuple(i.id for i in items), sim, cov, verdict, votes,
                                  round(sum(parts) / len(parts), 6), uncertain)


def _top_mean(sims: Sequence[float], top: int) -> float:
    """Mean of the ``top`` largest values, rounded so equal inputs give equal floats."""
    best = sorted(sims, reverse=True)[:top]
    return round(float(sum(best) / len(best)), 6)
