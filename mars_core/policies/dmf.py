"""DMF pruning: hard-kill sweeps and budget-pressure pruning by ``S_prune`` (seed 004 §6–§8).

Every memory carries its write-time survival score ``Ω = signals["omega"]`` (the social
floor already applied, :mod:`mars_core.knowledge.enrich`); it decays with the namespace's
interaction count, ``Ω_eff = Ω·exp(−λ(1−ηΩ)Δn)`` with ``Δn = step − node.step`` (eq 18).

* **Hard-kill** (eq 21, via :meth:`~mars_core.policies.base.Policy.sweep`): every
  ``prune_interval`` steps (when ``step % prune_interval == 0``; 5 turns, the DMF
  reference value, digest Z-E1) each memory with ``Ω_eff < Ω_kill = 0.05`` goes to the
  archive, whatever the budget. A memory's kill step is known in closed form when it
  arrives (:func:`~mars_core.scoring.dmf.turns_until`), so the sweep pops a min-heap of
  kill steps and touches only the memories that are due: O(log n) amortised per memory.
  Pinned memories, active goals and their prerequisites are never swept (the template's
  rule); they stay due and are looked at again at every sweep.
* **Budget pressure** (eqs 22–26, via ``_candidates``): memories in order of
  ``S_prune = Ω_eff + B_ret − P_sup`` ascending, ties broken by the older interaction
  (step, then creation order; digest Z-E3). ``B_ret`` comes from the memory's cue
  signals (constraint 0.20, preference 0.10, current state 0.10, correction 0.15,
  replacement 0.08); ``P_sup = 0.35`` while an active memory ``supersedes`` or
  ``corrects`` it. **The healthy tier is protected** (``Ω_eff > τ_H = 0.75``, eq 22:
  "healthy entries are protected from budget-pressure pruning"): the candidate set is the
  unhealthy memories, leaves and non-leaves alike. Where DMF would leave the queue over
  its budget with nothing unhealthy left, our budget is hard (DESIGN §3 invariant 1), so
  a healthy memory is taken only then — after every unprotected memory, before pinned
  memories and task prerequisites — with a "forced by budget (DMF's healthy tier …)"
  rationale (the template's tier 3, a :class:`~mars_core.policies.plan.Candidate`
  ``protection``). ``healthy_tier="last"`` keeps the order used before issue 33, a
  documented deviation: healthy *leaves* after unhealthy leaves but before unhealthy
  non-leaves (a turn that a card derives from), which archived healthy cards (Ω_eff 0.89)
  while unhealthy turns stayed.

``Ω_eff`` falls at a rate that depends on Ω, so the order of two memories can change with
time and no static key is exact. As in :mod:`~mars_core.policies.priority`, each heap key
is refreshed whenever the memory's ``Ω_eff`` could have fallen by ``drift_tolerance``
since it was computed (a pure function of the memory and the step, so a reopened store
rebuilds the same keys). *Bound (tested):* ``0 <= stored − S_prune < drift_tolerance``
for every memory at every trigger, so each eviction's ``S_prune`` is below
``S_prune(y) + drift_tolerance`` for every memory ``y`` kept. The tier is exact: the step
at which a memory leaves the healthy tier is scheduled too. A memory is refreshed at most
``Ω/drift_tolerance`` times in its life (≤ 50 with the default 0.02).

A restored memory keeps its write step: its Ω_eff is what it would have been had it never
left, so one restored after its kill step is swept again at the next sweep.

A memory without an ``omega`` signal (``nlp="off"``, or an import from elsewhere) is
scored as DMF scores an empty text, ``σ(−x0) = σ(−1.5) ≈ 0.18`` (eq 27 without the social
floor): a neutral turn that is hard-killed after about 41 steps unless the budget or
retrieval says otherwise.

Supersession is learnt from the graph when a memory arrives (its own ``supersedes`` /
``corrects`` edges, and those pointing at it): edges added later with
:meth:`~mars_core.store.MemoryStore.link` are not announced to policies, so they count
only after a reopen. The memory being written is not in the graph yet when its own write
triggers pruning, so its supersession takes effect from the next write.

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> store = MemoryStore(budget=10_000, policy="dmf", clock=FakeClock(), nlp="rules")
    >>> ok = store.add("ok")                          # a social turn: Ω floored to 0.25
    >>> for i in range(54):
    ...     _ = store.add(f"note {i} about the quarterly budget review")
    >>> store.get(ok.id).status.value                 # step 55: first sweep after 52.6 turns
    'archived'
    >>> "hard-kill" in store.explain(ok.id).rationale
    True
    >>> store.close()
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mars_core.model import MemoryNode, Predicate
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import Candidate, PolicyView
from mars_core.policies.priority import (
    _Calendar,
    _decayed,
    _drift_schedule,
    _first_step,
    _LazyHeap,
    _Schedule,
    _validated,
)
from mars_core.scoring.dmf import (
    DEFAULT_DMF_CONFIG,
    DMFConfig,
    OperationalCues,
    Tier,
    half_life,
    retention_bonus,
    sigmoid,
    tier,
    turns_until,
)

__all__ = ["DMFPolicy", "DMFPolicyConfig"]

_CUES = ("constraint", "preference", "current_state", "correction", "replacement")
_SUPERSEDING = (Predicate.SUPERSEDES, Predicate.CORRECTS)


class DMFPolicyConfig(BaseModel):
    """Constants of the DMF policy.

    Examples:
        >>> cfg = DMFPolicyConfig(dmf={"omega_kill": 0.04})
        >>> cfg.dmf.omega_kill, cfg.dmf.prune_interval, cfg.drift_tolerance
        (0.04, 5, 0.02)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dmf: DMFConfig = Field(
        default_factory=lambda: DEFAULT_DMF_CONFIG,
        description="DMF constants (seed 004): λ = 0.035 and η = 0.5 (§6.4), τ_H = 0.75 and "
        "τ_C = 0.3 (§6.6), Ω_kill = 0.05 (§7.1), prune_interval = 5 (DMF reference, Z-E1), "
        "ρ retention bonuses and p_sup = 0.35 (§7.2). Ω itself is computed at write time "
        "by the store's enricher with the paper's defaults.",
    )
    drift_tolerance: float = Field(
        0.02, gt=0.0, le=1.0, allow_inf_nan=False,
        description="Largest fall of a memory's Ω_eff between two refreshes of its heap key, "
        "so eviction order is exact up to this much S_prune. 0.02 (ours): well below the "
        "smallest retention bonus (0.08) and the 0.05 gaps of the paper's §7 example.",
    )
    healthy_tier: Literal["protected", "last"] = Field(
        "protected",
        description="How budget pruning treats the healthy tier (Ω_eff > τ_H). 'protected' "
        "(seed 004 §7.2.1 eq 22): never a candidate; taken only when nothing unprotected is "
        "left (the hard budget, DESIGN §3), with a 'forced by budget' rationale. 'last' (the "
        "order before issue 33, a deviation): healthy leaves after unhealthy leaves, before "
        "unhealthy non-leaves.",
    )


@dataclass
class _Item:
    """One memory with the constants of its decay."""

    node: MemoryNode
    omega: float
    rate: float          # λ(1 − ηΩ)
    bonus: float         # B_ret
    kill_at: int | None  # first step with Ω_eff < Ω_kill (None: never)
    healthy_until: int   # first step with Ω_eff <= τ_H
    keyed_at: int = 0
    stored: float = 0.0  # S_prune at keyed_at (Ω_eff part) with the current bonus/penalty
    level: _Schedule | None = None  # where its drift schedule stands
    refresh_at: int | None = None   # its next refresh step


@dataclass
class _Space:
    """Per-namespace state."""

    items: dict[str, _Item] = field(default_factory=dict)
    heap: _LazyHeap = field(default_factory=_LazyHeap)
    timers: _Calendar = field(default_factory=_Calendar)
    kills: _LazyHeap = field(default_factory=_LazyHeap)
    due: dict[str, None] = field(default_factory=dict)
    dirty: dict[str, None] = field(default_factory=dict)
    fresh: dict[str, None] = field(default_factory=dict)   # arrived: look up their edges
    sources: dict[str, set[str]] = field(default_factory=dict)  # target -> superseders
    targets: dict[str, set[str]] = field(default_factory=dict)  # superseder -> targets
    rekeys: int = 0


@register("dmf")
class DMFPolicy(Policy):
    """DMF: hard-kill below Ω_kill every few turns; under pressure, lowest S_prune first.

    Args:
        config: a :class:`DMFPolicyConfig` (or its fields as keywords, e.g.
            ``policy_params={"dmf": {"omega_kill": 0.04}}``).

    Raises:
        ConfigError: bad parameters.

    Examples:
        >>> DMFPolicy(dmf={"prune_interval": 10}).config.dmf.prune_interval
        10
    """

    def __init__(self, config: DMFPolicyConfig | None = None, **params: Any) -> None:
        self.config: DMFPolicyConfig = _validated(DMFPolicyConfig, config, params, "dmf")
        self._dmf = self.config.dmf
        self._default_omega = sigmoid(-self._dmf.x0)
        self._spaces: dict[str, _Space] = {}

    def params(self) -> dict[str, Any]:
        """The constants that decide evictions (recorded in every eviction event)."""
        c = self._dmf
        return {"decay_lambda": c.decay_lambda, "inertia_eta": c.inertia_eta,
                "tau_h": c.tau_h, "tau_c": c.tau_c, "omega_kill": c.omega_kill,
                "prune_interval": c.prune_interval, "p_sup": c.p_sup,
                "rho": [c.rho_con, c.rho_pref, c.rho_cs, c.rho_corr, c.rho_repl],
                "drift_tolerance": self.config.drift_tolerance,
                "healthy_tier": self.config.healthy_tier}

    # --- hooks -------------------------------------------------------------------------------

    def _space(self, namespace: str) -> _Space:
        if namespace not in self._spaces:
            self._spaces[namespace] = _Space()
        return self._spaces[namespace]

    def omega(self, node: MemoryNode) -> float:
        """Ω of a memory: its ``omega`` signal, or ``σ(−x0)`` without one."""
        raw = node.signals.get("omega")
        if raw is None or not math.isfinite(raw):
            return self._default_omega
        return min(1.0, max(0.0, float(raw)))

    def _item(self, node: MemoryNode) -> _Item:
        c, omega = self._dmf, self.omega(node)
        rate = c.decay_lambda * (1.0 - c.inertia_eta * omega)
        cues = OperationalCues(**{k: node.signals.get(k, 0.0) >= 0.5 for k in _CUES})
        item = _Item(node, omega, rate, retention_bonus(cues, c), None, 0)
        if c.omega_kill <= 0.0:
            item.kill_at = None  # Ω_eff > 0 forever: no hard-kill
        else:  # closed form, then checked against the decay itself (eq 21 is strict)
            kill = max(node.step, node.step + math.floor(turns_until(omega, c.omega_kill, c)))
            while kill > node.step and self._eff(item, kill - 1) < c.omega_kill:
                kill -= 1
            while not self._eff(item, kill) < c.omega_kill:
                kill += 1
            item.kill_at = kill
        item.healthy_until = node.step if omega <= c.tau_h else _first_step(
            omega, rate, node.step, c.tau_h, node.step)
        return item

    def on_insert(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        item = self._item(node)
        space.items[node.id] = item
        if item.kill_at is not None:
            space.kills.put(node.id, (item.kill_at, node.step, node.seq))
        space.dirty[node.id] = None
        space.fresh[node.id] = None

    def on_access(self, node: MemoryNode) -> None:
        """Accesses do not change Ω (DMF has no reinforcement); keep the latest copy."""
        item = self._space(node.namespace).items.get(node.id)
        if item is not None:
            item.node = node

    def on_remove(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        for table in (space.items, space.due, space.dirty, space.fresh):
            table.pop(node.id, None)
        space.heap.discard(node.id)
        space.kills.discard(node.id)
        for target in space.targets.pop(node.id, set()):
            space.sources.get(target, set()).discard(node.id)
            if target in space.items:
                space.dirty[target] = None  # its penalty may be gone
        for source in space.sources.pop(node.id, set()):
            space.targets.get(source, set()).discard(node.id)

    # --- scores ---------------------------------------------------------------------------------

    def _eff(self, item: _Item, step: int) -> float:
        """Ω_eff at ``step``: the operations of ``decay.inertial`` (rate = λ(1 − ηΩ))."""
        return _decayed(item.omega, item.rate, item.node.step, step)

    def _penalty(self, space: _Space, node_id: str) -> float:
        return self._dmf.p_sup if space.sources.get(node_id) else 0.0

    def s_prune(self, namespace: str, node_id: str, step: int) -> float:
        """The exact ``S_prune`` of an indexed memory at ``step`` (for checks and audits)."""
        space = self._space(namespace)
        item = space.items[node_id]
        return self._eff(item, step) + item.bonus - self._penalty(space, node_id)

    # --- index maintenance -------------------------------------------------------------------

    def _link_supersessions(self, view: PolicyView, space: _Space) -> None:
        """Read the supersedes/corrects edges of memories that arrived since the last look."""
        graph = view.graph
        for node_id in space.fresh:
            for pred in _SUPERSEDING:
                pairs = [(node_id, e.target) for e in graph.out_edges(node_id, pred)]
                pairs += [(e.source, node_id) for e in graph.in_edges(node_id, pred)]
                for source, target in pairs:
                    if source in space.items and target in space.items and source != target:
                        space.sources.setdefault(target, set()).add(source)
                        space.targets.setdefault(source, set()).add(target)
                        space.dirty[target] = None
        space.fresh.clear()

    def _rekey(self, space: _Space, node_id: str, step: int) -> None:
        item = space.items[node_id]
        if item.omega > 0.0 and item.rate > 0.0:
            born = item.node.step
            item.level = _drift_schedule(item.omega, item.rate, born, tau0=born, t=step,
                                         tolerance=self.config.drift_tolerance, hint=item.level)
            _j, keyed, nxt = item.level
        else:
            keyed, nxt = item.node.step, None
        healthy = step < item.healthy_until
        if healthy:
            nxt = item.healthy_until if nxt is None else min(nxt, item.healthy_until)
        item.keyed_at = keyed
        item.stored = self._eff(item, keyed) + item.bonus - self._penalty(space, node_id)
        space.heap.put(node_id, (1 if healthy else 0, item.stored, item.node.step, item.node.seq))
        item.refresh_at = None if nxt is None else space.timers.put(node_id, nxt)
        space.rekeys += 1

    def _prepare(self, view: PolicyView) -> _Space:
        """Bring the namespace's index up to ``view.step``: O(log n) per changed memory."""
        space = self._space(view.namespace)
        if space.fresh:
            self._link_supersessions(view, space)
        for node_id in space.dirty:
            self._rekey(space, node_id, view.step)
        space.dirty.clear()
        for due, node_id in space.timers.pop_due(view.step):
            item = space.items.get(node_id)
            if item is not None and item.refresh_at == due:
                self._rekey(space, node_id, view.step)
        return space

    # --- hard-kill sweep (eq 21) ---------------------------------------------------------------

    def _sweep_candidates(self, view: PolicyView) -> Iterator[Candidate]:
        if view.step % self._dmf.prune_interval != 0:
            return
        space = self._space(view.namespace)  # kill steps are known at insert: no refresh
        for node_id in space.kills.pop_due(view.step):
            space.due[node_id] = None
        order = sorted(space.due, key=lambda i: (space.items[i].kill_at or 0,
                                                 space.items[i].node.step, space.items[i].node.seq))
        for node_id in order:
            yield self._kill_candidate(view, space.items[node_id])

    def _kill_candidate(self, view: PolicyView, item: _Item) -> Candidate:
        c, node = self._dmf, item.node
        age, eff = view.step - node.step, self._eff(item, view.step)
        reason = (f"DMF hard-kill: Ω_eff {eff:.3f} fell below Ω_kill {c.omega_kill:g} "
                  f"(Ω {item.omega:.2f} at write time, decayed over {age} turns with a "
                  f"half-life of {half_life(item.omega, c):.1f} turns; due since step "
                  f"{item.kill_at}, swept every {c.prune_interval} turns)")
        feats = {"omega": item.omega, "omega_eff": eff, "age_steps": float(age),
                 "kill_step": float(item.kill_at or 0), "omega_kill": c.omega_kill}
        return Candidate(node.id, eff, feats, reason)

    # --- budget pressure (eqs 22-26) -------------------------------------------------------------

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        space = self._prepare(view)
        for rank, (key, node_id) in enumerate(space.heap.ordered(), 1):
            yield self._prune_candidate(view, space, node_id, rank, healthy=key[0] > 0)

    def _prune_candidate(self, view: PolicyView, space: _Space, node_id: str, rank: int,
                         healthy: bool) -> Candidate:
        c, item = self._dmf, space.items[node_id]
        eff = self._eff(item, view.step)
        penalty = self._penalty(space, node_id)
        score = eff + item.bonus - penalty
        parts = [f"Ω_eff {eff:.2f}"]
        if item.bonus > 0:
            cues = [k.replace("_", " ") for k in _CUES if item.node.signals.get(k, 0.0) >= 0.5]
            parts.append(f"+ retention bonus {item.bonus:.2f} for {' and '.join(cues)}")
        else:
            parts.append("no retention bonus")
        if penalty > 0:
            by = sorted(space.sources.get(node_id, set()))
            parts.append(f"− supersession penalty {penalty:.2f} (superseded by "
                         f"{', '.join(by[:3])}{' …' if len(by) > 3 else ''})")
        where = "lowest" if rank == 1 else f"rank {rank}"
        reason = (f"DMF budget pruning: S_prune {score:.2f} ({', '.join(parts)}), {where} of "
                  f"{view.count:,} by S_prune; tier {tier(eff, c).value}")
        protection = ""
        if healthy and self.config.healthy_tier == "protected":
            protection = (f"DMF's healthy tier, Ω_eff {eff:.2f} > τ_H {c.tau_h:g}, protected "
                          "from budget pruning by seed 004 §7.2.1")
        elif healthy:
            reason += "; healthy tier, taken only because nothing unhealthy was left"
        feats = {"s_prune": score, "omega": item.omega, "omega_eff": eff,
                 "retention_bonus": item.bonus, "supersession_penalty": penalty,
                 "age_steps": float(view.step - item.node.step),
                 "healthy": 1.0 if tier(eff, c) is Tier.HEALTHY else 0.0,
                 "stored_s_prune": item.stored, "keyed_at": float(item.keyed_at)}
        return Candidate(node_id, score, feats, reason, protection)

    # --- introspection (tests, benchmarks) ---------------------------------------------------

    def stored_order(self, namespace: str) -> list[str]:
        """Ids in the order a trigger walks them (unhealthy by stored S_prune, then healthy)."""
        return [node_id for _key, node_id in self._space(namespace).heap.ordered()]

    def kill_step(self, node: MemoryNode) -> int | None:
        """The first step at which a memory's Ω_eff is below Ω_kill (closed form + check);
        None when Ω_kill is 0."""
        return self._item(node).kill_at

    def rekeys(self, namespace: str) -> int:
        """How many keys were computed in a namespace so far."""
        return self._space(namespace).rekeys
