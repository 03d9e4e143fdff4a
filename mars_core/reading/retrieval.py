"""Hybrid retrieval: dense (vector index) + lexical (BM25) candidates, fused, then packed
into a token budget (seed 000 §4.1: "a budget-bounded working set ... subject to filters
(type, time window, sensitivity caps)").

The fused score of a candidate is ``α·cos + (1-α)·bm25/max_bm25 + w·A(q, m)`` (α =
``RetrievalConfig.dense_weight``, w = ``cue_weight``), where ``A`` is the deterministic
answerability rerank of DMF §9.3 step 4 (:func:`answerability`): entity overlap with the
query, the query naming the memory's speaker, a temporal question meeting a temporal
expression, minus a penalty for phatic turns (greetings, thanks, bare acknowledgements).
Two more terms read the question against what the store knows of each memory (issue 31):
``speaker_weight`` × the speaker cue again — the question names who said the memory
("What did Nate cook?", possessives included) — and ``date_weight`` when the memory was
made in the calendar time the question names ("in July 2023", "on 13 October, 2023";
:func:`mars_core.reading.frame.time_window`) or up to a week after it. Hits scoring below
``relative_cutoff`` × the best score are dropped (a relative score cut-off: a short list
of strong hits beats filling the budget with weak ones); packing then walks the survivors
by score and keeps each one that still fits the token budget (up to ``k`` memories). The
defaults were chosen leave-one-conversation-out on LoCoMo (``mars bench locomo``,
docs/benchmarks/evidence.md).

Examples:
    >>> q = Query(text="tea", namespace="ns", max_sensitivity=0.5)
    >>> q.allows_sensitivity(0.7)
    False
    >>> a = answerability("When did Ana move to Lisbon?", "Ana: I moved to Lisbon last May")
    >>> (a.entity, a.speaker, a.temporal, a.phatic)
    (1.0, 1.0, 1.0, 0.0)
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Final, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from mars_core.config import RetrievalConfig
from mars_core.errors import ValidationError
from mars_core.index.base import (
    And,
    Eq,
    Filter,
    In,
    IndexCapabilities,
    Range,
    VectorQuery,
    exact_cosines,
)
from mars_core.model import MemoryNode, MemoryStatus, MemoryType, Predicate, utc
from mars_core.nlp.rules import normalise_apostrophes
from mars_core.reading.analysis import STOPWORDS, terms
from mars_core.reading.frame import answers, parse_query, symbolic_score, time_window
from mars_core.scope import check_jurisdictions, covers
from mars_core.storage.base import TermHits, TermQuery
from mars_core.views.namespace import NamespaceState, card_topic

__all__ = ["Answerability", "Dense", "Hit", "Lexical", "Query", "answerability",
           "check_max_sensitivity", "cue_score", "pack", "rank", "relative_cutoff", "relevance",
           "reply_of"]

_EPS = 1e-6
"""Scores at or below this are "nothing in common" (float noise of a reopened index)."""


def check_max_sensitivity(value: object) -> float | None:
    """A sensitivity cap as every retrieval path takes it: None (no cap) or a finite
    number in [0, 1] — not a bool, not a string, not NaN.

    The core ``retrieve`` and the LangChain and LlamaIndex retrievers all check with it.

    Raises:
        ValidationError: anything else.

    Examples:
        >>> check_max_sensitivity(0.5), check_max_sensitivity(None)
        (0.5, None)
        >>> check_max_sensitivity(2.0)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ValidationError: max_sensitivity must be a number in [0, 1] ...
    """
    if value is None:
        return None
    # compared exactly, not through float(): 10**400 is out of range, not an OverflowError
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 <= cast(float, value) <= 1:
        shown = type(value).__name__ if isinstance(value, bool | str) or (
            isinstance(value, int) and abs(value) > 10**40) else repr(value)
        raise ValidationError(f"max_sensitivity must be a number in [0, 1] (sensitivities lie "
                              f"in [0, 1]) or None for no cap, not {shown}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Query:
    """What to retrieve: text plus filters, in one namespace.

    ``since`` and ``until`` are kept as aware UTC datetimes (naive ones are taken as UTC,
    as everywhere in the store); ``conversation=""`` asks for memories of no conversation.
    ``jurisdictions`` keeps the memories whose provenance jurisdiction one of the codes
    covers (:mod:`mars_core.scope`: "EU" covers "EU-DE"; ``""`` covers memories with none),
    seed 000 §4.3's jurisdiction filter; it is checked on the candidates in Python (the
    vector index keeps no jurisdiction field).
    """

    text: str
    namespace: str
    types: frozenset[MemoryType] | None = None
    max_sensitivity: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    conversation: str | None = None
    jurisdictions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_sensitivity", check_max_sensitivity(self.max_sensitivity))
        object.__setattr__(self, "jurisdictions", check_jurisdictions(self.jurisdictions))
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, utc(value))

    def allows_sensitivity(self, s: float) -> bool:
        """Whether a sensitivity passes the cap."""
        return self.max_sensitivity is None or s <= self.max_sensitivity

    def admits(self, node: MemoryNode) -> bool:
        """Whether the query admits a memory: its namespace, the Python twin of
        :meth:`index_filter` over the memory's index fields
        (:func:`~mars_core.storage.index_fields`; a property test holds them equal), and
        the jurisdiction scope, which no index field carries."""
        return (
            node.namespace == self.namespace
            and (self.types is None or node.type in self.types)
            and self.allows_sensitivity(node.sensitivity)
            and (self.since is None or node.created_at >= self.since)
            and (self.until is None or node.created_at <= self.until)
            and (self.conversation is None
                 or (node.provenance.conversation_id or "") == self.conversation)
            and (self.jurisdictions is None
                 or covers(self.jurisdictions, node.provenance.jurisdiction))
        )

    def window(self) -> tuple[float | None, float | None] | None:
        """``(since, until)`` as POSIX timestamps (the lexical index's time window), or
        None when the query has no time bound."""
        if self.since is None and self.until is None:
            return None
        return (self.since.timestamp() if self.since else None,
                self.until.timestamp() if self.until else None)

    def index_filter(self, *, time: bool = True) -> Filter | None:
        """The neutral filter sent to the vector index (the namespace is its partition,
        never a filter); ``None`` when the query filters nothing else. ``time=False``
        leaves the ``since``/``until`` range out (retrieval passes the window's ids
        instead, read from the temporal index)."""
        clauses: list[Filter] = []
        if self.types is not None:
            clauses.append(In("type", tuple(sorted(t.value for t in self.types))))
        if self.max_sensitivity is not None:
            clauses.append(Range("sensitivity", lte=self.max_sensitivity))
        if time and (self.since is not None or self.until is not None):
            clauses.append(Range("created_ts",
                                 gte=self.since.timestamp() if self.since else None,
                                 lte=self.until.timestamp() if self.until else None))
        if self.conversation is not None:
            clauses.append(Eq("conversation", self.conversation))
        if not clauses:
            return None
        return And(tuple(clauses)) if len(clauses) > 1 else clauses[0]


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved memory with its scores.

    Attributes:
        node: the memory as the output check lets it out (seed 000 §4.3;
            :class:`~mars_core.engine.guard.OutputCheck`): its content, payload texts and
            metadata string values with sensitive spans masked (``[PHONE]``,
            ``[HEALTH]``...) — the stored text only from a read with ``redact=False``. A
            snapshot: statistics as of before this access.
        score: the fused score used for ranking.
        dense: cosine similarity to the query (0 when unknown).
        lexical: BM25 score normalised to [0, 1] within the candidates.
        archived: True when it came from the archive.
        card: the part of ``score`` the symbolic card channel gave (``card_weight`` × the
            card score :func:`mars_core.reading.frame.symbolic_score`) when the memory is a card
            that answers the query's frame (:func:`mars_core.reading.frame.answers`), else 0.
        answers: the card answers the frame on a single-valued predicate ("where do I
            work", not "what do I like"); the best such cards are never cut off
            (:func:`relative_cutoff`).
        masked: the kinds the output check masked in it (``phone``, ``health``...),
            sorted; empty when nothing was masked or the check was off.
    """

    node: MemoryNode
    score: float
    dense: float
    lexical: float
    archived: bool = False
    card: float = 0.0
    answers: bool = False
    masked: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """The memory id."""
        return self.node.id

    @property
    def text(self) -> str:
        """The memory content, as the output check lets it out."""
        return self.node.content


# --- answerability rerank (DMF §9.3 step 4) ------------------------------------------------

_CAP = re.compile(r"\b[A-Z][a-zA-Z'\-]+")
_SPEAKER = re.compile(r"^\s*([A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?):")
_TEMPORAL_Q = re.compile(r"\b(when|what (year|month|day|date|time)|how long|how many "
                         r"(years|months|weeks|days)|since|before|after|ago)\b", re.I)
_TEMPORAL_M = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last|next|ago|week|weekend|month|year|years|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"summer|winter|spring|fall|\d{4}|\d+)\b", re.I)
_PHATIC = re.compile(r"^(hi|hey|hello|thanks|thank you|bye|wow|cool|great|awesome|nice|"
                     r"sounds good|sure|ok|okay|yeah|yes|no|lol|haha|congrats)\b", re.I)
_QWORDS = frozenset({"what", "when", "where", "who", "whom", "why", "how", "which", "would",
                     "could", "should", "did", "does", "do", "is", "are", "was", "were", "has",
                     "have", "can", "will", "i"})


@dataclass(frozen=True, slots=True)
class Answerability:
    """Deterministic answerability cues of one memory for one query, each in [0, 1].

    Attributes:
        entity: share of the query's named entities the memory mentions.
        speaker: 1 when the query names the memory's speaker.
        temporal: 1 when a temporal question meets a temporal expression.
        phatic: 1 for a greeting, thanks or bare acknowledgement (a penalty).
    """

    entity: float
    speaker: float
    temporal: float
    phatic: float


def _bare(word: str) -> str:
    """A word lower-cased without its possessive ("Nate's", "James'" -> "nate", "james")."""
    return word.lower().removesuffix("'s").rstrip("'")


@lru_cache(maxsize=4096)
def _query_cues(query: str) -> tuple[frozenset[str], bool]:
    names = frozenset(n for w in _CAP.findall(normalise_apostrophes(query))
                      if (n := _bare(w)) and n not in _QWORDS and n not in STOPWORDS)
    return names, _TEMPORAL_Q.search(query) is not None


def _speaker_and_body(text: str) -> tuple[str | None, str]:
    m = _SPEAKER.match(text)
    return (m.group(1).lower(), text[m.end():]) if m else (None, text)


def answerability(query: str, text: str, speaker: str | None = None) -> Answerability:
    """The answerability cues of ``text`` for ``query`` (pure, deterministic).

    Args:
        query: the question.
        text: the memory's content; a leading ``"Name:"`` is read as its speaker.
        speaker: the speaker when known otherwise (e.g. the episode's participant).
    """
    names, temporal_q = _query_cues(query)
    if not names and not temporal_q:  # only the phatic penalty can be non-zero
        return Answerability(0.0, 0.0, 0.0, float(_phatic_cue(text)))
    said_by, words, phatic, temporal_m = _text_cues(text)
    who = (said_by or speaker or "").lower()
    entity = sum(n in words for n in names if n != who) / max(1, len(names - {who}))
    return Answerability(
        entity=float(entity),
        speaker=float(bool(who) and who.split()[0] in names),
        temporal=float(temporal_q and temporal_m),
        phatic=float(phatic),
    )


@lru_cache(maxsize=16_384)
def _text_cues(text: str) -> tuple[str | None, frozenset[str], bool, bool]:
    """The query-independent cues of a memory's text (cached: contents never change)."""
    said_by, body = _speaker_and_body(text)
    low = normalise_apostrophes(body).lower()
    found = re.findall(r"[\w'\-]+", low)
    return (said_by, frozenset(found) | {_bare(w) for w in found}, _phatic_cue(text),
            _TEMPORAL_M.search(low) is not None)


@lru_cache(maxsize=16_384)
def _phatic_cue(text: str) -> bool:
    """Whether a memory's text is phatic (:func:`_text_cues`' third cue, alone)."""
    body = _speaker_and_body(text)[1]
    words_n = len(body.split())
    return words_n <= 3 or (_PHATIC.match(body.strip()) is not None and words_n < 12)


def cue_score(a: Answerability) -> float:
    """The answerability term ``A``: ``0.5·entity + 0.25·speaker + 0.25·temporal − phatic``.

    Examples:
        >>> cue_score(Answerability(1.0, 1.0, 0.0, 0.0))
        0.75
    """
    return 0.5 * a.entity + 0.25 * a.speaker + 0.25 * a.temporal - a.phatic


def relative_cutoff(hits: Sequence[Hit], ratio: float,
                    linked: Callable[[str], Iterable[str]] | None = None) -> list[Hit]:
    """Keep hits scoring at least ``ratio`` × the best score (``ratio`` 0 keeps all), and
    the cards that answer the query's frame best (``Hit.answers``, ``Hit.card`` at its
    maximum among them). The cards' own bonus does not raise the bar for the others.

    With ``linked`` (a memory's derivation neighbours: the turn a fact was extracted from,
    the facts extracted from a turn), the cut-off applies per unit of evidence: a hit
    linked to a kept hit is kept too, so a turn and its facts stand or fall together.

    Examples:
        >>> from mars_core.model import MemoryNode
        >>> a, b = (MemoryNode.model_construct(id=i) for i in "ab")
        >>> [h.score for h in relative_cutoff([Hit(a, 1.0, 0, 0), Hit(b, 0.5, 0, 0)], 0.8)]
        [1.0]
        >>> [h.id for h in relative_cutoff([Hit(a, 1.0, 0, 0), Hit(b, 0.5, 0, 0)], 0.8,
        ...                                linked={"a": ["b"]}.get)]
        ['a', 'b']
    """
    if not hits or ratio <= 0:
        return list(hits)
    top = max(h.score - h.card for h in hits)  # the cards' bonus moves no one else out
    if top <= 0:
        return list(hits)
    best = max((h.card for h in hits if h.answers), default=0.0)
    kept = {h.id for h in hits if h.score - h.card >= ratio * top
            or (h.answers and h.card >= best - _EPS)}
    if linked is not None:
        kept |= {n for i in list(kept) for n in linked(i)}
    return [h for h in hits if h.id in kept]


_T = TypeVar("_T")


class Dense(Protocol):
    """What ranking asks of a vector index (:class:`~mars_core.index.base.VectorIndex`,
    or the store's follower of one, which sees what is written behind)."""

    @property
    def capabilities(self) -> IndexCapabilities:
        """The index's capabilities."""
        ...

    def search(self, namespace: str, queries: Sequence[VectorQuery],
               beside: Callable[[], _T]) -> tuple[list[list[tuple[str, float]]], _T]:
        """The ``k`` most similar entries of one partition for each query (see
        ``VectorIndex.query``), and what ``beside`` returns — which may run meanwhile, on
        another thread (see :meth:`~mars_core.engine.indexing.IndexSync.search`)."""
        ...


Lexical = Callable[[TermQuery], TermHits]
"""The record store's full-text search of one namespace
(:meth:`~mars_core.storage.base.RecordTxn.search_terms`)."""


def rank(
    state: NamespaceState,
    index: Dense,
    vectors: Callable[[Sequence[str]], dict[str, npt.NDArray[np.float32]]],
    lexical: Lexical,
    *,
    status: MemoryStatus | Sequence[MemoryStatus],
    qvec: npt.NDArray[np.float32],
    q: Query,
    cfg: RetrievalConfig,
    admit: Callable[[MemoryNode], bool] | None = None,
) -> list[Hit]:
    """Fuse the dense and lexical candidates of one namespace's active (or archived, or
    both) memories into ranked hits.

    Candidates come from where the memories are: the vector index proposes the dense
    ones, the record store's full-text index the lexical ones (BM25 over the searched
    partitions' own statistics, one scale for both tiers), and the active memories' cards
    answer the query's frame. Only the candidates are read (one read for those the
    namespace's views do not hold, one for their edges), and each is scored from its
    stored vector (:func:`~mars_core.index.base.exact_cosines`), so a memory's score is
    the same whichever index found it, approximate or not, and whatever else it found.
    The index's queries and the full-text search run side by side (``index.search``).
    Candidates without that status (an index entry not yet caught up), that the query
    does not admit or ``admit`` refuses are left out; ties rank the active memory first.
    BM25 is normalised by its best score before any filter: a filter only leaves hits out.

    A ``since``/``until`` window reaches the index as the ids created in it (``within=``;
    Chroma scans its metadata for a range: 5–7× slower at 100,000 memories), or as a
    ``created_ts`` range for an index with ``columnar_filters`` (numpy: one comparison
    over its time column); the full-text search ranks the window's own memories,
    normalised by the best score without the window.
    """
    statuses = (status,) if isinstance(status, MemoryStatus) else tuple(status)
    window = q.window()
    # a window's ids come from the temporal index, as an allow-list — unless the index
    # filters a time range over its own columns, which is cheaper still
    by_ids = window is not None and not index.capabilities.columnar_filters
    asks: list[VectorQuery] = []
    for st in statuses if np.any(qvec) else ():
        within = state.window(st, *window) if by_ids and window is not None else None
        if within != []:
            asks.append(VectorQuery(st, qvec, cfg.candidates,
                                    q.index_filter(time=within is None), within))
    since, until = window or (None, None)
    asked = TermQuery(q.namespace, tuple(terms(q.text)), statuses,
                      cfg.candidates * len(statuses), since, until, cfg.bm25_k1, cfg.bm25_b)
    dense, found = index.search(q.namespace, asks, lambda: lexical(asked))
    lexical_scores = dict(found.hits)
    proposed = [i for hits in dense for i, _ in hits] + [i for i, _ in found.hits]
    state.read_around(proposed)  # the candidates and their edges: three reads

    def eligible(nid: str) -> bool:
        node = state.get(nid)
        return node is not None and node.status in statuses and q.admits(node) and (
            admit is None or admit(node))

    card, specific = _card_channel(state, statuses, q.text, cfg.card_weight, proposed)
    proposed += sorted(card, key=lambda i: -card[i])[:cfg.candidates]
    candidates = [i for i in dict.fromkeys(proposed) if eligible(i)]
    units = reply_of(state, candidates, eligible) if cfg.reply_units else []
    candidates = list(dict.fromkeys([*candidates, *(b for _, b in units)]))
    stored = vectors(candidates) if np.any(qvec) else {}
    have = [i for i in candidates if i in stored]
    cosine = dict(zip(have, exact_cosines([stored[i] for i in have], qvec), strict=True))
    top = found.best  # a filter or a window leaves out, it does not rescale
    alpha = cfg.dense_weight
    named = time_window(q.text) if cfg.date_weight > 0 else None
    scores: dict[str, tuple[float, float, float]] = {}
    voiced: dict[str, float] = {}  # the speaker term: a memory's own, never lent
    for nid in candidates:
        node = state.node(nid)
        d = cosine.get(nid, 0.0)
        lx = lexical_scores.get(nid, 0.0) / top if top > 0 else 0.0
        score = alpha * d + (1 - alpha) * lx
        if score > _EPS and (cfg.cue_weight > 0 or cfg.speaker_weight > 0):
            a = answerability(q.text, node.content, node.speaker)
            score += cfg.cue_weight * cue_score(a)
            voiced[nid] = cfg.speaker_weight * a.speaker
        if named is not None and score > _EPS and named.holds(node.created_at):
            score += cfg.date_weight
        scores[nid] = (score + card.get(nid, 0.0) + voiced.get(nid, 0.0), d, lx)
    # the borrower scores at least as the lender, without the lender's speaker term (who
    # said the question is not who said the reply); own scores: nothing is passed on twice
    own = {nid: score - voiced.get(nid, 0.0) for nid, (score, _, _) in scores.items()}
    for lender, borrower in units:
        lent = own[lender] + voiced.get(borrower, 0.0)
        if lent > scores[borrower][0]:
            scores[borrower] = (lent, *scores[borrower][1:])
    # nothing in common with the query: not a hit, however empty the budget
    hits = [Hit(node := state.node(nid), score, d, lx, node.status is MemoryStatus.ARCHIVED,
                card.get(nid, 0.0), nid in specific)
            for nid, (score, d, lx) in scores.items() if score > _EPS]
    hits.sort(key=lambda h: (-h.score, h.archived, h.node.step, h.node.id))
    return hits


def _card_channel(state: NamespaceState, statuses: Sequence[MemoryStatus], query: str,
                  weight: float, found: Sequence[str]) -> tuple[dict[str, float], set[str]]:
    """The cards that answer ``query``'s frame (:mod:`mars_core.reading.frame`): their bonus
    (``weight`` × the card score) by id, and those that answer on a single-valued
    predicate. Every active card is asked; an archived one when a search ``found`` it."""
    if weight <= 0:
        return {}, set()
    frame = parse_query(query)
    if not frame.predicates:
        return {}, set()
    cards = state.cards() if MemoryStatus.ACTIVE in statuses else []
    if MemoryStatus.ARCHIVED in statuses:
        cards += [(i, topic) for i in dict.fromkeys(found) if (node := state.get(i)) is not None
                  and not node.is_active and (topic := card_topic(node)) is not None]
    bonus: dict[str, float] = {}
    specific: set[str] = set()
    for nid, topic in cards:
        if answers(frame, topic):
            bonus[nid] = weight * symbolic_score(frame, topic, state.node(nid).content)
            if answers(frame, topic, specific=True):
                specific.add(nid)
    return bonus, specific


def _voice(node: MemoryNode) -> str:
    """Who a turn is by: its speaker, else its role (the provenance source)."""
    return (node.speaker or node.provenance.source or "").casefold()


_ASSISTANT_ROLES: Final = frozenset({"assistant", "ai", "bot"})


def reply_of(state: NamespaceState, ids: Iterable[str],
             eligible: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The units of evidence among ``ids``, as ``(lender, borrower)`` pairs: the borrower
    scores at least as the lender does. Two kinds, both between neighbouring turns of one
    conversation (``temporalNext``) by different voices, when ``eligible`` (the same
    partition and filters as the search):

    * a turn that asks a question lends to the reply after it. In a dialogue the answer is
      the turn after the question (on LoCoMo 58 % of the evidence turns answer a question;
      15 % of the turns that ask one are evidence);
    * an assistant's turn (role ``assistant``, ``ai`` or ``bot``) lends to the turn it
      answers: what an assistant says about the user's message ("Football does that to
      people.") matches a question the user's own words ("I'm a huge fan of Arsenal") do
      not, and the user's words are the evidence.

    Examples:
        >>> from mars_core.model import Edge, EpisodicPayload, Predicate, Provenance
        >>> def turn(i, who, text, role="user"):
        ...     return MemoryNode(id=i, type="episodic", content=text, weight=3, seq=int(i[1]),
        ...                       payload=EpisodicPayload(participants=(who,)),
        ...                       provenance=Provenance(source=role))
        >>> state = NamespaceState.of("ns", [turn("t1", "Bo", "Where did you move?"),
        ...                                  turn("t2", "Ana", "To Lisbon"),
        ...                                  turn("t3", "", "Lisbon is lovely.", "assistant")],
        ...                           [Edge(source="t1", predicate=Predicate.TEMPORAL_NEXT,
        ...                                 target="t2"),
        ...                            Edge(source="t2", predicate=Predicate.TEMPORAL_NEXT,
        ...                                 target="t3")])
        >>> reply_of(state, ["t1", "t2", "t3"], lambda i: True)
        [('t1', 't2'), ('t3', 't2')]
    """
    near: dict[str, list[str]] = {}
    for nid in ids:
        node = state.node(nid)
        if node.type is not MemoryType.EPISODIC:
            continue
        near[nid] = []
        if "?" in node.content:
            near[nid] += [e.target for e in state.graph.out_edges(nid, Predicate.TEMPORAL_NEXT)]
        if node.provenance.source in _ASSISTANT_ROLES:
            near[nid] += [e.source for e in state.graph.in_edges(nid, Predicate.TEMPORAL_NEXT)]
    state.read([i for others in near.values() for i in others], edges=True)  # neighbours: 3 reads
    g = state.graph  # and the edges their lineage asks of what was drawn from them: one
    g.load(e.source for others in near.values() for i in others if i in state.nodes
           for e in g.in_edges(i, Predicate.DERIVES_FROM))
    return [(nid, other) for nid, others in near.items() for other in others
            if other in state and eligible(other)
            and _voice(state.node(other)) != _voice(state.node(nid))]


def pack(hits: Iterable[Hit], budget_tokens: int, k: int | None) -> list[Hit]:
    """Greedy fill: keep hits in rank order while they fit the budget (at most ``k``)."""
    out: list[Hit] = []
    used = 0
    for h in hits:
        if k is not None and len(out) >= k:
            break
        if used + h.node.weight <= budget_tokens:
            out.append(h)
            used += h.node.weight
    return out


def relevance(hit: Hit, config: RetrievalConfig) -> float:
    """A hit's fused score on the [0, 1] scale retrievers report (LangChain's and
    LlamaIndex's users read a score as a similarity): the score divided by the most a
    score can be under ``config`` — ``1 + cue_weight + speaker_weight + date_weight +
    card_weight`` (cosine and the normalised BM25 are at most 1 between them; the cue,
    speaker, date and card terms at most their weights) — so the order of the hits is
    kept, and a memory that matches on every channel scores 1.

    Examples:
        >>> from mars_core.config import RetrievalConfig
        >>> from mars_core.model import MemoryNode
        >>> hit = Hit(MemoryNode.model_construct(id="a"), 1.09, 0.9, 1.0)
        >>> relevance(hit, RetrievalConfig(cue_weight=0.3, speaker_weight=0.25,
        ...                                date_weight=0.3, card_weight=0.0))
        0.5891891891891892
    """
    top = 1.0 + max(0.0, config.cue_weight) + max(0.0, config.speaker_weight) \
        + max(0.0, config.date_weight) + max(0.0, config.card_weight)
    return min(1.0, max(0.0, hit.score / top))
