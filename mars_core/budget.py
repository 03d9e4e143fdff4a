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

import re
import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from mars_core.errors import ConfigError, ExtraNotInstalledError
from mars_core.model import MemoryType

__all__ = [
    "ApproxTokenCounter",
    "BudgetLedger",
    "TiktokenCounter",
    "TokenCounter",
    "WhitespaceTokenCounter",
    "make_counter",
    "normalise_shares",
]

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


def normalise_shares(shares: Mapping[MemoryType, float] | None) -> dict[MemoryType, float]:
    """Soft per-type shares that sum to one (equal shares when ``shares`` is None).

    Raises:
        ConfigError: a negative share or an all-zero mapping.
    """
    if shares is None:
        return {t: 1.0 / len(MemoryType) for t in MemoryType}
    raw = {t: float(shares.get(t, 0.0)) for t in MemoryType}
    if any(v < 0 for v in raw.values()) or sum(raw.values()) <= 0:
        raise ConfigError("per-type shares must be non-negative with a positive sum")
    total = sum(raw.values())
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
