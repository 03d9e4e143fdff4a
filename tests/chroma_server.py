"""pytest plugin: one real ``chroma run`` server for the whole test session.

``tests/conftest.py`` imports ``chroma_server_fixture``, which registers the fixture for
every test: ask for ``chroma_server``. (Importing it into a test module as well would
register a second session fixture there, and start a second server.) (Not
``pytest_plugins``: pytest's doctest collection imports this file first, and a plugin
imported before registration trips an assertion-rewrite warning.) The server is the one
``mars bench backends`` starts (:func:`mars_core.bench.chroma_server.chroma_server`): the
``chroma`` CLI installed next to the Python that runs the tests, on a free loopback
port, with its data in a session temporary directory, awaited by heartbeat and
terminated at the end of the session. Without the CLI the tests that need it are
skipped, saying why.

:func:`server_index` connects a vector index to the session's server of a kind
(:mod:`mars_core.testing.stores` has it); tests import it from here or from there,
never from ``conftest`` (pytest registers every directory's
``conftest.py`` under that one module name, so ``from conftest import ...`` finds
whichever was loaded last: ``tests/llamaindex/conftest.py`` in a full run).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mars_core.bench.chroma_server import ChromaServer, chroma_cli, chroma_server
from mars_core.errors import MarsBackendError
from mars_core.testing.stores import prefix_for, server_index

__all__ = ["ChromaServer", "chroma_server_fixture", "prefix_for", "server_index"]


@pytest.fixture(scope="session", name="chroma_server")
def chroma_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A ``chroma run --path <tmp> --port <free port>`` server for the session."""
    pytest.importorskip("chromadb", reason="chromadb is not installed (mars-memory[chroma])")
    if chroma_cli() is None:
        pytest.skip("the `chroma` CLI is not installed next to this Python "
                    "(pip install 'mars-memory[chroma]')")
    try:
        with chroma_server(tmp_path_factory.mktemp("chroma-server")) as server:
            yield server
    except MarsBackendError as exc:  # it did not start: fail the tests that need it
        pytest.fail(str(exc))
