"""The benchmarks' plots, in one place: drawn by the runs and redrawn from their results.

Every ``mars bench ... --out DIR`` that measures something against a size or a budget
writes PNG plots beside its JSON and markdown, with the functions of this module. The
same functions redraw them from a results file the command wrote
(:func:`mars_core.bench.replot.replot`, ``mars bench plot RESULTS --out DIR``), which is
how the docs' images are made without running a benchmark again. Output is deterministic:
fixed figure sizes, fixed colours per name, and no software or date stamp in the PNG
metadata. Readable at any number of series:
every series has a colour of its own (up to :data:`MAX_SERIES`, with a marker and line
style of its own too), legends sit outside the axes so they never cover a line or a
target, and long tick labels are shortened and wrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mars_core.errors import ExtraNotInstalledError

__all__ = [
    "MAX_SERIES",
    "legend_outside",
    "plot_evidence",
    "plot_policies",
    "plot_retention",
    "plot_retrieval",
    "plot_storage",
    "pyplot",
    "save",
    "series_style",
    "short_label",
]

Row = Mapping[str, Any]
DPI = 110
"""Resolution of every plot (pixels per inch)."""

_SMALL_STORE = 1_000
"""Memories of the scale section's small store, for files written before it was recorded."""

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf",  # matplotlib's tab10
            "#000075", "#808000", "#800000", "#469990", "#f032e6", "#9a6324", "#4b0082",
            "#00a86b", "#c71585", "#4682b4")  # ten more, as far from those as on paper
MAX_SERIES = len(_PALETTE)
"""Series a plot tells apart by colour alone; more get a colour twice (and a marker and
line style of their own): draw small multiples instead."""


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed).

    Raises:
        ExtraNotInstalledError: matplotlib (the ``bench`` extra) is not installed.

    Examples:
        >>> pyplot().get_backend().lower()
        'agg'
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - bench extra
        raise ExtraNotInstalledError("bench", "matplotlib") from exc
    return plt


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` as a PNG without a software or date stamp, close it, return ``path``.
    A figure with a legend is cut to what is drawn, so a legend outside the axes is in
    the image; any other keeps its figure size."""
    fig.tight_layout()
    legends = bool(fig.legends) or any(ax.get_legend() is not None for ax in fig.axes)
    fig.savefig(path, dpi=DPI, metadata={"Software": None},
                bbox_inches="tight" if legends else None, pad_inches=0.1)
    pyplot().close(fig)
    return path


def series_style(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A fixed colour, marker and line style per name (sorted, so the same name looks the
    same in every plot of a run): a colour of its own for each of up to
    :data:`MAX_SERIES` names, a marker of its own for each of up to 12, and dashed lines
    for the second half of the list, so two names never look alike.

    Examples:
        >>> looks = series_style([f"m{k}" for k in range(15)])
        >>> len({v["color"] for v in looks.values()})
        15
        >>> len({(v["color"], v["marker"], v["linestyle"]) for v in looks.values()})
        15
    """
    ordered = sorted(set(names))
    half = (len(ordered) + 1) // 2 if len(ordered) > len(_MARKERS) else len(ordered)
    return {name: {"color": _PALETTE[k % len(_PALETTE)], "marker": _MARKERS[k % len(_MARKERS)],
                   "linestyle": "-" if k < half else "--"}
            for k, name in enumerate(ordered)}


def legend_outside(fig: Any, ax: Any, *, below: bool = False, columns: int = 1) -> None:
    """One legend for the figure, from ``ax``'s labelled artists, outside every axes:
    right of them (default) or below them — never over a line, a bar or a target."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if below:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncols=columns, fontsize=8, frameon=False)
    else:
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
                   ncols=columns, fontsize=8, frameon=False)


def short_label(text: str, width: int = 16) -> str:
    """A tick label that fits under its bar: a model's organisation prefix dropped, then
    wrapped at ``width`` characters.

    Examples:
        >>> print(short_label("sentence-transformers/all-MiniLM-L6-v2"))
        all-MiniLM-L6-v2
        >>> print(short_label("an index with a rather long name", 12))
        an index
        with a
        rather long
        name
    """
    import textwrap

    words = text.rsplit("/", 1)[-1] if "/" in text and " " not in text else text
    return "\n".join(textwrap.wrap(words, width, break_long_words=False,
                                   break_on_hyphens=False)) or text


def _log_axes(ax: Any, xlabel: str, ylabel: str, *, logy: bool = True) -> None:
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")


# --- mars bench policies ---------------------------------------------------------------------


def _policy_series(rows: Sequence[Row], value: Callable[[Row], float | None]
                   ) -> dict[str, tuple[list[int], list[float]]]:
    """Per policy (grid rows only: reference rows are single points off the grid), the
    sizes and values, by n; rows whose value is missing or not positive are left out."""
    series: dict[str, tuple[list[int], list[float]]] = {}
    for r in sorted((r for r in rows if not r.get("reference")),
                    key=lambda r: (str(r["policy"]), int(r["n"]))):
        v = value(r)
        if v is None or float(v) <= 0:
            continue
        ns, vs = series.setdefault(str(r["policy"]), ([], []))
        ns.append(int(r["n"]))
        vs.append(float(v))
    return series


def _stat(key: str, stat: str, *, triggered: bool = False) -> Callable[[Row], float | None]:
    """A row's ``key[stat]`` (None for a row without triggers when ``triggered``)."""
    def value(r: Row) -> float | None:
        return None if triggered and not r["triggers"] else float(r[key][stat])
    return value


def _lines(ax: Any, series: Mapping[str, tuple[list[int], list[float]]],
           styles: Mapping[str, Mapping[str, Any]]) -> None:
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, label=name, **styles[name])


def plot_policies(rows: Sequence[Row], out: Path, *, goal_policies: Sequence[str]
                  ) -> list[Path]:
    """The policies benchmark's plots against store size n (log–log), one line per policy.

    ``policies_per_add.png``: mean and median CPU time per add, and the mean's ratio to the
    policy's smallest n with the ≤ 2× goal; ``policies_per_trigger.png``: median and mean
    time inside the policy per trigger; ``policies_rss.png``: the process's peak RSS.

    Args:
        rows: the ``rows`` of ``policies.json`` (``mars_core.bench.policies``).
        out: an existing directory.
        goal_policies: the policies held to the ≤ 2× goal
            (``mars_core.bench.policies.GOAL_POLICIES``): solid lines, the others dashed.

    Returns:
        The paths written.
    """
    plt = pyplot()
    names = sorted({str(r["policy"]) for r in rows if not r.get("reference")})
    styles = {name: {"color": s["color"], "marker": s["marker"],
                     "linestyle": "-" if name in goal_policies else "--"}
              for name, s in series_style(names).items()}
    paths = []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, stat in zip(axes[:2], ("mean", "median"), strict=True):
        _lines(ax, _policy_series(rows, _stat("per_add_cpu_us", stat)), styles)
        _log_axes(ax, "store size n (memories)", f"CPU per add, {stat} (µs)")
    _lines(axes[2], _policy_series(rows, lambda r: r.get("add_cpu_ratio")), styles)
    axes[2].axhline(2.0, color="black", linewidth=1, linestyle=":", label="2× goal")
    _log_axes(axes[2], "store size n (memories)", "mean CPU per add / same at smallest n")
    legend_outside(fig, axes[2])
    fig.suptitle("Per-add cost against store size (steady state, one eviction per add)")
    paths.append(save(fig, out / "policies_per_add.png"))

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, stat in zip(axes, ("median", "mean"), strict=True):
        _lines(ax, _policy_series(rows, _stat("per_trigger_us", stat, triggered=True)), styles)
        _log_axes(ax, "store size n (memories)", f"time in the policy per trigger, {stat} (µs)")
    legend_outside(fig, axes[1])
    fig.suptitle("Per-trigger cost against store size (sweep + apply)")
    paths.append(save(fig, out / "policies_per_trigger.png"))

    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    _lines(ax, _policy_series(rows, lambda r: r["peak_rss_mb"]), styles)
    _log_axes(ax, "store size n (memories)", "peak RSS of the process (MB)")
    legend_outside(fig, ax)
    ax.set_title("Memory against store size")
    paths.append(save(fig, out / "policies_rss.png"))
    return paths


# --- mars bench store ------------------------------------------------------------------------

_COST_RATIOS = (("add_ratio", "add /\nraw add", 1.3),
                ("read_only_ratio", "read_only /\nraw query", 3.0),
                ("access_ratio", "access /\nread_only", 1.2),
                ("observe_ratio", "observe /\nadd", 2.0),
                ("mix_ratio", "add+query /\nraw", None))
"""Section 1's ratios: key, label, target (docs/benchmarks/storage.md)."""


def _bars(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float]],
          targets: Sequence[float | None] = (), fmt: str = "%.2f") -> None:
    """Grouped bars (one group per label, one bar per series), values printed on top,
    each group's target as a black tick across it."""
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width, label=name, color=_PALETTE[k % len(_PALETTE)])
        ax.bar_label(bars, fmt=fmt, fontsize=7)
    label: str | None = "target"
    for g, target in enumerate(targets):
        if target is not None:
            ax.hlines(target, g - 0.45, g + 0.45, colors="black", linewidth=1.5, label=label)
            label = None  # one legend entry for all the ticks
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    ax.margins(y=0.12)  # room above the tallest bar's value


def _legend_below(ax: Any, columns: int = 2) -> None:
    """A panel's own legend under its tick labels (a bar chart's targets and bars are
    at every height, so nowhere inside is free)."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=columns,
              frameon=False)


def _cost_figure(plt: Any, result: Mapping[str, Any], out: Path) -> Path:
    cost, bulk = list(result["cost"]), list(result["bulk"])
    memory = result.get("memory")
    fig, axes = plt.subplots(1, 3 if memory else 2, figsize=(16 if memory else 12, 5),
                             gridspec_kw={"width_ratios": [5, 4, 2] if memory else [5, 4]})
    n = ", ".join(sorted({f"{int(c['n']):,}" for c in cost}))
    _bars(axes[0], [label for _k, label, _t in _COST_RATIOS],
          {str(c["index"]): [float(c[k]) for k, _l, _t in _COST_RATIOS] for c in cost},
          [t for _k, _l, t in _COST_RATIOS])
    axes[0].set_ylabel("ratio of medians (same run)")
    axes[0].set_title(f"Store cost at n = {n} memories")
    _legend_below(axes[0])
    labels = [f"{b['index']}\n{short_label(str(b['embedder']), 12)}\nn = {int(b['n']):,}"
              for b in bulk]
    _bars(axes[1], labels, {"add_many / single adds": [float(b["throughput_ratio"])
                                                         for b in bulk]}, [10.0] * len(bulk))
    axes[1].set_ylabel("throughput ratio")
    axes[1].set_title("Bulk ingest")
    _legend_below(axes[1])
    if memory:
        bars = {"store, add_many (Chroma index)": [float(memory["store"]["peak_rss_mb"])]}
        if "observe" in memory:  # runs before the observe row drew one bar
            bars["store, observe"] = [float(memory["observe"]["peak_rss_mb"])]
        bars["raw chromadb"] = [float(memory["raw"]["peak_rss_mb"])]
        _bars(axes[2], [f"n = {int(memory['n']):,}"], bars, fmt="%.0f")
        axes[2].set_ylabel("peak RSS (MB)")
        axes[2].set_title("One namespace: memory")
        _legend_below(axes[2], columns=1)
    return save(fig, out / "storage_cost.png")


def _scale_figure(plt: Any, scale: Sequence[Row], out: Path) -> Path:
    styles = series_style([str(s["index"]) for s in scale])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for s in scale:
        name, st = str(s["index"]), styles[str(s["index"])]
        sizes = [int(s.get("small_n", _SMALL_STORE)), int(s["big"])]
        for key, style, label in (("", "-", f"{name}"),
                                  ("first_", ":", f"{name}, first open after the load")):
            axes[0].plot(sizes, [float(s[f"{key}small"]["open_retrieve_s"]),
                                 float(s[f"{key}large"]["open_retrieve_s"])],
                         color=st["color"], marker=st["marker"], linestyle=style, label=label)
        axes[1].plot(sizes, [float(s["small"]["peak_rss_mb"]), float(s["large"]["peak_rss_mb"])],
                     color=st["color"], marker=st["marker"], label=name)
    _log_axes(axes[0], "memories in the store", "open + first retrieve (s)")
    axes[0].axhline(1.0, color="black", linewidth=1, linestyle=":", label="1 s target")
    _log_axes(axes[1], "memories in the store", "peak RSS of the process (MB)", logy=False)
    top = max(float(s[k]["peak_rss_mb"]) for s in scale for k in ("small", "large"))
    axes[1].set_ylim(0, 1.2 * top)
    sizes = sorted({int(s.get("small_n", _SMALL_STORE)) for s in scale}
                   | {int(s["big"]) for s in scale})
    for ax in axes:
        ax.set_xticks(sizes, [f"{x:,}" for x in sizes])
        ax.set_xticks([], minor=True)  # the measured sizes only
    legend_outside(fig, axes[0])
    namespaces = ", ".join(sorted({f"{int(s['namespaces']):,}" for s in scale}))
    fig.suptitle(f"A fresh process opens the store and retrieves in one namespace "
                 f"(large store over {namespaces} namespaces)")
    return save(fig, out / "storage_scale.png")


def plot_storage(result: Mapping[str, Any], out: Path) -> list[Path]:
    """The store benchmark's plots: ``storage_cost.png`` (section 1's ratios per index
    with their targets, bulk ingest's throughput ratio, and section 4's peak RSS when
    measured), when sections 1 and 2 ran, and, when the scale section ran,
    ``storage_scale.png`` (open + first retrieve and peak RSS against the store's size,
    per index).

    Args:
        result: what ``mars_core.bench.storage.run`` returns (``storage.json``).
        out: an existing directory.

    Returns:
        The paths written.
    """
    plt = pyplot()
    paths = [_cost_figure(plt, result, out)] if "cost" in result and "bulk" in result else []
    if result.get("scale"):
        paths.append(_scale_figure(plt, list(result["scale"]), out))
    return paths


# --- mars bench locomo / longmemeval ---------------------------------------------------------


def _sel(rows: Sequence[Row], **kw: Any) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def plot_retrieval(rows: Sequence[Row], counter: str, path: Path) -> Path:
    """F1 and recall against the context budget, one line per method."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    methods = sorted({str(r["method"]) for r in _sel(rows, task="retrieval")})
    styles = series_style(methods)
    for m in methods:
        pts = sorted(_sel(rows, task="retrieval", counter=counter, category="all", method=m),
                     key=lambda r: r["budget"])
        for ax, key in zip(axes, ("f1", "recall"), strict=True):
            ax.plot([p["budget"] for p in pts], [p[key] for p in pts], label=m, **styles[m])
    for ax, key in zip(axes, ("F1", "recall"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"context budget ({counter} tokens)")
        ax.set_ylabel(f"evidence {key}")
        ax.grid(alpha=0.3)
    legend_outside(fig, axes[1])
    return save(fig, path)


def plot_retention(rows: Sequence[Row], path: Path) -> Path:
    """Evidence survival against the store share, one line per policy."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    methods = sorted({str(r["method"]) for r in _sel(rows, task="retention")})
    styles = series_style(methods)
    for m in methods:
        pts = sorted(_sel(rows, task="retention", category="all", method=m),
                     key=lambda r: r["budget"])
        ax.plot([100 * p["budget"] for p in pts], [p["survival"] for p in pts], label=m,
                **styles[m])
    ax.set_xlabel("active store budget (% of conversation tokens)")
    ax.set_ylabel("evidence survival")
    ax.grid(alpha=0.3)
    legend_outside(fig, ax)
    return save(fig, path)


def plot_evidence(rows: Sequence[Row], out: Path, prefix: str = "evidence") -> list[Path]:
    """Every plot of an evidence run: ``{prefix}_retrieval_{counter}.png`` per token
    counter measured and ``{prefix}_retention.png`` when the retention task ran."""
    paths = [plot_retrieval(rows, counter, out / f"{prefix}_retrieval_{counter}.png")
             for counter in ("words", "store") if _sel(rows, task="retrieval", counter=counter)]
    if _sel(rows, task="retention"):
        paths.append(plot_retention(rows, out / f"{prefix}_retention.png"))
    return paths
