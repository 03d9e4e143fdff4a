"""pytest plugin: one real ``chroma run`` server for the whole test session.

``tests/conftest.py`` imports ``chroma_server_fixture``, which registers the fixture for
every test: ask for ``chroma_server``. (Importing it into a test module as well would
register a second session fixture there, and start a second server.) (Not
``pytest_plugins``: pytest's doctest collection imports this file first, and a plugin
imported before registration trips an assertion-rewrite warning.) The server runs the
``chroma`` CLI installed next to the Python that runs the tests, on a free loopback
port, with its data in a session temporary directory; the fixture waits for its
heartbeat and terminates it at the end of the session. Without the CLI the tests that
need it are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import hashlib
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

__all__ = ["ChromaServer", "chroma_server_fixture", "prefix_for"]

_START_TIMEOUT = 60.0


@dataclass(frozen=True)
class ChromaServer:
    """A running server: where it listens and where it keeps its data."""

    host: str
    port: int
    path: pathlib.Path
    log: pathlib.Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @staticmethod
    def prefix_for(path: pathlib.Path) -> str:
        """A collection prefix unique to ``path``, so tests sharing the server are isolated."""
        return prefix_for(path)


def prefix_for(path: pathlib.Path) -> str:
    """A collection prefix unique to ``path``, so tests sharing the server are isolated."""
    return "t" + hashlib.sha1(str(path).encode()).hexdigest()[:12] + "_"


def _chroma_cli() -> str | None:
    beside = pathlib.Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    return shutil.which("chroma")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _wait(proc: subprocess.Popen[bytes], server: ChromaServer) -> None:
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            pytest.fail(f"`chroma run` exited with {proc.returncode}:\n{tail}")
        if _alive(server.url):
            return
        time.sleep(0.1)
    pytest.fail(f"`chroma run` did not answer its heartbeat within {_START_TIMEOUT:.0f} s")


@pytest.fixture(scope="session", name="chroma_server")
def chroma_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A ``chroma run --path <tmp> --port <free port>`` server for the session."""
    pytest.importorskip("chromadb", reason="chromadb is not installed (mars-memory[chroma])")
    cli = _chroma_cli()
    if cli is None:
        pytest.skip("the `chroma` CLI is not installed next to this Python "
                    "(pip install 'mars-memory[chroma]')")
    base = tmp_path_factory.mktemp("chroma-server")
    server = ChromaServer("127.0.0.1", _free_port(), base / "data", base / "server.log")
    with server.log.open("wb") as log:
        proc = subprocess.Popen(
            [cli, "run", "--path", str(server.path), "--host", server.host,
             "--port", str(server.port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        _wait(proc, server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
