"""A retention policy driven by a frozen OSL-MR evidence learner (seed 001 §3.4).

The model (:class:`mars_core.knowledge.learn.EvidenceModel` of kind ``retention``, trained
offline by :func:`mars_core.knowledge.learn.train` / ``mars learn``) scores each memory's
P(evidence) once, when it becomes active, from online-observable features
(:func:`mars_core.knowledge.learn.retention_features`): its text, and whether the input just
before it asked a question.
An *input* is a memory not derived from another (a turn, a note; not an extracted fact or
a summary); the policy sees every insert in order, so it knows the previous input even
after that one was forgotten. Derived memories are scored on their text alone.

The budget is in tokens, so by default (``per_token=True``) the policy forgets the lowest
**expected evidence per token** first: the calibrated P(evidence)
(:meth:`~mars_core.knowledge.learn.EvidenceModel.evidence_probability`) over the memory's weight —
the greedy knapsack order, which keeps more evidence in the same tokens than the lowest
P(evidence) first (``per_token=False``). Ties: older first. Scores are cached per memory,
so a trigger costs one sort of the active set.

**Reopen.** Replaying the active memories on open cannot know a forgotten predecessor, so
the policy's state (:meth:`LearnedPolicy.state_dict`) keeps, per namespace, the ids whose
``after_question`` differs from what the replay (previous *active* input) gives, and the
newest input's flag when that one was forgotten: ids and booleans only, never text. After
``load_state`` every score is the one computed at insert.

Examples:
    >>> import tempfile, os
    >>> from mars_core.knowledge.learn import FeatureLog, retention_features, train
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

import bisect
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mars_core.errors import ConfigError, ValidationError
from mars_core.model import MemoryNode
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import Candidate, PolicyView

if TYPE_CHECKING:  # mars_core.knowledge.learn imports retrieval, which imports the policies
    from mars_core.knowledge.learn import EvidenceModel

__all__ = ["LearnedPolicy"]

_STATE_VERSION = 1


@dataclass
class _Space:
    """One namespace: scores, and the chain of active inputs for ``after_question``."""

    p: dict[str, float] = field(default_factory=dict)
    key: dict[str, float] = field(default_factory=dict)
    both: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    """Per memory: (p, key) without and with ``after_question`` (a flag fixed on reopen
    needs no text)."""
    inputs: list[tuple[int, str]] = field(default_factory=list)  # active inputs by seq
    asks: dict[str, bool] = field(default_factory=dict)  # active input -> asks a question
    flag: dict[str, bool] = field(default_factory=dict)  # active input -> after_question
    exceptions: dict[str, bool] = field(default_factory=dict)  # flag != replay value
    last_asks: bool = False  # the newest input seen asked a question
    top_seq: int = -1  # seq of the newest input seen

    def replay_value(self, pos: int) -> bool:
        """``after_question`` a replay gives the input at ``inputs[pos]``."""
        return pos > 0 and self.asks[self.inputs[pos - 1][1]]

    def recheck(self, pos: int) -> None:
        """Re-derive whether the input at ``pos`` is an exception to the replay."""
        if 0 <= pos < len(self.inputs):
            nid = self.inputs[pos][1]
            if self.flag[nid] != self.replay_value(pos):
                self.exceptions[nid] = self.flag[nid]
            else:
                self.exceptions.pop(nid, None)

    def newest_replayed(self) -> tuple[bool, int]:
        """``(last_asks, top_seq)`` as a replay of the active inputs leaves them."""
        if not self.inputs:
            return False, -1
        seq, nid = self.inputs[-1]
        return self.asks[nid], seq


@register("learned")
class LearnedPolicy(Policy):
    """Forget the memories a frozen evidence learner deems the worst use of tokens.

    Args:
        path: the model file (JSON written by ``EvidenceModel.save``).
        model: an already loaded model (instead of ``path``).
        per_token: rank by calibrated P(evidence) per token (default) instead of by the
            network's P(evidence) alone.

    Raises:
        ConfigError: neither ``path`` nor ``model``, or ``model`` is not a retention model.
        ValidationError: the file is missing, malformed, not a retention model, or was
            trained on another feature list.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 model: EvidenceModel | None = None, per_token: bool = True) -> None:
        from mars_core.knowledge.learn import EvidenceModel

        if model is None:
            if path is None:
                raise ConfigError("the learned policy needs path= (a model from `mars learn`)")
            model = EvidenceModel.load(path, kind="retention")
        elif model.kind != "retention":
            raise ConfigError("the learned policy needs a retention model")
        self.model = model
        self.path = None if path is None else os.fspath(path)
        self.per_token = bool(per_token)
        self._spaces: dict[str, _Space] = {}
        self._replaying = False

    def params(self) -> dict[str, Any]:
        """The model file, its features and the ranking, for the audit."""
        return {"path": self.path, "features": list(self.model.names),
                "per_token": self.per_token}

    def _space(self, namespace: str) -> _Space:
        return self._spaces.setdefault(namespace, _Space())

    # --- hooks ----------------------------------------------------------------------------

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Replay the active memories (on open): the previous input is the previous active
        one until :meth:`load_state` restores the exceptions."""
        self._replaying = True
        try:
            super().rebuild(nodes)
        finally:
            self._replaying = False

    def on_insert(self, node: MemoryNode) -> None:
        from mars_core.knowledge.learn import asks_question

        space = self._space(node.namespace)
        after = False
        if not node.provenance.derived_from:  # an input: it joins the chain
            entry = (node.seq, node.id)
            pos = bisect.bisect_left(space.inputs, entry)
            replay = space.replay_value(pos)
            new = not self._replaying and node.seq > space.top_seq
            after = space.last_asks if new else replay
            asks = asks_question(node.content)
            space.inputs.insert(pos, entry)
            space.asks[node.id] = asks
            space.flag[node.id] = after
            space.recheck(pos)
            space.recheck(pos + 1)
            if node.seq > space.top_seq:
                space.last_asks, space.top_seq = asks, node.seq
        self._score(space, node)
        self._use(space, node.id, after)

    def on_remove(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        space.p.pop(node.id, None)
        space.key.pop(node.id, None)
        space.both.pop(node.id, None)
        if node.id in space.asks:
            pos = bisect.bisect_left(space.inputs, (node.seq, node.id))
            del space.inputs[pos]
            del space.asks[node.id]
            del space.flag[node.id]
            space.exceptions.pop(node.id, None)
            space.recheck(pos)

    def _score(self, space: _Space, node: MemoryNode) -> None:
        """Score the memory without and with ``after_question`` (one model call)."""
        from mars_core.knowledge.learn import retention_features

        x = self.model.matrix([retention_features(node.content, after_question=a)
                               for a in (False, True)])
        if self.per_token:
            p = self.model.evidence_probability(x)
            w = max(1, node.weight)
            space.both[node.id] = (float(p[0]), float(p[0]) / w, float(p[1]), float(p[1]) / w)
        else:
            p = self.model.predict(x)
            space.both[node.id] = (float(p[0]), float(p[0]), float(p[1]), float(p[1]))

    @staticmethod
    def _use(space: _Space, nid: str, after_question: bool) -> None:
        p0, k0, p1, k1 = space.both[nid]
        space.p[nid], space.key[nid] = (p1, k1) if after_question else (p0, k0)

    # --- state (reopen) -------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Per namespace, what a replay cannot rebuild: ``{"version": 1, "namespaces":
        {ns: {"after_question": {id: bool}, "newest": [asks, seq]}}}`` — the inputs whose
        flag differs from the replay's, and the newest input seen when it is no longer
        active (``{}`` when there is nothing).

        Examples:
            >>> from mars_core.knowledge.learn import EvidenceModel, RETENTION_FEATURES
            >>> import numpy as np
            >>> d = len(RETENTION_FEATURES)
            >>> m = EvidenceModel("retention", RETENTION_FEATURES, np.zeros(d), np.ones(d),
            ...                   np.zeros((d, 2)), np.zeros(2), np.zeros(2), 0.0)
            >>> LearnedPolicy(model=m).state_dict()
            {}
        """
        spaces: dict[str, Any] = {}
        for ns in sorted(self._spaces):
            space = self._spaces[ns]
            entry: dict[str, Any] = {}
            if space.exceptions:
                entry["after_question"] = dict(sorted(space.exceptions.items()))
            if (space.last_asks, space.top_seq) != space.newest_replayed():
                entry["newest"] = [space.last_asks, space.top_seq]
            if entry:
                spaces[ns] = entry
        return {"version": _STATE_VERSION, "namespaces": spaces} if spaces else {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` after :meth:`rebuild`: the recorded flags are put
        back and those memories re-scored; ids no longer active are ignored.

        Raises:
            ValidationError: a malformed state (nothing is changed).
        """
        parsed = _parse_state(state)
        for ns, (flags, newest) in parsed.items():
            space = self._space(ns)
            for nid, after in flags.items():
                if nid in space.flag:
                    space.flag[nid] = after
                    self._use(space, nid, after)
            space.exceptions = {
                nid: space.flag[nid] for pos, (_, nid) in enumerate(space.inputs)
                if space.flag[nid] != space.replay_value(pos)}
            if newest is not None:
                space.last_asks, space.top_seq = newest

    # --- ranking --------------------------------------------------------------------------

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        space = self._space(view.namespace)
        keys = space.key
        order = sorted(keys, key=lambda i: (keys[i], view.node(i).seq))
        for nid in order:
            p, k = space.p[nid], keys[nid]
            if self.per_token:
                w = view.node(nid).weight
                yield Candidate(nid, k, {"p_evidence": p, "tokens": float(w)},
                                f"expected evidence per token {k:.5f} (P(evidence) "
                                f"{p:.3f} over {w} tokens) is among the lowest")
            else:
                yield Candidate(nid, p, {"p_evidence": p},
                                f"learned evidence probability {p:.3f} is among the lowest")


def _parse_state(state: Mapping[str, Any]
                 ) -> dict[str, tuple[dict[str, bool], tuple[bool, int] | None]]:
    if not state:
        return {}
    try:
        if state["version"] != _STATE_VERSION:
            raise ValidationError(f"learned policy state version {state['version']!r} "
                                  f"is not {_STATE_VERSION}")
        out: dict[str, tuple[dict[str, bool], tuple[bool, int] | None]] = {}
        for ns, entry in dict(state["namespaces"]).items():
            flags = {str(k): v for k, v in dict(entry.get("after_question", {})).items()}
            raw = entry.get("newest")
            if any(not isinstance(v, bool) for v in flags.values()) or (
                    raw is not None and (len(raw) != 2 or not isinstance(raw[0], bool)
                                         or not isinstance(raw[1], int))):
                raise ValidationError("malformed learned policy state")
            out[str(ns)] = (flags, None if raw is None else (raw[0], raw[1]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"malformed learned policy state: {exc}") from exc
    return out
