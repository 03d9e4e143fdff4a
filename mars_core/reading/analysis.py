"""Lexical analysis: the words a text is searched by (one analyser for every store).

A text becomes *terms*: its words, case- and accent-folded, without the Snowball
project's English stop words, each reduced to its Snowball (Porter 2) stem by PyStemmer,
the C build of the Snowball stemmers. So "live", "lives", "lived" and "living" all
become ``live``; a possessive makes no term of its own ("Ana's" is ``ana``), nor does a
contraction that is a stop word ("don't"). Every record store indexes the same terms
(:mod:`mars_core.storage`), so a query ranks the same memories on SQLite and PostgreSQL.

Examples:
    >>> terms("Where does Ana live?") == terms("Ana lives in Porto")[:2]
    True
    >>> terms("Ana's café; she LIKES living in Lisboa")
    ['ana', 'cafe', 'like', 'live', 'lisboa']
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

import Stemmer

__all__ = ["ANALYSER", "STOPWORDS", "stem", "terms", "words"]

ANALYSER: Final = "snowball-english-1"
"""The analyser's name and version: a record store indexed with another analyser is
re-indexed (:mod:`mars_core.storage.sqlite` migrations)."""

STOPWORDS: Final = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom
this that these those am is are was were be been being have has had having do does did
doing would should could ought i'm you're he's she's it's we're they're i've you've we've
they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't
aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't
shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's
where's why's how's a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off
over under again further then once here there when where why how all any both each few
more most other some such no nor not only own same so than too very
""".split())
"""The Snowball project's English stop word list (snowballstem.org,
``algorithms/english/stop.txt``), the list published beside the stemmer."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_STEMMER = Stemmer.Stemmer("english", 100_000)  # PyStemmer's own cache of stems


def _fold(text: str) -> str:
    """Lower case, curly apostrophes straightened, accents removed ("Inês" → "ines")."""
    text = text.translate(_APOSTROPHES).casefold()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The folded words of ``text`` that are not stop words, before stemming: a
    possessive ``'s`` is dropped, other apostrophes joined ("o'neill" → "oneill"); single
    letters are not words (digits are).

    Examples:
        >>> words("Ana's dog doesn't bark at O'Neill, 2 times")
        ['ana', 'dog', 'bark', 'oneill', '2', 'times']
    """
    out = []
    for found in _WORD.findall(_fold(text)):
        if found in STOPWORDS:
            continue
        word = found.removesuffix("'s").replace("'", "")
        if (len(word) > 1 or word.isdigit()) and word not in STOPWORDS:
            out.append(word)
    return out


def stem(word: str) -> str:
    """The Snowball English stem of one folded word.

    Examples:
        >>> [stem(w) for w in ("living", "likes", "moved")]
        ['live', 'like', 'move']
    """
    return str(_STEMMER.stemWord(word))


@lru_cache(maxsize=65_536)
def _terms(text: str) -> tuple[str, ...]:
    return tuple(_STEMMER.stemWords(words(text)))


def terms(text: str) -> list[str]:
    """The terms ``text`` is searched by, in order, repeats kept (see the module)."""
    return list(_terms(text))
