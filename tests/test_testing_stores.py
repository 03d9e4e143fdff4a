"""mars_core.testing's store factory: kind_parts over the kinds, StoreFactory's defaults.

Every kind runs through the store matrix (tests/conftest.py uses kind_parts); here what
the matrix does not show: refusals, the defaults back after the block, the files gone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mars_core import FakeClock, MemoryStore
from mars_core.errors import ConfigError
from mars_core.testing import KINDS, StoreFactory, kind_parts, record_store, vector_index


@pytest.mark.parametrize(("kind", "given", "match"), [
    ("mongo", {}, "unknown store kind 'mongo'"),
    ("chroma-http", {}, "needs a chroma run server"),
    ("postgres-chroma", {"postgres_url": "postgresql://x/y"}, "needs a chroma run server"),
    ("postgres", {}, "needs a PostgreSQL URL"),
])
def test_a_kind_without_what_it_needs_is_refused(tmp_path: Path, kind: str,
                                                   given: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match), kind_parts(kind, scratch=tmp_path, **given):
        pass  # never entered
    with MemoryStore(clock=FakeClock()) as store:  # nothing was patched
        assert type(vector_index(store).inner).__name__ == "NumpyIndex"
        assert record_store(store).location == "memory"


def test_qdrant_url_needs_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDRANT_URL", raising=False)
    with pytest.raises(ConfigError, match="QDRANT_URL"), kind_parts("qdrant-url",
                                                                     scratch=tmp_path):
        pass


def test_a_kinds_stores_are_its_own_and_their_files_go_with_the_block(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    assert set(KINDS) >= {"ram", "sqlite", "chroma", "qdrant", "postgres"}
    with kind_parts("chroma", scratch=tmp_path), StoreFactory(audit_key=bytes(32)) as make:
        store = make(budget=100)
        store.add("Ana moved to Lisbon")
        assert store.stats()["index"] == "chroma"
        assert record_store(store).location.startswith(str(tmp_path))
        assert len(list(tmp_path.iterdir())) == 2  # the records' and the index's places
    assert store.closed and list(tmp_path.iterdir()) == []
    with MemoryStore(clock=FakeClock()) as after:  # the defaults are back
        assert after.stats()["index"] == "numpy"


def test_a_factory_applies_its_defaults_and_closes_what_its_children_made(
        tmp_path: Path) -> None:
    clock = FakeClock()
    with StoreFactory(audit_key=bytes(32), nlp="rules", policy="fifo") as make:
        small = make(40)
        child = make.with_defaults(policy="lru", budget=70)
        lru = child()
        given = child(clock=clock, budget=90)
        opened = make(path=tmp_path / "s", index="numpy")
        assert (small.config.policy, small.config.budget) == ("fifo", 40)
        assert (lru.config.policy, lru.config.budget) == ("lru", 70)
        assert given.clock is clock and given.config.budget == 90
        assert len({id(s.clock) for s in (small, lru, opened)}) == 3  # a fresh clock each
        assert (tmp_path / "s").is_dir()
    assert all(s.closed for s in (small, lru, given, opened))
