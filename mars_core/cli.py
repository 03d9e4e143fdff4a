"""The ``mars`` command line (typer + rich).

Every command that reads a store takes ``--path`` (default: ``$MARS_PATH`` or
``./mars_data``, the embedded default of :meth:`MemoryStore.open`): a directory, or a
``postgresql://`` URL as :meth:`MemoryStore.open` takes it (messages show it without
its password). A path that holds no store is an error that says how to create one; it
is never created by a read. ``mars copy SOURCE DESTINATION`` moves a store, SQLite to
PostgreSQL included (:mod:`mars_core.io.transfer`).

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

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from mars_core import __version__
from mars_core.bench.cli import bench_app
from mars_core.cli_common import (
    _OBSERVER,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    IndexOpt,
    JsonOpt,
    NamespaceOpt,
    PathOpt,
    ProgressOpt,
    _emit,
    _fail,
    _progress,
    _say,
    console,
    err_console,
)
from mars_core.errors import MarsError
from mars_core.progress import ProgressFn

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main"]


app = typer.Typer(
    name="mars", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's wrapped lines join into one paragraph
    help="mars-memory: memory for LLM agents that forgets on purpose. Inspect, explain, "
         "erase, export and verify a store; run the demo and the benchmarks.\n\n"
         "Every store command reads the store at --path (default: $MARS_PATH, else "
         "./mars_data): a directory or a postgresql:// URL. New here? Run "
         "`mars demo --fresh`, then `mars inspect --path mars_data/demo -n memories/maya`.",
)
app.add_typer(bench_app, name="bench")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mars-memory {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="print the version (mars-memory X.Y.Z) and exit")] = False) -> None:
    """mars-memory's command line (the group's options)."""


DEFAULT_PATH = "mars_data"
TEXT_WIDTH = 60  # characters of redacted text in a table row (--json: the whole text)
IMPORT_KINDS = ("jsonld", "mem0", "langgraph")


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

    from mars_core.io.inspect import inspect_rows, printable

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
            summary = store.write_jsonld(out)
        except MarsError as exc:
            raise _fail(str(exc), exc) from exc
    _say(f"exported {summary.memories} memories and {summary.edges} edges of "
         f"{len(summary.namespaces)} namespace(s) from {_where(path)} to {out}")


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
    from mars_core.io import importers
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
    from mars_core.io.transfer import copy_store

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
    from mars_core.io.inspect import resolve_id

    try:
        return resolve_id(store, prefix, namespace)
    except MarsError as exc:
        raise _fail(f"{exc}; list ids with `mars inspect`", exc) from exc


@app.command()
def learn(log: Annotated[Path, typer.Option(help="a feature log (JSON lines)")],
          out: Annotated[Path, typer.Option(help="where to write the model (JSON)")],
          kind: Annotated[str, typer.Option(help="retention or retrieval")] = "retention"
          ) -> None:
    """Train the OSL-MR evidence learner on a feature log; use it as policy="learned:PATH".

    A feature log is a mars_core.knowledge.learn.FeatureLog saved as JSON lines: labelled decisions
    (from benchmark gold evidence, or store.credit via FeatureLog.log_hits).
    """
    from mars_core.knowledge.learn import FeatureLog, train

    if kind not in {"retention", "retrieval"}:
        raise _fail("--kind must be retention or retrieval")
    try:
        model = train(FeatureLog.load(log).rows(kind), kind=kind)  # type: ignore[arg-type]
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    model.save(out)
    _say(f"trained a {kind} model on {log}; wrote {out}")


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
