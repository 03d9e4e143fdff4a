"""The DP tie-break inside the store: opt-in, audited, accountant persisted."""

from __future__ import annotations

from pathlib import Path

import pytest
from invariants import check_invariants

from mars_core import MemoryStore
from mars_core.testing import StoreFactory


def fill(s: MemoryStore, n: int = 60) -> None:
    for i in range(n):
        s.add(f"note {i % 7} about topic {i % 5} with detail {i}",
              sensitivity=0.9 if i % 3 == 0 else 0.1)


@pytest.fixture
def mk(make_store: StoreFactory) -> StoreFactory:
    """This module's stores: the tests' store factory with the module's defaults."""
    return make_store.with_defaults(audit_key=bytes(range(32)), nlp="rules", budget=120,
                                    policy="hybrid")


def test_dp_off_by_default_leaves_no_trace(mk: StoreFactory, tmp_path: Path) -> None:
    with mk(path=tmp_path / "a") as s:
        fill(s)
        assert s.policy_for().dp is None
        assert all("dp" not in e.params for e in s.audit.events())


def test_dp_tiebreak_is_audited_and_charged(mk: StoreFactory, tmp_path: Path) -> None:
    cfg = {"enabled": True, "epsilon": 1.0, "epsilon_total": 1000.0, "band_relative": 0.5}
    with mk(path=tmp_path / "b", dp=cfg) as s:
        fill(s)
        check_invariants(s)
        dp_events = [e for e in s.audit.events() if "dp" in e.params]
        assert dp_events, "with DP on, evictions at the boundary record the tie-break"
        assert all(e.params["dp"]["mode"] in {"deterministic", "exact", "sequential"}
                   for e in dp_events)
        accountant = s.policy_for().accountant  # the namespace's policy's own accountant
        spent = accountant.state() if accountant else None
        assert spent is not None
        assert any(e.params["dp"]["epsilon_spent"] > 0 for e in dp_events)
    with mk(path=tmp_path / "b", dp=cfg) as s2:  # the accountant survives a reopen
        reopened = s2.policy_for().accountant
        assert reopened is not None
        assert reopened.state() == spent
