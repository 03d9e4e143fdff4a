"""A retention policy driven by a frozen OSL-MR evidence learner (seed 001 §3.4).

The model (:class:`mars_core.learn.EvidenceModel` of kind ``retention``, trained offline by
:func:`mars_core.learn.train` / ``mars learn``) scores each memory's P(evidence) from
online-observable features of its text when it becomes active; the policy forgets the
lowest-scoring memories first (older first on ties). Scores are cached per memory, so a
trigger costs one sort of the active set.

Examples:
    >>> import tempfile, os
    >>> from mars_core.learn import FeatureLog, retention_features, train
    >>> log = FeatureLog()
    >>> for i in range(30):
    ...     log.add("retention", retention_features(f"Ana: got a dog in {1990 + i}"
    ...                                             if i % 3 else "Bo: ok"), int(i % 3 > 0))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
    >>> train(log.rows("retention"), kind="retention").save(path)
    >>> LearnedPolicy(path).name
    'learned'
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mars_core.model import MemoryNode
from mars_core.policies.base import Candidate, Policy, PolicyView, register

if TYPE_CHECKING:  # mars_core.learn imports retrieval, which imports the policies
    from mars_core.learn import EvidenceModel

__all__ = ["LearnedPolicy"]


@register("learned")
class LearnedPolicy(Policy):
    """Forget the memories a frozen evidence learner deems least likely to be evidence.

    Args:
        path: the model file (JSON written by ``EvidenceModel.save``).
        model: an already loaded model (instead of ``path``).

    Raises:
        ValidationError: the file is missing, malformed, or not a retention model.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 model: EvidenceModel | None = None) -> None:
        from mars_core.learn import EvidenceModel

        if model is None:
            if path is None:
                from mars_core.errors import ConfigError

                raise ConfigError("the learned policy needs path= (a model from `mars learn`)")
            model = EvidenceModel.load(path, kind="retention")
        elif model.kind != "retention":
            from mars_core.errors import ConfigError

            raise ConfigError("the learned policy needs a retention model")
        self.model = model
        self.path = None if path is None else os.fspath(path)
        self._score: dict[str, dict[str, float]] = defaultdict(dict)

    def params(self) -> dict[str, Any]:
        """The model file and its features, for the audit."""
        return {"path": self.path, "features": list(self.model.names)}

    def on_insert(self, node: MemoryNode) -> None:
        from mars_core.learn import retention_features

        self._score[node.namespace][node.id] = self.model.predict_one(
            retention_features(node.content))

    def on_remove(self, node: MemoryNode) -> None:
        self._score[node.namespace].pop(node.id, None)

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        scores = self._score[view.namespace]
        order = sorted(scores, key=lambda i: (scores[i], view.node(i).seq))
        for nid in order:
            p = scores[nid]
            yield Candidate(nid, p, {"p_evidence": p},
                            f"learned evidence probability {p:.3f} is among the lowest")
