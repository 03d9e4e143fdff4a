"""``mars bench plot``: a results file that is missing, not JSON, of no benchmark, or
lacks what its plots need is a typed error, and the output directory is left as it was.

(The runs' own plots, and their redrawing byte for byte, are tested with each benchmark's
smoke run: test_bench_policies, test_bench_storage, test_bench_evidence, test_fifa.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pngs import assert_plots

from mars_core.bench.replot import replot, results_kind
from mars_core.cli import main as cli_main
from mars_core.errors import ValidationError


def _row(policy: str, n: int) -> dict[str, Any]:
    """A row with the fields the policy plots read (the shape of policies.json)."""
    return {"policy": policy, "n": n, "triggers": 10, "peak_rss_mb": n / 10,
            "per_add_cpu_us": {"mean": 1000.0 + n / 100, "median": 990.0},
            "per_trigger_us": {"mean": 50.0, "median": 40.0}, "add_cpu_ratio": 1.0}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An output directory that already holds an older plot."""
    folder = tmp_path / "img"
    folder.mkdir()
    (folder / "policies_rss.png").write_bytes(b"an older plot")
    return folder


def test_a_well_formed_file_is_drawn_where_asked(tmp_path: Path, out: Path) -> None:
    path = tmp_path / "policies.json"
    path.write_text(json.dumps({"meta": {}, "rows": [_row(p, n) for p in ("fifo", "lru")
                                                     for n in (1000, 10_000)]}))
    written = replot(path, out)
    assert [p.parent for p in written] == [out] * 3
    assert_plots(out, [p.name for p in written])


BAD: dict[str, tuple[str | None, str]] = {
    "missing": (None, "cannot read benchmark results"),
    "not JSON": ("{ not json", "cannot read benchmark results"),
    "no benchmark's": (json.dumps({"rows": [{"x": 1}]}), "not a benchmark results file"),
    "empty rows": (json.dumps({"meta": {}, "rows": []}), "not a benchmark results file"),
    "a list": (json.dumps([1, 2]), "not a benchmark results file"),
    "a row without peak RSS": (json.dumps({"meta": {}, "rows": [
        {k: v for k, v in _row("fifo", 1000).items() if k != "peak_rss_mb"}]}),
        "not a well-formed policies results file"),
    "a statistic that is not a number": (json.dumps({"meta": {}, "rows": [
        {**_row("fifo", 1000), "per_add_cpu_us": {"mean": "fast", "median": 1.0}}]}),
        "not a well-formed policies results file"),
    "storage without its sections' fields": (json.dumps({"cost": [{"index": "numpy"}],
                                                         "bulk": []}),
                                             "not a well-formed storage results file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_results_file_is_a_typed_error_and_nothing_changes(
        case: str, tmp_path: Path, out: Path) -> None:
    text, message = BAD[case]
    path = tmp_path / "results.json"
    if text is not None:
        path.write_text(text)
    before = _snapshot(out)
    with pytest.raises(ValidationError, match=message):
        replot(path, out)
    assert _snapshot(out) == before  # no plot replaced, no temporary directory left


def test_the_command_exits_2_and_says_why(tmp_path: Path, out: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "storage.json"
    path.write_text(json.dumps({"cost": "not a list"}))
    before = _snapshot(out)
    assert cli_main(["bench", "plot", str(path), "--out", str(out)]) == 2
    said = " ".join(capsys.readouterr().err.split())  # errors go to standard error
    assert "not a benchmark results file" in said and "mars bench store" in said
    assert _snapshot(out) == before


@pytest.mark.parametrize(("doc", "kind"), [
    ({"meta": {}, "rows": [_row("fifo", 1000)]}, "policies"),
    ({"cost": [], "bulk": []}, "storage"),
    ({"meta": {}, "rows": [{"task": "retrieval", "method": "dense"}]}, "evidence"),
    ({"cells": [], "summary": {}}, "fifa"),
])
def test_each_kind_is_recognised(doc: dict[str, Any], kind: str) -> None:
    assert results_kind(doc) == kind


def test_every_series_has_its_own_colour_and_no_legend_covers_an_axes() -> None:
    """15 methods, as an evidence run draws them, in 15 colours (it was 10: 'ours' and
    'dense' shared red), and the legend right of the axes, over none of them."""
    from mars_core.bench.plots import legend_outside, pyplot, series_style

    names = [f"method-{k:02d}" for k in range(15)]
    styles = series_style(names)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name in names:
        for ax in axes:
            ax.plot([1, 2, 4], [k := names.index(name), k + 1, k + 2], label=name,
                    **styles[name])
    legend_outside(fig, axes[1])
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    assert all(not box.overlaps(ax.get_window_extent()) for ax in axes)
    assert len({line.get_color() for line in axes[0].lines}) == 15
    plt.close(fig)


def test_long_tick_labels_are_shortened_and_wrapped() -> None:
    from mars_core.bench.plots import short_label

    label = short_label("sentence-transformers/all-MiniLM-L6-v2", 12)
    assert label == "all-MiniLM-L6-v2"  # one unbreakable word: kept whole
    assert max(len(line) for line in short_label("numpy index, precomputed vectors",
                                                 12).splitlines()) <= 12
