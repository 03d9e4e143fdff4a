"""Configuration of the Oblivion control loop: every field documented, unknown keys rejected.

The seed (002 §2.1–2.4, §5.1, E.2, E.4) fixes the structure and a few values (decay
temperature T = 10, episodes of 4 turns, buffers of 60 or 90 items); everything else is
ours and said so in the field's description.

Examples:
    >>> cfg = ControlConfig()
    >>> cfg.buffer.max_items, cfg.episode_turns, cfg.retention.temperature
    (60, 4, 10.0)
    >>> ControlConfig.model_validate({"bufer": {}})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    pydantic_core._pydantic_core.ValidationError: ...
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mars_core.scoring.retention import OblivionConfig

__all__ = [
    "ActivatorConfig",
    "BufferConfig",
    "ClusterConfig",
    "ControlConfig",
    "DecayerConfig",
    "RecognizerConfig",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)

DEFAULT_TAXONOMY: dict[str, tuple[str, ...]] = {
    "personal preferences": ("like", "love", "prefer", "favorite", "favourite", "enjoy", "hate"),
    "personal details": ("name", "family", "born", "live", "home", "age", "birthday"),
    "plans and intentions": ("plan", "going", "will", "tomorrow", "next", "trip", "schedule"),
    "activities and services": ("restaurant", "book", "hotel", "flight", "hobby", "sport"),
    "health and wellness": ("health", "doctor", "sleep", "exercise", "diet", "allergic"),
    "professional details": ("work", "job", "career", "office", "project", "colleague"),
    "miscellaneous": (),
}
"""Seed 002's Recognizer categories (App. F, "Information Categories") with seed words (ours)."""


class BufferConfig(BaseModel):
    """Working memory bounds (seed 002 §2.1)."""

    model_config = _STRICT
    max_items: int = Field(60, ge=1, le=10_000, description="B_t: most L2/L3 items the buffer "
                           "holds (seed 002 uses 60 or 90, Table 11).")
    max_tokens: int = Field(512, ge=1, description="Token cap of the buffer's L2/L3 items "
                            "(ours: DESIGN §6 bounds the buffer by items AND tokens).")
    window_turns: int = Field(6, ge=0, le=1000, description="K: raw recent turns kept in the "
                              "interaction context H_t (SILENT in the seed; ours).")


class DecayerConfig(BaseModel):
    """Uncertainty gate and retention (seed 002 §2.2)."""

    model_config = _STRICT
    min_similarity: float = Field(0.25, ge=-1.0, le=1.0, description="The embedding signal "
                                  "says 'buffer suffices' when the mean of the top "
                                  "`similarity_top` query↔item cosines reaches this (ours, set "
                                  "for the default hashing embedder; about 0.45 suits MiniLM).")
    similarity_top: int = Field(3, ge=1, description="How many best buffer items the embedding "
                                "signal averages (ours: the seed's plain mean over the whole "
                                "buffer falls as the buffer grows, whatever it holds).")
    min_coverage: float = Field(0.6, ge=0.0, le=1.0, description="The lexical signal says "
                                "'buffer suffices' when this share of the query's content words "
                                "(stemmed, stop words removed) occurs in the buffer (ours).")
    min_cluster_retention: float = Field(0.05, ge=0.0, le=1.0, description="L1 clusters with "
                                         "R below this are inaccessible: their summaries leave "
                                         "the prompt until a query reactivates them (ours).")


class ActivatorConfig(BaseModel):
    """Sub-query DAG retrieval (seed 002 §2.2, Activator)."""

    model_config = _STRICT
    per_query_tokens: int = Field(512, ge=1, description="Token budget of each sub-query's "
                                  "candidate list before fusion.")
    split_conjunctions: bool = Field(True, description="Split the query on 'and', 'or', commas "
                                     "into sub-queries (each keeps the query's entities).")
    speaker_scope: bool = Field(True, description="When a (sub-)query names exactly one of "
                                "the namespace's speakers (memories opening with 'Name:' or "
                                "observed with speaker=), add a child node restricted to that "
                                "speaker's own statements and speakerless memories: questions "
                                "about a person are answered by what that person said (ours).")
    unscoped_weight: float = Field(0.0, ge=0.0, le=1.0, description="When a node has a "
                                   "speaker-restricted child, the weight its unrestricted list "
                                   "keeps in the fusion, relative to the child's (0: the child "
                                   "replaces it; the unrestricted node stays in the DAG).")
    voice_weight: float = Field(1.0, ge=0.0, le=1.0, description="A speaker-restricted node "
                                "gets a child asking the question in that speaker's voice "
                                "('What does Ana like?' → 'What do I like?', matching first-"
                                "person turns), fused with this weight relative to its parent "
                                "(0 disables; ours).")
    scope_depth: int = Field(2, ge=1, le=64, description="A node with a speaker-restricted "
                             "child searches this many times `per_query_tokens`, so the child "
                             "still holds `per_query_tokens` of the speaker's memories after "
                             "the filter (ours).")
    second_hop: bool = Field(True, description="Chain a second hop: entities and salient terms "
                             "of the first hop's best results, joined to the query's keywords.")
    hop_when_scoped: bool = Field(False, description="Also chain the second hop when the "
                                  "main query has a speaker-restricted child (off: on LoCoMo's "
                                  "tune split the hop cost that child recall and precision "
                                  "with both embedders; ours).")
    hop_sources: int = Field(3, ge=1, description="How many first-hop results feed the second hop.")
    hop_terms: int = Field(3, ge=1, description="Salient terms taken from those results.")
    hop_novel: bool = Field(False, description="A second-hop list keeps only what its parent's "
                            "best `hop_sources` results do not already hold (the refinement "
                            "contributes new evidence instead of re-voting for the parent's).")
    hop_focus: bool = Field(False, description="Second-hop sub-queries are the query's "
                            "entities plus the found term only (focused), instead of the whole "
                            "query plus the term.")
    fusion: Literal["sum", "max"] = Field("sum", description="Reciprocal-rank fusion: 'sum' "
                                          "adds a memory's weighted 1/(k + rank) over the lists; "
                                          "'max' keeps its best one (favours each list's top "
                                          "results: more diverse evidence).")
    diversity: float = Field(0.0, ge=0.0, le=1.0, description="Curation penalty: a candidate "
                             "within `adjacency` interactions of one already chosen has its "
                             "score multiplied by 1 - diversity (neighbouring turns repeat each "
                             "other; 0 disables).")
    adjacency: int = Field(2, ge=0, description="Interaction distance (Δn) under which two "
                           "memories count as neighbours for `diversity`.")
    sub_weight: float = Field(0.5, ge=0.0, le=1.0, description="Weight of a sub-query's list in "
                              "the fusion (the main query weighs 1).")
    cache_weight: float = Field(0.5, ge=0.0, le=1.0, description="Weight of the cached buffer "
                                "(ranked by similarity to the new query) in the fusion.")
    rrf_k: int = Field(10, ge=1, description="k of reciprocal-rank fusion 1/(k + rank).")
    target_clusters: int = Field(2, ge=0, le=64, description="How many of the L1 clusters "
                                 "the Decayer found uncertain get sub-queries aimed at them, "
                                 "highest relevance × u_t(c) first (seed 002 App. F: the "
                                 "Activator expands the query 'into a DAG of sub-queries "
                                 "targeting uncertain clusters'; 0 disables; the count is "
                                 "ours).")
    target_weight: float = Field(0.5, ge=0.0, le=1.0, description="Fusion weight of an aimed "
                                 "sub-query's list at priority 1: it weighs target_weight × "
                                 "relevance × u_t(c), both factors kept in [0.05, 0.95] as "
                                 "the seed's Decayer prompt keeps them ('exact 0.0 or 1.0 ... "
                                 "create multiplicative zero-products in downstream budget "
                                 "allocation'); the product form is ours.")
    target_terms: int = Field(3, ge=0, le=32, description="Cluster keywords (absent from the "
                              "query, present in the namespace, rarest first) joined to the "
                              "query in an aimed sub-query's second phrasing (ours).")
    follow_links: bool = Field(True, description="The main query's hits pull their L2↔L3 "
                               "neighbours (shared derivesFrom turns) into the candidates.")
    retention_floor: float = Field(0.5, ge=0.0, le=1.0, description="An item's fused score is "
                                   "multiplied by floor + (1 - floor)·R (memory retention).")


class RecognizerConfig(BaseModel):
    """Credit assignment (seed 002 §2.3)."""

    model_config = _STRICT
    min_overlap: float = Field(0.5, ge=0.0, le=1.0, description="An item counts as used when "
                               "this share of its content words (at most `max_words` rarest "
                               "ones) appears in the answer (ours).")
    min_words: int = Field(2, ge=1, description="Or when at least this many of its distinctive "
                           "content words (not in the query) appear in the answer.")
    max_words: int = Field(8, ge=1, description="Distinctive words considered per item.")


class ClusterConfig(BaseModel):
    """L1 dynamic procedural clusters (seed 002 §2.1)."""

    model_config = _STRICT
    taxonomy: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: dict(DEFAULT_TAXONOMY),
        description="Initial topics → seed keywords (the seed: 'a configurable domain-specific "
        "taxonomy'; default: its Recognizer categories).",
    )
    dynamic_topics: bool = Field(True, description="Create a topic when no cluster matches "
                                 "(seed 002 Table 11 'Dynamic Topics').")
    min_match: float = Field(0.2, ge=0.0, le=1.0, description="Routing score below which a "
                             "query matches no cluster (ours).")
    max_keywords: int = Field(24, ge=1, description="Keywords a cluster keeps (its summary).")
    fallback: str = Field("miscellaneous", description="Topic used when nothing matches and "
                          "dynamic topics are off.")


class ControlConfig(BaseModel):
    """Everything the Executor needs; nested objects per component.

    Examples:
        >>> ControlConfig(max_iterations=2).decayer.min_coverage
        0.6
    """

    model_config = _STRICT
    buffer: BufferConfig = Field(default_factory=BufferConfig, description="Working memory.")
    decayer: DecayerConfig = Field(default_factory=DecayerConfig, description="Read gate.")
    activator: ActivatorConfig = Field(default_factory=ActivatorConfig, description="Retrieval.")
    recognizer: RecognizerConfig = Field(default_factory=RecognizerConfig,
                                         description="Credit assignment.")
    clusters: ClusterConfig = Field(default_factory=ClusterConfig, description="L1 clusters.")
    retention: OblivionConfig = Field(default_factory=OblivionConfig, description="R = "
                                      "exp(-n/S), S = (U + F + ε)·T; n counts the namespace's "
                                      "interactions (DESIGN §3 Δn), not wall-clock time.")
    max_iterations: int = Field(3, ge=1, le=20, description="Decayer→Activator rounds per turn "
                                "(seed 002 §2.4 'fixed iterations'; value ours).")
    episode_turns: int = Field(4, ge=1, le=100, description="Turns per L3 episode, a turn "
                               "being one user message and its reply (seed 002 D.3 'turns "
                               "per chunk', E.4: 4 is best).")
