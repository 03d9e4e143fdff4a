"""Priority-Decay: forget the lowest importance per token first (seed 000 §3.3.2, §5.3).

``imp(n) = (α·type_weight(t_n) + β·recency(n) + γ·frequency(n)) / (α+β+γ)`` (§3.3.2, DESIGN
§6; :func:`mars_core.scoring.density.importance`) and the heap key is the density of
§5.3, ``(imp(n) − λ_priv·s_n)/w_n`` (:func:`~mars_core.scoring.density.priority_key`):
"all policies operate over the same density score", and "at selection time, sensitivity
is integrated into the density score via a penalty term λ_priv·s_i, tilting eviction
toward high-risk, low-value nodes" (§5.4). λ_priv is ``DensityConfig.lambda_priv``
(0.25). Of two twin memories that differ only in sensitivity (s = 0.95 and s = 0), the
sensitive one goes first. ``PriorityDecayConfig.key = "importance"`` keeps the former key
``imp(n)/w_n`` (§3.3.2's sentence alone, no penalty). Recency is ``e^{-λ_age(t)·Δn}`` with
``Δn`` the namespace steps since the memory was written; frequency is the *local*
log-saturating norm of its access count, so one memory's key never moves when another
is touched; the penalty is constant while the sensitivity is (a re-scored memory is
re-keyed through ``on_update``).

**Keys drift with time, so the heap is refreshed per memory, not per epoch.** A stored
key is exact at the step it was computed (its *keying step*) and recency only falls
afterwards, so a stored key is an upper bound of the true one. Each memory carries a
refresh schedule: its key is recomputed whenever its recency term could have fallen by
``drift_tolerance`` in importance units since the last keying. The keying step is a pure
function of the memory and the current step (recency levels ``r_0 - j·Δr`` with
``Δr = drift_tolerance·(α+β+γ)/β``), so a reopened store rebuilds the very same keys.

*Bound (tested):* at every trigger, for every memory ``y``,
``0 <= stored_key(y) - key(y) < drift_tolerance / w_y``. A memory ``x`` is yielded before
``y`` only if ``stored_key(x) <= stored_key(y)``, hence ``key(x) < key(y) +
drift_tolerance / w_y``: each eviction's true importance per token is within
``drift_tolerance / w`` of every memory kept. With the default 0.02 a memory is
re-keyed at most ``β/((α+β+γ)·0.02) = 15`` times in its life, so the amortised cost stays
``O(log n)`` per insert or access (one heap push each, lazy deletion for stale entries)
and ``O(k log n)`` per trigger (a sorted walk of the heap that does not pop). A tolerance
near zero re-keys every memory at every trigger and gives the exact order (tested too).
The seed's wording of a per-epoch re-key was replaced by this schedule because an epoch
long enough to amortise (hundreds of steps) flattens recency, whose half-life is about
20 steps for episodes, and because epochs depend on history a reopen cannot see.

**Hysteresis** (seed 000 §5.3: "once a node becomes eligible for eviction, it must exceed
a small margin in density improvement to be spared"). A memory examined at a trigger but
spared — it was a non-leaf or task-protected, so the template set it aside — becomes
*eligible* with the importance it had then. At later triggers, an eligible memory that
can be evicted again is offered first, unless its importance has risen by more than
``hysteresis_margin`` since (then it loses eligibility and takes its place in the heap).
Pinned memories never become eligible: a pin is not the policy's decision. Eligibility
is the only part of this policy that depends on history, so it is what
:meth:`PriorityDecayPolicy.state_dict` exports (eligible and examined memories with the
importance and step at which they were spared); the store saves it and
:meth:`~PriorityDecayPolicy.load_state` restores it after the replay on open, so a
reopened store orders eligible memories as the running one did.

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> store = MemoryStore(budget=12, policy="priority", clock=FakeClock(), nlp="rules")
    >>> a = store.add("the cat sat on the mat", type="episodic")
    >>> b = store.add("Paris is the capital of France", type="semantic")
    >>> c = store.add("lunch was fine today", type="episodic")
    >>> store.get(a.id).status.value, store.get(b.id).status.value
    ('archived', 'active')
    >>> "lowest density per token" in store.explain(a.id).rationale
    True
    >>> store.close()
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core.errors import ConfigError, ValidationError
from mars_core.model import MemoryNode
from mars_core.policies.base import Policy, register
from mars_core.policies.plan import Candidate, PolicyView
from mars_core.scoring.density import DensityConfig, access_frequency

__all__ = ["PriorityDecayConfig", "PriorityDecayPolicy"]

SortKey = tuple[float, ...]


# --- shared machinery (also used by the DMF policy) ----------------------------------------


class _LazyHeap:
    """A min-heap of ``(sort key, version, id)`` with lazy deletion.

    ``put`` replaces an id's entry (the old one goes stale), ``discard`` drops it; stale
    entries are skipped and compacted away once they outnumber the live ones.
    :meth:`ordered` walks the live entries in key order without popping.
    """

    __slots__ = ("_clock", "_heap", "_live")

    def __init__(self) -> None:
        self._heap: list[tuple[SortKey, int, str]] = []
        self._live: dict[str, int] = {}
        self._clock = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._live

    @property
    def entries(self) -> int:
        """Heap entries, stale ones included (for tests of the compaction)."""
        return len(self._heap)

    def put(self, node_id: str, key: SortKey) -> None:
        """Insert or replace the entry of ``node_id``: O(log n)."""
        self._clock = clock = self._clock + 1
        self._live[node_id] = clock
        heapq.heappush(self._heap, (key, clock, node_id))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._maybe_compact()

    def discard(self, node_id: str) -> None:
        """Drop the entry of ``node_id`` (lazily)."""
        if self._live.pop(node_id, None) is not None:
            self._maybe_compact()

    def _maybe_compact(self) -> None:
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = [e for e in self._heap if self._live.get(e[2]) == e[1]]
            heapq.heapify(self._heap)

    def pop_due(self, bound: float) -> list[str]:
        """Remove and return the ids whose key starts with a value ``<= bound``."""
        heap, live, out = self._heap, self._live, []
        while heap and heap[0][0][0] <= bound:
            _key, version, node_id = heapq.heappop(heap)
            if live.get(node_id) == version:
                del live[node_id]
                out.append(node_id)
        return out

    def ordered(self) -> Iterator[tuple[SortKey, str]]:
        """Live entries in key order, walking the heap without changing it.

        Stale entries at the top are popped first (amortised O(log n) each), then the first
        k entries cost O(k log k); the heap must not change during the walk.
        """
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)  # stale entries at the top (evicted memories): drop them now
        if not heap:
            return
        frontier = [(heap[0], 0)]
        while frontier:
            entry, i = heapq.heappop(frontier)
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap):
                    heapq.heappush(frontier, (heap[child], child))
            if live.get(entry[2]) == entry[1]:
                yield entry[0], entry[2]


class _Calendar:
    """Refresh steps → ids (a calendar queue): O(1) to schedule, amortised O(1) per step to
    collect what is due. Entries are not removed; callers skip ids whose schedule moved."""

    __slots__ = ("_buckets", "_done")

    def __init__(self) -> None:
        self._buckets: dict[int, list[str]] = {}
        self._done = -1  # every step up to here was collected

    def put(self, node_id: str, step: int) -> int:
        """Schedule ``node_id`` at ``step`` (or the first step not collected yet): the step."""
        step = max(step, self._done + 1)
        self._buckets.setdefault(step, []).append(node_id)
        return step

    def pop_due(self, step: int) -> list[tuple[int, str]]:
        """``(step, id)`` of everything scheduled up to ``step``, in step order."""
        if step <= self._done:
            return []
        buckets = self._buckets
        if step - self._done <= len(buckets):
            due = [s for s in range(self._done + 1, step + 1) if s in buckets]
        else:
            due = sorted(s for s in buckets if s <= step)
        self._done = step
        return [(s, node_id) for s in due for node_id in buckets.pop(s)]


def _decayed(scale: float, rate: float, born: int, step: int) -> float:
    """``scale·e^{-rate·Δn}`` with ``Δn = max(0, step - born)`` (the decay laws' operations)."""
    return scale * math.exp(-rate * max(0, step - born))


def _first_step(scale: float, rate: float, born: int, level: float, lo: int) -> int:
    """The first step ``>= lo`` at which ``_decayed(scale, rate, born, ·) <= level`` (level > 0,
    rate > 0): the closed form, then checked on both sides against float rounding."""
    if scale <= level:
        return lo
    x = math.log(scale / level) / rate
    tau = born + math.ceil(x)
    if tau > lo and 1e-9 < tau - born - x < 1.0 - 1e-9:
        return tau  # far from a step boundary: the closed form is exact
    tau = max(lo, tau)
    while _decayed(scale, rate, born, tau) > level:
        tau += 1
    while tau > lo and _decayed(scale, rate, born, tau - 1) <= level:
        tau -= 1
    return tau


_Schedule = tuple[int, int, int | None]
"""``(level j, keying step, next keying step or None)`` of a drift schedule."""


def _drift_schedule(scale: float, rate: float, born: int, *, tau0: int, t: int,
                    tolerance: float, hint: _Schedule | None = None) -> _Schedule:
    """Where a key decaying as ``v = _decayed(scale, rate, born, ·)`` from ``tau0`` stands at ``t``.

    Refresh levels are ``v(tau0) - j·tolerance``; level ``j`` is reached at the first step
    where ``v`` is at or below it. The keying step at ``t`` is the last level reached by
    ``t``, so ``v(keying) - v(t) < tolerance``; the next one is where the following level
    is reached (None when that level is <= 0: ``v`` can never fall by ``tolerance``
    again). ``hint`` is the previous result for the same curve (a shortcut when one more
    level was crossed); the result is a pure function of the curve and ``t`` either way,
    so a reopened store computes the same.
    """
    t = max(t, tau0)
    v0 = _decayed(scale, rate, born, tau0)

    def point(j: int) -> int | None:
        if j == 0:
            return tau0
        level = v0 - j * tolerance
        return None if level <= 0.0 else _first_step(scale, rate, born, level, tau0)

    if hint is not None:
        j, keyed, nxt = hint
        if nxt is None or nxt > t:
            return hint
        after = point(j + 2)
        if after is None or after > t:
            return j + 1, nxt, after
    j = max(0, int((v0 - _decayed(scale, rate, born, t)) / tolerance))
    while (found := point(j)) is None or found > t:
        j -= 1  # float rounding only
    keyed = found
    while (nxt := point(j + 1)) is not None and nxt <= t:
        j, keyed = j + 1, nxt  # float rounding only
    return j, keyed, nxt


_STATE_VERSION = 1
_Spared = dict[str, tuple[float, int]]


def _parse_table(raw: Any, where: str) -> _Spared:
    if not isinstance(raw, Mapping):
        raise ValidationError(f"{where} must be a mapping of id -> [importance, step]")
    out: _Spared = {}
    for node_id, value in raw.items():
        ok = (isinstance(node_id, str) and isinstance(value, list | tuple) and len(value) == 2
              and isinstance(value[0], int | float) and not isinstance(value[0], bool)
              and math.isfinite(value[0]) and isinstance(value[1], int)
              and not isinstance(value[1], bool) and value[1] >= 0)
        if not ok:
            raise ValidationError(f"{where}[{node_id!r}] must be [importance, step], got {value!r}")
        out[node_id] = (float(value[0]), int(value[1]))
    return out


def _parse_state(state: Mapping[str, Any]) -> dict[str, dict[str, _Spared]]:
    """Validate a Priority-Decay state completely before anything is changed."""
    if not state:
        return {}
    if not isinstance(state, Mapping) or state.get("version") != _STATE_VERSION:
        raise ValidationError(f"priority state must be a mapping with version "
                              f"{_STATE_VERSION}; got {state!r:.80}")
    unknown = sorted(set(state) - {"version", "namespaces"})
    if unknown:
        raise ValidationError(f"unknown keys in priority state: {unknown}")
    spaces = state.get("namespaces")
    if not isinstance(spaces, Mapping):
        raise ValidationError("priority state 'namespaces' must be a mapping")
    out: dict[str, dict[str, _Spared]] = {}
    for ns, tables in spaces.items():
        if not isinstance(ns, str) or not isinstance(tables, Mapping) or \
                set(tables) - {"eligible", "examined"}:
            raise ValidationError(f"priority state of namespace {ns!r} must hold only "
                                  "'eligible' and 'examined'")
        out[ns] = {name: _parse_table(tables.get(name, {}), f"{ns}.{name}")
                   for name in ("eligible", "examined")}
    return out


def _ordinal(rank: int, total: int) -> str:
    if rank == 1:
        return f"the lowest of {total:,}"
    suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    return f"the {rank}{suffix} lowest of {total:,}"


def _validated(model: type[BaseModel], config: BaseModel | None, params: Mapping[str, Any],
               policy: str) -> Any:
    """A config model from an instance or keyword parameters (``ConfigError`` if bad)."""
    if config is not None and params:
        raise ConfigError(f"{policy}: pass either config= or keyword parameters, not both")
    if config is not None:
        return config
    try:
        return model.model_validate(dict(params))
    except pydantic.ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                         for e in exc.errors(include_input=False, include_url=False))
        raise ConfigError(f"bad parameters for policy {policy!r}: {msgs}") from None


# --- configuration -------------------------------------------------------------------------


class PriorityDecayConfig(BaseModel):
    """Constants of Priority-Decay (each default with its source or reason).

    Examples:
        >>> cfg = PriorityDecayConfig(hysteresis_margin=0.2)
        >>> cfg.drift_tolerance, cfg.density.alpha, cfg.hysteresis_margin, cfg.key
        (0.02, 0.4, 0.2, 'density')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    density: DensityConfig = Field(
        default_factory=DensityConfig,
        description="imp constants: α, β, γ, type weights, λ_age per type and the frequency "
        "norm (seed 000 §3.3.2 with DESIGN §6; values and reasons in DensityConfig). The "
        "'max' frequency norm is refused: it is global, so one access would move every key.",
    )
    drift_tolerance: float = Field(
        0.02, gt=0.0, le=1.0, allow_inf_nan=False,
        description="Largest fall of a memory's importance (in [0, 1] units) between two "
        "refreshes of its heap key; eviction order is exact up to drift_tolerance/w. 0.02 "
        "(ours): a fiftieth of the importance range, below the 0.087 one access adds, at "
        "most 15 refreshes per memory with the default β share of 0.3.",
    )
    key: Literal["density", "importance"] = Field(
        "density",
        description="What the heap orders: 'density' = (imp − λ_priv·s)/w, seed 000 §5.3 "
        "('all policies operate over the same density score') and §5.4 (the penalty "
        "λ_priv·s at selection time), λ_priv = density.lambda_priv; 'importance' = imp/w, "
        "the key before issue 33 (§3.3.2's sentence alone: sensitivity plays no part).",
    )
    hysteresis_margin: float = Field(
        0.1, ge=0.0, allow_inf_nan=False,
        description="Importance rise (in [0, 1] units) an eligible memory needs to lose its "
        "place at the front of the line (seed 000 §5.3 'a small margin', value ours): one "
        "access adds γ·ln2/ln11/(α+β+γ) ≈ 0.087 and is not enough, two (≈ 0.137) are.",
    )

    @model_validator(mode="after")
    def _local_frequency(self) -> PriorityDecayConfig:
        if self.density.frequency_norm == "max":
            raise ValueError("frequency_norm 'max' is global (one access re-keys every memory); "
                             "use 'log' or 'cap' with Priority-Decay")
        return self


# --- the index -----------------------------------------------------------------------------


@dataclass
class _Item:
    """One memory in the index with the constant parts of its importance."""

    node: MemoryNode
    prior: float        # α·type_weight
    freq_term: float    # γ·frequency
    rate: float         # λ_age of its type
    penalty: float      # λ_priv·s ('density' key) or 0 ('importance' key)
    tau0: int           # step of the last change of its frequency (insert or access)
    imp: float = 0.0    # stored importance, exact at keyed_at
    keyed_at: int = 0
    level: _Schedule | None = None  # where its drift schedule stands
    refresh_at: int | None = None   # its next refresh step


@dataclass
class _Space:
    """Per-namespace state."""

    items: dict[str, _Item] = field(default_factory=dict)
    heap: _LazyHeap = field(default_factory=_LazyHeap)
    timers: _Calendar = field(default_factory=_Calendar)
    dirty: dict[str, None] = field(default_factory=dict)
    examined: dict[str, tuple[float, int]] = field(default_factory=dict)
    eligible: dict[str, tuple[float, int]] = field(default_factory=dict)
    rekeys: int = 0


@register("priority")
class PriorityDecayPolicy(Policy):
    """Priority-Decay: evict the lowest density ``(imp − λ_priv·s)/w`` first, with hysteresis.

    Args:
        config: a :class:`PriorityDecayConfig` (or pass its fields as keywords, e.g.
            ``MemoryStore(policy="priority", policy_params={"hysteresis_margin": 0.2})``).

    Raises:
        ConfigError: bad parameters.

    Examples:
        >>> PriorityDecayPolicy(drift_tolerance=0.05).config.drift_tolerance
        0.05
    """

    def __init__(self, config: PriorityDecayConfig | None = None, **params: Any) -> None:
        self.config: PriorityDecayConfig = _validated(PriorityDecayConfig, config, params,
                                                      "priority")
        dc = self.config.density
        self._total: float = dc.alpha + dc.beta + dc.gamma
        # recency drift allowed between refreshes (None: β = 0, keys never drift)
        self._gap = self.config.drift_tolerance * self._total / dc.beta if dc.beta > 0 else None
        self._spaces: dict[str, _Space] = {}
        self._freq: dict[int, float] = {}

    def params(self) -> dict[str, Any]:
        """The constants that decide the order (recorded in every eviction event)."""
        dc = self.config.density
        return {"alpha": dc.alpha, "beta": dc.beta, "gamma": dc.gamma,
                "type_weight": {t.value: w for t, w in dc.type_weight.items()},
                "lambda_age": {t.value: v for t, v in dc.lambda_age.items()},
                "frequency_norm": dc.frequency_norm, "frequency_ref": dc.frequency_ref,
                "drift_tolerance": self.config.drift_tolerance,
                "hysteresis_margin": self.config.hysteresis_margin,
                "key": self.config.key,
                "lambda_priv": dc.lambda_priv if self.config.key == "density" else 0.0}

    # --- hooks: O(1) bookkeeping; keys are computed at the next trigger ------------------

    def _space(self, namespace: str) -> _Space:
        if namespace not in self._spaces:
            self._spaces[namespace] = _Space()
        return self._spaces[namespace]

    def _frequency(self, count: int) -> float:
        """``access_frequency`` of a count (memoised: counts are small integers)."""
        freq = self._freq.get(count)
        if freq is None:
            dc = self.config.density
            freq = self._freq[count] = access_frequency(count, dc.frequency_norm,
                                                        dc.frequency_ref)
        return freq

    def _item(self, node: MemoryNode) -> _Item:
        dc = self.config.density
        freq = self._frequency(node.access_count)
        last = node.last_access_step if node.last_access_step is not None else node.step
        penalty = dc.lambda_priv * node.sensitivity if self.config.key == "density" else 0.0
        return _Item(node, dc.alpha * dc.type_weight[node.type], dc.gamma * freq,
                     dc.lambda_age[node.type], penalty, max(node.step, last))

    def on_insert(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        space.items[node.id] = self._item(node)
        space.dirty[node.id] = None

    def on_access(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        if node.id in space.items:
            space.items[node.id] = self._item(node)
            space.dirty[node.id] = None

    def on_update(self, node: MemoryNode) -> None:
        """A re-scored sensitivity moves the key's penalty: re-key at the next trigger."""
        space = self._space(node.namespace)
        item = space.items.get(node.id)
        if item is not None:
            fresh = self._item(node)
            fresh.level = item.level if fresh.tau0 == item.tau0 else None
            space.items[node.id] = fresh
            space.dirty[node.id] = None

    def on_remove(self, node: MemoryNode) -> None:
        space = self._space(node.namespace)
        for table in (space.items, space.dirty, space.examined, space.eligible):
            table.pop(node.id, None)
        space.heap.discard(node.id)

    # --- importance ------------------------------------------------------------------------

    def _recency(self, item: _Item, step: int) -> float:
        return _decayed(1.0, item.rate, item.node.step, step)

    def _importance(self, item: _Item, step: int) -> float:
        """``density.importance`` at ``step`` (same operations, constant parts cached)."""
        beta = self.config.density.beta
        return (item.prior + beta * self._recency(item, step) + item.freq_term) / self._total

    def _rekey(self, space: _Space, node_id: str, step: int) -> None:
        """Key a memory as of ``step``'s schedule; O(log n)."""
        item = space.items[node_id]
        node = item.node
        if self._gap is None or item.rate <= 0.0:
            keyed, nxt = item.tau0, None
        else:
            item.level = _drift_schedule(1.0, item.rate, node.step, tau0=item.tau0, t=step,
                                         tolerance=self._gap, hint=item.level)
            _j, keyed, nxt = item.level
        item.keyed_at, item.imp = keyed, self._importance(item, keyed)
        space.heap.put(node_id, ((item.imp - item.penalty) / node.weight, node.seq))
        item.refresh_at = None if nxt is None else space.timers.put(node_id, nxt)
        space.rekeys += 1

    def _refresh(self, space: _Space, step: int) -> None:
        """Key new or accessed memories, then every memory whose refresh step has come."""
        for node_id in space.dirty:
            self._rekey(space, node_id, step)
        space.dirty.clear()
        for due, node_id in space.timers.pop_due(step):
            item = space.items.get(node_id)
            if item is not None and item.refresh_at == due:
                self._rekey(space, node_id, step)

    # --- candidates ------------------------------------------------------------------------

    def _settle(self, space: _Space) -> None:
        """Memories examined at the last trigger while structurally protected (a non-leaf or
        a prerequisite of a goal) and still active were spared: they become eligible."""
        for node_id, seen in space.examined.items():
            if node_id in space.items:
                space.eligible.setdefault(node_id, seen)
        space.examined.clear()

    def _first_in_line(self, view: PolicyView, space: _Space) -> list[tuple[float, int, str]]:
        """Eligible memories that may be evicted now, by current key (hysteresis)."""
        margin, out = self.config.hysteresis_margin, []
        for node_id, (imp_then, _since) in sorted(space.eligible.items()):
            item = space.items.get(node_id)
            if item is None:
                continue
            if view.task_protected(node_id) or not view.is_leaf(node_id):
                continue  # still structurally spared: it keeps its eligibility
            imp_now = self._importance(item, view.step)
            if imp_now > imp_then + margin:
                del space.eligible[node_id]  # it improved enough to be spared
                continue
            out.append(((imp_now - item.penalty) / item.node.weight, item.node.seq, node_id))
        out.sort()
        return out

    def _candidate(self, view: PolicyView, space: _Space, node_id: str, rank: int,
                   first: bool) -> Candidate:
        item, step = space.items[node_id], view.step
        node, dc = item.node, self.config.density
        imp = self._importance(item, step)
        key = (imp - item.penalty) / node.weight
        rec, age = self._recency(item, step), max(0, step - node.step)
        stored = (item.imp - item.penalty) / node.weight
        if not node.pinned and (view.task_protected(node_id) or not view.is_leaf(node_id)):
            space.examined.setdefault(node_id, (imp, step))  # the template will spare it
        if self.config.key == "density":
            head = (f"(imp {imp:.3f} − λ_priv·s {item.penalty:.3f}) over {node.weight} "
                    f"tokens = {key:.4f}")
        else:
            head = f"imp {imp:.3f} over {node.weight} tokens = {key:.4f}"
        tail = (f"recency {rec:.2f} (written {age} steps ago), {node.access_count} "
                f"access{'es' if node.access_count != 1 else ''}, {node.type.value} "
                f"(type weight {dc.type_weight[node.type]:g})")
        if self.config.key == "density":
            tail += f", sensitivity {node.sensitivity:.2f}"
        if first:
            imp_then, since = space.eligible[node_id]
            reason = (f"first in line by hysteresis: examined and spared at step {since} with "
                      f"imp {imp_then:.3f}, now {head}, not {self.config.hysteresis_margin:g} "
                      f"above it; {tail}")
        else:
            what = "density" if self.config.key == "density" else "importance"
            reason = (f"lowest {what} per token: {head}, "
                      f"{_ordinal(rank, view.count)}; {tail}")
        feats = {"importance": imp, "key": key, "weight": float(node.weight), "recency": rec,
                 "frequency": item.freq_term / dc.gamma if dc.gamma > 0 else 0.0,
                 "age_steps": float(age), "access_count": float(node.access_count),
                 "type_weight": dc.type_weight[node.type], "stored_key": stored,
                 "sensitivity": node.sensitivity, "privacy_penalty": item.penalty,
                 "keyed_at": float(item.keyed_at)}
        return Candidate(node_id, key, feats, reason)

    def _candidates(self, view: PolicyView) -> Iterator[Candidate]:
        space = self._space(view.namespace)
        self._refresh(space, view.step)
        self._settle(space)
        yielded: set[str] = set()
        for _score, _seq, first_id in self._first_in_line(view, space):
            yielded.add(first_id)
            yield self._candidate(view, space, first_id, len(yielded), first=True)
        for rank, (_key, node_id) in enumerate(space.heap.ordered(), 1):
            if node_id not in yielded:
                yield self._candidate(view, space, node_id, rank, first=False)

    # --- learned state ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Hysteresis state per namespace: ``{"version": 1, "namespaces": {ns: {"eligible":
        {id: [imp, step]}, "examined": {id: [imp, step]}}}}`` (``{}`` when empty).

        Examples:
            >>> PriorityDecayPolicy().state_dict()
            {}
        """
        spaces: dict[str, Any] = {}
        for ns in sorted(self._spaces):
            space = self._spaces[ns]
            tables = {name: {i: [imp, step] for i, (imp, step) in sorted(table.items())}
                      for name, table in (("eligible", space.eligible),
                                          ("examined", space.examined))}
            if any(tables.values()):
                spaces[ns] = tables
        return {"version": _STATE_VERSION, "namespaces": spaces} if spaces else {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` after :meth:`rebuild`; memories no longer active
        are dropped.

        Raises:
            ValidationError: a malformed state (nothing is changed).
        """
        parsed = _parse_state(state)
        for ns, tables in parsed.items():
            space = self._space(ns)
            for name, table in tables.items():
                kept = {i: v for i, v in table.items() if i in space.items}
                target = space.eligible if name == "eligible" else space.examined
                target.clear()
                target.update(kept)

    # --- introspection (tests, benchmarks) --------------------------------------------------

    def stored_order(self, namespace: str) -> list[str]:
        """Ids in stored-key order (the order a trigger walks the heap)."""
        return [node_id for _key, node_id in self._space(namespace).heap.ordered()]

    def true_key(self, node: MemoryNode, step: int) -> float:
        """The exact key of a memory at ``step``, ``(imp − λ_priv·s)/w`` (or ``imp/w`` with
        ``key="importance"``), brute force, for checks."""
        item = self._item(node)
        return (self._importance(item, step) - item.penalty) / node.weight

    def rekeys(self, namespace: str) -> int:
        """How many keys were computed in a namespace so far."""
        return self._space(namespace).rekeys

