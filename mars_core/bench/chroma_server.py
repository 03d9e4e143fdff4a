"""A real ``chroma run`` server for a benchmark run: started, awaited, stopped.

:func:`chroma_server` runs the ``chroma`` CLI installed next to the running Python (or
on ``PATH``) on a free loopback port with its data in a directory of the caller's,
waits until the server answers its heartbeat, yields where it listens, and terminates
it on exit (killing it if it does not stop within 15 s). It is what ``mars bench
backends`` uses for its ``chroma-http`` rows when no ``CHROMA_HOST`` names a server.

Examples:
    >>> ChromaServer("127.0.0.1", 8123, Path("data"), Path("server.log")).url
    'http://127.0.0.1:8123'

    ``with chroma_server(Path(tmp)) as server: ChromaBackend(host=server.host,
    port=server.port)`` runs a backend against a fresh server.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mars_core.errors import ExtraNotInstalledError, MarsBackendError

__all__ = ["ChromaServer", "chroma_cli", "chroma_server"]

START_TIMEOUT = 60.0
"""Seconds a server has to answer its first heartbeat."""


@dataclass(frozen=True)
class ChromaServer:
    """A running server: where it listens, where it keeps its data and its log."""

    host: str
    port: int
    path: Path
    log: Path

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"


def chroma_cli() -> str | None:
    """The ``chroma`` CLI beside the running Python, else on ``PATH``, else ``None``."""
    beside = Path(sys.executable).parent / "chroma"
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


def _wait(proc: subprocess.Popen[bytes], server: ChromaServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise MarsBackendError(f"`chroma run` exited with {proc.returncode}:\n{tail}")
        if _alive(server.url):
            return
        time.sleep(0.1)
    raise MarsBackendError(f"`chroma run` did not answer its heartbeat within {timeout:.0f} s; "
                           f"see {server.log}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)


@contextlib.contextmanager
def chroma_server(base: Path, *, timeout: float = START_TIMEOUT) -> Iterator[ChromaServer]:
    """A ``chroma run --path base/data --port <free>`` server, stopped on exit.

    Args:
        base: an existing directory for the server's data (``base/data``) and log
            (``base/server.log``); the caller removes it.
        timeout: seconds to wait for the first heartbeat.

    Raises:
        ExtraNotInstalledError: the ``chroma`` CLI is not installed.
        MarsBackendError: the server exited or did not answer in time (its log's tail
            or path is in the message); it is stopped first.
    """
    cli = chroma_cli()
    if cli is None:
        raise ExtraNotInstalledError("chroma", "chromadb")
    server = ChromaServer("127.0.0.1", _free_port(), base / "data", base / "server.log")
    with server.log.open("wb") as log:
        proc = subprocess.Popen(
            [cli, "run", "--path", str(server.path), "--host", server.host,
             "--port", str(server.port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait(proc, server, timeout)
        yield server
    finally:
        _stop(proc)
