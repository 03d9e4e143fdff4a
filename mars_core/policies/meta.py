"""The meta-controller π: a contextual bandit choosing the forgetting policy (seed 000 §3.3.5).

Seed 000 §3.3.5/§4.2 selects the policy with "a contextual bandit over P" on workload
features — "arrival rate, average age, retrieval hit-rate, fraction of social vs. task
nodes, and recent privacy complaints" — over the arms {FIFO, LRU, Priority, Reflection,
Hybrid}, "to pick a policy and its parameters" (§3.3.5; §4.2 "selects policies and
hyperparameters online"), and leaves the algorithm, the reward and the exploration
constants unspecified (digest Z-A12). Our choices, each a :class:`MetaConfig` field:

* **Candidates — a policy and its parameters**: each policy brings a small grid of
  parameter sets (``param_grid``, :data:`DEFAULT_GRID`: the defaults and one
  alternative for Priority, Reflection and Hybrid, none for FIFO and LRU), and every
  (policy, parameters) pair is one arm of the same bandit, so parameters are chosen by
  the criterion that chooses policies — the UCB of the observed reward in the current
  context. An arm's name is the policy's, followed by its parameters when they are not
  the defaults (``"hybrid(stale_recency=0.2)"``); each audited decision says which
  parameters were chosen and why (``params()["why"]``: the winning UCB against the best
  other parameters of the same policy and the best other policy).

* **Algorithm**: LinUCB with disjoint linear models (Li et al., 2010), one ridge
  regression ``A_a = ridge·I + Σ x xᵀ``, ``b_a = Σ r x`` per arm; at a decision the arm
  with the largest ``θ_aᵀx + α·√(xᵀA_a⁻¹x)`` wins (ties: the earlier arm). Every arm is
  first played ``warmup`` times, in order. LinUCB needs no randomness, so the choices are
  a deterministic function of the observed workload (same seed, same choices).
* **Decisions** happen at budget triggers (``apply``), at most once every
  ``decision_interval`` steps per namespace; in between the chosen arm keeps deciding.
  The store makes one controller per namespace, so each namespace has its own bandit
  model, chosen arm and reward window (tenants never learn from each other).
  The controller delegates its stages and sweep to the chosen arm (rationales read
  ``evicted by meta/lru: ...``) and forwards **every** hook to **all** arms, so each
  arm's incremental index stays current whichever arm is chosen — at the price of
  holding every arm's index (memory ≈ the sum of the arms', e.g. two O(n) ordered
  dicts for FIFO and LRU, a heap for Priority).
* **Context** ``x`` (7 numbers in [0, 1], all observable, over the window since the
  namespace's previous decision): a bias 1; the *arrival rate* as the share of writes
  among operations, adds / (adds + retrievals), where an add is any memory becoming
  active (insert, summary, restore) — the namespace step counts writes only, so adds
  per step would be constant; the *average age* of active memories in
  steps, squashed as ``age/(age + age_scale)``; the *retrieval hit rate*, tokens
  returned / tokens asked for over the window's retrievals; the *shares of social and
  of task memories* among active ones; *privacy complaints* (user ``forget`` calls)
  squashed as ``c/(1 + c)``. The store does not report user forgets to policies yet:
  until it calls :meth:`MetaController.on_forget`, this feature stays 0.
* **Reward** of a decision, observed at the next one (DESIGN §6): the utility ``u`` is
  the Recognizer **credit share** Σ used / Σ offered over the ``on_credit`` events of the
  window when there were any; otherwise the **retrieval hits per kept token**, the
  tokens of distinct memories retrieved in the window over the tokens kept at the new
  decision (clipped to 1); 0 without either. The reward is
  ``r = u − cost_weight·(tokens kept / budget)``.

State: the arms' indices are rebuilt on reopen (:meth:`rebuild` replays every arm); what
replay cannot rebuild — the bandit statistics (A, b, plays), each namespace's decision in
force, its open window and the decision counter, and every arm's own
:meth:`~mars_core.policies.base.Policy.state_dict` — is exported by
:meth:`MetaController.state_dict` and restored by :meth:`~MetaController.load_state`
after the replay, so a reopened store continues learning where it stopped. Each audited
decision records its arm, context, UCB scores and the reward of
the decision it closed (:meth:`params`), so they could be replayed from the audit log.

Examples:
    >>> from mars_core.policies import make_policy
    >>> meta = make_policy("meta", arms=["fifo", "lru"], alpha=1.0)
    >>> meta.arm_names, meta.params()["arm"]
    (('fifo', 'lru'), 'fifo')
    >>> make_policy("meta", arms=["priority"]).arm_names
    ('priority', 'priority(density.alpha=0.2, density.beta=0.6, density.gamma=0.2)')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mars_core.errors import ConfigError, ValidationError
from mars_core.knowledge.summarise import Summariser
from mars_core.model import MemoryNode, MemoryType
from mars_core.policies.base import Policy, available, make_policy, register
from mars_core.policies.plan import Candidate, EvictStage, Plan, PolicyView, Stage, SummariseStage
from mars_core.scoring.working_set import WorkingSetCache

__all__ = ["CONTEXT_FEATURES", "DEFAULT_ARMS", "DEFAULT_GRID", "LinUCB", "MetaConfig",
           "MetaController", "candidate_label"]

DEFAULT_ARMS: tuple[str, ...] = ("fifo", "lru", "priority", "reflection", "hybrid")
"""The policies of seed 000 §4.2 (Random Drop is a control, not an arm)."""


def _default_grid() -> dict[str, tuple[dict[str, Any], ...]]:
    return {
        # recency-heavy importance: §3.3.1 "usefulness decays with staleness"
        "priority": ({}, {"density": {"alpha": 0.2, "beta": 0.6, "gamma": 0.2}}),
        # a longer summary: less compression, less distortion
        "reflection": ({}, {"target_ratio": 0.5}),
        # an earlier temporal skim: leaves are clearly stale at recency 0.2
        "hybrid": ({}, {"stale_recency": 0.2}),
    }


DEFAULT_GRID: Mapping[str, tuple[dict[str, Any], ...]] = _default_grid()
"""The parameter sets tried per policy by default ({} = the policy's own defaults)."""

CONTEXT_FEATURES: tuple[str, ...] = (
    "bias", "arrival_rate", "average_age", "hit_rate", "social_share", "task_share",
    "complaints",
)
"""Names of the context vector's components, in order."""

Vector = npt.NDArray[np.float64]


class MetaConfig(BaseModel):
    """Constants of the meta-controller; seed 000 gives none (digest Z-A12).

    Examples:
        >>> MetaConfig().alpha, MetaConfig().decision_interval
        (0.5, 10)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    arms: tuple[str, ...] = Field(
        DEFAULT_ARMS,
        description="Registered policy names to choose from (§4.2: FIFO, LRU, Priority, "
        "Reflection, Hybrid). Names not registered are skipped; at least one must be.",
    )
    arm_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Base parameters of each policy, passed to make_policy under every "
        "parameter set of its grid (e.g. {'hybrid': {'tie_band': 0.1}}).",
    )
    param_grid: dict[str, tuple[dict[str, Any], ...]] = Field(
        default_factory=_default_grid,
        description="Parameter sets tried per policy (§3.3.5: π picks 'a policy and its "
        "parameters'): each set, merged over arm_params (nested mappings merged key by "
        "key), makes one arm of the bandit. A policy without an entry has one arm, its "
        "arm_params; {} stands for them. Default: Priority also tries recency-heavy "
        "weights (α 0.2, β 0.6, γ 0.2), Reflection target_ratio 0.5, Hybrid "
        "stale_recency 0.2 — each against its defaults. {} for the grid: one arm per "
        "policy.",
    )
    alpha: float = Field(
        0.5, ge=0.0, le=10.0, allow_inf_nan=False,
        description="LinUCB exploration width α. Rewards lie in [−cost_weight, 1]; Li et "
        "al. use α ≈ 1 for [0, 1] rewards over many arms and long horizons — 0.5 (ours) "
        "explores less because a bad eviction choice loses memories for good.",
    )
    ridge: float = Field(
        1.0, gt=0.0, allow_inf_nan=False,
        description="Ridge λ of each arm's model A = λI + Σ x xᵀ (1: the LinUCB default).",
    )
    warmup: int = Field(
        1, ge=0,
        description="Plays of each arm, in order, before UCB decides (1: every arm gets a "
        "reward estimate before any is trusted).",
    )
    decision_interval: int = Field(
        10, ge=1,
        description="Minimum interaction steps between two decisions of a namespace "
        "(ours): a reward needs a window of retrievals and credits to be measured; "
        "between decisions the chosen arm keeps deciding.",
    )
    cost_weight: float = Field(
        0.1, ge=0.0, le=10.0, allow_inf_nan=False,
        description="Weight of the cost term tokens kept / budget in the reward (ours): a "
        "tenth of the utility scale, so keeping fewer tokens breaks near ties of utility.",
    )
    age_scale: float = Field(
        100.0, gt=0.0, allow_inf_nan=False,
        description="Average age (steps) at which the age feature is 0.5 (ours: about "
        "three episodic half-lives of the density's λ_age).",
    )

    @field_validator("arms")
    @classmethod
    def _arms(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or len(set(v)) != len(v) or "meta" in v:
            raise ValueError("arms must be distinct registered policy names, without 'meta'")
        return v

    @field_validator("param_grid")
    @classmethod
    def _grid(cls, v: dict[str, tuple[dict[str, Any], ...]]
              ) -> dict[str, tuple[dict[str, Any], ...]]:
        for name, sets in v.items():
            labels = [candidate_label(name, p) for p in sets]
            if not sets or len(set(labels)) != len(labels):
                raise ValueError(f"param_grid[{name!r}] must list distinct parameter sets")
        return v


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``; nested mappings are merged key by key."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = (_merge(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping)
                    else value)
    return out


def _flat(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, Mapping):
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def candidate_label(policy: str, params: Mapping[str, Any]) -> str:
    """The arm name of ``policy`` with the grid parameters ``params``.

    Examples:
        >>> candidate_label("hybrid", {}), candidate_label("hybrid", {"stale_recency": 0.2})
        ('hybrid', 'hybrid(stale_recency=0.2)')
        >>> candidate_label("priority", {"density": {"beta": 0.6, "alpha": 0.2}})
        'priority(density.alpha=0.2, density.beta=0.6)'
    """
    flat = _flat(params)
    return policy if not flat else f"{policy}({', '.join(f'{k}={v!r}' for k, v in flat)})"


class LinUCB:
    """Disjoint LinUCB over named arms (Li et al., 2010, Algorithm 1).

    Examples:
        >>> bandit = LinUCB(["a", "b"], dim=2, alpha=0.0)
        >>> x = np.array([1.0, 0.5])
        >>> bandit.update("b", x, 1.0); bandit.update("a", x, 0.2)
        >>> bandit.choose(x)[0]
        'b'
    """

    def __init__(self, arms: Sequence[str], dim: int, alpha: float, ridge: float = 1.0,
                 warmup: int = 0) -> None:
        self.arms = tuple(arms)
        self.alpha = alpha
        self.warmup = warmup
        self.A = {a: ridge * np.eye(dim) for a in self.arms}
        self.b = {a: np.zeros(dim) for a in self.arms}
        self.plays: Counter[str] = Counter()

    def scores(self, x: Vector) -> dict[str, float]:
        """Upper confidence bound θ_aᵀx + α·√(xᵀA_a⁻¹x) of every arm."""
        out: dict[str, float] = {}
        for arm in self.arms:
            inv_x = np.linalg.solve(self.A[arm], x)
            theta = np.linalg.solve(self.A[arm], self.b[arm])
            out[arm] = float(theta @ x + self.alpha * np.sqrt(max(0.0, float(x @ inv_x))))
        return out

    def warming(self, x: Vector) -> bool:
        """Whether the next :meth:`choose` is a warm-up play (not the UCB's choice)."""
        return any(self.plays[arm] < self.warmup for arm in self.arms)

    def choose(self, x: Vector) -> tuple[str, dict[str, float]]:
        """The arm to play (warm-up first, then the best UCB; ties: earlier arm)."""
        scores = self.scores(x)
        for arm in self.arms:
            if self.plays[arm] < self.warmup:
                return arm, scores
        best = max(self.arms, key=lambda a: (scores[a], -self.arms.index(a)))
        return best, scores

    def update(self, arm: str, x: Vector, reward: float) -> None:
        """Add one observation (context ``x``, ``reward``) to ``arm``'s model."""
        self.A[arm] += np.outer(x, x)
        self.b[arm] += reward * x
        self.plays[arm] += 1

    def state(self) -> dict[str, Any]:
        """The statistics of every arm as JSON-ready lists (``A``, ``b``, ``plays``).

        Examples:
            >>> bandit = LinUCB(["a"], dim=2, alpha=0.5)
            >>> bandit.update("a", np.array([1.0, 0.0]), 1.0)
            >>> bandit.state()["b"], bandit.state()["plays"]
            ({'a': [1.0, 0.0]}, {'a': 1})
        """
        return {"A": {a: self.A[a].tolist() for a in self.arms},
                "b": {a: self.b[a].tolist() for a in self.arms},
                "plays": {a: self.plays[a] for a in self.arms}}

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state` for the arms both hold (others keep their prior).

        Raises:
            ValidationError: malformed statistics (nothing is changed).
        """
        dim = next(iter(self.A.values())).shape[0]
        parsed: dict[str, tuple[Vector, Vector, int]] = {}
        try:
            table_a, table_b, plays = state["A"], state["b"], state["plays"]
            for arm in self.arms:
                if arm not in table_a:
                    continue
                a = np.asarray(table_a[arm], dtype=np.float64)
                b = np.asarray(table_b[arm], dtype=np.float64)
                n = plays[arm]
                if a.shape != (dim, dim) or b.shape != (dim,) or not isinstance(n, int) or \
                        n < 0 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                    raise ValidationError(f"bad LinUCB statistics for arm {arm!r}")
                parsed[arm] = (a, b, n)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"malformed LinUCB state: {exc}") from None
        for arm, (a, b, n) in parsed.items():
            self.A[arm], self.b[arm], self.plays[arm] = a, b, n


@dataclass
class _Window:
    """What a namespace did since its last decision (context and reward inputs)."""

    adds: int = 0
    retrievals: int = 0
    hit_tokens: int = 0
    asked_tokens: int = 0
    retrieved: dict[str, int] = field(default_factory=dict)
    credit_used: int = 0
    credit_offered: int = 0
    complaints: int = 0


@dataclass(frozen=True)
class _Decision:
    """A decision as the audit records it."""

    arm: str
    number: int
    step: int
    context: dict[str, float]
    scores: dict[str, float]
    reward: float | None
    why: str = ""


@dataclass
class _Namespace:
    """Per-namespace state: active counts (for the context) and the open decision."""

    count: int = 0
    step_sum: int = 0
    types: Counter[MemoryType] = field(default_factory=Counter)
    window: _Window = field(default_factory=_Window)
    arm: str | None = None
    context: Vector | None = None
    decided_at: int | None = None
    last: _Decision | None = None


@register("meta")
class MetaController(Policy):
    """Contextual-bandit meta-policy over the registered arms (module docstring).

    Args:
        config: the constants (default :class:`MetaConfig`).
        **params: overrides of ``config`` fields (what ``StoreConfig.policy_params``
            passes), e.g. ``arms=["fifo", "lru"]`` or ``alpha=1.0``.

    Raises:
        ConfigError: bad parameters, or no arm is registered.

    Examples:
        >>> meta = MetaController(arms=["lru", "not-registered"])
        >>> meta.arm_names
        ('lru',)
        >>> MetaController(arms=["lru", "hybrid"]).arm_names
        ('lru', 'hybrid', 'hybrid(stale_recency=0.2)')
    """

    summarises: ClassVar[bool] = True
    """Through its arms: the reflection and hybrid arms summarise."""

    def __init__(self, config: MetaConfig | None = None, **params: Any) -> None:
        base = config or MetaConfig()
        try:
            self.config = MetaConfig.model_validate({**dict(base), **params})
        except pydantic.ValidationError as exc:
            raise ConfigError(f"bad parameters for policy 'meta': {exc}") from None
        registered = set(available())
        self.arms: dict[str, Policy] = {}
        self.policy_of: dict[str, str] = {}
        """Arm name → the registered policy it runs."""
        self.grid_params: dict[str, dict[str, Any]] = {}
        """Arm name → the grid parameters that make it (over ``arm_params``)."""
        for name in self.config.arms:
            if name not in registered:
                continue
            for variant in self.config.param_grid.get(name) or ({},):
                label = candidate_label(name, variant)
                self.arms[label] = make_policy(
                    name, **_merge(self.config.arm_params.get(name, {}), variant))
                self.policy_of[label], self.grid_params[label] = name, dict(variant)
        if not self.arms:
            raise ConfigError(f"meta: none of the arms {list(self.config.arms)} is registered; "
                              f"choose among {available()}")
        self._share_working_sets()
        self.bandit = LinUCB(tuple(self.arms), len(CONTEXT_FEATURES), self.config.alpha,
                             self.config.ridge, self.config.warmup)
        self._ns: dict[str, _Namespace] = {}
        self._namespace = ""
        self._decisions = 0

    def _share_working_sets(self) -> None:
        """Arms that keep a working-set cache with the same window (reflection, hybrid)
        share one: the vectors are held once, and the hooks forwarded to each arm are
        idempotent on it."""
        shared: dict[int, WorkingSetCache] = {}
        for arm in self.arms.values():
            ws = getattr(arm, "working_set", None)
            if isinstance(ws, WorkingSetCache):
                arm.working_set = shared.setdefault(ws.window, ws)  # type: ignore[attr-defined]

    def use_summariser(self, summariser: Summariser) -> None:
        """Every arm that summarises writes its summaries with the store's summariser."""
        for arm in self.arms.values():
            if arm.summarises:
                arm.use_summariser(summariser)

    @property
    def arm_names(self) -> tuple[str, ...]:
        """The arms in play — each registered policy with each of its parameter sets —
        in order."""
        return tuple(self.arms)

    def arm_for(self, namespace: str) -> str:
        """The arm currently deciding for ``namespace`` (the first arm before any decision)."""
        return self._ns_state(namespace).arm or next(iter(self.arms))

    def params(self) -> dict[str, Any]:
        """The decision in force for the namespace of the last trigger or sweep.

        ``arm`` (the policy and its parameters), ``policy``, the ``grid_params`` that make
        the arm and its full ``arm_params``; once a decision was taken there, also its
        number (``decision``, counted over all namespaces), ``step``, ``context``, the
        ``ucb`` scores of every arm, the ``reward`` of the decision it closed (None for
        the first) and ``why`` — which parameters won and against what. This is what the
        store records with each eviction and summary.
        """
        return self.params_for(self._namespace)

    def params_for(self, namespace: str) -> dict[str, Any]:
        """The decision in force for ``namespace``, as :meth:`params` tells it (the same
        keys), whichever namespace the last trigger or sweep was in."""
        state = self._ns_state(namespace)
        arm = self.arm_for(namespace)
        out: dict[str, Any] = {"arm": arm, "policy": self.policy_of[arm],
                               "grid_params": self.grid_params[arm],
                               "arm_params": self.arms[arm].params(),
                               "alpha": self.config.alpha}
        last = state.last
        if last is not None:
            out.update(decision=last.number, step=last.step, context=last.context,
                       ucb=last.scores, reward=last.reward, why=last.why)
        return out

    # --- hooks: own statistics, then every arm -------------------------------------------

    def rebuild(self, nodes: Iterable[MemoryNode]) -> None:
        """Rebuild every arm's index (each in its own replay order) and the counts."""
        active = list(nodes)
        for arm in self.arms.values():
            arm.rebuild(active)
        for node in sorted(active, key=lambda n: n.seq):
            self._count(node, +1)
        for state in self._ns.values():
            state.window = _Window()

    def on_insert(self, node: MemoryNode) -> None:
        """Count an arrival; forward to every arm."""
        self._count(node, +1)
        self._ns_state(node.namespace).window.adds += 1
        for arm in self.arms.values():
            arm.on_insert(node)

    def on_access(self, node: MemoryNode) -> None:
        """Forward to every arm."""
        for arm in self.arms.values():
            arm.on_access(node)

    def on_update(self, node: MemoryNode) -> None:
        """Forward to every arm."""
        for arm in self.arms.values():
            arm.on_update(node)

    def on_remove(self, node: MemoryNode) -> None:
        """Uncount; forward to every arm."""
        self._count(node, -1)
        for arm in self.arms.values():
            arm.on_remove(node)

    def on_retrieve(self, namespace: str, hits: Sequence[MemoryNode], budget_tokens: int,
                    step: int) -> None:
        """Record hits for the hit-rate feature and the reward; forward to every arm."""
        win = self._ns_state(namespace).window
        win.retrievals += 1
        win.asked_tokens += budget_tokens
        win.hit_tokens += sum(h.weight for h in hits)
        win.retrieved.update((h.id, h.weight) for h in hits)
        for arm in self.arms.values():
            arm.on_retrieve(namespace, hits, budget_tokens, step)
        super().on_retrieve(namespace, hits, budget_tokens, step)

    def on_credit(self, namespace: str, used: Sequence[str], offered: Sequence[str],
                  step: int) -> None:
        """Record the Recognizer's credit share for the reward; forward to every arm."""
        win = self._ns_state(namespace).window
        win.credit_offered += len(set(offered))
        win.credit_used += len(set(used) & set(offered))
        for arm in self.arms.values():
            arm.on_credit(namespace, used, offered, step)
        super().on_credit(namespace, used, offered, step)

    def on_forget(self, node: MemoryNode, step: int) -> None:
        """A user deliberately forgot ``node`` (a privacy complaint).

        Proposal: the store does not call this yet (``MemoryStore.forget`` archives with
        policy "user" and notifies only ``on_remove``); until it does, the complaints
        feature stays 0.
        """
        self._ns_state(node.namespace).window.complaints += 1

    # --- learned state ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Bandit statistics, decisions in force, open windows and the arms' own states.

        Examples:
            >>> meta = MetaController(arms=["fifo", "lru"])
            >>> sorted(meta.state_dict()), meta.state_dict()["decisions"]
            (['arms', 'bandit', 'decisions', 'namespaces', 'version'], 0)
        """
        return {"version": _STATE_VERSION, "decisions": self._decisions,
                "bandit": self.bandit.state(),
                "namespaces": {ns: _dump_ns(st) for ns, st in sorted(self._ns.items())},
                "arms": {name: arm.state_dict() for name, arm in self.arms.items()}}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` after :meth:`rebuild` (arms no longer configured are
        ignored; namespaces keep their replayed counts).

        Raises:
            ValidationError: a malformed state (nothing is changed).
        """
        if not state:
            return
        if state.get("version") != _STATE_VERSION or not isinstance(state.get("decisions"),
                                                                      int):
            raise ValidationError(f"meta state must have version {_STATE_VERSION} and a "
                                  "decision counter")
        spaces = state.get("namespaces")
        arms = state.get("arms")
        if not isinstance(spaces, Mapping) or not isinstance(arms, Mapping):
            raise ValidationError("meta state needs 'namespaces' and 'arms' mappings")
        loaded = {ns: _load_ns(doc, self.arms, len(CONTEXT_FEATURES))
                  for ns, doc in spaces.items()}
        bandit = LinUCB(tuple(self.arms), len(CONTEXT_FEATURES), self.config.alpha,
                        self.config.ridge, self.config.warmup)
        bandit.load(state.get("bandit") or {})
        for name, arm_state in arms.items():
            if name in self.arms and not isinstance(arm_state, Mapping):
                raise ValidationError(f"meta state of arm {name!r} must be a mapping")
        self._restore_arms(arms)
        self.bandit, self._decisions = bandit, state["decisions"]
        for ns, (arm, context, decided_at, last, window) in loaded.items():
            st = self._ns_state(ns)
            st.arm, st.context, st.decided_at, st.last, st.window = (
                arm, context, decided_at, last, window)

    def _restore_arms(self, arms: Mapping[str, Any]) -> None:
        """Load each arm's state, all or nothing: a failing arm rolls the others back."""
        before = {name: arm.state_dict() for name, arm in self.arms.items()}
        try:
            for name, arm_state in arms.items():
                if name in self.arms:
                    self.arms[name].load_state(arm_state)
        except ValidationError:
            for name, old in before.items():
                if old or name in arms:
                    self.arms[name].load_state(old)
            raise

    # --- decisions ---------------------------------------------------------------------------

    def apply(self, view: PolicyView, need: int, exclude: frozenset[str] = frozenset()
              ) -> Plan:
        """Decide (at most once per ``decision_interval``), then run the chosen arm's stages."""
        self._namespace = view.namespace
        if need > 0:
            self._maybe_decide(view)
        return super().apply(view, need, exclude)

    def sweep(self, view: PolicyView, exclude: frozenset[str] = frozenset()) -> Plan:
        """The chosen arm's hygiene for the view's namespace."""
        self._namespace = view.namespace
        return super().sweep(view, exclude)

    def context(self, view: PolicyView) -> Vector:
        """The context vector of ``view``'s namespace now (see :data:`CONTEXT_FEATURES`)."""
        state = self._ns_state(view.namespace)
        win = state.window
        ops = win.adds + win.retrievals
        count = max(state.count, 1)
        age = max(0.0, view.step - state.step_sum / count) if state.count else 0.0
        return np.array([
            1.0,
            win.adds / ops if ops else 0.0,
            age / (age + self.config.age_scale),
            min(1.0, win.hit_tokens / win.asked_tokens) if win.asked_tokens else 0.0,
            state.types[MemoryType.SOCIAL] / count,
            state.types[MemoryType.TASK] / count,
            win.complaints / (1.0 + win.complaints),
        ])

    def reward(self, view: PolicyView) -> float:
        """The reward of the namespace's open decision, from its window (module docstring)."""
        win = self._ns_state(view.namespace).window
        if win.credit_offered:
            utility = win.credit_used / win.credit_offered
        elif win.retrieved and view.used > 0:
            utility = min(1.0, sum(win.retrieved.values()) / view.used)
        else:
            utility = 0.0
        return utility - self.config.cost_weight * (view.used / view.budget)

    def _maybe_decide(self, view: PolicyView) -> None:
        state = self._ns_state(view.namespace)
        if (state.decided_at is not None
                and view.step - state.decided_at < self.config.decision_interval):
            return
        closed: float | None = None
        if state.arm is not None and state.context is not None:
            closed = self.reward(view)
            self.bandit.update(state.arm, state.context, closed)
        x = self.context(view)
        warm = self.bandit.warming(x)
        arm, scores = self.bandit.choose(x)
        state.arm, state.context, state.decided_at = arm, x, view.step
        state.window = _Window()
        self._decisions += 1
        rounded = {a: round(v, 6) for a, v in scores.items()}
        state.last = _Decision(arm, self._decisions, view.step,
                               {k: round(float(v), 6) for k, v in zip(CONTEXT_FEATURES, x,
                                                                      strict=True)},
                               rounded, None if closed is None else round(closed, 6),
                               self._why(arm, rounded, warm))

    def _why(self, arm: str, scores: Mapping[str, float], warm: bool) -> str:
        """Which policy and parameters were chosen, and against what (for the audit)."""
        policy = self.policy_of[arm]
        params = self.grid_params[arm]
        what = (f"{policy} with {', '.join(f'{k}={v!r}' for k, v in _flat(params))}"
                if params else f"{policy} with its default parameters")
        if warm:
            return (f"{what}: warm-up, every arm is played {self.config.warmup} time(s) "
                    "before the UCB decides")
        text = f"{what}: highest UCB {scores[arm]:.4f} of {len(scores)} arms"
        same = [a for a in scores if a != arm and self.policy_of[a] == policy]
        if same:
            best = max(same, key=lambda a: scores[a])
            text += f"; best other parameters of {policy}: {best} {scores[best]:.4f}"
        other = [a for a in scores if self.policy_of[a] != policy]
        if other:
            best = max(other, key=lambda a: scores[a])
            text += f"; best other policy: {best} {scores[best]:.4f}"
        return text

    # --- delegation ---------------------------------------------------------------------------

    def _stages(self) -> Sequence[Stage]:
        arm = self.arms[self.arm_for(self._namespace)]
        return tuple(_relabel(stage) for stage in arm._stages())

    def _sweep_candidates(self, view: PolicyView) -> Iterator[Candidate]:
        return self.arms[self.arm_for(view.namespace)]._sweep_candidates(view)

    # --- internals ----------------------------------------------------------------------------

    def _ns_state(self, namespace: str) -> _Namespace:
        state = self._ns.get(namespace)
        if state is None:
            state = self._ns[namespace] = _Namespace()
        return state

    def _count(self, node: MemoryNode, sign: int) -> None:
        state = self._ns_state(node.namespace)
        state.count += sign
        state.step_sum += sign * node.step
        state.types[node.type] += sign


_STATE_VERSION = 1
_Loaded = tuple[str | None, Vector | None, int | None, _Decision | None, _Window]


def _dump_ns(st: _Namespace) -> dict[str, Any]:
    win = st.window
    return {"arm": st.arm, "decided_at": st.decided_at,
            "context": None if st.context is None else st.context.tolist(),
            "last": None if st.last is None else {
                "arm": st.last.arm, "number": st.last.number, "step": st.last.step,
                "context": st.last.context, "scores": st.last.scores,
                "reward": st.last.reward, "why": st.last.why},
            "window": {"adds": win.adds, "retrievals": win.retrievals,
                       "hit_tokens": win.hit_tokens, "asked_tokens": win.asked_tokens,
                       "retrieved": dict(win.retrieved), "credit_used": win.credit_used,
                       "credit_offered": win.credit_offered, "complaints": win.complaints}}


def _load_ns(doc: Any, arms: Mapping[str, Policy], dim: int) -> _Loaded:
    """Parse one namespace's saved decision and window (ValidationError when malformed)."""
    try:
        arm = doc["arm"]
        if arm is not None and arm not in arms:
            arm = None  # an arm no longer configured: the next trigger decides afresh
        context = None if doc["context"] is None else np.asarray(doc["context"], np.float64)
        if context is not None and (context.shape != (dim,)
                                    or not np.all(np.isfinite(context))):
            raise ValidationError(f"context must hold {dim} finite numbers")
        decided_at = doc["decided_at"]
        if decided_at is not None and (not isinstance(decided_at, int) or decided_at < 0):
            raise ValidationError("decided_at must be a step >= 0")
        raw = doc["last"]
        last = None if raw is None else _Decision(
            str(raw["arm"]), int(raw["number"]), int(raw["step"]),
            {str(k): float(v) for k, v in raw["context"].items()},
            {str(k): float(v) for k, v in raw["scores"].items()},
            None if raw["reward"] is None else float(raw["reward"]), str(raw.get("why", "")))
        w = doc["window"]
        counts = {k: w[k] for k in ("adds", "retrievals", "hit_tokens", "asked_tokens",
                                    "credit_used", "credit_offered", "complaints")}
        if any(not isinstance(v, int) or v < 0 for v in counts.values()):
            raise ValidationError("window counts must be integers >= 0")
        retrieved = {str(k): int(v) for k, v in w["retrieved"].items()}
        window = _Window(retrieved=retrieved, **counts)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError(f"malformed meta namespace state: {exc!r}") from None
    if arm is None:
        context, decided_at = None, None
    return arm, context, decided_at, last, window


def _relabel(stage: Stage) -> Stage:
    if isinstance(stage, SummariseStage):
        return SummariseStage(f"meta/{stage.label}", stage.propose)
    return EvictStage(f"meta/{stage.label}", stage.candidates)
