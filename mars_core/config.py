"""Configuration objects: every field documented, unknown keys rejected.

Examples:
    >>> StoreConfig(budget=2000, policy="lru").budget
    2000
    >>> StoreConfig.model_validate({"budgett": 1})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    pydantic_core._pydantic_core.ValidationError: ...
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mars_core.model import MemoryType
from mars_core.namespaces import canonical_namespace
from mars_core.privacy.dp import DPConfig

__all__ = ["RetrievalConfig", "StoreConfig"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class RetrievalConfig(BaseModel):
    """How ``retrieve`` and ``render_context`` rank, cut and pack memories.

    The defaults are the pipeline measured best on LoCoMo (7 conversations, 1,033
    questions, evidence F1 at a 128-token budget; parameters chosen
    leave-one-conversation-out, docs/benchmarks/evidence.md): 0.3 · cosine + 0.7 · BM25,
    plus 0.3 · the answerability rerank, and a relative cut-off at 0.85 of the best score.
    ``RetrievalConfig(dense_weight=0.5, cue_weight=0, relative_cutoff=0)`` is the plain
    hybrid that fills the budget.

    Examples:
        >>> RetrievalConfig().relative_cutoff
        0.85
    """

    model_config = _STRICT
    dense_weight: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Weight of cosine similarity in the hybrid score; the rest goes to BM25.",
    )
    cue_weight: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Weight of the deterministic answerability rerank (entity, speaker and "
        "temporal cues minus a phatic penalty; DMF §9.3 step 4) added to the hybrid score.",
    )
    relative_cutoff: float = Field(
        0.85, ge=0.0, le=1.0,
        description="Drop hits scoring below this share of the best hit's score before "
        "packing (0 fills the budget in rank order; `retrieve(relative_cutoff=)` overrides "
        "it per call).",
    )
    candidates: int = Field(
        64, ge=1, le=10_000,
        description="How many candidates each channel (dense, lexical) proposes before fusion.",
    )
    bm25_k1: float = Field(1.2, gt=0.0, description="BM25 term-frequency saturation k1.")
    bm25_b: float = Field(0.75, ge=0.0, le=1.0, description="BM25 length normalisation b.")
    default_budget_tokens: int = Field(
        512, gt=0, description="Token budget of a retrieval when the caller gives none."
    )


class StoreConfig(BaseModel):
    """Configuration of a :class:`~mars_core.store.MemoryStore`.

    It is recorded in the store manifest; reopening a store uses the recorded values
    unless the caller passes new ones (which are then recorded, with an audit event).
    """

    model_config = _STRICT
    budget: int = Field(
        8000, gt=0,
        description="Global token budget B of each namespace: Σ w_i of active nodes ≤ B.",
    )
    namespace_budgets: dict[str, int] = Field(
        default_factory=dict, description="Per-namespace overrides of `budget` (keys are "
        "namespace strings, parts joined by '/': see mars_core.namespaces)."
    )
    policy: str = Field(
        "lru", min_length=1,
        description="Forgetting policy by registry name (see mars_core.policies.available()).",
    )
    policy_params: dict[str, Any] = Field(
        default_factory=dict, description="Keyword parameters passed to the policy."
    )
    type_shares: dict[MemoryType, float] | None = Field(
        None, description="Opt-in soft per-type budget shares (seed 000 §3.2.7), updated by the "
        "dual step from observed hits per token (mars_core.shares); None: no shares."
    )
    seed: int | None = Field(
        None, ge=0, description="Seed of a new store's ids and seeded random choices (same "
        "seed and inputs, same store). None: a random secret drawn at creation and recorded "
        "in the manifest, so ids cannot be guessed across stores; a reopened store keeps "
        "its own."
    )
    token_counter: str = Field(
        "approx-v1", description="Token counter name: 'approx-v1', 'whitespace' or 'tiktoken-*'."
    )
    default_namespace: str = Field(
        "default", min_length=1, description="Namespace used when a call names none (a "
        "namespace string: see mars_core.namespaces)."
    )
    nlp: Literal["auto", "rules", "spacy", "off"] = Field(
        "auto", description="Write-time text signals (DMF): 'auto' uses spaCy when a trained "
        "English pipeline is installed, else deterministic rules; 'off' stores no signals.",
    )
    sensitivity_scoring: bool = Field(
        True, description="Score each memory's sensitivity at ingestion from detectors "
        "(PII patterns, secrets, category lexicons, entities) when add() gets sensitivity=None; "
        "False stores 0.0 unless a sensitivity is given.",
    )
    dedup_threshold: float = Field(
        0.92, gt=0.0, le=1.0, description="maintain(): cosine above which the older of two "
        "memories is merged into the newer (seed 003's 0.92).",
    )
    reflect_at: float = Field(
        0.9, gt=0.0, le=1.0, description="maintain(): consolidate redundant episodes when "
        "active tokens reach this share of the budget.",
    )
    dp: DPConfig = Field(
        default_factory=DPConfig, description="Differential-privacy tie-break at the eviction "
        "boundary (seed 000 §4.3). Off by default: it makes evictions random (from the OS "
        "generator, never the seed), so a replay no longer gives the same store.",
    )
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="Ranking and packing of `retrieve`."
    )

    @field_validator("default_namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        return canonical_namespace(v)

    @field_validator("namespace_budgets")
    @classmethod
    def _budget_keys(cls, v: dict[str, int]) -> dict[str, int]:
        for ns in v:
            canonical_namespace(ns)
        return v

    def budget_for(self, namespace: str) -> int:
        """The budget of ``namespace`` (its override, or the global budget)."""
        return self.namespace_budgets.get(namespace, self.budget)
