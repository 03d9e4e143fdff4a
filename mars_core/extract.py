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

* *facts* (semantic): ``I/we live in / moved to <Place>``, ``I'm/we're living|based|
  settled in <Place>`` → ``livesIn`` (not a childhood move: "when I was a kid");
  ``I'm from <Place>`` → ``isFrom``; ``I work at|for <Org>`` → ``worksAt``; ``I work as a
  <job> (at <Org>)``, ``I'm a <job> at <Org>`` → ``worksAs`` (and ``worksAt``); ``I am
  a/an <noun>`` → ``isA`` (not "a bit", "a part of", ...); ``I/we have|adopted|rescued a
  <dog|car|greyhound|...>`` → ``has`` (a fixed list of possessions and pet breeds;
  "named|called <Name>" also makes a social memory, a breed stored under its kind:
  "Biscuit is the user's dog, a rescue greyhound"); ``my <name|birthday|email|...> is
  <value>`` → ``attr:<name>``.
* *job changes* (semantic): ``I started (a new job) at <Org>``, ``I got|landed|took a job
  at <Org>``, ``I accepted an offer from <Org>``, ``I was hired by <Org>``, ``I joined
  <Org>`` only with a word of work in the sentence ("I left Tidewave and joined ..."),
  ``... as a <job>`` → ``worksAt`` (and ``worksAs``); ``I got promoted to <job>`` →
  ``worksAs``; ``I quit <Org>``, ``I left my job at <Org>``, or ``I left <Org>`` with a
  word of a career move → "no longer works at", which ends that ``worksAt``.
* *preferences* (semantic): ``I like/love/enjoy/prefer/hate/dislike/don't like <X>``,
  ``I'm a (big) fan of <X>``, ``I'm (really) into <X>``, ``my favourite <cat> is <X>``,
  ``<X> is my favourite (<cat>)``; a liking that ended: ``I used to love <X>``, ``I no
  longer like <X>``, ``I'm not into <X> anymore``, ``I've gone off <X>``. Objects that
  point at the conversation ("I love *your* painting", "I love *that*") are reactions,
  not preferences, and are dropped.
* *constraints* (semantic): imperatives addressed to the agent (only when no speaker is
  named): ``Don't / Do not / Never / Always / Must not ...``; and, for any speaker,
  ``I'm allergic to <X>``, ``I'm|I've been|I went|I've gone vegan|vegetarian|...``, ``I'm
  no longer vegetarian``, ``I don't|never eat|drink|... <X>``, ``I gave up|stopped|quit|
  no longer <eating ...> <X>``; with "anymore", "no longer", "these days" or a verb of
  giving up, the habit also ends a liking of <X> or a favourite that is <X>.
* *people* (social): ``my [best] <sister|friend|colleague|dog|...> <Name>``,
  ``<Name> is my <relation>``, ``<Name>, my <relation>``, ``<Name>'s <relation> <Name2>``,
  ``<Name2> is <Name>'s <relation>``.
* *plans* (task, status pending): ``I/we will | 'll | am going to | 'm gonna | need to |
  have to | plan to | have plans for ...`` with a future date or time in the sentence
  (not after "if ..."); a present progressive ``I'm <verb>ing ...`` or ``I have a <event>``
  only with a clearly future one (not "today", "this week"); ``remind me to ...`` and
  ``don't let me forget to ...`` also without one. Goals addressed to the listener
  ("I'll *let you know* tomorrow") are dropped. A task is also indexed by its goal, so
  a rescheduled reminder replaces the old one; with "instead", "make it", ... or a
  correction cue, a plan whose goal holds every word of the new one is replaced too
  ("remind me to call the landlord on Monday instead").
* *renamed pets* (social): ``we renamed the dog (to) <New>``, ``we renamed <Old> (to)
  <New>``, ``we changed the dog's name to <New>``, ``the dog's new name is <New>``,
  ``<Old>|the dog goes by|is now called <New>`` → "<New> is the user's dog (renamed from
  <Old>)", which replaces the old name's social memory (named, or the speaker's only
  dog; two dogs and no name: nothing is replaced) and a ``<dog>'s name`` attribute.
* *cancelled plans* (task, status cancelled): ``the <x> is off|cancelled|called off``
  (``off`` only for a plan-like <x>: trip, dinner, party, ...; "the heating is off" is
  not), ``I/we/<Name> cancelled|called off <x>``, ``we're not going to <x> anymore|after
  all``, ``we won't go to <x>``, and to the assistant ``(can you) cancel|scrap|never mind
  the <x>``. They end the pending task that shares the most words with <x> (and the name
  of who cancelled it), in its words: "The user is no longer going to Kyoto in April
  (cancelled; was due ...)"; with no such task, or a tie, nothing is extracted.

**Dates** (:func:`parse_deadline`), relative to an anchor: today, tonight, this
morning/afternoon/evening, tomorrow, the day after tomorrow, ``[on|this|next] <weekday>``,
this/next week, this/next weekend, this/next month, next year, ``in N days|weeks|months``,
``in|by <Month>`` (its last day), ``May 3``, ``3 May``, ``3rd of May``, with or without a
year, ``2026-05-03``; times
``5pm``, ``5:30 pm``, ``17:00``, ``noon``, ``midnight``. A date without a time is due at
23:59 of that day in the anchor's timezone; a bare weekday is the next one after today;
``next <weekday>`` is that day in the next Monday-based week; "next week" ends on its
Sunday; a month-day without a year is the next such day on or after the anchor.

**Topics and lineage.** Each semantic or social memory has a *topic* ``(subject,
predicate)`` and a value (:func:`topic_of`). :class:`KnownFacts` maps topics of active
memories to their node; a new memory on a known topic with a different value replaces
it (``supersedes``, or ``corrects`` when the turn has a correction cue such as
"actually", "I meant", "no, it's"), and one with the same value is not extracted again.
Single-valued predicates (livesIn, isFrom, worksAt, worksAs, attr:*, favourite:<cat>,
and a diet among vegan, vegetarian and pescatarian) are keyed by predicate;
likes/dislikes and likings that ended by their object (so "I hate sushi" and "I used to
love sushi" replace "I love sushi"); ``prefers`` by the head noun of its object ("aisle
seats" replaces "window seats"); everything else by its object (duplicates only). A
change whose topic differs from what it ends — a renamed pet, a cancelled plan, a job
left, a habit given up — names what it ends (:attr:`Extracted.also_replaces`), resolved
against :class:`KnownFacts`: a change of something never said is not extracted.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel

from mars_core.io_checks import MAX_DATE, MIN_DATE
from mars_core.model import MemoryNode, MemoryType, Predicate, TaskStatus, utc
from mars_core.nlp.lexicons import STOPWORDS
from mars_core.nlp.rules import normalise_apostrophes, split_sentences
from mars_core.nlp.signals import TextSignals

__all__ = [
    "EPISODE",
    "NON_NAMES",
    "RELATION_WORDS",
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
RELATION_WORDS: Final = frozenset(_RELATIONS)
"""The words the extractor reads as a relationship ("my sister Ana", "our dog Pepper")."""
NON_NAMES: Final = _NON_NAMES
"""Capitalised words that are never a person's name (pronouns, question words, weekdays,
months, greetings)."""
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
_BREEDS: Final = MappingProxyType({
    **dict.fromkeys(("greyhound", "whippet", "labrador", "lab", "retriever", "spaniel",
                     "terrier", "poodle", "beagle", "collie", "dachshund", "pug", "husky",
                     "bulldog", "shepherd", "corgi", "chihuahua", "boxer", "rottweiler",
                     "lurcher", "schnauzer", "doodle", "labradoodle", "cockapoo", "mutt",
                     "pup"), "dog"),
    **dict.fromkeys(("tabby", "siamese", "moggy", "persian", "ragdoll", "sphynx"), "cat"),
})
"""Dog and cat words that name the animal ("a rescue greyhound called Biscuit")."""
_PET_KINDS: Final = MappingProxyType({
    "dog": frozenset({"dog", "puppy", "pup"}), "cat": frozenset({"cat", "kitten"}),
})
"""The relationship words a pet of each kind may be stored under."""
_NOT_JOBS: Final = frozenset({
    "regular", "member", "customer", "client", "guest", "patient", "visitor", "fan",
    "subscriber", "resident", "tourist", "beginner", "newbie", "volunteer", "student",
    "believer", "fixture", "local",
})
"""Heads of "I'm a <noun> at <Place>" that are not a job held there."""
_EATING_PATTERNS: Final = frozenset({"vegan", "vegetarian", "pescatarian"})
"""Diets that exclude each other: a new one replaces the old one."""
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


class KnownFacts:
    """The per-namespace index the store keeps for extraction: topics → active memories.

    It is a view like the store's other indices: rebuilt from the active memories on
    open (:meth:`from_nodes`), then updated as memories are stored (:meth:`add`) or
    leave the active set (:meth:`remove`). It also remembers social memories by person
    and by whose <relation> they are (:meth:`related`: the user's dog), and pending
    goals by the names and words they mention (:meth:`plan_matching`), so new memories
    can link to them, rename them or call them off.

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
        self._relations: dict[tuple[str, str], dict[str, str]] = {}
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
            entity = str(payload["entity"])
            self._people.setdefault(_norm(entity), {})[node.id] = None
            attrs = {str(k): str(v) for k, v in dict(payload.get("attributes") or {}).items()}
            owner = _norm(attrs.pop("related_to", ""))
            rel = _norm(str(payload.get("relationship_type") or ""))
            if owner and rel:
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
        for ids in self._people.values():
            ids.pop(node_id, None)
        for members in self._relations.values():
            members.pop(node_id, None)
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


_CLAUSE_CHARS: Final = 400
"""How far a phrase is looked for after its cue (every phrase taken is a few words), so
that a long sentence with many cues costs linear time, not quadratic."""


def _clause(tail: str) -> str:
    m = _CLAUSE_CUT.search(tail, 0, _CLAUSE_CHARS)
    return tail[: m.start()] if m else tail[:_CLAUSE_CHARS]


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


_FIRST_WORD = re.compile(r"[^\w']*([\w']+)")


def _blocked(sentence: str, start: int) -> bool:
    """The cue at ``start`` is hypothetical ("if I ...", "If ..., I'll ...") or inside a
    relative clause.

    A main-clause "I" follows the start of the sentence, punctuation or a clause opener
    ("and", "but", "so", "yeah", "I think", ...); after any other word ("something I
    love", "the job I enjoy") it is a relative clause and says little about the speaker.
    """
    head = sentence[max(0, start - _CLAUSE_CHARS):start].rstrip()  # bounded: see _clause
    before = re.findall(r"[\w']+", head.casefold())[-3:]
    first = _FIRST_WORD.match(sentence, 0, start)
    if any(w in _HYPOTHETICAL for w in before) or (
            first is not None and first.group(1).casefold() in _CONDITIONALS):
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
_DOT = r"\.?"
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
    ("in_month", re.compile(rf"\b(?:in|by|until|before|(?:at\s+)?the\s+end\s+of)\s+"
                            rf"(?:(?:early|late|mid)[\s-]+)?({_MONTH_RE.removesuffix(_DOT)})"
                            rf"(?:\s+(\d{{4}}))?(?![\w:])(?!\s+\d)")),
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
    if kind == "in_month":  # "in April": by the end of the next April (this one if now)
        month = _month(m.group(1))
        year = today.year if month >= today.month else today.year + 1
        return _end_of_month(year, month)
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
    if kind == "in_month" and m.group(2):
        return _end_of_month(int(m.group(2)), _month(m.group(1)))
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
        found[1] in ("week", "month") and found[2].group(1).casefold() == "this") or (
        found[1] == "in_month" and today is not None and not found[2].group(2)
        and _month(found[2].group(1)) == today.month))
    day = _date_of(found[1], found[2], today) if found else today
    if day is None:
        return _When(phrase, spans, None, not loose)
    tz = local.tzinfo if local is not None else UTC
    deadline = datetime.combine(day, clock or _END_OF_DAY, tzinfo=tz)
    try:
        if found is None and local is not None and deadline <= local:
            deadline += timedelta(days=1)  # a bare time already past today means tomorrow
        at = utc(deadline)
    except OverflowError:  # past the end of the calendar (or before its start in UTC)
        return _When(phrase, spans, None, not loose)
    # a date no stored memory can keep (io_checks): the plan is kept, without it
    return _When(phrase, spans, at if MIN_DATE <= at < MAX_DATE else None, not loose)


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
class _End:
    """An active memory a candidate makes outdated although its topic differs.

    ``fact``: the subject's fact on predicate ``key`` (a ``key`` ending in ":" is a
    prefix) whose value is ``value`` (any value for ``None``); ``person``: the social
    memory about the subject's <someone> named ``key``; ``relation``: the subject's only
    ``key`` (their only dog); ``plan``: the pending task sharing most of ``words``.
    """

    kind: Literal["fact", "person", "relation", "plan"]
    key: str = ""
    value: str | None = None
    words: frozenset[str] = frozenset()


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
    ends: tuple[_End, ...] = ()  # what it makes outdated besides its own topic
    needs_end: bool = False  # kept only when one of ``ends`` is found
    change: Literal["", "rename", "cancel"] = ""  # completed from what it ends


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


_PLACE_RULES: Final = (
    (_rx(rf"{_WE}\s+{_ADV}(?:live|(?:have\s+|'ve\s+)?(?:moved|relocated))\s+(?:in|to)\s+"),
     "livesIn", "lives in"),
    (_rx(rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+{_ADV}(?:living|based|settled)\s+in\s+"),
     "livesIn", "lives in"),
    (_rx(rf"{_IM}\s+(?:originally\s+)?from\s+"), "isFrom", "is from"),
)
_CHILDHOOD = _rx(r"\b(?:when\s+(?:I|we)\s+(?:was|were)\s+(?:an?\s+)?(?:kids?|child|children|little|"
                 r"young|small|teenagers?|teens?|babies|baby|\d+)|as\s+(?:an?\s+)?(?:kids?|child|"
                 r"children|teenagers?|teens?|baby)|growing\s+up)\b")


def _rule_place(s: str, ctx: _Ctx) -> list[_Cand]:
    """``I/we live in|moved to|relocated to <Place>``, ``I'm/we're living|based|settled
    in <Place>`` (not a childhood move: "when I was a kid"), ``I'm from <Place>``."""
    out = []
    for rx, pred, verb in _PLACE_RULES:
        for m in rx.finditer(s):
            place = _proper(s[m.end():])
            if not place or _blocked(s, m.start()) or (
                    pred == "livesIn" and _CHILDHOOD.search(_clause(s[m.end():]))):
                continue
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
            phrase = _take(tail, 4) if re.match(r"(?i)an?\s", tail) else None
            job = _clean_object(_strip_article(phrase)) if phrase else None
            if job and phrase:
                out += _job(m.start(), ctx, job, tail[len(phrase):], "work as")
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


_AT_ORG = re.compile(r"^\s*(?i:at|for|with)\s+")
_BY_ORG = re.compile(r"^\s*(?i:at|for|with|by|from)\s+")


def _employer(rest: str, preps: re.Pattern[str] = _AT_ORG) -> str | None:
    """``at|for|with <Org>`` opening ``rest``: the organisation, if it is a name."""
    m = preps.match(rest)
    return _proper(rest[m.end():]) if m else None


def _job(pos: int, ctx: _Ctx, job: str, rest: str, cue: str) -> list[_Cand]:
    """``worksAs <job>``, and ``worksAt <Org>`` when ``rest`` opens with "at <Org>"."""
    out = [_fact(pos, ctx, "worksAs", job, text=f"{ctx.who.display} works as {_article(job)}",
                 reason=f"first-person fact '{cue}'")]
    org = _employer(rest)
    if org:
        out.append(_fact(pos, ctx, "worksAt", org, text=f"{ctx.who.display} works at {org}",
                         reason=f"first-person fact '{cue} ... at'"))
    return out


_IS_A = _rx(rf"{_IM}\s+{_ADV}(an?)\s+")
_FAN = _rx(rf"{_IM}\s+{_ADV}(?:a\s+)?(?:really\s+|huge\s+|big\s+|great\s+|massive\s+|"
           rf"total\s+|die-?hard\s+)?fan\s+of\s+")
_DIET_RE = _ALT(re.escape(d) for d in _DIETS)
_DIET = _rx(rf"(?:{_IM}|{_I}(?:'ve|\s+have)\s+(?:been|gone|become)|{_I}\s+(?:went|became))\s+"
            rf"{_ADV}(?:fully\s+|completely\s+|strictly\s+|totally\s+|100%\s+)?(?:a\s+)?"
            rf"({_DIET_RE})\b")
_NO_DIET = _rx(rf"{_IM}\s+(?:not\s+(?:a\s+)?({_DIET_RE})\s+(?:anymore|any\s+more)|no\s+longer\s+"
               rf"(?:a\s+)?({_DIET_RE}))\b")
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
        if words[-1] not in _NOT_JOBS and _employer(after):  # "I'm a nurse at St Mary's"
            out += _job(m.start(), ctx, noun, after, "I am a ... at")
            continue
        out.append(_fact(m.start(), ctx, "isA", noun,
                         text=f"{ctx.who.display} is {_article(noun)}",
                         reason="first-person fact 'I am a'", confidence=0.85))
    for m in _DIET.finditer(s):
        diet = m.group(1).casefold()
        if not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "diet", diet, text=f"{ctx.who.display} is {diet}",
                             reason="dietary constraint", kind="constraint", generality=0.8))
    for m in _NO_DIET.finditer(s):
        diet = (m.group(1) or m.group(2)).casefold()
        if not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "diet", f"no longer {diet}",
                             text=f"{ctx.who.display} is no longer {diet}",
                             reason="dietary change", kind="constraint", generality=0.8))
    for m in _ALLERGIC.finditer(s):
        what = _clean_object(_take(s[m.end():], 4))
        if what:
            out.append(_fact(m.start(), ctx, "allergicTo", what,
                             text=f"{ctx.who.display} is allergic to {what}",
                             reason="allergy constraint", kind="constraint", generality=0.8))
    return out


_HAVE = _rx(rf"{_WE}\s+{_ADV}(?:have|'ve\s+got|have\s+got|(?:'ve\s+|have\s+)?(?:adopted|"
            rf"rescued))\s+(an?|one|two|three|four|five|"
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
        if head not in _POSSESSIONS and head not in _BREEDS:
            continue
        count = m.group(1).casefold()
        obj = noun if count in ("a", "an") else f"{count} {noun}"
        shown = _article(noun) if count in ("a", "an") else obj
        out.append(_fact(m.start(), ctx, "has", obj, text=f"{ctx.who.display} has {shown}",
                         reason="first-person fact 'I have'", confidence=0.85))
        named = _NAMED.match(tail[len(noun):])
        if named and named.group(1).casefold() not in _NON_NAMES:
            kind = _BREEDS.get(head, head)
            breed = {"kind": noun} if noun.casefold() != kind else {}
            also = f", {_article(noun)}" if breed else ""
            out.append(_social(m.start(), ctx, named.group(1), kind, related_to=ctx.who.name,
                               text=f"{named.group(1)} is {ctx.who.possessive} {kind}{also}",
                               reason="'I have a <x> named <Name>'", attributes=breed))
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
            changed = _CHANGE_CUE.search(_clause(s[m.end():])) is not None
            out.append(replace(_fact(
                m.start(), ctx, "avoids", f"{verb} {obj}",
                text=f"{ctx.who.display} does not {verb} {obj}{' anymore' if changed else ''}",
                reason="first-person constraint", kind="constraint", generality=0.8),
                ends=_pref_ends(obj) if changed else ()))
    return out


# --- changes: what a turn says is no longer so ----------------------------------------------

_CHANGE_CUE = _rx(r"\b(?:anymore|any\s+more|no\s+longer|these\s+days|nowadays)\b")
_INTO = _rx(rf"{_IM}\s+{_ADV}(?:(?:really|totally|super|very|so|big|massively)\s+)?into\s+")
_NOT_INTO = _rx(rf"{_IM}\s+(?:not\s+(?:really\s+|so\s+)?into\s+(?=[^.!?;]{{0,120}}\b"
                rf"(?:anymore|any\s+more)\b)|no\s+longer\s+into\s+)|{_I}(?:'ve|\s+have)\s+gone\s+"
                rf"off\s+")
_USED_TO = _rx(rf"{_I}\s+used\s+to\s+(love|like|enjoy|adore)\s+")
_NO_LONGER_LIKE = _rx(rf"{_I}\s+no\s+longer\s+(?:really\s+)?(like|love|enjoy)\s+")
_HABIT_VERBS: Final = MappingProxyType({
    "eat": "eats", "drink": "drinks", "smoke": "smokes", "use": "uses", "take": "takes",
    "buy": "buys", "watch": "watches", "play": "plays", "wear": "wears", "drive": "drives",
})
_HABIT = _ALT([*_HABIT_VERBS, *(v[:-1] + "ing" if v.endswith("e") else v + "ing"
                                for v in _HABIT_VERBS)])
_GAVE_UP = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(?:gave\s+up|given\s+up|stopped|quit|no\s+longer)"
               rf"\s+(?!(?:like|love|enjoy|adore|into|work|working)\b)(?:({_HABIT})\b\s*)?")


def _pref_ends(obj: str) -> tuple[_End, ...]:
    """What "I don't drink <obj> anymore" ends: a liking of it, a favourite that is it."""
    key = _norm(obj)
    return (_End("fact", f"attitude:{key}", "+"), _End("fact", "favourite", key),
            _End("fact", "favourite:", key))


def _base_verb(word: str) -> str:
    low = word.casefold()
    if low in _HABIT_VERBS:
        return low
    stem = low.removesuffix("ing")
    return stem if stem in _HABIT_VERBS else stem + "e"


def _rule_pref_change(s: str, ctx: _Ctx) -> list[_Cand]:
    """Preferences said to have changed: ``I'm into X`` (a liking), ``I used to love X``,
    ``I no longer like X``, ``I'm not into X anymore``, ``I've gone off X`` (a liking
    that ended), ``I gave up / stopped / quit / no longer <eating ...> X`` (a habit that
    ended, which also ends a liking of X)."""
    out = []
    who = ctx.who
    for m in _INTO.finditer(s):
        obj = _clean_object(_take(s[m.end():], 5))
        if obj and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "likes", obj, text=f"{who.display} is into {obj}",
                             reason="preference cue 'into'", kind="preference", generality=0.7))
    for rx, pred, shown in ((_NOT_INTO, "noLongerLikes", "is no longer into"),
                            (_USED_TO, "usedToLike", "used to {verb}"),
                            (_NO_LONGER_LIKE, "noLongerLikes", "no longer {verb}s")):
        for m in rx.finditer(s):
            obj = _clean_object(_take(s[m.end():], 5))
            if obj and not _blocked(s, m.start()):
                verb = m.group(1).casefold() if m.lastindex else ""
                out.append(_fact(m.start(), ctx, pred, obj,
                                 text=f"{who.display} {shown.format(verb=verb)} {obj}",
                                 reason="preference change", kind="preference",
                                 generality=0.7))
    for m in _GAVE_UP.finditer(s):
        tail = s[m.end():]
        obj = _clean_object(_take(tail, 4)) if tail.strip() else None
        verb = _base_verb(m.group(1)) if m.group(1) else None
        if (not obj and not verb) or _blocked(s, m.start()) or (obj and (
                obj[:1].isupper() or obj.casefold().startswith(("my job", "my position")))):
            continue  # "I quit Tidewave": a job (see _rule_job)
        if verb:
            text = f"{who.display} no longer {_HABIT_VERBS[verb]}{f' {obj}' if obj else ''}"
            value = f"{verb} {obj}" if obj else verb
        else:
            text, value = f"{who.display} gave up {obj}", str(obj)
        out.append(replace(_fact(m.start(), ctx, "avoids", value, text=text,
                                 reason="habit given up", kind="constraint", generality=0.8),
                           ends=_pref_ends(obj) if obj else ()))
    return out


_PET_WORD = _ALT(sorted({*_BREEDS, *(w for ws in _PET_KINDS.values() for w in ws)},
                        key=len, reverse=True))
_THE_PET = rf"(?i:the|our|my)\s+(?P<pet>(?i:{_PET_WORD}))"
_RENAMES: Final = (
    re.compile(rf"{_WE}(?:'ve|\s+have)?\s+{_ADV}(?i:renamed|re-named)\s+(?:{_THE_PET}|"
               rf"(?P<old>{_NAME}))\s+(?:(?i:to|as)\s+)?(?P<new>{_NAME})\b"),
    re.compile(rf"{_WE}(?:'ve|\s+have)?\s+{_ADV}(?i:changed)\s+{_THE_PET}'s\s+(?i:name)\s+"
               rf"(?i:to)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"{_THE_PET}'s\s+(?i:new\s+name\s+is|name\s+is\s+now)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"(?:{_THE_PET}|(?P<old>{_NAME}))\s+(?i:is\s+now\s+called|is\s+now\s+named|"
               rf"goes\s+by)\s+(?P<new>{_NAME})\b"),
    re.compile(rf"(?:{_THE_PET}|(?P<old>{_NAME}))\s+(?i:is\s+called|is\s+named)\s+"
               rf"(?P<new>{_NAME})\s+(?i:now)\b"),
)


def _pet_kind(word: str) -> str:
    low = word.casefold()
    for kind, words in _PET_KINDS.items():
        if low in words:
            return kind
    return _BREEDS.get(low, low)


def _rule_rename(s: str, ctx: _Ctx) -> list[_Cand]:
    """A pet's new name: ``we renamed the dog (to) <New>``, ``we renamed <Old> (to)
    <New>``, ``we changed the dog's name to <New>``, ``the dog's new name is <New>``,
    ``<Old>/the dog is now called|goes by <New>``. The social memory of the new name
    replaces the old one (named, or the speaker's only dog) and a ``<dog>'s name``
    attribute."""
    out = []
    for rx in _RENAMES:
        for m in rx.finditer(s):
            new, old = m.group("new"), m.groupdict().get("old")
            pet = m.groupdict().get("pet")
            if not _ok_name(new) or (old and not _ok_name(old)) or _blocked(s, m.start()):
                continue
            kind = _pet_kind(pet) if pet else "pet"
            ends = [_End("person", old)] if old else [
                _End("relation", words=_PET_KINDS.get(kind, frozenset({kind})))]
            ends += [_End("fact", f"attr:{kind}'s name"), _End("fact", "attr:pet's name")]
            cand = _social(m.start(), ctx, new, kind, related_to=ctx.who.name,
                           text=f"{new} is {ctx.who.possessive} {kind}",
                           reason="renamed pet")
            out.append(replace(cand, ends=tuple(ends), change="rename"))
    return out


_EVENT_NOUNS: Final = frozenset({
    "trip", "holiday", "holidays", "vacation", "plan", "plans", "dinner", "lunch", "brunch",
    "breakfast", "party", "wedding", "meeting", "appointment", "visit", "date", "game",
    "match", "concert", "show", "event", "booking", "reservation", "flight", "class",
    "lesson", "session", "call", "interview", "gig", "tour", "weekend", "drinks", "barbecue",
    "bbq", "picnic", "celebration", "ceremony", "festival", "conference", "workshop",
    "hike", "getaway", "reunion", "sleepover", "playdate", "viewing", "move", "surgery",
    "checkup", "check-up", "shoot", "rehearsal", "recital", "practice", "training", "course",
})
"""Heads of "the <x> is off": a plan, not a device ("the heating is off")."""
_CANCELLED = r"(?i:cancell?ed|called\s+off|scrapped|axed)"
_IS_OFF = re.compile(rf"(?:\s+(?i:is|has\s+been|was|got|is\s+now)\s+|'s\s+)"
                     rf"(?:(?i:officially|now|been|just|all|unfortunately|sadly)\s+)*"
                     rf"(?P<verb>(?i:off)|{_CANCELLED})\b")
_CLAUSE_END = re.compile(r"[,;:.!?()]")
_CANCELS = re.compile(rf"(?<![\w'])(?P<who>[Ii]|[Ww]e|[Tt]hey|[Ss]he|[Hh]e|{_NAME})(?:'ve|\s+have|"
                      rf"\s+has|\s+had\s+to)?\s+{_ADV}{_CANCELLED}\s+(?P<x>[^,;:.!?()]{{1,80}})")
_NOT_GOING = re.compile(
    rf"{_WE}(?:'m|'re|\s+am|\s+are)\s+(?i:not\s+(?:going\s+to|gonna)\s+(?:go\s+to\s+)?)"
    rf"(?P<x>[^,;:.!?()]{{1,80}}?)\s+(?i:anymore|any\s+more|after\s+all)\b"
    rf"|{_WE}\s+(?i:won't|will\s+not)\s+(?i:be\s+going\s+to|go\s+to|make\s+it\s+to)\s+"
    rf"(?P<y>[^,;:.!?()]{{1,80}})")
_CANCEL_IT = _rx(r"^(?:(?:please|oh|and|also|ok|okay|actually)[,\s]+)*(?:(?:can|could|would|"
                 r"will)\s+you\s+(?:please\s+)?)?(?:cancel|scrap|drop|delete|forget\s+about|"
                 r"never\s+mind)\s+(?P<x>(?:the|my|that|our)\s+[^,;:.!?()]{1,80})")


_LAST_CLAUSE = re.compile(r"(?i)\b(?:and|but|so|because|since|though|although|that|which|"
                          r"then|now)\b")
_PRONOUNS: Final = frozenset({"i", "we", "they", "she", "he"})


def _cancel(pos: int, ctx: _Ctx, what: str, extra: Iterable[str] = ()) -> _Cand:
    """A cancellation of the pending plan best matching ``what`` (completed in
    :func:`extract` from the plan it ends; dropped when none matches)."""
    words = _plan_words(what) | {_norm(w) for w in extra}
    return _Cand(pos, MemoryType.TASK, "task", what,
                 {"goal": what, "status": TaskStatus.CANCELLED.value, "deadline": None},
                 "cancelled plan", ends=(_End("plan", words=words),), needs_end=True,
                 change="cancel")


def _rule_cancel(s: str, ctx: _Ctx) -> list[_Cand]:
    """Plans called off: ``the <x> is off|cancelled|called off`` (``off`` only for a
    plan-like <x>: trip, dinner, party ...), ``I/we/<Name> cancelled|called off <x>``,
    ``we're not going to <x> anymore|after all``, ``we won't go to <x>``, and, to the
    assistant, ``cancel|scrap|never mind the <x>``. Each ends the pending task that shares
    the most words with <x> (and the person who cancelled it); nothing when none does."""
    out = []
    for m in _IS_OFF.finditer(s):
        said = _CLAUSE_END.split(s[max(0, m.start() - 80):m.start()])[-1]
        what = " ".join(_LAST_CLAUSE.split(said)[-1].split()[-6:])
        if not what or any(w in _HYPOTHETICAL for w in said.casefold().split()) or \
                _blocked(s, m.start() - len(said.lstrip())):
            continue
        if m.group("verb").casefold() == "off" and not _plan_words(what) & _EVENT_NOUNS:
            continue  # "the heating is off"
        out.append(_cancel(m.start(), ctx, what))
    for m in _CANCELS.finditer(s):
        who = m.group("who")
        pronoun = who.casefold() in _PRONOUNS
        if _blocked(s, m.start()) or not (pronoun or _ok_name(who)):
            continue
        out.append(_cancel(m.start(), ctx, m.group("x").strip(), [] if pronoun else [who]))
    for m in _NOT_GOING.finditer(s):
        if not _blocked(s, m.start()):
            out.append(_cancel(m.start(), ctx, (m.group("x") or m.group("y")).strip()))
    return out + _rule_cancel_request(s, ctx)


def _rule_cancel_request(s: str, ctx: _Ctx) -> list[_Cand]:
    """``(Can you) cancel|scrap|never mind the <x>``, said to the assistant (also as a
    question)."""
    m = _CANCEL_IT.search(s)
    if m is None or not ctx.who.direct:
        return []
    return [_cancel(m.start(), ctx, m.group("x").strip())]


_AND_I = rf"(?:{_I}(?:'ve|\s+have)?\s+|\band\s+(?:then\s+)?)"  # "I left X and started at Y"
_STARTED = _rx(rf"{_AND_I}{_ADV}started\s+(?:(?:a\s+(?:new\s+)?job|my\s+new\s+job|"
               rf"working|work)\s+)?(?=(?:at|with|for)\s)")
_JOINED = _rx(rf"{_AND_I}{_ADV}joined\s+(?=\S)")
_FIRST_PERSON_CLAUSE = re.compile(rf"\s*(?:(?:so|then|but)\s+)?(?:\w+\s+){{0,2}}{_I}\b")
_HIRED = _rx(rf"{_I}(?:'ve|\s+have|\s+was|\s+got|\s+just\s+got)?\s+{_ADV}(?:been\s+)?hired\s+"
             rf"(?=(?:at|by)\s)")
_GOT_JOB = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(got|landed|took|taken|accepted)\s+(?:a|an|the)\s+"
               rf"(?:new\s+|full-time\s+|permanent\s+)?(job|position|role|offer)\s+"
               rf"(?=(?:at|with|from)\s)")
_PROMOTED = _rx(rf"{_I}(?:'ve|\s+have|\s+was|\s+got|\s+just\s+got)?\s+{_ADV}(?:been\s+|got\s+)?"
                rf"promoted\s+to\s+")
_LEFT = _rx(rf"{_I}(?:'ve|\s+have)?\s+{_ADV}(?:left|quit|resigned\s+from)\s+(my\s+(?:old\s+)?"
            rf"(?:job|position|role)\s+(?:at|with)\s+)?")
_CAREER_MOVE = _rx(r"\b(?:joined|started|job|jobs|new\s+role|for\s+good|after\s+\w+\s+years?|"
                   r"handed\s+in|notice|resigned|career|hired)\b")
_JOB_WORDS = _rx(r"\b(?:job|jobs|work|working|hired|role|position|offer|company|firm|employer|"
                 r"career|colleagues?|boss|left|quit|resigned|notice|salary|team)\b")
_AS_JOB = _rx(r"\bas\s+(an?)\s+")


def _new_job(pos: int, ctx: _Ctx, org: str, rest: str, cue: str) -> list[_Cand]:
    """``worksAt <org>``, and ``worksAs <job>`` when the clause goes on "as a <job>"."""
    out = [_fact(pos, ctx, "worksAt", org, text=f"{ctx.who.display} works at {org}",
                 reason=f"job change '{cue}'")]
    m = _AS_JOB.search(_clause(rest))
    phrase = _take(_clause(rest)[m.start(1):], 4) if m else None
    job = _clean_object(_strip_article(phrase)) if phrase else None
    if job:
        out.append(_fact(pos, ctx, "worksAs", job,
                         text=f"{ctx.who.display} works as {_article(job)}",
                         reason=f"job change '{cue} ... as'"))
    return out


def _first_person(s: str, m: re.Match[str]) -> bool:
    """The subject of the cue is the speaker: "I ... started", or "and started" after
    a clause of theirs ("I left Tidewave and started at ..."), not after Ana's; and the
    cue is not hypothetical (:func:`_blocked`)."""
    conj = re.match(r"(?i)and\s+(?:then\s+)?", m.group(0))
    if conj is None:
        return not _blocked(s, m.start())
    clause = re.split(r"[,;]", s[max(0, m.start() - 200):m.start()])[-1]
    return _FIRST_PERSON_CLAUSE.match(clause) is not None and not _blocked(
        s, m.start() + conj.end())


def _rule_job(s: str, ctx: _Ctx) -> list[_Cand]:
    """Job changes: ``I started (a new job) at <Org>``, ``I joined <Org>`` (with a word of
    work in the sentence: "left", "job", "as a <job>" ...), ``I got|landed|took|accepted
    a job|position|role at <Org>``, ``I was hired at|by <Org>``, ``I got promoted to
    <job>``, ``I left|quit <Org>`` (when it is the known employer, or "my job at <Org>")."""
    out: list[_Cand] = []
    for rx in (_STARTED, _HIRED, _GOT_JOB):
        for m in rx.finditer(s):
            if rx is _GOT_JOB and m.group(2).casefold() == "offer" and \
                    m.group(1).casefold() != "accepted":
                continue  # an offer received is not a job taken
            tail = s[m.end():m.end() + _CLAUSE_CHARS]
            org = _employer(tail, _BY_ORG)  # "hired by", "an offer from"
            if org and _first_person(s, m):
                rest = tail[tail.find(org) + len(org):]
                out += _new_job(m.start(), ctx, org, rest, m.group(0).strip())
    for m in _JOINED.finditer(s):
        tail = s[m.end():m.end() + _CLAUSE_CHARS]
        org = _proper(tail)
        if not org or not _first_person(s, m):
            continue
        rest = _clause(tail[tail.find(org) + len(org):])
        before = s[max(0, m.start() - _CLAUSE_CHARS):m.start()]
        if _JOB_WORDS.search(f"{before} {rest}") or _AS_JOB.search(rest):
            out += _new_job(m.start(), ctx, org, rest, "joined")
    for m in _PROMOTED.finditer(s):
        phrase = _take(s[m.end():], 4)
        job = _clean_object(_strip_article(phrase)) if phrase else None
        if job and not _blocked(s, m.start()):
            out.append(_fact(m.start(), ctx, "worksAs", job,
                             text=f"{ctx.who.display} works as {_article(job)}",
                             reason="job change 'promoted to'"))
    career = _CAREER_MOVE.search(s) is not None
    for m in _LEFT.finditer(s):
        org = _proper(s[m.end():m.end() + _CLAUSE_CHARS])
        if not org or _blocked(s, m.start()) or (
                m.group(0).split()[-1].casefold() == "left" and m.group(1) is None
                and not career):
            continue  # "I left Tidewave at six" is not a resignation
        out.append(replace(
            _fact(m.start(), ctx, "formerlyWorkedAt", org,
                  text=f"{ctx.who.display} no longer works at {org}", reason="job change 'left'"),
            ends=(_End("fact", "worksAt", _norm(org)),), needs_end=m.group(1) is None))
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
    goal = re.sub(r"(?i)\s+(?:too|as\s+well|coming\s+up|soon|then|again|either|instead)$", "",
                  goal)
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
    moved = _RESCHEDULE.search(s) is not None or _CORRECTION.search(s) is not None
    return [_Cand(start, MemoryType.TASK, "task", " ".join(text.split()),
                  {"goal": goal, "status": TaskStatus.PENDING.value, "deadline": deadline},
                  reason, requires=_names_in(goal),
                  ends=(_End("plan", value="all", words=_plan_words(goal)),) if moved else ())]


_RESCHEDULE = _rx(r"\b(?:instead|rather|move\s+it|make\s+it|change\s+it|push\s+it|"
                  r"reschedule[ds]?)\b")


_RULES: Final[tuple[_Rule, ...]] = (
    _rule_place, _rule_work, _rule_job, _rule_identity, _rule_have, _rule_my, _rule_like,
    _rule_pref_change, _rule_constraint, _rule_social, _rule_rename, _rule_cancel,
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
        else:
            found.extend(_rule_cancel_request(sent, ctx))
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
    for found, said in sorted(chosen.values(), key=lambda ct: ct[0].pos):
        entry = known.entry(said) if said else None
        if entry is not None and said is not None and entry[1] == said.value:
            continue  # already known, unchanged
        ended = [i for end in found.ends for i in _ended(end, who, known)]
        if found.needs_end and not ended:
            continue  # a change of something never said
        cand = _completed(found, ended, who, known)
        topic = said if cand is found else topic_of(cand.type, cand.payload)
        replaced = list(dict.fromkeys(([entry[0]] if entry else []) + ended))
        first = replaced[0] if replaced else None
        out.append(Extracted(
            type=cand.type, kind=cand.kind, text=cand.text, payload=cand.payload,
            links=_links(cand, known), supersedes=None if corrected else first,
            corrects=first if corrected else None, topic=topic,
            also_replaces=tuple(replaced[1:]),
            reason=cand.reason + (f"; {'corrects' if corrected else 'supersedes'} "
                                  f"{', '.join(replaced)}" if replaced else "")))
    return out


def _ended(end: _End, who: _Subject, known: KnownFacts) -> list[str]:
    """The active memories ``end`` names (see :class:`_End`)."""
    if end.kind == "fact":
        return [nid for pred, nid, value in known.facts_about(who.name)
                if (pred == end.key or (end.key.endswith(":") and pred.startswith(end.key)))
                and (end.value is None or value == end.value)]
    if end.kind == "person":
        return [nid for _, nid, entity in known.related(who.name)
                if _norm(entity) == _norm(end.key)]
    if end.kind == "relation":
        pets = [(nid, entity) for rel in sorted(end.words)
                for _, nid, entity in known.related(who.name, rel)]
        return [pets[0][0]] if len({_norm(e) for _, e in pets}) == 1 else []
    plan = known.plan_matching(end.words, all_words=end.value == "all")
    return [plan] if plan else []


def _completed(cand: _Cand, ended: Sequence[str], who: _Subject, known: KnownFacts) -> _Cand:
    """A rename names the old name; a cancellation takes the goal and deadline of the
    plan it ends."""
    if cand.change == "rename":
        old = [(rel, nid, e) for rel, nid, e in known.related(who.name) if nid in ended]
        if not old or _norm(old[0][2]) == _norm(str(cand.payload["entity"])):
            return cand
        rel, nid, name = old[0]
        kept = {k: v for k, v in known.attributes(nid).items() if k != "formerly"}
        new = str(cand.payload["entity"])
        payload = {**cand.payload, "relationship_type": rel,
                   "attributes": {**kept, **cand.payload["attributes"], "formerly": name}}
        also = f", {_article(kept['kind'])}" if "kind" in kept else ""
        return replace(cand, payload=payload,
                       text=f"{new} is {who.possessive} {rel}{also} (renamed from {name})")
    if cand.change == "cancel":
        plan = known.plan(ended[0])
        if plan is None:
            return cand
        return replace(cand, text=_called_off(plan, who),
                       payload={"goal": plan.goal, "status": TaskStatus.CANCELLED.value,
                                "deadline": plan.deadline})
    return cand


_DUE = re.compile(r"\s*\(due [^)]*\)\s*$")
_AUXILIARIES: Final = frozenset({"is", "are", "will", "was", "has", "would", "had"})


def _called_off(plan: _Plan, who: _Subject) -> str:
    """A cancelled plan in the words of the plan: "The user is going to Kyoto in April"
    → "The user is no longer going to Kyoto in April (cancelled; was due ...)"."""
    text = _DUE.sub("", plan.text)
    due = f"; was due {plan.deadline:%Y-%m-%d %H:%M} UTC" if plan.deadline else ""
    lead = f"{who.display} "
    if text.startswith(lead):
        verb, _, rest = text[len(lead):].partition(" ")
        if verb == "has" and rest.startswith("plans"):
            text = f"{lead}no longer has {rest}"
        elif verb in _AUXILIARIES:
            text = f"{lead}{verb} no longer {rest}"
        else:
            text = f"{lead}no longer {verb} {rest}"
    else:
        text = f"Called off: {text}"
    return f"{text} (cancelled{due})"

