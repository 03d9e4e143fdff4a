"""The output check: what of each memory may leave the store, on every exit.

Seed 000 §4.3: "Before emission, a lightweight redaction layer performs a two-pass check:
a fast pass over the surface form using detectors and templates, followed by a semantic
pass that validates that no high-risk facts are being disclosed outside policy."
Every read that hands memory text to a caller — ``retrieve``, ``recall``,
``render_context`` and :meth:`~mars_core.store.MemoryStore.check_output` (what the
framework adapters call for what they read by other means) — goes through one
:class:`OutputCheck`, which decides per memory what is shown (:class:`Shown`):

* **the surface pass** masks identifiers and contact details in every memory;
* a **sensitive** memory (sensitivity ≥ 0.7) also has its category words masked
  (health, protected attributes, finance), or — when only the embedding-level
  classifier saw its category — its whole text;
* **the semantic pass** compares the memory with the namespace's protected facts
  (:class:`~mars_core.views.protected.ProtectedFacts`, the nearest few by their stored
  vectors): one that *restates* a protected fact (:func:`~mars_core.privacy.output.find_flagged`)
  has its category words masked, and — when it is a close restatement (centred cosine at
  least the embedder's ``close_threshold``) — the words it shares with the fact it
  restates, beyond the names of their subject;
* a memory marked as restating an **erased** one is withheld;
* a memory a **consent grant** covers is shown with its identifiers masked only (the
  user consented to recall it).

With a ``rephrase_or_confirm`` hook (:class:`~mars_core.config.StoreConfig`), a memory
that restates closely or restates an erased one is passed to it instead: a rephrasing
(checked again), a confirmation (shown with its identifiers masked) or a refusal
(withheld). The user's private and blocked entities are masked as ``[PRIVATE]``
everywhere. Decisions are kept for the call, and what does not change between calls
(restatement verdicts, the facts read) with the namespace's protected facts.

Examples:
    The store keeps what it was given; what leaves it has its identifiers masked:

    >>> from mars_core import FakeClock, MemoryStore
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     note = store.add("Call Ana at ana@example.com or +351 912 345 678")
    ...     store.get(note.id).content, [hit.text for hit in store.retrieve("reach Ana")]
    ('Call Ana at ana@example.com or +351 912 345 678', ['Call Ana at [EMAIL] or [PHONE]'])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mars_core.engine.engine import Engine
from mars_core.engine.vectors import VectorIO
from mars_core.model import JSONValue, MemoryNode
from mars_core.privacy.detectors import CATEGORY_KINDS, DEFAULT_WEIGHTS, Kind, detect
from mars_core.privacy.masking import Masker
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
from mars_core.privacy.semantic import Anchors, Calibration, prose, semantic_for
from mars_core.views.namespace import NamespaceState
from mars_core.views.protected import ProtectedFacts

__all__ = ["NEAREST", "TOPIC_KINDS", "OutputCheck", "Shown", "calibration", "sensitive_kinds"]

TOPIC_KINDS: Final = CATEGORY_KINDS | {Kind.SECRET, Kind.ADDRESS}
"""The kinds that name a sensitive category (the classifier's categories map onto them)."""

NEAREST: Final = 8
"""How many protected facts, the nearest by centred cosine, the semantic pass reads to
decide whether a memory restates one (the others are farther than these)."""

_ID_FIELDS: Final = frozenset({"kind", "interaction_history", "dependencies"})
"""Payload fields that hold ids or a tag, not text."""


def sensitive_kinds(io: VectorIO, state: NamespaceState, node_id: str | None,
                    text: str) -> frozenset[Kind]:
    """A text's sensitive categories: the lexicons' and, when the store uses it, the
    classifier's. Cached per memory (``node_id``): content never changes."""
    def find() -> frozenset[Kind]:
        found = {d.kind for d in detect(text, kinds=TOPIC_KINDS)}
        model = io.semantic()
        if model is not None:
            vec = io.vectors(state, [node_id]) if node_id is not None \
                else io.embed_rows([text])
            verdict = model.verdicts(vec)[0]
            if verdict.flagged:
                found.add(verdict.kind)
        return frozenset(found)

    return state.kinds_of(node_id, find)


def calibration(io: VectorIO) -> Calibration:
    """The restatement thresholds of the store's embedder (its classifier's calibration;
    calibrated even when the classifier is off)."""
    return (io.semantic() or semantic_for(io.embedder)).calibration


@dataclass(frozen=True, slots=True)
class Shown:
    """What the output check lets out of one memory.

    Attributes:
        node: the memory as it may be shown — its content, payload texts and metadata
            string values masked (or the hook's rephrasing as its content); ``None``
            when it is withheld.
        kinds: the kinds of what was masked (``phone``, ``health``...), sorted.
        masker: the masks of this memory: :meth:`mask` applies them to another text or
            JSON value of it (a LangGraph item's value; every string of a withheld memory
            becomes ``[PRIVATE]``); ``None``: the check was off.
    """

    node: MemoryNode | None
    kinds: tuple[str, ...]
    masker: Masker | None

    @property
    def withheld(self) -> bool:
        """Whether nothing of the memory may be shown."""
        return self.node is None

    def mask(self, value: JSONValue) -> JSONValue:
        """``value`` with this memory's masks applied to its string leaves (as it is
        when the check was off)."""
        return value if self.masker is None else self.masker.mask_value(value)


def _category_kind(name: str | None) -> Kind:
    return Kind(name) if name is not None and name in Kind._value2member_map_ else Kind.PRIVATE


class OutputCheck:
    """The output check of one call over one namespace (see the module).

    Args:
        engine: the store's engine.
        state: the namespace's views.
    """

    def __init__(self, engine: Engine, state: NamespaceState) -> None:
        self.engine, self.state = engine, state
        self.hook = engine.config.rephrase_or_confirm
        self.counts: Counter[str] = Counter()
        self.now = engine.clock.now()
        prefs = state.prefs
        self.prefs = prefs
        self.phrases = tuple(dict.fromkeys(
            [*prefs.private_entities, *prefs.blocked_entities])) if prefs is not None else ()
        self.decided: dict[str, Shown] = {}
        """What was decided in this call, by memory id."""

    # --- the semantic pass --------------------------------------------------------------

    def facts(self) -> ProtectedFacts:
        """The namespace's protected facts (read on first use; see the engine)."""
        return self.engine.protected(self.state)

    def _cal(self) -> Calibration:
        return calibration(self.engine.io)

    def check(self, nodes: Sequence[MemoryNode]) -> None:
        """Decide which of ``nodes`` restate a protected or an erased memory (in one
        matrix product over the protected facts; kept with them)."""
        facts = self.facts()
        todo = [n for n in {n.id: n for n in nodes}.values() if n.id not in facts.verdicts]
        for n in todo:  # a paraphrase of an erased memory: nothing else matters
            if self._strongly_marked(n):
                facts.verdicts[n.id] = self._erased(n)
        rest = [n for n in todo if n.id not in facts.verdicts]
        if not len(facts):
            facts.verdicts.update((n.id, self._erased(n)) for n in rest)
        if not rest or not len(facts):
            return
        ids, refs = facts.matrix(lambda i: self.engine.io.stored_vectors(self.state, i))
        vectors = self.engine.io.vectors(self.state, [n.id for n in rest]).astype(np.float64)
        near = self._nearest(facts, ids, refs, vectors, rest)
        references = self._references(
            facts, sorted({ids[j] for js in near for j in js} | {n.id for n in rest
                                                               if n.id in facts}),
            {n.id: n for n in rest})
        row = {i: j for j, i in enumerate(ids)}
        for i, node in enumerate(rest):
            chosen = [j for j in near[i] if ids[j] in references]
            if node.id in references:  # a fact itself: only older facts can be its source
                chosen.append(row[node.id])
            cand = Candidate(node.id, node.seq, self.kinds(node),
                             anchors=Anchors.of(node.content))
            found = find_flagged([cand], vectors[i:i + 1], [references[ids[j]] for j in chosen],
                                 refs[chosen], self._cal(),
                                 paraphrase_threshold=self.engine.config.paraphrase_threshold)
            facts.verdicts[node.id] = found.get(node.id) or self._erased(node)

    def _nearest(self, facts: ProtectedFacts, ids: Sequence[str], refs: npt.NDArray[Any],
                 vectors: npt.NDArray[Any], nodes: Sequence[MemoryNode]) -> list[list[int]]:
        """For each memory, the rows of the :data:`NEAREST` facts it may restate: at the
        topic threshold or above (centred cosine), not itself, older than it if it is
        one."""
        cal = self._cal()
        sims = cal.centred(vectors) @ cal.centred(refs).T
        floor = min(cal.topic_threshold, self._strong())
        out = []
        for i, node in enumerate(nodes):
            mine = facts.seq(node.id)
            keep = [int(j) for j in np.argsort(-sims[i], kind="stable")
                    if sims[i, j] >= floor and ids[j] != node.id
                    and (mine is None or (facts.seq(ids[j]) or 0) < mine)]
            out.append(keep[:NEAREST])
        return out

    @staticmethod
    def _erased(node: MemoryNode) -> Flag | None:
        """The flag of an erasure's mark on ``node``, if it has one."""
        mark = node.signals.get(ERASED_SIGNAL, 0.0)
        return Flag("erased", "marked", mark, None) if mark > 0.0 else None

    def _references(self, facts: ProtectedFacts, ids: Sequence[str],
                    given: Mapping[str, MemoryNode]) -> dict[str, Reference]:
        """The protected facts ``ids`` as references (their text read once, by id)."""
        missing = [i for i in ids if i not in facts.references]
        nodes = {i: given[i] for i in missing if i in given}
        unread = [i for i in missing if i not in nodes]
        if unread:
            with self.engine.records.read() as tx:
                for i in unread:
                    node = tx.memory(i)
                    if node is not None and node.namespace == self.state.name:
                        nodes[i] = node
        for i, node in nodes.items():
            facts.references[i] = Reference(i, node.seq, self.kinds(node),
                                            Anchors.of(node.content))
            facts.pinned[i] = bool(detect(node.content, kinds=CATEGORY_KINDS))
        return {i: facts.references[i] for i in ids if i in facts.references}

    def kinds(self, node: MemoryNode) -> frozenset[Kind]:
        """A memory's sensitive kinds (see :func:`sensitive_kinds`)."""
        return sensitive_kinds(self.engine.io, self.state, node.id, node.content)

    def _classifier_kind(self, nodes: Sequence[MemoryNode]) -> None:
        """The classifier's category of each memory that it flags (one product; kept
        with the protected facts)."""
        model = self.engine.io.semantic()
        known = self.facts().classified
        todo = [n for n in {n.id: n for n in nodes}.values() if n.id not in known]
        if not todo:
            return
        if model is None:
            known.update((n.id, None) for n in todo)
            return
        vectors = self.engine.io.vectors(self.state, [n.id for n in todo])
        # a JSON item (a LangGraph value indexed whole) is read by what it says: its
        # stored vector embeds the keys too, which the classifier was not fitted on
        items = [i for i, n in enumerate(todo) if prose(n.content) != n.content]
        if items:
            vectors[items] = self.engine.io.embed_rows([prose(todo[i].content) for i in items])
        verdicts = model.verdicts(vectors)
        for node, verdict in zip(todo, verdicts, strict=True):
            known[node.id] = verdict.kind if verdict.flagged else None

    # --- what is shown --------------------------------------------------------------------

    def prepare(self, nodes: Sequence[MemoryNode]) -> None:
        """Run the batched parts of the check for memories about to be shown."""
        self.check(nodes)
        self._classifier_kind(nodes)

    def withheld_before(self, node: MemoryNode) -> bool:
        """Whether ``node`` is withheld whatever the hook says (checked before a cut:
        without a hook, a memory that paraphrases an erased one)."""
        return self.hook is None and self._strongly_marked(node)

    def shown(self, node: MemoryNode, section: Section = "evidence") -> Shown:
        """What may be shown of ``node`` (decided once per call).

        Raises:
            PrivacyHookError: the hook failed (nothing is shown or recorded).
        """
        done = self.decided.get(node.id)
        if done is not None:
            return done
        self.prepare([node])
        flag = self.facts().verdicts.get(node.id)
        consented = self._consented(node)
        sensitive = node.sensitivity >= SENSITIVE_THRESHOLD
        own = Masker(categories=sensitive or flag is not None, phrases=self.phrases,
                     fallback=self.facts().classified.get(node.id) if sensitive else None)
        text: str | None = node.content
        if self._flagged(flag):
            assert flag is not None
            masker = self._restating(node, flag, own)
            if self.hook is not None:
                text, masker = self._resolve(node, section, flag,
                                             Masker(phrases=self.phrases), masker)
            elif flag.reason == "erased":
                text = None
                self.counts["withheld"] += 1
        elif consented:
            masker = Masker()
        else:
            masker = own
        out = self._apply(node, text, masker)
        self.decided[node.id] = out
        return out

    def _strongly_marked(self, node: MemoryNode) -> bool:
        """Whether an erasure marked ``node`` as a paraphrase (at the paraphrase
        threshold or above; the calibration is read only for a marked memory)."""
        mark = node.signals.get(ERASED_SIGNAL, 0.0)
        return mark > 0.0 and mark >= self._strong()

    def _strong(self) -> float:
        return self.engine.config.paraphrase_threshold or self._cal().paraphrase_threshold

    def _flagged(self, flag: Flag | None) -> bool:
        """Whether a verdict calls for more than the category words: a close
        restatement of a protected fact, or a paraphrase of an erased memory (an
        erasure's mark at the paraphrase threshold or above; a mark of the topic route
        alone — the same sensitive category — masks the category words)."""
        if flag is None:
            return False
        if flag.reason == "erased":
            return flag.similarity >= self._strong()
        return flag.similarity >= self._cal().close_threshold

    def _restating(self, node: MemoryNode, flag: Flag, own: Masker) -> Masker:
        """The masks of a close restatement: its own (its category words); the words it
        shares with the fact it restates when that fact's sensitivity is not pinned to
        words of its own (a mark, a private entity, the classifier); the whole text when
        the classifier reads it as sensitive too."""
        facts = self.facts()
        ref = facts.references.get(flag.reference or "")
        shared = frozenset[str]()
        if ref is not None and ref.anchors is not None and not facts.pinned.get(ref.node_id):
            shared = Anchors.of(node.content).common(ref.anchors)
        return replace(own, whole=self.facts().classified.get(node.id), shared=shared,
                       shared_kind=_category_kind(flag.category))

    def _resolve(self, node: MemoryNode, section: Section, flag: Flag, plain: Masker,
                 masker: Masker) -> tuple[str | None, Masker]:
        """Ask the hook about a flagged memory: the text to show and its masks."""
        assert self.hook is not None
        answer = ask(self.hook, FlaggedText(node.content, node.id, section, flag.reason,
                                            flag.route, flag.similarity, flag.category))
        if answer is True:
            self.counts["confirmed"] += 1
            return node.content, plain
        if answer is False:
            self.counts["withheld"] += 1
            return None, masker
        if self._still_restates(node, answer):
            self.counts["rephrasing_withheld"] += 1
            return None, masker
        self.counts["rephrased"] += 1
        return answer, plain

    def _still_restates(self, node: MemoryNode, text: str) -> bool:
        """Whether a rephrasing of ``node`` restates one of the facts near it."""
        facts = self.facts()
        if not len(facts):
            return False
        cal = self._cal()
        ids, refs = facts.matrix(lambda i: self.engine.io.stored_vectors(self.state, i))
        vector = self.engine.io.embed_rows([text]).astype(np.float64)
        sims = (cal.centred(vector) @ cal.centred(refs).T)[0]
        near = [int(j) for j in np.argsort(-sims, kind="stable")[:NEAREST] if ids[j] != node.id]
        references = self._references(facts, [ids[j] for j in near], {})
        chosen = [j for j in near if ids[j] in references]
        cand = Candidate(node.id, node.seq, sensitive_kinds(self.engine.io, self.state, None, text),
                         anchors=Anchors.of(text))
        return node.id in find_flagged([cand], vector, [references[ids[j]] for j in chosen],
                                       refs[chosen], cal,
                                       paraphrase_threshold=self.engine.config.paraphrase_threshold)

    def _consented(self, node: MemoryNode) -> bool:
        prefs = self.prefs
        return prefs is not None and any(c.covers(node, self.now) for c in prefs.consents)

    def _apply(self, node: MemoryNode, text: str | None, masker: Masker) -> Shown:
        """The memory as ``masker`` lets it out, with ``text`` as its content."""
        if text is None:  # nothing of it: every other text of it is masked whole too
            return Shown(None, (), Masker(whole=Kind.PRIVATE))
        kinds: set[str] = set()

        def leaf(value: Any) -> Any:
            if isinstance(value, str):
                result = masker.mask(value)
                kinds.update(k.value for k in result.kinds)
                return result.text
            if isinstance(value, tuple):
                return tuple(leaf(v) for v in value)
            if isinstance(value, list):
                return [leaf(v) for v in value]
            if isinstance(value, dict):
                return {k: leaf(v) for k, v in value.items()}
            return value

        payload = node.payload
        changes = {name: leaf(getattr(payload, name)) for name in type(payload).model_fields
                   if name not in _ID_FIELDS}
        update: dict[str, Any] = {"content": leaf(text), "metadata": leaf(node.metadata)}
        if any(changes[k] != getattr(payload, k) for k in changes):
            update["payload"] = payload.model_copy(update=changes)
        if kinds:
            self.counts["redacted"] += 1
        shown = node.model_copy(update=update) if kinds or text != node.content else node
        return Shown(shown, tuple(sorted(kinds)), masker)

    def shown_all(self, nodes: Iterable[MemoryNode], section: Section = "evidence"
                  ) -> list[Shown]:
        """:meth:`shown` of each memory, the batched parts run once."""
        nodes = list(nodes)
        self.prepare(nodes)
        return [self.shown(n, section) for n in nodes]

    def params(self) -> dict[str, Any]:
        """What the access audit event records of the check (counts and kinds, no text)."""
        kinds = sorted({k for s in self.decided.values() for k in s.kinds},
                       key=lambda k: -DEFAULT_WEIGHTS.get(Kind(k), 0.0))
        out: dict[str, Any] = dict(sorted(self.counts.items()))
        if kinds:
            out["redacted_kinds"] = sorted(kinds)
        return out
