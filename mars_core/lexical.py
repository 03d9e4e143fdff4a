"""An incremental BM25 index, one per namespace (a view rebuilt on open).

Term statistics are kept per namespace on purpose: a shared index would let one
tenant's vocabulary change another tenant's ranking, a side channel across namespaces.

Examples:
    >>> idx = BM25Index()
    >>> idx.add("a", "Ana moved to Lisbon in May"); idx.add("b", "Bo likes jazz")
    >>> [doc for doc, _ in idx.search("where did Ana move", k=2)]
    ['a']
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

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

    Postings map a term to ``{slot: term frequency}``; scoring gathers each query
    term's postings into numpy arrays (kept until the term's postings change), so a query
    costs O(postings of its terms) in C loops. Ties are broken by document id, so the
    ranking does not depend on slot assignment (which differs after a reopen).

    Each document may carry a ``stamp`` (the store passes its creation time): a search
    with a ``window`` ranks only the documents stamped inside it — the temporal range
    index of seed 000 §3.2.5 on the lexical side, one vectorised comparison over the
    stamps, so a ``since``/``until`` query gets the window's best documents instead of
    the namespace's best ones filtered afterwards. Scores do not change: term statistics
    (IDF, average length) stay the namespace's.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = defaultdict(dict)
        self._doc_terms: dict[str, tuple[int, tuple[str, ...]]] = {}  # slot, terms
        self._ids: list[str] = []
        self._free: list[int] = []
        self._dl = np.zeros(16, dtype=np.float64)
        self._stamps = np.zeros(16, dtype=np.float64)
        self._total_len = 0
        # a term's postings as arrays (slots, term frequencies), until they change
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}

    def __len__(self) -> int:
        return len(self._doc_terms)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_terms

    def _slot(self, doc_id: str) -> int:
        if self._free:
            slot = self._free.pop()
            self._ids[slot] = doc_id
            return slot
        slot = len(self._ids)
        self._ids.append(doc_id)
        if slot >= len(self._dl):
            self._dl = np.concatenate([self._dl, np.zeros(len(self._dl))])
            self._stamps = np.concatenate([self._stamps, np.zeros(len(self._stamps))])
        return slot

    def add(self, doc_id: str, text: str, stamp: float = 0.0) -> None:
        """Index a document (re-adding replaces it); ``stamp`` places it in time."""
        if doc_id in self._doc_terms:
            self.remove(doc_id)
        terms = Counter(map(sys.intern, tokenize(text)))  # one string per term, not per doc
        slot = self._slot(doc_id)
        self._doc_terms[doc_id] = (slot, tuple(terms))  # frequencies live in the postings
        length = sum(terms.values())
        self._dl[slot] = length
        self._stamps[slot] = stamp
        self._total_len += length
        for term, tf in terms.items():
            self._postings[term][slot] = tf
            self._arrays.pop(term, None)

    def remove(self, doc_id: str) -> None:
        """Remove a document; unknown ids are ignored."""
        entry = self._doc_terms.pop(doc_id, None)
        if entry is None:
            return
        slot, terms = entry
        self._total_len -= int(self._dl[slot])
        self._dl[slot] = 0
        self._free.append(slot)
        for term in terms:
            self._arrays.pop(term, None)
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(slot, None)
                if not posting:
                    del self._postings[term]

    def search(self, query: str, k: int, *,
               corpus: Sequence[BM25Index] | None = None,
               window: tuple[float | None, float | None] | None = None
               ) -> list[tuple[str, float]]:
        """Top ``k`` documents by BM25 score (> 0), ties broken by id.

        Args:
            query: the text.
            k: how many.
            corpus: indexes this one belongs to, itself included: scores use the
                statistics of all of them — document count, document frequencies, mean
                length — so that the scores of indexes that partition one collection
                (active and archived memories) are on one scale, as if they were one
                index.
            window: ``(since, until)``, inclusive, either ``None`` for open: only
                documents stamped inside are ranked (their scores do not change).

        Examples:
            >>> a, b = BM25Index(), BM25Index()
            >>> a.add("x", "tea with Ana"); b.add("y", "tea with Bo"); b.add("z", "jazz")
            >>> whole = BM25Index()
            >>> for i, t in (("x", "tea with Ana"), ("y", "tea with Bo"), ("z", "jazz")):
            ...     whole.add(i, t)
            >>> a.search("Ana tea", 1, corpus=[a, b]) == whole.search("Ana tea", 1)
            True
            >>> idx = BM25Index()
            >>> idx.add("old", "Ana moved to Lisbon", stamp=1.0)
            >>> idx.add("new", "Ana moved to Porto", stamp=5.0)
            >>> [d for d, _ in idx.search("Ana moved", k=5, window=(2.0, None))]
            ['new']
        """
        return self.ranked(query, k, corpus=corpus, window=window)[0]

    def ranked(self, query: str, k: int, *,
               corpus: Sequence[BM25Index] | None = None,
               window: tuple[float | None, float | None] | None = None
               ) -> tuple[list[tuple[str, float]], float]:
        """:meth:`search`, with the best score of the whole index (window or not).

        Retrieval normalises lexical scores by that best score, so a window changes which
        documents are candidates, never their scores: a windowed ranking is the
        unwindowed one without the documents outside.
        """
        parts = [self] if corpus is None else list(corpus)
        n = sum(len(p._doc_terms) for p in parts)
        if not self._doc_terms or k <= 0:
            return [], 0.0
        total = sum(p._total_len for p in parts)
        avgdl = total / n if total else 1.0
        scores = np.zeros(len(self._ids), dtype=np.float64)
        for term in set(tokenize(query)):
            posting = self._postings.get(term)
            if not posting:
                continue
            df = sum(len(p._postings.get(term, ())) for p in parts)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            idx, tf = self._array(term, posting)
            norm = tf + self.k1 * (1 - self.b + self.b * self._dl[idx] / avgdl)
            scores[idx] += idf * tf * (self.k1 + 1) / norm
        best = float(scores.max(initial=0.0))
        if window is not None:
            since, until = window
            stamps = self._stamps[: len(scores)]
            if since is not None:
                scores[stamps < since] = 0.0
            if until is not None:
                scores[stamps > until] = 0.0
        hit = np.flatnonzero(scores > 0)
        if len(hit) > k:
            kth = np.partition(scores[hit], len(hit) - k)[len(hit) - k]
            hit = hit[scores[hit] >= kth]  # keep ties at the boundary; ids break them below
        ranked = sorted(((self._ids[i], float(scores[i])) for i in hit),
                        key=lambda kv: (-kv[1], kv[0]))
        return ranked[:k], best

    def _array(self, term: str, posting: dict[int, int]
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """A term's postings as (slots, term frequencies) arrays, built once per change."""
        cached = self._arrays.get(term)
        if cached is None:
            cached = self._arrays[term] = (
                np.fromiter(posting.keys(), dtype=np.int64, count=len(posting)),
                np.fromiter(posting.values(), dtype=np.float64, count=len(posting)))
        return cached
