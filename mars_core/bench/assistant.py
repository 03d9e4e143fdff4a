"""``mars bench assistant``: a personal assistant's memory, read the way users read it.

The script of :mod:`mars_core.bench.assistant_script` (eight sessions, facts among
small talk, some of them changed later) is played into a store opened with
``MemoryStore.open(path)`` and nothing else — the default budget, policy and embedder
— turn by turn through ``observe(role, text, conversation_id=..., at=...)``, the way
the LangChain middleware and chat history call it (one conversation per session, the
user's turns as ``user``, the assistant's as ``assistant``). Then each question of the
script is read through ``render_context(question)`` at its default size and scored:

* **answered**: every answer pattern matches a line presented as current (a line
  without a ``superseded``, ``corrected`` or ``outdated`` mark, or what a mark names as
  current: ``outdated (now: ...)``); questions about the past may be answered by a
  marked line;
* **no stale fact**: no line presented as current states one of the script's replaced
  statements (:data:`~mars_core.bench.assistant_script.STALE`), in this question's
  context.

A question passes when both hold. The report gives each question's result, the
totals, how many memories the budget archived during the ingest, and the median time
of ``observe`` per turn and ``render_context`` per question (on this machine, for
orientation only).

Examples:
    >>> lines = context_lines("=== STRUCTURED EVIDENCE ===\\n"
    ...                       "- [semantic | user] The user lives in Cardiff\\n"
    ...                       "- [episodic | 2026-01-05 19:03 UTC | user | outdated] "
    ...                       "I live in Bristol")
    >>> [(line.current, line.text) for line in lines]
    [(True, 'The user lives in Cardiff'), (False, 'I live in Bristol')]
    >>> context_lines("- [episodic | user | outdated (now: The user lives in Cardiff)] "
    ...               "I live in Bristol")[0].now
    'The user lives in Cardiff'
"""

from __future__ import annotations

import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Final, Literal

from mars_core.bench.assistant_script import QUESTIONS, SESSIONS, STALE, Question, Session, Stale
from mars_core.bench.report import results_dir
from mars_core.embedders import default_embedder
from mars_core.errors import ValidationError
from mars_core.model import MemoryStatus
from mars_core.progress import ProgressFn, report
from mars_core.reading.context import Validity
from mars_core.store import MemoryStore

__all__ = [
    "EMBEDDERS",
    "AssistantReport",
    "ContextLine",
    "QuestionResult",
    "context_lines",
    "evaluate",
    "ingest",
    "main",
    "open_store",
    "run",
    "score",
]

EMBEDDERS: Final = ("default", "hashing", "minilm")
"""``default``: what ``MemoryStore.open`` picks (``$MARS_EMBEDDER``, else MiniLM when
installed); ``hashing`` and ``minilm`` force one."""

_LINE = re.compile(r"^- \[([^\]]*)\] (.*)$")
_REPLACED: Final = frozenset(v.value for v in Validity if v is not Validity.CURRENT)
_NOW = re.compile(r"\(now: (.*)\)$")


@dataclass(frozen=True, slots=True)
class ContextLine:
    """One memory line of a rendered context.

    Attributes:
        text: the memory's text (after the bracketed header).
        current: ``False`` when the header marks it as replaced.
        header: the bracketed header (type, date, source, mark).
        now: what a replaced line's mark says is current instead (``outdated (now:
            ...)``), or ``""``.
    """

    text: str
    current: bool
    header: str
    now: str = ""


def context_lines(context: str) -> list[ContextLine]:
    """The memory lines of ``render_context``'s text (section headers are skipped)."""
    out = []
    for raw in context.splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        marks = [f.strip() for f in m.group(1).split("|")
                 if f.strip() and f.split(maxsplit=1)[0] in _REPLACED]
        now = _NOW.search(marks[0]) if marks else None
        out.append(ContextLine(m.group(2), not marks, m.group(1),
                               now.group(1) if now else ""))
    return out


def _current_texts(lines: Iterable[ContextLine]) -> list[str]:
    """What the context presents as current: unmarked lines and the "now:" of marks."""
    return [t for line in lines for t in ((line.text,) if line.current else (line.now,)) if t]


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """How one question's context scored.

    Attributes:
        id: the question id.
        question: its text.
        missing: answer patterns that no eligible line matched.
        stale: ids of replaced statements shown as current.
        context: the rendered context.
    """

    id: str
    question: str
    missing: tuple[str, ...]
    stale: tuple[str, ...]
    context: str

    @property
    def answered(self) -> bool:
        """Every answer pattern matched."""
        return not self.missing

    @property
    def passed(self) -> bool:
        """Answered, with no stale statement presented as current."""
        return self.answered and not self.stale


def score(question: Question, context: str,
          stale: Iterable[Stale] = STALE) -> QuestionResult:
    """Score one rendered context against a question and the replaced statements.

    Examples:
        >>> from mars_core.bench.assistant_script import Question, Stale
        >>> q = Question("city", "Where do I live?", (r"Cardiff",), ("city-now",))
        >>> r = score(q, "- [semantic | user] The user lives in Cardiff\\n"
        ...              "- [episodic | user] I live in Bristol",
        ...           [Stale("city", r"I live in Bristol", "city-now")])
        >>> r.answered, r.stale, r.passed
        (True, ('city',), False)
    """
    lines = context_lines(context)
    current = _current_texts(lines)
    eligible = current + ([line.text for line in lines if not line.current]
                          if question.history else [])
    missing = tuple(p for p in question.answers
                    if not any(re.search(p, t, re.IGNORECASE) for t in eligible))
    shown = tuple(s.id for s in stale
                  if any(re.search(s.pattern, t, re.IGNORECASE) for t in current))
    return QuestionResult(question.id, question.text, missing, shown, context)


@dataclass(slots=True)
class AssistantReport:
    """The run: per-question results and totals.

    Attributes:
        embedder: the store's embedder.
        turns: turns observed.
        archived: memories the store archived by the end of the ingest (budget, or
            replaced facts).
        results: one per question, in the script's order.
        observe_ms: median ``observe`` time per turn.
        render_ms: median ``render_context`` time per question.
    """

    embedder: str
    turns: int
    archived: int
    results: list[QuestionResult] = field(default_factory=list)
    observe_ms: float = 0.0
    render_ms: float = 0.0

    @property
    def answered(self) -> int:
        """Questions whose answers all reached the context."""
        return sum(r.answered for r in self.results)

    @property
    def stale_free(self) -> int:
        """Questions whose context presents no replaced statement as current."""
        return sum(not r.stale for r in self.results)

    @property
    def passed(self) -> int:
        """Questions both answered and stale-free."""
        return sum(r.passed for r in self.results)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (contexts included)."""
        return {"embedder": self.embedder, "turns": self.turns, "archived": self.archived,
                "questions": len(self.results), "answered": self.answered,
                "stale_free": self.stale_free, "passed": self.passed,
                "observe_ms": self.observe_ms, "render_ms": self.render_ms,
                "results": [asdict(r) | {"answered": r.answered, "passed": r.passed}
                            for r in self.results]}


def ingest(store: MemoryStore, sessions: Sequence[Session] = SESSIONS,
           progress: ProgressFn | None = None) -> list[float]:
    """Observe every turn of ``sessions`` as the adapters do; returns seconds per turn
    (``progress``: stage ``turns``)."""
    took: list[float] = []
    total = 2 * sum(len(s.turns) for s in sessions)
    report(progress, "turns", 0, total)
    for session in sessions:
        minute = 0
        for user, answer in session.turns:
            for role, text in (("user", user), ("assistant", answer)):
                t0 = time.perf_counter()
                store.observe(role, text, conversation_id=session.id,
                              at=session.start + timedelta(minutes=minute))
                took.append(time.perf_counter() - t0)
                minute += 1
                report(progress, "turns", len(took), total)
    return took


def open_store(path: Path, embedder: str) -> MemoryStore:
    """The benchmark's store: ``MemoryStore.open(path)`` with its defaults, the embedder
    forced when ``embedder`` names one.

    Raises:
        ValidationError: an unknown ``embedder``.
    """
    if embedder not in EMBEDDERS:
        raise ValidationError(f"embedder must be one of {', '.join(EMBEDDERS)}, "
                              f"not {embedder!r}")
    if embedder == "default":
        return MemoryStore.open(path)
    prefer: Literal["semantic", "hashing"] = "semantic" if embedder == "minilm" else "hashing"
    return MemoryStore.open(path, embedder=default_embedder(prefer=prefer))


def run(path: str | os.PathLike[str] | None = None, *, embedder: str = "default",
        sessions: Sequence[Session] = SESSIONS, questions: Sequence[Question] = QUESTIONS,
        stale: Sequence[Stale] = STALE, progress: ProgressFn | None = None) -> AssistantReport:
    """Play the script into a new store at ``path`` (a temporary one by default) and
    score every question (``progress``: stages ``turns`` and ``questions``).

    Raises:
        ValidationError: an unknown ``embedder`` or a ``path`` that already holds files.
        ExtraNotInstalledError, ConfigError: ``embedder="minilm"`` without the model.
    """
    if path is None:
        with tempfile.TemporaryDirectory(prefix="mars-bench-assistant-") as tmp:
            return run(tmp, embedder=embedder, sessions=sessions, questions=questions,
                       stale=stale, progress=progress)
    folder = Path(path)
    if folder.exists() and any(folder.iterdir()):
        raise ValidationError(f"{str(folder)!r} is not empty: the benchmark needs a new store")
    with open_store(folder, embedder) as store:
        took = ingest(store, sessions, progress)
        return evaluate(store, questions, stale, observe_seconds=took, progress=progress)


def evaluate(store: MemoryStore, questions: Sequence[Question] = QUESTIONS,
             stale: Sequence[Stale] = STALE, *, observe_seconds: Sequence[float] = (),
             progress: ProgressFn | None = None, redact: bool | None = None
             ) -> AssistantReport:
    """Ask every question of ``store`` (which observed the script) through
    ``render_context`` at its defaults (``redact``: its output check; None: the
    store's) and score the contexts (``progress``: stage ``questions``)."""
    result = AssistantReport(embedder=str(store.stats()["embedder"]),
                             turns=len(observe_seconds),
                             archived=len(store.list(status=MemoryStatus.ARCHIVED)),
                             observe_ms=1000 * statistics.median(observe_seconds)
                             if observe_seconds else 0.0)
    renders: list[float] = []
    report(progress, "questions", 0, len(questions))
    for q in questions:
        t0 = time.perf_counter()
        context = store.render_context(q.text, redact=redact)
        renders.append(time.perf_counter() - t0)
        result.results.append(score(q, context, stale))
        report(progress, "questions", len(renders), len(questions))
    result.render_ms = 1000 * statistics.median(renders) if renders else 0.0
    return result


def _print(report: AssistantReport) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"mars bench assistant ({report.embedder})")
    for col in ("id", "question", "answered", "stale shown", "missing"):
        table.add_column(col, overflow="fold")
    for r in report.results:
        table.add_row(r.id, r.question, "yes" if r.answered else "[red]no[/]",
                      ", ".join(r.stale) or "–", ", ".join(r.missing) or "–")
    console = Console()
    console.print(table)
    n = len(report.results)
    console.print(f"{report.turns} turns observed, {report.archived} memories archived; "
                  f"answered {report.answered}/{n}, stale-free {report.stale_free}/{n}, "
                  f"passed {report.passed}/{n}; median observe {report.observe_ms:.1f} ms "
                  f"per turn, render_context {report.render_ms:.1f} ms per question",
                  highlight=False)


def main(out: str | os.PathLike[str] | None = None, *, embedder: str = "default",
         progress: ProgressFn | None = None) -> AssistantReport:
    """Run, print the table and totals, and write ``assistant.json`` to ``out`` (made
    before the run) when given."""
    folder = None if out is None else results_dir(out)
    result = run(embedder=embedder, progress=progress)
    _print(result)
    if folder is not None:
        (folder / "assistant.json").write_text(json.dumps(result.as_dict(), indent=1),
                                               encoding="utf-8")
    return result
