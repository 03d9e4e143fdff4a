"""Assembling recall and prompt context from the store's views (internal).

The store's ``recall`` and ``render_context`` call these with its state; the pure
pieces (the walk, the reranking, the layout) are in :mod:`mars_core.reading.context`.

Examples:
    >>> from mars_core.views.namespace import NamespaceState
    >>> from mars_core.policies import make_policy
    >>> from mars_core.storage import NamespaceRecord
    >>> active_turns(NamespaceState(NamespaceRecord("ns"), [], [], make_policy("lru")),
    ...              None, 4)
    []
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from mars_core.model import HIDDEN, MemoryNode, MemoryType, Predicate, TaskPayload
from mars_core.reading.analysis import terms
from mars_core.reading.context import EvidenceItem, Validity, validity_of
from mars_core.views.namespace import NamespaceState

__all__ = ["Marked", "active_turns", "evidence_items", "lineage", "read_lineage",
           "recall_starts", "replaced", "support_for", "validity"]

Marked = tuple[MemoryNode, float, Validity, str | None]
"""A memory to render: the node, its rank, its lineage mark and the mark's note."""

_REPLACING: Final = (Predicate.SUPERSEDES, Predicate.CORRECTS)


def validity(state: NamespaceState, node_id: str) -> Validity:
    """Lineage status counting only replacements that still exist (see :func:`lineage`)."""
    return lineage(state, node_id)[0]


def replaced(state: NamespaceState, node_id: str) -> bool:
    """Whether a memory that still exists supersedes or corrects ``node_id``: what
    :func:`validity` tells apart from ``current`` and ``outdated`` (both shown), without
    looking for what replaced the facts drawn from it — which only the note of a memory
    about to be shown needs (a search asks this of every candidate)."""
    return validity_of(state.graph, node_id, lambda i: i in state) is not Validity.CURRENT


def lineage(state: NamespaceState, node_id: str,
            shown: Callable[[MemoryNode], bool] = lambda _: True,
            text: Callable[[MemoryNode], str | None] = lambda n: n.content
            ) -> tuple[Validity, str | None]:
    """Whether a memory is current, and if not, what replaced it.

    A memory a newer one supersedes or corrects is ``superseded`` / ``corrected``. A
    turn (an episode) is ``outdated`` when a memory extracted from it was replaced by a
    memory that says something else (not a merged duplicate of it); the note is the
    newest version of each replacement that ``shown`` allows (private mode hides the
    others), as ``text`` shows it (the output check: ``None`` withholds it), so "I live
    in Bristol" is shown with "now: The user lives in Cardiff".
    """
    found = validity_of(state.graph, node_id, lambda i: i in state)
    if found is not Validity.CURRENT:
        return found, None
    newer = _replacements(state, node_id)
    if not newer:
        return found, None
    said = (text(n) for n in newer if shown(n))
    note = "; ".join(dict.fromkeys(t for t in said if t is not None))
    return Validity.OUTDATED, note or None


def read_lineage(state: NamespaceState, ids: Sequence[str]) -> None:
    """Read, in one read, the edges :func:`lineage` asks about for ``ids``: those of the
    memories derived from them (whether what a turn said was replaced)."""
    g = state.graph
    state.graph.load(e.source for i in ids for e in g.in_edges(i, Predicate.DERIVES_FROM))


def _replacements(state: NamespaceState, episode_id: str) -> list[MemoryNode]:
    """The newest versions of what replaced the memories extracted from an episode."""
    g, out = state.graph, []
    for derived in g.in_edges(episode_id, Predicate.DERIVES_FROM):
        by = [e.source for p in _REPLACING for e in g.in_edges(derived.source, p)
              if e.source in state]
        if not by:  # the graph alone answers for nearly every turn
            continue
        fact = state.get(derived.source)
        if fact is None or fact.type is MemoryType.EPISODIC or \
                fact.provenance.source == "summary":
            continue  # a summary's new version says nothing against the turns it sums up
        for nid in by:
            new = state.get(nid)
            if new is not None and not _same_statement(fact, new):
                out.append(_newest(state, new))
    return out


def _same_statement(old: MemoryNode, new: MemoryNode) -> bool:
    """A duplicate merged into ``new`` (dedup), or a new version in the same words."""
    return old.id in new.metadata.get("also_from", ()) or \
        " ".join(old.content.casefold().split()) == " ".join(new.content.casefold().split())


def _newest(state: NamespaceState, node: MemoryNode) -> MemoryNode:
    """Follow ``supersedes``/``corrects`` forward to the latest version."""
    seen = {node.id}
    while True:
        nxt = [e.source for p in _REPLACING for e in state.graph.in_edges(node.id, p)
               if e.source in state and e.source not in seen]
        if not nxt:
            return node
        seen.add(nxt[0])
        node = state.node(nxt[0])


def active_turns(state: NamespaceState, conversation: str | None, n: int) -> list[MemoryNode]:
    """The last ``n`` active episodes of a conversation, oldest first (along temporalNext).

    An archived turn (a cleared chat session, or one the policy forgot) is not part of the
    active conversation: it is skipped, and the walk goes on to the turns before it.
    """
    out: list[MemoryNode] = []
    cur = state.latest_episode(conversation)
    while cur is not None and len(out) < n:
        node = state.get(cur)
        if node is None:
            break
        if node.is_active:
            out.append(node)
        prev = state.graph.in_edges(cur, Predicate.TEMPORAL_NEXT)
        cur = prev[0].source if prev else None
    return out[::-1]


def support_for(state: NamespaceState, evidence: Sequence[MemoryNode], per_card: int = 3, *,
                skip: frozenset[str] = frozenset(),
                shown: Callable[[MemoryNode], bool] = lambda _: True,
                text: Callable[[MemoryNode], str | None] = lambda n: n.content
                ) -> list[Marked]:
    """Raw turns behind derived evidence (≤ ``per_card`` each, marked when outdated) and
    the versions it replaced (DMF §9.3 step 5), with the card's rank so weaker cards
    lose their support first (``shown`` and ``text``: see :func:`lineage`)."""
    out: dict[str, Marked] = {}
    for rank, card in enumerate(evidence):
        if card.type is MemoryType.EPISODIC:
            continue
        score = float(len(evidence) - rank)
        sources = [e.target for e in state.graph.out_edges(card.id, Predicate.DERIVES_FROM)]
        for nid in sources[:per_card]:
            node = state.get(nid)
            if node is not None and nid not in skip and nid not in out \
                    and node.archive_reason not in HIDDEN:  # a cleared turn: never shown
                out[nid] = (node, score, *lineage(state, nid, shown, text))
        for pred, mark in ((Predicate.SUPERSEDES, Validity.SUPERSEDED),
                           (Predicate.CORRECTS, Validity.CORRECTED)):
            for edge in state.graph.out_edges(card.id, pred):
                old = state.get(edge.target)
                if old is not None and old.id not in skip and old.id not in out:
                    out[old.id] = (old, score - 0.5, mark, None)
    return list(out.values())


def recall_starts(state: NamespaceState, entity: str | None, goal: str | None,
                  search: Callable[[str, int], Sequence[str]], limit: int = 10) -> list[str]:
    """Where a recall walk starts: memories about the entity, or tasks for the goal, then
    what ``search`` (the active memories' full-text search: text, how many) finds."""
    active = state.active_ids()
    starts: list[str] = []
    if entity is not None:
        starts += [i for i in state.known.people(entity) if state.is_active(i)]
    text = entity if entity is not None else goal or ""
    if goal is not None:
        words = set(terms(goal))
        for i in active:
            node = state.nodes[i]
            if isinstance(node.payload, TaskPayload) and \
                    words & set(terms(node.payload.goal or node.content)):
                starts.append(i)
    starts += search(text, 4 * limit)
    return list(dict.fromkeys(starts))[:limit]


def evidence_items(nodes: Sequence[Marked]) -> list[EvidenceItem]:
    """Evidence items for rendering."""
    return [EvidenceItem.from_node(n, s, validity=v, note=note) for n, s, v, note in nodes]
