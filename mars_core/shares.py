"""Soft per-type budget shares ``B^(epi) + B^(sem) + B^(soc) + B^(task) = B`` with a dual update.

Seed 000 §3.2.7 splits the budget into optional *soft* per-type shares, updated by "a
lightweight dual scheme that equalizes marginal utility per token across types,
increasing the share for whichever slice exhibits the highest dU/dB over a moving
window" (§4.1: "until marginal densities equilibrate"). The seed gives no formula, step
size, window or reserve (digest A.2, Z-A3). Our choices, each a field of
:class:`TypeSharesConfig`:

* **marginal utility** of type ``t`` over the last window is the observable
  ``g_t = (retrieval hits of t + credits of t) / (active tokens of t)`` (DESIGN §6: hits
  per token and the Recognizer's credit). A type with no active tokens has no estimate
  and is left where it is (its ``ĝ`` is set to the current weighted mean).
* **dual step** (exponentiated gradient / multiplicative weights): with
  ``ĝ_t = g_t / max_k g_k`` in [0, 1] and ``ḡ = Σ_k p_k ĝ_k``,
  ``p_t ← p_t · exp(η·(ĝ_t − ḡ))`` then renormalise. Types whose hits per token beat the
  weighted mean gain share; the others lose it. Normalising by the largest ``g`` makes
  ``η`` unit-free (raw hits per token are tiny numbers whose scale depends on the
  workload). With diminishing returns — a type that keeps more tokens keeps colder ones,
  so its hits per token fall — the shares settle where the ``g_t`` are equal.
* **floor**: the share is ``s_t = floor + (1 − K·floor)·p_t`` (K = 4 types), so no type
  ever starves below ``floor`` (5% by default, Z-A3) and the shares always sum to one.
* a window without any hit or credit leaves the shares unchanged (nothing was observed).

Shares are **soft** (§3.2.7): they never change the hard budget, only the order in which
a policy's candidates are considered (:meth:`TypeShares.prioritise`): while a type uses
more than ``s_t·B`` tokens, that type's candidates come first, each stage keeping its
own order within and across types. Opt in by setting ``policy.type_shares``:

Examples:
    >>> from mars_core.model import MemoryType
    >>> shares = TypeShares(window=10)
    >>> round(shares.shares("ns")[MemoryType.EPISODIC], 2)
    0.25
    >>> after = shares.dual_step("ns", {MemoryType.SEMANTIC: 3.0, MemoryType.EPISODIC: 1.0},
    ...                          {t: 100 for t in MemoryType})
    >>> after[MemoryType.SEMANTIC] > 0.25 > after[MemoryType.EPISODIC]
    True
    >>> round(sum(after.values()), 9)
    1.0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator

from mars_core.budget import check_shares, normalise_shares
from mars_core.errors import ConfigError, NotFoundError
from mars_core.model import MemoryNode, MemoryType
from mars_core.policies.plan import Candidate, Plan, PolicyView

__all__ = ["TypeShares", "TypeSharesConfig", "usage_by_type"]

_TYPES: tuple[MemoryType, ...] = tuple(MemoryType)


class TypeSharesConfig(BaseModel):
    """Constants of the soft per-type shares (seed 000 §3.2.7 gives none; digest Z-A3).

    Examples:
        >>> TypeSharesConfig().floor
        0.05
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    window: int = Field(
        20, ge=1,
        description="Interaction steps between two dual updates (the 'moving window' of "
        "§3.2.7; 20 as Z-A3 suggests, counted in namespace steps rather than triggers so "
        "the update rate does not depend on budget pressure).",
    )
    eta: float = Field(
        0.5, gt=0.0, le=10.0, allow_inf_nan=False,
        description="Step size η of the multiplicative-weights update on normalised "
        "marginal utility ĝ ∈ [0, 1] (ours): a type with the best hits per token gains at "
        "most a factor e^0.5 ≈ 1.65 of weight per window, so one noisy window cannot "
        "swing the shares, while a steady difference moves them within a few windows.",
    )
    floor: float = Field(
        0.05, ge=0.0, le=0.25, allow_inf_nan=False,
        description="Minimum share of every type ('no type starves'; 5% of B as Z-A3 "
        "suggests). At most 1/K = 0.25 so the floors fit in the budget.",
    )
    initial: dict[Annotated[MemoryType, Strict(False)], float] | None = Field(
        None,
        description="Starting shares: fractions of the budget in [0, 1] that add up to 1 "
        "(mars_core.budget.check_shares; None = equal shares, the same default as "
        "StoreConfig.type_shares). Values below the floor start at it.",
    )

    @field_validator("initial", mode="before")
    @classmethod
    def _check_initial(cls, value: object) -> dict[MemoryType, float] | None:
        return None if value is None else check_shares(value)


@dataclass
class _Window:
    """Observations of one namespace since its last dual update."""

    start: int = 0
    gains: Counter[MemoryType] = field(default_factory=Counter)
    credited: list[str] = field(default_factory=list)


def usage_by_type(view: PolicyView) -> dict[MemoryType, int]:
    """Active tokens of each type in the view's namespace (from the budget ledger).

    Examples:
        >>> from mars_core.views.namespace import NamespaceState
        >>> import random, datetime
        >>> v = NamespaceState.of("ns").view(100, datetime.datetime.now(datetime.UTC),
        ...                                  random.Random(0))
        >>> usage_by_type(v)[MemoryType.SEMANTIC]
        0
    """
    return {t: view.used_by_type().get(t, 0) for t in _TYPES}


class TypeShares:
    """Per-namespace soft shares of the budget, updated by the dual step every ``window``.

    Hooks (:meth:`observe_retrieve`, :meth:`observe_credit`) collect observations; the
    policy template calls :meth:`refresh` on every sweep and trigger and
    :meth:`prioritise` to reorder each eviction stage. State is in memory only: on
    reopen the shares restart from ``initial``.

    Args:
        config: the constants (default :class:`TypeSharesConfig`).
        **params: overrides of ``config`` fields, e.g. ``window=10``.

    Raises:
        ConfigError: bad parameters.

    Examples:
        >>> from mars_core.model import MemoryType
        >>> ts = TypeShares(initial={MemoryType.SEMANTIC: 1.0})
        >>> {t.value: round(v, 3) for t, v in ts.shares("ns").items()}
        {'episodic': 0.05, 'semantic': 0.85, 'social': 0.05, 'task': 0.05}
        >>> round(ts.budgets("ns", 1000)[MemoryType.SEMANTIC])
        850
    """

    def __init__(self, config: TypeSharesConfig | None = None, **params: Any) -> None:
        base = config or TypeSharesConfig()
        try:
            self.config = TypeSharesConfig.model_validate({**base.model_dump(), **params})
        except pydantic.ValidationError as exc:
            raise ConfigError.from_pydantic(exc, "type-share parameters") from None
        self._weights: dict[str, dict[MemoryType, float]] = {}
        self._windows: dict[str, _Window] = {}
        self.updates = 0
        """Number of dual updates applied so far (all namespaces)."""

    # --- reading ---------------------------------------------------------------------------

    def shares(self, namespace: str) -> dict[MemoryType, float]:
        """The current shares ``s_t`` of a namespace (each ≥ floor, summing to one)."""
        floor = self.config.floor
        p = self._p(namespace)
        return {t: floor + (1.0 - len(_TYPES) * floor) * p[t] for t in _TYPES}

    def budgets(self, namespace: str, budget: int) -> dict[MemoryType, float]:
        """The soft budgets ``B^(t) = s_t·B`` (they sum to ``budget``)."""
        return {t: s * budget for t, s in self.shares(namespace).items()}

    def params(self, namespace: str) -> dict[str, float]:
        """The shares as plain numbers, for an audit record."""
        return {f"share_{t.value}": round(s, 6) for t, s in self.shares(namespace).items()}

    # --- observations ----------------------------------------------------------------------

    def observe_retrieve(self, namespace: str, hits: Sequence[MemoryNode], step: int) -> None:
        """Count each retrieved memory as one hit of its type."""
        win = self._window(namespace, step)
        win.gains.update(h.type for h in hits)

    def observe_credit(self, namespace: str, used: Sequence[str], step: int) -> None:
        """Count each memory an answer used as one credit (its type is resolved at refresh)."""
        self._window(namespace, step).credited.extend(used)

    # --- the dual update -------------------------------------------------------------------

    def refresh(self, view: PolicyView) -> bool:
        """Apply the dual step if a window has elapsed for the view's namespace.

        Returns:
            True when the shares were updated.
        """
        ns = view.namespace
        win = self._window(ns, view.step)
        if view.step - win.start < self.config.window:
            return False
        gains = Counter(win.gains)
        for node_id in win.credited:
            try:
                gains[view.node(node_id).type] += 1
            except NotFoundError:  # erased since: its credit is lost with it
                continue
        self._windows[ns] = _Window(start=view.step)
        if not any(gains.values()):
            return False
        self.dual_step(ns, gains, usage_by_type(view))
        return True

    def dual_step(self, namespace: str, gains: Mapping[MemoryType, float],
                  usage: Mapping[MemoryType, int]) -> dict[MemoryType, float]:
        """One multiplicative-weights step towards equal marginal utility per token.

        Args:
            namespace: whose shares move.
            gains: hits plus credits of each type over the window.
            usage: active tokens of each type now.

        Returns:
            The new shares.
        """
        p = self._p(namespace)
        g = {t: gains.get(t, 0.0) / usage[t] for t in _TYPES if usage.get(t, 0) > 0}
        top = max(g.values(), default=0.0)
        if top <= 0:
            return self.shares(namespace)
        g_hat = {t: v / top for t, v in g.items()}
        observed = sum(p[t] for t in g_hat)
        mean = sum(p[t] * g_hat[t] for t in g_hat) / observed if observed > 0 else 0.0
        raw = {t: p[t] * math.exp(self.config.eta * (g_hat.get(t, mean) - mean)) for t in _TYPES}
        total = sum(raw.values())
        self._weights[namespace] = {t: v / total for t, v in raw.items()}
        self.updates += 1
        return self.shares(namespace)

    # --- effect on eviction ----------------------------------------------------------------

    def prioritise(self, view: PolicyView, candidates: Iterable[Candidate], plan: Plan
                   ) -> Iterator[Candidate]:
        """Reorder one stage's candidates: types above their share first (soft shares).

        While some type uses more than ``s_t·B`` tokens (counting what ``plan`` already
        frees), candidates of over-share types are yielded in the stage's order and the
        others are held back; once no type is over its share, the held-back candidates
        follow, then the rest of the stage, still in the stage's order. Only the order
        changes: the template's protection tiers and the hard budget are untouched.
        """
        budgets = self.budgets(view.namespace, view.budget)
        usage = _Usage(view, plan, usage_by_type(view))
        held: list[Candidate] = []
        stream = iter(candidates)
        for cand in stream:
            over = usage.over(budgets)
            if not over:
                yield from held
                yield cand
                yield from stream
                return
            mtype = view.node(cand.node_id).type
            if mtype in over:
                yield _annotate(cand, mtype, usage.now(mtype), budgets[mtype])
            else:
                held.append(cand)
        yield from held

    # --- internals -------------------------------------------------------------------------

    def _p(self, namespace: str) -> dict[MemoryType, float]:
        if namespace not in self._weights:
            self._weights[namespace] = self._initial_p()
        return self._weights[namespace]

    def _initial_p(self) -> dict[MemoryType, float]:
        if self.config.initial is None:
            return {t: 1.0 / len(_TYPES) for t in _TYPES}
        start = normalise_shares(self.config.initial)
        raw = {t: max(0.0, start[t] - self.config.floor) for t in _TYPES}
        total = sum(raw.values())
        if total <= 0:
            return {t: 1.0 / len(_TYPES) for t in _TYPES}
        return {t: v / total for t, v in raw.items()}

    def _window(self, namespace: str, step: int) -> _Window:
        win = self._windows.get(namespace)
        if win is None:
            win = self._windows[namespace] = _Window(start=step)
        return win


class _Usage:
    """Per-type usage of one namespace minus what a plan in progress already frees."""

    def __init__(self, view: PolicyView, plan: Plan, usage: dict[MemoryType, int]) -> None:
        self._view, self._plan, self._usage = view, plan, usage
        self._evictions = 0
        self._summaries = 0

    def now(self, mtype: MemoryType) -> int:
        """Tokens of ``mtype`` left once the plan so far is applied."""
        self._catch_up()
        return self._usage[mtype]

    def over(self, budgets: Mapping[MemoryType, float]) -> set[MemoryType]:
        """Types whose usage exceeds their soft budget."""
        self._catch_up()
        return {t for t in _TYPES if self._usage[t] > budgets[t]}

    def _catch_up(self) -> None:
        view, plan = self._view, self._plan
        for ev in plan.evictions[self._evictions:]:
            self._usage[view.node(ev.node_id).type] -= ev.weight
        for summary in plan.summaries[self._summaries:]:
            for member in summary.member_ids:
                node = view.node(member)
                self._usage[node.type] -= node.weight
            self._usage[MemoryType.SEMANTIC] += view.count_tokens(summary.text)
        self._evictions, self._summaries = len(plan.evictions), len(plan.summaries)


def _annotate(cand: Candidate, mtype: MemoryType, used: int, target: float) -> Candidate:
    features = {**cand.features, "type_usage": float(used), "type_budget": round(target, 3)}
    reason = (f"{cand.reason}; type {mtype.value} over its soft share "
              f"({used} > {target:.0f} tokens), so considered first")
    return replace(cand, features=features, reason=reason)
