"""The MaRS memory model: typed nodes, typed payloads, provenance and typed edges.

Seed 000 §3.1 defines a memory node as ``n_i = (c_i, t_i, τ_i, s_i, w_i, ρ_i)``: content,
type, creation time, sensitivity in [0, 1], a positive weight (tokens) and provenance.
§3.2.1–3.2.4 give each type a structured payload and §3.2.9 the JSON-LD form.

Content is immutable: a :class:`MemoryNode` is a frozen value object and any change of
content makes a *new* node linked to the old one by ``derivesFrom`` (seed 000 §5.2).
Metadata (access statistics, status, sensitivity after a preference change) changes by
``node.model_copy(update=...)`` inside the store, never in place.

Examples:
    >>> from mars_core.model import MemoryNode, MemoryType, SemanticPayload
    >>> n = MemoryNode(id="00000000-0000-4000-8000-000000000001", type=MemoryType.SEMANTIC,
    ...                content="Ana prefers tea", weight=4,
    ...                payload=SemanticPayload(concept="Ana", confidence=0.9))
    >>> n.type.value, n.status.value, n.payload.kind
    ('semantic', 'active', 'semantic')
"""

from __future__ import annotations

import json
import math
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from itertools import repeat
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "HIDDEN",
    "RECALLABLE",
    "ArchiveReason",
    "Consent",
    "Edge",
    "EpisodicPayload",
    "IndexRow",
    "JSONValue",
    "MemoryNode",
    "MemoryStatus",
    "MemoryType",
    "Payload",
    "Predicate",
    "Provenance",
    "SemanticPayload",
    "SocialPayload",
    "TaskPayload",
    "TaskStatus",
    "default_payload",
    "search_text",
    "utc",
]

JSONValue = Any
"""A JSON-compatible value (kept as ``Any`` so pydantic validates it as such)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

MAX_CONTENT_CHARS = 200_000
"""Largest content accepted for one memory (characters); larger text is a ValidationError."""


def utc(dt: datetime) -> datetime:
    """Return ``dt`` as an aware UTC datetime (naive datetimes are taken as UTC).

    Raises:
        ValueError: ``dt`` lies outside the calendar once moved to UTC (the last day of
            year 9999 at UTC-5, say).
    """
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{dt.isoformat()} is outside the calendar once in UTC") from None


class MemoryType(StrEnum):
    """The four MaRS memory types (seed 000 §3.2.1–3.2.4)."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    SOCIAL = "social"
    TASK = "task"


class MemoryStatus(StrEnum):
    """Where a memory lives: the active store or the archive (cold storage)."""

    ACTIVE = "active"
    ARCHIVED = "archived"


class ArchiveReason(StrEnum):
    """Why a memory is in the archive (``MemoryNode.archive_reason``).

    Only the first two leave a memory *recallable*: ``retrieve`` and ``render_context``
    search it as a second tier (``RetrievalConfig.search_archive``). The others were
    put away on purpose and come back only when asked for (``include_archive=True``,
    ``get``, ``restore``).
    """

    EVICTED = "evicted"
    """A policy made room for newer memories, or swept what decayed."""
    SUMMARISED = "summarised"
    """Replaced in the active store by a summary that derives from it."""
    SUPERSEDED = "superseded"
    """A newer version, a correction, a changed fact or a merged duplicate replaced it."""
    FORGOTTEN = "forgotten"
    """``forget()`` on request (a cleared chat session too)."""
    EXPIRED = "expired"
    """Its TTL or retention horizon passed (``maintain()``)."""
    CLEARED = "cleared"
    """A user cleared the conversation it belongs to (``clear_conversation``: a chat
    history's ``clear()``, LlamaIndex ``reset``, a LangGraph delete). Never shown to a
    model again — not in the second tier, not as the raw support of a fact learnt from
    it; still explainable, and erasable."""


RECALLABLE: frozenset[ArchiveReason] = frozenset({ArchiveReason.EVICTED,
                                                  ArchiveReason.SUMMARISED})
"""Archive reasons that leave a memory in the second tier of retrieval."""

HIDDEN: frozenset[ArchiveReason] = frozenset({ArchiveReason.CLEARED})
"""Archive reasons that keep a memory from every context a model is shown (the second
tier, ``include_archive=True``, the raw support of derived evidence)."""


class TaskStatus(StrEnum):
    """Status of a task memory; only ``pending`` and ``active`` goals are protected."""

    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    CANCELLED = "cancelled"


class Consent(StrEnum):
    """Consent status recorded in provenance (seed 000 §5.4)."""

    UNKNOWN = "unknown"
    GRANTED = "granted"
    DENIED = "denied"


class Predicate(StrEnum):
    """Typed edge predicates (seed 000 §3.2, §3.2.9; DESIGN §3).

    Direction conventions (``source --predicate--> target``):

    * ``temporalNext``: the earlier episode points to the later one.
    * ``derivesFrom``: a derived node (summary, extracted fact, update) points to what
      it was derived from. These edges form the dependency forest of seed 000 §3.1.
    * ``isA``: an instance or concept points to its class.
    * ``friendOf``: a social relation between two people (symmetric in meaning).
    * ``requires``: a task points to a prerequisite memory.
    * ``attachesToGoal``: a memory points to the task (goal) it serves.
    * ``supersedes`` / ``corrects``: the newer memory points to the one it replaces.
    """

    TEMPORAL_NEXT = "temporalNext"
    DERIVES_FROM = "derivesFrom"
    IS_A = "isA"
    FRIEND_OF = "friendOf"
    REQUIRES = "requires"
    ATTACHES_TO_GOAL = "attachesToGoal"
    SUPERSEDES = "supersedes"
    CORRECTS = "corrects"


_FIELDS_SETS: dict[tuple[type, frozenset[str]], set[str]] = {}
"""One ``__pydantic_fields_set__`` per (class, set of fields): loaded memories all set the
same fields, and a set of 23 names costs 2 KB per memory otherwise."""
_MAX_FIELDS_SETS = 4096
_LAST_FIELDS_SET: dict[type, set[str]] = {}
"""The shared set each class used last (a run of decoded rows sets the same fields)."""
_SHARED_FLOATS = {0.0: 0.0, 1.0: 1.0}


def _shared_float(x: float) -> float:
    """``x``, or the one shared 0.0 or 1.0 object equal to it (-0.0 keeps its sign)."""
    return x if math.copysign(1.0, x) < 0 else _SHARED_FLOATS.get(x, x)


def _shared_str(text: str) -> str:
    """The one interned string equal to ``text`` (``sys.intern``; a str subclass is kept).

    For what memories and edges repeat: ids (each memory's is also in its edges), a
    conversation's and session's ids, sources, speakers. Interned strings die with their
    last holder, so none outlives the memories that held it.
    """
    return sys.intern(text) if type(text) is str else text


def _shared_strs(texts: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`_shared_str` of each of ``texts``."""
    return tuple(map(_shared_str, texts)) if texts else texts


class _Value(BaseModel):
    """A frozen value object whose field-name bookkeeping and repeated text are shared
    between instances.

    Pydantic keeps, per instance, the set of fields the caller passed; a memory read back
    from the records passes every field, so 10,000 memories held 10,000 equal sets (a
    fifth of a namespace's memory). The models are frozen, so nothing adds to the set in
    place (``model_copy`` copies it first); instances with equal sets share one. The
    text fields a class names in ``_SHARED_TEXT`` are interned (:func:`_shared_str`):
    one object per distinct id, conversation or source, however many rows decoded it.
    """

    model_config = _FROZEN
    _SHARED_TEXT: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _share_repeats(self) -> Any:
        mine = self.__pydantic_fields_set__
        shared = _LAST_FIELDS_SET.get(type(self))
        if shared is None or shared != mine:  # most follow one like them: no key to make
            key = (type(self), frozenset(mine))
            shared = _FIELDS_SETS.get(key)
            if shared is None and len(_FIELDS_SETS) < _MAX_FIELDS_SETS:  # bounded: callers
                shared = _FIELDS_SETS.setdefault(key, mine)  # may pass any subset of fields
            if shared is not None:
                _LAST_FIELDS_SET[type(self)] = shared
        if shared is not None and shared is not mine:
            object.__setattr__(self, "__pydantic_fields_set__", shared)
        values = self.__dict__  # frozen: the one way in, as object.__setattr__ would
        for name in self._SHARED_TEXT:
            if values[name] is not None:
                values[name] = _shared_str(values[name])
        return self


def _same(a: BaseModel, b: BaseModel) -> bool:
    """``a == b`` for two values without extra fields or private attributes: the same
    class and the same fields (pydantic's ``__eq__`` asks more, in Python)."""
    return type(a) is type(b) and a.__dict__ == b.__dict__


def _finite(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


class EpisodicPayload(_Value):
    """Episodic payload ``(event, context, participants, timestamp, emotional_valence)``."""

    kind: Literal["episodic"] = "episodic"
    event: str | None = Field(None, description="What happened, in a few words.")
    context: str | None = Field(None, description="Where/what situation it happened in.")
    participants: tuple[str, ...] = Field((), description="Who took part (speaker names).")
    emotional_valence: float = Field(0.0, ge=-1.0, le=1.0, description="Valence in [-1, 1].")

    @field_validator("participants")
    @classmethod
    def _share_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _shared_strs(v)  # a speaker's name, once for all their turns


class SemanticPayload(_Value):
    """Semantic payload ``(concept, relations, confidence, generality_score)``."""

    kind: Literal["semantic"] = "semantic"
    concept: str | None = Field(None, description="The entity or concept the fact is about.")
    relations: tuple[tuple[str, str], ...] = Field(
        (), description="Typed relations as (predicate, object) pairs, e.g. ('worksAt', 'Acme')."
    )
    confidence: float = Field(1.0, ge=0.0, le=1.0, description="Belief in the fact, in [0, 1].")
    generality: float = Field(0.5, ge=0.0, le=1.0, description="Generality score in [0, 1].")


class SocialPayload(_Value):
    """Social payload ``(entity, relationship_type, attributes, interaction_history)``."""

    kind: Literal["social"] = "social"
    entity: str | None = Field(None, description="The person or organisation.")
    relationship_type: str | None = Field(None, description="e.g. friend, colleague, sister.")
    attributes: dict[str, str] = Field(default_factory=dict, description="Known attributes.")
    interaction_history: tuple[str, ...] = Field((), description="Ids of related episodes.")


class TaskPayload(_Value):
    """Task payload ``(goal, status, dependencies, priority, deadline)``."""

    kind: Literal["task"] = "task"
    goal: str | None = Field(None, description="The goal, in a few words.")
    status: TaskStatus = Field(TaskStatus.PENDING, description="Goal status; gates task-safety.")
    dependencies: tuple[str, ...] = Field((), description="Ids of prerequisite memories.")
    priority: float = Field(0.5, ge=0.0, le=1.0, description="Priority in [0, 1].")
    deadline: datetime | None = Field(None, description="Deadline (UTC), if any.")

    @field_validator("deadline")
    @classmethod
    def _utc_deadline(cls, v: datetime | None) -> datetime | None:
        return None if v is None else utc(v)


Payload = Annotated[
    EpisodicPayload | SemanticPayload | SocialPayload | TaskPayload,
    Field(discriminator="kind"),
]

_PAYLOAD_BY_TYPE: dict[MemoryType, type[BaseModel]] = {
    MemoryType.EPISODIC: EpisodicPayload,
    MemoryType.SEMANTIC: SemanticPayload,
    MemoryType.SOCIAL: SocialPayload,
    MemoryType.TASK: TaskPayload,
}


def default_payload(
    mtype: MemoryType,
) -> EpisodicPayload | SemanticPayload | SocialPayload | TaskPayload:
    """Return the empty payload of a memory type."""
    payload = _PAYLOAD_BY_TYPE[MemoryType(mtype)]()
    assert isinstance(payload, EpisodicPayload | SemanticPayload | SocialPayload | TaskPayload)
    return payload


class Provenance(_Value):
    """Where a memory came from (ρ_i): source, conversation, reliability, consent.

    Examples:
        >>> Provenance(source="user", conversation_id="c1", turn=3).reliability
        1.0
    """

    source: str = Field("user", min_length=1, max_length=64,
                        description="Producer: user, assistant, tool, document, system, summary.")
    conversation_id: str | None = Field(None, max_length=256,
                                        description="Conversation the memory came from.")
    session_id: str | None = Field(None, max_length=256, description="Session within it.")
    turn: int | None = Field(None, ge=0, description="Turn index within the conversation.")
    reliability: float = Field(1.0, ge=0.0, le=1.0, description="Source reliability in [0, 1].")
    consent: Consent = Field(Consent.UNKNOWN, description="Consent status for storage/recall.")
    jurisdiction: str | None = Field(None, max_length=32, description="e.g. 'EU', 'US-CA'.")
    derived_from: tuple[str, ...] = Field((), description="Ids this memory was derived from.")
    external_id: str | None = Field(None, max_length=256,
                                    description="An id in the producer's system (dia_id, key).")

    # every turn of a conversation repeats them: one string each, not one per memory
    _SHARED_TEXT: ClassVar[tuple[str, ...]] = ("source", "conversation_id", "session_id",
                                               "jurisdiction")

    @field_validator("derived_from")
    @classmethod
    def _share_ids(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _shared_strs(v)  # the same objects as the memories' own ids


_DEFAULT_PROVENANCE = Provenance()
_EMPTY_PAYLOADS = {mtype: default_payload(mtype) for mtype in MemoryType}
_SPEAKERS: weakref.WeakValueDictionary[tuple[Any, ...], EpisodicPayload] = (
    weakref.WeakValueDictionary())
"""The episodic payloads of ``observe``'s turns (participants alone), one per value in
use: every turn of a speaker carries an equal one. Weak: an entry goes with the last
memory that holds it, so no name outlives its memories (an erasure, a closed store)."""


def _shared_episode(payload: EpisodicPayload) -> EpisodicPayload:
    """The one instance in use equal to ``payload`` (same fields set too), when it holds
    participants and a valence only (what ``observe`` writes); else ``payload``."""
    if payload.event is not None or payload.context is not None:
        return payload  # an event's own text: seldom equal, not worth an entry
    v = payload.emotional_valence
    key = (payload.participants, v, math.copysign(1.0, v),
           frozenset(payload.__pydantic_fields_set__))
    return _SPEAKERS.setdefault(key, payload)


class MemoryNode(_Value):
    """One memory: content plus metadata ``(c, t, τ, s, w, ρ)`` of seed 000 §3.1.

    Attributes are validated: sensitivity lies in [0, 1], the weight (tokens) is
    positive, the payload matches the type, timestamps are UTC.
    """

    id: str = Field(..., min_length=1, max_length=64, description="UUID string.")
    type: MemoryType = Field(..., description="episodic, semantic, social or task.")
    content: str = Field(..., min_length=1, max_length=MAX_CONTENT_CHARS)
    payload: Payload = Field(default_factory=EpisodicPayload)
    namespace: str = Field("default", min_length=1, max_length=256)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    step: int = Field(0, ge=0, description="Namespace interaction counter at creation (Δn).")
    seq: int = Field(0, ge=0, description="Store-wide creation sequence (a total order).")
    sensitivity: float = Field(0.0, ge=0.0, le=1.0)
    weight: int = Field(..., gt=0, description="Token cost w_i (positive).")
    provenance: Provenance = Field(default_factory=Provenance)
    status: MemoryStatus = MemoryStatus.ACTIVE
    access_count: int = Field(0, ge=0)
    last_access_at: datetime | None = None
    last_access_step: int | None = Field(None, ge=0)
    activated_seq: int = Field(0, ge=0, description="Store-wide sequence at which the memory "
                               "last became active (insert or restore): the FIFO order.")
    touch_seq: int = Field(0, ge=0, description="Store-wide sequence of the last insert or "
                           "access: a total recency order (the LRU list), stable across reopen.")
    depth: int = Field(0, ge=0, description="Compaction depth: 0 raw, 1 summary, 2 summary of…")
    pinned: bool = Field(False, description="Pinned memories are evicted only when forced.")
    expires_at: datetime | None = Field(None, description="TTL expiry (UTC), if any.")
    signals: dict[str, float] = Field(default_factory=dict,
                                      description="Write-time signals (e.g. DMF omega).")
    metadata: dict[str, JSONValue] = Field(default_factory=dict,
                                           description="User metadata (JSON values).")
    archive_reason: ArchiveReason | None = Field(
        None, description="Why an archived memory is in the archive (None while active, and "
        "for memories archived before this field existed: not recallable by default).")

    # one object for a memory's id wherever it is held: its edges, its references
    _SHARED_TEXT: ClassVar[tuple[str, ...]] = ("id", "namespace")

    @field_validator("created_at", "last_access_at", "expires_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else utc(v)

    @field_validator("content")
    @classmethod
    def _content(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("content must contain non-whitespace text")
        if "\x00" in v:
            raise ValueError("content must not contain NUL characters")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates cannot be stored anywhere
            raise ValueError("content must be valid Unicode (no lone surrogates)") from exc
        return v

    @field_validator("metadata")
    @classmethod
    def _json_metadata(cls, v: dict[str, JSONValue]) -> dict[str, JSONValue]:
        if not v:  # most memories carry none: nothing to encode
            return v
        try:  # and storable: no lone surrogate, not nested past the recursion limit
            json.dumps(v, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except RecursionError:
            raise ValueError("metadata is nested too deeply to store; flatten it") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be JSON-serialisable without NaN/inf: {exc}") from None
        return v

    @field_validator("signals")
    @classmethod
    def _signals(cls, v: dict[str, float]) -> dict[str, float]:
        values = v.values()
        if not all(map(math.isfinite, values)):
            for k, x in v.items():
                _finite(x, f"signal {k!r}")
        # every memory carries the same score names, mostly 0 or 1: one object each. A
        # -0.0 is not looked up (it would come back as the shared 0.0): with no negative
        # sign among the values, the whole mapping is built in C, no Python call per item
        if values and min(map(math.copysign, repeat(1.0), values)) < 0:
            return {sys.intern(k): _shared_float(x) for k, x in v.items()}
        return dict(zip(map(sys.intern, v), map(_SHARED_FLOATS.get, values, values),
                        strict=True))

    @model_validator(mode="after")
    def _payload_matches_type(self) -> MemoryNode:
        if self.payload.kind != self.type.value:
            raise ValueError(
                f"payload kind {self.payload.kind!r} does not match memory type {self.type.value!r}"
            )
        return self

    @model_validator(mode="after")
    def _share_defaults(self) -> MemoryNode:
        # memories stored without provenance or payload (``add(text)``) share one instance
        # of each default, as they share the field sets: frozen values, so sharing is safe
        # (compared field by field in C: the classes are exact and carry nothing else)
        prov, empty = self.provenance, _EMPTY_PAYLOADS[self.type]
        if prov is not _DEFAULT_PROVENANCE and _same(prov, _DEFAULT_PROVENANCE):
            object.__setattr__(self, "provenance", _DEFAULT_PROVENANCE)
        if self.payload is not empty and _same(self.payload, empty):
            object.__setattr__(self, "payload", empty)
        elif isinstance(self.payload, EpisodicPayload) and self.payload.participants:
            object.__setattr__(self, "payload", _shared_episode(self.payload))
        return self

    @property
    def is_active(self) -> bool:
        """True when the node is in the active store."""
        return self.status is MemoryStatus.ACTIVE

    @property
    def speaker(self) -> str | None:
        """Who said it: an episode's first participant (``observe(speaker=...)``)."""
        parts = self.payload.participants if isinstance(self.payload, EpisodicPayload) else ()
        return parts[0] if parts else None

    @property
    def search_text(self) -> str:
        """What lexical search matches: the content, after the speaker's name when it
        does not already start with it (a question naming a speaker finds what they said).

        Examples:
            >>> n = MemoryNode(id="m1", type="episodic", content="I moved to Lisbon",
            ...                weight=4, payload=EpisodicPayload(participants=("Ana",)))
            >>> n.search_text
            'Ana: I moved to Lisbon'
        """
        return search_text(self.content, self.speaker)


class Edge(_Value):
    """A typed, directed edge ``source --predicate--> target`` (an RDF-style statement).

    Examples:
        >>> Edge(source="a", predicate=Predicate.DERIVES_FROM, target="b").key
        ('a', 'derivesFrom', 'b')
    """

    source: str = Field(..., min_length=1, max_length=64)
    predicate: Predicate
    target: str = Field(..., min_length=1, max_length=64)
    weight: float = Field(1.0, gt=0.0, le=1e6)
    step: int = Field(0, ge=0)

    _SHARED_TEXT: ClassVar[tuple[str, ...]] = ("source", "target")  # the memories' ids

    @model_validator(mode="after")
    def _no_self_loop(self) -> Edge:
        if self.source == self.target:
            raise ValueError("an edge may not point from a node to itself")
        self.__dict__["weight"] = _shared_float(self.weight)  # most are 1.0
        return self

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity of the edge: (source, predicate, target)."""
        return (self.source, self.predicate.value, self.target)


def search_text(content: str, speaker: str | None) -> str:
    """What full-text search matches of a memory: ``content``, after ``speaker``'s name
    when it does not already start with it (:attr:`MemoryNode.search_text`).

    Examples:
        >>> search_text("I moved to Lisbon", "Ana"), search_text("Ana: hi", "Ana")
        ('Ana: I moved to Lisbon', 'Ana: hi')
    """
    if not speaker or content.casefold().startswith(speaker.casefold()):
        return content
    return f"{speaker}: {content}"


@dataclass(frozen=True, slots=True)
class IndexRow:
    """What a vector index holds of a memory: id, partition, vector, filter fields (the
    record store writes it, :meth:`~mars_core.storage.base.RecordTxn.index_rows`, and the
    index reads it: both import it from here).

    Examples:
        >>> IndexRow("m1", "ns", MemoryStatus.ACTIVE, [1.0], {}).namespace
        'ns'
    """

    id: str
    namespace: str
    status: MemoryStatus
    vector: npt.NDArray[np.float32]
    fields: Mapping[str, str | int | float | bool]
