"""Token counting and budgets: the weight w_i of a node, the global budget B per namespace,
and soft per-type shares B^(epi) + B^(sem) + B^(soc) + B^(task) = B (seed 000 §3.2.7).

The default counter, :class:`ApproxTokenCounter`, is deterministic and needs no files:
it approximates a BPE tokenizer (a word of up to 8 characters is one token, longer
words one more token per further 8 characters, each punctuation mark one token, each
CJK character one token). It is recorded in the manifest as ``approx-v1``; a store
opened later must use the same counter.

Examples:
    >>> ApproxTokenCounter().count("Ana moved to Lisbon, didn't she?")
    10
    >>> WhitespaceTokenCounter().count("Ana moved to Lisbon")
    4
"""

from __future__ import annotations

import math
import numbers
import re
import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mars_core.errors import ConfigError, ExtraNotInstalledError, ValidationError
from mars_core.model import MemoryType

__all__ = [
    "MAX_BUDGET",
    "SHARES_TOLERANCE",
    "ApproxTokenCounter",
    "BudgetLedger",
    "ElasticBudget",
    "ElasticState",
    "TiktokenCounter",
    "TokenCounter",
    "WhitespaceTokenCounter",
    "check_budget",
    "check_shares",
    "make_counter",
    "normalise_shares",
]

SHARES_TOLERANCE = 1e-6
"""How far from 1 the sum of configured type shares may be (float rounding only)."""

_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+|[^\w\s]|_",
    re.UNICODE,
)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens; deterministic for a given ``name``."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (0 only for text with no token)."""
        ...


class ApproxTokenCounter:
    """Deterministic approximation of a BPE token count (``approx-v1``).

    Examples:
        >>> ApproxTokenCounter().count("internationalisation")
        3
    """

    name = "approx-v1"

    def count(self, text: str) -> int:
        """Count tokens as described in the module docstring."""
        total = 0
        for tok in _TOKEN.findall(text):
            total += 1 + (len(tok) - 1) // 8 if tok.isalnum() else 1
        return total


class WhitespaceTokenCounter:
    """Whitespace-separated words (the unit of the LoCoMo reference numbers).

    Examples:
        >>> WhitespaceTokenCounter().count("a  b\\nc")
        3
    """

    name = "whitespace"

    def count(self, text: str) -> int:
        """Number of whitespace-separated words."""
        return len(text.split())


class TiktokenCounter:
    """Exact counts with ``tiktoken`` (only when its BPE files are available offline).

    Args:
        encoding: a tiktoken encoding name, e.g. ``cl100k_base``.

    Raises:
        ExtraNotInstalledError: tiktoken is not installed.
        ConfigError: the encoding's files cannot be loaded (no network here).
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            import tiktoken  # type: ignore[import-not-found, unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ExtraNotInstalledError("tiktoken", "tiktoken") from exc
        try:
            self._enc = tiktoken.get_encoding(encoding)
        except Exception as exc:  # tiktoken raises several kinds on a failed download
            raise ConfigError(
                f"tiktoken could not load {encoding!r} (it downloads BPE files on first use); "
                "use the default approximate counter, or pre-seed TIKTOKEN_CACHE_DIR"
            ) from exc
        self.name = f"tiktoken-{encoding}"

    def count(self, text: str) -> int:
        """Exact token count."""
        return len(self._enc.encode(text, disallowed_special=()))


def make_counter(name: str) -> TokenCounter:
    """Build a counter from its manifest name.

    Raises:
        ConfigError: unknown name.
    """
    if name == ApproxTokenCounter.name:
        return ApproxTokenCounter()
    if name == WhitespaceTokenCounter.name:
        return WhitespaceTokenCounter()
    if name.startswith("tiktoken-"):
        return TiktokenCounter(name.removeprefix("tiktoken-"))
    raise ConfigError(
        f"unknown token counter {name!r}; use 'approx-v1', 'whitespace' or 'tiktoken-<encoding>'")


MAX_BUDGET = 2**53 - 1
"""The largest token budget (exact as a float, which shares and scores multiply it by)."""


def check_budget(value: object, what: str = "budget") -> int:
    """A token budget as configured: a whole number of tokens above zero.

    Integers of any integral type (``numpy.int64`` too) are taken as they are; a bool, a
    float (even ``100.0``), a string (even ``"100"``), zero or a negative number is
    refused, never converted.

    Args:
        value: the budget given.
        what: its name in the message (``budget``, ``namespace_budgets['a']``).

    Returns:
        The budget as an ``int``.

    Raises:
        ConfigError: anything but an integer > 0; the message says what to pass.

    Examples:
        >>> check_budget(8000)
        8000
        >>> check_budget(True)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ConfigError: budget must be a whole number of tokens ...
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(
            f"{what} must be a whole number of tokens (an int > 0, e.g. {what}=8000), "
            f"not a {type(value).__name__}; pass the number itself, not a string or a bool")
    if value <= 0:
        raise ConfigError(
            f"{what} must be at least 1 token, not {int(value)}; a namespace cannot hold "
            "memories in a budget of 0 or less (to stop storing, erase or forget instead)")
    if int(value) > MAX_BUDGET:
        raise ConfigError(f"{what} must be at most {MAX_BUDGET:,} tokens (2**53 - 1: exact "
                          "in every number the budget meets, shares and scores included)")
    return int(value)


def check_shares(shares: object) -> dict[MemoryType, float]:
    """Per-type budget shares as configured: fractions of ``B`` that add up to ``B``.

    Seed 000 §3.2.7 splits the budget as ``B^(epi) + B^(sem) + B^(soc) + B^(task) = B``,
    so shares are given as fractions of the budget: each a finite number in [0, 1] (not a
    bool or a string), keyed by a memory type (``MemoryType`` or its name), summing to 1
    (within ``SHARES_TOLERANCE``). A type left out has share 0 (the dual update's floor
    still gives it a minimum; see :mod:`mars_core.shares`).

    Returns:
        The shares given, keyed by ``MemoryType`` (types left out are not added).

    Raises:
        ConfigError: not a mapping, an unknown type name, a share outside [0, 1] or not a
            number, or a sum other than 1.

    Examples:
        >>> check_shares({"episodic": 0.5, "semantic": 0.5})[MemoryType.SEMANTIC]
        0.5
        >>> check_shares({"episodic": 0.9, "semantic": 0.9})  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ConfigError: type shares must add up to 1 ...
    """
    names = [t.value for t in MemoryType]
    if not isinstance(shares, Mapping):
        raise ConfigError(f"type shares must be a mapping of memory type to a fraction of the "
                          f"budget, e.g. {{'episodic': 0.5, 'semantic': 0.5}}; types: {names}")
    out: dict[MemoryType, float] = {}
    for key, value in shares.items():
        try:
            mtype = MemoryType(key)
        except ValueError:
            raise ConfigError(f"unknown memory type {key!r} in type shares; use {names}") from None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(float(value)) or not 0.0 <= float(value) <= 1.0:
            raise ConfigError(f"the share of {mtype.value!r} must be a number in [0, 1] (a "
                              f"fraction of the budget), not {value!r}")
        out[mtype] = float(value)
    total = sum(out.values())
    if abs(total - 1.0) > SHARES_TOLERANCE:
        raise ConfigError(
            f"type shares must add up to 1 (B_epi + B_sem + B_soc + B_task = B, seed 000 "
            f"§3.2.7), not {total:g}; give each type its fraction of the budget, e.g. "
            "{'episodic': 0.4, 'semantic': 0.3, 'social': 0.15, 'task': 0.15}")
    return out


def normalise_shares(shares: Mapping[MemoryType, float] | None) -> dict[MemoryType, float]:
    """All four types' shares, summing to exactly one (equal shares when ``shares`` is None).

    Raises:
        ConfigError: shares that :func:`check_shares` refuses.

    Examples:
        >>> normalise_shares({"semantic": 1.0})[MemoryType.TASK]
        0.0
    """
    if shares is None:
        return {t: 1.0 / len(MemoryType) for t in MemoryType}
    given = check_shares(shares)
    raw = {t: given.get(t, 0.0) for t in MemoryType}
    total = sum(raw.values())  # within SHARES_TOLERANCE of 1: divide out the rounding
    return {t: v / total for t, v in raw.items()}


class BudgetLedger:
    """Active token usage per namespace and type (a view, rebuilt on open).

    Examples:
        >>> led = BudgetLedger()
        >>> led.add("ns", MemoryType.EPISODIC, 10); led.used("ns")
        10
    """

    def __init__(self) -> None:
        self._used: dict[str, dict[MemoryType, int]] = defaultdict(lambda: defaultdict(int))
        self._lock = threading.Lock()

    def add(self, namespace: str, mtype: MemoryType, weight: int) -> None:
        """Account an active node."""
        with self._lock:
            self._used[namespace][mtype] += weight

    def remove(self, namespace: str, mtype: MemoryType, weight: int) -> None:
        """Forget an active node's weight."""
        with self._lock:
            self._used[namespace][mtype] -= weight

    def used(self, namespace: str, mtype: MemoryType | None = None) -> int:
        """Tokens used by active nodes (of one type, or all)."""
        per = self._used.get(namespace)
        if per is None:
            return 0
        return per.get(mtype, 0) if mtype is not None else sum(per.values())

    def by_type(self, namespace: str) -> dict[MemoryType, int]:
        """Usage of each type in a namespace."""
        per = self._used.get(namespace, {})
        return {t: per.get(t, 0) for t in MemoryType}

    def namespaces(self) -> list[str]:
        """Namespaces with any accounted usage."""
        return sorted(ns for ns, per in self._used.items() if any(per.values()))


# --- elastic budgeting (seed 000 §6.9.2) ------------------------------------------------------


class ElasticBudget(BaseModel):
    """Elastic budgeting, seed 000 §6.9.2: "operate at a cost-efficient baseline B0 and
    temporarily raise capacity when online telemetry detects stress (rising trigger rate,
    falling hit rate), contracting when load normalizes".

    B0 is the namespace's configured budget. Two observable rates are kept per namespace,
    each an exponential moving average over about ``window`` events: the **trigger rate**
    (the share of writes whose memory made the policy free room) and the **active hit rate**
    (of the hits each counted retrieval returned, the share served by active memories
    rather than the archive tier: the active set missed what was asked when it falls). At a
    write, when the namespace is **stressed** — trigger rate ≥ ``trigger_rate`` *and* active
    hit rate < ``hit_rate_low`` — the budget rises by ``step`` × B0, up to ``max_factor`` ×
    B0; when it is **calm** — active hit rate ≥ ``hit_rate_high`` or trigger rate <
    ``trigger_rate`` / 2 — it falls back by the same step toward B0, and the policy archives
    what no longer fits, as after any write. At most one change per ``cooldown`` writes.
    Both conditions of stress are needed: a full store triggers on every write, which says
    nothing about whether forgetting hurts; the archive answering retrievals does. Without
    retrievals (no hit rate) the budget stays at B0. Every change is a ``config`` audit
    event with the rates that caused it; the state is saved with the namespace, so a
    reopened store continues where it stopped (same inputs, same budgets).

    Examples:
        >>> cfg = ElasticBudget(max_factor=1.5)
        >>> cfg.limit(1000), cfg.step_tokens(1000)
        (1500, 100)
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    max_factor: float = Field(
        1.5, gt=1.0, le=10.0, allow_inf_nan=False,
        description="The most the budget may reach, as a multiple of B0 (ours: §6.9.2 names "
        "no bound; half again as much keeps spend predictable).")
    step: float = Field(
        0.1, gt=0.0, le=1.0, allow_inf_nan=False,
        description="How far one change moves the budget, as a share of B0 (ours).")
    window: int = Field(
        20, ge=2, le=10_000,
        description="Span of the moving averages in events (α = 2/(window+1)); writes for "
        "the trigger rate, counted retrievals for the hit rate (ours).")
    trigger_rate: float = Field(
        0.5, gt=0.0, le=1.0, allow_inf_nan=False,
        description="Stress needs at least this share of writes to trigger the policy; "
        "under half of it is calm (ours).")
    hit_rate_low: float = Field(
        0.6, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Stress needs the active hit rate below this (ours).")
    hit_rate_high: float = Field(
        0.8, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Calm when the active hit rate reaches this (ours; above hit_rate_low, "
        "so the budget does not oscillate).")
    cooldown: int = Field(
        10, ge=0, le=1_000_000,
        description="Writes between two changes of the budget (hysteresis; ours).")

    @model_validator(mode="after")
    def _band(self) -> ElasticBudget:
        if self.hit_rate_high <= self.hit_rate_low:
            raise ValueError("hit_rate_high must be above hit_rate_low")
        return self

    def limit(self, base: int) -> int:
        """The largest budget of a namespace whose configured budget is ``base``."""
        return max(base, math.floor(base * self.max_factor))

    def step_tokens(self, base: int) -> int:
        """Tokens one change adds or removes."""
        return max(1, round(base * self.step))

    def alpha(self) -> float:
        """The moving averages' weight of a new event."""
        return 2.0 / (self.window + 1)


@dataclass(frozen=True, slots=True)
class ElasticState:
    """A namespace's elastic budget and telemetry (saved with the namespace, numbers only).

    Examples:
        >>> cfg = ElasticBudget(window=3, cooldown=0)
        >>> s = ElasticState(budget=100)
        >>> for _ in range(4):
        ...     s = s.observe_write(cfg, triggered=True).observe_hits(cfg, active=1, total=4)
        >>> s, why = s.decide(cfg, base=100)
        >>> s.budget, why.startswith("raised from 100 to 110 tokens")
        (110, True)
    """

    budget: int
    triggers: float = 0.0
    hits: float | None = None
    since: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form saved with the namespace."""
        return {"budget": self.budget, "triggers": self.triggers, "hits": self.hits,
                "since": self.since}

    @classmethod
    def load(cls, raw: object, config: ElasticBudget, base: int) -> ElasticState:
        """The saved state (None: a fresh one at B0), its budget kept within [B0, max].

        Raises:
            ValidationError: a malformed saved state.
        """
        if raw is None:
            return cls(base)
        ok = (isinstance(raw, Mapping) and set(raw) == {"budget", "triggers", "hits", "since"}
              and isinstance(raw["budget"], int) and isinstance(raw["since"], int)
              and isinstance(raw["triggers"], int | float)
              and (raw["hits"] is None or isinstance(raw["hits"], int | float)))
        if not ok:
            raise ValidationError("a namespace's saved elastic budget is malformed")
        assert isinstance(raw, Mapping)
        budget = min(max(int(raw["budget"]), base), config.limit(base))
        hits = None if raw["hits"] is None else float(raw["hits"])
        return cls(budget, float(raw["triggers"]), hits, int(raw["since"]))

    def observe_write(self, config: ElasticBudget, *, triggered: bool) -> ElasticState:
        """One write: did it make the policy free room?"""
        a = config.alpha()
        return replace(self, triggers=(1 - a) * self.triggers + a * float(triggered),
                       since=self.since + 1)

    def observe_hits(self, config: ElasticBudget, *, active: int, total: int) -> ElasticState:
        """One counted retrieval: ``active`` of its ``total`` hits were active memories."""
        if total <= 0:
            return self
        rate = active / total
        a = config.alpha()
        return replace(self, hits=rate if self.hits is None else (1 - a) * self.hits + a * rate)

    def decide(self, config: ElasticBudget, base: int) -> tuple[ElasticState, str | None]:
        """Raise, lower or keep the budget; the reason when it changed (for the audit)."""
        if self.since < config.cooldown:
            return self, None
        rates = (f"trigger rate {self.triggers:.2f}, active hit rate "
                 f"{'–' if self.hits is None else f'{self.hits:.2f}'}")
        stressed = (self.triggers >= config.trigger_rate and self.hits is not None
                    and self.hits < config.hit_rate_low)
        calm = (self.hits is not None and self.hits >= config.hit_rate_high) \
            or self.triggers < config.trigger_rate / 2
        top, step = config.limit(base), config.step_tokens(base)
        if stressed and self.budget < top:
            new = min(top, self.budget + step)
            return replace(self, budget=new, since=0), (
                f"raised from {self.budget} to {new} tokens (elastic, at most {top}): "
                f"stress — {rates}; the policy fired on at least {config.trigger_rate:g} of "
                f"the writes and the archive answered more than {1 - config.hit_rate_low:g} "
                "of the retrieved hits")
        if calm and not stressed and self.budget > base:
            new = max(base, self.budget - step)
            return replace(self, budget=new, since=0), (
                f"lowered from {self.budget} to {new} tokens (elastic, back toward the "
                f"baseline {base}): load normalised — {rates}")
        return self, None
