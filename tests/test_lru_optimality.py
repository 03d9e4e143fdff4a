"""Seed 000 §3.4.3: under U(S) = Σ v·e^(−λ·age) with equal values and weights, evicting the
least recently used is optimal — checked on random instances against brute force.

The instances are real stores on each backend of the matrix (``tests/conftest.py``): 100 in
memory, :data:`MATRIX_EXAMPLES` on the other backends (the same property; each store
costs 10-30x more there).
"""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from mars_core import FakeClock, MemoryStore
from mars_core.testing import trigger_view

EXAMPLES, MATRIX_EXAMPLES = 100, 10
"""Random instances in memory and on each other backend of the matrix."""


def _check(n: int, data: st.DataObject, lam: float) -> None:
    m = data.draw(st.integers(1, n - 1), label="kept")
    with MemoryStore(budget=10_000, policy="lru", clock=FakeClock(), nlp="rules",
                     sensitivity_scoring=False) as store:
        ids = [store.add(f"memory number {i:02d}").id for i in range(n)]
        weights = {store.get(i).weight for i in ids}
        assert len(weights) == 1  # equal weights, as the proposition assumes
        for i in data.draw(st.permutations(range(n)), label="access order"):
            store.retrieve(f"memory number {i:02d}", k=1)
        now = max(store.get(i).touch_seq for i in ids)
        age = {i: now - store.get(i).touch_seq for i in ids}  # time since last use
        # planning only: nothing staged, nothing written
        plan = store.policy_for().apply(trigger_view(store, "default"),
                                        (n - m) * weights.pop())

    def utility(kept: tuple[str, ...]) -> float:
        return sum(math.exp(-lam * age[i]) for i in kept)  # v_i = 1 for all

    kept = tuple(i for i in ids if i not in {e.node_id for e in plan.evictions})
    assert len(kept) == m
    best = max(utility(c) for c in itertools.combinations(ids, m))
    assert utility(kept) >= best - 1e-12


def test_lru_keeps_a_utility_maximising_set(store_kind: str) -> None:
    @settings(max_examples=EXAMPLES if store_kind == "ram" else MATRIX_EXAMPLES)
    @given(n=st.integers(3, 8), data=st.data(), lam=st.floats(0.01, 2.0))
    def check(n: int, data: st.DataObject, lam: float) -> None:
        _check(n, data, lam)

    check()
