"""A namespace's protected facts: what the output check compares shown lines against.

The semantic pass of the output check (:class:`~mars_core.engine.guard.OutputCheck`)
asks whether a memory about to be shown restates a *protected fact* — a memory of the
namespace at least :data:`~mars_core.privacy.output.SENSITIVE_THRESHOLD` sensitive,
active or archived. :class:`ProtectedFacts` holds exactly those: their ids, creation
``seq`` and stored vectors, read by one record-store query
(:meth:`~mars_core.storage.base.RecordTxn.sensitive`) the first time a namespace's
output is checked — never the rest of its history — and then kept up to date by the
engine's staging calls (a memory stored, re-scored or erased). A check compares the few
memories it is about to show against them in one matrix product (:meth:`matrix`) and
reads the text of only the nearest few.

Verdicts (does memory ``m`` restate a protected fact, and which) depend only on the
memory, the protected facts and the store's thresholds, so they are kept here and
dropped whenever the facts change.

Examples:
    >>> import numpy as np
    >>> from mars_core.storage.base import SensitiveRow
    >>> facts = ProtectedFacts([SensitiveRow("a", 1, np.array([1, 0], np.float32))])
    >>> len(facts), "a" in facts, facts.seq("a")
    (1, True, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from mars_core.model import MemoryNode
from mars_core.privacy.detectors import Kind
from mars_core.privacy.output import SENSITIVE_THRESHOLD, Flag, Reference
from mars_core.storage.base import SensitiveRow, Vector

__all__ = ["ProtectedFacts"]

Matrix = npt.NDArray[np.float64]


class ProtectedFacts:
    """The protected facts of one namespace (see the module).

    Args:
        rows: the namespace's sensitive memories with their vectors.
    """

    def __init__(self, rows: Iterable[SensitiveRow]) -> None:
        self._seq: dict[str, int] = {}
        self._vectors: dict[str, Vector | None] = {}
        for row in rows:
            self._seq[row.id] = row.seq
            self._vectors[row.id] = row.vector
        self._matrix: tuple[list[str], Matrix] | None = None
        self.verdicts: dict[str, Flag | None] = {}
        """What the check decided about memories, by id (dropped on any change)."""
        self.references: dict[str, Reference] = {}
        """What the check read of protected facts, by id (their kinds and anchors)."""
        self.classified: dict[str, Kind | None] = {}
        """The embedding-level classifier's category of memories checked, by id (content
        never changes: kept until the memory is erased)."""
        self.pinned: dict[str, bool] = {}
        """Whether a fact read has words of a sensitive category (a lexicon span): then
        its sensitivity is pinned to those words, and a restatement of it is masked at
        its own category words, not at every word it shares with the fact."""

    def __len__(self) -> int:
        return len(self._seq)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._seq

    def seq(self, node_id: str) -> int | None:
        """A protected fact's creation sequence (``None``: not one)."""
        return self._seq.get(node_id)

    def follow(self, node: MemoryNode, vector: Vector | None = None) -> None:
        """A memory was stored (with its ``vector``) or its metadata changed: it joins,
        stays or leaves as its sensitivity says."""
        if node.sensitivity < SENSITIVE_THRESHOLD:
            self.drop(node.id)
            return
        if node.id in self._seq and vector is None:
            return
        self._seq[node.id] = node.seq
        self._vectors[node.id] = vector if vector is not None else None
        self._changed()

    def drop(self, node_id: str, *, erased: bool = False) -> None:
        """A memory is no longer sensitive, or was ``erased``."""
        if erased:
            self.classified.pop(node_id, None)
            self.verdicts.pop(node_id, None)
        if self._seq.pop(node_id, None) is not None:
            self._vectors.pop(node_id, None)
            self.references.pop(node_id, None)
            self.pinned.pop(node_id, None)
            self._changed()

    def _changed(self) -> None:
        self._matrix = None
        self.verdicts.clear()

    def matrix(self, read: Callable[[Sequence[str]], dict[str, Vector]]
               ) -> tuple[list[str], Matrix]:
        """The facts' ids and their unit vectors, one row each (``read`` supplies the
        vectors of facts that joined without one: a memory re-scored as sensitive)."""
        if self._matrix is None:
            missing = [i for i, v in self._vectors.items() if v is None]
            if missing:
                found = read(missing)
                for i in missing:
                    self._vectors[i] = found.get(i)
            ids = [i for i, v in self._vectors.items() if v is not None]
            rows = np.array([self._vectors[i] for i in ids], dtype=np.float64) \
                .reshape(len(ids), -1)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            unit: Matrix = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
            self._matrix = (ids, unit)
        return self._matrix
