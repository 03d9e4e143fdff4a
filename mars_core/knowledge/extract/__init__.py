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

from mars_core.knowledge.extract.dates import parse_deadline
from mars_core.knowledge.extract.lexicon import NON_NAMES, RELATION_WORDS
from mars_core.knowledge.extract.phrases import split_speaker
from mars_core.knowledge.extract.pipeline import extract
from mars_core.knowledge.extract.topics import EPISODE, Extracted, KnownFacts, Topic, topic_of

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
