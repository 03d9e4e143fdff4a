"""Right-to-be-forgotten planning: what an erasure removes, and which summaries it rewrites.

Seed 000 §5.4: erasure "triggers a bounded-latency cascade through the provenance graph,
removing the target nodes and any descendants that depend on them; affected summaries
are either regenerated without the erased material or downgraded".

The rules, as implemented here (a pure function of the store's views):

* **Targets**: one memory; every memory of a namespace that mentions an entity (a
  whole-word, case-insensitive match in the content or in the payload's entity,
  concept, participants or attribute values); every memory of a conversation (its
  provenance); or a whole namespace.
* **Partial mentions** (entity erasure, ``partial=True``, a name of two parts or more):
  a memory that names the person by part of the name — "Mr Doe", "Jane", "Doe's" — is
  a target too when no other person known in the namespace shares that part, and is
  listed in :attr:`ErasurePlan.ambiguous` (id and name part, never its text) when one
  does, or when the part is an everyday word at the start of a sentence ("Rose
  called"). The rules are in :mod:`mars_core.privacy.names`. ``partial=False`` matches
  the whole entity only (a place, an organisation).
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
    >>> state = NamespaceState(NamespaceRecord("ns"), [], [], make_policy("lru"))
    >>> plan_erasure(state, list, namespace_all=True).erased
    ()
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
from mars_core.privacy.names import NameScan, PersonName, Reason
from mars_core.privacy.receipts import AmbiguousMention

__all__ = ["ErasurePlan", "ambiguous_mentions", "mentions", "person_name", "plan_erasure"]


@dataclass(frozen=True, slots=True)
class ErasurePlan:
    """What an erasure does.

    Attributes:
        targets: memories named by the request.
        erased: every memory to remove (targets and cascade), in a stable order.
        regenerate: ``(summary id, surviving member ids)`` for each summary rewritten
            without the erased material, deepest dependency first.
        partial: the targets that name the person by part of the name only.
        ambiguous: surviving memories that mention part of the name ambiguously, for
            review (summaries about to be regenerated are not listed: their new
            versions are checked once written).
        name: the erased person's resolved name (entity erasure with partial
            mentions), to check regenerated summaries with.
    """

    targets: tuple[str, ...]
    erased: tuple[str, ...]
    regenerate: tuple[tuple[str, tuple[str, ...]], ...]
    partial: tuple[str, ...] = ()
    ambiguous: tuple[AmbiguousMention, ...] = ()
    name: PersonName | None = None


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


def _texts(node: MemoryNode) -> tuple[str, ...]:
    return (node.content, *_payload_texts(node))


def _names(node: MemoryNode) -> Iterator[str]:
    """The names a memory's payload holds as names (a social entity, participants)."""
    p = node.payload
    if isinstance(p, SocialPayload) and p.entity:
        yield p.entity
    elif isinstance(p, EpisodicPayload):
        yield from p.participants


def mentions(node: MemoryNode, entity: str) -> bool:
    """Whether a memory mentions ``entity`` (whole words, case-insensitive)."""
    pattern = re.compile(r"(?<!\w)" + re.escape(entity.casefold()) + r"(?!\w)")
    return any(pattern.search(t.casefold()) for t in _texts(node))


def person_name(nodes: Sequence[MemoryNode], entity: str) -> PersonName:
    """``entity`` as a person's name, resolved against the people ``nodes`` name."""
    return PersonName.resolve(entity, (t for n in nodes for t in _texts(n)),
                              (x for n in nodes for x in _names(n)))


def _scan(name: PersonName, node: MemoryNode) -> NameScan:
    """One memory's verdict: its texts' verdicts merged."""
    scans = [name.scan(t) for t in _texts(node)]
    if any(s.erase for s in scans):
        return NameScan(full=any(s.full for s in scans), erase=True)
    found: dict[str, Reason] = {}
    for s in scans:
        for part, why in s.ambiguous:
            found.setdefault(part, why)
    return NameScan(full=False, erase=False,
                    ambiguous=tuple((p, found[p]) for p in name.parts if p in found))


def ambiguous_mentions(name: PersonName, node: MemoryNode) -> tuple[AmbiguousMention, ...]:
    """The ambiguous partial mentions of ``name`` in a memory that is kept."""
    return tuple(AmbiguousMention(node.id, part, why)
                 for part, why in _scan(name, node).ambiguous)


def _check(state: NamespaceState, *, node_id: str | None, entity: str | None,
           conversation: str | None, namespace_all: bool) -> None:
    given = sum(x is not None for x in (node_id, entity, conversation)) + int(namespace_all)
    if given != 1:
        raise ValidationError("erase exactly one of: node_id, entity, conversation, namespace")
    if node_id is not None and node_id not in state:
        raise NotFoundError(f"no memory {node_id!r} in namespace {state.name!r}")
    if entity is not None and not entity.strip():
        raise ValidationError("the entity to erase must be a non-empty string")


def _targets(state: NamespaceState, everything: Callable[[], Sequence[MemoryNode]], *,
             node_id: str | None, entity: str | None, conversation: str | None,
             scans: Mapping[str, NameScan] | None) -> list[str]:
    if node_id is not None:
        return [node_id]
    if scans is not None:
        return [nid for nid, scan in scans.items() if scan.erase]
    nodes = everything()
    if entity is not None:
        return [n.id for n in nodes if mentions(n, entity.strip())]
    if conversation is not None:
        return [n.id for n in nodes if n.provenance.conversation_id == conversation]
    return [n.id for n in nodes]


def _is_summary(node: MemoryNode) -> bool:
    return node.provenance.source == "summary"


def _members(state: NamespaceState, node_id: str) -> list[str]:
    """What ``node_id`` derives from, in the order its provenance lists them (so a
    regenerated summary reads in its original order, whatever the ids), any other after."""
    listed = {m: i for i, m in enumerate(state.node(node_id).provenance.derived_from)}
    return sorted((e.target for e in state.graph.out_edges(node_id)
                   if e.predicate.value == "derivesFrom"),
                  key=lambda m: listed.get(m, len(listed)))


def plan_erasure(
    state: NamespaceState,
    everything: Callable[[], Sequence[MemoryNode]],
    *,
    node_id: str | None = None,
    entity: str | None = None,
    conversation: str | None = None,
    namespace_all: bool = False,
    partial: bool = True,
) -> ErasurePlan:
    """Plan an erasure in the namespace of ``state`` (exactly one selector);
    ``everything`` gives every memory of the namespace, active or archived (read only
    when the selector is not one memory).

    With ``entity`` and ``partial`` (the default), a name of two parts or more also
    reaches its partial mentions (see the module).

    Raises:
        ValidationError: no selector or several.
        NotFoundError: ``node_id`` does not exist in the namespace.
    """
    _check(state, node_id=node_id, entity=entity, conversation=conversation,
           namespace_all=namespace_all)
    name = person_name(everything(), entity.strip()) if entity is not None and partial \
        else None
    if name is not None and not name.partial:
        name = None
    scans = None if name is None else {n.id: _scan(name, n) for n in everything()}
    targets = _targets(state, everything, node_id=node_id, entity=entity,
                       conversation=conversation, scans=scans)
    erased, regenerate = _cascade(state, targets)
    if name is None or scans is None:
        return ErasurePlan(tuple(targets), erased, regenerate)
    gone = {*erased, *(old for old, _ in regenerate)}  # rewritten summaries: checked anew
    ambiguous = tuple(AmbiguousMention(nid, part, why) for nid, scan in scans.items()
                      if nid not in gone for part, why in scan.ambiguous)
    return ErasurePlan(tuple(targets), erased, regenerate,
                       partial=tuple(t for t in targets if not scans[t].full),
                       ambiguous=ambiguous, name=name)


def _cascade(state: NamespaceState, targets: Sequence[str]
             ) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Everything erased with ``targets``, and the summaries regenerated without them."""
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
            return tuple(erased), tuple(regenerate)


def _affected(state: NamespaceState, targets: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for t in targets:
        out.update(state.graph.descendants(t))
    return out
