"""The store's vectors and text: stored vectors, embeddings, token counts, the semantic
sensitivity classifier.

:class:`VectorIO` is the one job of the engine that turns text into vectors and reads
the vectors the records keep (cached with a namespace's views,
:meth:`~mars_core.views.namespace.NamespaceState.vectors_of`); it is the
:class:`~mars_core.views.namespace.PolicyIO` a policy's view reads through, and what the
output check (:mod:`mars_core.engine.guard`) compares.

Examples:
    >>> from mars_core.budget import make_counter
    >>> from mars_core.embeddings import HashingEmbedder
    >>> from mars_core.storage import SQLiteRecordStore
    >>> io = VectorIO(SQLiteRecordStore(), HashingEmbedder(dim=8),
    ...               make_counter("whitespace"), semantic_sensitivity=False)
    >>> io.embed_rows(["hello"]).shape, io.semantic() is None
    ((1, 8), True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from mars_core.budget import TokenCounter
from mars_core.embedders import runs_locally
from mars_core.embeddings import Embedder
from mars_core.errors import ValidationError
from mars_core.privacy.semantic import SemanticSensitivity, semantic_for
from mars_core.storage.base import RecordStore, Vector
from mars_core.views.namespace import NamespaceState

__all__ = ["VectorIO"]


class VectorIO:
    """Vectors and text (see the module).

    Args:
        records: where stored vectors are read.
        embedder: text → vector (replaced by a re-embedding).
        counter: the token counter.
        semantic_sensitivity: ``StoreConfig.semantic_sensitivity`` (None: on only with
            the library's local sentence-transformers embedder).
    """

    def __init__(self, records: RecordStore, embedder: Embedder, counter: TokenCounter, *,
                 semantic_sensitivity: bool | None) -> None:
        self.records, self.embedder, self.counter = records, embedder, counter
        self.semantic_sensitivity = semantic_sensitivity
        self._semantic: tuple[str, SemanticSensitivity] | None = None

    def semantic(self) -> SemanticSensitivity | None:
        """The embedding-level sensitivity classifier of the store's embedder (fitted on
        first use, once per process and embedder; :mod:`mars_core.privacy.semantic`), or
        None when the configuration turns it off (by default: on only with the library's
        local sentence-transformers embedder; ``StoreConfig.semantic_sensitivity``)."""
        wanted = self.semantic_sensitivity
        if wanted is None:
            wanted = runs_locally(self.embedder)
        if not wanted:
            return None
        if self._semantic is None or self._semantic[0] != self.embedder.name:
            self._semantic = (self.embedder.name, semantic_for(self.embedder))
        return self._semantic[1]

    def stored_vectors(self, state: NamespaceState, ids: Sequence[str]) -> dict[str, Vector]:
        """The vectors the records keep for memories of ``state`` (read once, then kept
        with the namespace's views; a vector never changes but by re-embedding)."""
        def read(missing: list[str]) -> Mapping[str, Vector]:
            with self.records.read() as tx:
                return tx.vectors(missing)

        return state.vectors_of(ids, read)

    def vectors(self, state: NamespaceState, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length stored vectors, one row per id (zero rows for unknown ids)."""
        out = np.zeros((len(ids), self.embedder.dim), dtype=np.float32)
        found = self.stored_vectors(state, ids)
        for i, memory_id in enumerate(ids):
            vec = found.get(memory_id)
            if vec is not None:
                norm = float(np.linalg.norm(vec))
                out[i] = vec / norm if norm > 0 else vec
        return out

    def embed_rows(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts; rows L2-normalised.

        Raises:
            ValidationError: the embedder returned the wrong shape or non-finite values.
        """
        out = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        if out.shape != (len(texts), self.embedder.dim) or not np.all(np.isfinite(out)):
            raise ValidationError(f"embedder {self.embedder.name!r} returned shape "
                                  f"{out.shape} or non-finite values for {len(texts)} texts")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(out, norms, out=np.zeros_like(out),
                                                  where=norms > 0)
        return unit

    def count_tokens(self, text: str) -> int:
        """The weight of a text as a memory."""
        return max(1, self.counter.count(text))
