"""Shared fixtures: a fake clock, a fixed audit key, store factories, the backend matrix.

The backend matrix: the tests of the modules in :data:`MODULE_KINDS` run once per backend
kind their entry lists (restrict a run with ``MARS_TEST_BACKENDS=inmemory,qdrant-path``):
``inmemory``, ``chroma-ephemeral``, ``chroma-persistent``, ``chroma-http`` (a real
``chroma run`` server the session starts and stops, ``tests/chroma_server.py``),
``qdrant-memory``, ``qdrant-path``, and ``qdrant-url`` when ``QDRANT_URL`` is set. The
autouse fixture ``store_backend`` makes the stores those tests build use that backend:
``MemoryStore()`` without a backend gets a fresh one of the kind (the seam
``mars_core.core._ephemeral_backend``), and ``MemoryStore.open(path)`` opens the kind's
persistent variant (``mars_core.backends.layout.open_backend``): Chroma on disk for the
Chroma kinds (over HTTP, with a collection prefix derived from ``path``, for
``chroma-http``), Qdrant's path mode for the Qdrant kinds (the server at ``QDRANT_URL``
for ``qdrant-url``). A store given a backend explicitly keeps it. Elsewhere
``store_backend`` is ``"inmemory"`` and patches nothing.

Which kinds (``docs/reference/backends.md`` has the same table):

* every kind (:data:`ALL_KINDS`) for the store's own suites: ``test_store``,
  ``test_erasure``, ``test_observe``, ``test_bad_inputs``;
* :data:`OPEN_KINDS` for the modules whose stores come from ``MemoryStore.open``
  (``test_properties``, ``test_persistence``): the ephemeral kinds would open the same
  on-disk variants;
* :data:`SERVER_KINDS` (the light kinds and the servers) for the LangGraph store
  (``langgraph/test_mars_store``): a LangGraph store is meant to be shared by several
  processes, so a shared server is its use case;
* every embedded kind (:data:`EMBEDDED_KINDS`: not the servers, over which a store
  creates its collections in ~1 s) for the modules that are fast on all of them:
  ``test_store_hooks``, ``test_retrieval_pipeline``, ``test_maintain``,
  ``test_preferences``, ``test_extract``, ``langchain/test_lc_history``,
  ``langchain/test_lc_middleware``, ``langchain/test_lc_retriever``,
  ``langgraph/test_import_langgraph``, ``llamaindex/test_llamaindex_hooks``;
* :data:`LIGHT_KINDS` (in memory, Chroma on disk, Qdrant's path mode) for every other
  module of the matrix, the adapters' included (their stores come from ``lc_store``,
  ``mstore`` and ``make``, which pass no backend): a write is 10-30x slower there than
  in memory, and the ephemeral and server kinds run the same client code, so they would
  add minutes to ``make test`` and find nothing new.

Narrower still, :data:`TEST_KINDS` lists the slowest tests with the reason for each (the
statistics and long workloads of the policies run in memory; their exact-order and
drift-bound checks in memory and on Qdrant's path mode). ``MARS_TEST_MATRIX=full``
lifts both tables: every test of every matrix module runs on every kind (the whole store
suite on each backend; hours on 2 cores, so not part of ``make test``), except that a test
marked ``local_files`` (it scans or copies a store's own directory, where a server kind
keeps nothing) never runs on the server kinds. Inside a matrix
module, ``@pytest.mark.backend_neutral`` marks a test that runs once: it builds no store,
or only stores on the backends it names itself (a module whose tests are mostly pure sets
it as ``pytestmark`` and puts its store tests back with ``backend_neutral(False)``). A
test that parametrises ``store_backend`` itself keeps its own list. The directories of
stores made without a path live on tmpfs (``/dev/shm``) when there is one: the matrix
tests what the stores do, not the disk's fsync latency (stores opened by path stay in
``tmp_path``, and durability is tested on disk by the crash loops of
``test_persistence`` and the backend suites).

Not on the matrix: the backend suites (``test_backend_*``, ``test_erasure_backends``
run per backend themselves); ``test_open`` and ``test_embedders`` (they test which
backend and embedder ``open`` picks); the modules that build no store (``test_context``,
``test_graph``, ``test_maintenance``, ...); the examples run as subprocesses
(``langchain/test_lc_examples``, ``llamaindex/test_llamaindex_examples``); the
benchmarks, ``test_cli``, ``test_demo``, ``test_docs`` and ``test_learn``.

New stores default to the hashing embedder in tests (``MARS_EMBEDDER=hashing``, which
the subprocesses of the tests inherit); tests of the MiniLM default unset it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chroma_server import chroma_server_fixture, prefix_for, server_backend
from hypothesis import settings

from mars_core import core
from mars_core.backends import layout
from mars_core.backends.base import VectorBackend
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.store import MemoryStore

__all__ = ["ALL_KINDS", "AUDIT_KEY", "BACKEND_KINDS", "EMBEDDED_KINDS", "FULL_MATRIX",
           "LIGHT_KINDS", "MATRIX_MODULES", "MODULE_KINDS", "OPEN_KINDS", "SERVER_KINDS",
           "SERVER_ONLY", "TEST_KINDS", "chroma_server_fixture", "matrix_kinds"]

os.environ.setdefault("MARS_EMBEDDER", "hashing")

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


BACKEND_KINDS = ["inmemory", "chroma-ephemeral", "chroma-persistent", "chroma-http",
                 "qdrant-memory", "qdrant-path"] + (["qdrant-url"] if os.environ.get("QDRANT_URL")
                                                    else [])
"""Every backend the store-level suites run on (``qdrant-url`` when ``QDRANT_URL`` is set)."""

TESTS = Path(__file__).resolve().parent
"""The tests directory: module keys below are paths relative to it."""

ALL_KINDS = tuple(BACKEND_KINDS)
"""All of them: for the store's own suites."""

SERVER_ONLY = ("chroma-http", "qdrant-url")
"""The kinds whose stores keep their data on a server, not in the store's directory."""

EMBEDDED_KINDS = tuple(k for k in BACKEND_KINDS if k not in SERVER_ONLY)
"""Every kind but the servers: for the modules that are fast on every embedded backend
(over HTTP a store creates its five collections in ~1 s, more than such a test takes)."""

LIGHT_KINDS = ("inmemory", "chroma-persistent", "qdrant-path")
"""The in-memory and the two embedded on-disk backends: the least every module of the
matrix runs on (the ephemeral kinds run the same client code without the disk)."""

OPEN_KINDS = ("inmemory", "chroma-persistent", "chroma-http", "qdrant-path", "qdrant-url")
"""The kinds that differ for stores made by ``MemoryStore.open(path)``: the ephemeral
kinds open the same on-disk variants, so they would only repeat the run."""

SERVER_KINDS = (*LIGHT_KINDS, *SERVER_ONLY)
"""The light kinds and the servers: for the adapters whose use case is a shared server."""

MODULE_KINDS: dict[str, tuple[str, ...]] = {
    # the store's own suites
    "test_store.py": ALL_KINDS,
    "test_erasure.py": ALL_KINDS,
    "test_observe.py": ALL_KINDS,
    "test_bad_inputs.py": ALL_KINDS,
    "test_properties.py": OPEN_KINDS,  # its stores (nearly) all come from MemoryStore.open
    "test_store_hooks.py": EMBEDDED_KINDS,  # fast everywhere
    "test_retrieval_pipeline.py": EMBEDDED_KINDS,  # fast everywhere
    "test_maintain.py": EMBEDDED_KINDS,  # fast everywhere
    "test_preferences.py": EMBEDDED_KINDS,  # fast everywhere
    "test_extract.py": EMBEDDED_KINDS,  # one store test (the others are backend_neutral)
    "test_control.py": LIGHT_KINDS,  # 22 store tests, ~1 s each on a Chroma kind
    "test_threads.py": LIGHT_KINDS,  # concurrency is the store lock's; the disk kinds reopen
    "test_crypto.py": LIGHT_KINDS,  # scans the files of stores it opens by path: local only
    "test_shares.py": LIGHT_KINDS,
    "test_dp_store.py": LIGHT_KINDS,  # two 60-add hybrid runs (they ran on Chroma before)
    "test_reflection.py": LIGHT_KINDS,
    "test_persistence.py": OPEN_KINDS,  # only the FIFO reopen test: the rest names backends
    "test_policy_state.py": LIGHT_KINDS,
    "test_lru_optimality.py": LIGHT_KINDS,  # 10 instances on a disk kind, 100 in memory
    "test_scoring_working_set.py": LIGHT_KINDS,  # three store tests
    "test_policy_dmf.py": LIGHT_KINDS,  # the policies: long workloads, see TEST_KINDS
    "test_policy_hybrid.py": LIGHT_KINDS,
    "test_policy_meta.py": LIGHT_KINDS,
    "test_policy_priority.py": LIGHT_KINDS,
    "test_policy_random.py": LIGHT_KINDS,
    # the adapters: their stores come from lc_store / mstore / make (no backend passed)
    "langchain/test_lc_history.py": EMBEDDED_KINDS,  # fast everywhere
    "langchain/test_lc_middleware.py": EMBEDDED_KINDS,  # fast everywhere
    "langchain/test_lc_retriever.py": EMBEDDED_KINDS,  # fast everywhere
    "langchain/test_lc_parts.py": LIGHT_KINDS,
    "langgraph/test_import_langgraph.py": EMBEDDED_KINDS,  # fast everywhere
    "langgraph/test_mars_store.py": SERVER_KINDS,  # a LangGraph store is shared by design:
    # its other suites (test_mars_store_ttl, test_nodes) run on the light kinds
    "langgraph/test_mars_store_ttl.py": LIGHT_KINDS,
    "langgraph/test_nodes.py": LIGHT_KINDS,
    "llamaindex/test_llamaindex_agents.py": LIGHT_KINDS,
    "llamaindex/test_llamaindex_block.py": LIGHT_KINDS,
    "llamaindex/test_llamaindex_engines.py": LIGHT_KINDS,
    "llamaindex/test_llamaindex_hooks.py": EMBEDDED_KINDS,  # fast everywhere
    "llamaindex/test_llamaindex_memory.py": LIGHT_KINDS,
    "llamaindex/test_llamaindex_retriever.py": LIGHT_KINDS,
}
"""The kinds each module of the matrix runs on, by path under ``tests/``."""

MATRIX_MODULES = set(MODULE_KINDS)
"""The modules whose tests run on each backend of their :data:`MODULE_KINDS` entry."""

MEMORY = ("inmemory",)
WITH_QDRANT = ("inmemory", "qdrant-path")

TEST_KINDS: dict[str, tuple[str, ...]] = {
    # many stores or long scripts per case: the on-disk kinds cover the same code
    "test_bad_inputs.py::test_bad_input_is_refused_and_changes_nothing": LIGHT_KINDS,
    "test_properties.py::test_same_seed_same_store": LIGHT_KINDS,
    # properties of a policy's arithmetic or statistics over hundreds of operations (the
    # backend only stores the records): in memory; the store's budget invariant and
    # reopen-determinism on every backend are test_properties' state machines and
    # test_reopening_does_not_change_decisions
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
    # exact orders and drift bounds recomputed from the stored vectors over long random
    # workloads: in memory and on Qdrant's path mode (every backend returns the vectors as
    # given; Chroma's persistent kind is 4x slower than Qdrant's path mode here)
    "test_policy_dmf.py::test_default_tolerance_keeps_the_stated_bound": WITH_QDRANT,
    "test_policy_dmf.py::test_tiny_tolerance_gives_the_exact_order": WITH_QDRANT,
    "test_policy_priority.py::test_default_tolerance_keeps_the_stated_bound": WITH_QDRANT,
    "test_policy_priority.py::test_tiny_tolerance_gives_the_exact_order": WITH_QDRANT,
    "test_policy_random.py::test_pins_and_goals_are_skipped_unless_forced": WITH_QDRANT,
    "test_reflection.py::test_depth_stops_at_two_and_the_rest_is_evicted": WITH_QDRANT,
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
        raise pytest.UsageError(f"tests/conftest.py's backend matrix names no such "
                                f"module or test: {stale}")
    config.addinivalue_line(
        "markers", "backend_neutral(neutral=True): a test of a matrix module that runs "
        "once, not per backend: it builds no store, or only stores on the backends it names "
        "itself (as a module's pytestmark, backend_neutral(False) puts one test back on)")
    config.addinivalue_line(
        "markers", "local_files: a test of a matrix module that reads or copies a store's "
        "own directory, where a server kind keeps nothing: never run on the server kinds, "
        "even with MARS_TEST_MATRIX=full")


def _module_key(metafunc: pytest.Metafunc) -> str:
    path = Path(str(metafunc.definition.fspath)).resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name


def _parametrises_backend_itself(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if "store_backend" in ([n.strip() for n in names.split(",")]
                               if isinstance(names, str) else list(names)):
            return True
    return False


FULL_MATRIX = os.environ.get("MARS_TEST_MATRIX", "").strip().lower() == "full"
"""``MARS_TEST_MATRIX=full``: every test of every matrix module on every kind, ignoring
:data:`MODULE_KINDS` and :data:`TEST_KINDS` (hours on 2 cores, not ``make test``'s run)."""


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
    """Parametrise the matrix modules' tests over the backends."""
    neutral = metafunc.definition.get_closest_marker("backend_neutral")
    if "store_backend" not in metafunc.fixturenames or _parametrises_backend_itself(metafunc) \
            or (neutral is not None and (not neutral.args or neutral.args[0])):
        return
    module = _module_key(metafunc)
    if module not in MODULE_KINDS:
        return
    kinds = matrix_kinds(module, metafunc.definition.originalname)
    if metafunc.definition.get_closest_marker("local_files") is not None:
        kinds = [k for k in kinds if k not in SERVER_ONLY]
    metafunc.parametrize("store_backend", kinds, indirect=True)


@pytest.fixture(scope="session")
def matrix_scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the matrix puts the directories of stores made without a path: on tmpfs
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
def store_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The backend kind the stores of this test use (see the module docstring).

    It patches with a ``MonkeyPatch`` of its own, so a test's ``monkeypatch.undo()``
    cannot take its stores off the matrix's backend halfway through.
    """
    kind: str | None = getattr(request, "param", None)
    if kind is None:
        yield "inmemory"
        return
    with pytest.MonkeyPatch.context() as patch:
        yield from _patched(request, patch, kind)


def _patched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
             kind: str) -> Iterator[str]:
    original = layout.open_backend
    if kind == "inmemory":
        monkeypatch.setattr(layout, "open_backend",
                            lambda directory, asked="auto", create=True: original(
                                directory, "inmemory", create=create))
        yield kind
        return
    pytest.importorskip("chromadb" if kind.startswith("chroma") else "qdrant_client")
    server = request.getfixturevalue("chroma_server") if kind == "chroma-http" else None
    scratch: Path = request.getfixturevalue("matrix_scratch")
    made: list[Path] = []

    def ephemeral() -> VectorBackend:
        from mars_core.backends.chroma import ChromaBackend
        from mars_core.backends.qdrant import QdrantBackend

        if kind in ("chroma-http", "qdrant-url"):
            return server_backend(kind, server, f"t{uuid.uuid4().hex[:12]}_")
        if kind == "chroma-ephemeral":
            return ChromaBackend()
        if kind == "qdrant-memory":
            return QdrantBackend()
        where = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=scratch))
        made.append(where)
        return ChromaBackend(path=where) if kind == "chroma-persistent" else \
            QdrantBackend(path=where)

    def by_path(directory: Path, asked: str = "auto",
                create: bool = True) -> tuple[VectorBackend, str]:
        if asked == "inmemory" or layout.detect_backend(directory) == "inmemory":
            return original(directory, asked, create=create)
        if kind in ("chroma-http", "qdrant-url"):  # the store says whether it exists
            directory.mkdir(parents=True, exist_ok=True)
            return server_backend(kind, server, prefix_for(directory)), f"{kind} (test matrix)"
        return original(directory, kind.split("-", maxsplit=1)[0], create=create)

    monkeypatch.setattr(core, "_ephemeral_backend", ephemeral)
    monkeypatch.setattr(layout, "open_backend", by_path)
    yield kind
    for where in made:  # the test's stores are closed: this fixture is torn down last
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def make_store(key: bytes) -> Iterator[Callable[..., MemoryStore]]:
    """Factory of stores: ``make_store(budget=..., **config_or_ctor_kwargs)`` (in memory,
    or on the matrix's backend).

    Every store gets its own ``FakeClock`` (unless ``clock=`` is given) and the fixed key;
    all are closed at teardown.
    """
    made: list[MemoryStore] = []

    def factory(budget: int = 8000, **kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        kw.setdefault("audit_key", key)
        store = MemoryStore(budget=budget, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def open_store(key: bytes, store_backend: str) -> Iterator[Callable[..., MemoryStore]]:
    """Factory of persisted stores: ``open_store(path, **kw)`` via ``MemoryStore.open``
    (the journal backend, unless the test runs in the backend matrix)."""
    made: list[MemoryStore] = []

    def factory(path: str | os.PathLike[str], **kw: Any) -> MemoryStore:
        kw.setdefault("clock", FakeClock())
        if store_backend == "inmemory":
            kw.setdefault("backend", "inmemory")
        kw.setdefault("audit_key", key)
        store = MemoryStore.open(path, **kw)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


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
    """A fast in-memory store with the hashing embedder and a fake clock."""
    store = MemoryStore(budget=4000, embedder=HashingEmbedder(), clock=FakeClock(),
                        audit_key=bytes(range(32)))
    yield store
    store.close()
