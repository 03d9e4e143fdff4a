"""Hostile configuration and argument values: refused with our typed error, nothing changed.

Issue 19, items 5 and 6 (coercion): budgets must be ints > 0 globally and per namespace,
type shares are fractions of the budget that add up to 1 (seed 000 §3.2.7), nothing is
coerced (``True`` is not 1, ``"100"`` is not 100, ``"yes"`` is not True) in the
configuration or in ``add``/``add_many``/``observe`` arguments, and ``max_sensitivity``
lies in [0, 1] wherever it is accepted. A store reopened with a smaller budget brings
every namespace under it when it opens: audited evictions to the archive, nothing lost.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from invariants import check_invariants, snapshot

from mars_core.audit import AuditOp
from mars_core.budget import check_budget, check_shares, normalise_shares
from mars_core.clock import FakeClock
from mars_core.config import RetrievalConfig, StoreConfig, parse_config
from mars_core.engine.manifest import FIT_PENDING
from mars_core.engine.writer import Writer
from mars_core.errors import ConfigError, ValidationError
from mars_core.model import MemoryStatus, MemoryType
from mars_core.reading.retrieval import Query, check_max_sensitivity
from mars_core.shares import TypeShares
from mars_core.storage import SQLiteRecordStore
from mars_core.store import MemoryStore

NOTE = "note number {} about the garden and the rain"  # 9 tokens (approx-v1)


def _ids(kw: dict[str, Any]) -> str:
    return ",".join(f"{k}={v!r}" for k, v in kw.items())


# --- budgets ---------------------------------------------------------------------------------

BAD_BUDGETS: list[object] = [True, False, "100", 100.0, 1.5, 0, -1, math.nan, math.inf, None,
                             [100], b"100"]


@pytest.mark.parametrize("value", BAD_BUDGETS, ids=repr)
def test_a_bad_global_budget_is_refused_everywhere(value: object, key: bytes) -> None:
    with pytest.raises(ConfigError, match="budget"):
        StoreConfig(budget=value)
    with pytest.raises(ConfigError, match="budget"):
        MemoryStore(clock=FakeClock(), audit_key=key, budget=value)
    with pytest.raises(ConfigError, match="budget"):
        MemoryStore(config=StoreConfig(), clock=FakeClock(), audit_key=key, budget=value)
    with pytest.raises(ConfigError, match="budget"):
        parse_config({"budget": value})


@pytest.mark.parametrize("value", BAD_BUDGETS, ids=repr)
def test_a_bad_namespace_budget_is_refused_as_the_global_one_is(value: object,
                                                                key: bytes) -> None:
    with pytest.raises(ConfigError, match=r"namespace_budgets\['a'\]"):
        StoreConfig(namespace_budgets={"a": value})
    with pytest.raises(ConfigError, match=r"namespace_budgets\['a'\]"):
        MemoryStore(clock=FakeClock(), audit_key=key, namespace_budgets={"a": value})


@pytest.mark.parametrize("value", [{"": 10}, {7: 10}, {"n" * 257: 10}, ["a"], "a=10"], ids=repr)
def test_namespace_budgets_must_map_namespace_names(value: object) -> None:
    with pytest.raises(ConfigError, match="namespace_budgets"):
        StoreConfig(namespace_budgets=value)


def test_budget_messages_say_what_to_pass() -> None:
    with pytest.raises(ConfigError) as excinfo:
        StoreConfig(budget="100")
    assert "an int > 0" in str(excinfo.value) and "budget=8000" in str(excinfo.value)
    with pytest.raises(ConfigError) as excinfo:
        StoreConfig(namespace_budgets={"a": 0})
    assert "at least 1 token" in str(excinfo.value)


def test_integral_budgets_of_any_integer_type_are_taken_as_ints() -> None:
    cfg = StoreConfig(budget=np.int64(500), namespace_budgets={"a": np.int32(20)})
    assert cfg.budget == 500 and type(cfg.budget) is int
    assert cfg.namespace_budgets == {"a": 20} and type(cfg.namespace_budgets["a"]) is int
    assert check_budget(1) == 1


# --- type shares ------------------------------------------------------------------------------

BAD_SHARES: list[object] = [
    {"episodic": 0.9, "semantic": 0.9},  # the probe: adds up to 1.8
    {"episodic": 0.4, "semantic": 0.4},  # 0.8
    {},
    {"bogus": 1.0},
    {"episodic": 0.5, "procedural": 0.5},
    {"episodic": math.nan, "semantic": 1.0},
    {"episodic": math.inf},
    {"episodic": -0.1, "semantic": 1.1},
    {"episodic": 2.0, "semantic": -1.0},
    {"episodic": True},
    {"episodic": "1"},
    {"episodic": None},
    [("episodic", 1.0)],
    "episodic",
]


@pytest.mark.parametrize("shares", BAD_SHARES, ids=repr)
def test_bad_type_shares_are_refused(shares: object, key: bytes) -> None:
    with pytest.raises(ConfigError, match="share"):
        StoreConfig(type_shares=shares)
    with pytest.raises(ConfigError, match="share"):
        MemoryStore(clock=FakeClock(), audit_key=key, type_shares=shares)
    with pytest.raises(ConfigError):
        TypeShares(initial=shares)
    with pytest.raises(ConfigError):
        normalise_shares(shares)  # type: ignore[arg-type]


@pytest.mark.parametrize("shares", [
    {"episodic": 0.4, "semantic": 0.3, "social": 0.15, "task": 0.15},  # the documented one
    {"episodic": 0.1, "semantic": 0.2, "social": 0.7},  # 1.0000000000000002: float rounding
    {"semantic": 1},
    {MemoryType.TASK: 0.5, "social": 0.5},
], ids=repr)
def test_shares_that_add_up_to_one_are_accepted(shares: dict[Any, float]) -> None:
    cfg = StoreConfig(type_shares=shares)
    assert cfg.type_shares is not None
    assert all(isinstance(k, MemoryType) for k in cfg.type_shares)
    full = normalise_shares(cfg.type_shares)
    assert set(full) == set(MemoryType) and math.isclose(sum(full.values()), 1.0)
    assert check_shares(shares) == cfg.type_shares
    # and a recorded configuration reads back the same
    assert parse_config(cfg.model_dump(mode="json")) == cfg


def test_shares_message_names_the_rule() -> None:
    with pytest.raises(ConfigError) as excinfo:
        StoreConfig(type_shares={"episodic": 0.9, "semantic": 0.9})
    assert "add up to 1" in str(excinfo.value) and "1.8" in str(excinfo.value)


# --- no coercion anywhere in the configuration -------------------------------------------------

BAD_FIELDS: list[dict[str, Any]] = [
    {"seed": True},
    {"seed": "1"},
    {"seed": 1.0},
    {"sensitivity_scoring": "yes"},
    {"sensitivity_scoring": 1},
    {"dedup_threshold": math.nan},
    {"dedup_threshold": "0.9"},
    {"reflect_at": True},
    {"reflect_at": math.inf},
    {"policy": 1},
    {"token_counter": b"approx-v1"},
    {"default_namespace": 7},
    {"nlp": True},
    {"dp": {"enabled": "yes"}},
    {"dp": {"enabled": 1}},
    {"dp": {"epsilon": "1.0"}},
    {"retrieval": {"candidates": "64"}},
    {"retrieval": {"candidates": True}},
    {"retrieval": {"default_budget_tokens": 512.0}},
    {"retrieval": {"bm25_k1": math.inf}},
    {"retrieval": {"dense_weight": math.nan}},
    {"retrieval": {"relative_cutoff": "0.5"}},
    {"budgett": 100},
]


@pytest.mark.parametrize("kwargs", BAD_FIELDS, ids=_ids)
def test_no_config_field_is_coerced(kwargs: dict[str, Any], key: bytes) -> None:
    with pytest.raises(ConfigError):
        StoreConfig(**kwargs)
    with pytest.raises(ConfigError):
        MemoryStore(clock=FakeClock(), audit_key=key, **kwargs)


def test_retrieval_config_refuses_coercion_itself() -> None:
    with pytest.raises(ConfigError, match="candidates"):
        RetrievalConfig(candidates="64")
    assert RetrievalConfig(dense_weight=1).dense_weight == 1.0  # an int is a number


def test_config_must_be_a_store_config(key: bytes) -> None:
    with pytest.raises(ConfigError, match="StoreConfig"):
        MemoryStore(config={"budget": 10}, clock=FakeClock(), audit_key=key)  # type: ignore[arg-type]


# --- add / add_many / observe arguments ---------------------------------------------------------


@pytest.fixture
def store(key: bytes) -> Iterator[MemoryStore]:
    with MemoryStore(clock=FakeClock(), audit_key=key, budget=200) as s:
        s.add("Ana moved to Lisbon in May")
        yield s


BAD_ADDS: list[dict[str, Any]] = [
    {"sensitivity": True},  # the probe: was stored as 1.0
    {"sensitivity": False},
    {"sensitivity": "0.5"},
    {"sensitivity": math.nan},
    {"sensitivity": 1.5},
    {"sensitivity": -0.1},
    {"pinned": "yes"},  # the probe: was stored as True
    {"pinned": "no"},
    {"pinned": 1},
    {"pinned": None},
    {"expires_at": "2030-01-01"},
    {"expires_at": 1_900_000_000},
    {"provenance": {"turn": "3"}},
    {"provenance": {"turn": True}},
    {"provenance": {"turn": 3.0}},
    {"provenance": {"reliability": "1"}},
    {"provenance": {"reliability": True}},
    {"type": "task", "payload": {"priority": "0.9"}},
    {"type": "task", "payload": {"priority": True}},
    {"type": "semantic", "payload": {"confidence": "high"}},
    {"type": "episodic", "payload": {"emotional_valence": False}},
]


@pytest.mark.parametrize("kwargs", BAD_ADDS, ids=_ids)
def test_add_refuses_coercion_and_changes_nothing(store: MemoryStore,
                                                  kwargs: dict[str, Any]) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError):
        store.add("Bo plays the drums", **kwargs)
    with pytest.raises(ValidationError):
        store.add_many(["fine text", {"text": "Bo plays the drums", **kwargs}])
    assert snapshot(store) == before


@pytest.mark.parametrize("turn", [True, "3", 3.0], ids=repr)
def test_observe_refuses_a_coerced_turn_index(store: MemoryStore, turn: object) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="turn"):
        store.observe("user", "I moved to Porto", turn=turn)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="turn"):
        store.observe_many([{"role": "user", "text": "I moved to Porto", "turn": turn}])
    assert snapshot(store) == before


def test_real_numbers_and_bools_are_still_accepted(store: MemoryStore) -> None:
    node = store.add("Bo plays the drums", sensitivity=1, pinned=True, type="task",
                     payload={"priority": 1}, provenance={"turn": 2, "reliability": 0})
    assert node.sensitivity == 1.0 and node.pinned is True
    assert node.provenance.turn == 2 and node.provenance.reliability == 0.0
    assert store.observe("user", "hello there", turn=np.int64(4))[0].provenance.turn == 4
    check_invariants(store)


# --- max_sensitivity ---------------------------------------------------------------------------

BAD_CAPS: list[object] = [2.0, 1.0000001, -0.1, True, False, "0.5", math.nan, math.inf, [0.5]]


@pytest.mark.parametrize("cap", BAD_CAPS, ids=repr)
def test_max_sensitivity_outside_zero_one_is_refused(store: MemoryStore, cap: object) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="max_sensitivity"):
        store.retrieve("Ana", max_sensitivity=cap)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_sensitivity"):
        Query("Ana", "default", max_sensitivity=cap)  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_max_sensitivity_bounds_are_inclusive(store: MemoryStore) -> None:
    assert check_max_sensitivity(0) == 0.0 and check_max_sensitivity(1) == 1.0
    assert store.retrieve("Ana", max_sensitivity=1, read_only=True)


# --- refused configurations change nothing on disk ---------------------------------------------


def _state(path: Path) -> tuple[Any, ...]:
    """What a store holds on disk, read without opening a MemoryStore."""
    records = SQLiteRecordStore(path / "mars.sqlite3", read_only=True)
    try:
        with records.read() as tx:
            names = tx.namespace_names()
            return (tx.manifest(), tx.totals(), tx.audit_size(),
                    [n.model_dump() for ns in names for n in tx.memories(ns)])
    finally:
        records.close()


def _open(path: Path, key: bytes, **kwargs: Any) -> MemoryStore:
    return MemoryStore.open(path, index="numpy", clock=FakeClock(), audit_key=key, **kwargs)


def _ns(ids: list[str], memory_id: str) -> str:
    """The namespace of a memory :func:`_fill` stored (the last three are in "b")."""
    return "b" if memory_id in ids[-3:] else "a"


def _fill(path: Path, key: bytes, n: int = 20, **config: Any) -> list[str]:
    """``n`` notes of 9 tokens in namespace "a", then three short ones in "b"."""
    with _open(path, key, budget=1000, **config) as s:
        ids = [s.add(NOTE.format(i), namespace="a").id for i in range(n)]
        ids += [s.add(f"Bo likes tea number {i}", namespace="b").id for i in range(3)]
        return ids


@pytest.mark.parametrize("kwargs", [
    {"budget": 0}, {"budget": True}, {"budget": "50"}, {"namespace_budgets": {"a": -1}},
    {"namespace_budgets": {"a": 0}}, {"type_shares": {"episodic": 0.9, "semantic": 0.9}},
    {"sensitivity_scoring": "no"},
], ids=_ids)
def test_a_refused_reopen_leaves_the_store_as_it_was(tmp_path: Path, key: bytes,
                                                     kwargs: dict[str, Any]) -> None:
    _fill(tmp_path / "s", key)
    before = _state(tmp_path / "s")
    with pytest.raises(ConfigError):
        _open(tmp_path / "s", key, **kwargs)
    assert _state(tmp_path / "s") == before
    with _open(tmp_path / "s", key) as s:  # still usable, with its recorded configuration
        assert s.config.budget == 1000 and s.verify().ok


def test_a_refused_config_creates_no_store(tmp_path: Path, key: bytes) -> None:
    with pytest.raises(ConfigError):
        _open(tmp_path / "new", key, budget=0)
    assert not (tmp_path / "new").exists()


def test_an_invalid_recorded_config_is_refused_with_the_way_out(tmp_path: Path,
                                                                key: bytes) -> None:
    """A store written by a version that accepted ``namespace_budgets={"a": 0}`` (or an
    edited manifest) is refused on reopen, unchanged; reopening with a configuration
    replaces it."""
    _fill(tmp_path / "s", key)
    records = SQLiteRecordStore(tmp_path / "s" / "mars.sqlite3")
    with records.write() as tx:
        manifest = tx.manifest()
        assert manifest is not None
        manifest["config"]["namespace_budgets"] = {"a": 0}
        tx.put_manifest(manifest)
    records.close()
    before = _state(tmp_path / "s")
    for read_only in (False, True):
        with pytest.raises(ConfigError, match="reopen the store once") as excinfo:
            _open(tmp_path / "s", key, read_only=read_only)
        assert "namespace_budgets['a']" in str(excinfo.value)
    assert _state(tmp_path / "s") == before
    with _open(tmp_path / "s", key, budget=1000, namespace_budgets={"a": 500}) as s:
        assert s.config.namespace_budgets == {"a": 500} and s.verify().ok
    with _open(tmp_path / "s", key) as s:
        assert s.config.namespace_budgets == {"a": 500}


# --- reopening with a smaller budget -----------------------------------------------------------


def _used(store: MemoryStore, ns: str) -> int:
    return int(store.stats(ns)["namespaces"][ns]["tokens"])


def test_reopen_with_a_smaller_budget_brings_each_namespace_under_it(tmp_path: Path,
                                                                     key: bytes) -> None:
    ids = _fill(tmp_path / "s", key)
    events_before = _state(tmp_path / "s")[2]
    with _open(tmp_path / "s", key, budget=50) as s:
        assert _used(s, "a") <= 50 and _used(s, "b") <= 50
        # nothing deleted: every memory is still there, the evicted ones in the archive
        statuses = {i: s.get(i, namespace=_ns(ids, i)).status for i in ids}
        archived = [i for i, st in statuses.items() if st is MemoryStatus.ARCHIVED]
        assert len(archived) >= 10 and all(statuses[i] is MemoryStatus.ACTIVE
                                           for i in ids[-3:])  # "b" fitted already
        # audited: a config event in "a" saying why, then one evict event per memory
        events = [e for e in s.audit.events() if e.namespace == "a"]
        config = [e for e in events if e.op is AuditOp.CONFIG]
        assert len(config) == 1 and "now 50 tokens" in config[0].rationale
        assert config[0].params["used"] == 9 * 20
        evicts = [e for e in events if e.op is AuditOp.EVICT]
        assert sorted(i for e in evicts for i in e.node_ids) == sorted(archived)
        assert all(e.policy == "lru" and e.seq > config[0].seq for e in evicts)
        assert not [e for e in s.audit.events() if e.namespace == "b"
                    and e.op in (AuditOp.CONFIG, AuditOp.EVICT)]
        assert len(s.audit) > events_before and s.verify().ok
        check_invariants(s)
        # archived memories are searchable with include_archive, and restorable
        gone = archived[0]
        hits = s.retrieve(NOTE.format(ids.index(gone)), namespace="a", include_archive=True,
                          read_only=True, relative_cutoff=0, k=30)
        assert gone in {h.id for h in hits if h.archived}
        assert s.restore(gone, namespace="a").status is MemoryStatus.ACTIVE
        assert _used(s, "a") <= 50
        check_invariants(s)
        n_events = len(s.audit)
    # the new budget is recorded; a plain reopen changes nothing more
    state = _state(tmp_path / "s")
    assert FIT_PENDING not in state[0]
    with _open(tmp_path / "s", key) as s:
        assert s.config.budget == 50 and len(s.audit) == n_events and s.verify().ok
    assert _state(tmp_path / "s") == state


def test_a_smaller_namespace_budget_fits_only_that_namespace(tmp_path: Path,
                                                             key: bytes) -> None:
    ids = _fill(tmp_path / "s", key)
    with _open(tmp_path / "s", key, budget=1000, namespace_budgets={"a": 30}) as s:
        assert _used(s, "a") <= 30
        assert all(s.get(i, namespace="b").is_active for i in ids[-3:])  # "b" is untouched
        assert [e.op for e in s.audit.events() if e.namespace == "b"] == [AuditOp.INSERT] * 3
        assert any(e.op is AuditOp.CONFIG and e.namespace == "a" for e in s.audit.events())
        assert s.verify().ok
        check_invariants(s)
        # the per-namespace budget holds for later writes too
        s.add("one more note about the garden", namespace="a")
        assert _used(s, "a") <= 30


def test_a_memory_heavier_than_the_new_budget_goes_to_the_archive(tmp_path: Path,
                                                                  key: bytes) -> None:
    with _open(tmp_path / "s", key, budget=1000) as s:
        heavy = s.add("a long memory " * 10, namespace="a").id  # 30 tokens
    with _open(tmp_path / "s", key, budget=1000, namespace_budgets={"a": 5}) as s:
        assert s.get(heavy, namespace="a").status is MemoryStatus.ARCHIVED
        assert _used(s, "a") == 0
        assert s.verify().ok
        check_invariants(s)


def test_a_larger_budget_on_reopen_evicts_nothing(tmp_path: Path, key: bytes) -> None:
    _fill(tmp_path / "s", key)
    with _open(tmp_path / "s", key, budget=5000) as s:
        assert not [e for e in s.audit.events() if e.op is AuditOp.EVICT]
        assert s.config.budget == 5000


def test_an_interrupted_fit_is_finished_by_the_next_open(tmp_path: Path, key: bytes,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The new budgets and a pending mark are recorded together; if the open stops before
    the namespaces fit, the next open (even without a configuration) fits them."""
    _fill(tmp_path / "s", key)

    def crash(self: Writer) -> dict[str, int]:
        raise RuntimeError("crashed before fitting")

    with monkeypatch.context() as m:
        m.setattr(Writer, "fit_budgets", crash)
        with pytest.raises(RuntimeError):
            _open(tmp_path / "s", key, budget=40)
    manifest = _state(tmp_path / "s")[0]
    assert manifest[FIT_PENDING] is True and manifest["config"]["budget"] == 40
    with _open(tmp_path / "s", key) as s:
        assert s.config.budget == 40 and _used(s, "a") <= 40
        assert s.verify().ok
        check_invariants(s)
    assert FIT_PENDING not in _state(tmp_path / "s")[0]



def test_keywords_alone_apply_on_top_of_the_recorded_configuration(tmp_path: Path) -> None:
    """Reopening with ``budget=`` alone changes the budget and keeps the rest (the policy,
    the retrieval settings) as recorded; a whole ``config=`` replaces it."""
    path = tmp_path / "s"
    with MemoryStore.open(path, index="numpy", clock=FakeClock(), policy="lru", budget=500,
                          dedup_threshold=0.8) as store:
        store.add("Ana likes tea")
    with MemoryStore.open(path, index="numpy", clock=FakeClock(), budget=400) as store:
        assert (store.config.policy, store.config.budget, store.config.dedup_threshold) == \
            ("lru", 400, 0.8)
    with MemoryStore.open(path, index="numpy", clock=FakeClock()) as store:
        assert (store.config.policy, store.config.budget) == ("lru", 400)
    with MemoryStore.open(path, index="numpy", clock=FakeClock(),
                          config=StoreConfig(budget=300)) as store:
        assert (store.config.policy, store.config.budget) == (StoreConfig().policy, 300)
