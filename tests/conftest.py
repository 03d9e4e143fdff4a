"""Shared fixtures: a fake clock, a fixed audit key, store factories, the backend matrix.

The backend matrix: every test of the modules in :data:`MATRIX_MODULES` runs once per
backend of :data:`BACKEND_KINDS` (restrict with ``MARS_TEST_BACKENDS=inmemory,qdrant-path``).
The autouse fixture ``store_backend`` makes the stores those tests build use that
backend: ``MemoryStore()`` without a backend gets a fresh one of the kind (the seam
``mars_core.core._ephemeral_backend``), and ``MemoryStore.open(path)`` opens the kind's
persistent variant (``mars_core.backends.layout.open_backend``): Chroma on disk for the
Chroma kinds (over HTTP, with a collection prefix derived from ``path``, for
``chroma-http``), Qdrant's path mode for the Qdrant kinds (the server at ``QDRANT_URL``
for ``qdrant-url``). Elsewhere ``store_backend`` is ``"inmemory"`` and patches nothing.

New stores default to the hashing embedder in tests (``MARS_EMBEDDER=hashing``, which
the subprocesses of the tests inherit); tests of the MiniLM default unset it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chroma_server import ChromaServer, chroma_server_fixture, prefix_for
from hypothesis import settings

from mars_core import core
from mars_core.backends import layout
from mars_core.backends.base import VectorBackend
from mars_core.clock import FakeClock
from mars_core.embeddings import HashingEmbedder
from mars_core.store import MemoryStore

__all__ = ["AUDIT_KEY", "BACKEND_KINDS", "LIGHT_KINDS", "LIGHT_TESTS", "MATRIX_MODULES",
           "MODULE_KINDS", "OPEN_KINDS", "chroma_server_fixture"]

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

MATRIX_MODULES = {"test_store.py", "test_properties.py", "test_erasure.py", "test_observe.py",
                  "test_bad_inputs.py"}
"""The modules whose every test runs on each backend of :data:`BACKEND_KINDS`."""


LIGHT_KINDS = ("inmemory", "chroma-persistent", "qdrant-path")
"""The on-disk backends: what the largest parametrised tests of the matrix run on."""

LIGHT_TESTS = {"test_bad_input_is_refused_and_changes_nothing",  # ~90 cases, 2 stores each
               "test_same_seed_same_store"}  # three 120-step scripts per case
"""Tests run on :data:`LIGHT_KINDS` only (they are the slowest of the matrix)."""

OPEN_KINDS = ("inmemory", "chroma-persistent", "chroma-http", "qdrant-path", "qdrant-url")
"""The kinds that differ for stores made by ``MemoryStore.open(path)``: the ephemeral
kinds open the same on-disk variants, so they would only repeat the run."""

MODULE_KINDS = {"test_properties.py": OPEN_KINDS}
"""Modules whose stores (nearly) all come from ``MemoryStore.open``."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise the matrix modules' tests over the backends."""
    if "store_backend" not in metafunc.fixturenames or \
            Path(str(metafunc.definition.fspath)).name not in MATRIX_MODULES:
        return
    wanted = os.environ.get("MARS_TEST_BACKENDS")
    kinds = [k for k in BACKEND_KINDS if not wanted or k in wanted.split(",")]
    if metafunc.definition.originalname in LIGHT_TESTS:
        kinds = [k for k in kinds if k in LIGHT_KINDS]
    module = Path(str(metafunc.definition.fspath)).name
    kinds = [k for k in kinds if k in MODULE_KINDS.get(module, BACKEND_KINDS)]
    metafunc.parametrize("store_backend", kinds, indirect=True)


def _server_backend(kind: str, server: ChromaServer | None, prefix: str) -> VectorBackend:
    if kind == "chroma-http":
        from mars_core.backends.chroma import ChromaBackend

        assert server is not None
        return ChromaBackend(host=server.host, port=server.port, collection_prefix=prefix)
    from mars_core.backends.qdrant import QdrantBackend

    return QdrantBackend(url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"),
                         collection_prefix=prefix)


@pytest.fixture(autouse=True)
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                  tmp_path_factory: pytest.TempPathFactory) -> str:
    """The backend kind the stores of this test use (see the module docstring)."""
    kind: str | None = getattr(request, "param", None)
    if kind is None:
        return "inmemory"
    original = layout.open_backend
    if kind == "inmemory":
        monkeypatch.setattr(layout, "open_backend",
                            lambda directory, asked="auto": original(directory, "inmemory"))
        return kind
    pytest.importorskip("chromadb" if kind.startswith("chroma") else "qdrant_client")
    server = request.getfixturevalue("chroma_server") if kind == "chroma-http" else None

    def ephemeral() -> VectorBackend:
        from mars_core.backends.chroma import ChromaBackend
        from mars_core.backends.qdrant import QdrantBackend

        if kind in ("chroma-http", "qdrant-url"):
            return _server_backend(kind, server, f"t{uuid.uuid4().hex[:12]}_")
        if kind == "chroma-ephemeral":
            return ChromaBackend()
        if kind == "qdrant-memory":
            return QdrantBackend()
        where = tmp_path_factory.mktemp(kind)
        return ChromaBackend(path=where) if kind == "chroma-persistent" else \
            QdrantBackend(path=where)

    def by_path(directory: Path, asked: str = "auto") -> tuple[VectorBackend, str]:
        if asked == "inmemory" or layout.detect_backend(directory) == "inmemory":
            return original(directory, asked)
        if kind in ("chroma-http", "qdrant-url"):
            directory.mkdir(parents=True, exist_ok=True)
            return _server_backend(kind, server, prefix_for(directory)), f"{kind} (test matrix)"
        return original(directory, kind.split("-", maxsplit=1)[0])

    monkeypatch.setattr(core, "_ephemeral_backend", ephemeral)
    monkeypatch.setattr(layout, "open_backend", by_path)
    return kind


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
