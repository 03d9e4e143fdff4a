"""Differential privacy at the eviction boundary: exponential mechanism, tie-break, accountant.

Seed 000 (§3.3.3, §3.4.2 Thm A1, §4.3, §5.4) keeps the deterministic density order
``score(i) = (Û_i - λ_priv·s_i)/w_i`` everywhere *except* at the decision boundary:
"we use this randomized tie-break only when deterministic densities are within a
tolerance band". There it samples a feasible set with the exponential mechanism

    Pr[S] ∝ exp( ε·q(S; M) / (2·Δq) ),   q(S; M) = U(S) - λ_priv·Σ_{i∈S} s_i,
    Δq ≤ L·max_i w_i + λ_priv                                         (Lemma A3)

and a "lightweight accountant" composes the loss per user or conversation, scaling
by group privacy when several nodes pertain to one individual; "the current privacy
budget and the accountant's running totals" go into the audit so that operators can
"pause randomized selection when budgets near exhaustion" (§4.3).

**Sign convention.** In the seed ``S`` is the set that is *kept* (the retention problem,
eq 2, maximises over kept sets). We select the set ``E`` to *evict* from the marginal
band, so ``S = M ∖ E``. With the additive proxy ``U(S) = Σ_{i∈S} Û_i`` (eq 5),

    q(M ∖ E) = Σ_{i∉E} (Û_i - λ_priv·s_i) = C - Σ_{i∈E} (Û_i - λ_priv·s_i)
             = C + Σ_{i∈E} v_i,        v_i = λ_priv·s_i - Û_i = -w_i·score(i),

and the constant ``C`` cancels in the mechanism. So an eviction set is scored by the
sum of ``v_i`` of its members: evicting a *low-utility* or *high-sensitivity* memory
keeps more of q, and is more likely. When the caller gives no utilities, ``Û_i`` is
recovered from the density as ``Û_i = score(i)·w_i + λ_priv·s_i`` (eq 7 inverted), so
``v_i = -score(i)·w_i`` exactly — the sensitivity acts through the density, counted
once, never twice.

**Randomness** comes from the operating system (:class:`secrets.SystemRandom`) unless a
caller passes a generator (tests do): whoever holds the store, its seed and its audit
cannot replay the choice (DESIGN §3 "Determinism and time"). The decision itself,
its probabilities and the ε spent are returned for the audit.

**What is and is not private.** The guarantee is ε-DP *of the choice inside the
band* with respect to changing one memory (seed's adjacency), given the band and its
feasible family. Which memories form the band, and every decision outside it, are
deterministic functions of the densities and are not private — exactly the seed's
scope ("only at the decision boundary"). The mechanism is pure ε-DP; the seed's
"(ε, δ)" wording only enters the reported utility bound (digest Z-A7).

Examples:
    >>> import random
    >>> from mars_core.policies.base import Candidate
    >>> cfg = DPConfig(enabled=True)
    >>> cands = [Candidate("a", 0.010), Candidate("b", 0.0102), Candidate("c", 0.5)]
    >>> res = near_threshold_tiebreak(cands, [10, 10, 10], [0.9, 0.0, 0.0], need=10,
    ...                               config=cfg, rng=random.Random(7))
    >>> res.band_ids, res.mode, res.epsilon_spent, round(res.delta_q, 2)
    (('a', 'b'), 'exact', 1.0, 1.25)
    >>> len(res.chosen_ids), "c" in res.evict_ids
    (1, False)
"""

from __future__ import annotations

import itertools
import math
import random
import secrets
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core.errors import ValidationError

__all__ = [
    "ANYONE",
    "DPConfig",
    "MarginalBand",
    "PrivacyAccountant",
    "ScoredCandidate",
    "TieBreakResult",
    "delta_q",
    "exponential_mechanism",
    "group_sizes",
    "marginal_band",
    "mechanism_probabilities",
    "near_threshold_tiebreak",
    "utility_bound",
]

T = TypeVar("T")

ANYONE = "*"
"""Ledger subject for memories attributed to no named individual (the namespace's
user or conversation as a whole, seed 000 §4.3 "per user or conversation")."""

_SLACK = 1e-9
"""Tolerance on ε sums, so float rounding never refuses the last affordable decision."""

_STATE_VERSION = 1

GroupPrivacy = Literal["event", "subject"]
Mode = Literal["deterministic", "exact", "sequential"]


# --- configuration ------------------------------------------------------------------------


class DPConfig(BaseModel):
    """Every constant of the DP tie-break and its accountant, with its source.

    Seed 000 gives none of these numbers (digest Z-A7, Z-A8); each default is ours and
    the reason is in the field's description.

    Examples:
        >>> cfg = DPConfig(enabled=True, epsilon=0.5)
        >>> cfg.enabled, cfg.epsilon, cfg.epsilon_total, cfg.group_privacy
        (True, 0.5, 10.0, 'subject')
        >>> DPConfig(epsilon=20.0)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        pydantic_core._pydantic_core.ValidationError: ...
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # no "yes" → True
    enabled: bool = Field(
        False,
        description="Randomise near-ties at the eviction boundary (seed 000 §3.3 invariant 4, "
        "'in DP mode'). Off by default: the store's default is the lead's decision; when off "
        "the deterministic density order is used unchanged and no ε is spent.",
    )
    epsilon: float = Field(
        1.0, gt=0.0, allow_inf_nan=False,
        description="ε per randomised decision (one exponential-mechanism draw). 1.0 "
        "(digest Z-A7): the seed gives no value; 1 is the conventional 'moderate' setting.",
    )
    epsilon_total: float = Field(
        10.0, gt=0.0, allow_inf_nan=False,
        description="Budget per (namespace, subject) ledger under basic composition (Σ ε); "
        "when a decision's charge no longer fits, randomisation pauses (seed 000 §4.3). "
        "10 (digest Z-A7) = ten full-ε decisions per individual.",
    )
    delta: float = Field(
        0.05, gt=0.0, lt=1.0, allow_inf_nan=False,
        description="δ of the reported utility bound q(S) ≥ max q - (2Δq/ε)(ln|R| + ln 1/δ) "
        "(Thm A1). Not a privacy δ: the mechanism is pure ε-DP (digest Z-A7).",
    )
    band_relative: float = Field(
        0.05, ge=0.0, allow_inf_nan=False,
        description="Relative half-width of the tolerance band around the threshold density "
        "d* (the last deterministic pick): |d_i - d*| ≤ max(band_relative·|d*|, "
        "band_absolute). Relative because densities are per token and their scale varies "
        "with weights and λ_priv; 5% is digest Z-A7's suggestion.",
    )
    band_absolute: float = Field(
        1e-9, ge=0.0, allow_inf_nan=False,
        description="Absolute floor of the band half-width, so a threshold density at or "
        "near 0 (Û ≈ λ_priv·s) still groups exact ties (digest Z-A7's 1e-9 floor).",
    )
    lipschitz: float = Field(
        1.0, gt=0.0, allow_inf_nan=False,
        description="L of eq (4), ΔU(i|S) ≤ L·w_i, giving Δq = L·max_i w_i + λ_priv (Lemma "
        "A3). 1.0: the density module's Û lies in [0, 1] and every memory weighs ≥ 1 token.",
    )
    utility_cap: float | None = Field(
        1.0, gt=0.0, allow_inf_nan=False,
        description="Public bound on one memory's Û; Δq = min(L·max w, utility_cap) + "
        "λ_priv. 1.0 because Û ∈ [0, 1] (density module), making Δq = 1 + λ_priv "
        "independent of the data (digest Z-A8). None = Lemma A3 literally, with max w "
        "over the band (data-dependent, looser).",
    )
    lambda_priv: float = Field(
        0.25, ge=0.0, allow_inf_nan=False,
        description="λ_priv of q(S) and of eq (7). Must equal the λ_priv the densities were "
        "computed with (DensityConfig.lambda_priv, default 0.25, digest Z-A2) so that "
        "Û = score·w + λ_priv·s is recovered exactly.",
    )
    group_privacy: GroupPrivacy = Field(
        "subject",
        description="'subject': memories attributed to one individual count together — an "
        "individual with k memories in the band is charged k·ε (group privacy, seed 000 "
        "§4.3/§5.4); unattributed memories are one-memory groups charged ε to '*'. 'event': "
        "every decision charges ε to '*' (event-level DP only).",
    )
    max_exact_band: int = Field(
        12, ge=1, le=20,
        description="Largest band whose eviction sets are enumerated exactly (2^12 = 4096 "
        "subsets, a few ms). Larger bands fall back to sequential single-item draws "
        "(digest Z-A8), each charged ε.",
    )

    @model_validator(mode="after")
    def _step_fits_budget(self) -> DPConfig:
        if self.epsilon > self.epsilon_total:
            raise ValueError(
                f"epsilon ({self.epsilon}) exceeds epsilon_total ({self.epsilon_total}): "
                "no randomised decision could ever be afforded"
            )
        return self


# --- the exponential mechanism ------------------------------------------------------------


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValidationError(f"{name} must be finite and > 0, got {value!r}")


def mechanism_probabilities(scores: Sequence[float], *, epsilon: float,
                            sensitivity: float) -> list[float]:
    """Probabilities ``∝ exp(ε·q/(2Δq))`` of the exponential mechanism.

    The maximum score is subtracted before ``exp`` so nothing overflows; very poor
    options underflow to probability 0, which is their correct limit.

    Raises:
        ValidationError: no score, a non-finite score, or ε, Δq not finite and > 0.

    Examples:
        >>> [round(p, 4) for p in mechanism_probabilities([0.0, 2.0], epsilon=1.0,
        ...                                                sensitivity=1.0)]
        [0.2689, 0.7311]
    """
    _check_positive("epsilon", epsilon)
    _check_positive("sensitivity", sensitivity)
    if not scores:
        raise ValidationError("the exponential mechanism needs at least one option")
    if not all(math.isfinite(q) for q in scores):
        raise ValidationError("every score of the exponential mechanism must be finite")
    top = max(scores)
    scale = epsilon / (2.0 * sensitivity)
    weights = [math.exp(scale * (q - top)) for q in scores]
    total = math.fsum(weights)  # ≥ 1: the best option contributes exp(0)
    return [w / total for w in weights]


def _secure_rng() -> random.Random:
    """The operating system's generator: not seeded, not replayable (DESIGN §3)."""
    return secrets.SystemRandom()


def _sample(probabilities: Sequence[float], rng: random.Random) -> int:
    """Inverse-CDF draw of an index; zero-probability indices are never drawn."""
    cumulative = list(itertools.accumulate(probabilities))
    index = bisect_right(cumulative, rng.random() * cumulative[-1])
    if index >= len(cumulative):  # rounding put the draw on the upper edge
        index = max(i for i, p in enumerate(probabilities) if p > 0)
    return index


def exponential_mechanism(options: Sequence[T], scores: Sequence[float], *, epsilon: float,
                          sensitivity: float, rng: random.Random | None = None
                          ) -> tuple[int, list[float]]:
    """Draw one option with ``Pr[j] ∝ exp(ε·q_j / (2Δq))`` (McSherry–Talwar; seed Thm A1).

    Args:
        options: the range of the mechanism (only its length is used; kept so callers
            pass what they choose among).
        scores: q_j of each option (higher is better).
        epsilon: ε > 0 of this draw.
        sensitivity: Δq > 0, the most one adjacent store can change any q_j.
        rng: a generator; None (production) draws from :class:`secrets.SystemRandom`.

    Returns:
        The chosen index and the probabilities of every option.

    Raises:
        ValidationError: mismatched lengths, no option, non-finite score, bad ε or Δq.

    Examples:
        >>> import random
        >>> index, probs = exponential_mechanism(["keep", "drop"], [0.0, 0.0], epsilon=1.0,
        ...                                      sensitivity=1.0, rng=random.Random(0))
        >>> probs, index in (0, 1)
        ([0.5, 0.5], True)
    """
    if len(options) != len(scores):
        raise ValidationError(f"{len(options)} options but {len(scores)} scores")
    probabilities = mechanism_probabilities(scores, epsilon=epsilon, sensitivity=sensitivity)
    index = _sample(probabilities, rng if rng is not None else _secure_rng())
    return index, probabilities


def delta_q(weights: Sequence[float], config: DPConfig) -> float:
    """Score sensitivity ``Δq = min(L·max w, utility_cap) + λ_priv`` (Lemma A3).

    Changing one memory j changes ``v_j = λ_priv·s_j - Û_j`` by at most ``Û_j + λ_priv``
    and ``Û_j ≤ L·w_j`` (eq 4); ``utility_cap`` is a public bound on Û that makes Δq
    independent of the data.

    Examples:
        >>> delta_q([3, 40], DPConfig()), delta_q([3, 40], DPConfig(utility_cap=None))
        (1.25, 40.25)
    """
    if not weights:
        raise ValidationError("delta_q needs the weights of at least one memory")
    lipschitz_bound = config.lipschitz * max(weights)
    bound = lipschitz_bound if config.utility_cap is None else min(lipschitz_bound,
                                                                     config.utility_cap)
    return bound + config.lambda_priv


def utility_bound(n_options: int, *, epsilon: float, sensitivity: float, delta: float
                  ) -> float:
    """Thm A1: w.p. ≥ 1-δ the chosen q is within this of the best, ``(2Δq/ε)(ln|R| + ln 1/δ)``.

    Examples:
        >>> round(utility_bound(4, epsilon=1.0, sensitivity=1.25, delta=0.05), 3)
        10.955
    """
    _check_positive("epsilon", epsilon)
    _check_positive("sensitivity", sensitivity)
    if n_options < 1 or not 0.0 < delta < 1.0:
        raise ValidationError("utility_bound needs n_options ≥ 1 and 0 < δ < 1")
    return 2.0 * sensitivity / epsilon * (math.log(n_options) + math.log(1.0 / delta))


# --- the marginal band --------------------------------------------------------------------


class ScoredCandidate(Protocol):
    """What the tie-break reads of a candidate (``policies.plan.Candidate`` fits)."""

    @property
    def node_id(self) -> str:
        """The memory's id."""
        ...

    @property
    def score(self) -> float | None:
        """Its eq-(7) density; the tie-break needs one for every candidate."""
        ...


@dataclass(frozen=True, slots=True)
class MarginalBand:
    """Where the deterministic eviction order meets the budget, and its tolerance band.

    All indices refer to the candidate order (lowest density first).

    Attributes:
        deterministic: what the greedy walk evicts — the shortest prefix freeing ``need``.
        fixed: deterministic picks below the band; evicted whatever the tie-break does.
        band: candidates whose density lies within ``half_width`` of ``threshold``.
        threshold: d*, the density of the last deterministic pick.
        half_width: the band's half-width, ``max(band_relative·|d*|, band_absolute)``.
        need_band: tokens the band must free once ``fixed`` is evicted (> 0 when the
            band is not empty).

    Examples:
        >>> b = marginal_band([0.1, 0.5, 0.51, 0.9], [5, 5, 5, 5], need=10, config=DPConfig())
        >>> b.deterministic, b.fixed, b.band, b.need_band
        ((0, 1), (0,), (1, 2), 5.0)
    """

    deterministic: tuple[int, ...]
    fixed: tuple[int, ...]
    band: tuple[int, ...]
    threshold: float
    half_width: float
    need_band: float


def marginal_band(scores: Sequence[float], weights: Sequence[float], need: float,
                  config: DPConfig) -> MarginalBand:
    """Locate the greedy walk's boundary and the near-ties around it (pure).

    ``scores`` must be non-decreasing (the deterministic order). When the candidates
    cannot free ``need`` at all, every one is evicted and the band is empty (there is
    nothing to choose).

    Raises:
        ValidationError: mismatched lengths or scores out of order.
    """
    if len(scores) != len(weights):
        raise ValidationError(f"{len(scores)} scores but {len(weights)} weights")
    if any(b < a for a, b in itertools.pairwise(scores)):
        raise ValidationError("candidates must come in the deterministic order: densities "
                              "non-decreasing")
    freed, cut = 0.0, len(scores)
    for i, weight in enumerate(weights):
        if freed >= need:
            cut = i
            break
        freed += weight
    deterministic = tuple(range(cut))
    if need <= 0 or freed < need:
        return MarginalBand(deterministic, deterministic, (), math.nan, 0.0, 0.0)
    threshold = scores[cut - 1]
    half = max(config.band_relative * abs(threshold), config.band_absolute)
    band = tuple(i for i, d in enumerate(scores) if abs(d - threshold) <= half)
    fixed = tuple(i for i in deterministic if i not in band)
    need_band = need - math.fsum(weights[i] for i in fixed)
    return MarginalBand(deterministic, fixed, band, threshold, half, need_band)


def _minimal_covers(band: Sequence[int], weights: Sequence[float], need: float
                    ) -> list[tuple[int, ...]]:
    """Subsets of ``band`` freeing ``need`` from which no member can be dropped.

    A cover is minimal iff dropping its *lightest* member leaves it short; evicting a
    superset of a minimal cover forgets memories for nothing, so only minimal covers
    are in the mechanism's range. Deterministic order: by size, then lexicographic.
    """
    covers = []
    for size in range(1, len(band) + 1):
        for subset in itertools.combinations(band, size):
            members = [weights[i] for i in subset]
            total = math.fsum(members)
            if total >= need and total - min(members) < need:
                covers.append(subset)
    return covers


def group_sizes(subjects: Sequence[str | None] | None, mode: GroupPrivacy
                ) -> dict[str, int]:
    """Ledger charges per individual for one decision over the band (group privacy).

    In 'subject' mode an individual with k memories in the band is charged k·ε (k
    memories may change at once when that individual's data changes); memories with
    no subject are one-memory groups, charged ε once to :data:`ANYONE`. In 'event'
    mode every decision charges ε to :data:`ANYONE`.

    Examples:
        >>> group_sizes(["alice", None, "alice", "bob"], "subject")
        {'*': 1, 'alice': 2, 'bob': 1}
        >>> group_sizes(["alice", "alice"], "event")
        {'*': 1}
    """
    if mode == "event" or not subjects:
        return {ANYONE: 1}
    if any(s is not None and (not s or s == ANYONE) for s in subjects):
        raise ValidationError(f"a subject must be a non-empty name other than {ANYONE!r}")
    counts = Counter(s for s in subjects if s is not None)
    sizes = {ANYONE: 1} if any(s is None for s in subjects) else {}
    sizes.update(sorted(counts.items()))
    return dict(sorted(sizes.items()))


# --- the accountant -----------------------------------------------------------------------


@dataclass
class _Ledger:
    spent: float = 0.0
    events: int = 0


class PrivacyAccountant:
    """Per (namespace, subject) privacy ledger under basic composition.

    Seed 000 §4.3/§5.4: "a lightweight accountant tracks cumulative privacy loss per
    user or conversation", with group-privacy scaling. Basic composition: the loss of
    a sequence of decisions is the sum of their ε (an individual with k memories in a
    decision is charged k·ε). A ledger is *exhausted* when it cannot absorb one more
    standard decision (``epsilon_step``); the tie-break is then skipped and the
    deterministic density order used ("pause randomized selection when budgets near
    exhaustion", §4.3). A spend that would overrun any ledger is refused as a whole, so
    no ledger ever exceeds ``epsilon_total``. Budgets are never replenished here: a
    privacy budget that refills is no budget (the operator may start a new accountant
    deliberately, which the audit shows).

    Thread-safe; :meth:`state` is JSON-able for the audit and :meth:`from_state` reopens.

    Examples:
        >>> acc = PrivacyAccountant(epsilon_total=2.0, epsilon_step=1.0)
        >>> acc.spend("ns", 1.0, {"*": 1, "alice": 2}) == {"*": 1.0, "alice": 2.0}
        True
        >>> acc.remaining("ns"), acc.exhausted("ns"), acc.exhausted("ns", "alice")
        (1.0, False, True)
        >>> PrivacyAccountant.from_state(acc.state()).state() == acc.state()
        True
    """

    def __init__(self, epsilon_total: float = 10.0, epsilon_step: float = 1.0) -> None:
        _check_positive("epsilon_total", epsilon_total)
        _check_positive("epsilon_step", epsilon_step)
        self.epsilon_total = float(epsilon_total)
        self.epsilon_step = float(epsilon_step)
        self._ledgers: dict[tuple[str, str], _Ledger] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: DPConfig) -> PrivacyAccountant:
        """An empty accountant with the config's budget and per-decision ε."""
        return cls(config.epsilon_total, config.epsilon)

    def spent(self, namespace: str, subject: str = ANYONE) -> float:
        """ε spent so far on this individual in this namespace."""
        with self._lock:
            ledger = self._ledgers.get((namespace, subject))
            return ledger.spent if ledger else 0.0

    def remaining(self, namespace: str, subject: str = ANYONE) -> float:
        """ε left on this ledger (never negative)."""
        return max(0.0, self.epsilon_total - self.spent(namespace, subject))

    def exhausted(self, namespace: str, subject: str = ANYONE) -> bool:
        """True when one more ``epsilon_step`` decision no longer fits."""
        return self.remaining(namespace, subject) + _SLACK < self.epsilon_step

    def headroom(self, namespace: str, groups: Mapping[str, int]) -> float:
        """Largest ε one decision may spend: ``min_x remaining(x) / k_x``."""
        self._check_groups(groups)
        return min(self.remaining(namespace, s) / k for s, k in groups.items())

    def spend(self, namespace: str, epsilon: float, groups: Mapping[str, int] | None = None
              ) -> dict[str, float]:
        """Charge one decision of ``epsilon`` to each individual ``x`` as ``k_x·ε``.

        Args:
            namespace: the user or conversation scope.
            epsilon: ε of the decision (> 0).
            groups: subject → group size k (default ``{"*": 1}``, event level).

        Returns:
            The charge of each subject.

        Raises:
            ValidationError: bad ε or groups, or a charge would overrun a ledger
                (nothing is charged then).
        """
        _check_positive("epsilon", epsilon)
        groups = {ANYONE: 1} if groups is None else dict(groups)
        self._check_groups(groups)
        charges = {s: epsilon * k for s, k in sorted(groups.items())}
        with self._lock:
            for subject, charge in charges.items():
                ledger = self._ledgers.get((namespace, subject), _Ledger())
                if ledger.spent + charge > self.epsilon_total + _SLACK:
                    raise ValidationError(
                        f"privacy budget of {subject!r} in {namespace!r} would be exceeded: "
                        f"{ledger.spent:g} + {charge:g} > {self.epsilon_total:g}"
                    )
            for subject, charge in charges.items():
                ledger = self._ledgers.setdefault((namespace, subject), _Ledger())
                ledger.spent += charge
                ledger.events += 1
        return charges

    def totals(self, namespace: str) -> dict[str, float]:
        """ε spent per subject in one namespace (the audit's running totals)."""
        with self._lock:
            return {s: v.spent for (ns, s), v in sorted(self._ledgers.items()) if ns == namespace}

    def state(self) -> dict[str, Any]:
        """A JSON-able snapshot (for the audit event and for persistence)."""
        with self._lock:
            ledger = [{"namespace": ns, "subject": s, "spent": v.spent, "events": v.events}
                      for (ns, s), v in sorted(self._ledgers.items())]
        return {"version": _STATE_VERSION, "composition": "basic",
                "epsilon_total": self.epsilon_total, "epsilon_step": self.epsilon_step,
                "ledger": ledger}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> PrivacyAccountant:
        """Rebuild an accountant from :meth:`state` (on reopen).

        Raises:
            ValidationError: an unknown version or a malformed ledger.
        """
        try:
            if state["version"] != _STATE_VERSION or state["composition"] != "basic":
                raise ValidationError(f"unsupported accountant state version "
                                      f"{state['version']!r} / {state['composition']!r}")
            acc = cls(float(state["epsilon_total"]), float(state["epsilon_step"]))
            for row in state["ledger"]:
                key = (str(row["namespace"]), str(row["subject"]))
                spent, events = float(row["spent"]), int(row["events"])
                if (key in acc._ledgers or not math.isfinite(spent) or spent < 0
                        or spent > acc.epsilon_total + _SLACK or events < 0):
                    raise ValidationError(f"malformed accountant ledger row {row!r}")
                acc._ledgers[key] = _Ledger(spent, events)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError(f"malformed accountant state: {exc!r}") from exc
        return acc

    @staticmethod
    def _check_groups(groups: Mapping[str, int]) -> None:
        if not groups or any(not s or not isinstance(k, int) or k < 1
                             for s, k in groups.items()):
            raise ValidationError(f"groups must map subjects to sizes ≥ 1, got {groups!r}")


# --- the tie-break ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TieBreakResult:
    """The boundary decision: what to evict, and the evidence for the audit.

    Attributes:
        evict: indices (candidate order) to evict: ``fixed`` plus ``chosen``.
        evict_ids: their node ids.
        band_ids: node ids of the tolerance band (the only ones the tie-break moves).
        chosen_ids: the band members evicted.
        mode: 'deterministic' (greedy order kept), 'exact' (one draw over all minimal
            eviction sets of the band) or 'sequential' (single-item draws, large band).
        reason: why the mode (disabled, no near-tie, one feasible set, budget paused...).
        threshold: d*, density of the last deterministic pick (NaN without boundary).
        half_width: the band's half-width.
        probability: probability the mechanism gave the realised choice (product over
            draws in sequential mode; 1.0 when deterministic).
        probabilities: exact mode: of every option in ``options``; sequential mode:
            of each draw's pick, in order.
        options: exact mode only: every minimal eviction set (candidate indices, all in
            the band), in the order of ``probabilities``.
        epsilon_spent: ε of this decision (0 when deterministic).
        delta_q: Δq used (0 when no band).
        draws: randomised draws made.
        utility_gap: Thm A1 bound on max q - q(chosen) at confidence 1-δ (exact mode).
        charges: ε charged per subject to the accountant (empty when none).
        paused: randomisation was skipped because a privacy budget was exhausted.

    Examples:
        >>> from mars_core.policies.base import Candidate
        >>> r = near_threshold_tiebreak([Candidate("a", 0.1)], [4], [0.0], need=3,
        ...                             config=DPConfig())
        >>> r.mode, r.evict_ids, r.epsilon_spent
        ('deterministic', ('a',), 0.0)
    """

    evict: tuple[int, ...]
    evict_ids: tuple[str, ...]
    band_ids: tuple[str, ...]
    chosen_ids: tuple[str, ...]
    mode: Mode
    reason: str
    threshold: float
    half_width: float
    probability: float = 1.0
    probabilities: tuple[float, ...] = ()
    options: tuple[tuple[int, ...], ...] = ()
    epsilon_spent: float = 0.0
    delta_q: float = 0.0
    draws: int = 0
    utility_gap: float | None = None
    charges: Mapping[str, float] = field(default_factory=dict)
    paused: bool = False

    def audit(self) -> dict[str, Any]:
        """JSON-able fields for the eviction's audit event (no memory text).

        Examples:
            >>> from mars_core.policies.base import Candidate
            >>> r = near_threshold_tiebreak([Candidate("a", 0.1)], [4], [0.0], 3, DPConfig())
            >>> record = r.audit()
            >>> record["mode"], record["chosen"], record["epsilon_spent"], record["paused"]
            ('deterministic', ['a'], 0.0, False)
        """
        return {
            "mode": self.mode, "reason": self.reason,
            "threshold": None if math.isnan(self.threshold) else self.threshold,
            "half_width": self.half_width, "band": list(self.band_ids),
            "chosen": list(self.chosen_ids), "chosen_probability": self.probability,
            "n_options": len(self.options), "draws": self.draws,
            "epsilon_spent": self.epsilon_spent, "delta_q": self.delta_q,
            "utility_gap": self.utility_gap, "charges": dict(self.charges),
            "paused": self.paused,
        }


def _validated_scores(candidates: Sequence[ScoredCandidate], weights: Sequence[float],
                      sensitivities: Sequence[float], need: float, *,
                      utilities: Sequence[float] | None,
                      subjects: Sequence[str | None] | None) -> list[float]:
    n = len(candidates)
    lengths = [len(weights), len(sensitivities)]
    lengths += [len(x) for x in (utilities, subjects) if x is not None]
    if any(length != n for length in lengths):
        raise ValidationError("candidates, weights, sensitivities (and utilities, subjects) "
                              "must have the same length")
    if not (isinstance(need, int | float) and math.isfinite(need)):
        raise ValidationError(f"need must be a finite number of tokens, got {need!r}")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValidationError("every weight must be finite and > 0")
    if not all(0.0 <= s <= 1.0 for s in sensitivities):
        raise ValidationError("every sensitivity must lie in [0, 1]")
    if utilities is not None and not all(math.isfinite(u) for u in utilities):
        raise ValidationError("every utility must be finite")
    scores = [c.score for c in candidates]
    if not all(s is not None and math.isfinite(s) for s in scores):
        raise ValidationError("the DP tie-break needs a finite density score on every "
                              "candidate")
    return [float(s) for s in scores if s is not None]


def near_threshold_tiebreak(
    candidates: Sequence[ScoredCandidate], weights: Sequence[float],
    sensitivities: Sequence[float], need: float, config: DPConfig, *,
    rng: random.Random | None = None, utilities: Sequence[float] | None = None,
    max_epsilon: float | None = None, accountant: PrivacyAccountant | None = None,
    namespace: str = "default", subjects: Sequence[str | None] | None = None,
) -> TieBreakResult:
    """Re-choose the evictions at the boundary with the exponential mechanism.

    Steps (all indices in the candidate order, lowest density first):

    1. :func:`marginal_band`: the greedy prefix, its last density d*, the band
       ``|d_i - d*| ≤ max(band_relative·|d*|, band_absolute)``; picks below the band
       are fixed, candidates above it are kept.
    2. The range R: every *minimal* subset of the band freeing the band's share of
       ``need`` (no member can be dropped). Each E ∈ R is scored
       ``q(E) = Σ_{i∈E} (λ_priv·s_i - Û_i)`` — the seed's q of the *kept* set up to a
       constant (module docstring), so higher sensitivity and lower utility raise the
       chance of eviction.
    3. One draw ``Pr[E] ∝ exp(ε·q(E)/(2Δq))`` with ``Δq`` from :func:`delta_q`; ε-DP.
       A band larger than ``max_exact_band`` instead takes single-item draws
       ``Pr[i] ∝ exp(ε·v_i/(2Δq))`` until the share is freed. That is *not* the set
       mechanism's distribution (it is a Plackett–Luce ordering, like the greedy walk
       with noise); by basic composition it costs ε per draw, and draws stop (the rest
       is greedy) once ``max_epsilon`` or the accountant's headroom would be exceeded.

    Nothing is randomised (and no ε spent) when DP is disabled, the band has fewer
    than two memories, it admits one minimal set only, or the budget cannot afford ε;
    the greedy prefix is returned then.

    Args:
        candidates: eligible candidates in the deterministic order; ``score`` must be
            the eq-(7) density computed with ``config.lambda_priv``.
        weights: w_i in tokens.
        sensitivities: s_i in [0, 1].
        need: tokens to free.
        config: the DP configuration.
        rng: None in production (:class:`secrets.SystemRandom`); a seeded generator in
            tests only.
        utilities: Û_i, when known; default ``score·w + λ_priv·s``.
        max_epsilon: cap on the ε of this decision.
        accountant: when given, its headroom for ``namespace`` caps ε and the spend is
            charged to it (group sizes from ``subjects`` and ``config.group_privacy``).
        namespace: the accountant's scope.
        subjects: per candidate, the individual it pertains to (None = unattributed).

    Returns:
        The decision and its audit evidence.

    Raises:
        ValidationError: inconsistent inputs or densities out of order.
    """
    scores = _validated_scores(candidates, weights, sensitivities, need, utilities=utilities,
                               subjects=subjects)
    ids = [c.node_id for c in candidates]
    band = marginal_band(scores, weights, need, config)
    lam = config.lambda_priv
    util = list(utilities) if utilities is not None else [
        d * w + lam * s for d, w, s in zip(scores, weights, sensitivities, strict=True)]
    values = [lam * s - u for s, u in zip(sensitivities, util, strict=True)]
    dq = delta_q([weights[i] for i in band.band], config) if band.band else 0.0

    def result(chosen: Sequence[int], mode: Mode, reason: str, **extra: Any) -> TieBreakResult:
        evict = tuple(sorted({*band.fixed, *chosen}))
        return TieBreakResult(
            evict, tuple(ids[i] for i in evict), tuple(ids[i] for i in band.band),
            tuple(ids[i] for i in sorted(chosen)), mode, reason, band.threshold,
            band.half_width, delta_q=dq, **extra)

    greedy_in_band = [i for i in band.deterministic if i in band.band]
    if not config.enabled:
        return result(greedy_in_band, "deterministic", "DP tie-break disabled")
    if len(band.band) < 2:
        return result(greedy_in_band, "deterministic", "no near-tie at the boundary")
    covers = (_minimal_covers(band.band, weights, band.need_band)
              if len(band.band) <= config.max_exact_band else None)
    if covers is not None and len(covers) < 2:
        return result(greedy_in_band, "deterministic", "a single feasible set in the band")

    groups = group_sizes([subjects[i] for i in band.band] if subjects else None,
                         config.group_privacy)
    cap = math.inf if max_epsilon is None else max_epsilon
    if accountant is not None:
        cap = min(cap, accountant.headroom(namespace, groups))
    if cap + _SLACK < config.epsilon:
        return result(greedy_in_band, "deterministic",
                      "privacy budget exhausted: randomised selection paused", paused=True)
    generator = rng if rng is not None else _secure_rng()

    if covers is not None:
        q = [math.fsum(values[i] for i in cover) for cover in covers]
        k, probs = exponential_mechanism(covers, q, epsilon=config.epsilon,
                                         sensitivity=dq, rng=generator)
        spent = config.epsilon
        charges = accountant.spend(namespace, spent, groups) if accountant else {}
        return result(covers[k], "exact",
                      f"exponential mechanism over {len(covers)} minimal eviction sets",
                      probability=probs[k], probabilities=tuple(probs),
                      options=tuple(covers), epsilon_spent=spent, draws=1,
                      utility_gap=utility_bound(len(covers), epsilon=config.epsilon,
                                                sensitivity=dq, delta=config.delta),
                      charges=charges)

    remaining, chosen, picked_p = list(band.band), list[int](), list[float]()
    freed = 0.0
    while freed < band.need_band:
        if len(remaining) > 1 and (len(picked_p) + 1) * config.epsilon <= cap + _SLACK:
            j, probs = exponential_mechanism(remaining, [values[i] for i in remaining],
                                             epsilon=config.epsilon, sensitivity=dq,
                                             rng=generator)
            picked_p.append(probs[j])
        else:
            j = 0  # greedy: the lowest density left
        pick = remaining.pop(j)
        chosen.append(pick)
        freed += weights[pick]
    spent = len(picked_p) * config.epsilon
    charges = accountant.spend(namespace, spent, groups) if accountant and spent else {}
    return result(chosen, "sequential" if picked_p else "deterministic",
                  f"{len(picked_p)} single-item draws over a band of {len(band.band)}",
                  probability=math.prod(picked_p), probabilities=tuple(picked_p),
                  epsilon_spent=spent, draws=len(picked_p), charges=charges)
