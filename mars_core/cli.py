"""The ``mars`` command line (typer + rich).

Every command that reads a store takes ``--path`` (default: ``$MARS_PATH`` or
``./mars_data``, the embedded default of :meth:`MemoryStore.open`): a directory, or a
``postgresql://`` URL as :meth:`MemoryStore.open` takes it (messages show it without
its password). A path that holds no store is an error that says how to create one; it
is never created by a read. ``mars copy SOURCE DESTINATION`` moves a store, SQLite to
PostgreSQL included (:mod:`mars_core.transfer`).

Long commands (``import``, ``reindex``, ``reembed``, ``copy``, ``bench ...``) draw a
progress bar on standard error when it is a terminal and stay quiet otherwise;
``--progress`` asks for progress anyway (plain lines when standard error is not a
terminal), ``--no-progress`` for none. A program that runs the command line in its own
process can follow the same events with ``main(argv, progress=callback)``
(:mod:`mars_core.progress`).

The commands that read (``inspect``, ``explain``, ``stats``, ``verify``, ``erase``'s
receipt, the benchmarks' summaries) take ``--json``: one JSON object on standard output,
in the schema docs/cli.md documents; messages and errors go to standard error. Exit
codes: 0 done, 1 failed (the command was right but could not be done), 2 usage (what it
was given is wrong), 130 interrupted (Ctrl-C).

Examples:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mars_core import __version__
from mars_core.errors import MarsError, NotFoundError, ValidationError
from mars_core.progress import ProgressFn, combine, progress_bar, progress_lines

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main"]

EXIT_FAILURE = 1
"""The command was right but could not be done (a store another process writes, a
damaged store, a server out of reach, a broken audit chain, a declined erasure)."""
EXIT_USAGE = 2
"""What the command was given is wrong: an unknown option, a value an option refuses,
a ``--path`` that holds no store, an id or a file that names nothing, a file whose
content the command refuses (a bad import record)."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C (128 + SIGINT, the shells' convention)."""

app = typer.Typer(
    name="mars", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's wrapped lines join into one paragraph
    help="mars-memory: memory for LLM agents that forgets on purpose. Inspect, explain, "
         "erase, export and verify a store; run the demo and the benchmarks.\n\n"
         "Every store command reads the store at --path (default: $MARS_PATH, else "
         "./mars_data): a directory or a postgresql:// URL. New here? Run "
         "`mars demo --fresh`, then `mars inspect --path mars_data/demo -n memories/maya`.",
)
bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                        help="Run a benchmark (results under --out).")
app.add_typer(bench_app, name="bench")
console = Console()
err_console = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mars-memory {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="print the version (mars-memory X.Y.Z) and exit")] = False) -> None:
    """mars-memory's command line (the group's options)."""

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
DEFAULT_PATH = "mars_data"
TEXT_WIDTH = 60  # characters of redacted text in a table row (--json: the whole text)
IMPORT_KINDS = ("jsonld", "mem0", "langgraph")


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
    (:func:`~mars_core.inspect.printable`); ``lead``, in ``style``, is ours."""
    from mars_core.inspect import printable

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


def _where(path: str) -> str:
    """How messages name the store at ``path``: its directory, or its URL without the
    password."""
    from mars_core.storage.postgres import is_postgres_url, shown_url

    if not is_postgres_url(path):
        return path
    try:
        return shown_url(path)[0]
    except MarsError:  # a malformed URL: opening it says what is wrong
        return "the PostgreSQL store"


def _holds_store(path: str) -> bool:
    """Whether ``path`` (a directory or a ``postgresql://`` URL) holds a store; creates
    nothing.

    Raises:
        MarsError: an old layout, a bad URL, a server that cannot be reached.
    """
    from mars_core.layout import holds_store, refuse_old_layout
    from mars_core.storage.postgres import holds_store as holds_pg
    from mars_core.storage.postgres import is_postgres_url

    if is_postgres_url(path):
        return holds_pg(path)
    refuse_old_layout(Path(path))
    return Path(path).is_dir() and holds_store(Path(path))


def _no_store(path: str) -> str:
    """The message for a path that holds no store: how to make one."""
    from mars_core.storage.postgres import is_postgres_url

    where = _where(path)
    if is_postgres_url(path):
        return (f"no store at {where}. Create one with `MemoryStore.open(URL)` in Python, "
                "copy one there with `mars copy DIR URL`, or pass another --path (the "
                "schema is ?schema=NAME, default mars).")
    return (f"no store at {where}. Create one with `mars demo --path {where}` or "
            f"`MemoryStore.open({where!r})` in Python, or pass --path.")


@contextmanager
def _open(path: str, *, read_only: bool = False, index: str = "auto") -> Iterator[Any]:
    """Open an existing store (a directory or a ``postgresql://`` URL; ``read_only``: to
    read it, writing nothing) with the ``--index`` given, or exit with a message that
    says what to do."""
    from mars_core.store import MemoryStore

    try:
        if not _holds_store(path):  # never create one here
            raise _fail(_no_store(path))
        store = MemoryStore.open(path, read_only=read_only, index=_index(index))
    except MarsError as exc:
        raise _fail(f"cannot open the store at {_where(path)}: {exc}", exc) from exc
    try:
        yield store
    finally:
        store.close()


def _index(value: str) -> Any:
    """What ``--index`` names: a kind for ``MemoryStore.open``, or a server's index."""
    from mars_core.layout import index_from_url

    if "://" not in value:
        return value  # open() refuses an unknown kind with the kinds it takes
    try:
        return index_from_url(value)
    except MarsError as exc:
        raise _fail(f"--index {value!r}: {exc}") from exc


# --- store commands ----------------------------------------------------------------------


@app.command()
def demo(path: Annotated[str, typer.Option(
             "--path", help="demo store directory (a directory of its own: a "
             "postgresql:// store takes `mars copy` of it)")] = "mars_data/demo",
         fresh: Annotated[bool, typer.Option(
             help="delete the demo store first (only a directory the demo made)")] = False,
         fifa: Annotated[bool, typer.Option(help="end with a quick FiFA table")] = True) -> None:
    """Play a multi-session conversation through a LangGraph agent and show what is
    remembered, decayed, summarised, forgotten and why, an erasure and its receipt.

    No API key, no network: the model is a deterministic fake that answers only by
    quoting the memories recalled for it. Afterwards, look around with
    `mars inspect --path mars_data/demo -n memories/maya` (add `--status archived`).
    """
    from mars_core import demo as demo_mod
    from mars_core.storage.postgres import is_postgres_url

    if is_postgres_url(path):
        raise _fail(f"the demo plays into a directory of its own (--fresh deletes it), not "
                    f"{_where(path)}: run it, then copy its store with `mars copy "
                    f"mars_data/demo URL`")
    if Path(path).exists() and not Path(path).is_dir():
        raise _fail(f"--path {path} is a file; the demo writes its store to a directory")
    try:
        code = demo_mod.main(["--path", path] + (["--fresh"] if fresh else [])
                             + ([] if fifa else ["--no-fifa"]))
    except (MarsError, OSError) as exc:
        raise _fail(f"the demo cannot use {path}: {exc}", exc) from exc
    raise typer.Exit(code)


@app.command()
def inspect(path: PathOpt = DEFAULT_PATH, namespace: NamespaceOpt = None,  # noqa: PLR0917
            status: Annotated[str, typer.Option(
                help="active (held in memory) or archived (forgotten, still explainable)")]
            = "active",
            limit: Annotated[int, typer.Option(min=1, help="rows to show")] = 50,
            show_text: Annotated[bool, typer.Option(
                "--text/--no-text", help="show (redacted) text")] = True,
            as_json: JsonOpt = False) -> None:
    """A table of memories, newest first: id, type, DMF tier, decayed score Ω_eff,
    sensitivity, tokens, uses and the redacted text. Nothing is written or counted as use."""
    from dataclasses import asdict

    from mars_core.inspect import inspect_rows, printable

    if status not in ("active", "archived"):
        raise _fail(f"--status must be active or archived, not {status!r}")
    with _open(path, read_only=True) as store:
        try:
            rows = inspect_rows(store, namespace=namespace, status=status, limit=limit,
                                width=None if as_json else TEXT_WIDTH)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
        ns = store.config.default_namespace if namespace is None else namespace
        known = store.namespaces()
    if as_json:
        memories = [asdict(r) | ({} if show_text else {"text": None}) for r in rows]
        _emit({"store": _where(path), "namespace": ns, "status": status,
               "memories": memories, "namespaces": known})
        return
    if not rows and ns not in known:
        _say(_namespace_hint(ns, known, path, default=namespace is None))
        return
    table = Table(title=Text(printable(f"{len(rows)} {status} memories of namespace {ns!r} "
                                       f"in {_where(path)}")))
    for col in ("id", "type", "tier", "Ω_eff", "sens.", "tokens", "uses"):
        table.add_column(col, justify="right" if col in {"Ω_eff", "sens.", "tokens", "uses"}
                         else "left")
    if show_text:
        table.add_column("text (redacted)")
    for r in rows:
        cells = [r.id[:8], r.type, r.tier, f"{r.score:.3f}", f"{r.sensitivity:.2f}",
                 str(r.weight), str(r.access_count)]
        table.add_row(*(Text(printable(c, lines=False))
                        for c in [*cells, *([r.text] if show_text else [])]))
    console.print(table)


def _namespace_hint(ns: str, known: list[str], path: str, *, default: bool) -> str:
    """What to type when ``ns`` holds nothing: the namespaces that do."""
    which = f"the default namespace {ns!r}" if default else f"namespace {ns!r}"
    where = _where(path)
    if not known:
        return f"{which} holds no memories: the store at {where} is empty."
    shown = ", ".join(known[:20]) + (f" (and {len(known) - 20} more)" if len(known) > 20 else "")
    arg = f"'{where}'" if "://" in where else where
    return (f"{which} holds no memories in {where}. Namespaces with memories: {shown}. "
            f"Show one with: mars inspect --path {arg} -n {known[0]}")


@app.command()
def explain(node_id: Annotated[str, typer.Argument(
                help="a memory id, or a unique prefix of 4+ characters (`mars inspect` "
                "shows 8)")],
            path: PathOpt = DEFAULT_PATH, namespace: Annotated[str | None, typer.Option(
                "--namespace", "-n", help="the memory's namespace (default: search every "
                "namespace)")] = None, as_json: JsonOpt = False) -> None:
    """Why a memory is where it is: provenance chain and audit rationales (no text)."""
    with _open(path, read_only=True) as store:
        ns, node_id = _resolve_id(store, node_id, namespace)
        explanation = store.explain(node_id, namespace=ns)
    if as_json:
        _emit(explanation.as_dict())
    else:
        _say(explanation.render())


@app.command()
def erase(path: PathOpt = DEFAULT_PATH,  # noqa: PLR0917 (typer options are parameters)
          node_id: Annotated[str | None, typer.Option(
              "--id", help="one memory (an id or a unique prefix)")] = None,
          entity: Annotated[str | None, typer.Option(
              help="every memory mentioning this name (whole words), and those naming the "
              "person by an unambiguous part of it (Mr Doe, Jane)")] = None,
          exact: Annotated[bool, typer.Option(
              "--exact", help="with --entity: the whole name only, not its parts")] = False,
          conversation: Annotated[str | None, typer.Option(
              help="every memory from this conversation id")] = None,
          namespace: Annotated[str | None, typer.Option(
              "--namespace", "-n", help="where to erase (default: the store's default "
              "namespace); given alone: the WHOLE namespace")] = None,
          yes: Annotated[bool, typer.Option("--yes", help="do not ask for confirmation")]
          = False,
          index: IndexOpt = "auto", as_json: JsonOpt = False) -> None:
    """Right to be forgotten: erase memories and what derives from them; print the receipt.

    Give one of --id, --entity, --conversation; --namespace alone erases the namespace.
    Memories that may name an erased person by a part of the name shared with someone
    else are kept and listed in the receipt, for review.
    """
    if sum(x is not None for x in (node_id, entity, conversation)) > 1 or \
            (node_id is entity is conversation is namespace is None):
        raise _fail("give exactly one of --id, --entity, --conversation (or only --namespace "
                    "to erase a whole namespace)")
    if not yes and not typer.confirm("Erasure cannot be undone. Continue?", err=True):
        err_console.print("nothing erased", highlight=False)
        raise typer.Exit(EXIT_FAILURE)
    with _open(path, index=index) as store:
        if node_id is not None:
            namespace, node_id = _resolve_id(store, node_id, namespace)
        try:
            receipt = store.erase(node_id, entity=entity, conversation=conversation,
                                  namespace=namespace, partial=not exact)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
    if as_json:
        _emit(receipt.as_dict())
    else:
        _say(receipt.render())


@app.command()
def export(out: Annotated[Path, typer.Argument(help="JSON-LD file to write")],
           path: PathOpt = DEFAULT_PATH) -> None:
    """Export the whole store (memories, edges, archive) as JSON-LD; `mars import` reads it."""
    with _open(path, read_only=True) as store:
        try:
            store.export_jsonld(out)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
    _say(f"exported {_where(path)} to {out}")


@app.command(name="import")
def import_(source: Annotated[Path, typer.Argument(  # noqa: PLR0917 (typer options)
                help="the file: a `mars export` JSON-LD file, or a mem0 / LangGraph JSON "
                "dump with --from")],
            path: PathOpt = DEFAULT_PATH,
            from_: Annotated[str, typer.Option(
                "--from", help="jsonld (a mars export), mem0 or langgraph (a JSON dump)")]
            = "jsonld",
            namespace: Annotated[str | None, typer.Option(
                "--namespace", "-n", help="put everything in this namespace (mem0/langgraph "
                "dumps; default: each record's user_id / namespace tuple; JSON-LD keeps its "
                "own)")] = None,
            index: IndexOpt = "auto", progress: ProgressOpt = None,
            skip_erased: Annotated[bool, typer.Option(
                "--skip-erased", help="leave out the memories of a JSON-LD export that "
                "were erased from this store since (default: refuse the file)")]
            = False) -> None:
    """Import memories into the store at --path (created when missing).

    All or nothing: every record is checked before the first write, and all are written
    in one transaction. A bad record, an error or an interruption (Ctrl-C, a kill, a
    crash) imports nothing; after an error or Ctrl-C, a store this command created for
    the import is removed again (after a kill it stays, empty).

    Safe to run again: records imported before (the same id and text, in the same
    namespace; a JSON-LD memory under its id) are skipped, so a re-run after an
    interruption, or of the same file, stores each record once.

    A JSON-LD export holding memories erased from this store since (by id, or the same
    text in the same namespace) is refused, so restoring a backup never undoes an
    erasure; --skip-erased imports the rest.
    """
    from mars_core import importers
    from mars_core.store import MemoryStore

    if not source.is_file():
        raise _fail(f"no file {source}")
    if from_ not in IMPORT_KINDS:
        raise _fail(f"unknown import kind {from_!r}: use --from {', '.join(IMPORT_KINDS)}")
    created = _created_by_open(path)
    before = after = 0
    where = _where(path)
    try:
        with _progress(progress, "import") as bar, \
                MemoryStore.open(path, index=_index(index)) as store:
            before = after = store.stats()["audit_events"]
            try:
                done = importers.run_import(store, source, kind=from_, namespace=namespace,
                                            progress=bar, skip_erased=skip_erased)
            finally:
                after = store.stats()["audit_events"]
    except (MarsError, KeyboardInterrupt) as exc:
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        if after != before:  # the import had committed before the interruption
            raise _fail(f"{what} after the import was written: run `mars import` again to "
                        "see that every record is there", exc) from exc
        undo = "; nothing was imported"
        if created is not None and _remove_created(path, created):
            undo += f", so the new store at {where} was removed again"
        raise _fail(f"{what}{undo}", exc) from exc
    why = "already there (imported before) or erased here" if skip_erased \
        else "already there (imported before)"
    skipped = f"; {done.skipped} records {why} were skipped" if done.skipped else ""
    _say(f"imported {done.imported} memories from {source} ({from_}) into "
         f"{where}{skipped}")


def _created_by_open(where: str) -> tuple[Path, bool] | None:
    """What opening a store at ``where`` would create: ``(the topmost missing directory on
    the way to it, False)``, or ``(path, True)`` when ``path`` is an empty directory (only
    its contents are new); None when something is already there (nothing of it may go).
    A ``postgresql://`` URL: ``(Path(), False)`` when its schema holds no store yet."""
    from mars_core.storage.postgres import holds_store, is_postgres_url

    if is_postgres_url(where):
        try:
            return None if holds_store(where) else (Path(), False)
        except MarsError:
            return None  # unreachable or malformed: the open says so
    path = Path(where)
    if path.is_dir():
        return None if any(path.iterdir()) else (path, True)
    if path.exists():
        return None
    top = path
    while not top.parent.exists():
        top = top.parent
    return top, False


def _remove_created(path: str, created: tuple[Path, bool]) -> bool:
    """Remove what :func:`_created_by_open` found missing (only that); a store on
    PostgreSQL only while it holds nothing but its manifest. Whether it was removed."""
    import shutil

    from mars_core.storage.postgres import discard_empty_store, is_postgres_url

    if is_postgres_url(path):
        try:
            return discard_empty_store(path)
        except MarsError:
            return False
    where, existed = created
    if existed:  # an empty directory before: empty it again, keep it
        for child in where.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
    else:
        shutil.rmtree(where, ignore_errors=True)
    return True


@app.command()
def verify(path: PathOpt = DEFAULT_PATH, head: Annotated[str | None, typer.Option(
        "--head", help="a head printed by an earlier `mars verify` (keep it outside the "
        "store): the trail up to it must be unchanged")] = None,
        as_json: JsonOpt = False) -> None:
    """Check the audit log's HMAC hash chain, event by event (exit code 1 if broken), and
    print its head to keep. A store created with ``audit_key=`` needs ``$MARS_AUDIT_KEY``."""
    with _open(path, read_only=True) as store:
        try:
            report = store.verify(expected_head=head)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
        current = store.audit.head
    if as_json:
        _emit({"ok": report.ok, "checked": report.checked,
               "first_bad_seq": report.first_bad_seq, "reason": report.reason or None,
               "rows": report.rows, "sealed": report.sealed,
               "head": current, "anchored": head is not None})
    elif report.ok:
        rows = (f", {report.rows} memory rows match the audit's record of them; recorded "
                "heads and the namespace list sealed") if report.sealed else \
            " (rows and seals not checked: a writer's next open brings this store under them)"
        _say(f"audit chain ok: {report.checked} events verified{rows}"
             f"{' (the anchored head holds)' if head else ''}\nhead: {current}")
    else:
        where = f" at event #{report.first_bad_seq}" \
            if report.first_bad_seq is not None else ""
        _say(f"{where}: {report.reason}", lead="audit chain BROKEN", style="bold red")
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def migrate(path: PathOpt = DEFAULT_PATH) -> None:
    """Bring a store's record schema to this version's. PostgreSQL: run it once after
    an upgrade, with the store's other processes stopped (an open refuses an older
    schema and names this command); SQLite: every open does it too. A current schema is
    left as it is."""
    from mars_core.layout import RECORDS_FILE
    from mars_core.storage import postgres, sqlite

    where = _where(path)  # never a URL with its password
    try:
        if postgres.is_postgres_url(path):
            before, after = postgres.migrate(path)
        else:
            before, after = sqlite.migrate(Path(path) / RECORDS_FILE)
    except MarsError as exc:
        raise _fail(f"cannot migrate {where}: {exc}", exc) from exc
    if before == after:
        _say(f"{where}: schema {after} is current; nothing to do")
    else:
        _say(f"{where}: migrated the schema from {before} to {after}")


@app.command()
def copy(source: Annotated[str, typer.Argument(
             help="the store to copy: a directory or a postgresql:// URL (read only)")],
         destination: Annotated[str, typer.Argument(
             help="where to: a postgresql:// URL (?schema=NAME) or a directory that holds "
             "no store")],
         index: IndexOpt = "auto", progress: ProgressOpt = None) -> None:
    """Copy a whole store to a place that holds none, SQLite to PostgreSQL included:
    memories and vectors, edges, the audit trail, each namespace's state, the counter and
    the manifest (the same store id: the same audit key).

    One transaction on the destination: an error or an interruption copies nothing. A
    destination that holds a store is refused. Afterwards the copy is opened with
    --index (its index is built from the records) and checked: its audit trail verifies
    up to the source's head (printed), and its counts equal the source's."""
    from mars_core.transfer import copy_store

    try:
        with _progress(progress, "copy") as bar:
            done = copy_store(source, destination, index=index, progress=bar)
    except MarsError as exc:
        raise _fail(f"cannot copy {_where(source)} to {_where(destination)}: {exc}",
                    exc) from exc
    _say(f"copied {done.source} to {done.destination}: {done.memories} memories in "
         f"{done.namespaces} namespaces, {done.edges} edges, {done.audit_events} "
         f"audit events; the copy verifies up to the source's head\nhead: "
         f"{done.head}\nindex: {done.index}\naudit key: {done.key}")


@app.command()
def stats(path: PathOpt = DEFAULT_PATH, as_json: JsonOpt = False) -> None:
    """Record store, index, embedder, policy and per-namespace occupancy, as JSON
    (indented; with --json on one line, uncoloured, for a program)."""
    with _open(path, read_only=True) as store:
        report = store.stats()
    if as_json:
        _emit(report)
    else:
        console.print_json(json.dumps(report, default=str), ensure_ascii=True)


@app.command()
def mcp(path: PathOpt = DEFAULT_PATH,  # noqa: PLR0917 (typer options are parameters)
        namespace: Annotated[str | None, typer.Option(
            "--namespace", "-n", help="the one namespace served (default: the store's "
            "default namespace); no tool reaches another")] = None,
        transport: Annotated[str, typer.Option(
            help="stdio (the MCP client starts this command) or http (streamable HTTP at "
            "http://HOST:PORT/mcp)")] = "stdio",
        host: Annotated[str, typer.Option(
            help="http: the address to listen on (default: this machine only)")]
        = "127.0.0.1",
        port: Annotated[int, typer.Option(min=1, max=65535, help="http: the port")] = 8000,
        k: Annotated[int, typer.Option(min=1, help="the most memories `search` returns "
                                                   "by default")] = 5,
        budget_tokens: Annotated[int | None, typer.Option(
            min=1, help="the token budget of `recall` and `search` (default: the "
            "store's)")] = None,
        read_only: Annotated[bool, typer.Option(
            "--read-only", help="serve only recall, search and explain, and write nothing "
            "(the store must exist)")] = False,
        index: IndexOpt = "auto") -> None:
    """Serve the store to MCP clients (desktop assistants, IDE agents): the tools remember,
    recall, search, forget, erase and explain, in one namespace.

    Needs the mcp extra (pip install 'mars-memory[mcp]'). With stdio, the client starts
    this command itself (docs/integrations/mcp.md has the configuration); the store at
    --path is created when missing. Stops when the client disconnects (stdio) or on
    Ctrl-C (http).
    """
    from mars_core import mcp_server

    if transport not in ("stdio", "http"):
        raise _fail(f"--transport must be stdio or http, not {transport!r}")
    try:
        mcp_server.serve(path, namespace=namespace, transport=transport,  # type: ignore[arg-type]
                         host=host, port=port, k=k, budget_tokens=budget_tokens,
                         read_only=read_only, index=_index(index))
    except MarsError as exc:
        raise _fail(f"cannot serve {_where(path)}: {exc}", exc) from exc


@app.command()
def reindex(path: PathOpt = DEFAULT_PATH, index: IndexOpt = "auto",
            progress: ProgressOpt = None) -> None:
    """Rebuild the vector index from the records (the index is derived: nothing is lost;
    an interrupted rebuild is finished by the next open or `mars reindex`)."""
    with _open(path, index=index) as store, _progress(progress, "reindex") as bar:
        try:
            n = store.reindex(progress=bar)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
        index = store.stats()["index"]
    _say(f"rebuilt the {index} index of {_where(path)} from its records: {n} "
         "entries")


@app.command()
def reembed(path: PathOpt = DEFAULT_PATH,
            embedder: Annotated[str, typer.Option(
                help="semantic (MiniLM), hashing, or auto (the best installed)")] = "auto",
            index: IndexOpt = "auto", progress: ProgressOpt = None) -> None:
    """Re-embed every memory with another embedder (store.reembed); the manifest follows.
    One transaction: an interrupted run leaves the store on its old embedder."""
    from mars_core.embedders import default_embedder

    if embedder not in {"auto", "semantic", "hashing"}:
        raise _fail("--embedder must be auto, semantic or hashing")
    with _open(path, index=index) as store, _progress(progress, "reembed") as bar:
        try:
            target = default_embedder(embedder)  # type: ignore[arg-type]
            n = store.reembed(target, progress=bar)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
    _say(f"re-embedded {n} memories in {_where(path)} with {target.name}")


def _resolve_id(store: Any, prefix: str, namespace: str | None) -> tuple[str, str]:
    """Namespace and full id from a unique prefix (``mars inspect`` shows 8 characters)."""
    from mars_core.inspect import resolve_id

    try:
        return resolve_id(store, prefix, namespace)
    except MarsError as exc:
        raise _fail(f"{exc}; list ids with `mars inspect`", exc) from exc


# --- benchmarks --------------------------------------------------------------------------


class _Summary:
    """What a benchmark command returns, for ``--json``."""

    value: Any = None


@contextmanager
def _summary(as_json: bool) -> Iterator[_Summary]:
    """With ``--json``: what the benchmark prints goes to standard error, and its summary
    (what its run returns, the dict it writes to its results file) is printed as one
    JSON object on standard output once it ends well."""
    summary = _Summary()
    if not as_json:
        yield summary
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield summary
    _emit(_jsonable(summary.value))


def _jsonable(value: Any) -> Any:
    """A benchmark's result as JSON values (dataclasses and pydantic models as dicts)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


@bench_app.command("store")
def bench_store(*, n: Annotated[int, typer.Option(help="memories of the cost sections")] = 10_000,
                big: Annotated[int, typer.Option(
                    help="memories of the scale section (0 skips it)")] = 1_000_000,
                namespaces: Annotated[int, typer.Option(
                    help="namespaces of the scale section")] = 10_000,
                indexes: Annotated[str, typer.Option(
                    help="comma-separated: chroma, numpy, qdrant")] = "chroma,numpy",
                quick: Annotated[bool, typer.Option(help="a small smoke run")] = False,
                history: Annotated[str, typer.Option(
                    help="sections 5-8 (a long-lived user, many namespaces, the budget "
                         "lifted, the agent loop): 'full', 'medium', 'quick' or 'off'")] = "full",
                out: OutOpt = None, progress: ProgressOpt = None,
                as_json: JsonOpt = False) -> None:
    """What the storage costs: add, retrieve, observe and bulk ingest against raw chromadb,
    open + first retrieve at a million memories, peak RSS, and as a history grows
    (docs/benchmarks/storage.md)."""
    from mars_core.bench import storage
    from mars_core.bench.history import Plan

    kinds = tuple(i.strip() for i in indexes.split(",") if i.strip())
    if not kinds or set(kinds) - {"chroma", "numpy", "qdrant"}:
        raise _fail("--indexes takes chroma, numpy and qdrant, comma-separated")
    try:
        plan = Plan.quick() if quick and history == "full" else Plan.named(history)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    with _summary(as_json) as summary, _progress(progress, "bench store") as bar:
        summary.value = storage.main(out, n=n, big=big, namespaces=namespaces, quick=quick,
                                     indexes=kinds, plan=plan,  # type: ignore[arg-type]
                                     progress=bar)


@bench_app.command("window")
def bench_window(*, n: Annotated[int, typer.Option(min=10, help="memories in the namespace")]
                 = 100_000,
                 days: Annotated[int, typer.Option(min=2, help="days they are written over")]
                 = 100,
                 indexes: Annotated[str, typer.Option(
                     help="comma-separated: chroma, numpy, qdrant")] = "numpy,chroma",
                 quick: Annotated[bool, typer.Option(help="a small smoke run")] = False,
                 out: OutOpt = None, progress: ProgressOpt = None,
                 as_json: JsonOpt = False) -> None:
    """since/until retrieval on one large namespace: each window against no window in the
    same run (medians, interleaved), and the 1-day window's top 10 against the exact
    window ranking (docs/benchmarks/reproductions.md, MaRS control)."""
    from mars_core.bench import window

    kinds = tuple(i.strip() for i in indexes.split(",") if i.strip())
    if not kinds or set(kinds) - {"chroma", "numpy", "qdrant"}:
        raise _fail("--indexes takes chroma, numpy and qdrant, comma-separated")
    with _summary(as_json) as summary, _progress(progress, "bench window") as bar:
        summary.value = window.main(out, n=n, days=days, indexes=kinds,  # type: ignore[arg-type]
                                    quick=quick, progress=bar)


@bench_app.command("import")
def bench_import(n: Annotated[int, typer.Option(min=1, help="mem0 records in the dump")] = 1500,
                 reps: Annotated[int, typer.Option(min=1, help="repetitions (median)")] = 3,
                 embedders: Annotated[str, typer.Option(
                     help="comma-separated: hashing, semantic (skipped when not installed)")]
                 = "hashing,semantic",
                 out: OutOpt = None, progress: ProgressOpt = None,
                 *, as_json: JsonOpt = False) -> None:
    """`mars import` of a mem0 dump against the same records added one by one, in the
    same run (medians, ratios; docs/benchmarks/README.md)."""
    from mars_core.bench import ingest

    names = tuple(e.strip() for e in embedders.split(",") if e.strip())
    if not names or set(names) - {"hashing", "semantic"}:
        raise _fail("--embedders takes hashing and semantic, comma-separated")
    with _summary(as_json) as summary, _progress(progress, "bench import") as bar:
        summary.value = ingest.main(out, n=n, reps=reps, embedders=names, progress=bar,
                                    echo=_say)


@bench_app.command("first-answer")
def bench_first_answer(*, baseline: Annotated[Path | None, typer.Option(
                           help="another checkout to compare with, run for run (e.g. "
                           "`git worktree add /tmp/before <commit>`)")] = None,
                       examples: Annotated[str | None, typer.Option(
                           help="comma-separated quick starts (default: every "
                           "examples/*.py)")] = None,
                       embedders: Annotated[str, typer.Option(
                           help="comma-separated: hashing, semantic")] = "hashing,semantic",
                       reps: Annotated[int, typer.Option(min=1, help="runs of each")] = 3,
                       out: OutOpt = None, progress: ProgressOpt = None,
                       as_json: JsonOpt = False) -> None:
    """Each quick start (examples/*.py) as a new user runs it, in a fresh process, with
    the hashing embedder and MiniLM: seconds to its first answer and to its end, and
    whether a dependency drew a progress bar; against --baseline in the same run
    (medians, interleaved, ratios; docs/benchmarks/README.md)."""
    from mars_core.bench import first_answer

    names = tuple(e.strip() for e in embedders.split(",") if e.strip())
    if not names or set(names) - set(first_answer.EMBEDDERS):
        raise _fail("--embedders takes hashing and semantic, comma-separated")
    chosen = tuple(e.strip() for e in examples.split(",") if e.strip()) if examples else None
    with _summary(as_json) as summary, _bench_run(progress, "bench first-answer") as bar:
        summary.value = first_answer.main(out, baseline=baseline, examples=chosen,
                                          embedders=names, reps=reps, progress=bar,
                                          echo=_say)


@bench_app.command("postgres")
def bench_postgres(*, writers: Annotated[str, typer.Option(
                       help="comma-separated numbers of writer processes")] = "1,2,4,8",
                   quick: Annotated[bool, typer.Option(help="a small smoke run")] = False,
                   history: Annotated[str, typer.Option(
                       help="bench store's sections 5-8 on PostgreSQL and the process-count "
                            "row: 'full', 'medium', 'quick' or 'off'")] = "full",
                   out: OutOpt = None, as_json: JsonOpt = False) -> None:
    """PostgreSQL + a Chroma server against the SQLite default: latency per call
    (interleaved, medians, ratios), adds/s of 1, 2, 4, 8 writer processes on distinct
    namespaces, and as the history grows (servers started for the run)."""
    from mars_core.bench import postgres
    from mars_core.bench.history import Plan

    try:
        counts = tuple(int(w) for w in writers.split(",") if w.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise _fail("--writers takes positive numbers, comma-separated")
    try:
        plan = Plan.quick() if quick and history == "full" else Plan.named(history)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    with _summary(as_json) as summary:
        summary.value = postgres.main(out, quick=quick, writers=counts, plan=plan)


@bench_app.command("policies")
def bench_policies(  # noqa: PLR0917 (typer options are parameters)
        quick: Annotated[bool, typer.Option(help="smoke run: n = 500, 2000")] = False,
        n: Annotated[list[int] | None, typer.Option(
            help="a size every policy runs at (repeatable; 1000, 10000, 100000)")] = None,
        big: Annotated[int, typer.Option(
            help="size for fifo/lru/priority/dmf only (0 skips it)")] = 1_000_000,
        policies: Annotated[str | None, typer.Option(help="comma-separated names")] = None,
        out: OutOpt = None, progress: ProgressOpt = None,
                 as_json: JsonOpt = False) -> None:
    """Per-add and per-trigger cost of each policy against store size n."""
    from mars_core.bench import policies as pol

    with _summary(as_json) as summary, _progress(progress, "bench policies") as bar:
        summary.value = pol.main(tuple(n or (1000, 10_000, 100_000)), big or None,
                                 policies.split(",") if policies else None, out,
                                 quick=quick, progress=bar)


@bench_app.command("plot")
def bench_plot(results: Annotated[Path, typer.Argument(
                   help="policies.json, storage.json, or an evidence or FiFA results.json, "
                        "as a benchmark's --out wrote it")],
               out: Annotated[Path | None, typer.Option(
                   "--out", help="directory for the PNG files (default: the results "
                                 "file's directory)")] = None,
               as_json: JsonOpt = False) -> None:
    """Redraw a benchmark's plots from its results file, with the code the run uses (no
    benchmark runs): `mars bench plot docs/benchmarks/policies.json --out
    docs/benchmarks/img`."""
    from mars_core.bench.plots import replot

    try:
        paths = replot(results, out)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    if as_json:
        _emit({"written": [str(p) for p in paths]})
        return
    for path in paths:
        _say(f"wrote {path}")


@bench_app.command("leakage")
def bench_leakage(  # noqa: PLR0917 (typer options are parameters)
        seed: Annotated[int, typer.Option(help="generator seed")] = 7,
        embedder: Annotated[str, typer.Option(
            help="default (what MemoryStore picks), hashing or minilm")] = "default",
        data: Annotated[Path | None, typer.Option(
            "--data", help="LoCoMo file: evidence recall with the check off and on (never "
                           "copied)")] = None,
        quick: Annotated[bool, typer.Option(
            help="with --data: 2 conversations × 150 turns × 25 questions")] = False,
        assistant: Annotated[bool, typer.Option(
            help="also the assistant evaluation, the check off and on")] = True,
        out: OutOpt = None, progress: ProgressOpt = None,
        as_json: JsonOpt = False) -> None:
    """What the output check keeps from a reader and what it costs, in one table: the
    privacy corpus (identifiers, special-category statements, restatements of sensitive
    or erased memories) through render_context, retrieve and check_output with the
    check off and on; evidence recall on the development conversations (--data) and the
    assistant evaluation, off and on."""
    from mars_core.bench import leakage

    if embedder not in leakage.EMBEDDERS:
        raise _fail(f"--embedder must be one of {', '.join(leakage.EMBEDDERS)}")
    if data is not None and not data.is_file():
        raise _fail(f"no data file {data} (LoCoMo: ../shared/data/locomo/locomo_dev7.json)")
    with _summary(as_json) as summary, _bench_run(progress, "bench leakage") as bar:
        try:
            summary.value = leakage.main(out, seed, progress=bar, embedder=embedder,
                                         data=data, quick=quick, assistant=assistant)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc


@bench_app.command("privacy")
def bench_privacy(embedder: Annotated[str, typer.Option(
                      help="all, hashing or minilm (minilm is skipped when not installed)")]
                  = "all", out: OutOpt = None, progress: ProgressOpt = None,
                 as_json: JsonOpt = False) -> None:
    """The privacy detectors' precision and recall per kind on a labelled corpus (phone
    numbers in international formats, e-mail, IBAN, cards, national ids; hard
    negatives), and the embedding-level sensitivity classifier and restatement test on
    held-out statements, per embedder (docs/benchmarks/reproductions.md)."""
    from mars_core.bench import privacy

    names = privacy.EMBEDDERS if embedder == "all" else (embedder,)
    if any(n not in privacy.EMBEDDERS for n in names):
        raise _fail(f"--embedder must be all or one of {', '.join(privacy.EMBEDDERS)}")
    with _summary(as_json) as summary, _bench_run(progress, "bench privacy") as bar:
        summary.value = privacy.main(out, names, progress=bar)


@bench_app.command("assistant")
def bench_assistant(embedder: Annotated[str, typer.Option(
                        help="default (what MemoryStore.open picks), hashing or minilm")]
                    = "default", out: OutOpt = None, progress: ProgressOpt = None,
                 as_json: JsonOpt = False) -> None:
    """A personal assistant's memory on the users' path: eight sessions of small talk with
    facts, some of them changed later (a new job, a move, a renamed dog, a cancelled
    trip), observed into a store with its defaults; per question, whether render_context
    shows the answer, and no replaced statement as current."""
    from mars_core.bench import assistant

    if embedder not in assistant.EMBEDDERS:
        raise _fail(f"--embedder must be one of {', '.join(assistant.EMBEDDERS)}")
    with _summary(as_json) as summary, _bench_run(progress, "bench assistant") as bar:
        summary.value = assistant.main(out, embedder=embedder, progress=bar)


DataOpt = Annotated[Path, typer.Option("--data", help="the data file (never copied)")]
QuickOpt = Annotated[bool, typer.Option(help="a small smoke run")]


@bench_app.command("frameworks")
def bench_frameworks(  # noqa: PLR0917 (typer options are parameters)
        data: DataOpt, out: OutOpt = None, quick: QuickOpt = False,
                     embedder: Annotated[str, typer.Option(
                         help="default (MiniLM when installed), hashing or minilm")]
                     = "default", progress: ProgressOpt = None,
                     as_json: JsonOpt = False) -> None:
    """Evidence through the frameworks: each conversation ingested through each
    framework's adapter, then the evidence recall of each exit (LangChain middleware and
    MarsRetriever(k=4), LlamaIndex MarsRetriever(k=4), MarsMemory.get and the memory
    block, LangGraph MarsStore.search) at its default size, beside retrieve at 128 words
    (docs/benchmarks/evidence.md)."""
    from mars_core.bench import frameworks, leakage

    if embedder not in leakage.EMBEDDERS:
        raise _fail(f"--embedder must be one of {', '.join(leakage.EMBEDDERS)}")
    if not data.is_file():
        raise _fail(f"no data file {data} (LoCoMo: ../shared/data/locomo/locomo_dev7.json)")
    with _summary(as_json) as summary, _bench_run(progress, "bench frameworks") as bar:
        try:
            result = frameworks.main(data, out, quick=quick, embedder=embedder, progress=bar)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
        for line in result["table"]:
            _say(line)
        summary.value = result


@bench_app.command("locomo")
def bench_locomo(data: DataOpt, out: Annotated[Path, typer.Option(
                     "--out", help="directory for the results")],
                 quick: QuickOpt = False,
                 methods: Annotated[str | None, typer.Option(
                     help="comma-separated Task 1 method names (default: all)")] = None,
                 progress: ProgressOpt = None, *, as_json: JsonOpt = False) -> None:
    """LoCoMo: evidence retrieval under a context budget and retention under a store budget."""
    from mars_core.bench.evidence import run_locomo

    with _summary(as_json) as summary:
        summary.value = _checked(run_locomo, data, out, quick=quick,
                                 methods=methods.split(",") if methods else None,
                                 progress=_shown(progress))


@bench_app.command("oslmr")
def bench_oslmr(  # noqa: PLR0917 (typer options are parameters)
                data: DataOpt, out: Annotated[Path, typer.Option(
                    "--out", help="directory for the results")],
                quick: QuickOpt = False,
                counters: Annotated[str, typer.Option(
                    help="comma-separated budget counters: store (≈ BPE tokens), words")
                ] = "store,words",
                progress: ProgressOpt = None,
                sensitivity: Annotated[bool, typer.Option(
                    "--sensitivity", help="also §4.4's reward sensitivity (every coefficient "
                    "× 0.25–4, the BC-learner retrained at budget 64) and the Mixed-Score "
                    "freshness variants: sensitivity.json/.md and one PNG per budget")]
                = False,
                regenerate_docs: Annotated[bool, typer.Option(
                    "--regenerate-docs", help="run the full run with --sensitivity and the "
                    "quick one, write docs/benchmarks/results/oslmr*.json and the plots, and "
                    "rewrite the OSL-MR blocks of docs/benchmarks/reproductions.md")] = False,
                quick_only: Annotated[bool, typer.Option(
                    "--quick-only", help="with --regenerate-docs: rerun the quick variant only "
                    "and keep the full run's results file (and its commit)")] = False,
                docs: Annotated[Path | None, typer.Option(
                    "--docs", help="with --regenerate-docs: the docs/ directory (default: "
                    "the checkout's)")] = None,
                as_json: JsonOpt = False) -> None:
    """Seed 001's Table 2 on LoCoMo beside the paper's (budgets 32/64/128; Recency, GA,
    Mixed-Score, BC-learner, OSL-MR with and without prior): prints the table and writes
    table2.json, table2.md and the per-decision reward trace (docs/benchmarks/
    reproductions.md)."""
    from mars_core.bench.oslmr import run_table2

    if regenerate_docs:
        if quick or counters != "store,words":
            raise _fail("--regenerate-docs runs the page's protocol (the full and the quick "
                        "variant, both counters): drop --quick and --counters")
        _checked(_regenerate_oslmr, data, out, docs, _shown(progress), quick_only)
        return
    if docs is not None or quick_only:
        raise _fail("--docs and --quick-only go with --regenerate-docs")
    with _summary(as_json) as summary:
        result = summary.value = _checked(run_table2, data, out, quick=quick,
                                          counters=[c for c in counters.split(",") if c],
                                          progress=_shown(progress), sensitivity=sensitivity)
        _say(result["table"])


def _regenerate_oslmr(data: Path, out: Path, docs: Path | None, progress: bool,
                      quick_only: bool = False) -> None:
    from mars_core.bench.oslmr_docs import regenerate_docs
    from mars_core.bench.pages import docs_dir

    done = regenerate_docs(docs if docs is not None else docs_dir(), data, out,
                           progress=progress, quick_only=quick_only)
    _say(f"wrote {', '.join(done['pages'])} from docs/benchmarks/results/oslmr.json "
         f"and oslmr_quick.json (commit {done['full']['commit']})")


@bench_app.command("longmemeval")
def bench_longmemeval(data: DataOpt, out: Annotated[Path, typer.Option(
                          "--out", help="directory for the results")],
                      quick: QuickOpt = False, progress: ProgressOpt = None,
                      as_json: JsonOpt = False) -> None:
    """LongMemEval: evidence retrieval at 256/512/1024 tokens."""
    from mars_core.bench.evidence import run_longmemeval

    with _summary(as_json) as summary:
        summary.value = _checked(run_longmemeval, data, out, quick=quick,
                                 progress=_shown(progress))


@bench_app.command("fifa")
def bench_fifa(  # noqa: PLR0917 (typer options are parameters)
               out: Annotated[Path, typer.Option("--out", help="directory for the results")],
               quick: QuickOpt = False, progress: ProgressOpt = None,
               absolute: Annotated[bool, typer.Option(
                   "--absolute-budgets",
                   help="budgets in tokens as given, not as the paper's share of what the "
                        "agents store")] = False,
               paper_stored: Annotated[int, typer.Option(
                   "--paper-stored", min=1,
                   help="tokens a paper agent stores (relative budgets: level / this × "
                        "the world's stored tokens)")] = 64_000,
               regenerate_docs: Annotated[bool, typer.Option(
                   "--regenerate-docs",
                   help="run the full and the quick grid, write docs/benchmarks/results/"
                        "fifa*.json, redraw the figures and rewrite the generated blocks "
                        "of docs/benchmarks/fifa.md and reproductions.md (a checkout)")]
               = False,
               from_run: Annotated[Path | None, typer.Option(
                   "--from", help="with --regenerate-docs: the results.json of an earlier "
                                  "full run, instead of running the grid again")] = None,
               quick_only: Annotated[bool, typer.Option(
                   "--quick-only", help="with --regenerate-docs: rerun the quick grid only "
                   "and keep the full grid's results file (and its commit)")] = False,
               docs: Annotated[Path | None, typer.Option(
                   "--docs", help="with --regenerate-docs: the docs/ directory (default: "
                                  "the checkout's)")] = None,
               as_json: JsonOpt = False) -> None:
    """FiFA: policies × budgets × seeds over five simulated scenarios (seed 000 §6)."""
    from mars_core.bench.fifa import run_fifa

    if not regenerate_docs:
        if from_run is not None or docs is not None or quick_only:
            raise _fail("--from, --quick-only and --docs go with --regenerate-docs")
        with _summary(as_json) as summary:
            summary.value = run_fifa(out, quick=quick, progress=_shown(progress),
                                     budget_mode="absolute" if absolute else "relative",
                                     paper_stored=paper_stored)
        return
    if quick or absolute or paper_stored != 64_000:
        raise _fail("--regenerate-docs runs the page's protocol (the full and the quick grid, "
                    "relative budgets, --paper-stored 64000): drop --quick, "
                    "--absolute-budgets and --paper-stored")
    if quick_only and from_run is not None:
        raise _fail("--quick-only keeps the full grid's file: it takes no --from")
    _regenerate_fifa(out, from_run, docs, _shown(progress), quick_only)


def _regenerate_fifa(out: Path, from_run: Path | None, docs: Path | None,
                     progress: bool, quick_only: bool) -> None:
    from mars_core.bench.fifa.docs import regenerate_docs
    from mars_core.bench.pages import docs_dir, read_results

    try:
        where = docs if docs is not None else docs_dir()
        full = read_results(from_run) if from_run is not None else None
        if full is not None and "cells" not in full:
            raise _fail(f"{from_run} has no cells: pass the results.json of a full run")
        done = regenerate_docs(where, full_results=full, progress=progress, out=out,
                               quick_only=quick_only)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    _say(f"wrote {', '.join(done['pages'])} from docs/benchmarks/results/fifa.json "
         f"and fifa_quick.json (commit {done['full']['commit']})")


@bench_app.command("mechanisms")
def bench_mechanisms(regenerate_docs: Annotated[bool, typer.Option(
                         "--regenerate-docs", help="write docs/benchmarks/results/"
                         "mechanisms.json and rewrite the worked examples of docs/benchmarks/"
                         "reproductions.md (a checkout)")] = False,
                     docs: Annotated[Path | None, typer.Option(
                         "--docs", help="with --regenerate-docs: the docs/ directory")]
                     = None) -> None:
    """The seeds' mechanisms worked by the shipped code (DMF Tables 2–3 and §7.2 pruning,
    Priority-Decay's privacy penalty, Reflection's privacy gate, elastic budgets,
    retrieval scope, A.2 freshness, Oblivion retention): prints them as JSON."""
    from mars_core.bench import mechanisms
    from mars_core.bench.pages import docs_dir

    if not regenerate_docs:
        if docs is not None:
            raise _fail("--docs goes with --regenerate-docs")
        console.print_json(json.dumps(mechanisms.compute()))
        return
    try:
        done = mechanisms.regenerate_docs(docs if docs is not None else docs_dir())
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    _say(f"wrote {', '.join(done['pages'])} (commit {done['doc']['commit']})")


@bench_app.command("activator")
def bench_activator(data: DataOpt,
                    out: Annotated[Path | None, typer.Option(
                        "--out", help="JSON file for the full report")] = None,
                    quick: QuickOpt = False,
                    embedder: Annotated[str, typer.Option(help="hashing or minilm")]
                    = "hashing", progress: ProgressOpt = None,
                    *, as_json: JsonOpt = False) -> None:
    """LoCoMo multi-hop: the Activator's sub-query DAG against a single query (its
    summary printed as JSON)."""
    from mars_core.bench.activator import run_activator_bench

    if embedder not in {"hashing", "minilm"}:
        raise _fail("--embedder must be hashing or minilm")
    with _progress(progress, "bench activator") as bar:
        report = _checked(run_activator_bench, data, out, quick, embedder=embedder,
                          progress=bar)
    summary = {k: report[k] for k in ("embedder", "tune", "test", "seconds") if k in report}
    if as_json:
        _emit(summary)
    else:
        console.print_json(json.dumps(summary))


@app.command()
def learn(log: Annotated[Path, typer.Option(help="a feature log (JSON lines)")],
          out: Annotated[Path, typer.Option(help="where to write the model (JSON)")],
          kind: Annotated[str, typer.Option(help="retention or retrieval")] = "retention"
          ) -> None:
    """Train the OSL-MR evidence learner on a feature log; use it as policy="learned:PATH".

    A feature log is a mars_core.learn.FeatureLog saved as JSON lines: labelled decisions
    (from benchmark gold evidence, or store.credit via FeatureLog.log_hits).
    """
    from mars_core.learn import FeatureLog, train

    if kind not in {"retention", "retrieval"}:
        raise _fail("--kind must be retention or retrieval")
    try:
        model = train(FeatureLog.load(log).rows(kind), kind=kind)  # type: ignore[arg-type]
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    model.save(out)
    _say(f"trained a {kind} model on {log}; wrote {out}")


def _checked(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a benchmark and return its result; a missing or malformed data file is a usage
    error."""
    if not Path(args[0]).is_file():
        raise _fail(f"no data file {args[0]} (LoCoMo: ../shared/data/locomo/locomo_dev7.json)")
    try:
        return fn(*args, **kwargs)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc


def main(argv: Sequence[str] | None = None, *, progress: ProgressFn | None = None) -> int:
    """Entry point of the ``mars`` console script; returns the exit code.

    Args:
        argv: the arguments (default: the process's).
        progress: also called with the progress events of the long commands
            (:mod:`mars_core.progress`), whether or not a bar is drawn — for a program
            that runs the command line in its own process.
    """
    token = _OBSERVER.set(progress)
    try:
        app(args=list(argv) if argv is not None else None, prog_name="mars")
    except SystemExit as exc:  # typer (click) ends every run with SystemExit
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        _OBSERVER.reset(token)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
