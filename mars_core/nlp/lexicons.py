"""Fixed English word lists used by the DMF text signals (seed 004 §4.5, §8).

DMF keeps its cue lists in the "fixed core": they are deliberately *not* configuration
(seed 004 §10.2). The paper prints only examples ("I prefer", "currently", "actually",
"do not", "not x but y"; social keywords "thanks", "ok", "hello", "hi", "great", ...).
The full lists below are marked per list:

* **[seed]**: the paper's own examples, all of which are included;
* **[non-seed ref]**: taken from the MIT-licensed DMF reference implementation so that
  our signals match it (seed digest E.1, gap Z-E7);
* **[ours]**: needed by the rule-based fallback only (stopwords, phatic words, the tiny
  sentiment lexicon, date words); they have no counterpart in the paper.

Examples:
    >>> from mars_core.nlp.lexicons import SOCIAL_KEYWORDS, CONSTRAINT_CUES
    >>> "thanks" in SOCIAL_KEYWORDS, "do not" in CONSTRAINT_CUES
    (True, True)
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "ACK_LIKE_STARTERS",
    "COMMON_NAME_WORDS",
    "CONSTRAINT_CUES",
    "CORRECTION_CUES",
    "CURRENT_STATE_CUES",
    "DATE_MODIFIERS",
    "DATE_UNITS",
    "DATE_WORDS",
    "LY_NOT_ADVERBS",
    "MONTHS",
    "NAME_CONNECTORS",
    "NAME_LEADS",
    "NAME_PARTICLES",
    "NAME_SUFFIXES",
    "NAME_TITLES",
    "NEGATION_WORDS",
    "NUMBER_WORDS",
    "PAST_STATE_CUES",
    "PHATIC_WORDS",
    "PREFERENCE_CUES",
    "QUERY_AUX_STARTERS",
    "QUERY_REQUEST_ROOTS",
    "QUERY_WH_STARTERS",
    "SEMANTIC_POS",
    "SENTIMENT_BOOSTERS",
    "SENTIMENT_LEXICON",
    "SOCIAL_KEYWORDS",
    "SOCIAL_STRIP_CHARS",
    "STOPWORDS",
    "SUBJECT_WORDS",
    "WEEKDAYS",
]

SEMANTIC_POS: frozenset[str] = frozenset({"NOUN", "VERB", "ADJ", "PROPN"})
"""[seed §4.1 eq 1] Universal POS tags that count as information-bearing."""

# --- conversational cues (seed 004 §4.5) -----------------------------------------------

CURRENT_STATE_CUES: tuple[str, ...] = ("currently", "current", "now", "at the moment")
"""[seed example "currently"; rest non-seed ref] Cues of a present-state statement."""

PAST_STATE_CUES: tuple[str, ...] = ("used to", "previously", "before")
"""[non-seed ref] Cues of a past-state statement."""

PREFERENCE_CUES: tuple[str, ...] = (
    "i prefer", "prefer", "my favorite", "i like", "i'd rather", "i would rather",
    "i usually choose",
)
"""[seed example "I prefer"; rest non-seed ref] Cues of a preference."""

CONSTRAINT_CUES: tuple[str, ...] = (
    "do not", "don't", "must not", "cannot", "can't", "never", "without",
)
"""[seed example "do not"; rest non-seed ref] Cues of a constraint."""

CORRECTION_CUES: tuple[str, ...] = ("correction", "actually", "i mean", "sorry")
"""[seed example "actually"; rest non-seed ref] Cues of a correction."""

ACK_LIKE_STARTERS: tuple[str, ...] = (
    "understood", "noted", "got it", "i understand", "i will", "i'll", "your preference",
    "you set", "the current preference",
)
"""[non-seed ref] Openings of an acknowledgement (only when the turn is not query-like)."""

QUERY_WH_STARTERS: frozenset[str] = frozenset({"what", "who", "when", "where", "why", "how"})
"""[non-seed ref] A sentence opening with one of these is query-like."""

QUERY_AUX_STARTERS: frozenset[str] = frozenset({
    "do", "does", "did", "is", "are", "was", "were", "can", "could", "should", "would",
    "will", "have", "has", "had",
})
"""[non-seed ref] An auxiliary opening followed by a subject is query-like (inversion)."""

QUERY_REQUEST_ROOTS: frozenset[str] = frozenset({
    "summarize", "summarise", "explain", "compare", "describe", "list", "tell", "propose",
    "outline",
})
"""[non-seed ref, plus British "summarise"] Imperative request verbs (query-like)."""

SUBJECT_WORDS: frozenset[str] = frozenset({
    "i", "you", "he", "she", "it", "we", "they", "there", "this", "that", "these", "those",
    "anyone", "anybody", "someone", "somebody", "everyone", "everybody", "one", "the", "my",
    "your", "his", "her", "its", "our", "their", "any", "some",
})
"""[ours] Words that the rules backend accepts as the subject after an inverted auxiliary."""

# --- social floor (seed 004 §8 eq 28) ---------------------------------------------------

SOCIAL_KEYWORDS: frozenset[str] = frozenset({
    "thanks", "thank", "thx", "grazie", "merci", "appreciated", "hi", "hello", "hey", "bye",
    "goodbye", "ciao", "ok", "okay", "understood", "noted", "sure", "alright", "gotcha",
    "yes", "yeah", "yep", "absolutely", "exactly", "indeed", "nice", "great", "cool",
    "awesome", "perfect", "wonderful", "excellent", "sorry", "apologies", "pardon", "please",
    "welcome",
})
"""[seed examples thanks/ok/hello/hi/great; rest non-seed ref] K_social of eq (28)."""

SOCIAL_STRIP_CHARS: str = ".,!?;:'\"()-…–—"
"""[non-seed ref] Characters stripped from each whitespace word before the K_social test."""

# --- rules backend only ([ours]) --------------------------------------------------------

PHATIC_WORDS: frozenset[str] = frozenset({
    "thanks", "thank", "thx", "ty", "grazie", "merci", "hi", "hello", "hey", "hiya", "bye",
    "goodbye", "ciao", "ok", "okay", "alright", "gotcha", "yes", "yeah", "yep", "yup", "no",
    "nope", "nah", "sure", "wow", "oh", "ah", "aw", "aww", "uh", "um", "hmm", "lol", "haha",
    "hahaha", "please", "oops", "yay", "ugh",
})
"""[ours, seed §4.1 intent] Words counted as interjections (never content) by both backends.

Seed 004 §4.1 says purely phatic turns such as "OK" and "Thanks!" get ID ≈ 0 because
interjections are excluded, but a trained tagger calls "Thanks" a NOUN; tokens in this
list are therefore treated as INTJ whatever the tagger says.
"""

STOPWORDS: frozenset[str] = frozenset({
    # pronouns and determiners
    "i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves",
    "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
    "we", "us", "our", "ours", "ourselves", "they", "them", "their", "theirs", "themselves",
    "this", "that", "these", "those", "a", "an", "the", "some", "any", "each", "every",
    "either", "neither", "all", "both", "few", "many", "much", "more", "most", "less",
    "least", "other", "another", "such", "own", "same", "someone", "somebody", "something",
    "anyone", "anybody", "anything", "everyone", "everybody", "everything", "nobody",
    "nothing", "none", "one", "ones", "what", "which", "who", "whom", "whose", "whatever",
    "whoever", "whichever",
    # prepositions and conjunctions
    "about", "above", "across", "after", "against", "along", "among", "around", "as", "at",
    "before", "behind", "below", "beneath", "beside", "besides", "between", "beyond", "by",
    "despite", "down", "during", "except", "for", "from", "in", "inside", "into",
    "near", "of", "off", "on", "onto", "out", "outside", "over", "past", "per", "since",
    "than", "through", "throughout", "till", "to", "toward", "towards", "under", "until",
    "up", "upon", "via", "with", "within", "without", "and", "or", "but", "nor", "so", "yet",
    "if", "because", "although", "though", "while", "whereas", "unless", "whether", "once",
    # auxiliaries and modals (also as main verbs: a documented simplification)
    "am", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing",
    "done", "have", "has", "had", "having", "can", "could", "may", "might", "must", "shall",
    "should", "will", "would", "ca", "wo", "sha", "ought",
    # clitics produced by the tokenizer
    "n't", "'s", "'m", "'re", "'ve", "'ll", "'d", "not",
    # adverbs and particles
    "again", "ago", "almost", "already", "also", "always", "anyway", "away", "back", "even",
    "ever", "here", "how", "however", "instead", "just", "maybe", "never", "now", "often",
    "only", "perhaps", "quite", "rather", "really", "sometimes", "soon", "still", "then",
    "there", "therefore", "thus", "too", "very", "when", "where", "why", "well",
    "else", "together", "definitely", "probably", "actually", "totally",
    "especially", "usually", "currently", "previously", "finally", "recently", "anyways",
})
"""[ours] Function words (the rules backend's stand-in for non-content POS tags)."""

LY_NOT_ADVERBS: frozenset[str] = frozenset({
    "family", "reply", "supply", "apply", "fly", "ally", "belly", "jelly", "bully", "rally",
    "holly", "lily", "july", "italy", "early", "only", "friendly", "lovely", "lonely",
    "likely", "ugly", "silly", "daily", "weekly", "monthly", "yearly", "holy", "assembly",
    "anomaly", "butterfly", "comply", "rely", "multiply", "imply", "curly", "chilly",
    "costly", "elderly", "lively", "deadly", "orderly", "jolly", "ply", "sly", "wily",
})
"""[ours] Words ending in "-ly" that are not adverbs (the rules backend drops other -ly words)."""

NUMBER_WORDS: frozenset[str] = frozenset({
    "zero", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
    "eighty", "ninety", "hundred", "thousand", "million", "billion", "dozen",
})
"""[ours] Cardinal number words: not content (NUM) and a number entity in the rules backend."""

MONTHS: frozenset[str] = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec",
})
"""[ours] Month names (a DATE entity only when capitalised)."""

WEEKDAYS: frozenset[str] = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
})
"""[ours] Weekday names (a DATE entity)."""

DATE_WORDS: frozenset[str] = frozenset({"yesterday", "today", "tonight", "tomorrow"})
"""[ours] Single words that are a DATE entity on their own."""

DATE_MODIFIERS: frozenset[str] = frozenset({"last", "next", "this", "past", "coming"})
"""[ours] "last week", "next summer": a modifier followed by a date unit is a DATE entity."""

DATE_UNITS: frozenset[str] = frozenset({
    "day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
    "decade", "decades", "summer", "winter", "spring", "autumn", "fall", "night", "morning",
    "evening", "afternoon", "hour", "hours", "minute", "minutes",
}) | WEEKDAYS
"""[ours] Units that join a number or a date modifier into one DATE entity."""

NAME_CONNECTORS: frozenset[str] = frozenset({"of", "&", "de", "da", "van", "von", "del"})
"""[ours] Lower-case words allowed inside a capitalised name ("Bank of America")."""

NEGATION_WORDS: frozenset[str] = frozenset({
    "not", "no", "never", "n't", "cannot", "nothing", "nowhere", "none", "neither", "nor",
    "without",
})
"""[ours, after VADER] Words that flip the valence of the next three tokens (lexicon path)."""

SENTIMENT_BOOSTERS: frozenset[str] = frozenset({
    "very", "really", "so", "extremely", "super", "incredibly", "totally", "absolutely",
    "truly", "completely", "especially", "highly", "quite",
})
"""[ours, after VADER] Intensifiers that add 0.293 to the next word's magnitude."""

SENTIMENT_LEXICON = MappingProxyType({
    "good": 1.9, "great": 3.1, "love": 3.2, "loved": 2.9, "lovely": 2.8, "nice": 1.8,
    "happy": 2.7, "glad": 2.0, "awesome": 3.1, "amazing": 2.8, "wonderful": 2.7,
    "excellent": 2.7, "fantastic": 2.6, "perfect": 2.7, "best": 3.2, "better": 1.9,
    "fun": 2.3, "enjoy": 2.2, "enjoyed": 2.3, "excited": 1.4, "exciting": 2.2,
    "beautiful": 2.9, "cool": 1.3, "thanks": 1.9, "thank": 1.5, "appreciate": 1.7,
    "appreciated": 2.3, "grateful": 2.0, "proud": 2.1, "helpful": 1.8, "yay": 2.4,
    "wow": 2.8, "congrats": 2.4, "congratulations": 2.9, "brilliant": 2.8, "sweet": 2.0,
    "hope": 1.9, "hopeful": 2.3, "inspiring": 1.8, "inspired": 2.2, "cheerful": 2.5,
    "delighted": 2.3, "pleased": 1.9, "ok": 1.2, "okay": 0.9, "interesting": 1.7,
    "welcome": 2.0, "smile": 1.5, "laugh": 2.6, "peace": 2.5, "relief": 2.1,
    "relieved": 1.6, "win": 2.8, "success": 2.7, "successful": 2.8,
    "bad": -2.5, "worse": -2.1, "worst": -3.1, "hate": -2.7, "hated": -3.2, "sad": -2.1,
    "sadly": -1.8, "unhappy": -1.8, "angry": -2.3, "mad": -2.2, "upset": -1.6,
    "awful": -2.0, "terrible": -2.1, "horrible": -2.5, "disappointed": -2.1,
    "disappointing": -2.2, "sorry": -0.3, "hurt": -2.4, "pain": -2.3, "painful": -1.9,
    "scared": -1.9, "fear": -2.2, "worried": -1.2, "worry": -1.9, "stress": -1.8,
    "stressed": -1.4, "stressful": -2.3, "tired": -1.9, "lonely": -1.5, "cry": -2.1,
    "crying": -2.1, "difficult": -1.5, "problem": -1.7, "wrong": -2.1, "fail": -2.5,
    "failed": -2.3, "failure": -2.3, "sick": -2.3, "annoying": -1.7, "annoyed": -1.6,
    "frustrated": -2.4, "frustrating": -1.9, "boring": -1.3, "bored": -1.1, "ugly": -2.3,
    "death": -2.9, "dead": -3.3, "die": -2.9, "died": -2.6, "hopeless": -2.0,
    "anxious": -1.0, "nervous": -1.1, "depressed": -2.3,
})
"""[ours; valences copied from the MIT-licensed VADER lexicon] The fallback sentiment lexicon."""

# --- personal names, for entity erasure ([ours]; mars_core.privacy.names) ------------------

NAME_TITLES: frozenset[str] = frozenset({
    "mr", "mrs", "ms", "miss", "mx", "mister", "missus", "dr", "doctor", "prof",
    "professor", "sir", "dame", "lady", "lord", "madam", "madame", "mme", "mlle", "rev",
    "revd", "reverend", "herr", "frau", "sr", "sra", "srta", "señor", "señora", "senhor",
    "senhora", "dona", "signor", "signora", "monsieur", "mademoiselle",
})
"""[ours] Titles written before a name ("Mr Doe", "Dr. Jane Doe"), lower case, no dot."""

NAME_SUFFIXES: frozenset[str] = frozenset({
    "jr", "sr", "snr", "jnr", "ii", "iii", "iv", "phd", "md", "esq",
})
"""[ours] Suffixes written after a name ("Jane Doe Jr."): not a part of the name."""

NAME_PARTICLES: frozenset[str] = frozenset({
    "de", "da", "das", "do", "dos", "del", "della", "di", "du", "des", "la", "le", "van",
    "der", "den", "von", "zu", "bin", "ibn", "bint", "al", "el", "y", "e", "and", "of", "&",
})
"""[ours] Particles inside a name ("Ludwig van Beethoven"): never erased on their own."""

NAME_LEADS: frozenset[str] = frozenset({
    "dear", "call", "ask", "tell", "text", "email", "message", "ping", "phone", "ring",
    "meet", "see", "visit", "invite", "remind", "thank", "congratulate", "send", "give",
    "let", "help", "hug", "cc", "attn", "re", "fwd", "fw",
}) | SOCIAL_KEYWORDS
"""[ours] Words that open a sentence before a name ("Dear Jane", "Call Jane"): a capitalised
run that starts with one of them is a name without it."""

COMMON_NAME_WORDS: frozenset[str] = frozenset({
    # given names that are everyday words
    "amber", "art", "autumn", "basil", "bill", "brook", "buck", "candy", "carol", "chase",
    "chip", "cliff", "crystal", "dale", "daisy", "dawn", "drew", "faith", "fern", "frank",
    "ginger", "glen", "grace", "grant", "guy", "hazel", "heath", "heather", "herb", "holly",
    "honey", "hope", "iris", "ivy", "jack", "jade", "joy", "lily", "mark", "max", "olive",
    "pat", "pearl", "penny", "rain", "ray", "rob", "rose", "ruby", "rusty", "sage", "sandy",
    "sky", "star", "sue", "summer", "sunny", "violet",
    # surnames that are everyday words
    "archer", "baker", "banks", "barber", "bass", "bell", "bird", "bishop", "black", "bond",
    "bridge", "bright", "brown", "burns", "bush", "butler", "cash", "church", "cook",
    "cooper", "crane", "cross", "day", "drake", "duke", "east", "farmer", "field", "fields",
    "finch", "fish", "fisher", "forest", "fox", "frost", "gardener", "gates", "good",
    "gray", "green", "grey", "grove", "hall", "hardy", "hawk", "head", "hill", "hills",
    "house", "hunt", "hunter", "judge", "king", "knight", "lake", "lamb", "lane", "law",
    "little", "long", "love", "marsh", "mason", "miles", "mill", "miller", "mills", "moss",
    "noble", "north", "page", "painter", "park", "parker", "pike", "pope", "porter",
    "potter", "power", "price", "prince", "rice", "rich", "rivers", "rush", "sharp",
    "short", "singer", "snow", "south", "stone", "storm", "street", "strong", "swan",
    "sweet", "turner", "walker", "wall", "ward", "waters", "weaver", "wells", "west",
    "white", "winter", "wise", "wolf", "wood", "woods", "young",
})
"""[ours] Everyday English words that are also given names or surnames ("Rose", "Baker").

A judgement call, not exhaustive: stopwords ("Will", "May"), months, weekdays and date
units are treated the same way without being repeated here. Entity erasure counts a
partial mention by one of these words only where it is written as a name (see
:mod:`mars_core.privacy.names`).
"""
