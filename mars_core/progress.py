"""Progress of long jobs: a callback in the core, a bar where a person watches.

The calls that may run for minutes — :meth:`~mars_core.store.MemoryStore.add_many`,
``observe_many``, ``import_jsonld``, ``reindex``, ``reembed`` and the importers of
:mod:`mars_core.io.importers` — take ``progress=``: ``None`` (the default: nothing is
reported) or a callable ``progress(stage, done, total)`` (:data:`ProgressFn`), called
as the work advances:

========== ===================================================================
stage      what is counted
========== ===================================================================
``embed``  texts embedded (in batches of :data:`EMBED_BATCH`)
``store``  memories (or turns) staged in the call's transaction
``write``  ``0`` before the transaction commits, ``total`` once it has
``index``  index entries rebuilt (``reindex``)
========== ===================================================================

Each stage starts at ``done == 0``, only grows, and ends with ``done == total``. The
callback runs on the caller's thread, inside the call: an exception it raises ends the
call, and — before ``write`` reports ``total`` — the call has then changed nothing
(a bulk write is one transaction). The core never draws anything itself;
:func:`progress_bar` is the bar the ``mars`` command line shows on a terminal, and
:func:`progress_lines` the plain lines it prints to a pipe or a log file.

Examples:
    >>> from mars_core import MemoryStore
    >>> seen = []
    >>> with MemoryStore(budget=500) as store:
    ...     _ = store.add_many(["Ana likes tea", "Bo plays jazz"],
    ...                        progress=lambda stage, done, total: seen.append((stage, done)))
    >>> [stage for stage, done in seen if done == 0], seen[-1]
    (['embed', 'store', 'write'], ('write', 2))
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from mars_core.errors import ValidationError

__all__ = ["EMBED_BATCH", "STAGES", "LineCounter", "ProgressFn", "checked", "combine",
           "progress_bar", "progress_lines", "report"]

ProgressFn = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: see the module."""

EMBED_BATCH = 256
"""Texts per embedding call of a bulk write: the unit in which ``embed`` advances."""

STAGES = {"embed": "embedding", "store": "storing", "write": "committing",
          "index": "indexing"}
"""The stages and how a bar labels them."""


def checked(progress: object) -> ProgressFn | None:
    """``progress`` as given, once it is ``None`` or callable.

    Raises:
        ValidationError: anything else (a bool, a string, a number).

    Examples:
        >>> checked(None) is None
        True
        >>> checked(True)
        Traceback (most recent call last):
        ...
        mars_core.errors.ValidationError: progress must be None or a callable \
progress(stage, done, total), not bool
    """
    if progress is None or callable(progress):
        return progress
    raise ValidationError("progress must be None or a callable progress(stage, done, total), "
                          f"not {type(progress).__name__}")


def report(progress: ProgressFn | None, stage: str, done: int, total: int) -> None:
    """Call ``progress`` when there is one.

    Examples:
        >>> report(None, "store", 1, 2)  # nothing to call
        >>> report(lambda *a: print(a), "store", 1, 2)
        ('store', 1, 2)
    """
    if progress is not None:
        progress(stage, done, total)


def combine(*observers: ProgressFn | None) -> ProgressFn | None:
    """One callback that calls each observer given (``None`` when none is).

    Examples:
        >>> combine(None, None) is None
        True
        >>> both = combine(lambda *a: print("a", *a), lambda *a: print("b", *a))
        >>> both("embed", 1, 1)
        a embed 1 1
        b embed 1 1
    """
    present = [o for o in observers if o is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]

    def each(stage: str, done: int, total: int) -> None:
        for observer in present:
            observer(stage, done, total)

    return each


@contextlib.contextmanager
def progress_bar(console: Any = None, *, title: str = "") -> Iterator[ProgressFn]:
    """A rich progress bar (one line per stage) that the callback it yields drives.

    Args:
        console: a ``rich.console.Console`` (default: one on standard error).
        title: put before each stage's label (e.g. ``"import"``).

    Examples:
        >>> import io
        >>> from rich.console import Console
        >>> out = io.StringIO()
        >>> with progress_bar(Console(file=out, width=80), title="import") as bar:
        ...     bar("store", 2, 2)
        >>> "import: storing" in out.getvalue() and "2/2" in out.getvalue()
        True
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(),
                   console=console if console is not None else Console(stderr=True))
    tasks: dict[str, TaskID] = {}
    prefix = f"{title}: " if title else ""

    def update(stage: str, done: int, total: int) -> None:
        task = tasks.get(stage)
        if task is None:
            task = tasks[stage] = bar.add_task(prefix + STAGES.get(stage, stage), total=total)
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


LINE_STEP = 10
"""Percent of a stage between two lines of :func:`progress_lines`."""


@contextlib.contextmanager
def progress_lines(stream: TextIO | None = None, *, title: str = "",
                   step: int = LINE_STEP) -> Iterator[ProgressFn]:
    """Progress as plain lines, for a pipe or a log file where a bar cannot redraw: a
    line when a stage starts, one each time it passes another ``step`` percent, one when
    it ends — each written and flushed at once, so a reader sees the job move.

    Args:
        stream: where to write (default: standard error, looked up at each line).
        title: put before each stage's label (e.g. ``"import"``).
        step: percent between two lines of a stage (1–100).

    Raises:
        ValidationError: a ``step`` outside 1–100.

    Examples:
        >>> import io
        >>> out = io.StringIO()
        >>> with progress_lines(out, title="import", step=50) as lines:
        ...     for done in range(5):
        ...         lines("store", done, 4)
        >>> print(out.getvalue(), end="")
        import: storing 0/4 (0%)
        import: storing 2/4 (50%)
        import: storing 4/4 (100%)
    """
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= 100:
        raise ValidationError("step must be a whole percent from 1 to 100")
    shown: dict[str, int] = {}  # stage -> the last step of it written
    prefix = f"{title}: " if title else ""

    def line(stage: str, done: int, total: int) -> None:
        if done == 0 and shown.get(stage) == 100:  # the stage starts again (a new run)
            del shown[stage]
        percent = 100 if total <= 0 else min(100, done * 100 // total)
        mark = 100 if done >= total else percent // step * step
        if shown.get(stage, -1) >= mark:
            return
        shown[stage] = mark
        out = stream if stream is not None else sys.stderr
        out.write(f"{prefix}{STAGES.get(stage, stage)} {done}/{total} ({percent}%)\n")
        out.flush()

    yield line


class LineCounter:
    """A counter with tqdm's ``update(n)`` that reports as :func:`progress_lines` does:
    what a benchmark counting steps prints when standard error is not a terminal (a
    tqdm bar there is one line rewritten with carriage returns, seen at the end).

    Examples:
        >>> import io
        >>> out = io.StringIO()
        >>> with LineCounter(4, "locomo", stream=out, step=50) as bar:
        ...     for _ in range(4):
        ...         bar.update(1)
        >>> print(out.getvalue(), end="")
        locomo: steps 0/4 (0%)
        locomo: steps 2/4 (50%)
        locomo: steps 4/4 (100%)
    """

    def __init__(self, total: int, desc: str, *, stream: TextIO | None = None,
                 step: int = LINE_STEP) -> None:
        self.total, self.n = total, 0
        self._lines = progress_lines(stream, title=desc, step=step)
        self._report = self._lines.__enter__()
        self._report("steps", 0, total)

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps."""
        self.n += n
        self._report("steps", self.n, self.total)

    def close(self) -> None:
        """End the counter (idempotent)."""
        self._lines.__exit__(None, None, None)

    def __enter__(self) -> LineCounter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
