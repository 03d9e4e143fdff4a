"""Child interpreters forked from a preloaded one, for tests whose children test what a
process does to a store (killed writers, crash loops, lock holders), not how it starts.

``python child.py`` spends ~0.6 s of CPU importing ``mars_core`` before its first line
runs, ~1.1 s with ``chromadb``, and the crash, kill and lock tests start many such
children. :func:`popen` and :func:`run` take the arguments a test would give
:class:`subprocess.Popen` — ``[sys.executable, script | -c code | -m module, *args]`` —
and start the child from :mod:`multiprocessing`'s fork server instead, which imported
those modules once (one server per test process). The child is a new process: its own
pid, files and locks; a signal reaches it alone. It runs its code as ``python`` would:
as ``__main__``, with ``sys.argv``, ``sys.path`` (the script's directory or the working
directory first, then ``PYTHONPATH``, then the interpreter's own), the environment and
working directory given, its standard streams on the pipes, files or terminal asked
for, non-daemon threads joined and ``atexit`` run at the end, and its exit status (or
the signal that ended it, negative) as ``returncode``.

What differs from a fresh interpreter: the preloaded modules are imported already (under
the fork server's environment, not the child's) and the hash seed is the fork server's
(an environment that asks for another ``PYTHONHASHSEED`` is refused).
Tests of what a fresh process does — a first run, lazy imports, the first quick start
as a reader runs it, start-up time — start real interpreters with :mod:`subprocess`.
"""

from __future__ import annotations

import atexit
import functools
import io
import json
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
import threading
import traceback
import types
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import IO, Any

__all__ = ["PRELOAD", "Child", "popen", "run"]

PRELOAD = ["mars_core.store", "mars_core.cli", "mars_core.index.chroma",
           "mars_core.storage.postgres", "chromadb", "psycopg"]
"""What the fork server imports before it forks (a module that is missing is skipped)."""

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(PRELOAD)
PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL
Stream = int | IO[Any] | None


@functools.cache
def _interpreter_path() -> tuple[str, ...]:
    """``sys.path`` of a fresh interpreter, past its first entry and ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                         env=env, cwd="/", capture_output=True, text=True, check=True)
    return tuple(json.loads(out.stdout)[1:])


def _stream(fd: int) -> io.TextIOWrapper:
    """Standard stream ``fd`` as the interpreter opens it (stderr line-buffered)."""
    tty = os.isatty(fd)
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding="utf-8",
                            errors="backslashreplace" if fd == 2 else "strict",
                            line_buffering=tty or fd == 2)


def _execute(argv: Sequence[str], cwd: str, base: Sequence[str]) -> None:
    """Run ``argv`` (past the interpreter) as ``__main__``, as ``python`` would
    (``base``: the interpreter's own ``sys.path``)."""
    flag, target, rest = argv[1], argv[2] if len(argv) > 2 else "", list(argv[3:])
    entries = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if flag == "-c":
        sys.argv, sys.path[:] = ["-c", *rest], ["", *entries, *base]
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(target, "<string>", "exec"), main.__dict__)
    elif flag == "-m":
        sys.argv, sys.path[:] = ["-m", *rest], [cwd, *entries, *base]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [flag, *argv[2:]]  # the script as named, relative to ``cwd``
        sys.path[:] = [os.path.dirname(os.path.realpath(flag)), *entries, *base]
        runpy.run_path(flag, run_name="__main__")


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _child(argv: Sequence[str], env: Mapping[str, str], cwd: str,
           streams: Sequence[Connection], base: Sequence[str]) -> None:
    """The fork server's child: takes its streams, environment and directory, runs
    ``argv`` and ends as the interpreter would (never returns)."""
    for fd, conn in enumerate(streams):
        os.dup2(conn.fileno(), fd)
        conn.close()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.stdin, sys.stdout, sys.stderr = _stream(0), _stream(1), _stream(2)
    status, interrupted = 0, False
    try:
        _execute(argv, cwd, base)
    except SystemExit as exc:
        status = _exit_status(exc)
    except KeyboardInterrupt:
        traceback.print_exc()
        status, interrupted = 1, True
    except BaseException:
        traceback.print_exc()
        status = 1
    for thread in threading.enumerate():  # the interpreter waits for these at exit
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if interrupted:  # as the interpreter ends on an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


class Child:
    """A child started by :func:`popen`: the parts of :class:`subprocess.Popen` the tests
    use (``pid``, ``stdin``/``stdout``/``stderr``, ``returncode``, ``poll``, ``wait``,
    ``communicate``, ``send_signal``, ``kill``)."""

    def __init__(self, args: Sequence[str], process: Any, stdin: IO[Any] | None,
                 stdout: IO[Any] | None, stderr: IO[Any] | None) -> None:
        self.args = list(args)
        self.process = process
        self.pid: int = process.pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    @property
    def returncode(self) -> int | None:
        code = self.process.exitcode
        return None if code is None else int(code)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        code = self.returncode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: Any = None, timeout: float | None = None
                    ) -> tuple[Any, Any]:
        """Send ``input``, close stdin, read both outputs to their end and wait."""
        got: dict[str, Any] = {}

        def feed() -> None:
            if self.stdin is not None:
                try:
                    if input:
                        self.stdin.write(input)
                    self.stdin.close()
                except BrokenPipeError:
                    pass

        def drain(name: str, stream: IO[Any] | None) -> None:
            if stream is not None:
                got[name] = stream.read()
                stream.close()

        threads = [threading.Thread(target=feed, daemon=True),
                   threading.Thread(target=drain, args=("out", self.stdout), daemon=True),
                   threading.Thread(target=drain, args=("err", self.stderr), daemon=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout)
            if t.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        self.wait(timeout)
        return got.get("out"), got.get("err")



def _ends(spec: Stream, fd: int, text: bool, out: int | None = None
          ) -> tuple[int, IO[Any] | None]:
    """(the child's descriptor for stream ``fd``, the parent's end of a pipe or None)."""
    if spec == STDOUT:
        assert out is not None
        return os.dup(out), None
    if spec == PIPE:
        read, write = os.pipe()
        mine, theirs = (write, read) if fd == 0 else (read, write)
        mode = ("w" if fd == 0 else "r") + ("" if text else "b")
        end: IO[Any] = (open(mine, mode, encoding="utf-8") if text  # noqa: SIM115
                        else open(mine, mode))  # noqa: SIM115
        return theirs, end
    if spec == DEVNULL:
        return os.open(os.devnull, os.O_RDWR), None
    if spec is None:
        return os.dup(fd), None
    return os.dup(spec if isinstance(spec, int) else spec.fileno()), None


def popen(args: Sequence[str], *, stdin: Stream = None, stdout: Stream = None,
          stderr: Stream = None, text: bool = False, env: Mapping[str, str] | None = None,
          cwd: str | os.PathLike[str] | None = None) -> Child:
    """Start ``args`` (``[sys.executable, ...]``) as a fork server's child."""
    if len(args) < 2 or args[0] != sys.executable or (
            args[1].startswith("-") and args[1] not in ("-c", "-m")):
        raise ValueError(f"not a python script, -c or -m command: {args[:2]!r}")
    seed = (env or {}).get("PYTHONHASHSEED", os.environ.get("PYTHONHASHSEED"))
    if seed != os.environ.get("PYTHONHASHSEED"):  # what the fork server started with
        raise ValueError("a fork server's child keeps the server's hash seed: "
                         f"PYTHONHASHSEED={seed!r} cannot be honoured")
    fd_in, end_in = _ends(stdin, 0, text)
    fd_out, end_out = _ends(stdout, 1, text)
    fd_err, end_err = _ends(stderr, 2, text, out=fd_out)
    conns = [Connection(fd) for fd in (fd_in, fd_out, fd_err)]
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    process = _CTX.Process(target=_child, daemon=True, args=(
        list(args), dict(os.environ if env is None else env), where, conns,
        _interpreter_path()))
    try:
        process.start()
    finally:
        for conn in conns:  # the child has its own copies now
            conn.close()
    return Child(args, process, end_in, end_out, end_err)


def run(args: Sequence[str], *, input: Any = None, capture_output: bool = False,
        text: bool = False, timeout: float | None = None, check: bool = False,
        env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
        stdout: Stream = None, stderr: Stream = None) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run` for a fork server's child."""
    if capture_output:
        stdout = stderr = PIPE
    child = popen(args, stdin=PIPE if input is not None else None, stdout=stdout,
                  stderr=stderr, text=text, env=env, cwd=cwd)
    try:
        out, err = child.communicate(input, timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise
    done = subprocess.CompletedProcess(list(args), child.wait(), out, err)
    if check:
        done.check_returncode()
    return done
