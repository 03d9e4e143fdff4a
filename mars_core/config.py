"""Configuration objects: every field documented, unknown keys rejected, nothing coerced.

Every field is strict: a number is never read from a string (``"100"``) or a bool
(``True``), a bool never from ``"yes"`` or ``1``, and NaN and infinities are refused.
Budgets are whole numbers of tokens above zero, per namespace as globally; type shares
are fractions of the budget that add up to 1 (:func:`~mars_core.budget.check_shares`).
The same checks run wherever a configuration enters: ``StoreConfig(...)``,
``MemoryStore(..., **overrides)``, ``MemoryStore.open(...)`` and the configuration a
store recorded, when it is reopened. A refused configuration raises
:class:`~mars_core.errors.ConfigError` (a ``ValidationError``) that says what to pass,
and changes nothing.

Examples:
    >>> StoreConfig(budget=2000, policy="lru").budget
    2000
    >>> StoreConfig(budgett=1)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.ConfigError: invalid store configuration: budgett: ...
    >>> StoreConfig(budget="100")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    mars_core.errors.ConfigError: invalid store configuration: budget: ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, Strict, field_serializer, field_validator

from mars_core.budget import ElasticBudget, check_budget, check_shares
from mars_core.errors import ConfigError
from mars_core.model import MemoryType
from mars_core.namespaces import canonical_namespace
from mars_core.privacy.dp import DPConfig
from mars_core.privacy.output import FlaggedText
from mars_core.scope import check_jurisdictions

__all__ = ["RetrievalConfig", "RetrievalTemplate", "StoreConfig", "parse_config"]

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)


def parse_config(data: Mapping[str, Any]) -> StoreConfig:
    """A :class:`StoreConfig` from a mapping of its fields (a manifest's, a caller's).

    Raises:
        ConfigError: an unknown field or a bad value; the message names each field and
            says what it takes (input values are not echoed: they may be sensitive).

    Examples:
        >>> parse_config({"budget": 100}).budget
        100
    """
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        raise ConfigError("a store configuration is a mapping of StoreConfig field names to "
                          "values")
    return StoreConfig(**data)


def _explain(exc: pydantic.ValidationError, what: str) -> ConfigError:
    """Ours from pydantic's: each field with what it takes, no input values echoed; the
    message of one of our checks (a nested configuration's too) is kept as it is."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = ".".join(map(str, err["loc"]))
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, ValueError):
            msg = str(cause)
        elif err["type"] == "extra_forbidden":
            msg = "not a field (the fields and what each takes are documented on the class)"
        elif err["type"].endswith("_type"):
            msg = f"{err['msg']} (nothing is converted: give a value of the field's own type)"
        else:
            msg = err["msg"]
        parts.append(f"{loc}: {msg}" if loc else msg)
    return ConfigError(f"invalid {what}: " + "; ".join(parts))


class _Config(BaseModel):
    """A configuration object whose constructor raises :class:`ConfigError`."""

    _what: ClassVar[str] = "configuration"

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise _explain(exc, self._what) from None


class RetrievalConfig(_Config):
    """How ``retrieve`` and ``render_context`` rank, cut and pack memories.

    The defaults are the pipeline measured best on LoCoMo (7 conversations, 1,033
    questions, evidence F1 at a 128-token budget; parameters chosen
    leave-one-conversation-out, docs/benchmarks/evidence.md): 0.3 · cosine + 0.7 · BM25,
    plus 0.3 · the answerability rerank, and a relative cut-off at 0.85 of the best score.
    Two rules read the question against what the store knows of a memory (issue 31,
    measured on the users' path with leave-one-conversation-out figures beside): + 0.25
    when the question names the memory's speaker (``speaker_weight``), + 0.3 when the
    memory was made in the calendar time the question names (``date_weight``).
    ``RetrievalConfig(dense_weight=0.5, cue_weight=0, speaker_weight=0, date_weight=0,
    relative_cutoff=0)`` is the plain hybrid that fills the budget. Two parameter-free
    choices measured on the path users run (``observe`` with the default budget;
    docs/benchmarks/evidence.md) are on by default:
    a question and its reply form one unit (``reply_units``), and the archive is a second
    tier (``search_archive``); and the symbolic card channel of DMF §9.3 (``card_weight``,
    :mod:`mars_core.reading.frame`) finds the extracted fact that answers a question's frame.
    BM25 uses Lucene's and Anserini's default parameters (``k1=0.9, b=0.4``), not the
    textbook 1.2 / 0.75, whose length normalisation ranks short remarks above the turns
    that tell what happened (measured on the users' path, docs/benchmarks/evidence.md).

    Examples:
        >>> RetrievalConfig().relative_cutoff, RetrievalConfig().bm25_b
        (0.85, 0.4)
    """

    model_config = _STRICT
    _what: ClassVar[str] = "retrieval configuration"
    dense_weight: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Weight of cosine similarity in the hybrid score; the rest goes to BM25.",
    )
    cue_weight: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Weight of the deterministic answerability rerank (entity, speaker and "
        "temporal cues minus a phatic penalty; DMF §9.3 step 4) added to the hybrid score.",
    )
    speaker_weight: float = Field(
        0.25, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Extra weight of the answerability rerank's speaker cue: a memory said by "
        "someone the query names ('What did Nate cook?', 'Nate's dish' and a turn Nate said) "
        "gains this on top of its share of `cue_weight`; a reply borrowing its question's "
        "score (`reply_units`) does not borrow this term. 0 turns the rule off.",
    )
    date_weight: float = Field(
        0.3, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Added to the score of a memory made in the calendar time the query names "
        "('in July 2023', 'on 13 October, 2023', 'in June'; "
        "mars_core.reading.frame.time_window) or up to a week after it (what happened is "
        "often told a few days later). 0 turns the rule "
        "off.",
    )
    card_weight: float = Field(
        1.0, ge=0.0, le=10.0, allow_inf_nan=False,
        description="Weight of the symbolic card channel (DMF §9.3; mars_core.reading.frame): a "
        "semantic or social memory whose subject and predicate answer the query's frame "
        "('Where do I work?' -> 'The user works at Acme') is a candidate, gains this weight "
        "times its card score S in [0, 1], and is never cut off. 0 turns the channel off.",
    )
    relative_cutoff: float = Field(
        0.85, ge=0.0, le=1.0,
        description="Drop hits scoring below this share of the best hit's score before "
        "packing (0 fills the budget in rank order; `retrieve(relative_cutoff=)` overrides "
        "it per call).",
    )
    reply_units: bool = Field(
        True, description="A turn that asks a question and the reply after it (the next turn "
        "of its conversation, by another speaker) are one unit: the reply scores at least as "
        "the question does (mars_core.reading.retrieval.reply_of). False ranks every turn on "
        "its own.",
    )
    search_archive: bool = Field(
        True, description="`retrieve` and `render_context` also search, as a second tier, the "
        "memories a policy archived to make room or replaced by a summary (ArchiveReason "
        "'evicted', 'summarised'), ranked with the same score and marked archived; never "
        "what was forgotten on request, superseded, corrected or expired. False: the active "
        "memories only (unless `retrieve(include_archive=True)`).",
    )
    candidates: int = Field(
        64, ge=1, le=10_000,
        description="How many candidates each channel (dense, lexical) proposes before fusion.",
    )
    bm25_k1: float = Field(
        0.9, gt=0.0, allow_inf_nan=False,
        description="BM25 term-frequency saturation k1 (Lucene/Anserini's default 0.9; the "
        "textbook Okapi value is 1.2). Read when a store opens: a reopened store keeps the "
        "value it recorded unless the caller passes a new one.")
    bm25_b: float = Field(
        0.4, ge=0.0, le=1.0,
        description="BM25 length normalisation b (Lucene/Anserini's default 0.4; the textbook "
        "Okapi value 0.75 favours the shortest memories — a three-word fact or a one-line "
        "remark — over a turn that tells the event in full: docs/benchmarks/evidence.md).")
    default_budget_tokens: int = Field(
        512, gt=0, description="Token budget of a retrieval when the caller gives none."
    )


class RetrievalTemplate(_Config):
    """A retrieval template: what one department (or any named caller) may retrieve
    (seed 000 §4.3: "policy templates can be scoped by jurisdiction and department,
    enabling differential treatment of the same content").

    ``retrieve(..., template="support")`` and ``render_context(..., template=...)`` apply
    it on top of the call's own filters, and the narrower wins: the types both allow, the
    lower sensitivity cap, the jurisdictions both cover. A call cannot widen its template.

    Examples:
        >>> t = RetrievalTemplate(max_sensitivity=0.3, jurisdictions=["eu"])
        >>> t.max_sensitivity, sorted(t.jurisdictions or ())
        (0.3, ['EU'])
    """

    model_config = _STRICT
    _what: ClassVar[str] = "retrieval template"
    description: str = Field("", max_length=500, description="What the template is for "
                             "(shown in errors and the docs; never matched).")
    types: frozenset[Annotated[MemoryType, Strict(False)]] | None = Field(
        None, description="Only memories of these types (None: every type).")
    max_sensitivity: float | None = Field(
        None, ge=0.0, le=1.0, description="Only memories at most this sensitive (None: no "
        "cap of its own; the call's cap still applies).")
    jurisdictions: frozenset[str] | None = Field(
        None, description="Only memories whose provenance jurisdiction one of these codes "
        "covers ('EU' covers 'EU-DE'; '' covers memories with none; mars_core.scope). "
        "None: every jurisdiction.")

    @field_validator("jurisdictions", mode="before")
    @classmethod
    def _codes(cls, value: object) -> frozenset[str] | None:
        return check_jurisdictions(value)

    @field_serializer("types", "jurisdictions")
    def _sorted(self, value: frozenset[Any] | None) -> list[str] | None:
        """Sorted, so a recorded configuration is the same bytes every time."""
        return None if value is None else sorted(
            v.value if isinstance(v, MemoryType) else str(v) for v in value)

    @field_validator("types", mode="before")
    @classmethod
    def _types(cls, value: object) -> frozenset[MemoryType] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
            raise ConfigError("types is a list of memory types such as ['semantic']")
        try:
            return frozenset(MemoryType(t) for t in value)
        except ValueError:
            raise ConfigError(f"unknown memory type in types; use "
                              f"{[t.value for t in MemoryType]}") from None


class StoreConfig(_Config):
    """Configuration of a :class:`~mars_core.store.MemoryStore`.

    It is recorded in the store manifest; reopening a store uses the recorded values
    unless the caller passes new ones (which are then recorded, with an audit event).
    A reopened namespace that uses more tokens than its (new) budget is brought under it
    when the store opens: its policy archives memories, each with an ``evict`` audit
    event, after a ``config`` event in that namespace says why (nothing is deleted; see
    docs/concepts/budget.md).

    Fields are strict (see the module): ``budget=True``, ``budget="100"``,
    ``budget=100.0``, ``namespace_budgets={"a": 0}``, type shares that do not add up to
    1 and ``sensitivity_scoring="yes"`` are all refused with a :class:`ConfigError`.
    """

    model_config = _STRICT
    _what: ClassVar[str] = "store configuration"
    budget: int = Field(
        8000, gt=0,
        description="Global token budget B of each namespace: Σ w_i of active nodes ≤ B "
        "(an int ≥ 1; not a bool, a float or a string).",
    )
    namespace_budgets: dict[str, int] = Field(
        default_factory=dict, description="Per-namespace overrides of `budget`: namespace "
        "(a string, parts joined by '/': see mars_core.namespaces) → an int ≥ 1, checked as "
        "`budget` is."
    )
    elastic: ElasticBudget | None = Field(
        None, description="Elastic budgeting (seed 000 §6.9.2; mars_core.budget."
        "ElasticBudget): each namespace runs at its budget B0 and the store raises it, up "
        "to max_factor × B0, while telemetry shows stress (the policy firing on most writes "
        "and retrievals served by the archive), lowering it back when the load normalises. "
        "None (default): the budget is fixed.",
    )
    policy: str = Field(
        "lru", min_length=1,
        description="Forgetting policy by registry name (see mars_core.policies.available()).",
    )
    policy_params: dict[str, Any] = Field(
        default_factory=dict, description="Keyword parameters passed to the policy."
    )
    type_shares: dict[Annotated[MemoryType, Strict(False)], float] | None = Field(
        None, description="Opt-in soft per-type budget shares (seed 000 §3.2.7), updated by the "
        "dual step from observed hits per token (mars_core.shares); None: no shares. Each "
        "share is a fraction of the budget in [0, 1], keyed by memory type, and they add up "
        "to 1 (B_epi + B_sem + B_soc + B_task = B); a type left out has share 0."
    )
    seed: int | None = Field(
        None, ge=0, description="Seed of a new store's ids and of every seeded random choice "
        "(same seed and inputs, same store). None: random choices use seed 0, and the ids "
        "come from a random secret drawn at creation and recorded in the manifest, so they "
        "cannot be guessed across stores; a reopened store keeps its own."
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
    semantic_sensitivity: bool | None = Field(
        None, description="Add the embedding-level classifier to sensitivity scoring "
        "(seed 000 §4.3; mars_core.privacy.semantic): fitted once per process on the "
        "store's own embedder from the shipped labelled statements (about 280 texts "
        "embedded on first use), calibrated by cross-validation, and disabled by itself on "
        "an embedder that cannot carry it. It also names the sensitive category of what "
        "render_context's semantic pass compares. None (default): on with the library's "
        "local sentence-transformers embedder (mars_core.embedders.runs_locally: a "
        "SentenceTransformerEmbedder, the default when installed, or an embedder named as "
        "one), off with any other, where the fit would cost calls to "
        "a paid or remote model the user did not ask for (and the hashing embedder's "
        "classifier is too weak to use). True: on with any embedder. False: detectors only "
        "(the semantic pass uses the lexicons' categories).",
    )
    durable_accesses: bool = Field(
        False, description="Whether what a read records (retrieve, recall and "
        "render_context counting an access: the statistics rows and the access audit "
        "event, one transaction) waits for the disk like every other write. False: it is "
        "committed without an fsync (SQLite synchronous=NORMAL, PostgreSQL "
        "synchronous_commit=off, for that transaction alone); it is as atomic and survives "
        "a crash of the process, and a power cut can roll back only the accesses recorded "
        "after the last other write (never a memory or any other change, never part of "
        "one). True: an fsync per access (about 1-4 ms on a VM disk).",
    )
    redact: bool = Field(
        True, description="The output check (seed 000 §4.3) on every read that hands "
        "memory text out — retrieve, recall, render_context, check_output and the framework "
        "adapters built on them: identifiers and contact details masked in every memory "
        "(typed placeholders such as [PHONE]); in a sensitive memory (sensitivity >= 0.7) "
        "or one that restates a sensitive memory, its health, protected-attribute and "
        "finance words too (and the words a close restatement shares with what it "
        "restates); restatements of erased memories withheld; consented memories shown. "
        "False: the stored text, unless a call passes redact=True (each call's redact= "
        "overrides this; an unchecked read is recorded as such in its access event).",
    )
    paraphrase_threshold: float | None = Field(
        None, gt=0.0, le=1.0, description="render_context: cosine at which a shown memory "
        "counts as a restatement of a sensitive (≥ 0.7) or erased memory and is withheld "
        "(or passed to rephrase_or_confirm). None: calibrated on the store's embedder (the "
        "95th percentile of ordinary statements' highest cosine to sensitive ones).",
    )
    rephrase_or_confirm: Callable[[FlaggedText], str | bool] | None = Field(
        None, exclude=True, description="The rephrase-or-confirm hook of seed 000 §5.4, "
        "called only when render_context's semantic pass flags a memory as restating a "
        "sensitive or erased one, with a FlaggedText (mars_core.privacy.output). It returns "
        "a safer rephrasing (a str, checked again by both passes and withheld if still "
        "flagged), True (the user confirmed: shown as it is) or False (withheld). Anything "
        "else, or an exception, is a PrivacyHookError and the call changes nothing. None "
        "(the default): flagged memories are withheld. Not recorded in the store manifest "
        "(pass it again when reopening).",
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
    retrieval_templates: dict[str, RetrievalTemplate] = Field(
        default_factory=dict, description="Named retrieval templates (seed 000 §4.3: scoped "
        "by jurisdiction and department): `retrieve(..., template=NAME)` and "
        "`render_context(..., template=NAME)` apply the template's types, sensitivity cap "
        "and jurisdictions on top of the call's own, the narrower winning.")

    @field_validator("default_namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        return canonical_namespace(v)

    @field_validator("budget", mode="before")
    @classmethod
    def _check_budget(cls, value: object) -> int:
        return check_budget(value)

    @field_validator("namespace_budgets", mode="before")
    @classmethod
    def _check_namespace_budgets(cls, value: object) -> dict[str, int]:
        if not isinstance(value, Mapping):
            raise ConfigError("namespace_budgets must map namespace names to budgets, e.g. "
                              "{'alice': 4000}")
        out = {}
        for ns, budget in value.items():
            if not isinstance(ns, str):
                raise ConfigError("namespace_budgets keys must be namespace strings (parts "
                                  "joined by '/', see mars_core.namespaces)")
            canonical_namespace(ns)  # a ValidationError that says how to write it
            out[ns] = check_budget(budget, f"namespace_budgets[{ns!r}]")
        return out

    @field_validator("type_shares", mode="before")
    @classmethod
    def _check_type_shares(cls, value: object) -> dict[MemoryType, float] | None:
        return None if value is None else check_shares(value)

    def budget_for(self, namespace: str) -> int:
        """The budget of ``namespace`` (its override, or the global budget)."""
        return self.namespace_budgets.get(namespace, self.budget)
