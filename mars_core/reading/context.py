"""Recall around an entity or goal, and the prompt-ready context of DMF §9.3 step 6.

**Recall** (seed 000 §4.1: "entity- or goal-anchored expansion: walk a small ball in the
semantic/social subgraph, then rerank by goal similarity"): :func:`recall_walk` is a
breadth-first walk of at most ``max_hops`` edges from the start memories over
:data:`RECALL_PREDICATES`, followed in **both directions**:

* ``isA``: an instance to its class and a class to its instances;
* ``friendOf``: symmetric in meaning, so either way;
* ``derivesFrom``: a fact to the episode it was extracted from, and an episode to the
  other facts extracted from it (what else was said in that turn);
* ``attachesToGoal``: a memory to the goal it serves, and a goal to its memories;
* ``requires``: a task to its prerequisites, and a prerequisite to the tasks needing it.

``temporalNext`` is not walked (it would drift along the whole conversation), nor are
``supersedes``/``corrects`` (replaced versions are suppressed, not recalled). Only
active memories are visited. :func:`rank_recall` then orders the ball by cosine
similarity to the goal vector (fewer hops, then walk order, break ties) and applies a
purpose-limitation hook ``allowed(node_id) -> bool``.

**Rendering** (:func:`render_context`) writes the exact layout of DMF §9.3 step 6::

    === LONG-TERM MEMORY (RECALLED) ===
    === STRUCTURED EVIDENCE ===
    <evidence items, best first>
    === RAW SUPPORTING EVIDENCE ===
    <source turns of the evidence>
    === ACTIVE CONVERSATION ===
    <visible turns, oldest first>

The first two headers are omitted when no evidence survives, and a section with no
items loses its header too (an empty header would cost prompt tokens on every call and
say nothing; the paper's layout prints all four). Each item is one line:
``- [type | YYYY-MM-DD HH:MM UTC | source | superseded] text`` (date, source and a
non-current validity only when known; a turn whose statement a newer memory replaced is
``outdated (now: <the newer memory>)``). To fit ``budget_tokens`` whole items are dropped,
lowest-ranked first: supporting turns, then evidence, then the active conversation
(lowest score first; on equal scores the later evidence/support item and the older
conversation turn go first). Nothing is cut mid-text; the result is deterministic.

Examples:
    >>> from mars_core.model import MemoryType
    >>> ev = [EvidenceItem("n1", MemoryType.SEMANTIC, "Ana lives in Lisbon", score=0.9)]
    >>> turn = [EvidenceItem("e9", MemoryType.EPISODIC, "Where does Ana live?", source="user")]
    >>> print(render_context(ev, [], turn, 100, lambda s: len(s.split())))
    === LONG-TERM MEMORY (RECALLED) ===
    === STRUCTURED EVIDENCE ===
    - [semantic] Ana lives in Lisbon
    === ACTIVE CONVERSATION ===
    - [episodic | user] Where does Ana live?
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

import numpy.typing as npt

from mars_core.errors import ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import MemoryNode, MemoryType, Predicate, utc
from mars_core.scoring.density import cosine

__all__ = [
    "HEADER_ACTIVE",
    "HEADER_RECALLED",
    "HEADER_STRUCTURED",
    "HEADER_SUPPORT",
    "RECALL_PREDICATES",
    "EvidenceItem",
    "Recalled",
    "Validity",
    "rank_recall",
    "recall_walk",
    "render_context",
    "validity_of",
]

RECALL_PREDICATES: Final = frozenset({
    Predicate.IS_A, Predicate.FRIEND_OF, Predicate.DERIVES_FROM, Predicate.ATTACHES_TO_GOAL,
    Predicate.REQUIRES,
})
"""Edges of the semantic/social subgraph that recall walks (both directions)."""

HEADER_RECALLED: Final = "=== LONG-TERM MEMORY (RECALLED) ==="
HEADER_STRUCTURED: Final = "=== STRUCTURED EVIDENCE ==="
HEADER_SUPPORT: Final = "=== RAW SUPPORTING EVIDENCE ==="
HEADER_ACTIVE: Final = "=== ACTIVE CONVERSATION ==="


# --- recall ---------------------------------------------------------------------------------


def recall_walk(
    graph: MemoryGraph,
    start_ids: Iterable[str],
    is_active: Callable[[str], bool],
    *,
    max_hops: int = 2,
    max_nodes: int = 50,
    predicates: Iterable[Predicate] = RECALL_PREDICATES,
) -> list[tuple[str, int]]:
    """The small ball around ``start_ids``: ``(node_id, hops)`` in breadth-first order.

    Start memories come first (0 hops, in the given order, duplicates and inactive ones
    skipped); each node's neighbours are visited in the graph's stable edge order
    (outgoing, then incoming). The walk stops at ``max_hops`` or ``max_nodes``.

    Raises:
        ValidationError: ``max_hops < 0`` or ``max_nodes < 1``.

    Examples:
        >>> from mars_core.model import Edge
        >>> g = MemoryGraph()
        >>> g.add(Edge(source="fact", predicate=Predicate.DERIVES_FROM, target="ep"))
        >>> g.add(Edge(source="ep2", predicate=Predicate.TEMPORAL_NEXT, target="ep"))
        >>> recall_walk(g, ["ep"], lambda _: True)
        [('ep', 0), ('fact', 1)]
    """
    if not isinstance(max_hops, int) or max_hops < 0:
        raise ValidationError("max_hops must be an integer >= 0")
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValidationError("max_nodes must be an integer >= 1")
    preds = frozenset(Predicate(p) for p in predicates)
    seen: dict[str, int] = {}
    queue: deque[str] = deque()
    for nid in start_ids:
        if nid not in seen and is_active(nid) and len(seen) < max_nodes:
            seen[nid] = 0
            queue.append(nid)
    while queue and len(seen) < max_nodes:
        cur = queue.popleft()
        if seen[cur] >= max_hops:
            continue
        for nxt in _neighbours(graph, cur, preds):
            if nxt not in seen and is_active(nxt):
                seen[nxt] = seen[cur] + 1
                queue.append(nxt)
                if len(seen) >= max_nodes:
                    break
    return list(seen.items())


def _neighbours(graph: MemoryGraph, node_id: str, preds: frozenset[Predicate]) -> list[str]:
    out = [e.target for e in graph.out_edges(node_id) if e.predicate in preds]
    out += [e.source for e in graph.in_edges(node_id) if e.predicate in preds]
    return list(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class Recalled:
    """One recalled memory with why it ranks where it does.

    Attributes:
        node_id: the memory.
        hops: its distance from the nearest start memory.
        similarity: cosine similarity to the goal (``None`` without a goal vector).
        score: the ranking score: the similarity, or ``1 / (1 + hops)`` without a goal.

    Examples:
        >>> Recalled("n1", 1, None, 0.5).score
        0.5
    """

    node_id: str
    hops: int
    similarity: float | None
    score: float


def rank_recall(
    nodes: Sequence[tuple[str, int]],
    vectors: Mapping[str, npt.ArrayLike],
    goal_vector: npt.ArrayLike | None,
    *,
    allowed: Callable[[str], bool] | None = None,
    limit: int | None = None,
) -> list[Recalled]:
    """Rerank a recall ball by goal similarity (seed 000 §4.1), with purpose limitation.

    Args:
        nodes: ``(node_id, hops)`` from :func:`recall_walk`.
        vectors: embeddings by node id (a missing one has similarity 0).
        goal_vector: the goal/intent embedding; ``None`` keeps the walk order (by hops).
        allowed: purpose-limitation hook; nodes it rejects are dropped (for example
            social details not causally linked to the active goal).
        limit: keep at most this many.

    Examples:
        >>> ranked = rank_recall([("a", 0), ("b", 1), ("c", 1)],
        ...                      {"a": [1, 0], "b": [0, 1], "c": [1, 1]}, [0, 1],
        ...                      allowed=lambda nid: nid != "c")
        >>> [(r.node_id, round(r.score, 2)) for r in ranked]
        [('b', 1.0), ('a', 0.0)]
    """
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValidationError("limit must be a non-negative integer")
    out: list[tuple[tuple[float, int, int], Recalled]] = []
    for index, (nid, hops) in enumerate(nodes):
        if allowed is not None and not allowed(nid):
            continue
        if goal_vector is None:
            rec = Recalled(nid, hops, None, 1.0 / (1.0 + hops))
        else:
            vec = vectors.get(nid)
            sim = cosine(vec, goal_vector) if vec is not None else 0.0
            rec = Recalled(nid, hops, sim, sim)
        out.append(((-rec.score, hops, index), rec))
    out.sort(key=lambda pair: pair[0])
    ranked = [rec for _, rec in out]
    return ranked if limit is None else ranked[:limit]


# --- evidence items -------------------------------------------------------------------------


class Validity(StrEnum):
    """Lineage status of a memory (DMF §9.4): still valid, or replaced by a newer one.

    ``outdated`` marks a turn (an episode) that said something a newer memory replaced
    — "I live in Bristol" after "we moved to Cardiff": the turn itself is not
    replaced (it was said), but what it says is no longer all true.
    """

    CURRENT = "current"
    SUPERSEDED = "superseded"
    CORRECTED = "corrected"
    OUTDATED = "outdated"


def validity_of(graph: MemoryGraph, node_id: str,
                exists: Callable[[str], bool] | None = None) -> Validity:
    """Whether a newer memory supersedes or corrects ``node_id`` (corrections win).

    Args:
        graph: the memory graph.
        node_id: the memory to check.
        exists: counts only replacements for which this is true (default: all).

    Examples:
        >>> from mars_core.model import Edge
        >>> g = MemoryGraph()
        >>> g.add(Edge(source="new", predicate=Predicate.SUPERSEDES, target="old"))
        >>> validity_of(g, "old").value, validity_of(g, "new").value
        ('superseded', 'current')
    """
    found = Validity.CURRENT
    for edge in graph.in_edges(node_id):
        if exists is not None and not exists(edge.source):
            continue
        if edge.predicate is Predicate.CORRECTS:
            return Validity.CORRECTED
        if edge.predicate is Predicate.SUPERSEDES:
            found = Validity.SUPERSEDED
    return found


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One line of rendered context: a memory (or a visible turn) with its rank.

    Attributes:
        node_id: the memory id (``None`` for a turn that is not stored).
        type: the memory type.
        text: the content (rendered on one line; whitespace is collapsed).
        score: rank within its section (higher is kept longer).
        created_at: the date anchor, when known.
        source: who said or produced it (speaker, ``user``, ``assistant``, ``summary``).
        validity: lineage status; replaced memories are marked in the line.
        note: what replaced it, shown after the mark (``outdated (now: ...)``).
        archived: recalled from the archive (the second tier of retrieval): marked
            ``archived`` in the line.

    Examples:
        >>> from datetime import datetime, UTC
        >>> EvidenceItem("n1", MemoryType.EPISODIC, "I moved to\\nLisbon",
        ...              created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC), source="Ana",
        ...              validity=Validity.SUPERSEDED).line()
        '- [episodic | 2023-05-08 13:56 UTC | Ana | superseded] I moved to Lisbon'
        >>> EvidenceItem("n2", MemoryType.EPISODIC, "I live in Bristol", source="user",
        ...              validity=Validity.OUTDATED, note="The user lives in Cardiff").line()
        '- [episodic | user | outdated (now: The user lives in Cardiff)] I live in Bristol'
    """

    node_id: str | None
    type: MemoryType
    text: str
    score: float = 0.0
    created_at: datetime | None = None
    source: str | None = None
    validity: Validity = Validity.CURRENT
    note: str | None = None
    archived: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValidationError("an evidence item needs non-empty text")
        object.__setattr__(self, "type", MemoryType(self.type))
        object.__setattr__(self, "validity", Validity(self.validity))
        if self.created_at is not None:
            object.__setattr__(self, "created_at", utc(self.created_at))

    @classmethod
    def from_node(cls, node: MemoryNode, score: float = 0.0, *,
                  validity: Validity = Validity.CURRENT,
                  source: str | None = None, note: str | None = None) -> EvidenceItem:
        """An item for a stored memory; the source defaults to the episode's first
        participant (the speaker), else the provenance source."""
        if source is None:
            source = node.speaker or node.provenance.source
        return cls(node.id, node.type, node.content, score, node.created_at, source, validity,
                   note, archived=not node.is_active and validity in _NOT_REPLACED)

    def line(self) -> str:
        """The item as one rendered line."""
        tags = [self.type.value]
        if self.created_at is not None:
            tags.append(f"{self.created_at:%Y-%m-%d %H:%M} UTC")
        if self.source:
            tags.append(" ".join(self.source.split()))
        if self.validity is not Validity.CURRENT:
            note = " ".join(_NOT_IN_TAGS.sub(" ", self.note).split()) if self.note else ""
            tags.append(f"{self.validity.value} (now: {note})" if note else
                        self.validity.value)
        if self.archived:
            tags.append("archived")
        return f"- [{' | '.join(tags)}] {' '.join(self.text.split())}"


_NOT_IN_TAGS: Final = re.compile(r"[\[\]|]")
"""Characters a note may not carry into the bracketed tags (they delimit them)."""

_NOT_REPLACED: Final = frozenset({Validity.CURRENT, Validity.OUTDATED})
"""Lineage marks of a memory nothing replaced (an outdated turn was said, and stays)."""


# --- rendering ------------------------------------------------------------------------------

_SUPPORT, _EVIDENCE, _ACTIVE = 0, 1, 2


def _layout(sections: Sequence[Sequence[EvidenceItem]], evidence_only: bool) -> str:
    evidence, support, active = sections[_EVIDENCE], sections[_SUPPORT], sections[_ACTIVE]
    lines: list[str] = []
    if evidence:
        lines += [HEADER_RECALLED, HEADER_STRUCTURED, *(e.line() for e in evidence)]
        if support:
            lines += [HEADER_SUPPORT, *(s.line() for s in support)]
    if active and not evidence_only:
        lines += [HEADER_ACTIVE, *(a.line() for a in active)]
    return "\n".join(lines)


def _drop_order(sections: Sequence[Sequence[EvidenceItem]]) -> list[tuple[int, int]]:
    """``(section, index)`` pairs, the first to drop first."""
    order: list[tuple[int, int]] = []
    for sec in (_SUPPORT, _EVIDENCE, _ACTIVE):
        items = sections[sec]
        # best-first sections lose their last item on ties; the conversation its oldest
        sign = 1 if sec == _ACTIVE else -1
        order += [(sec, i) for i in sorted(range(len(items)),
                                           key=lambda i: (items[i].score, sign * i))]
    return order


def render_context(
    evidence: Sequence[EvidenceItem],
    support: Sequence[EvidenceItem],
    active: Sequence[EvidenceItem],
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    *,
    evidence_only: bool = False,
) -> str:
    """Render recalled evidence before the active conversation, within a token budget.

    Args:
        evidence: answerability-ranked memories, best first.
        support: the raw turns the evidence was derived from, best first.
        active: the visible conversation, oldest first.
        budget_tokens: the most tokens the result may have (``count_tokens`` of it).
        count_tokens: the store's token counter (e.g. ``store.counter.count``).
        evidence_only: leave out the active-conversation section (for integrations
            that render the conversation themselves; seed digest Z-E10).

    Returns:
        The context text; ``""`` when nothing fits (or there is nothing to show).

    Raises:
        ValidationError: ``budget_tokens`` is not a positive integer.
    """
    if not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool) or \
            budget_tokens <= 0:
        raise ValidationError("budget_tokens must be a positive integer")
    sections = (list(support), list(evidence), list(active))
    order = _drop_order(sections)

    def render(dropped: int) -> str:
        gone = set(order[:dropped])
        kept = [[it for i, it in enumerate(items) if (sec, i) not in gone]
                for sec, items in enumerate(sections)]
        return _layout(kept, evidence_only)

    def fits(dropped: int) -> bool:
        return count_tokens(render(dropped)) <= budget_tokens

    lo, hi = 0, len(order)  # fits(hi): the empty layout is ""; find the fewest drops
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return render(hi)
