"""Root pytest configuration: what every collected file needs, the library's doctests too.

``MemoryStore()`` without an embedder takes the best one installed (all-MiniLM-L6-v2
with the ``semantic`` extra), as ``MemoryStore.open`` does. The doctests of
``mars_core``, ``langchain_mars`` and ``llamaindex_mars`` build such stores and are not
under ``tests/``, whose conftest sets the same variable, so without this they would load
the model and rank by it when run on their own (``pytest mars_core/store.py``). The
hashing embedder keeps them fast and their outputs exact; a shell that sets
``MARS_EMBEDDER`` keeps its choice.

The examples make their directories with ``tempfile.mkdtemp()``, as a user would; in a
run they go to pytest's directory of the run (:func:`_tempfiles_in_the_runs_directory`).
"""

from __future__ import annotations

import multiprocessing.util
import os
import tempfile
from collections.abc import Iterator

import pytest

os.environ.setdefault("MARS_EMBEDDER", "hashing")


@pytest.fixture(autouse=True, scope="session")
def _tempfiles_in_the_runs_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What a test or a documented example makes with :mod:`tempfile` and leaves (the
    examples' ``tempfile.mkdtemp()``) goes to pytest's directory of the run, of which
    pytest keeps the last three, instead of piling up in the machine's."""
    # multiprocessing's own directory (its fork server's socket) stays in the machine's:
    # pytest deletes a run's directory when three later runs began, even one still going
    multiprocessing.util.get_temp_dir()
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    try:
        yield
    finally:
        tempfile.tempdir = before

