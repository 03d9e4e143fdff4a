"""An incremental BM25 index, one per namespace (a view rebuilt on open).

Term statistics are kept per namespace on purpose: a shared index would let one
tenant's vocabulary change another tenant's ranking, a side channel across namespaces.

Example:
    >>> idx = BM25Index()
    >>> idx.add("a", "Ana moved to Lisbon in May"); idx.add("b", "Bo likes jazz")
    >>> [doc for doc, _ in idx.search("where did Ana move", k=2)]
    ['a']
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

__all__ = ["STOPWORDS", "BM25Index", "tokenize"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her him his how
    i if in into is it its me my of on or our she so than that the their them then there
    these they this to was we were what when where which who whom why will with would you
    your yours""".split()
)


def _stem(word: str) -> str:
    """A tiny deterministic suffix stripper (plural/-ing/-ed), enough for recall."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, lightly stemmed word tokens."""
    return [_stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


class BM25Index:
    """Okapi BM25 over an incrementally maintained inverted index.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = defaultdict(dict)
        self._doc_terms: dict[str, Counter[str]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._doc_terms)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_terms

    def add(self, doc_id: str, text: str) -> None:
        """Index a document (re-adding replaces it)."""
        if doc_id in self._doc_terms:
            self.remove(doc_id)
        terms = Counter(tokenize(text))
        self._doc_terms[doc_id] = terms
        self._doc_len[doc_id] = sum(terms.values())
        self._total_len += self._doc_len[doc_id]
        for term, tf in terms.items():
            self._postings[term][doc_id] = tf

    def remove(self, doc_id: str) -> None:
        """Remove a document; unknown ids are ignored."""
        terms = self._doc_terms.pop(doc_id, None)
        if terms is None:
            return
        self._total_len -= self._doc_len.pop(doc_id)
        for term in terms:
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(doc_id, None)
                if not posting:
                    del self._postings[term]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` documents by BM25 score (> 0), ties broken by id."""
        n = len(self._doc_terms)
        if n == 0 or k <= 0:
            return []
        avgdl = self._total_len / n if self._total_len else 1.0
        scores: dict[str, float] = defaultdict(float)
        for term in set(tokenize(query)):
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = math.log(1.0 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc_id, tf in posting.items():
                dl = self._doc_len[doc_id]
                norm = tf + self.k1 * (1 - self.b + self.b * dl / avgdl)
                scores[doc_id] += idf * tf * (self.k1 + 1) / norm
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:k]
