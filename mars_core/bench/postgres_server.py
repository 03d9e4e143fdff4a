"""A throwaway PostgreSQL server for tests and benchmarks: initialised, started, stopped.

:func:`postgres_server` runs the server binaries installed on the machine (``initdb`` and
``postgres`` from ``$MARS_PG_BIN``, else ``PATH``, else Debian's
``/usr/lib/postgresql/<version>/bin``, newest first) on a fresh cluster in a temporary
directory: it listens on a Unix socket in that directory and on ``127.0.0.1`` at a free
port, trusts local logins of its one role (``mars``), keeps nothing durable (``fsync``
off: a test server; ``durable=True`` for a benchmark keeps it on), and is stopped (a fast
shutdown) and removed on exit.

PostgreSQL refuses to run as root. Run as root, the cluster belongs to an unprivileged
user instead (:func:`server_user`: ``nobody``, else ``postgres``) and both programs run
as that user (``subprocess`` switches user and group, and drops supplementary groups,
before it starts them); the directory is made in ``/tmp`` so that user can reach it.
Run as anyone else, the server runs as that user.

Examples:
    >>> PostgresServer(Path("/tmp/pg"), 5433, Path("/tmp/pg/data"), Path("/tmp/pg/log")
    ...                ).url("agents", tcp=True)
    'postgresql://mars@127.0.0.1:5433/agents'

    ``with postgres_server() as server: MemoryStore.open(server.url())`` runs a store on
    a fresh server.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from mars_core._env import env
from mars_core.errors import ExtraNotInstalledError, MarsBackendError

__all__ = ["USER", "PostgresServer", "postgres_bin", "postgres_server", "server_user"]

USER = "mars"
"""The server's one role (a superuser of the throwaway cluster)."""

START_TIMEOUT = 60.0
"""Seconds a server has to accept its first connection."""


@dataclass(frozen=True)
class PostgresServer:
    """A running server: its socket directory, port, data directory and log."""

    socket_dir: Path
    port: int
    data: Path
    log: Path

    def url(self, database: str = "postgres", *, tcp: bool = False) -> str:
        """A URL of ``database``: over the Unix socket, or (``tcp``) 127.0.0.1."""
        if tcp:
            return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"
        return (f"postgresql://{USER}@/{database}?host={quote(str(self.socket_dir), safe='')}"
                f"&port={self.port}")


def postgres_bin() -> Path | None:
    """The directory of ``initdb`` and ``postgres``, or ``None`` when not installed."""
    given = env("MARS_PG_BIN")
    if given is not None:
        return Path(given) if (Path(given) / "initdb").exists() else None
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)])
    return versions[-1].parent if versions else None


def server_user() -> pwd.struct_passwd | None:
    """Whom the server runs as: ``None`` (this user) unless this is root, then
    ``nobody`` or else ``postgres``.

    Raises:
        MarsBackendError: root, and neither user exists.
    """
    if os.geteuid() != 0:
        return None
    for name in ("nobody", "postgres"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise MarsBackendError("PostgreSQL refuses to run as root and there is no 'nobody' or "
                           "'postgres' user to run it as; create one (useradd --system "
                           "postgres)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as(user: pwd.struct_passwd | None) -> tuple[int | None, int | None, list[int] | None]:
    """``subprocess``'s ``user``, ``group`` and ``extra_groups`` that run a program as
    ``user`` (no supplementary group), or change nothing (``None``)."""
    if user is None:
        return None, None, None
    return user.pw_uid, user.pw_gid, []


def _wait(proc: subprocess.Popen[bytes], server: PostgresServer, timeout: float) -> None:
    try:
        import psycopg
    except ImportError as exc:
        raise ExtraNotInstalledError("postgres", "psycopg") from exc
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise MarsBackendError(f"`postgres` exited with {proc.returncode}:\n{tail}")
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise MarsBackendError(f"`postgres` accepted no connection within {timeout:.0f} s; see "
                           f"{server.log}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # a fast shutdown: clients are disconnected
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)


@contextlib.contextmanager
def postgres_server(*, timeout: float = START_TIMEOUT,
                    durable: bool = False) -> Iterator[PostgresServer]:
    """A fresh PostgreSQL server in a temporary directory, stopped and removed on exit.

    Args:
        timeout: seconds to wait for its first connection.
        durable: keep the server's defaults, ``fsync`` and ``full_page_writes`` on, so
            that a commit waits for the disk as a production server's does (what a
            benchmark against SQLite's ``synchronous="full"`` needs); by default they
            are off (a test server: faster, nothing survives a crash of the machine).

    Raises:
        ExtraNotInstalledError: no server binaries (``initdb``), or psycopg missing.
        MarsBackendError: ``initdb`` failed, or the server exited or did not accept a
            connection in time (the log's tail or path is in the message).
    """
    binaries = postgres_bin()
    if binaries is None:
        raise ExtraNotInstalledError("postgres", "the PostgreSQL server (initdb)")
    user = server_user()
    uid, gid, groups = _as(user)
    base = Path(tempfile.mkdtemp(prefix="mars-pg-", dir="/tmp" if user else None))
    try:
        if user is not None:
            os.chown(base, user.pw_uid, user.pw_gid)
        server = PostgresServer(base, _free_port(), base / "data", base / "server.log")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C",
               "TZ": "UTC"}
        done = subprocess.run(
            [str(binaries / "initdb"), "-D", str(server.data), "-U", USER, "-A", "trust",
             "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
            capture_output=True, text=True, env=env, cwd=base, check=False, user=uid,
            group=gid, extra_groups=groups)
        if done.returncode != 0:
            raise MarsBackendError(f"initdb failed ({done.returncode}): {done.stderr[-2000:]}")
        with server.log.open("wb") as log:
            if user is not None:
                os.chown(server.log, user.pw_uid, user.pw_gid)
            proc = subprocess.Popen(
                [str(binaries / "postgres"), "-D", str(server.data), "-k", str(base),
                 "-p", str(server.port), "-c", "listen_addresses=127.0.0.1",
                 *([] if durable else ["-c", "fsync=off", "-c", "full_page_writes=off"]),
                 "-c", "max_connections=300"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=base, user=uid, group=gid, extra_groups=groups)
        try:
            _wait(proc, server, timeout)
            yield server
        finally:
            _stop(proc)
    finally:
        shutil.rmtree(base, ignore_errors=True)
