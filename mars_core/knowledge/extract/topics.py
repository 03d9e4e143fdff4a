"""What extraction returns and what it compares against: :class:`Topic`, :class:`Extracted`,
:func:`topic_of` and :class:`KnownFacts` (the topics of active memories)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from mars_core.knowledge.extract.lexicon import _ARTICLES, _EATING_PATTERNS, _NON_NAMES
from mars_core.model import MemoryNode, MemoryType, Predicate, TaskStatus, utc
from mars_core.nlp.lexicons import STOPWORDS
from mars_core.nlp.rules import normalise_apostrophes

__all__ = ["EPISODE", "Extracted", "KnownFacts", "Topic", "topic_of"]

EPISODE: Final = "episode"
"""Placeholder link target: the episode the store writes for the observed turn."""

# --- value objects --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Topic:
    """What a semantic or social memory is about, and what it says.

    Attributes:
        subject: normalised subject ("user", a speaker, or a person for social memories).
        predicate: the keyed predicate ("livesIn", "attitude:sushi", "relationshipTo:user").
        value: the normalised value compared for duplicates and replacements.

    Examples:
        >>> Topic("user", "livesIn", "lisbon").key
        ('user', 'livesIn')
    """

    subject: str
    predicate: str
    value: str

    @property
    def key(self) -> tuple[str, str]:
        """``(subject, predicate)``: the index key."""
        return (self.subject, self.predicate)


@dataclass(frozen=True, slots=True)
class Extracted:
    """One memory projected from a turn, ready for ``MemoryStore.add``.

    Attributes:
        type: the memory type (semantic, social or task).
        kind: ``fact``, ``preference``, ``constraint``, ``social`` or ``task``.
        text: a self-contained third-person sentence (the memory's content).
        payload: the payload fields for ``add(payload=...)`` (read-only mapping).
        links: edges ``(predicate, target)`` from the new memory; the target is an
            existing node id or :data:`EPISODE` (the turn's own episode).
        supersedes: the active memory this one replaces (same topic, new value).
        corrects: as ``supersedes``, when the turn carries a correction cue.
        reason: the rule that fired, for the audit rationale.
        topic: the topic the memory is indexed under in :class:`KnownFacts` (``None``
            when it has none).
        also_replaces: further active memories this one makes outdated although their
            topic differs (a renamed pet's old name, a cancelled plan, a preference
            that ended); replaced the same way (superseded, or corrected).

    Examples:
        >>> e = Extracted(MemoryType.SEMANTIC, "fact", "The user lives in Rome",
        ...               {"concept": "user", "relations": (("livesIn", "Rome"),)},
        ...               supersedes="n1")
        >>> [(p.value, target) for p, target in e.edges("ep1")]
        [('derivesFrom', 'ep1'), ('supersedes', 'n1')]
        >>> renamed = Extracted(MemoryType.SOCIAL, "social", "Pepper is the user's dog",
        ...                     {"entity": "Pepper"}, corrects="n2", also_replaces=("n3",))
        >>> [(p.value, target) for p, target in renamed.edges("ep1")][1:], renamed.replaced
        ([('corrects', 'n2'), ('corrects', 'n3')], ('n2', 'n3'))
    """

    type: MemoryType
    kind: str
    text: str
    payload: Mapping[str, Any]
    links: tuple[tuple[Predicate, str], ...] = ((Predicate.DERIVES_FROM, EPISODE),)
    supersedes: str | None = None
    corrects: str | None = None
    reason: str = ""
    topic: Topic | None = None
    also_replaces: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", MappingProxyType(dict(self.payload)))

    def edges(self, episode_id: str) -> list[tuple[Predicate, str]]:
        """All edges from the new memory, with :data:`EPISODE` resolved to ``episode_id``.

        Lineage comes last: ``supersedes`` or ``corrects`` (the replaced memories).
        """
        out = [(p, episode_id if t == EPISODE else t) for p, t in self.links]
        if self.supersedes is not None:
            out.append((Predicate.SUPERSEDES, self.supersedes))
        if self.corrects is not None:
            out.append((Predicate.CORRECTS, self.corrects))
        pred = Predicate.CORRECTS if self.corrects is not None else Predicate.SUPERSEDES
        out += [(pred, old) for old in self.also_replaces]
        return list(dict.fromkeys(out))

    @property
    def replaces(self) -> str | None:
        """The memory this one replaces (superseded or corrected), if any."""
        return self.corrects or self.supersedes

    @property
    def replaced(self) -> tuple[str, ...]:
        """Every memory this one replaces: :attr:`corrects`, :attr:`supersedes`, then
        :attr:`also_replaces`."""
        first = [i for i in (self.corrects, self.supersedes) if i is not None]
        return tuple(dict.fromkeys([*first, *self.also_replaces]))


# --- normalisation and topics --------------------------------------------------------------


def _norm(text: str) -> str:
    low = " ".join(normalise_apostrophes(text).casefold().split()).strip(" .,!?;:'\"")
    for art in _ARTICLES:
        if low.startswith(art):
            low = low[len(art):]
    return low


def _head(text: str) -> str:
    words = _norm(text).split()
    if not words:
        return ""
    last = words[-1]
    return last[:-1] if len(last) > 3 and last.endswith("s") and not last.endswith("ss") \
        else last


_SINGLE_VALUED: Final = frozenset({"livesIn", "isFrom", "worksAt", "worksAs"})
_POSITIVE: Final = frozenset({"likes", "loves", "enjoys", "adores", "favourite"})
_NEGATIVE: Final = frozenset({"dislikes", "hates", "detests"})
_FORMER: Final = frozenset({"usedToLike", "noLongerLikes"})


def _payload_dict(payload: BaseModel | Mapping[str, Any]) -> Mapping[str, Any]:
    return payload.model_dump() if isinstance(payload, BaseModel) else payload


def topic_of(mtype: MemoryType | str, payload: BaseModel | Mapping[str, Any]) -> Topic | None:
    """The topic of a semantic, social or task memory's payload, or ``None``.

    Semantic memories need a ``concept`` and a first relation; social ones an ``entity``
    (their ``related_to`` attribute names whom the relationship is to); pending or
    active tasks are keyed by their goal (so a rescheduled reminder replaces the old one).

    Examples:
        >>> topic_of("semantic", {"concept": "Ana", "relations": [("likes", "Sushi")]})
        Topic(subject='ana', predicate='attitude:sushi', value='+')
        >>> topic_of("social", {"entity": "Bo", "relationship_type": "friend",
        ...                     "attributes": {"related_to": "user"}}).key
        ('bo', 'relationshipTo:user')
    """
    data = _payload_dict(payload)
    kind = MemoryType(str(mtype))
    if kind is MemoryType.SEMANTIC:
        return _semantic_topic(data)
    if kind is MemoryType.SOCIAL:
        entity = data.get("entity")
        if not entity:
            return None
        attrs = dict(data.get("attributes") or {})
        related = _norm(str(attrs.pop("related_to", "")))
        rel = _norm(str(data.get("relationship_type") or ""))
        extra = ";".join(f"{k}={_norm(str(v))}" for k, v in sorted(attrs.items()))
        return Topic(_norm(str(entity)), f"relationshipTo:{related}", f"{rel}|{extra}")
    if kind is MemoryType.TASK:
        goal = data.get("goal")
        status = TaskStatus(data.get("status", TaskStatus.PENDING))
        if not goal or status not in (TaskStatus.PENDING, TaskStatus.ACTIVE):
            return None
        deadline = data.get("deadline")
        when = utc(deadline).isoformat() if isinstance(deadline, datetime) else ""
        return Topic("", f"task:{_norm(str(goal))}", when)
    return None


def _semantic_topic(data: Mapping[str, Any]) -> Topic | None:
    concept, relations = data.get("concept"), list(data.get("relations") or ())
    if not concept or not relations:
        return None
    pred, obj = str(relations[0][0]), str(relations[0][1])
    subject = _norm(str(concept))
    if pred in _SINGLE_VALUED or pred.startswith(("attr:", "favourite:")):
        return Topic(subject, pred, _norm(obj))
    if pred in _POSITIVE or pred in _NEGATIVE:
        return Topic(subject, f"attitude:{_norm(obj)}", "+" if pred in _POSITIVE else "-")
    if pred in _FORMER:  # "I used to love X", "I'm not into X anymore"
        return Topic(subject, f"attitude:{_norm(obj)}", "0")
    if pred == "diet" and _norm(obj).removeprefix("no longer ") in _EATING_PATTERNS:
        return Topic(subject, "diet", _norm(obj))
    if pred == "prefers":
        return Topic(subject, f"prefers:{_head(obj)}", _norm(obj))
    return Topic(subject, f"{pred}:{_norm(obj)}", _norm(obj))


def _names_in(text: str) -> frozenset[str]:
    """Capitalised words that look like names, normalised."""
    return frozenset(w.casefold() for w in re.findall(r"\b[A-Z][\w'-]*[a-z][\w-]*", text)
                     if w.casefold().removesuffix("'s") not in _NON_NAMES)


@dataclass(frozen=True, slots=True)
class _Plan:
    goal: str
    deadline: datetime | None
    words: frozenset[str]
    text: str


_GENERIC_PLAN_WORDS: Final = frozenset({
    "trip", "plan", "plans", "thing", "reminder", "event", "booking", "reservation", "go",
    "going", "get", "have", "having", "do", "doing", "make", "take", "visit", "user",
    "wants", "want", "need", "needs", "will", "due", "utc", "am", "pm",
})


def _plan_words(text: str) -> frozenset[str]:
    """Content words of a plan (singular, case-folded; no stopwords, no numbers)."""
    out = set()
    for token in re.findall(r"[a-z]+(?:'[a-z]+)?", normalise_apostrophes(text).casefold()):
        word = token.removesuffix("'s")
        if word in STOPWORDS or len(word) < 2:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not
                word.endswith("ss") else word)
    return frozenset(out)


_K = TypeVar("_K")


def _drop(groups: dict[_K, dict[str, Any]], key: _K, node_id: str) -> None:
    """Take ``node_id`` out of ``groups[key]``, and the group out when it empties."""
    members = groups[key]
    del members[node_id]
    if not members:
        del groups[key]


class KnownFacts:
    """The per-namespace index the store keeps for extraction: topics → active memories.

    It is a view like the store's other indices: rebuilt from the active memories on
    open (:meth:`from_nodes`), then updated as memories are stored (:meth:`add`) or
    leave the active set (:meth:`remove`). It also remembers social memories by person
    and by whose <relation> they are (:meth:`related`: the user's dog), and pending
    goals by the names and words they mention (:meth:`plan_matching`), so new memories
    can link to them, rename them or call them off.

    Examples:
        >>> from mars_core.knowledge.extract import extract
        >>> from mars_core.model import SemanticPayload
        >>> node = MemoryNode(id="n1", type=MemoryType.SEMANTIC, content="The user lives in Rome",
        ...                   weight=5, payload=SemanticPayload(concept="user",
        ...                                                     relations=(("livesIn", "Rome"),)))
        >>> known = KnownFacts.from_nodes([node])
        >>> known.lookup("user", "livesIn"), len(known)
        ('n1', 1)
        >>> [e.supersedes for e in extract("user", "I live in Paris", None, speaker=None,
        ...                                known=known)]
        ['n1']
    """

    def __init__(self) -> None:
        self._facts: dict[tuple[str, str], tuple[str, str]] = {}
        self._topic_of: dict[str, tuple[str, str]] = {}
        self._people: dict[str, dict[str, None]] = {}
        self._person_of: dict[str, str] = {}  # id -> its key in _people
        self._goals: dict[str, frozenset[str]] = {}
        self._relations: dict[tuple[str, str], dict[str, str]] = {}
        self._relation_of: dict[str, tuple[str, str]] = {}  # id -> its key in _relations
        self._attributes: dict[str, dict[str, str]] = {}
        self._plans: dict[str, _Plan] = {}

    @classmethod
    def from_nodes(cls, nodes: Iterable[MemoryNode]) -> KnownFacts:
        """Index the active memories among ``nodes`` (later ``seq`` wins a topic)."""
        known = cls()
        for node in sorted(nodes, key=lambda n: n.seq):
            known.add(node)
        return known

    def __len__(self) -> int:
        return len(self._facts)

    def add(self, node: MemoryNode) -> None:
        """Index (or re-index) one memory: call it after every store or status change.

        An archived memory, or a task that is no longer pending or active, is dropped.
        """
        self.remove(node.id)
        if not node.is_active or node.type is MemoryType.EPISODIC:  # an episode: no topic
            return
        topic = topic_of(node.type, node.payload)
        if topic is not None:
            old = self._facts.get(topic.key)
            if old is not None:
                self._topic_of.pop(old[0], None)
            self._facts[topic.key] = (node.id, topic.value)
            self._topic_of[node.id] = topic.key
        payload = _payload_dict(node.payload)
        if node.type is MemoryType.SOCIAL and payload.get("entity"):
            entity = str(payload["entity"])
            person = self._person_of[node.id] = _norm(entity)
            self._people.setdefault(person, {})[node.id] = None
            attrs = {str(k): str(v) for k, v in dict(payload.get("attributes") or {}).items()}
            owner = _norm(attrs.pop("related_to", ""))
            rel = _norm(str(payload.get("relationship_type") or ""))
            if owner and rel:
                self._relation_of[node.id] = (owner, rel)
                self._relations.setdefault((owner, rel), {})[node.id] = entity
                self._attributes[node.id] = attrs
        if node.type is MemoryType.TASK and topic is not None:
            goal = str(payload.get("goal") or "")
            self._goals[node.id] = _names_in(goal)
            deadline = payload.get("deadline")
            self._plans[node.id] = _Plan(goal, deadline if isinstance(deadline, datetime)
                                         else None, _plan_words(node.content), node.content)

    def remove(self, node_id: str) -> None:
        """Forget a memory that left the active set (archived, superseded or erased)."""
        key = self._topic_of.pop(node_id, None)
        if key is not None and self._facts.get(key, ("",))[0] == node_id:
            del self._facts[key]
        person = self._person_of.pop(node_id, None)
        if person is not None:
            _drop(self._people, person, node_id)
        relation = self._relation_of.pop(node_id, None)
        if relation is not None:
            _drop(self._relations, relation, node_id)
        self._attributes.pop(node_id, None)
        self._goals.pop(node_id, None)
        self._plans.pop(node_id, None)

    def lookup(self, subject: str, predicate: str) -> str | None:
        """The active memory holding topic ``(subject, predicate)``, if any."""
        hit = self._facts.get((_norm(subject), predicate))
        return hit[0] if hit else None

    def entry(self, topic: Topic) -> tuple[str, str] | None:
        """``(node id, value)`` of the active memory on ``topic``'s key, if any."""
        return self._facts.get(topic.key)

    def people(self, name: str) -> tuple[str, ...]:
        """Active social memories about a person (by normalised name), oldest first."""
        return tuple(self._people.get(_norm(name), {}))

    def goals_mentioning(self, names: Iterable[str]) -> tuple[str, ...]:
        """Pending/active tasks whose goal mentions one of ``names``, in id order."""
        wanted = {_norm(n) for n in names}
        return tuple(sorted(t for t, goal in self._goals.items() if goal & wanted))

    def facts_about(self, subject: str) -> tuple[tuple[str, str, str], ...]:
        """``(predicate, node id, value)`` of the active facts about ``subject``, in
        predicate order."""
        key = _norm(subject)
        return tuple(sorted((pred, nid, value) for (subj, pred), (nid, value)
                            in self._facts.items() if subj == key))

    def related(self, owner: str, relationship: str | None = None
                ) -> tuple[tuple[str, str, str], ...]:
        """``(relationship, node id, entity)`` of the active social memories naming
        someone ``owner``'s ``relationship`` (their dog, their sister; any relationship
        for ``None``), oldest first within a relationship."""
        who = _norm(owner)
        return tuple((rel, nid, entity) for (own, rel), members in self._relations.items()
                     if own == who and (relationship is None or rel == _norm(relationship))
                     for nid, entity in members.items())

    def attributes(self, node_id: str) -> Mapping[str, str]:
        """The attributes of an active social memory (``related_to`` aside)."""
        return MappingProxyType(self._attributes.get(node_id, {}))

    def plan(self, node_id: str) -> _Plan | None:
        """The goal, deadline and words of a pending or active task, if it is one."""
        return self._plans.get(node_id)

    def plan_matching(self, words: Iterable[str], *, all_words: bool = False) -> str | None:
        """The pending or active task that shares the most content words with
        ``words`` (at least one that is not a generic word like "trip" or "plan"; with
        ``all_words``, every one of ``words`` that is not generic), or ``None`` when
        there is none or the best is tied (ambiguous)."""
        wanted = frozenset(words)
        best: list[tuple[int, str]] = []
        for nid, plan in self._plans.items():
            shared = wanted & plan.words
            if not shared - _GENERIC_PLAN_WORDS or (
                    all_words and wanted - _GENERIC_PLAN_WORDS - plan.words):
                continue
            best.append((len(shared), nid))
        best.sort(reverse=True)
        if not best or (len(best) > 1 and best[0][0] == best[1][0]):
            return None
        return best[0][1]
