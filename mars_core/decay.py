"""Decay laws: the one home of decay arithmetic in mars-memory.

Every scorer that lets something fade calls into this module, so a rate means the same
thing everywhere and each law is tested once. Two time axes exist (digest Z-X1):

* **interaction count** ``Δn`` — the number of newer interactions in the namespace
  (seed 004 §6, eq 15; MaRS stores it as ``MemoryNode.step``). Decay in MaRS runs on
  this axis (DESIGN §3 "Determinism and time"). Laws:

  - :func:`exponential` — ``e^{-rate·Δn}`` (MaRS recency, seed 000 §3.2.6; Oblivion
    retention ``e^{-n/S}`` is this law with ``rate = 1/S``, seed 002 §2.2);
  - :func:`inertial` — DMF's ``Ω·e^{-λ(1-ηΩ)Δn}`` (seed 004 §6 eq 18), the survival law
    ``mars_core.scoring.dmf`` should reuse instead of re-implementing;
  - :func:`log_accelerated` — OSL-MR's ``e^{-γ·(1+log_b(1+Δ/τ))·Δ}`` (seed 001 A.2);
  - :func:`hyperbolic` — ``1/(1+x/scale)``, the seed 003 recency and freshness shape.

* **wall-clock time** from an injectable :class:`~mars_core.clock.Clock` — only for rules
  that are about the calendar (TTL, archival age, deadlines): :func:`age_days`,
  :func:`age_hours` and their pure forms :func:`days_between`, :func:`hours_between`,
  :func:`whole_days_between`. A start in the future (clock skew) counts as age zero.

The laws accept a float or a numpy array for the elapsed amount (and return the same
kind), so batch scorers stay vectorised. Negative elapsed amounts, negative rates and
non-finite inputs raise :class:`~mars_core.errors.ValidationError`.

Examples:
    >>> round(exponential(20, 0.035), 4)
    0.4966
    >>> round(inertial(0.86, 50), 4)             # seed 004 §6 trajectory (digest E.3)
    0.3172
    >>> round(log_accelerated(50, 0.002, 10.0), 6)  # OSL-MR stable memory at Δt=50, ln
    0.756407
    >>> hyperbolic(30, 30)                       # seed 003 recency at 30 days
    0.5
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import overload

import numpy as np
from numpy.typing import NDArray

from mars_core.clock import Clock
from mars_core.errors import ValidationError
from mars_core.model import utc

__all__ = [
    "DMF_ETA",
    "DMF_LAMBDA",
    "FloatArray",
    "age_days",
    "age_hours",
    "days_between",
    "exponential",
    "half_life",
    "hours_between",
    "hyperbolic",
    "inertial",
    "inertial_half_life",
    "log_accelerated",
    "rate_for_half_life",
    "whole_days_between",
]

FloatArray = NDArray[np.float64]
"""A float64 numpy array (the vectorised form of every law)."""

DMF_LAMBDA = 0.035
"""DMF base decay rate λ per interaction (seed 004 §6, Table 3 defaults)."""

DMF_ETA = 0.5
"""DMF inertia η: how much a high survival score slows its own decay (seed 004 §6 eq 17)."""

_LN2 = math.log(2.0)


# --- validation --------------------------------------------------------------------------


def _check_nonneg(value: float | FloatArray, name: str) -> None:
    if isinstance(value, np.ndarray):
        if value.size and (not np.all(np.isfinite(value)) or np.any(value < 0)):
            raise ValidationError(f"{name} must be finite and >= 0 everywhere")
    elif not (math.isfinite(value) and value >= 0):
        raise ValidationError(f"{name} must be a finite number >= 0, got {value!r}")


def _check_positive(value: float, name: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValidationError(f"{name} must be a finite number > 0, got {value!r}")


def _as_array(value: float | FloatArray) -> FloatArray:
    return np.asarray(value, dtype=np.float64)


# --- laws over the interaction count -----------------------------------------------------


@overload
def exponential(delta: float, rate: float) -> float: ...
@overload
def exponential(delta: FloatArray, rate: float | FloatArray) -> FloatArray: ...
def exponential(delta: float | FloatArray, rate: float | FloatArray) -> float | FloatArray:
    """Exponential decay ``e^{-rate·delta}``, in (0, 1].

    Args:
        delta: elapsed amount (interaction steps Δn, or turns n for Oblivion), >= 0.
        rate: decay rate per unit of ``delta``, >= 0 (a scalar, or an array matching
            ``delta`` when ``delta`` is an array).

    Raises:
        ValidationError: a negative or non-finite ``delta`` or ``rate``.

    Examples:
        >>> exponential(0, 0.5), round(exponential(2, 0.5), 4)
        (1.0, 0.3679)
    """
    _check_nonneg(delta, "delta")
    _check_nonneg(rate, "rate")
    if isinstance(delta, np.ndarray):
        return np.exp(-_as_array(rate) * delta)
    assert not isinstance(rate, np.ndarray)
    return math.exp(-rate * delta)


@overload
def inertial(
    omega: float, delta: float, rate: float = DMF_LAMBDA, eta: float = DMF_ETA
) -> float: ...
@overload
def inertial(
    omega: float | FloatArray, delta: FloatArray, rate: float = DMF_LAMBDA, eta: float = DMF_ETA
) -> FloatArray: ...
@overload
def inertial(
    omega: FloatArray, delta: float | FloatArray, rate: float = DMF_LAMBDA, eta: float = DMF_ETA
) -> FloatArray: ...
def inertial(
    omega: float | FloatArray,
    delta: float | FloatArray,
    rate: float = DMF_LAMBDA,
    eta: float = DMF_ETA,
) -> float | FloatArray:
    """DMF decay with inertia: ``Ω_eff = Ω·exp(-λ·(1-η·Ω)·Δn)`` (seed 004 §6 eq 18).

    A higher survival score Ω decays more slowly (``μ(Ω) = 1 - ηΩ``, eq 17);
    ``Ω_eff(0) = Ω`` and ``Ω_eff`` is strictly decreasing in Δn for Ω > 0.

    Args:
        omega: survival score(s) Ω in [0, 1].
        delta: interactions since the memory was written, Δn >= 0.
        rate: base rate λ (default 0.035, seed 004 Table 3).
        eta: inertia η in [0, 1) (default 0.5, seed 004 Table 3).

    Raises:
        ValidationError: Ω outside [0, 1], η outside [0, 1), or a negative Δn or λ.

    Examples:
        >>> round(inertial(0.44, 20), 4)   # digest E.3 trajectory
        0.2549
    """
    _check_nonneg(delta, "delta")
    _check_nonneg(rate, "rate")
    if not 0.0 <= eta < 1.0:
        raise ValidationError(f"eta must lie in [0, 1), got {eta!r}")
    _check_nonneg(omega, "omega")
    if np.any(_as_array(omega) > 1.0):
        raise ValidationError("omega must lie in [0, 1]")
    if isinstance(omega, np.ndarray) or isinstance(delta, np.ndarray):
        om = _as_array(omega)
        result: FloatArray = om * np.exp(-rate * (1.0 - eta * om) * _as_array(delta))
        return result
    return omega * math.exp(-rate * (1.0 - eta * omega) * delta)


def inertial_half_life(omega: float, rate: float = DMF_LAMBDA, eta: float = DMF_ETA) -> float:
    """Half-life in interactions of :func:`inertial`: ``ln 2 / (λ(1-ηΩ))`` (seed 004 eq 19).

    Examples:
        >>> round(inertial_half_life(0.87), 1)   # seed 004 Table 3
        35.1
    """
    if not 0.0 <= omega <= 1.0:
        raise ValidationError(f"omega must lie in [0, 1], got {omega!r}")
    if not 0.0 <= eta < 1.0:
        raise ValidationError(f"eta must lie in [0, 1), got {eta!r}")
    return half_life(rate * (1.0 - eta * omega))


@overload
def log_accelerated(
    delta: float, base_rate: float, tau: float, log_base: float = math.e
) -> float: ...
@overload
def log_accelerated(
    delta: FloatArray, base_rate: float | FloatArray, tau: float, log_base: float = math.e
) -> FloatArray: ...
def log_accelerated(
    delta: float | FloatArray,
    base_rate: float | FloatArray,
    tau: float,
    log_base: float = math.e,
) -> float | FloatArray:
    """OSL-MR freshness law ``exp(-γ·κ(Δ)·Δ)`` with ``κ(Δ) = 1 + log_b(1 + Δ/τ)`` (seed 001 A.2).

    The effective rate ``γ·κ(Δ)`` grows with age, so old items fade faster than a plain
    exponential with the same base rate. The seed does not state the log base; the
    default is the natural log (see :mod:`mars_core.scoring.mixed` for the discrepancy
    with the paper's "≈0.82").

    Args:
        delta: interaction steps since the item was stored, >= 0.
        base_rate: γ_base >= 0 (scalar, or an array matching ``delta``).
        tau: time scale τ > 0 of the accelerating factor.
        log_base: base b of the log in κ (> 0 and != 1).

    Raises:
        ValidationError: invalid arguments.

    Examples:
        >>> round(log_accelerated(50, 0.002, 10.0, log_base=10.0), 6)
        0.837097
    """
    _check_nonneg(delta, "delta")
    _check_nonneg(base_rate, "base_rate")
    _check_positive(tau, "tau")
    _check_positive(log_base, "log_base")
    if log_base == 1.0:
        raise ValidationError("log_base must not be 1")
    ln_b = math.log(log_base)
    if isinstance(delta, np.ndarray):
        kappa = 1.0 + np.log1p(delta / tau) / ln_b
        return np.exp(-_as_array(base_rate) * kappa * delta)
    assert not isinstance(base_rate, np.ndarray)
    kappa_s = 1.0 + math.log1p(delta / tau) / ln_b
    return math.exp(-base_rate * kappa_s * delta)


@overload
def hyperbolic(x: float, scale: float) -> float: ...
@overload
def hyperbolic(x: FloatArray, scale: float) -> FloatArray: ...
def hyperbolic(x: float | FloatArray, scale: float) -> float | FloatArray:
    """Hyperbolic decay ``1 / (1 + x/scale)``: 1 at 0, 1/2 at ``scale``, 1/3 at 2·scale.

    Seed 003 uses it for recency (scale 30 days) and freshness (scale 7 days) and calls
    the scale a "half-life": it is the point where the value halves, but the tail is
    polynomial, not exponential.

    Examples:
        >>> round(hyperbolic(60, 30), 4)
        0.3333
    """
    _check_nonneg(x, "x")
    _check_positive(scale, "scale")
    if isinstance(x, np.ndarray):
        result: FloatArray = 1.0 / (1.0 + x / scale)
        return result
    return 1.0 / (1.0 + x / scale)


def half_life(rate: float) -> float:
    """Half-life ``ln 2 / rate`` of an exponential law (``inf`` for a zero rate).

    Examples:
        >>> round(half_life(0.035), 1)
        19.8
    """
    _check_nonneg(rate, "rate")
    return math.inf if rate == 0 else _LN2 / rate


def rate_for_half_life(half: float) -> float:
    """The exponential rate whose half-life is ``half`` (> 0).

    Examples:
        >>> round(rate_for_half_life(20.0), 6)
        0.034657
    """
    _check_positive(half, "half")
    return _LN2 / half


# --- wall-clock ages ---------------------------------------------------------------------


def _elapsed(start: datetime, now: datetime) -> timedelta:
    delta = utc(now) - utc(start)
    return max(delta, timedelta(0))


def days_between(start: datetime, now: datetime) -> float:
    """Fractional days from ``start`` to ``now`` (0 if ``start`` is in the future).

    Examples:
        >>> from datetime import UTC, datetime
        >>> days_between(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, 12, tzinfo=UTC))
        1.5
    """
    return _elapsed(start, now).total_seconds() / 86_400.0


def hours_between(start: datetime, now: datetime) -> float:
    """Fractional hours from ``start`` to ``now`` (0 if ``start`` is in the future)."""
    return _elapsed(start, now).total_seconds() / 3_600.0


def whole_days_between(start: datetime, now: datetime) -> int:
    """Whole days from ``start`` to ``now``, floored like ``timedelta.days`` (seed 003).

    Seed 003 computes ages with ``(now - t).days``, so 29.9 days count as 29 (digest
    Z-D2); its scorers use this function for parity. A future ``start`` gives 0.

    Examples:
        >>> from datetime import UTC, datetime
        >>> start = datetime(2026, 1, 1, tzinfo=UTC)
        >>> whole_days_between(start, datetime(2026, 1, 30, 23, tzinfo=UTC))
        29
    """
    return _elapsed(start, now).days


def age_days(start: datetime, clock: Clock) -> float:
    """Fractional days since ``start`` according to ``clock``.

    Examples:
        >>> from datetime import timedelta
        >>> from mars_core.clock import FakeClock
        >>> c = FakeClock(); t0 = c.now(); c.advance(timedelta(hours=36))
        >>> age_days(t0, c)
        1.5
    """
    return days_between(start, clock.now())


def age_hours(start: datetime, clock: Clock) -> float:
    """Fractional hours since ``start`` according to ``clock``."""
    return hours_between(start, clock.now())
