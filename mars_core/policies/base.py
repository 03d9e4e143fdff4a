"""The forgetting-policy interface: a template method over a read-only view.

Seed 000 §3.3 models a policy as ``f(M, B) -> M'`` with three invariants: feasibility
(Σw ≤ B), structure (M' ∈ F: provenance closure and task-safety) and auditability.
Here the public :meth:`Policy.apply` owns the invariants and returns a :class:`Plan`;
each policy only *proposes*, as a sequence of stages (``_stages``):

* an :class:`EvictStage` yields candidates in the order the policy would forget them,
  with a score, features and a short reason;
* a :class:`SummariseStage` proposes clusters to replace by a summary
  (Reflection-Summary, seed 000 §3.3.2).

``apply`` runs the stages in order until ``need`` tokens are freed. It accepts a summary
only if it is strictly cheaper than its members (so every stage reduces weight and the
process terminates, seed 000 §3.3.4), none of its members is pinned, taken or protected,
and its compaction depth stays ≤ ``MAX_DEPTH`` (seed 003: never compact more than
twice). It walks evictions in protection tiers — the documented order in which
protections yield to the hard budget (DESIGN §3 invariant 1):

1. unpinned leaves of the dependency forest that are not task-protected, in each
   stage's order;
2. unpinned non-leaves (archiving keeps provenance closure, but leaves go first, as
   seed 000 §5.3 asks), then any unprotected memory no stage ranked, oldest first;
3. memories the policy itself protects (a :class:`Candidate` with a ``protection``, e.g.
   DMF's healthy tier, seed 004 §7.2.1), in the stage's order — only when nothing above is
   left, with a "forced by budget" rationale that names the protection;
4. pinned memories, active goals and their prerequisites (task-safety) — only when
   nothing else is left, with a "forced by budget" rationale.

So every policy terminates with the budget restored (the new memory is never a
candidate: a memory heavier than the whole budget is refused before a policy runs).

**Soft per-type shares (opt-in).** When ``policy.type_shares`` holds a
:class:`~mars_core.shares.TypeShares`, each eviction stage is first passed through
:meth:`~mars_core.shares.TypeShares.prioritise`: candidates of types using more than
their share of the budget come first (seed 000 §3.2.7). This only reorders candidates
inside tier 1; tiers, protections and the hard budget are unchanged. The template
forwards ``on_retrieve``/``on_credit`` to the shares (subclasses that override those
hooks call ``super()``) and lets them run their dual update on every sweep and trigger.

Examples:
    >>> from mars_core.policies import available
    >>> "lru" in available() and "fifo" in available()
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from mars_core.errors import ConfigError, PolicyError, ValidationError
from mars_core.model import MemoryNode
from mars_core.policies.plan import (
    MAX_DEPTH,
    Candidate,
    Eviction,
    EvictStage,
    Plan,
    PolicyView,
    Stage,
    SummariseStage,
    Summary,
)

if TYPE_CHECKING:  # pragma: no cover - import for annotations only
    from mars_core.knowledge.summarise import Summariser
    from mars_core.privacy.dp import DPConfig, PrivacyAccountant
    from mars_core.shares import TypeShares

__all__ = [
    "Policy",
    "available",
    "make_policy",
    "register",
]



@dataclass
class _Walk:
    """Book-keeping of one ``apply`` call."""

    view: PolicyView
    need: int
    plan: Plan = field(default_factory=Plan)
    taken: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    non_leaves: list[tuple[str, Candidate]] = field(default_factory=list)
    sheltered: list[tuple[str, Candidate]] = field(default_factory=list)
    protected: list[tuple[str, Candidate]] = field(default_factory=list)

    def defer(self, label: str, cand: Candidate, node: MemoryNode) -> bool:
        """Set a protected candidate aside for the forced tiers; True when it was."""
        if node.pinned or self.view.task_protected(node.id):
            self.protected.append((label, cand))
        elif cand.protection:
            self.sheltered.append((label, cand))
        else:
            return False
        return True

    @property
    def done(self) -> bool:
        return self.plan.freed >= self.need


class Policy:
    """Base class of forgetting policies (template method ``apply``).

    Subclasses set ``name`` and implement ``_candidates`` (one eviction stage) or
    ``_stages``; they may keep incremental per-namespace indices through the ``on_*``
    hooks, which the store calls on every insert, access and removal (and replays on
    open through :meth:`rebuild`).
    """

    name: ClassVar[str] = ""
    type_shares: TypeShares | None = None
    """Soft per-type budget shares (opt-in; None: the stages' order is used as is)."""
    dp: DPConfig | None = None
    """Differential-privacy tie-break at the eviction boundary (opt-in, seed 000 §4.3)."""
    accountant: PrivacyAccountant | None = None
    """Privacy accountant charged by the tie-break (per namespace and subject)."""
    summarises: ClassVar[bool] = False
    """Declared capability: the policy writes summaries under budget pressure, so the
    store hands it its own summariser (:meth:`use_summariser`)."""

    def use_summariser(self, summariser: Summariser) -> None:
        """Adopt the store's summariser (``MemoryStore(summariser=...)``) for the
        summaries this policy writes when the budget triggers it.

        A policy that does not summarise (``summarises`` False) ignores it; one built
        with its own summariser keeps that one.
        """

    def params(self) -> dict[str, Any]:
        """Parameters recorded in the audit (override to report yours)."""
        return {}

    # --- incremental hooks (default: stateless) -----------------------------------------

    def replay_key(self, node: MemoryNode) -> tuple[int, ...]:
        """Order in which :meth:`rebuild` replays active memories (creation order)."""
        return (node.seq,)

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Rebuild incremental indices from the active memories (on open)."""
        for node in sorted(nodes, key=self.replay_key):
            self.on_insert(node)

    def on_insert(self, node: MemoryNode) -> None:
        """A memory became active (insert, restore, or replay on open)."""

    def on_access(self, node: MemoryNode) -> None:
        """A memory was accessed (``node`` carries the new statistics)."""

    def on_update(self, node: MemoryNode) -> None:
        """An active memory's metadata changed without an access (its sensitivity was
        re-scored, it was pinned, ...); ``node`` carries the new metadata."""

    def on_remove(self, node: MemoryNode) -> None:
        """A memory left the active set (evicted, summarised, forgotten, erased)."""

    # --- learned state (persisted by the store across reopen) ------------------------------

    def state_dict(self) -> dict[str, Any]:
        """What the policy learned that replaying the active memories cannot rebuild.

        JSON-serialisable; ``{}`` when there is nothing (the default). The store saves it
        with its other meta records and hands it back to :meth:`load_state` after
        :meth:`rebuild` on open.
        """
        return {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (call after :meth:`rebuild`).

        Raises:
            ValidationError: ``state`` is malformed or not this policy's; nothing changes.
        """
        if state:
            raise ValidationError(f"policy {self.name!r} keeps no state; got keys "
                                  f"{sorted(state)}")

    def on_retrieve(self, namespace: str, hits: Sequence[MemoryNode], budget_tokens: int,
                    step: int) -> None:
        """A retrieval returned ``hits`` (before their access statistics were updated)."""
        if self.type_shares is not None:
            self.type_shares.observe_retrieve(namespace, hits, step)

    def on_forget(self, node: MemoryNode, step: int) -> None:
        """The user asked to forget ``node`` (a privacy complaint signal, seed 000 §3.3.5)."""

    def on_credit(self, namespace: str, used: Sequence[str], offered: Sequence[str],
                  step: int) -> None:
        """Feedback: of the memories ``offered`` to an answer, ``used`` were used
        (the Recognizer's credit assignment, seed 002 §2.3)."""
        if self.type_shares is not None:
            self.type_shares.observe_credit(namespace, used, step)

    # --- what subclasses propose ---------------------------------------------------------

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        """Yield active memories in the order this policy would forget them."""
        return iter(())

    def _stages(self) -> Sequence[Stage]:
        """The policy's stages (default: one eviction stage over ``_candidates``)."""
        return (EvictStage(self.name, self._candidates),)

    def _sweep_candidates(self, view: PolicyView) -> Iterator[Candidate]:
        """Memories to forget now, whatever the budget (DMF hard-kill, TTL expiry).

        The store calls :meth:`sweep` after every write; a policy rate-limits itself
        (e.g. only every ``prune_interval`` steps) by yielding nothing in between.
        """
        return iter(())

    # --- the template ------------------------------------------------------------------

    def apply(self, view: PolicyView, need: int, exclude: frozenset[str] = frozenset()
              ) -> Plan:
        """Plan summaries and evictions freeing at least ``need`` tokens.

        Raises:
            PolicyError: the namespace cannot free ``need`` tokens even by force.
        """
        walk = _Walk(view, need, taken=set(exclude), seen=set(exclude))
        if need <= 0:
            return walk.plan
        if self.type_shares is not None:
            self.type_shares.refresh(view)
        for stage in self._stages():
            if walk.done:
                break
            if isinstance(stage, SummariseStage):
                self._run_summaries(walk, stage)
            else:
                self._run_evictions(walk, stage)
        self._run_fallback(walk)
        if not walk.done:
            raise PolicyError(f"{self.name}: cannot free {need} tokens in {view.namespace!r}")
        return walk.plan

    def sweep(self, view: PolicyView, exclude: frozenset[str] = frozenset()) -> Plan:
        """Evictions that do not wait for budget pressure; protected memories are kept.

        Pinned memories, active goals and their prerequisites are never swept: a sweep
        is hygiene, not budget pressure, so no protection is forced to yield.
        """
        walk = _Walk(view, need=0, taken=set(exclude), seen=set(exclude))
        if self.type_shares is not None:
            self.type_shares.refresh(view)
        for cand in self._sweep_candidates(view):
            if cand.node_id in walk.seen:
                continue
            walk.seen.add(cand.node_id)
            node = view.node(cand.node_id)
            if node.is_active and not node.pinned and not view.task_protected(node.id):
                self._take(walk, self.name, node, cand, forced=False)
        return walk.plan

    def consolidate(self, view: PolicyView, need: int,
                    exclude: frozenset[str] = frozenset()) -> Plan:
        """Only the policy's summarise stages (maintenance: compaction, not eviction).

        Summaries are validated as in :meth:`apply`; nothing is evicted.
        """
        walk = _Walk(view, need, taken=set(exclude), seen=set(exclude))
        for stage in self._stages():
            if isinstance(stage, SummariseStage) and not walk.done:
                self._run_summaries(walk, stage)
        return walk.plan

    def _run_summaries(self, walk: _Walk, stage: SummariseStage) -> None:
        for summary in stage.propose(walk.view, walk.need - walk.plan.freed,
                                     frozenset(walk.taken)):
            saved = self._summary_saving(walk, summary)
            if saved > 0:
                walk.plan.summaries.append(summary)
                walk.taken.update(summary.member_ids)
                walk.seen.update(summary.member_ids)
                walk.plan.freed += saved
            if walk.done:
                return

    def _summary_saving(self, walk: _Walk, summary: Summary) -> int:
        """Tokens a summary frees, or 0 when it breaks an invariant (then it is skipped)."""
        view, ids = walk.view, summary.member_ids
        if len(set(ids)) != len(ids) or len(ids) < 2 or walk.taken.intersection(ids):
            return 0
        if not (math.isfinite(summary.distortion) and 0.0 <= summary.sensitivity <= 1.0):
            return 0
        members = [view.node(i) for i in ids]
        if any(not m.is_active or m.namespace != view.namespace or m.pinned
               or view.task_protected(m.id) for m in members):
            return 0
        if max(m.depth for m in members) + 1 > MAX_DEPTH or not summary.text.strip():
            return 0
        return max(0, sum(m.weight for m in members) - view.count_tokens(summary.text))

    def _run_evictions(self, walk: _Walk, stage: EvictStage) -> None:
        if stage.densities and self.dp is not None and self.dp.enabled:
            self._run_dp(walk, stage)
            return
        self._run_ordered(walk, stage)

    def _run_dp(self, walk: _Walk, stage: EvictStage) -> None:
        """Walk a density stage, then let the exponential mechanism re-choose the band
        of near-ties at the boundary (randomness from the OS, never the store's seed)."""
        from mars_core.privacy.dp import near_threshold_tiebreak

        assert self.dp is not None
        need, view = walk.need - walk.plan.freed, walk.view
        picked: list[tuple[Candidate, MemoryNode]] = []
        freed, edge = 0, None
        for cand in stage.candidates(view):
            if cand.node_id in walk.seen:
                continue
            node = view.node(cand.node_id)
            if freed >= need and (cand.score is None or edge is None or cand.score > edge + max(
                    self.dp.band_relative * abs(edge), self.dp.band_absolute)):
                break  # past the band: left unseen for later stages
            walk.seen.add(cand.node_id)
            if walk.defer(stage.label, cand, node):
                continue
            if not view.is_leaf(node.id) or cand.score is None:
                walk.non_leaves.append((stage.label, cand))
                continue
            picked.append((cand, node))
            if freed < need:
                freed, edge = freed + node.weight, cand.score
        result = near_threshold_tiebreak(
            [c for c, _ in picked], [n.weight for _, n in picked],
            [n.sensitivity for _, n in picked], need, self.dp, accountant=self.accountant,
            namespace=view.namespace,
            subjects=[getattr(n.payload, "entity", None) for _, n in picked])
        chosen = set(result.chosen_ids)
        for i in result.evict:
            cand, node = picked[i]
            if node.id in chosen:
                note = (f"; DP tie-break ({result.mode}): chosen with probability "
                        f"{result.probability:.2f} at ε {result.epsilon_spent:g}")
                cand = replace(cand, reason=cand.reason + note)
            self._take(walk, stage.label, node, cand, forced=False)
        for _, node in picked:
            if node.id not in walk.taken:
                walk.seen.discard(node.id)  # not evicted here: still a candidate later
        walk.plan.dp = result.audit()

    def _run_ordered(self, walk: _Walk, stage: EvictStage) -> None:
        cands: Iterable[Candidate] = stage.candidates(walk.view)
        if self.type_shares is not None:
            cands = self.type_shares.prioritise(walk.view, cands, walk.plan)
        for cand in cands:
            if cand.node_id in walk.seen:
                continue
            walk.seen.add(cand.node_id)
            self._consider(walk, stage.label, cand)
            if walk.done:
                return

    def _consider(self, walk: _Walk, label: str, cand: Candidate) -> None:
        node = walk.view.node(cand.node_id)
        if walk.defer(label, cand, node):
            return
        if not walk.view.is_leaf(node.id):
            walk.non_leaves.append((label, cand))
        else:
            self._take(walk, label, node, cand, forced=False)

    def _run_fallback(self, walk: _Walk) -> None:
        for label, cand in walk.non_leaves:
            if walk.done:
                return
            self._take(walk, label, walk.view.node(cand.node_id), cand, forced=False)
        for node in walk.view.active():
            if walk.done:
                return
            if node.id in walk.seen:
                continue
            walk.seen.add(node.id)
            cand = Candidate(node.id, None, {}, "not ranked by the policy; oldest first")
            if node.pinned or walk.view.task_protected(node.id):
                walk.protected.append((self.name, cand))
            else:
                self._take(walk, self.name, node, cand, forced=False)
        for label, cand in [*walk.sheltered, *walk.protected]:
            if walk.done:
                return
            self._take(walk, label, walk.view.node(cand.node_id), cand, forced=True)

    def _take(self, walk: _Walk, label: str, node: MemoryNode, cand: Candidate,
              forced: bool) -> None:
        why = f"evicted by {label}: {cand.reason}"
        if forced and not node.pinned and not walk.view.task_protected(node.id) \
                and cand.protection:
            why += f"; forced by budget ({cand.protection}, and nothing else was left)"
        elif forced:
            why += ("; forced by budget (pinned, an active goal or its prerequisite, "
                    "and nothing else was left)")
        rank = len(walk.plan.evictions) + 1
        walk.plan.evictions.append(Eviction(node.id, node.weight, cand.score,
                                            dict(cand.features),
                                            f"{why} [{rank} of {walk.view.count} active]",
                                            forced))
        walk.taken.add(node.id)
        walk.plan.freed += node.weight


_REGISTRY: dict[str, Callable[..., Policy]] = {}


def register(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator registering a policy under ``name``."""

    def deco(cls: type[Policy]) -> type[Policy]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available() -> list[str]:
    """Names of registered policies."""
    return sorted(_REGISTRY)


def make_policy(name: str, **params: Any) -> Policy:
    """Instantiate a registered policy.

    Raises:
        ConfigError: unknown name or bad parameters.
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ConfigError(f"unknown policy {name!r}; choose one of {available()}")
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for policy {name!r}: {exc}") from exc
