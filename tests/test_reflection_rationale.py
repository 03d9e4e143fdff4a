"""The reflection policy's audit reason states the gate that let a summary through."""

from __future__ import annotations

from typing import Any

from mars_core.clock import FakeClock
from mars_core.policies.reflection import Cluster, ReflectionConfig, _rationale
from mars_core.store import MemoryStore


def _why(s_bar: float, sens: tuple[float, ...], **cfg: Any) -> str:
    with MemoryStore(clock=FakeClock(), sensitivity_scoring=False) as store:
        nodes = [store.add(f"the bridge was busy on day {i}", sensitivity=s)
                 for i, s in enumerate(sens)]
    cluster = Cluster(tuple(n.id for n in nodes), 0.9, 0.1, 0.1)
    return _rationale(nodes, cluster, ReflectionConfig(**cfg), d=0.3, s_bar=s_bar,
                      tokens=(30, 10))


def test_a_cluster_below_the_gate_floor_says_so_not_a_false_inequality() -> None:
    why = _why(0.05, (0.05, 0.05, 0.0))
    assert "most sensitive member 0.05 < gate floor 0.30" in why
    assert "τ_priv" not in why


def test_a_sensitive_cluster_states_the_drop_it_passed() -> None:
    assert "sensitivity 0.30 ≤ 0.60 (least sensitive member) − τ_priv 0.05" in _why(
        0.3, (0.6, 0.7, 0.9))
    assert "sensitivity 0.30 ≤ 0.60 (most sensitive member) − τ_priv 0.05" in _why(
        0.3, (0.6, 0.1, 0.0), privacy_reference="max")
