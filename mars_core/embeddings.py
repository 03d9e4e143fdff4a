"""Embedders: the :class:`Embedder` protocol and a deterministic :class:`HashingEmbedder`.

An embedder maps texts to fixed-dimension float32 vectors. The store records the
embedder's ``name`` and ``dim`` in its manifest and refuses to reopen with another one
(``EmbeddingMismatchError``, whose message names ``store.reembed(...)``).

:class:`HashingEmbedder` needs no model: it hashes lower-cased word unigrams, word
bigrams and character trigrams into ``dim`` signed buckets (feature hashing) with
BLAKE2b, so the same text gives the same vector on every machine and Python version.
It captures lexical overlap, not meaning; install the ``semantic`` extra for that.

Examples:
    >>> from mars_core.embeddings import HashingEmbedder
    >>> e = HashingEmbedder(dim=64)
    >>> v = e.embed(["Ana likes green tea", "Ana likes green tea"])
    >>> v.shape, float(v[0] @ v[1]) > 0.999
    ((2, 64), True)
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from mars_core.errors import ValidationError

__all__ = ["Embedder", "HashingEmbedder", "embed_one"]

Matrix = npt.NDArray[np.float32]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to vectors of a fixed dimension.

    Implementations must be deterministic for a given model and return an array of
    shape ``(len(texts), dim)``; the store L2-normalises what it stores.
    """

    name: str
    """Identifies the model (recorded in the store manifest)."""

    dim: int
    """Output dimension."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed a batch of texts."""
        ...


def embed_one(embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
    """Embed one text and check the result's shape and finiteness."""
    out = np.asarray(embedder.embed([text]), dtype=np.float32)
    if out.shape != (1, embedder.dim):
        raise ValidationError(
            f"embedder {embedder.name!r} returned shape {out.shape}, expected (1, {embedder.dim})"
        )
    if not np.all(np.isfinite(out)):
        raise ValidationError(f"embedder {embedder.name!r} returned non-finite values")
    row: npt.NDArray[np.float32] = out[0]
    return row


@lru_cache(maxsize=200_000)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Deterministic feature-hashing embedder (no model, no network).

    Args:
        dim: output dimension (default 384, the size of MiniLM, so a later switch keeps
            collection sizes).
        char_ngrams: length of character n-grams taken inside words (0 disables).

    Examples:
        >>> HashingEmbedder(dim=32).embed(["hello"]).shape
        (1, 32)
    """

    def __init__(self, dim: int = 384, char_ngrams: int = 3) -> None:
        if dim < 8:
            raise ValidationError("HashingEmbedder needs dim >= 8")
        if char_ngrams < 0:
            raise ValidationError("char_ngrams must be >= 0")
        self.dim = dim
        self.char_ngrams = char_ngrams
        self.name = f"hashing-v1-{dim}-c{char_ngrams}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = [w.lower() for w in _WORD.findall(text)]
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        feats += [(f"b:{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        n = self.char_ngrams
        if n:
            for w in words:
                padded = f"<{w}>"
                feats += [("c:" + padded[i : i + n], 0.25) for i in range(len(padded) - n + 1)]
        return feats

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed texts; each row is L2-normalised (all-zero for text without words)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, w in self._features(text):
                idx, sign = _bucket(feat, self.dim)
                out[row, idx] += sign * w
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
