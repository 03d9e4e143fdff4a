"""Clocks: wall-clock time is injectable so decay, TTL and audit timestamps are testable.

Decay in MaRS runs on the interaction count (Δn, seed 004 §6); only rules about
wall-clock time (TTL, deadlines, audit timestamps) read a :class:`Clock`.

Examples:
    >>> from datetime import timedelta
    >>> c = FakeClock()
    >>> t0 = c.now(); c.advance(timedelta(hours=1)); (c.now() - t0).total_seconds()
    3600.0
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Source of the current time (aware, UTC)."""

    def now(self) -> datetime:
        """The current time."""
        ...


class SystemClock:
    """The real clock (UTC).

    Examples:
        >>> SystemClock().now().tzinfo is not None
        True
    """

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)


class FakeClock:
    """A manual clock for tests and deterministic replays.

    Args:
        start: the initial time (default 2026-01-01T00:00:00Z).
        tick: advanced automatically after every ``now()`` call (default zero).

    Examples:
        >>> FakeClock(tick=timedelta(seconds=1)).now().isoformat()
        '2026-01-01T00:00:00+00:00'
    """

    def __init__(
        self,
        start: datetime | None = None,
        tick: timedelta = timedelta(0),
    ) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._tick = tick
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The fake current time (then advanced by ``tick``)."""
        with self._lock:
            t = self._now
            self._now = t + self._tick
            return t

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward."""
        with self._lock:
            self._now += delta

    def set(self, when: datetime) -> None:
        """Jump to a given time."""
        with self._lock:
            self._now = when
