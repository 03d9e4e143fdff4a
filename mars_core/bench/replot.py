"""Redraw a benchmark's plots from the results file its ``--out`` wrote (``mars bench plot
RESULTS --out DIR``), with the functions the runs themselves call
(:mod:`mars_core.bench.plots`, and FiFA's :func:`mars_core.bench.fifa.report.plot`). Above
the plots and the runs, so the plots import none of them back.

Kinds of results file (:func:`results_kind`):

* ``policies`` — ``policies.json`` of ``mars bench policies``: per-add CPU cost, per-trigger
  cost and peak RSS against store size n, one line per policy (:func:`plot_policies`);
* ``storage`` — ``storage.json`` of ``mars bench store``: the cost ratios against raw
  chromadb and bulk ingest as bars, open + first retrieve and peak RSS against store size
  per index (:func:`plot_storage`);
* ``evidence`` — ``results.json`` of ``mars bench locomo`` / ``longmemeval``: F1 and recall
  against the context budget, evidence survival against the store budget
  (:func:`plot_evidence`);
* ``fifa`` — ``results.json`` of ``mars bench fifa``: its heatmap and distributions.

Examples:
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> rows = [{"policy": "fifo", "n": n, "triggers": 1, "peak_rss_mb": 100.0,
    ...          "per_add_cpu_us": {"mean": 1000.0, "median": 990.0},
    ...          "per_trigger_us": {"mean": 50.0, "median": 40.0}, "add_cpu_ratio": 1.0}
    ...         for n in (1000, 10000)]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = Path(tmp, "policies.json").write_text(json.dumps({"meta": {}, "rows": rows}))
    ...     [p.name for p in replot(Path(tmp, "policies.json"), Path(tmp, "img"))]
    ['policies_per_add.png', 'policies_per_trigger.png', 'policies_rss.png']
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from mars_core.bench.fifa.report import plot as plot_fifa
from mars_core.bench.plots import plot_evidence, plot_policies, plot_storage, pyplot
from mars_core.bench.policies import GOAL_POLICIES
from mars_core.bench.report import results_dir
from mars_core.errors import ValidationError

__all__ = ["KINDS", "ResultsKind", "replot", "results_kind"]

ResultsKind = Literal["policies", "storage", "evidence", "fifa"]
KINDS: tuple[ResultsKind, ...] = ("policies", "storage", "evidence", "fifa")
"""The results files :func:`replot` redraws (module docstring)."""


def results_kind(doc: Any) -> ResultsKind:
    """Which benchmark wrote the parsed results file ``doc`` (module docstring).

    Raises:
        ValidationError: none of them.

    Examples:
        >>> results_kind({"cost": [], "bulk": []})
        'storage'
    """
    if isinstance(doc, Mapping):
        rows = doc.get("rows")
        if isinstance(rows, list) and rows and all(isinstance(r, Mapping) for r in rows):
            if all("policy" in r and "per_add_cpu_us" in r for r in rows):
                return "policies"
            if all("task" in r and "method" in r for r in rows):
                return "evidence"
        if isinstance(doc.get("cost"), list) and isinstance(doc.get("bulk"), list):
            return "storage"
        if isinstance(doc.get("cells"), list) and isinstance(doc.get("summary"), Mapping):
            return "fifa"
    raise ValidationError("not a benchmark results file: expected the policies.json of "
                          "`mars bench policies`, the storage.json of `mars bench store`, or "
                          "the results.json of `mars bench locomo|longmemeval|fifa`")


def _draw(kind: ResultsKind, doc: Mapping[str, Any], out: Path) -> list[Path]:
    if kind == "policies":
        return plot_policies(doc["rows"], out, goal_policies=GOAL_POLICIES)
    if kind == "storage":
        return plot_storage(doc, out)
    if kind == "evidence":  # files written before the prefix was recorded: "evidence"
        return plot_evidence(doc["rows"], out, str(doc.get("prefix", "evidence")))
    return plot_fifa(doc, doc["cells"], out)


def replot(results: str | os.PathLike[str], out: str | os.PathLike[str] | None = None
           ) -> list[Path]:
    """Redraw a benchmark's plots from the results file its ``--out`` wrote, with the
    functions the run itself calls (``mars bench plot``).

    The plots are drawn into a temporary directory inside ``out`` and moved into place
    only when all of them were drawn: a file that is not well formed leaves ``out`` as
    it was.

    Args:
        results: ``policies.json``, ``storage.json`` or an evidence or FiFA ``results.json``.
        out: directory for the PNG files (default: the results file's directory, where
            the run wrote them); made if missing.

    Returns:
        The paths written, in ``out``.

    Raises:
        ValidationError: the file is missing, not JSON, not a results file, or lacks what
            its plots need; or ``out`` cannot be a directory.
    """
    source = Path(results)
    try:
        doc = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValidationError(f"cannot read benchmark results {str(source)!r}: {exc}") from None
    try:
        kind = results_kind(doc)
    except ValidationError as exc:
        raise ValidationError(f"{source}: {exc}") from None
    folder = results_dir(source.parent if out is None else out)
    with tempfile.TemporaryDirectory(prefix=".replot-", dir=folder) as tmp:
        try:
            drawn = _draw(kind, doc, Path(tmp))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ValidationError(f"{source} is not a well-formed {kind} results file "
                                  f"({type(exc).__name__}: {exc}); nothing was written"
                                  ) from None
        finally:
            pyplot().close("all")
        placed = []
        for path in drawn:
            os.replace(path, folder / path.name)
            placed.append(folder / path.name)
    return placed
