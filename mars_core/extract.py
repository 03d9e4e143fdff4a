"""Deterministic extraction of facts, preferences, constraints, people and plans.

``MemoryStore.observe`` stores every turn as an episode and calls :func:`extract` to
project it onto typed memories (seed 000 §3.2.2–3.2.4; DMF's conservative "card"
projections, seed 004 §9.2). There is no model here: every memory comes from a fixed
cue rule, the rule is named in :attr:`Extracted.reason`, and the same turn always gives
the same result. The rules prefer extracting nothing to extracting garbage.

**Who "I" is.** First person refers to the speaker: the ``speaker`` argument, else a
LoCoMo-style ``"Name: text"`` prefix, else ``"user"`` for ``role="user"``. Turns of any
other role without a speaker (the assistant talking about itself) give nothing.

**Rules** (per sentence; questions are skipped except "(can you) remind me to ..."):

* *facts* (semantic): ``I live in / moved to <Place>`` → ``livesIn``; ``I'm from <Place>``
  → ``isFrom``; ``I work at|for <Org>`` → ``worksAt``; ``I work as a <job>`` → ``worksAs``;
  ``I am a/an <noun>`` → ``isA`` (not "a bit", "a part of", ...); ``I have a <dog|car|
  son|...>`` → ``has`` (a fixed list of possessions; "named <Name>" also makes a social
  memory); ``my <name|birthday|email|...> is <value>`` → ``attr:<name>``.
* *preferences* (semantic): ``I like/love/enjoy/prefer/hate/dislike/don't like <X>``,
  ``I'm a (big) fan of <X>``, ``my favourite <cat> is <X>``, ``<X> is my favourite (<cat>)``.
  Objects that point at the conversation ("I love *your* painting", "I love *that*")
  are reactions, not preferences, and are dropped.
* *constraints* (semantic): imperatives addressed to the agent (only when no speaker is
  named): ``Don't / Do not / Never / Always / Must not ...``; and, for any speaker,
  ``I'm allergic to <X>``, ``I'm vegan|vegetarian|...``, ``I don't|never eat|drink|... <X>``.
* *people* (social): ``my [best] <sister|friend|colleague|dog|...> <Name>``,
  ``<Name> is my <relation>``, ``<Name>, my <relation>``, ``<Name>'s <relation> <Name2>``,
  ``<Name2> is <Name>'s <relation>``.
* *plans* (task, status pending): ``I/we will | 'll | am going to | 'm gonna | need to |
  have to | plan to | have plans for ...`` with a future date or time in the sentence
  (not after "if ..."); a present progressive ``I'm <verb>ing ...`` or ``I have a <event>``
  only with a clearly future one (not "today", "this week"); ``remind me to ...`` and
  ``don't let me forget to ...`` also without one. Goals addressed to the listener
  ("I'll *let you know* tomorrow") are dropped. A task is also indexed by its goal, so
  a rescheduled reminder replaces the old one.

**Dates** (:func:`parse_deadline`), relative to an anchor: today, tonight, this
morning/afternoon/evening, tomorrow, the day after tomorrow, ``[on|this|next] <weekday>``,
this/next week, this/next weekend, this/next month, next year, ``in N days|weeks|months``,
``May 3``, ``3 May``, ``3rd of May``, with or without a year, ``2026-05-03``; times
``5pm``, ``5:30 pm``, ``17:00``, ``noon``, ``midnight``. A date without a time is due at
23:59 of that day in the anchor's timezone; a bare weekday is the next one after today;
``next <weekday>`` is that day in the next Monday-based week; "next week" ends on its
Sunday; a month-day without a year is the next such day on or after the anchor.

**Topics and lineage.** Each semantic or social memory has a *topic* ``(subject,
predicate)`` and a value (:func:`topic_of`). :class:`KnownFacts` maps topics of active
memories to their node; a new memory on a known topic with a different value replaces
it (``supersedes``, or ``corrects`` when the turn has a correction cue such as
"actually", "I meant", "no, it's"), and one with the same value is not extracted again.
Single-valued predicates (livesIn, isFrom, worksAt, worksAs, attr:*, favourite:<cat>)
are keyed by predicate; likes/dislikes by their object (so "I hate sushi" replaces "I
love sushi"); ``prefers`` by the head noun of its object ("aisle seats" replaces "window
seats"); everything else by its object (duplicates only).

Examples:
    >>> from datetime import datetime, UTC
    >>> known = KnownFacts()
    >>> [e.text for e in extract("user", "I live in Lisbon and I love hiking.", None,
    ...                          speaker=None, known=known)]
    ['The user lives in Lisbon', 'The user loves hiking']
    >>> task = extract("user", "Remind me to call Ana on Friday at 5pm", None, speaker=None,
    ...                known=known, anchor=datetime(2026, 5, 4, 9, 0, tzinfo=UTC))[0]
    >>> task.type.value, task.payload["goal"], task.payload["deadline"].isoformat()
    ('task', 'call Ana', '2026-05-08T17:00:00+00:00')
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel

from mars_core.model import MemoryNode, MemoryType, Predicate, TaskStatus, utc
from mars_core.nlp.lexicons import STOPWORDS
from mars_core.nlp.rules import normalise_apostrophes, split_sentences
from mars_core.nlp.signals import TextSignals

__all__ = [
    "EPISODE",
    "Extracted",
    "KnownFacts",
    "Topic",
    "extract",
    "parse_deadline",
    "split_speaker",
    "topic_of",
]

EPISODE: Final = "episode"
"""Placeholder link target: the episode the store writes for the observed turn."""

# --- word lists ([ours]) ----------------------------------------------------------------

_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                    "sunday")
_MONTHS: Final = {m.lower(): i for i, m in enumerate(calendar.month_name) if m} | {
    m.lower(): i for i, m in enumerate(calendar.month_abbr) if m} | {"sept": 9}
_NON_NAMES: Final = frozenset({
    "i", "i'm", "i've", "i'll", "i'd", "the", "a", "an", "my", "your", "his", "her", "our",
    "their", "this", "that", "these", "those", "it", "he", "she", "we", "they", "you",
    "there", "here", "what", "who", "which", "when", "where", "why", "how", "yes", "no",
    "yeah", "oh", "wow", "hey", "hi", "hello", "thanks", "thank", "ok", "okay", "so", "and",
    "but", "or", "if", "just", "also", "well", "today", "tomorrow", "tonight", "yesterday",
    "everyone", "everybody", "someone", "anyone", "nobody", "god", "mom", "dad", "mum",
    "sir", "madam", "not", "never", "always", "please", "sorry", "haha", "lol", "btw",
    *_WEEKDAYS, *_MONTHS,
})
_RELATIONS: Final = (
    "sister", "brother", "mom", "mum", "mother", "dad", "father", "son", "daughter", "wife",
    "husband", "partner", "boyfriend", "girlfriend", "fiance", "fiancee", "fiancé",
    "fiancée", "friend", "colleague", "coworker", "co-worker", "boss", "manager", "cousin",
    "aunt", "uncle", "grandma", "grandmother", "grandpa", "grandfather", "niece", "nephew",
    "neighbour", "neighbor", "roommate", "flatmate", "classmate", "teacher", "doctor",
    "therapist", "mentor", "stepmom", "stepdad", "stepson", "stepdaughter", "assistant",
    "dog", "cat", "puppy", "kitten", "pet", "horse", "parrot", "rabbit", "bunny", "hamster",
)
_REL_MODIFIERS: Final = (
    "best", "old", "close", "good", "dear", "younger", "older", "little", "big", "new",
    "twin", "baby", "ex", "ex-", "eldest", "youngest", "late",
)
_POSSESSIONS: Final = frozenset({
    "dog", "dogs", "cat", "cats", "puppy", "puppies", "kitten", "kittens", "pet", "pets",
    "horse", "horses", "parrot", "rabbit", "bunny", "hamster", "fish", "turtle", "snake",
    "car", "cars", "bike", "bicycle", "motorcycle", "house", "apartment", "flat", "garden",
    "boat", "son", "sons", "daughter", "daughters", "kid", "kids", "child", "children",
    "brother", "brothers", "sister", "sisters", "husband", "wife", "boyfriend",
    "girlfriend", "partner", "twin", "degree", "phd", "job", "allergy", "condition",
    "disability", "diabetes", "asthma", "tattoo", "tattoos", "studio", "shop", "store",
    "business", "company", "restaurant", "cafe", "bakery", "farm", "cabin",
})
_ATTRIBUTES: Final = (
    "name", "full name", "nickname", "birthday", "date of birth", "email", "email address",
    "e-mail", "phone number", "number", "address", "home address", "age", "job",
    "occupation", "profession", "job title", "title", "role", "major", "hometown",
    "nationality", "religion", "blood type", "zodiac sign", "star sign", "pronouns",
    "username", "handle", "timezone", "time zone", "native language", "first language",
    "mother tongue", "shoe size", "height", "weight", "dog's name", "cat's name",
    "pet's name", "middle name", "last name", "surname", "maiden name",
)
_DIETS: Final = ("vegan", "vegetarian", "pescatarian", "lactose intolerant",
                 "lactose-intolerant", "gluten-free", "gluten free", "diabetic", "celiac",
                 "coeliac", "teetotal", "kosher", "halal")
_IS_A_BAD_HEADS: Final = frozenset({
    "bit", "little", "lot", "mix", "part", "fan", "kind", "sort", "type", "way", "mess",
    "wreck", "fool", "sucker", "firm", "big", "huge", "total", "great", "good", "bad",
    "long", "hard", "real", "true", "strong", "tad", "few", "couple", "pleasure", "lucky",
    "sure", "must", "quick", "proud", "work", "fun", "blast", "dream", "piece", "believer",
    "nervous", "happy", "complete", "whole", "natural",
})
_PHATIC_IMPERATIVE_VERBS: Final = frozenset({
    "worry", "mind", "be", "hesitate", "give", "stress", "panic", "apologize", "apologise",
    "sweat", "forget", "let", "stop", "feel", "been", "heard", "seen", "had", "done",
    "thought", "knew", "met", "tried", "look", "change", "ever", "doubt", "underestimate",
    "lose", "miss", "quit",
})
_AVOID_VERBS: Final = ("eat", "drink", "smoke", "fly", "drive", "use", "take", "consume",
                       "touch", "wear")
_PROGRESSIVE_BAD: Final = frozenset({
    "going", "feeling", "doing", "thinking", "hoping", "trying", "wondering", "loving",
    "enjoying", "looking", "getting", "being", "working", "learning", "saying", "telling",
    "keeping", "planning", "kidding", "missing", "struggling", "dealing", "reading",
    "writing", "waiting", "counting", "glad", "sorry", "excited", "considering", "taking",
    "making", "living", "staying", "using", "finding", "focusing", "starting",
    "still", "really", "so", "also", "just", "always", "constantly", "currently", "now",
})

_NP_STOP: Final = frozenset({
    "and", "but", "or", "so", "because", "since", "as", "when", "while", "if", "which", "who",
    "whom", "that", "where", "though", "although", "until", "unless", "with", "for", "from",
    "now", "currently", "anymore", "nowadays", "today", "tomorrow", "yesterday", "too",
    "also", "lately", "recently", "again", "these", "at", "in", "on", "during", "after",
    "before", "about", "than", "over", "like", "instead", "rather", "either", "especially",
    "more", "most", "very", "much", "really", "here", "there", "by", "into",
})
_OBJECT_BAD_WORDS: Final = frozenset({
    "you", "your", "yours", "it", "that", "this", "them", "him", "her", "these", "those",
    "ya", "u", "ur", "everything", "anything", "something", "nothing", "all", "how",
    "what", "when", "where", "why", "who", "which", "hearing", "seeing", "knowing",
    "having", "getting", "one", "ones", "way", "idea", "thought", "sound", "look", "both",
    "his", "their", "our", "its", "itself", "myself", "not", "no",
})
_TO_VERBS_BAD: Final = frozenset({"say", "hear", "see", "think", "know", "believe", "call",
                                  "put", "imagine", "admit", "be"})
_PREPS: Final = frozenset({"on", "in", "into", "at", "about", "with", "for", "to", "around",
                           "through", "out", "up", "by", "over"})
_TRAILING: Final = frozenset({"too", "itself", "himself", "herself", "themselves", "either",
                              "sometimes", "often", "usually", "lately", "anyway", "again",
                              "anymore", "though", "lol", "haha", "ever"})
_EVENT_BAD_HEADS: Final = frozenset({
    "lot", "bit", "few", "feeling", "question", "idea", "sense", "chance", "hunch",
    "suspicion", "great", "good", "nice", "fun", "hard", "tough", "busy", "long", "lovely",
    "blast", "wonderful", "problem", "thought", "dream", "look", "minute", "moment",
})
_GOAL_BAD_WORDS: Final = frozenset({"you", "your", "ya", "u", "yours", "yourself"})
_HYPOTHETICAL: Final = frozenset({
    "if", "unless", "whether", "wish", "imagine", "pretend", "suppose", "supposing", "maybe",
    "perhaps", "should", "would", "could", "might", "whenever", "before", "until", "once",
    "hope", "hoping",
})
_ARTICLES: Final = ("a ", "an ", "the ")
_CONDITIONALS: Final = frozenset({"if", "unless", "whether", "suppose", "imagine"})
_CLAUSE_OPENERS: Final = frozenset({
    "and", "but", "so", "because", "cause", "'cause", "coz", "cuz", "also", "yeah", "yes",
    "yep", "well", "oh", "now", "still", "really", "actually", "honestly", "why", "since",
    "though", "although", "think", "guess", "know", "mean", "say", "said", "believe",
    "definitely", "truly", "ok", "okay", "plus", "then", "too", "sure", "absolutely",
    "agreed", "haha", "lol", "wow", "hey", "hi", "hmm", "personally", "generally",
    "usually", "anyway", "anyways", "btw", "just", "always", "sometimes", "nowadays",
    "lately", "recently", "tonight", "today", "tomorrow", "weekend", "week", "month",
    "year", "morning", "evening", "afternoon", *_WEEKDAYS, "first", "finally", "otherwise",
    "unfortunately", "luckily", "fortunately", "hopefully", "besides", "meanwhile",
    "meant", "realized", "realised", "forgot", "noticed", "feel", "felt", "thought",
    "hope", "promise", "swear", "bet", "sorry",
})

# --- regex building blocks ----------------------------------------------------------------

_I = r"(?<![\w'])[Ii]"
_IM = rf"{_I}(?:'m|\s+am)"
_WE = r"(?<![\w'])(?:[Ii]|[Ww]e)"
_ADV = (r"(?:(?:just|recently|finally|currently|now|still|also|really|actually|already|"
        r"totally|absolutely|truly|definitely|honestly|genuinely|seriously|do|sometimes|"
        r"usually|generally|mostly|kinda|kind\s+of|sort\s+of|so)\s+){0,2}")
_NAME = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_ALT = "|".join
_REL_RE = _ALT("[- ]?".join(re.escape(part) for part in r.split("-"))
               for r in sorted(_RELATIONS, key=len, reverse=True))
_MOD_RE = _ALT(re.escape(m) for m in sorted(_REL_MODIFIERS, key=len, reverse=True))
_ATTR_RE = _ALT(re.escape(a).replace(r"\ ", r"\s+").replace("'", "'?")
                for a in sorted(_ATTRIBUTES, key=len, reverse=True))
_CLAUSE_CUT = re.compile(r"[,;:!?()\"\[\]…]|\s[-–—]+\s?|[-–—]+\s|\.(?:\s|$)")
_WORD = re.compile(r"[\w'&+/.-]*[\w&+]")
_CORRECTION = re.compile(
    r"(?i)(?<![\w'])(?:actually|i\s+meant|i\s+mean|correction|no,?\s+it'?s|no,?\s+it\s+is|"
    r"scratch\s+that|let\s+me\s+correct|wait,?\s+no)"
    r"(?![\w'])")
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?:\s[A-Z][\w'.-]*){0,2}):\s+(?=\S)")
_NOT_SPEAKERS: Final = frozenset({
    "note", "notes", "reminder", "update", "todo", "to-do", "ps", "p.s", "fyi", "edit",
    "correction", "warning", "important", "question", "answer", "q", "a", "re", "subject",
    "summary", "tip", "hint", "step", "example", "context", "task", "goal", "user",
    "assistant", "system", "human", "ai", "bot",
})
_QUESTION_START = re.compile(
    r"^(?i:(?:(?:so|and|but|well|hey|oh|also|btw|ok|okay)[,\s]+)*)(?:(?i:what|who|whom|whose|"
    r"when|where|why|how|which)\b|(?i:do|does|did|is|are|was|were|can|could|should|would|will|"
    r"have|has|had|shall|may|might|am|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|"
    r"haven't|hasn't|can't|couldn't)\s+(?:(?i:i|you|he|she|it|we|they|there|this|that|the|"
    r"my|your|his|her|our|their|anyone|someone|everyone)\b|[A-Z][a-z]+\b))")


def _rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


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

    Examples:
        >>> e = Extracted(MemoryType.SEMANTIC, "fact", "The user lives in Rome",
        ...               {"concept": "user", "relations": (("livesIn", "Rome"),)},
        ...               supersedes="n1")
        >>> [(p.value, target) for p, target in e.edges("ep1")]
        [('derivesFrom', 'ep1'), ('supersedes', 'n1')]
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", MappingProxyType(dict(self.payload)))

    def edges(self, episode_id: str) -> list[tuple[Predicate, str]]:
        """All edges from the new memory, with :data:`EPISODE` resolved to ``episode_id``.

        Lineage comes last: ``supersedes`` or ``corrects`` (the replaced memory).
        """
        out = [(p, episode_id if t == EPISODE else t) for p, t in self.links]
        if self.supersedes is not None:
            out.append((Predicate.SUPERSEDES, self.supersedes))
        if self.corrects is not None:
            out.append((Predicate.CORRECTS, self.corrects))
        return list(dict.fromkeys(out))

    @property
    def replaces(self) -> str | None:
        """The memory this one replaces (superseded or corrected), if any."""
        return self.corrects or self.supersedes


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
    if pred == "prefers":
        return Topic(subject, f"prefers:{_head(obj)}", _norm(obj))
    return Topic(subject, f"{pred}:{_norm(obj)}", _norm(obj))


def _names_in(text: str) -> frozenset[str]:
    """Capitalised words that look like names, normalised."""
    return frozenset(w.casefold() for w in re.findall(r"\b[A-Z][\w'-]*[a-z][\w-]*", text)
                     if w.casefold().removesuffix("'s") not in _NON_NAMES)


class KnownFacts:
    """The per-namespace index the store keeps for extraction: topics → active memories.

    It is a view like the store's other indices: rebuilt from the active memories on
    open (:meth:`from_nodes`), then updated as memories are stored (:meth:`add`) or
    leave the active set (:meth:`remove`). It also remembers social memories by person
    and pending goals by the names they mention, so new memories can link to them.

    Examples:
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
        self._goals: dict[str, frozenset[str]] = {}

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
        if not node.is_active:
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
            self._people.setdefault(_norm(str(payload["entity"])), {})[node.id] = None
        if node.type is MemoryType.TASK and topic is not None:
            self._goals[node.id] = _names_in(str(payload.get("goal") or ""))

    def remove(self, node_id: str) -> None:
        """Forget a memory that left the active set (archived, superseded or erased)."""
        key = self._topic_of.pop(node_id, None)
        if key is not None and self._facts.get(key, ("",))[0] == node_id:
            del self._facts[key]
        for ids in self._people.values():
            ids.pop(node_id, None)
        self._goals.pop(node_id, None)

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


# --- speakers and subjects -----------------------------------------------------------------


def split_speaker(text: str) -> tuple[str | None, str]:
    """Split a LoCoMo-style ``"Speaker: text"`` turn into ``(speaker, text)``.

    Examples:
        >>> split_speaker("Caroline: I went to a support group.")
        ('Caroline', 'I went to a support group.')
        >>> split_speaker("Note: buy milk")
        (None, 'Note: buy milk')
    """
    m = _SPEAKER.match(text)
    if m is None or m.group(1).casefold().rstrip(".") in _NOT_SPEAKERS:
        return None, text
    return m.group(1), text[m.end():]


@dataclass(frozen=True, slots=True)
class _Subject:
    name: str  # as stored in payloads ("user" or the speaker)
    direct: bool  # talking to the agent (no named speaker)

    @property
    def key(self) -> str:
        return _norm(self.name)

    @property
    def display(self) -> str:
        return "The user" if self.direct else self.name

    @property
    def possessive(self) -> str:
        return "the user's" if self.direct else f"{self.name}'s"


def _third_person(text: str, who: _Subject) -> str:
    """Rewrite first-person words of a clause about ``who`` into the third person."""
    poss = who.possessive
    obj = "the user" if who.direct else who.name
    reps: list[tuple[str, str]] = [
        (r"\bI'm\b|\bI am\b", f"{obj} is"), (r"\bI've\b", f"{obj} has"),
        (r"\bI'll\b", f"{obj} will"), (r"\bI'd\b", f"{obj} would"), (r"\bI\b", obj),
        (r"\b[Mm]y\b", poss), (r"\b[Mm]ine\b", poss), (r"\b[Mm]yself\b", obj),
        (r"\b[Mm]e\b", obj),
    ]
    for pattern, rep in reps:
        text = re.sub(pattern, rep, text)
    return text


# --- phrases ------------------------------------------------------------------------------


def _clause(tail: str) -> str:
    m = _CLAUSE_CUT.search(tail)
    return tail[: m.start()] if m else tail


def _take(tail: str, max_words: int, stop: frozenset[str] = _NP_STOP, *,
          verb_first: bool = False) -> str | None:
    """The noun phrase opening ``tail``; ``None`` if empty, too long or unfinished.

    It ends at punctuation or a stop word, except that a lone gerund keeps its
    preposition ("going on road trips") and a short coordination is kept ("action and
    sci-fi movies"). Trailing "too", "itself", ... are dropped.
    """
    words = _WORD.findall(_clause(tail))
    out: list[str] = []
    i = 0
    while i < len(words):
        low = words[i].casefold()
        if low in stop:
            gerund = len(out) == 1 and low in _PREPS and (
                verb_first or out[0].casefold().endswith("ing"))
            rest = _until_stop(words[i + 1:], stop)
            coord = low in ("and", "or") and out and 0 < len(rest) <= 3 and \
                len(out) + 1 + len(rest) <= max_words
            if not (gerund or coord):
                break
        out.append(words[i])
        i += 1
    while out and out[-1].casefold() in _TRAILING:
        out.pop()
    if not out or len(out) > max_words or out[-1].casefold() in STOPWORDS:
        return None
    return " ".join(out)


def _until_stop(words: list[str], stop: frozenset[str]) -> list[str]:
    out = []
    for w in words:
        if w.casefold() in stop:
            break
        out.append(w)
    return out


_PLACE_CONNECTORS: Final = frozenset({"of", "de", "da", "del", "upon", "on"})


def _proper(tail: str, max_words: int = 5) -> str | None:
    """A capitalised span at the start of ``tail`` (optionally after "the")."""
    words = _WORD.findall(_clause(tail))
    if words and words[0] == "the":
        words = words[1:]
    out: list[str] = []
    for w in words:
        name = w[:1].isupper() and w.casefold() not in _NON_NAMES
        if name or (out and w in _PLACE_CONNECTORS and len(out) < max_words):
            out.append(w)
        else:
            break
    while out and not out[-1][:1].isupper():
        out.pop()
    return " ".join(out) if out and len(out) <= max_words else None


def _strip_article(text: str) -> str:
    low = text.casefold()
    for art in _ARTICLES:
        if low.startswith(art):
            return text[len(art):]
    return text


def _clean_object(obj: str | None, *, allow_article: bool = False) -> str | None:
    """``obj`` unless it points at the conversation or opens with a function word."""
    if obj is None:
        return None
    words = [w.strip("'") for w in obj.casefold().split()]
    if any(w in _OBJECT_BAD_WORDS or w.removesuffix("'s") in _OBJECT_BAD_WORDS
           for w in words[1 if allow_article and words[0] in ("a", "an", "the") else 0:]):
        return None
    first = words[0]
    if first in STOPWORDS and not (allow_article and first in ("a", "an", "the", "my")):
        return None
    return obj


def _blocked(sentence: str, start: int) -> bool:
    """The cue at ``start`` is hypothetical ("if I ...", "If ..., I'll ...") or inside a
    relative clause.

    A main-clause "I" follows the start of the sentence, punctuation or a clause opener
    ("and", "but", "so", "yeah", "I think", ...); after any other word ("something I
    love", "the job I enjoy") it is a relative clause and says little about the speaker.
    """
    head = sentence[:start].rstrip()
    words = re.findall(r"[\w']+", head.casefold())
    before = words[-3:]
    if any(w in _HYPOTHETICAL for w in before) or (words and words[0] in _CONDITIONALS):
        return True
    if not head or not (head[-1].isalnum() or head[-1] == "'"):
        return False
    if before[-1] == "that" and len(before) > 1:  # "I meant that I ...": a complement
        return before[-2] not in _CLAUSE_OPENERS
    return before[-1] not in _CLAUSE_OPENERS


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))


# --- dates and times -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _When:
    phrase: str
    spans: tuple[tuple[int, int], ...]
    deadline: datetime | None
    strict: bool  # clearly ahead ("tomorrow", "next week"), not "today" or "this week"



_WD = _ALT(_WEEKDAYS)
_MONTH_RE = (r"(?:January|February|March|April|May|June|July|August|September|October|"
             r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?")
_LEAD = r"(?:(?:on|by|before|until|till|for|this\s+coming|on\s+the)\s+)?"
_NUMBER_WORDS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4,
                        "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                        "a couple of": 2, "a few": 3}
_DATE_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("iso", re.compile(r"\b(?:(?:on|by|before|until)\s+)?(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("dmy", re.compile(rf"\b{_LEAD}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})"
                       rf"(?:,?\s+(\d{{4}}))?(?![\w:])")),
    ("mdy", re.compile(rf"\b{_LEAD}({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?"
                       rf"(?:,?\s+(\d{{4}}))?(?![\w:])")),
    ("after", _rx(r"\b(?:on\s+)?the\s+day\s+after\s+tomorrow(?:\s+(?:morning|afternoon|"
                  r"evening|night))?\b")),
    ("tomorrow", _rx(r"\b(?:by\s+)?tomorrow(?:\s+(?:morning|afternoon|evening|night))?\b")),
    ("today", _rx(r"\b(?:later\s+)?(?:by\s+)?(?:today|tonight|this\s+(?:morning|afternoon|"
                  r"evening))\b")),
    ("in", _rx(r"\bin\s+(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
               r"a\s+couple\s+of|a\s+few)\s+(day|week|month)s?\b")),
    ("weekend", _rx(r"\b(?:on\s+|over\s+)?(this|next)\s+weekend\b")),
    ("week", _rx(r"\b(?:by\s+)?(?:the\s+end\s+of\s+)?(this|next)\s+week\b")),
    ("month", _rx(r"\b(?:by\s+)?(?:the\s+end\s+of\s+)?(this|next)\s+month\b")),
    ("year", _rx(r"\b(?:by\s+)?next\s+year\b")),
    ("weekday", _rx(rf"\b{_LEAD}(?:(this|next)\s+)?(?<!last\s)(?<!past\s)(?<!every\s)"
                    rf"(?<!previous\s)({_WD})(?:\s+(?:morning|afternoon|evening|night))?\b")),
)
_TIME_RULE: Final = _rx(
    r"\b(?:(?:at|by|around|before|until|till|from)\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*"
    r"(am|pm|a\.m\.|p\.m\.)(?![\w])|(\d{1,2}):(\d{2})(?![\w:])|(noon|midday|midnight))")
_END_OF_DAY: Final = time(23, 59)


def _month(name: str) -> int:
    return _MONTHS[name.rstrip(".").casefold()]


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _month_day(m: int, d: int, year: str | None, today: date | None) -> date | None:
    if year:
        return _safe_date(int(year), m, d)
    if today is None:
        return None
    found = _safe_date(today.year, m, d)
    if found is not None and found >= today:
        return found
    return _safe_date(today.year + 1, m, d)


def _end_of_month(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _relative(kind: str, m: re.Match[str], today: date) -> date | None:
    monday = today - timedelta(days=today.weekday())
    if kind == "after":
        return today + timedelta(days=2)
    if kind == "tomorrow":
        return today + timedelta(days=1)
    if kind == "today":
        return today
    if kind == "in":
        n = _NUMBER_WORDS.get(" ".join(m.group(1).casefold().split())) or int(m.group(1))
        unit = m.group(2).casefold()
        days = n * {"day": 1, "week": 7}.get(unit, 0)
        if unit == "month":
            y, mo = divmod(today.month - 1 + n, 12)
            day = min(today.day, calendar.monthrange(today.year + y, mo + 1)[1])
            return date(today.year + y, mo + 1, day)
        return today + timedelta(days=days)
    if kind in ("weekend", "week"):
        shift = 7 if m.group(1).casefold() == "next" else 0
        return monday + timedelta(days=6 + shift)
    if kind == "month":
        if m.group(1).casefold() == "this":
            return _end_of_month(today.year, today.month)
        y, mo = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        return _end_of_month(y, mo)
    if kind == "year":
        return date(today.year + 1, 12, 31)
    return _weekday(m.group(1), m.group(2), today, monday)


def _weekday(which: str | None, name: str, today: date, monday: date) -> date:
    wd = _WEEKDAYS.index(name.casefold())
    mode = (which or "").casefold()
    if mode == "next":
        return monday + timedelta(days=7 + wd)
    if mode == "this" and wd >= today.weekday():
        return monday + timedelta(days=wd)
    return today + timedelta(days=(wd - today.weekday()) % 7 or 7)


def _date_of(kind: str, m: re.Match[str], today: date | None) -> date | None:
    if kind == "iso":
        return _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if kind == "dmy":
        return _month_day(_month(m.group(2)), int(m.group(1)), m.group(3), today)
    if kind == "mdy":
        return _month_day(_month(m.group(1)), int(m.group(2)), m.group(3), today)
    if today is None:
        return None
    try:
        return _relative(kind, m, today)
    except OverflowError:  # "tomorrow" on 31 December 9999: a day no calendar holds
        return None


def _time_of(m: re.Match[str]) -> time | None:
    if m.group(6):
        return time(12) if m.group(6).casefold() in ("noon", "midday") else time(23, 59)
    if m.group(4):
        h, mi = int(m.group(4)), int(m.group(5))
        return time(h, mi) if h < 24 and mi < 60 else None
    h, mi = int(m.group(1)), int(m.group(2) or 0)
    if not 1 <= h <= 12 or mi >= 60:
        return None
    pm = m.group(3).casefold().startswith("p")
    return time((h % 12) + (12 if pm else 0), mi)


def _find_when(text: str, anchor: datetime | None) -> _When | None:
    """The first future date and the first time expression of ``text``, resolved."""
    local = anchor if anchor is None or anchor.tzinfo is not None else anchor.replace(
        tzinfo=UTC)
    today = local.date() if local is not None else None
    found: tuple[int, str, re.Match[str]] | None = None
    for kind, rx in _DATE_RULES:
        m = rx.search(text)
        if m is not None and (found is None or m.start() < found[0]):
            found = (m.start(), kind, m)
    tm = _TIME_RULE.search(text)
    clock = _time_of(tm) if tm is not None else None
    if found is None and clock is None:
        return None
    spans = tuple(sorted(x.span() for x in (found[2] if found else None, tm) if x))
    phrase = " ".join(text[a:b].strip() for a, b in spans)
    if phrase.split()[0].casefold() not in _MONTHS and phrase.split()[0].casefold() not in \
            _WEEKDAYS:
        phrase = phrase[:1].casefold() + phrase[1:]
    loose = found is not None and (found[1] == "today" or (
        found[1] in ("week", "month") and found[2].group(1).casefold() == "this"))
    day = _date_of(found[1], found[2], today) if found else today
    if day is None:
        return _When(phrase, spans, None, not loose)
    tz = local.tzinfo if local is not None else UTC
    deadline = datetime.combine(day, clock or _END_OF_DAY, tzinfo=tz)
    try:
        if found is None and local is not None and deadline <= local:
            deadline += timedelta(days=1)  # a bare time already past today means tomorrow
        return _When(phrase, spans, utc(deadline), not loose)
    except OverflowError:  # past the end of the calendar (or before its start in UTC)
        return _When(phrase, spans, None, not loose)


def parse_deadline(text: str, anchor: datetime | None) -> datetime | None:
    """The deadline (aware UTC) of the first date/time expression of ``text``, or ``None``.

    Relative expressions need ``anchor`` (naive anchors are UTC; times are read in the
    anchor's timezone). See the module docstring for what is understood.

    Examples:
        >>> from datetime import datetime, UTC
        >>> now = datetime(2026, 5, 6, 10, 0, tzinfo=UTC)  # a Wednesday
        >>> parse_deadline("on Friday at 5:30pm", now).isoformat()
        '2026-05-08T17:30:00+00:00'
        >>> parse_deadline("next Friday", now).date(), parse_deadline("3 May", now).date()
        (datetime.date(2026, 5, 15), datetime.date(2027, 5, 3))
        >>> parse_deadline("2026-05-03", None).isoformat(), parse_deadline("soon", now)
        ('2026-05-03T23:59:00+00:00', None)
    """
    found = _find_when(normalise_apostrophes(text), anchor)
    return None if found is None else found.deadline


# --- candidates ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cand:
    pos: int
    type: MemoryType
    kind: str
    text: str
    payload: Mapping[str, Any]
    reason: str
    names: frozenset[str] = frozenset()
    related: tuple[str, ...] = ()  # people the new memory is friendOf
    requires: frozenset[str] = frozenset()  # names whose social memories a task requires


@dataclass(frozen=True, slots=True)
class _Ctx:
    who: _Subject
    anchor: datetime | None


_Rule = Callable[[str, _Ctx], list[_Cand]]


def _fact(pos: int, ctx: _Ctx, pred: str, obj: str, *, text: str, reason: str,
          kind: str = "fact", confidence: float = 0.9, generality: float = 0.5) -> _Cand:
    return _Cand(pos, MemoryType.SEMANTIC, kind, _third_person(text, ctx.who),
                 {"concept": ctx.who.name, "relations": ((pred, obj),),
                  "confidence": confidence, "generality": generality},
                 reason, names=_names_in(obj))


def _rule_place(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for rx, pred, verb in (
        (_rx(rf"{_I}\s+{_ADV}(?:live|(?:have\s+|'ve\s+)?moved|relocated)\s+(?:in|to)\s+"),
         "livesIn", "lives in"),
        (_rx(rf"{_IM}\s+{_ADV}living\s+in\s+"), "livesIn", "lives in"),
        (_rx(rf"{_IM}\s+(?:originally\s+)?from\s+"), "isFrom", "is from"),
    ):
        for m in rx.finditer(s):
            place = _proper(s[m.end():])
            if place and not _blocked(s, m.start()):
                out.append(_fact(m.start(), ctx, pred, place, text=f"{ctx.who.display} {verb} "
                                 f"{place}", reason=f"first-person fact '{m.group(0).strip()}'"))
    return out


_WORK = _rx(rf"{_I}\s+{_ADV}(?:work|'m\s+working|am\s+working)\s+(at|for|as)\s+")


def _rule_work(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _WORK.finditer(s):
        prep, tail = m.group(1).casefold(), s[m.end():]
        if _blocked(s, m.start()):
            continue
        if prep == "as":
            job = _take(tail, 4) if re.match(r"(?i)an?\s", tail) else None
            job = _clean_object(_strip_article(job)) if job else None
            if job:
                out.append(_fact(m.start(), ctx, "worksAs", job,
                                 text=f"{ctx.who.display} works as {_article(job)}",
                                 reason="first-person fact 'work as'"))
            continue
        org = _proper(tail) or _take(tail, 4) if re.match(r"(?i)(?:an?|the)\s", tail) \
            else _proper(tail)
        org = _clean_object(org, allow_article=True)
        if org:
            out.append(_fact(m.start(), ctx, "worksAt", org,
                             text=f"{ctx.who.display} works {prep} {org}",
                             reason=f"first-person fact 'work {prep}'"))
    return out


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].casefold() in 'aeiou' else 'a'} {noun}"


_IS_A = _rx(rf"{_IM}\s+{_ADV}(an?)\s+")
_FAN = _rx(rf"{_IM}\s+{_ADV}(?:a\s+)?(?:really\s+|huge\s+|big\s+|great\s+|massive\s+|"
           rf"total\s+|die-?hard\s+)?fan\s+of\s+")
_DIET = _rx(rf"{_IM}\s+{_ADV}(?:a\s+)?({_ALT(re.escape(d) for d in _DIETS)})\b")
_ALLERGIC = _rx(rf"{_IM}\s+{_ADV}(?:severely\s+|very\s+)?allergic\s+to\s+")


def _rule_identity(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _IS_A.finditer(s):
        tail = s[m.end():]
        noun = _take(tail, 3, _NP_STOP | {"of", "to", "and", "in"})
        after = tail[len(noun):].lstrip() if noun else ""
        if not noun or after.casefold().startswith(("of ", "to ")) or _blocked(
                s, m.start()):
            continue
        words = noun.casefold().split()
        if words[0] in _IS_A_BAD_HEADS or words[-1] in _IS_A_BAD_HEADS or \
                _clean_object(noun) is None or words[-1].endswith(("ly", "ing", "ed")):
            continue
        out.append(_fact(m.start(), ctx, "isA", noun,
                         text=f"{ctx.who.display} is {_article(noun)}",
                         reason="first-person fact 'I am a'", confidence=0.85))
    for m in _DIET.finditer(s):
        diet = m.group(1).casefold()
        out.append(_fact(m.start(), ctx, "diet", diet, text=f"{ctx.who.display} is {diet}",
                         reason="dietary constraint", kind="constraint", generality=0.8))
    for m in _ALLERGIC.finditer(s):
        what = _clean_object(_take(s[m.end():], 4))
        if what:
            out.append(_fact(m.start(), ctx, "allergicTo", what,
                             text=f"{ctx.who.display} is allergic to {what}",
                             reason="allergy constraint", kind="constraint", generality=0.8))
    return out


_HAVE = _rx(rf"{_I}\s+{_ADV}(?:have|'ve\s+got|have\s+got)\s+(an?|one|two|three|four|five|"
            rf"six|\d)\s+")
_NAMED = re.compile(rf"^\s*,?\s*(?i:named|called)\s+({_NAME})\b")


def _rule_have(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _HAVE.finditer(s):
        tail = s[m.end():]
        noun = _take(tail, 3, _NP_STOP | {"named", "called", "of", "to"})
        if not noun or _blocked(s, m.start()):
            continue
        head = noun.casefold().split()[-1]
        if head not in _POSSESSIONS:
            continue
        count = m.group(1).casefold()
        obj = noun if count in ("a", "an") else f"{count} {noun}"
        shown = _article(noun) if count in ("a", "an") else obj
        out.append(_fact(m.start(), ctx, "has", obj, text=f"{ctx.who.display} has {shown}",
                         reason="first-person fact 'I have'", confidence=0.85))
        named = _NAMED.match(tail[len(noun):])
        if named and named.group(1).casefold() not in _NON_NAMES:
            out.append(_social(m.start(), ctx, named.group(1), head, related_to=ctx.who.name,
                               text=f"{named.group(1)} is {ctx.who.possessive} {head}",
                               reason="'I have a <x> named <Name>'"))
    return out


_MY_ATTR = _rx(rf"(?<![\w'])my\s+({_ATTR_RE})\s+is\s+")
_MY_FAV = _rx(r"(?<![\w'])my\s+(?:all-time\s+|absolute\s+|very\s+)?favou?rite(?:\s+"
              r"([a-z]+(?:\s+[a-z]+)?))?\s+(?:is|has\s+to\s+be|would\s+be)\s+")
_IS_MY_FAV = re.compile(
    r"(?:^|[,;]\s*)((?:[\w'-]+\s+){0,4}[\w'-]+)\s+(?:is|are)\s+(?i:my)\s+"
    r"(?i:(?:all-time\s+|absolute\s+)?favou?rites?)(?:\s+([a-z]+(?:\s+[a-z]+)?))?(?=[\s.!,;]|$)")


def _rule_my(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _MY_ATTR.finditer(s):
        attr = " ".join(m.group(1).casefold().split())
        value = _take(s[m.end():], 6, frozenset({"and", "but", "so", "because", "which"}))
        if value and _clean_object(value, allow_article=True):
            out.append(_fact(m.start(), ctx, f"attr:{attr}", value,
                             text=f"{ctx.who.possessive[:1].upper()}{ctx.who.possessive[1:]} "
                             f"{attr} is {value}", reason=f"first-person attribute 'my {attr}'",
                             confidence=0.85))
    for m in _MY_FAV.finditer(s):
        cat = m.group(1)
        value = _take(s[m.end():], 6, frozenset({"and", "but", "so", "because", "which",
                                                 "since", "as"}))
        if not value or _clean_object(value, allow_article=True) is None:
            continue
        out.append(_pref(m.start(), ctx, cat, _strip_article(value)))
    for m in _IS_MY_FAV.finditer(s):
        value, cat = m.group(1), m.group(2)
        first = value.split()[0].casefold()
        if first in _OBJECT_BAD_WORDS or first in _NON_NAMES or \
                _clean_object(value) is None:
            continue
        out.append(_pref(m.start(), ctx, cat if cat and cat != "part" else None, value))
    return out


def _pref(pos: int, ctx: _Ctx, cat: str | None, value: str) -> _Cand:
    cap = f"{ctx.who.possessive[:1].upper()}{ctx.who.possessive[1:]}"
    if cat:
        cat = " ".join(cat.casefold().split())
        return _fact(pos, ctx, f"favourite:{cat}", value, text=f"{cap} favourite {cat} is {value}",
                     reason="favourite cue", kind="preference", confidence=0.85, generality=0.7)
    return _fact(pos, ctx, "favourite", value, text=f"{cap} favourite is {value}",
                 reason="favourite cue", kind="preference", confidence=0.8, generality=0.7)


_LIKE_VERBS: Final = {
    "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores",
    "prefer": "prefers", "hate": "hates", "dislike": "dislikes", "detest": "detests",
    "can't stand": "hates", "cannot stand": "hates", "don't like": "dislikes",
    "do not like": "dislikes", "don't enjoy": "dislikes", "do not enjoy": "dislikes",
    "don't really like": "dislikes", "really don't like": "dislikes",
}
_LIKE_RE = _ALT(re.escape(v).replace(r"\ ", r"\s+")
                for v in sorted(_LIKE_VERBS, key=len, reverse=True))
_LIKE = _rx(rf"{_I}\s+{_ADV}({_LIKE_RE})\s+")
_PREF_STOP: Final = _NP_STOP - {"more", "most", "really"} | {"over", "to", "than",
                                                                "instead", "rather"}


def _rule_like(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    for m in _LIKE.finditer(s):
        verb = _LIKE_VERBS[" ".join(m.group(1).casefold().split())]
        tail = s[m.end():]
        to_verb = re.match(r"(?i)to\s+(?=\w)", tail)
        if to_verb and tail[to_verb.end():].split(maxsplit=1)[0].casefold() in _TO_VERBS_BAD:
            continue
        stop = _PREF_STOP if verb == "prefers" else _NP_STOP
        obj = _take(tail[to_verb.end():] if to_verb else tail, 5, stop,
                    verb_first=to_verb is not None)
        obj = _clean_object(obj)
        if not obj or _blocked(s, m.start()):
            continue
        obj = f"to {obj}" if to_verb else obj
        shown = {"likes": "likes", "loves": "loves", "enjoys": "enjoys", "adores": "adores",
                 "prefers": "prefers", "hates": "hates", "dislikes": "does not like",
                 "detests": "detests"}[verb]
        out.append(_fact(m.start(), ctx, verb, obj, text=f"{ctx.who.display} {shown} {obj}",
                         reason=f"preference cue '{m.group(1).strip()}'", kind="preference",
                         generality=0.7))
    for m in _FAN.finditer(s):
        obj = _clean_object(_take(s[m.end():], 5))
        if obj and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "likes", obj,
                             text=f"{ctx.who.display} is a fan of {obj}",
                             reason="preference cue 'fan of'", kind="preference",
                             generality=0.7))
    return out


_IMPERATIVE = _rx(r"^(?:(?:and|also|please|so|oh|ok|okay|and\s+please)[,\s]+)*"
                  r"(don't|do\s+not|never|always|must\s+not|mustn't)\s+(?:ever\s+)?([a-z]+)")
_YOU_MUST = _rx(r"(?<![\w'])you\s+(?:must|should|shall)\s+(?:never|not|always)\s+([a-z]+)")
_AVOID = _rx(rf"{_I}\s+(?:never|don't|do\s+not|cannot|can't|won't)\s+"
             rf"({_ALT(_AVOID_VERBS)})\s+")


def _rule_constraint(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    if ctx.who.direct:
        for rx in (_IMPERATIVE, _YOU_MUST):
            m = rx.search(s)
            verb = m.group(m.lastindex or 1).casefold() if m else ""
            if m is None or verb in _PHATIC_IMPERATIVE_VERBS or verb.endswith("ed"):
                continue
            clause = s[m.start():].strip().rstrip(".!")
            clause = re.sub(r"(?i)^(?:(?:and|also|please|so|oh|ok|okay)[,\s]+)+", "", clause)
            if len(clause.split()) > 25:
                continue
            clause = clause[:1].upper() + clause[1:]
            out.append(_fact(m.start(), ctx, "constraint", clause,
                             text=f"Constraint from {ctx.who.display.replace('The', 'the')}: "
                             f"{_third_person(clause, ctx.who)}",
                             reason=f"imperative constraint '{m.group(1).strip()}'",
                             kind="constraint", generality=0.8))
            break
    for m in _AVOID.finditer(s):
        obj = _clean_object(_take(s[m.end():], 4))
        if obj and not _blocked(s, m.start()):
            verb = m.group(1).casefold()
            out.append(_fact(m.start(), ctx, "avoids", f"{verb} {obj}",
                             text=f"{ctx.who.display} does not {verb} {obj}",
                             reason="first-person constraint", kind="constraint", generality=0.8))
    return out


_REL_PHRASE = rf"(?:(?i:{_MOD_RE})[\s-]+)?(?i:{_REL_RE})"
_MY_REL_NAME = re.compile(rf"(?<![\w'])(?i:my)\s+({_REL_PHRASE})(?:\s+|,\s+(?={_NAME},))({_NAME})"
                          rf"\b(?!')")
_NAME_IS_MY = re.compile(rf"\b({_NAME})\s+(?:is|was)\s+(?i:my)\s+({_REL_PHRASE})\b(?!')")
_NAME_MY = re.compile(rf"\b({_NAME}),\s+(?i:my)\s+({_REL_PHRASE})\b(?!')")
_NAMES_REL_NAME = re.compile(rf"\b({_NAME})'s\s+({_REL_PHRASE}),?\s+({_NAME})\b(?!')")
_NAME_IS_NAMES = re.compile(rf"\b({_NAME})\s+is\s+({_NAME})'s\s+({_REL_PHRASE})\b(?!')")
_ATTR_VERBS: Final = {"livesIn": "lives in", "worksAt": "works at", "worksAs": "works as"}
_SOCIAL_ATTR = _rx(r"^\s*(?:,\s*who\s+|\s+)(lives\s+in|works\s+at|works\s+as\s+an?)\s+")


def _social(pos: int, ctx: _Ctx, entity: str, rel: str, *, related_to: str, text: str,
            reason: str, attributes: Mapping[str, str] | None = None) -> _Cand:
    attrs = {"related_to": related_to, **(attributes or {})}
    return _Cand(pos, MemoryType.SOCIAL, "social", text,
                 {"entity": entity, "relationship_type": rel, "attributes": attrs},
                 reason, names=frozenset({entity.casefold()}),
                 related=(related_to,) if related_to != ctx.who.name or not ctx.who.direct
                 else ())


def _ok_name(name: str) -> bool:
    return name.casefold() not in _NON_NAMES and name.casefold() not in _RELATIONS


def _rel(text: str) -> str:
    return " ".join(text.casefold().split())


def _rule_social(s: str, ctx: _Ctx) -> list[_Cand]:
    out = []
    who = ctx.who
    for m in _MY_REL_NAME.finditer(s):
        rel, name = _rel(m.group(1)), m.group(2)
        if not _ok_name(name):
            continue
        attrs = _social_attributes(s[m.end():])
        shown = "".join(f", who {_ATTR_VERBS[k]} {v}" for k, v in attrs.items())
        out.append(_social(m.start(), ctx, name, rel, related_to=who.name,
                           text=f"{name} is {who.possessive} {rel}{shown}",
                           reason=f"'my {rel} <Name>'", attributes=attrs))
    for rx in (_NAME_IS_MY, _NAME_MY):
        for m in rx.finditer(s):
            name, rel = m.group(1), _rel(m.group(2))
            if _ok_name(name):
                out.append(_social(m.start(), ctx, name, rel, related_to=who.name,
                                   text=f"{name} is {who.possessive} {rel}",
                                   reason=f"'<Name> is my {rel}'"))
    for m in _NAMES_REL_NAME.finditer(s):
        owner, rel, name = m.group(1), _rel(m.group(2)), m.group(3)
        if _ok_name(owner) and _ok_name(name):
            out.append(_social(m.start(), ctx, name, rel, related_to=owner,
                               text=f"{name} is {owner}'s {rel}",
                               reason=f"'<Name>'s {rel} <Name>'"))
    for m in _NAME_IS_NAMES.finditer(s):
        name, owner, rel = m.group(1), m.group(2), _rel(m.group(3))
        if _ok_name(owner) and _ok_name(name):
            out.append(_social(m.start(), ctx, name, rel, related_to=owner,
                               text=f"{name} is {owner}'s {rel}",
                               reason=f"'<Name> is <Name>'s {rel}'"))
    return out


def _social_attributes(tail: str) -> dict[str, str]:
    m = _SOCIAL_ATTR.match(tail)
    if m is None:
        return {}
    verb = " ".join(m.group(1).casefold().split())
    rest = tail[m.end():]
    if verb == "lives in":
        value = _proper(rest)
        return {"livesIn": value} if value else {}
    if verb == "works at":
        value = _proper(rest)
        return {"worksAt": value} if value else {}
    job = _clean_object(_take(rest, 3))
    return {"worksAs": job} if job else {}


# --- plans -----------------------------------------------------------------------------------

_REMIND = _rx(r"(?:^|[,;]\s*|\b(?:and|so|please|also)\s+)(?:(?:can|could|would|will)\s+you\s+"
              r"(?:please\s+)?|please\s+)?(?:remind\s+me\s+to|don't\s+let\s+me\s+forget\s+to|"
              r"do\s+not\s+let\s+me\s+forget\s+to|i\s+need\s+to\s+remember\s+to|"
              r"make\s+sure\s+i\s+remember\s+to)\s+")
_PLAN_CUES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (_rx(rf"{_WE}\s+(?:will|shall)\s+(?!not\b|never\b)|{_WE}'ll\s+(?!not\b|never\b)"), "will"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?:going\s+to|gonna)\s+(?!not\b|never\b)"),
     "is going to"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?:planning|intending)\s+(?:to|on)\s+"),
     "plans to"),
    (_rx(rf"{_WE}\s+{_ADV}(?:need|have|plan|intend|'ve\s+got|have\s+got)\s+to\s+"),
     "needs to"),
    (_rx(rf"{_WE}\s+(?:have|'ve\s+got|have\s+got)\s+(?:big\s+|some\s+)?plans\s+(?=for\s|to\s)"),
     "has plans"),
)
_PROGRESSIVE = _rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+([a-z]+ing)\s+")
_HAVE_EVENT = _rx(rf"{_WE}\s+(?:have|'ve\s+got|have\s+got)\s+(?=an?\s)")
_GOAL_CUT = re.compile(r"(?i)\s+(?:but|because|since|so\s+that|so|which|though|although|"
                       r"and\s+(?:i|we|it|that|thought|think|hope|then|so)|if)\b.*$")


def _rule_task(s: str, ctx: _Ctx) -> list[_Cand]:
    remind = _REMIND.search(s)
    when = _find_when(s, ctx.anchor)
    if remind is not None:
        return _task(s, remind.span(), "wants a reminder to", when, ctx,
                     reason="reminder request")
    if when is None or (when.deadline is not None and ctx.anchor is not None
                        and when.deadline < utc(ctx.anchor)) or _is_question(s):
        return []
    for rx, verb in _PLAN_CUES:
        m = rx.search(s)
        if m is not None and not _blocked(s, m.start()):
            return _task(s, m.span(), verb, when, ctx, reason=f"plan cue '{m.group(0).strip()}'")
    if not when.strict:
        return []
    m = _PROGRESSIVE.search(s)
    if m is not None and m.group(1).casefold() not in _PROGRESSIVE_BAD and not \
            _blocked(s, m.start()):
        return _task(s, (m.start(), m.start(1)), "is", when, ctx,
                     reason=f"progressive plan '{m.group(0).strip()}'")
    m = _HAVE_EVENT.search(s)
    if m is not None and not _blocked(s, m.start()):
        return _task(s, m.span(), "has", when, ctx, reason="'I have a <event>' with a date")
    return []


def _task(s: str, span: tuple[int, int], verb: str, when: _When | None, ctx: _Ctx, *,
          reason: str) -> list[_Cand]:
    start, end = span
    masked = list(s)
    for a, b in when.spans if when else ():
        masked[a:b] = " " * (b - a)
    tail = _CLAUSE_CUT.split("".join(masked)[end:], maxsplit=1)[0]
    goal = " ".join(_GOAL_CUT.sub("", tail).split()).strip(" .,!")
    goal = re.sub(r"(?i)\s+(?:too|as\s+well|coming\s+up|soon|then|again|either)$", "", goal)
    words = goal.casefold().split()
    if not words or len(words) > 14 or words[0] in ("not", "never", "be", "n't") or any(
            w.strip("'.,") in _GOAL_BAD_WORDS for w in words):
        return []
    if verb == "has" and (len(words) < 2 or words[1] in _EVENT_BAD_HEADS):
        return []
    if verb == "is going to" and re.match(r"(?i)(?:a|an|the|my)\s", goal):
        goal = f"go to {goal}"  # "I'm going to a concert"
    deadline = when.deadline if when else None
    due = f" (due {deadline:%Y-%m-%d %H:%M} UTC)" if deadline else ""
    phrase = f" {when.phrase}" if when else ""
    text = f"{ctx.who.display} {verb} {_third_person(goal, ctx.who)}{phrase}{due}"
    text = text.replace(" is going to go to ", " is going to ")
    if verb == "has plans":
        goal = re.sub(r"(?i)^(?:for|to)\s+", "", goal)
    return [_Cand(start, MemoryType.TASK, "task", " ".join(text.split()),
                  {"goal": goal, "status": TaskStatus.PENDING.value, "deadline": deadline},
                  reason, requires=_names_in(goal))]


_RULES: Final[tuple[_Rule, ...]] = (
    _rule_place, _rule_work, _rule_identity, _rule_have, _rule_my, _rule_like,
    _rule_constraint, _rule_social,
)


# --- the entry point --------------------------------------------------------------------------


def _subject(role: str, speaker: str | None, text: str) -> tuple[_Subject | None, str]:
    prefixed, body = split_speaker(text)
    if speaker is not None:
        if prefixed is not None and prefixed.casefold() == speaker.casefold():
            text = body
        return _Subject(speaker, direct=False), text
    if prefixed is not None:
        return _Subject(prefixed, direct=False), body
    if role.casefold() in ("user", "human"):
        return _Subject("user", direct=True), text
    return None, text


def _correction(text: str, signals: TextSignals | None) -> bool:
    if _CORRECTION.search(text):
        return True
    return signals is not None and signals.correction and any(
        c.startswith("correction:") and c != "correction:sorry" for c in signals.cues)


def _candidates(text: str, ctx: _Ctx) -> list[_Cand]:
    out: list[_Cand] = []
    offset = 0
    for sent in split_sentences(text):
        offset = max(text.find(sent, offset), offset)
        found = _rule_task(sent, ctx)
        if not _is_question(sent):
            for rule in _RULES:
                found.extend(rule(sent, ctx))
        out.extend(replace(c, pos=offset + c.pos) for c in found)
    return sorted(out, key=lambda c: c.pos)


def _links(c: _Cand, known: KnownFacts) -> tuple[tuple[Predicate, str], ...]:
    links: list[tuple[Predicate, str]] = [(Predicate.DERIVES_FROM, EPISODE)]
    for person in c.related:
        links += [(Predicate.FRIEND_OF, nid) for nid in known.people(person)]
    if c.type is MemoryType.TASK:
        for name in sorted(c.requires):
            links += [(Predicate.REQUIRES, nid) for nid in known.people(name)]
    else:
        links += [(Predicate.ATTACHES_TO_GOAL, t) for t in known.goals_mentioning(c.names)]
    return tuple(dict.fromkeys(links))


def extract(
    role: str,
    text: str,
    signals: TextSignals | None,
    *,
    speaker: str | None,
    known: KnownFacts,
    anchor: datetime | None = None,
) -> list[Extracted]:
    """Project one conversational turn onto typed memories with fixed cue rules.

    Args:
        role: ``user``, ``assistant``, ... (first person is extracted only for a named
            speaker or the user).
        text: the turn; a leading ``"Speaker: "`` names the speaker when ``speaker`` is
            ``None`` (and is stripped when it equals ``speaker``).
        signals: the turn's :class:`~mars_core.nlp.TextSignals`, if already computed;
            only its correction cue is used (the rules parse the text themselves).
        speaker: who "I" is (LoCoMo speaker name), or ``None``.
        known: the namespace's :class:`KnownFacts`, for supersession and links.
        anchor: "now" for relative dates (naive = UTC); without it, relative dates
            give tasks without a deadline.

    Returns:
        The memories to store, in text order; at most one per topic (the last mention
        wins), none that repeats an active memory's value.
    """
    text = normalise_apostrophes(text)
    who, body = _subject(role, speaker, text)
    if who is None or not body.strip():
        return []
    corrected = _correction(body, signals)
    chosen: dict[object, tuple[_Cand, Topic | None]] = {}
    for i, cand in enumerate(_candidates(body, _Ctx(who, anchor))):
        topic = topic_of(cand.type, cand.payload)
        chosen.pop(topic.key if topic else i, None)
        chosen[topic.key if topic else i] = (cand, topic)
    out = []
    for cand, topic in sorted(chosen.values(), key=lambda ct: ct[0].pos):
        entry = known.entry(topic) if topic else None
        if entry is not None and topic is not None and entry[1] == topic.value:
            continue  # already known, unchanged
        old = entry[0] if entry else None
        out.append(Extracted(
            type=cand.type, kind=cand.kind, text=cand.text, payload=cand.payload,
            links=_links(cand, known), supersedes=None if corrected else old,
            corrects=old if corrected else None, topic=topic,
            reason=cand.reason + (f"; {'corrects' if corrected else 'supersedes'} {old}"
                                  if old else "")))
    return out

