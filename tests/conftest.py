"""Shared fixtures: a fake clock, a fixed audit key, store factories, the store matrix.

The store matrix: the tests of the modules in :data:`MODULE_KINDS` run once per kind of
store their entry lists (restrict a run with ``MARS_TEST_BACKENDS=ram,chroma``). A kind
is a record store with a vector index:

* ``ram`` — SQLite in RAM with the numpy index (``MemoryStore()``'s default; for stores
  opened by path, SQLite on disk with the numpy index);
* ``sqlite`` — SQLite in a file with the numpy index;
* ``chroma`` — SQLite in a file with the embedded Chroma index (``MemoryStore.open``'s
  default);
* ``chroma-http`` — the index on a real ``chroma run`` server the session starts and
  stops (``tests/chroma_server.py``), each store under a prefix of its own;
* ``qdrant`` — Qdrant's local mode (in memory for ``MemoryStore()``, a directory for
  stores opened by path), and ``qdrant-url`` when ``QDRANT_URL`` is set;
* ``postgres`` — the records on the session's real PostgreSQL server
  (``tests/postgres_server.py``), each store in a schema of its own (a store opened by
  path: the schema named after the path, so it reopens), with the numpy index;
* ``postgres-chroma`` — the same records with the index on the session's ``chroma run``
  server: the deployment of several processes on several machines.

The autouse fixture ``store_kind`` makes the stores those tests build use that kind:
``MemoryStore()`` without records or an index, and ``MemoryStore.open(path)`` with
``index="auto"`` (on the PostgreSQL kinds its records too), get the kind's parts from
:func:`mars_core.testing.kind_parts` (which users' own suites can call too). A store given
an index explicitly keeps it. Elsewhere ``store_kind`` is ``"ram"`` and
patches nothing.

Which kinds:

* every kind (:data:`ALL_KINDS`) for the store's own suites: ``test_store``,
  ``test_erasure``, ``test_observe``, ``test_bad_inputs``; ``test_threads`` runs on the
  light kinds and the PostgreSQL ones;
* :data:`OPEN_KINDS` for the modules whose stores come from ``MemoryStore.open``;
* :data:`SERVER_KINDS` for the LangGraph store, which is meant to be shared;
* :data:`ADAPTER_PG` (``postgres``) added to every adapter module's kinds;
* every embedded kind (:data:`EMBEDDED_KINDS`) for the modules that are fast on all;
* :data:`LIGHT_KINDS` (``ram`` and ``chroma``, the two ends) for every other module of
  the matrix, the adapters' included.

:data:`TEST_KINDS` narrows the slowest tests (the statistics and long workloads of the
policies run in RAM). ``MARS_TEST_MATRIX=full`` lifts both tables, except that a test
marked ``local_files`` (it scans or copies a store's own directory) never runs on the
server or PostgreSQL kinds (:data:`SHARED_KINDS`). The PostgreSQL kinds are on the store's
own suites, and ``postgres`` (:data:`ADAPTER_PG`) on every adapter module
(``test_persistence`` tests SQLite's files and crashes; the multi-process tests of
PostgreSQL are ``test_*_postgres``). ``@pytest.mark.backend_neutral`` marks a
test of a matrix module that runs once. Store files made without a path live on tmpfs
(``/dev/shm``) when there is one; ``make pytest`` puts the rest there too (``TMPDIR``):
the crash tests of ``test_persistence`` kill processes, whose writes survive in the
page cache, so a disk would add only time (no test simulates a power cut).

The record-store and index conformance suites (``test_records``, ``test_index``) run
per implementation themselves; ``test_open`` and ``test_embedders`` test what ``open``
picks; modules that build no store, the examples, the benchmarks, ``test_cli``,
``test_demo``, ``test_docs`` and ``test_learn`` are not on the matrix.

New stores default to the hashing embedder in tests (``MARS_EMBEDDER=hashing``, which
the subprocesses of the tests inherit); tests of the MiniLM default unset it. Audit keys
go to a key ring of the run (``MARS_KEY_DIR``, a temporary directory).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import children
import pytest
from chroma_server import chroma_server_fixture
from heavy_marker import HEAVY, HEAVY_SKIP
from hypothesis import settings
from postgres_server import postgres_server_fixture, postgres_url_fixture

from mars_core.bench.together import starting_with
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.store import MemoryStore
from mars_core.testing import StoreFactory, kind_parts
from mars_core.testing.stores import POSTGRES_KINDS, SERVER_ONLY

__all__ = ["ADAPTER_PG", "ALL_KINDS", "AUDIT_KEY", "BACKEND_KINDS", "EMBEDDED_KINDS", "FULL_MATRIX",
           "HEAVY", "HEAVY_SKIP",
           "LIGHT_KINDS", "MATRIX_MODULES", "MODULE_KINDS", "OPEN_KINDS", "POSTGRES_KINDS",
           "SERVER_KINDS", "SERVER_ONLY", "SHARED_KINDS", "TEST_KINDS", "chroma_server_fixture",
           "matrix_kinds", "postgres_server_fixture", "postgres_url_fixture"]

os.environ.setdefault("MARS_EMBEDDER", "hashing")
# the audit keys of the stores the tests create go to a key ring of the run (the
# subprocesses inherit it), never to the user's own (mars_core.keys); the process that
# made it removes it as it exits
if "MARS_KEY_DIR" not in os.environ:
    os.environ["MARS_KEY_DIR"] = tempfile.mkdtemp(prefix="mars-test-keys-")
    atexit.register(shutil.rmtree, os.environ["MARS_KEY_DIR"], ignore_errors=True)

# CI runs must not depend on luck: every property test explores the same examples each
# run (set HYPOTHESIS_PROFILE=explore locally to search new ones).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

AUDIT_KEY = bytes(range(32))
"""A fixed 32-byte audit key, so keyed hashes and the audit chain are reproducible."""


@pytest.fixture
def clock() -> FakeClock:
    """A fresh fake clock at 2026-01-01T00:00:00Z."""
    return FakeClock()


@pytest.fixture
def key() -> bytes:
    """The fixed audit key."""
    return AUDIT_KEY



BACKEND_KINDS = ["ram", "sqlite", "chroma", "chroma-http", "qdrant"] + (
    ["qdrant-url"] if os.environ.get("QDRANT_URL") else []) + list(POSTGRES_KINDS)
"""Every kind the store-level suites run on (``qdrant-url`` when ``QDRANT_URL`` is set)."""

TESTS = Path(__file__).resolve().parent
"""The tests directory: module keys below are paths relative to it."""

ALL_KINDS = tuple(BACKEND_KINDS)
"""All of them: for the store's own suites."""


SHARED_KINDS = (*SERVER_ONLY, *POSTGRES_KINDS)
"""The kinds that keep something on a server: no test of a store's own files runs there."""

EMBEDDED_KINDS = tuple(k for k in BACKEND_KINDS if k not in SHARED_KINDS)
"""Every kind but the servers."""

LIGHT_KINDS = ("ram", "chroma")
"""The two ends: records in RAM with the numpy index (``MemoryStore()``), and records in
a SQLite file with the embedded Chroma index (``MemoryStore.open(path)``'s default)."""

OPEN_KINDS = ("ram", "chroma", "chroma-http", "qdrant", "qdrant-url")
"""The kinds that differ for stores made by ``MemoryStore.open(path)`` (``ram`` there is
SQLite on disk with the numpy index; ``sqlite`` would repeat it)."""

SERVER_KINDS = (*LIGHT_KINDS, *SERVER_ONLY)
"""The light kinds and the servers: for the adapters whose use case is a shared server."""

ADAPTER_PG = ("postgres",)
"""The PostgreSQL kind every adapter module runs on too: the numpy index, since what the
adapters add over the store does not depend on the index. ``postgres-chroma`` on the
LangGraph store's suite took 51 s where ``postgres`` took 11 s (all the adapters'
modules on ``postgres``: 68 s, measured on the loaded 2-core machine), more than
doubling the adapters' PostgreSQL time; it runs their erasure test only."""

MODULE_KINDS: dict[str, tuple[str, ...]] = {
    # the store's own suites
    "test_store.py": ALL_KINDS,
    "test_erasure.py": ALL_KINDS,
    "test_observe.py": ALL_KINDS,
    "test_bad_inputs.py": ALL_KINDS,
    "test_properties.py": OPEN_KINDS,  # its stores (nearly) all come from MemoryStore.open
    "test_store_hooks.py": EMBEDDED_KINDS,
    "test_retrieval_pipeline.py": EMBEDDED_KINDS,
    "test_maintain.py": EMBEDDED_KINDS,
    "test_preferences.py": EMBEDDED_KINDS,
    "test_extract.py": EMBEDDED_KINDS,  # one store test (the others are backend_neutral)
    "test_control.py": LIGHT_KINDS,
    "test_threads.py": (*LIGHT_KINDS, *POSTGRES_KINDS),
    "test_shares.py": LIGHT_KINDS,
    "test_dp_store.py": LIGHT_KINDS,
    "test_reflection.py": LIGHT_KINDS,
    "test_persistence.py": OPEN_KINDS,
    "test_policy_state.py": LIGHT_KINDS,
    "test_lru_optimality.py": LIGHT_KINDS,
    "test_scoring_working_set.py": LIGHT_KINDS,
    "test_policy_dmf.py": LIGHT_KINDS,  # the policies: long workloads, see TEST_KINDS
    "test_policy_hybrid.py": LIGHT_KINDS,
    "test_policy_meta.py": LIGHT_KINDS,
    "test_policy_priority.py": LIGHT_KINDS,
    "test_policy_random.py": LIGHT_KINDS,
    # the adapters: their stores come from lc_store / mstore / make (no index passed)
    "langchain/test_lc_history.py": (*EMBEDDED_KINDS, *ADAPTER_PG),
    "langchain/test_lc_middleware.py": (*EMBEDDED_KINDS, *ADAPTER_PG),
    "langchain/test_lc_retriever.py": (*EMBEDDED_KINDS, *ADAPTER_PG),
    "langchain/test_lc_parts.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "langchain/test_lc_carry.py": (*LIGHT_KINDS, *ADAPTER_PG),  # what a clear removes
    "langgraph/test_import_langgraph.py": (*EMBEDDED_KINDS, *ADAPTER_PG),
    # a LangGraph store is shared by design (its erasure test runs on every kind,
    # postgres-chroma included: the module's KINDS)
    "langgraph/test_mars_store.py": (*SERVER_KINDS, *ADAPTER_PG),
    "langgraph/test_mars_store_ttl.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "langgraph/test_nodes.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_agents.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_block.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_carry.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_engines.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_hooks.py": (*EMBEDDED_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_memory.py": (*LIGHT_KINDS, *ADAPTER_PG),
    "llamaindex/test_llamaindex_retriever.py": (*LIGHT_KINDS, *ADAPTER_PG),
}
"""The kinds each module of the matrix runs on, by path under ``tests/``."""

MATRIX_MODULES = set(MODULE_KINDS)
"""The modules whose tests run on each kind of their :data:`MODULE_KINDS` entry."""

MEMORY = ("ram",)

TEST_KINDS: dict[str, tuple[str, ...]] = {
    # many stores or long scripts per case: the two light kinds cover the same code
    "test_bad_inputs.py::test_bad_input_is_refused_and_changes_nothing": LIGHT_KINDS,
    "test_properties.py::test_same_seed_same_store": LIGHT_KINDS,
    # properties of a policy's arithmetic or statistics over hundreds of operations (the
    # index only proposes candidates): in RAM; the store's budget invariant and
    # reopen-determinism on every kind are test_properties' state machines
    "test_policy_random.py::test_each_memory_is_equally_likely_across_seeds": MEMORY,
    "test_policy_random.py::test_draws_are_uniform_over_the_remaining_memories": MEMORY,
    "test_policy_random.py::test_same_seed_same_choices_other_seed_other_choices": MEMORY,
    "test_policy_random.py::test_budget_holds_after_every_operation": MEMORY,
    "test_policy_dmf.py::test_budget_holds_after_every_operation": MEMORY,
    "test_policy_priority.py::test_budget_holds_after_every_operation": MEMORY,
    "test_shares.py::test_budget_invariant_holds_with_shares": MEMORY,
    "test_policy_meta.py::test_learns_to_prefer_recency_on_a_recency_stream": MEMORY,
    "test_policy_meta.py::test_same_seed_same_arm_choices": MEMORY,
    "test_policy_meta.py::test_clearly_worse_arm_is_abandoned": MEMORY,
    "llamaindex/test_llamaindex_memory.py::"
    "test_get_stays_within_the_token_limit_for_every_limit": MEMORY,  # 186 gets, 1 store
}
"""Tests that run on fewer kinds than their module (the slowest of the matrix), as
``module::test``."""


def _stale_entries() -> list[str]:
    """Entries of :data:`MODULE_KINDS` and :data:`TEST_KINDS` that name nothing (a
    renamed module or test would silently leave the matrix)."""
    stale = [m for m in MODULE_KINDS if not (TESTS / m).is_file()]
    for key in TEST_KINDS:
        module, _, test = key.partition("::")
        source = (TESTS / module).read_text(encoding="utf-8") if module in MODULE_KINDS \
            and (TESTS / module).is_file() else ""
        if f"def {test}(" not in source:
            stale.append(key)
    return stale


def pytest_configure(config: pytest.Config) -> None:
    """Register the matrix's marker; refuse a matrix whose tables name missing tests."""
    stale = _stale_entries()
    if stale:
        raise pytest.UsageError(f"tests/conftest.py's store matrix names no such "
                                f"module or test: {stale}")
    config.addinivalue_line(
        "markers", "backend_neutral(neutral=True): a test of a matrix module that runs "
        "once, not per kind: it builds no store, or only stores of the kinds it names "
        "itself (as a module's pytestmark, backend_neutral(False) puts one test back on)")
    config.addinivalue_line(
        "markers", "local_files: a test of a matrix module that reads or copies a store's "
        "own directory: never run on the server kinds, even with MARS_TEST_MATRIX=full")


def _module_key(metafunc: pytest.Metafunc) -> str:
    path = Path(str(metafunc.definition.fspath)).resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name


def _parametrises_kind_itself(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if "store_kind" in ([n.strip() for n in names.split(",")]
                            if isinstance(names, str) else list(names)):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``heavy`` unless ``MARS_TEST_HEAVY=1``."""
    if HEAVY:
        return
    skip = pytest.mark.skip(reason=HEAVY_SKIP)
    for item in items:
        if item.get_closest_marker("heavy") is not None:
            item.add_marker(skip)


FULL_MATRIX = os.environ.get("MARS_TEST_MATRIX", "").strip().lower() == "full"
"""``MARS_TEST_MATRIX=full``: every test of every matrix module on every kind, ignoring
:data:`MODULE_KINDS` and :data:`TEST_KINDS` (not ``make test``'s run)."""


def matrix_kinds(module: str, test: str) -> list[str]:
    """The kinds a test of ``module`` named ``test`` runs on (``[]``: not on the matrix)."""
    if module not in MODULE_KINDS:
        return []
    wanted = os.environ.get("MARS_TEST_BACKENDS")
    chosen = ALL_KINDS if FULL_MATRIX else MODULE_KINDS[module]
    narrowed = ALL_KINDS if FULL_MATRIX else TEST_KINDS.get(f"{module}::{test}", ALL_KINDS)
    return [k for k in BACKEND_KINDS if (not wanted or k in wanted.split(","))
            and k in chosen and k in narrowed]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise the matrix modules' tests over the kinds."""
    neutral = metafunc.definition.get_closest_marker("backend_neutral")
    if "store_kind" not in metafunc.fixturenames or _parametrises_kind_itself(metafunc) \
            or (neutral is not None and (not neutral.args or neutral.args[0])):
        return
    module = _module_key(metafunc)
    if module not in MODULE_KINDS:
        return
    kinds = matrix_kinds(module, metafunc.definition.originalname)
    if metafunc.definition.get_closest_marker("local_files") is not None:
        kinds = [k for k in kinds if k not in SHARED_KINDS]
    metafunc.parametrize("store_kind", kinds, indirect=True)


@pytest.fixture(scope="session")
def matrix_scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the matrix puts the files of stores made without a path: on tmpfs
    (``/dev/shm``) when there is one, else in pytest's temporary directory."""
    if not (Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK)):
        yield tmp_path_factory.mktemp("matrix")
        return
    root = Path(tempfile.mkdtemp(prefix="mars-matrix-", dir="/dev/shm"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """The kind of store this test's stores are (see the module docstring).

    It sets the parts with :func:`mars_core.testing.kind_parts`, not a test's
    ``monkeypatch``, so a test's ``monkeypatch.undo()`` cannot take its stores off the
    matrix halfway through.
    """
    kind: str | None = getattr(request, "param", None)
    if kind is None:
        yield "ram"
        return
    yield from _patched(request, kind)


def _patched(request: pytest.FixtureRequest, kind: str) -> Iterator[str]:
    if kind not in ("ram", "sqlite", *POSTGRES_KINDS):
        pytest.importorskip("chromadb" if kind.startswith("chroma") else "qdrant_client")
    chroma = request.getfixturevalue("chroma_server") \
        if kind in ("chroma-http", "postgres-chroma") else None
    url = request.getfixturevalue("postgres_server") if kind in POSTGRES_KINDS else None
    scratch: Path = request.getfixturevalue("matrix_scratch")
    with kind_parts(kind, scratch=scratch, chroma=chroma, postgres_url=url):
        yield kind


@pytest.fixture
def make_store(key: bytes) -> Iterator[StoreFactory]:
    """Factory of stores (:class:`mars_core.testing.StoreFactory`):
    ``make_store(budget=None, *, path=None, **config_or_ctor_kwargs)`` (in memory, or
    ``MemoryStore.open(path)``; on the matrix's backend), ``make_store.with_defaults(...)``
    for a module's own defaults.

    Every store gets its own ``FakeClock`` (unless ``clock=`` is given) and the fixed key
    (unless ``audit_key=`` is given); all are closed at teardown.
    """
    with StoreFactory(audit_key=key) as factory:
        yield factory


@pytest.fixture
def open_store(make_store: StoreFactory, store_kind: str) -> Callable[..., MemoryStore]:
    """Factory of persisted stores: ``open_store(path, **kw)`` via ``MemoryStore.open``
    (SQLite with the numpy index, unless the test runs in the store matrix)."""

    def factory(path: str | os.PathLike[str], **kw: Any) -> MemoryStore:
        if store_kind == "ram":
            kw.setdefault("index", "numpy")
        return make_store(path=path, **kw)

    return factory


# --- fixtures of the LangChain adapter tests (tests/langchain) ------------------------------
# They live here, not in tests/langchain/conftest.py: two `conftest` modules in sibling
# directories without __init__.py collide under pytest's default import mode, and an
# __init__.py would turn tests/langchain into a package named `langchain`.


@pytest.fixture
def recorder() -> Any:
    """Records what each chat model received (tests/llamaindex overrides it)."""
    from lc_helpers import ModelInputs  # tests/langchain is on sys.path for its tests

    return ModelInputs()


@pytest.fixture
def lc_store() -> Iterator[MemoryStore]:
    """A fast store in RAM with the hashing embedder and a fake clock."""
    store = MemoryStore(budget=4000, embedder=HashingEmbedder(), clock=FakeClock(),
                        audit_key=bytes(range(32)))
    yield store
    store.close()


@pytest.fixture
def bench_children() -> Iterator[None]:
    """The benchmarks' probes and workers forked from the preloaded interpreter
    (``tests/children.py``) instead of started fresh: a smoke run checks that each
    section runs and reports, and a fresh interpreter's imports were most of each probe's
    CPU. Used by the modules that smoke ``mars bench store`` and ``mars bench postgres``."""
    with starting_with(children.popen):
        yield
