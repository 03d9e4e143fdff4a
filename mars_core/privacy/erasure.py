"""Right-to-be-forgotten planning: what an erasure removes, and which summaries it rewrites.

Seed 000 §5.4: erasure "triggers a bounded-latency cascade through the provenance graph,
removing the target nodes and any descendants that depend on them; affected summaries
are either regenerated without the erased material or downgraded".

The rules, as implemented here (a pure function of the store's views):

* **Targets**: one memory; every memory of a namespace that mentions an entity (a
  whole-word, case-insensitive match in the content or in the payload's entity,
  concept, participants or attribute values); every memory of a conversation (its
  provenance); or a whole namespace.
* **Cascade**: every memory that transitively ``derivesFrom`` a target is affected.
  A *summary* (provenance source ``summary``) is regenerated from its members that
  survive — with regenerated members standing in for their old versions — when at
  least two remain; otherwise it is erased too (it cannot be rewritten without the
  erased text, so "downgraded" here means removed). Any other derived memory (a fact
  extracted from an erased turn, a newer version of an erased memory) is erased: its
  content was produced from the erased text.

Examples:
    >>> from mars_core.engine.namespace import NamespaceState
    >>> from mars_core.policies import make_policy
    >>> from mars_core.storage import NamespaceRecord
    >>> state = NamespaceState(NamespaceRecord("ns"), [], [], [], make_policy("lru"))
    >>> plan_erasure(state, namespace_all=True).erased
    ()
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from mars_core.engine.namespace import NamespaceState
from mars_core.errors import NotFoundError, ValidationError
from mars_core.model import (
    EpisodicPayload,
    MemoryNode,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
)

__all__ = ["ErasurePlan", "mentions", "plan_erasure"]


@dataclass(frozen=True, slots=True)
class ErasurePlan:
    """What an erasure does.

    Attributes:
        targets: memories named by the request.
        erased: every memory to remove (targets and cascade), in a stable order.
        regenerate: ``(summary id, surviving member ids)`` for each summary rewritten
            without the erased material, deepest dependency first.
    """

    targets: tuple[str, ...]
    erased: tuple[str, ...]
    regenerate: tuple[tuple[str, tuple[str, ...]], ...]


def _payload_texts(node: MemoryNode) -> Iterator[str]:
    p = node.payload
    if isinstance(p, SocialPayload):
        yield from (x for x in (p.entity, p.relationship_type) if x)
        yield from p.attributes.values()
    elif isinstance(p, SemanticPayload):
        if p.concept:
            yield p.concept
        yield from (obj for _, obj in p.relations)
    elif isinstance(p, EpisodicPayload):
        yield from p.participants
        yield from (x for x in (p.event, p.context) if x)
    elif isinstance(p, TaskPayload) and p.goal:
        yield p.goal


def mentions(node: MemoryNode, entity: str) -> bool:
    """Whether a memory mentions ``entity`` (whole words, case-insensitive)."""
    pattern = re.compile(r"(?<!\w)" + re.escape(entity.casefold()) + r"(?!\w)")
    return any(pattern.search(t.casefold()) for t in (node.content, *_payload_texts(node)))


def _targets(state: NamespaceState, *, node_id: str | None, entity: str | None,
             conversation: str | None, namespace_all: bool) -> list[str]:
    given = sum(x is not None for x in (node_id, entity, conversation)) + int(namespace_all)
    if given != 1:
        raise ValidationError("erase exactly one of: node_id, entity, conversation, namespace")
    if node_id is not None:
        if node_id not in state:
            raise NotFoundError(f"no memory {node_id!r} in namespace {state.name!r}")
        return [node_id]
    if entity is not None and not entity.strip():
        raise ValidationError("the entity to erase must be a non-empty string")
    nodes = state.all_nodes()
    if entity is not None:
        return [n.id for n in nodes if mentions(n, entity.strip())]
    if conversation is not None:
        return [n.id for n in nodes if n.provenance.conversation_id == conversation]
    return [n.id for n in nodes]


def _is_summary(node: MemoryNode) -> bool:
    return node.provenance.source == "summary"


def _members(state: NamespaceState, node_id: str) -> list[str]:
    return [e.target for e in state.graph.out_edges(node_id)
            if e.predicate.value == "derivesFrom"]


def plan_erasure(
    state: NamespaceState,
    *,
    node_id: str | None = None,
    entity: str | None = None,
    conversation: str | None = None,
    namespace_all: bool = False,
) -> ErasurePlan:
    """Plan an erasure in the namespace of ``state`` (exactly one selector).

    Raises:
        ValidationError: no selector or several.
        NotFoundError: ``node_id`` does not exist in the namespace.
    """
    targets = _targets(state, node_id=node_id, entity=entity,
                       conversation=conversation, namespace_all=namespace_all)
    erased: dict[str, None] = dict.fromkeys(targets)
    order = sorted(_affected(state, targets) - set(targets),
                   key=lambda i: (state.node(i).depth, state.node(i).seq))
    while True:  # erasing a summary can leave a deeper one without support: iterate
        regenerate: list[tuple[str, tuple[str, ...]]] = []
        grew = False
        for nid in order:
            if nid in erased:
                continue
            survivors = tuple(m for m in _members(state, nid) if m not in erased)
            if _is_summary(state.node(nid)) and len(survivors) >= 2:
                regenerate.append((nid, survivors))
            else:
                erased[nid] = None
                grew = True
        if not grew:
            return ErasurePlan(tuple(targets), tuple(erased), tuple(regenerate))


def _affected(state: NamespaceState, targets: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for t in targets:
        out.update(state.graph.descendants(t))
    return out
