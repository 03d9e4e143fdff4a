"""Right-to-be-forgotten planning: what an erasure removes, and which summaries it rewrites.

Seed 000 §5.4: erasure "triggers a bounded-latency cascade through the provenance graph,
removing the target nodes and any descendants that depend on them; affected summaries
are either regenerated without the erased material or downgraded".

The rules, as implemented here (a pure function of what the plan reads of the
namespace, :class:`Memories`: every memory streamed from the record store, its edges):

* **Targets**: one memory; every memory of a namespace that mentions an entity (a
  whole-word, case-insensitive match anywhere the memory keeps text: its content, its
  payload's entity, concept, relations, participants (the speaker), event, context,
  goal and attribute values, its metadata's keys and string values at any depth, and its
  provenance's conversation, session and external ids — identifiers read with ``-``,
  ``_``, ``.``, ``:``, ``/`` and ``+`` as spaces, so ``chat-with-zuriel-okafor`` names
  Zuriel Okafor); every memory of a conversation (its provenance); or a whole
  namespace.
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
    >>> from mars_core.model import MemoryNode
    >>> n = MemoryNode(id="m1", type="semantic", content="Met a client", weight=3,
    ...                payload={"kind": "semantic"}, metadata={"attendee": "Adaeze Okafor"})
    >>> plan_erasure(memories_of("ns", [n]), entity="Adaeze Okafor").erased
    ('m1',)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mars_core.errors import NotFoundError, ValidationError
from mars_core.graph import MemoryGraph
from mars_core.model import (
    Edge,
    EpisodicPayload,
    MemoryNode,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
)
from mars_core.privacy.names import NameScan, PersonName, Reason
from mars_core.privacy.receipts import AmbiguousMention

__all__ = ["ErasurePlan", "Memories", "ambiguous_mentions", "memories_of", "mentions",
           "person_name", "plan_erasure"]


class Memories(Protocol):
    """What an erasure plan reads of a namespace.

    Attributes:
        name: the namespace.
        graph: its edges (ids only).
    """

    name: str
    graph: MemoryGraph

    def each(self) -> Iterator[MemoryNode]:
        """Every memory of the namespace, active and archived (streamed: a plan never
        holds them all)."""
        ...

    def get(self, memory_id: str) -> MemoryNode | None:
        """One memory of the namespace, or ``None``."""
        ...


@dataclass
class _Listed:
    name: str
    nodes: dict[str, MemoryNode]
    graph: MemoryGraph = field(default_factory=MemoryGraph)

    def each(self) -> Iterator[MemoryNode]:
        return iter(list(self.nodes.values()))

    def get(self, memory_id: str) -> MemoryNode | None:
        return self.nodes.get(memory_id)


def memories_of(name: str, nodes: Iterable[MemoryNode], edges: Iterable[Edge] = ()
                ) -> Memories:
    """:class:`Memories` over memories and edges held in RAM (tests, examples)."""
    graph = MemoryGraph()
    for edge in edges:
        graph.add(edge)
    return _Listed(name, {n.id: n for n in nodes}, graph)


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
        nodes: see below.
    """

    targets: tuple[str, ...]
    erased: tuple[str, ...]
    regenerate: tuple[tuple[str, tuple[str, ...]], ...]
    partial: tuple[str, ...] = ()
    ambiguous: tuple[AmbiguousMention, ...] = ()
    name: PersonName | None = None
    nodes: Mapping[str, MemoryNode] = field(default_factory=dict)
    """The memories the plan acts on, as it read them: the erased ones, the summaries
    it regenerates and their surviving members."""


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


_SEPARATORS = re.compile(r"[-_.:/+]+")
"""How identifiers join words: read as spaces, ``chat-with-zuriel-okafor`` names a person."""


def _as_words(text: str) -> Iterator[str]:
    """``text``, and its words apart when separators join them."""
    yield text
    spaced = _SEPARATORS.sub(" ", text)
    if spaced != text:
        yield spaced


def _metadata_texts(value: Any) -> Iterator[str]:
    """Every key and string value of user metadata, at any depth (iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield from _as_words(item)
        elif isinstance(item, Mapping):
            for key, child in item.items():
                yield from _as_words(str(key))
                stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _provenance_texts(node: MemoryNode) -> Iterator[str]:
    prov = node.provenance
    for value in (prov.conversation_id, prov.session_id, prov.external_id):
        if value:
            yield from _as_words(value)


def _texts(node: MemoryNode) -> tuple[str, ...]:
    """Everywhere a memory keeps text that may name someone (see the module)."""
    return (node.content, *_payload_texts(node), *_metadata_texts(node.metadata),
            *_provenance_texts(node))


def _names(node: MemoryNode) -> Iterator[str]:
    """The names a memory's payload holds as names (a social entity, participants)."""
    p = node.payload
    if isinstance(p, SocialPayload) and p.entity:
        yield p.entity
    elif isinstance(p, EpisodicPayload):
        yield from p.participants


def _pattern(entity: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(entity.casefold()) + r"(?!\w)")


def mentions(node: MemoryNode, entity: str) -> bool:
    """Whether a memory mentions ``entity`` (whole words, case-insensitive) anywhere it
    keeps text (see the module)."""
    pattern = _pattern(entity)
    return any(pattern.search(t.casefold()) for t in _texts(node))


def person_name(nodes: Iterable[MemoryNode] | Callable[[], Iterator[MemoryNode]],
                entity: str) -> PersonName:
    """``entity`` as a person's name, resolved against the people ``nodes`` name (a
    collection, or a function that streams them afresh: they are read twice)."""
    each = nodes if callable(nodes) else (lambda: iter(nodes))
    return PersonName.resolve(entity, (t for n in each() for t in _texts(n)),
                              (x for n in each() for x in _names(n)))


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


def _check(view: Memories, *, node_id: str | None, entity: str | None,
           conversation: str | None, namespace_all: bool) -> None:
    given = sum(x is not None for x in (node_id, entity, conversation)) + int(namespace_all)
    if given != 1:
        raise ValidationError("erase exactly one of: node_id, entity, conversation, namespace")
    if node_id is not None and view.get(node_id) is None:
        raise NotFoundError(f"no memory {node_id!r} in namespace {view.name!r}")
    if entity is not None and not entity.strip():
        raise ValidationError("the entity to erase must be a non-empty string")


def _targets(view: Memories, *, node_id: str | None, entity: str | None,
             conversation: str | None, scans: Mapping[str, NameScan] | None,
             keep: dict[str, MemoryNode]) -> list[str]:
    """The targets; each target's memory is kept in ``keep`` as it was read."""
    if node_id is not None:
        found = view.get(node_id)
        assert found is not None  # _check
        keep[node_id] = found
        return [node_id]
    wanted: Callable[[MemoryNode], bool]
    if scans is not None:
        wanted = lambda n: scans[n.id].erase  # noqa: E731 (one expression each)
    elif entity is not None:
        pattern = _pattern(entity.strip())
        wanted = lambda n: any(pattern.search(t.casefold()) for t in _texts(n))  # noqa: E731
    elif conversation is not None:
        wanted = lambda n: n.provenance.conversation_id == conversation  # noqa: E731
    else:
        wanted = lambda n: True  # noqa: E731
    out = []
    for node in view.each():
        if wanted(node):
            keep[node.id] = node
            out.append(node.id)
    return out


def _is_summary(node: MemoryNode) -> bool:
    return node.provenance.source == "summary"


class _Reader:
    """The memories a plan reads by id, each read once (they are few: what a cascade
    reaches), beside those the scan kept."""

    def __init__(self, view: Memories, kept: dict[str, MemoryNode]) -> None:
        self.view, self.kept = view, kept

    def __call__(self, memory_id: str) -> MemoryNode:
        node = self.kept.get(memory_id)
        if node is None:
            node = self.view.get(memory_id)
            if node is None:  # an edge to a memory of another namespace, or none
                raise NotFoundError(f"memory {memory_id!r} is not in namespace "
                                    f"{self.view.name!r}")
            self.kept[memory_id] = node
        return node


def _members(view: Memories, node: Callable[[str], MemoryNode], node_id: str) -> list[str]:
    """What ``node_id`` derives from, in the order its provenance lists them (so a
    regenerated summary reads in its original order, whatever the ids), any other after."""
    listed = {m: i for i, m in enumerate(node(node_id).provenance.derived_from)}
    return sorted((e.target for e in view.graph.out_edges(node_id)
                   if e.predicate.value == "derivesFrom"),
                  key=lambda m: listed.get(m, len(listed)))


def plan_erasure(
    view: Memories,
    *,
    node_id: str | None = None,
    entity: str | None = None,
    conversation: str | None = None,
    namespace_all: bool = False,
    partial: bool = True,
) -> ErasurePlan:
    """Plan an erasure in the namespace ``view`` reads (exactly one selector): one pass
    over its memories (two more to resolve a person's name), holding only what it erases.

    With ``entity`` and ``partial`` (the default), a name of two parts or more also
    reaches its partial mentions (see the module).

    Raises:
        ValidationError: no selector or several.
        NotFoundError: ``node_id`` does not exist in the namespace.
    """
    _check(view, node_id=node_id, entity=entity, conversation=conversation,
           namespace_all=namespace_all)
    name = _person(view, entity) if entity is not None and partial else None
    scans = None if name is None else {n.id: _scan(name, n) for n in view.each()}
    kept: dict[str, MemoryNode] = {}
    targets = _targets(view, node_id=node_id, entity=entity, conversation=conversation,
                       scans=scans, keep=kept)
    node = _Reader(view, kept)
    erased, regenerate = _cascade(view, node, targets)
    for old, members in regenerate:
        node(old)
        for member in members:
            node(member)
    needed = {*erased, *(old for old, _ in regenerate), *(m for _, ms in regenerate for m in ms)}
    nodes = {i: n for i, n in kept.items() if i in needed}
    if name is None or scans is None:
        return ErasurePlan(tuple(targets), erased, regenerate, nodes=nodes)
    gone = {*erased, *(old for old, _ in regenerate)}  # rewritten summaries: checked anew
    ambiguous = tuple(AmbiguousMention(nid, part, why) for nid, scan in scans.items()
                      if nid not in gone for part, why in scan.ambiguous)
    return ErasurePlan(tuple(targets), erased, regenerate,
                       partial=tuple(t for t in targets if not scans[t].full),
                       ambiguous=ambiguous, name=name, nodes=nodes)


def _person(view: Memories, entity: str) -> PersonName | None:
    """The entity as a person's name with partial mentions, or ``None`` (one part)."""
    name = person_name(view.each, entity.strip())
    return name if name.partial else None


def _cascade(view: Memories, node: Callable[[str], MemoryNode], targets: Sequence[str]
             ) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Everything erased with ``targets``, and the summaries regenerated without them."""
    erased: dict[str, None] = dict.fromkeys(targets)
    order = sorted(_affected(view, targets) - set(targets),
                   key=lambda i: (node(i).depth, node(i).seq))
    while True:  # erasing a summary can leave a deeper one without support: iterate
        regenerate: list[tuple[str, tuple[str, ...]]] = []
        grew = False
        for nid in order:
            if nid in erased:
                continue
            survivors = tuple(m for m in _members(view, node, nid) if m not in erased)
            if _is_summary(node(nid)) and len(survivors) >= 2:
                regenerate.append((nid, survivors))
            else:
                erased[nid] = None
                grew = True
        if not grew:
            return tuple(erased), tuple(regenerate)


def _affected(view: Memories, targets: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for t in targets:
        out.update(view.graph.descendants(t))
    return out
