"""The reflection policy's audit reason states the gate that let a summary through."""

from __future__ import annotations

from mars_core.clock import FakeClock
from mars_core.policies.reflection import Cluster, ReflectionConfig, _rationale
from mars_core.store import MemoryStore


def _why(s_bar: float, max_s: float) -> str:
    with MemoryStore(clock=FakeClock()) as store:
        nodes = [store.add(f"the bridge was busy on day {i}") for i in range(3)]
    cluster = Cluster(tuple(n.id for n in nodes), 0.9, 0.1, 0.1)
    return _rationale(nodes, cluster, ReflectionConfig(), d=0.3, s_bar=s_bar, max_s=max_s,
                      tokens=(30, 10))


def test_a_cluster_below_the_gate_floor_says_so_not_a_false_inequality() -> None:
    why = _why(0.05, 0.05)
    assert "most sensitive member 0.05 < gate floor 0.30" in why
    assert "τ_priv" not in why


def test_a_sensitive_cluster_states_the_drop_it_passed() -> None:
    assert "sensitivity 0.30 ≤ 0.60 − τ_priv 0.05" in _why(0.3, 0.6)
