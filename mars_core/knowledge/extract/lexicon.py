"""The word lists and regex building blocks the extraction rules are written in ([ours])."""

from __future__ import annotations

import calendar
import re
from types import MappingProxyType
from typing import Final

__all__ = ["NON_NAMES", "RELATION_WORDS"]

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
