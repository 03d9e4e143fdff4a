"""LangGraph's TTL (minutes) on MaRS memories: valid ttls, expiries, the TTL config and the
sweeper's interval."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import cast

from langgraph.store.base import (
    TTLConfig,
)

from mars_core.errors import (
    ConfigError,
    ValidationError,
)
from mars_core.model import MemoryNode

__all__: list[str] = []

_MAX_TTL = 1e9  # minutes (about 1,900 years): any expiry stays a valid datetime
_TTL_KEYS = frozenset({"default_ttl", "refresh_on_read", "sweep_interval_minutes",
                       "omit_expired"})
_SWEEP_MINUTES = 5.0  # the sweeper's interval when neither the call nor the config gives one


def _is_ttl(ttl: object) -> bool:
    """A valid ttl: a number of minutes in [0, 1e9] (not a bool, not NaN or infinite)."""
    return isinstance(ttl, int | float) and not isinstance(ttl, bool) and 0 <= ttl <= _MAX_TTL


def _expiry(now: datetime, ttl: float | None) -> datetime | None:
    """When an item put or read at ``now`` with ``ttl`` minutes expires (None: never)."""
    return None if ttl is None else now + timedelta(minutes=ttl)


def _expired(node: MemoryNode, now: datetime) -> bool:
    """Past its expiry (strictly, as ``MemoryStore.maintain`` and LangGraph's sweeps)."""
    return node.expires_at is not None and now > node.expires_at


def _ttl_config(ttl: object) -> TTLConfig | None:
    """A checked copy of LangGraph's ``TTLConfig``."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise ConfigError("ttl must be a langgraph TTLConfig (a mapping)")
    unknown = set(ttl) - _TTL_KEYS
    if unknown:
        raise ConfigError(f"unknown ttl keys {sorted(unknown)}; use {sorted(_TTL_KEYS)}")
    default = ttl.get("default_ttl")
    if default is not None and not _is_ttl(default):
        raise ConfigError(f"default_ttl must be None or a number of minutes in "
                          f"[0, {_MAX_TTL:.0e}]")
    if not isinstance(ttl.get("refresh_on_read", True), bool):
        raise ConfigError("refresh_on_read must be a bool")
    if ttl.get("omit_expired", True) is not True:
        raise ConfigError("MarsStore always omits expired items: omit_expired may only be True")
    interval = ttl.get("sweep_interval_minutes")
    if interval is not None:
        try:
            _interval(interval)
        except ValidationError as exc:
            raise ConfigError(str(exc)) from None
    return cast(TTLConfig, dict(ttl))


def _interval(minutes: object) -> float:
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or \
            not 0 < minutes <= _MAX_TTL:
        raise ValidationError("sweep_interval_minutes must be a positive number of minutes")
    return float(minutes)
