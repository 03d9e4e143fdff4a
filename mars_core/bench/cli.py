"""``mars bench ...``: the benchmark commands, a typer sub-app of :data:`mars_core.cli.app`
(results under ``--out``; ``--json`` prints a run's summary)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from mars_core.cli_common import (
    JsonOpt,
    OutOpt,
    ProgressOpt,
    _bench_run,
    _emit,
    _fail,
    _progress,
    _say,
    _shown,
    console,
)
from mars_core.errors import MarsError

__all__ = ["bench_app"]

bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                        help="Run a benchmark (results under --out).")


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
                sections: Annotated[str, typer.Option(
                    help="comma-separated, the sections to run (default: all): cost, bulk, "
                         "memory, scale, long-lived, many, lifted, loop")] = "",
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
    chosen = tuple(x.strip() for x in sections.split(",") if x.strip()) or storage.SECTIONS
    if set(chosen) - set(storage.SECTIONS):
        raise _fail(f"--sections takes {', '.join(storage.SECTIONS)}, comma-separated")
    try:
        plan = Plan.quick() if quick and history == "full" else Plan.named(history)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    with _summary(as_json) as summary, _progress(progress, "bench store") as bar:
        summary.value = storage.main(out, n=n, big=big, namespaces=namespaces, quick=quick,
                                     indexes=kinds, plan=plan,  # type: ignore[arg-type]
                                     sections=chosen, progress=bar)


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
                   worker_turns: Annotated[int | None, typer.Option(
                       min=1, help="turns of each of the process-count row's 50 "
                                   "namespaces (default 1000; 100 of 4 with --quick)")] = None,
                   out: OutOpt = None, progress: ProgressOpt = None,
                   as_json: JsonOpt = False) -> None:
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
    with _summary(as_json) as summary, _progress(progress, "bench postgres") as bar:
        summary.value = postgres.main(out, quick=quick, writers=counts, plan=plan,
                                      worker_turns=worker_turns, progress=bar)


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
    from mars_core.bench.replot import replot

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
QuickOnlyOpt = Annotated[bool, typer.Option(
    "--quick-only", help="with --regenerate-docs: rerun the quick variant only and keep the "
    "full run's results file (and its commit)")]
DocsOpt = Annotated[Path | None, typer.Option(
    "--docs", help="with --regenerate-docs: the docs/ directory (default: the checkout's)")]


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
                quick_only: QuickOnlyOpt = False, docs: DocsOpt = None,
                as_json: JsonOpt = False) -> None:
    """Seed 001's Table 2 on LoCoMo beside the paper's (budgets 32/64/128; Recency, GA,
    Mixed-Score, BC-learner, OSL-MR with and without prior): prints the table and writes
    table2.json, table2.md and the per-decision reward trace (docs/benchmarks/
    reproductions.md)."""
    from mars_core.bench.oslmr_run import run_table2

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


def _with_summary(docs: Path, pages: list[str]) -> list[str]:
    """Every --regenerate-docs ends by rewriting the reproductions summary from all the
    results files (:func:`mars_core.bench.reproductions.regenerate_summary`): the pages a
    command wrote, the summary's included."""
    from mars_core.bench.reproductions import regenerate_summary

    return list(dict.fromkeys([*pages, *regenerate_summary(docs)]))


def _regenerate_oslmr(data: Path, out: Path, docs: Path | None, progress: bool,
                      quick_only: bool = False) -> None:
    from mars_core.bench.oslmr_docs import regenerate_docs
    from mars_core.bench.pages import docs_dir

    where = docs if docs is not None else docs_dir()
    done = regenerate_docs(where, data, out, progress=progress, quick_only=quick_only)
    pages = ", ".join(_with_summary(where, done["pages"]))
    _say(f"wrote {pages} from docs/benchmarks/results/oslmr.json "
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
               quick_only: QuickOnlyOpt = False, docs: DocsOpt = None,
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
    pages = ", ".join(_with_summary(where, done["pages"]))
    _say(f"wrote {pages} from docs/benchmarks/results/fifa.json "
         f"and fifa_quick.json (commit {done['full']['commit']})")


@bench_app.command("mechanisms")
def bench_mechanisms(regenerate_docs: Annotated[bool, typer.Option(
                         "--regenerate-docs", help="write docs/benchmarks/results/"
                         "mechanisms.json and rewrite the worked examples of docs/benchmarks/"
                         "reproductions.md (a checkout)")] = False,
                     docs: DocsOpt = None) -> None:
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
    where = docs if docs is not None else docs_dir()
    try:
        done = mechanisms.regenerate_docs(where)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
    _say(f"wrote {', '.join(_with_summary(where, done['pages']))} (commit {done['doc']['commit']})")


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


def _checked(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a benchmark and return its result; a missing or malformed data file is a usage
    error."""
    if not Path(args[0]).is_file():
        raise _fail(f"no data file {args[0]} (LoCoMo: ../shared/data/locomo/locomo_dev7.json)")
    try:
        return fn(*args, **kwargs)
    except MarsError as exc:
        raise _fail(str(exc), exc) from exc
