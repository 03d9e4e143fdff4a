"""The semantic pass of one ``render_context`` call (:mod:`mars_core.privacy.output`).

:class:`OutputGuard` decides, for each memory about to be shown, whether it restates a
sensitive or erased memory, and what is shown instead: nothing (withheld), or what the
store's ``rephrase_or_confirm`` hook answered. It reads the namespace's views and the
stored vectors; it writes nothing. Decisions are kept for the call, so a memory shown
twice (as evidence and as support) asks the hook once.

Examples:
    >>> from mars_core.engine.guard import OutputGuard
    >>> OutputGuard.__name__
    'OutputGuard'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final, Protocol, TypeVar

import numpy as np

from mars_core.engine.engine import Engine
from mars_core.engine.namespace import NamespaceState
from mars_core.model import MemoryNode
from mars_core.privacy.detectors import CATEGORY_KINDS, Kind, detect
from mars_core.privacy.output import (
    ERASED_SIGNAL,
    SENSITIVE_THRESHOLD,
    Candidate,
    Flag,
    FlaggedText,
    Reference,
    Section,
    ask,
    find_flagged,
)
from mars_core.privacy.semantic import Anchors, Calibration, semantic_for

__all__ = ["TOPIC_KINDS", "OutputGuard", "calibration", "sensitive_kinds"]


class _HasNode(Protocol):
    @property
    def node(self) -> MemoryNode: ...


_H = TypeVar("_H", bound=_HasNode)

TOPIC_KINDS: Final = CATEGORY_KINDS | {Kind.SECRET, Kind.ADDRESS}
"""The kinds that name a sensitive category (the classifier's categories map onto them)."""


def sensitive_kinds(engine: Engine, state: NamespaceState, node_id: str | None,
                    text: str) -> frozenset[Kind]:
    """A text's sensitive categories: the lexicons' and, when the store uses it, the
    classifier's. Cached per memory (``node_id``): content never changes."""
    cache = state.privacy_kinds
    if node_id is not None and node_id in cache:
        return cache[node_id]
    found = {d.kind for d in detect(text, kinds=TOPIC_KINDS)}
    model = engine.semantic()
    if model is not None:
        vec = engine.vectors(state, [node_id]) if node_id is not None \
            else engine.embed_rows([text])
        verdict = model.verdicts(vec)[0]
        if verdict.flagged:
            found.add(verdict.kind)
    out = frozenset(found)
    if node_id is not None:
        cache[node_id] = out
    return out


def calibration(engine: Engine) -> Calibration:
    """The restatement thresholds of the store's embedder (its classifier's calibration;
    calibrated even when the classifier is off)."""
    return (engine.semantic() or semantic_for(engine.embedder)).calibration


class OutputGuard:
    """The semantic pass of one call over one namespace (see the module).

    Build it with :meth:`for_call`; ``None`` means there is nothing to guard against.
    """

    def __init__(self, engine: Engine, state: NamespaceState,
                 references: Sequence[MemoryNode]) -> None:
        self.e, self.state = engine, state
        self.hook = engine.config.rephrase_or_confirm
        self.counts: Counter[str] = Counter()
        self._decided: dict[str, str | None] = {}
        self._flags: dict[str, Flag] = {}
        self._refs = [Reference(n.id, n.seq, self.kinds(n.id, n.content), Anchors.of(n.content))
                      for n in references]
        self._ref_vectors = engine.vectors(state, [n.id for n in references])
        self._calibration: Calibration | None = None

    @classmethod
    def for_call(cls, engine: Engine, state: NamespaceState) -> OutputGuard:
        """The guard of a call: the namespace's sensitive memories (active and
        archived, sensitivity ≥ 0.7) are the references."""
        with engine.records.read() as tx:
            return cls(engine, state, tx.sensitive(state.name, SENSITIVE_THRESHOLD))

    def kinds(self, node_id: str | None, text: str) -> frozenset[Kind]:
        """A text's sensitive categories (see :func:`sensitive_kinds`)."""
        return sensitive_kinds(self.e, self.state, node_id, text)

    def _cal(self) -> Calibration:
        if self._calibration is None:
            self._calibration = calibration(self.e)
        return self._calibration

    def check(self, nodes: Sequence[MemoryNode]) -> None:
        """Find which of ``nodes`` are flagged (before any is shown)."""
        todo = [n for n in nodes if n.id not in self._flags and n.id not in self._decided]
        if not todo:
            return
        marked = [n for n in todo if n.signals.get(ERASED_SIGNAL, 0.0) > 0.0]
        for n in marked:
            self._flags[n.id] = Flag("erased", "marked", n.signals[ERASED_SIGNAL], None)
        rest = [n for n in todo if n.id not in self._flags]
        if not rest or not self._refs:
            return
        cands = [Candidate(n.id, n.seq, self.kinds(n.id, n.content),
                           anchors=Anchors.of(n.content)) for n in rest]
        self._flags.update(find_flagged(
            cands, self.e.vectors(self.state, [n.id for n in rest]), self._refs,
            self._ref_vectors, self._cal(),
            paraphrase_threshold=self.e.config.paraphrase_threshold))

    def drop(self, hits: list[_H], would_show: Callable[[list[_H]], list[_H]]) -> list[_H]:
        """``hits`` without the flagged ones (checked already), for a call without a hook.

        ``would_show`` is what the call would show of a list of hits; the flagged hits
        among what it would show of the unfiltered list are counted as withheld (and
        decided: each is withheld wherever else it would appear).
        """
        flagged = {h.node.id for h in hits if h.node.id in self._flags}
        if not flagged:
            return hits
        self.counts["withheld"] += sum(h.node.id in flagged for h in would_show(hits))
        for nid in flagged:
            self._decided[nid] = None
        return [h for h in hits if h.node.id not in flagged]

    def withheld(self, node_id: str) -> bool:
        """Whether ``node_id`` was decided withheld in this call."""
        return node_id in self._decided and self._decided[node_id] is None

    def text(self, node: MemoryNode, section: Section) -> str | None:
        """What to show for ``node``: its text, the hook's rephrasing, or None (withheld).

        Raises:
            PrivacyHookError: the hook failed (nothing is shown or recorded).
        """
        if node.id in self._decided:
            return self._decided[node.id]
        self.check([node])
        flag = self._flags.get(node.id)
        shown: str | None = node.content
        if flag is not None:
            shown = self._resolve(node, section, flag)
        self._decided[node.id] = shown
        return shown

    def _resolve(self, node: MemoryNode, section: Section, flag: Flag) -> str | None:
        if self.hook is None:
            self.counts["withheld"] += 1
            return None
        answer = ask(self.hook, FlaggedText(node.content, node.id, section, flag.reason,
                                            flag.route, flag.similarity, flag.category))
        if answer is True:
            self.counts["confirmed"] += 1
            return node.content
        if answer is False:
            self.counts["withheld"] += 1
            return None
        if self._restates(node, answer):
            self.counts["rephrasing_withheld"] += 1
            return None
        self.counts["rephrased"] += 1
        return answer

    def _restates(self, node: MemoryNode, text: str) -> bool:
        """Whether a rephrasing of ``node`` still restates a sensitive memory."""
        if not self._refs:
            return False
        cand = Candidate(node.id, node.seq, self.kinds(None, text), anchors=Anchors.of(text))
        flags = find_flagged([cand], self.e.embed_rows([text]).astype(np.float64), self._refs,
                             self._ref_vectors, self._cal(),
                             paraphrase_threshold=self.e.config.paraphrase_threshold)
        return node.id in flags
