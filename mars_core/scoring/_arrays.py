"""Array checks the density features share: vectors, matrices and unit rows, validated."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from mars_core.decay import FloatArray
from mars_core.errors import ValidationError

__all__: list[str] = []


def _unit_vector(values: ArrayLike, name: str, n: int) -> FloatArray:
    v = _vector(values, name, n)
    if np.any(v > 1.0):
        raise ValidationError(f"{name} must lie in [0, 1]")
    return v


def _vector(values: ArrayLike, name: str, n: int | None = None) -> FloatArray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if n is not None and v.shape[0] != n:
        raise ValidationError(f"{name} has {v.shape[0]} entries, expected {n}")
    if v.size and (not np.all(np.isfinite(v)) or np.any(v < 0)):
        raise ValidationError(f"{name} must be finite and >= 0")
    return v


def _matrix(values: ArrayLike, name: str) -> FloatArray:
    m = np.asarray(values, dtype=np.float64)
    if m.ndim != 2:
        raise ValidationError(f"{name} must be a 2-d array (n, d), got shape {m.shape}")
    if m.size and not np.all(np.isfinite(m)):
        raise ValidationError(f"{name} must be finite")
    return m


def _unit_rows(m: FloatArray) -> FloatArray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    unit: FloatArray = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
    return unit


def _check_unit(value: float, name: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"{name} must lie in [0, 1], got {value!r}")


def _check_features(x: FloatArray) -> None:
    if not np.all((x >= 0.0) & (x <= 1.0)):
        raise ValidationError("every feature of psi must lie in [0, 1]")
