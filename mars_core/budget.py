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
from typing import Protocol, runtime_checkable

from mars_core.errors import ConfigError, ExtraNotInstalledError
from mars_core.model import MemoryType

__all__ = [
    "MAX_BUDGET",
    "SHARES_TOLERANCE",
    "ApproxTokenCounter",
    "BudgetLedger",
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
