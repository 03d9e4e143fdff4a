"""What the ``mars`` commands share (:mod:`mars_core.cli`, :mod:`mars_core.bench.cli`): exit
codes, options, output, progress and errors."""

from __future__ import annotations

import contextvars
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from mars_core.errors import MarsError, NotFoundError, ValidationError
from mars_core.progress import ProgressFn, combine, progress_bar, progress_lines

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_USAGE", "IndexOpt", "JsonOpt", "NamespaceOpt",
           "OutOpt", "PathOpt", "ProgressOpt", "console", "err_console"]

EXIT_FAILURE = 1
"""The command was right but could not be done (a store another process writes, a
damaged store, a server out of reach, a broken audit chain, a declined erasure)."""
EXIT_USAGE = 2
"""What the command was given is wrong: an unknown option, a value an option refuses,
a ``--path`` that holds no store, an id or a file that names nothing, a file whose
content the command refuses (a bad import record)."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C (128 + SIGINT, the shells' convention)."""

console = Console()
err_console = Console(stderr=True)


def _store_path(value: str) -> str:
    """``--path``: a directory or a URL; a NUL byte is neither (a usage error)."""
    if "\x00" in value:
        raise typer.BadParameter("a store path or URL cannot contain a NUL byte")
    return value


PathOpt = Annotated[str, typer.Option(
    "--path", "-p", envvar="MARS_PATH", callback=_store_path,
    help="store directory or postgresql:// URL ($MARS_PATH or ./mars_data)")]
NamespaceOpt = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="namespace (default: the store's default namespace; "
    "`mars stats` lists them)")]
IndexOpt = Annotated[str, typer.Option(
    "--index", envvar="MARS_INDEX", help="the vector index: auto (the store's own), chroma, "
    "qdrant or numpy (embedded; rebuilt from the records when new), or a server: "
    "chroma://HOST:PORT, qdrant+http://HOST:PORT or qdrant+https://HOST:PORT (API key "
    "from $QDRANT_API_KEY); a postgresql:// store takes auto/numpy or a server")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="directory for the results")]
ProgressOpt = Annotated[bool | None, typer.Option(
    "--progress/--no-progress", help="progress on standard error: a bar on a terminal, "
    "plain lines otherwise (default: a bar only when it is a terminal)")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="print one JSON object on standard output instead (schema: docs/cli.md, "
    "JSON output)")]

_OBSERVER: contextvars.ContextVar[ProgressFn | None] = contextvars.ContextVar(
    "mars_cli_progress", default=None)
"""The ``progress`` callback given to :func:`main` (for a program that embeds the CLI)."""


def _shown(flag: bool | None) -> bool:
    """Whether to show progress: as ``--progress/--no-progress`` says, else when standard
    error is a terminal."""
    return flag if flag is not None else sys.stderr.isatty()


@contextmanager
def _progress(flag: bool | None, title: str) -> Iterator[ProgressFn | None]:
    """The progress callback of a long command: a bar on standard error when it is a
    terminal, plain lines when it is not and ``--progress`` asks, and the observer given
    to :func:`main`; None when none of them."""
    if not _shown(flag):
        yield _OBSERVER.get()
        return
    if not sys.stderr.isatty():
        with progress_lines(title=title) as lines:
            yield combine(lines, _OBSERVER.get())
        return
    with progress_bar(Console(stderr=True), title=title) as bar:
        yield combine(bar, _OBSERVER.get())


@contextmanager
def _bench_run(flag: bool | None, title: str) -> Iterator[ProgressFn | None]:
    """:func:`_progress` for a benchmark; its errors (``MarsError``) end the command."""
    try:
        with _progress(flag, title) as bar:
            yield bar
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc


def _say(text: str, *, lead: str = "", style: str = "", to: Console | None = None) -> None:
    """Print a line (or lines) of output on ``to`` (default: standard output): what a
    store holds or a user typed may be in it, so nothing in it is read as markup, and
    every character a terminal would act on is shown escaped
    (:func:`~mars_core.io.inspect.printable`); ``lead``, in ``style``, is ours."""
    from mars_core.io.inspect import printable

    line = Text(lead, style=style)
    line.append(printable(text))
    (to or console).print(line, highlight=False, soft_wrap=True)


def _code(exc: BaseException | None) -> int:
    """The exit code of a command ended by ``exc`` (None: a usage error found here)."""
    if exc is None or isinstance(exc, ValidationError | NotFoundError):
        return EXIT_USAGE  # what it was given: an option, a path, an id, a file's content
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_FAILURE


def _fail(message: str, exc: BaseException | None = None) -> typer.Exit:
    """Print ``error: message`` on standard error (escaped as :func:`_say` does); the
    Exit to raise, whose code :func:`_code` takes from ``exc`` (none: a usage error)."""
    _say(message, lead="error: ", style="bold red", to=err_console)
    return typer.Exit(code=_code(exc))


def _emit(payload: Any) -> None:
    """One JSON object on standard output (``--json``), on one line."""
    typer.echo(json.dumps(payload, ensure_ascii=False, default=str))
