"""The Decayer (seed 002 §2.2): whether to retrieve, and which clusters stay accessible.

Two deterministic signals judge whether the buffer ``B_t`` suffices for the query
(DESIGN §6): **embedding** — the mean cosine of the query with its ``similarity_top`` best
buffer items reaches ``min_similarity``; **lexical** — the buffer covers at least
``min_coverage`` of the query's content words. An optional **judge**
``(query, buffer texts) -> bool`` (True: the buffer suffices), e.g. an LLM through
:func:`langchain_mars.models.judge_from_chat_model`, is a third signal.

Each signal votes *uncertain* when it finds the buffer insufficient. In the first round
one vote is enough to retrieve (OR, recall first); in later rounds every signal must vote
uncertain (AND, no redundant retrieval). With no L2/L3 item in the buffer retrieval is
always triggered.

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

from mars_core.control.config import DecayerConfig
from mars_core.control.memory import Buffer
from mars_core.control.text import cosines, coverage
from mars_core.embeddings import Embedder, embed_one

__all__ = ["Decayer", "Judge", "Uncertainty"]

Judge = Callable[[str, Sequence[str]], bool]
"""``judge(query, buffer_texts)``: True when the buffer suffices to answer."""


@dataclass(frozen=True, slots=True)
class Uncertainty:
    """The Decayer's verdict for one round.

    Attributes:
        retrieve: whether the Activator runs.
        similarity: the embedding signal (mean of the best cosines).
        coverage: the lexical signal (share of query words in the buffer).
        judge: the judge's verdict (None without a judge).
        votes: which signals voted uncertain.
        round: 0 for the first round.
        reason: a one-line rationale.
    """

    retrieve: bool
    similarity: float
    coverage: float
    judge: bool | None
    votes: tuple[str, ...]
    round: int
    reason: str


class Decayer:
    """Uncertainty gate over the buffer, plus cluster accessibility.

    Args:
        embedder: the store's embedder (query and buffer in one space).
        config: thresholds.
        judge: optional third signal (True = the buffer suffices).
    """

    def __init__(self, embedder: Embedder, config: DecayerConfig | None = None,
                 judge: Judge | None = None) -> None:
        self.embedder = embedder
        self.config = config or DecayerConfig()
        self.judge = judge

    def assess(self, query: str, buffer: Buffer, round_: int) -> Uncertainty:
        """Decide whether round ``round_`` (0-based) retrieves."""
        texts = [i.text for i in buffer.items]
        if not texts:
            return Uncertainty(True, 0.0, 0.0, None, ("empty",), round_,
                               "the buffer holds no L2/L3 item: retrieve")
        sim = self._similarity(query, texts)
        cov = coverage(query, texts)
        verdict = bool(self.judge(query, texts)) if self.judge is not None else None
        votes = [name for name, uncertain in (
            ("embedding", sim < self.config.min_similarity),
            ("lexical", cov < self.config.min_coverage),
            ("judge", verdict is False)) if uncertain]
        signals = 2 + (verdict is not None)
        retrieve = bool(votes) if round_ == 0 else len(votes) == signals
        rule = "OR" if round_ == 0 else "AND"
        reason = (f"round {round_} ({rule}): similarity {sim:.3f}, coverage {cov:.2f}"
                  + (f", judge {'sufficient' if verdict else 'insufficient'}"
                     if verdict is not None else "")
                  + f" -> {'retrieve' if retrieve else 'buffer suffices'}")
        return Uncertainty(retrieve, sim, cov, verdict, tuple(votes), round_, reason)

    def accessible(self, retentions: Mapping[str, float]) -> list[str]:
        """Topics whose retention keeps them accessible."""
        return [t for t, r in retentions.items() if r >= self.config.min_cluster_retention]

    def _similarity(self, query: str, texts: Sequence[str]) -> float:
        rows = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        sims = sorted(cosines(embed_one(self.embedder, query), rows), reverse=True)
        top = sims[: self.config.similarity_top]
        return round(float(sum(top) / len(top)), 6)
