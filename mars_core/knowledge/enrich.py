"""Write-time signals: computed once per memory, stored in ``MemoryNode.signals``.

DMF scores a turn when it is written (seed 004 §9.1 steps 1–3): text signals
(information density, sentiment, entities, conversational cues), the semantic
divergence ``D`` from a moving centroid of the namespace's recent memories, and the
survival score Ω. OSL-MR's freshness needs the stable/temporary label (seed 001 A.2).
Policies read these numbers later; nothing is recomputed at eviction time, so the
decision depends only on what was observable when the memory arrived.

Keys written (all floats; flags are 0.0/1.0): ``omega``, ``omega_raw``, ``divergence``,
``info_density``, ``sentiment``, ``entities``, ``constraint``, ``preference``,
``current_state``, ``past_state``, ``correction``, ``replacement``, ``query_like``,
``ack_like``, ``social``, ``durable`` (1 = stable, 0 = temporary).

Examples:
    >>> import numpy as np
    >>> e = Enricher(backend="rules")
    >>> sig = e.compute("Do not use external APIs", np.ones(4, np.float32), e.tracker(), "user")
    >>> sig["constraint"], round(sig["omega"], 2) > 0.5
    (1.0, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from mars_core.nlp import Analyzer, TextSignals
from mars_core.scoring.dmf import (
    DEFAULT_DMF_CONFIG,
    CentroidTracker,
    DMFConfig,
    ProvenanceFlags,
    score_signals,
)
from mars_core.scoring.mixed import Durability, label_durability

__all__ = ["SIGNAL_KEYS", "Enricher", "NlpBackend"]

NlpBackend = Literal["auto", "rules", "spacy", "off"]

SIGNAL_KEYS = (
    "omega", "omega_raw", "divergence", "info_density", "sentiment", "entities",
    "constraint", "preference", "current_state", "past_state", "correction", "replacement",
    "query_like", "ack_like", "social", "durable",
)
_FLAGS = ("constraint", "preference", "current_state", "past_state", "correction",
          "replacement", "query_like", "ack_like")


class Enricher:
    """Computes write-time signals; each namespace keeps its own centroid tracker
    (:meth:`tracker`), which the store holds with the namespace's other views.

    Args:
        backend: ``auto`` (spaCy when a trained English pipeline is installed, else
            rules), ``rules``, ``spacy``, or ``off`` (no signals at all).
        config: DMF constants.
    """

    def __init__(self, backend: NlpBackend = "auto",
                 config: DMFConfig = DEFAULT_DMF_CONFIG) -> None:
        self.config = config
        self.enabled = backend != "off"
        self._analyzer = Analyzer(backend="rules" if backend == "off" else backend)

    @property
    def analyzer(self) -> Analyzer:
        """The analyser behind the signals (shared with the sensitivity scorer)."""
        return self._analyzer

    @property
    def choice(self) -> str:
        """Which analyser computes the signals and why (``nlp="auto"`` says what it found)."""
        return "off: no text signals" if not self.enabled else self._analyzer.choice

    @property
    def name(self) -> str:
        """Which analyser computes the signals (recorded in the manifest)."""
        if not self.enabled:
            return "off"
        return f"{self._analyzer.backend_name}+{self._analyzer.sentiment_name}"

    def tracker(self, vectors: Iterable[npt.NDArray[np.float32]] = ()) -> CentroidTracker:
        """A namespace's moving centroid, primed with its most recent vectors (oldest
        first; text without words moves no centroid)."""
        tracker = CentroidTracker.from_config(self.config)
        for v in vectors:
            if np.any(v):
                tracker.push(v)
        return tracker

    def analyze(self, text: str) -> TextSignals | None:
        """The text signals (None when signals are off)."""
        return self._analyzer.analyze(text) if self.enabled else None

    def analyze_many(self, texts: Sequence[str]) -> list[TextSignals | None]:
        """The text signals of several texts in one batch (spaCy's ``nlp.pipe`` when it
        parses): what :meth:`analyze` gives for each."""
        if not self.enabled:
            return [None] * len(texts)
        return list(self._analyzer.analyze_many(texts))

    def compute(self, text: str, vector: npt.NDArray[np.float32], tracker: CentroidTracker,
                source: str, sig: TextSignals | None = None) -> dict[str, float]:
        """Signals of one memory (the centroid is updated by :meth:`commit`)."""
        if not self.enabled:
            return {}
        sig = sig or self._analyzer.analyze(text)
        d = tracker.divergence(vector) if np.any(vector) else 0.0
        user = source == "user"
        prov = ProvenanceFlags(user_correction=user and sig.correction,
                               preference_update=user and sig.preference,
                               constraint_source=user and sig.constraint)
        score = score_signals(sig, d, provenance=prov, config=self.config)
        out = {"omega": score.omega, "omega_raw": score.omega_raw, "divergence": d,
               "info_density": sig.info_density, "sentiment": sig.sentiment,
               "entities": float(sig.entity_count), "social": float(score.social),
               "durable": float(label_durability(text) is Durability.STABLE)}
        out.update({k: float(getattr(sig, k)) for k in _FLAGS})
        return out

    def commit(self, vector: npt.NDArray[np.float32], tracker: CentroidTracker) -> None:
        """Push a stored memory's vector into its namespace's moving centroid."""
        if self.enabled and np.any(vector):
            tracker.push(vector)
