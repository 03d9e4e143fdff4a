"""pytest plugin: one real PostgreSQL server for the whole test session, a schema per test.

``tests/conftest.py`` imports the fixtures, which registers them for every test (as
``chroma_server.py`` does; see there why not ``pytest_plugins``):

* ``postgres_server`` (session): the base URL of a database. ``$MARS_TEST_POSTGRES_URL``
  when set (a server of yours: each test works in a schema of its own, dropped after
  it); otherwise a throwaway server the session starts from the PostgreSQL binaries
  installed here and stops at its end
  (:func:`mars_core.bench.postgres_server.postgres_server`: as root it runs as the
  unprivileged ``nobody``, since PostgreSQL refuses root). With neither, the tests that
  need it are skipped, saying why; with the binaries there and a server that does not
  start, they fail.
* ``postgres_url``: a store URL of the test's own schema (``?schema=t_<random>``),
  dropped at the end of the test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from mars_core.errors import MarsBackendError
from mars_core.testing.stores import drop_schema, with_schema

__all__ = ["drop_schema", "postgres_server_fixture", "postgres_url_fixture", "with_schema"]


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[str]:
    """The base URL of the session's PostgreSQL database (see the module)."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (mars-memory[postgres])")
    pytest.importorskip("psycopg_pool", reason="psycopg-pool is not installed "
                        "(mars-memory[postgres])")
    given = os.environ.get("MARS_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    from mars_core.bench.postgres_server import postgres_bin, postgres_server

    if postgres_bin() is None:
        pytest.skip("no PostgreSQL server here: install postgresql (initdb, postgres) or "
                    "set MARS_TEST_POSTGRES_URL to a database the tests may create "
                    "schemas in")
    try:
        with postgres_server() as server:
            yield server.url()
    except MarsBackendError as exc:  # it did not start: fail the tests that need it
        pytest.fail(str(exc))


@pytest.fixture(name="postgres_url")
def postgres_url_fixture(postgres_server: str) -> Iterator[str]:
    """A store URL in a schema of this test's own, dropped after it."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield with_schema(postgres_server, schema)
    drop_schema(postgres_server, schema)
