"""The report's two figures, drawn on matplotlib's Agg canvas straight to PNG.

Figures are built with the object API on an explicit Agg canvas rather than through pyplot: no display
is needed, and importing this module leaves the backend of a user's notebook or script alone.

- hop_curves.png: hop-conditioned Precision_r, Recall_r and F1_r against hop r, one line per method and
  one row per dataset: where each method's extra rounds of retrieval buy recall and cost precision.
- f1_vs_calls.png: answer F1 against LLM calls per question, each method's mean with 95% bootstrap
  intervals on both axes over its faint per-question points: what accuracy each method buys per call.
- pooled_differences.png: a forest plot, one row per method, of its paired EM and F1 difference against
  the baseline per dataset and pooled over all, with 95% intervals.
- error_attribution.png: one stacked bar per dataset and method, its answered questions split into the
  error-attribution cells (evals.leaderboard): where each method loses its answers.

`plot_budget_bars` draws a retrieval comparison at equal reading budgets (benchmarks.retrieval_vs_peers).

Each `plot_*` saves the Figure its `*_figure` builds: the figure itself holds the plotted series, labels and
titles, so a test can read them back and check them against the input (a PNG only shows that something
was drawn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from evals.leaderboard import (
    ERROR_CELLS,
    POOLED_METRICS,
    Pooled,
    error_counts,
    per_dataset_difference,
)
from evals.runner import Record
from evals.stats import bootstrap_ci, paired_difference
from stores.files import write_atomic

HOP_CURVES = "hop_curves.png"
F1_VS_CALLS = "f1_vs_calls.png"
FOREST = "pooled_differences.png"
ERRORS = "error_attribution.png"
# dataset -> method -> [(r, precision_r, recall_r, F1_r)], as evals.metrics.macro_by_hop returns them
HopTables = Mapping[str, Mapping[str, Sequence[tuple[int, float, float, float]]]]
Answered = Mapping[str, Mapping[str, Sequence[Record]]]
_PANEL = 3.6  # inches per panel side


def method_colors(methods: Iterable[str]) -> dict[str, str]:
    """One colour per method, in order of first appearance, the same in every panel and figure."""
    cycle = colormaps["tab10"].colors
    return {m: to_hex(cycle[i % len(cycle)]) for i, m in enumerate(dict.fromkeys(methods))}


def _colors(answered: Answered) -> dict[str, str]:
    return method_colors(m for by_method in answered.values() for m in by_method)


def _figure(rows: int, cols: int, width: float, height: float, **kw: object) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, cols, squeeze=False, **kw)


def save_figure(fig: Figure, path: Path) -> Path:
    """Write `fig` as a PNG to `path` atomically, creating its folder (a `--plot` into a new folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: fig.savefig(handle, dpi=130, format="png"))
    return path


def _literal(label: str) -> str:
    """A method, dataset or retriever name as matplotlib shows it verbatim: a `$` pair would otherwise start
    mathtext, and a label such as `naive+note=$x^$` would abort the whole report with a parse error."""
    return label.replace("$", r"\$")


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def hop_curves_figure(hops: HopTables, colors: Mapping[str, str]) -> Figure:
    datasets = list(hops) or ["no results"]
    fig, axes = _figure(len(datasets), 3, 3 * _PANEL, _PANEL * len(datasets), sharey=True)
    for row, dataset in zip(axes, datasets, strict=True):
        curves = {m: v for m, v in hops.get(dataset, {}).items() if v}
        for col, (ax, name) in enumerate(zip(row, ("Precision", "Recall", "F1"), strict=True)):
            ax.set_title(f"{_literal(dataset)}: {name}$_r$", fontsize=10)
            if not curves:
                _empty(ax, "no gold evidence")
                continue
            for method, values in curves.items():
                xs, ys = [v[0] for v in values], [v[col + 1] for v in values]
                ax.plot(xs, ys, marker="o", label=_literal(method), color=colors[method])
            longest = max(len(v) for v in curves.values())
            ax.set_xticks(range(1, longest + 1))
            ax.set_xlim(0.5, longest + 0.5)
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("hop r")
            ax.grid(alpha=0.3)
        if curves:
            row[0].legend(fontsize=8, loc="best")
    return fig


def plot_hop_curves(hops: HopTables, colors: Mapping[str, str], path: Path) -> Path:
    return save_figure(hop_curves_figure(hops, colors), path)


def f1_vs_calls_figure(answered: Answered, colors: Mapping[str, str]) -> Figure:
    datasets = list(answered) or ["no results"]
    fig, axes = _figure(1, len(datasets), 1.4 * _PANEL * len(datasets), _PANEL)
    rng = np.random.default_rng(0)  # fixed jitter: the same results draw the same figure
    for ax, dataset in zip(axes[0], datasets, strict=True):
        by_method = {m: rs for m, rs in answered.get(dataset, {}).items() if rs}
        ax.set_title(_literal(dataset), fontsize=10)
        if not by_method:
            _empty(ax, "no answered questions")
            continue
        # Methods often make the same number of calls (NaiveRAG always one), so each is shifted a little
        # sideways to keep its interval visible; the faint points are jittered too, since calls are whole
        # numbers and F1 is often exactly 0 or 1.
        offsets = np.linspace(-0.15, 0.15, len(by_method)) if len(by_method) > 1 else [0.0]
        lowest, highest = np.inf, -np.inf
        for offset, (method, records) in zip(offsets, by_method.items(), strict=True):
            calls = np.array([r["llm"]["calls"] for r in records], dtype=float)
            f1 = np.array([r["metrics"]["f1"] for r in records], dtype=float)
            lowest, highest = min(lowest, calls.min()), max(highest, calls.max())
            jittered = calls + offset + rng.uniform(-0.04, 0.04, calls.size)
            ax.scatter(jittered, f1, s=14, alpha=0.3, color=colors[method], linewidths=0)
            cx, cx_lo, cx_hi = bootstrap_ci(calls.tolist())
            fy, fy_lo, fy_hi = bootstrap_ci(f1.tolist())
            ax.errorbar(
                cx + offset,
                fy,
                xerr=[[cx - cx_lo], [cx_hi - cx]],
                yerr=[[fy - fy_lo], [fy_hi - fy]],
                fmt="o",
                markersize=8,
                capsize=4,
                color=colors[method],
                markeredgecolor="black",
                label=f"{_literal(method)} (n={len(records)})",
            )
        ax.set_xlim(max(0.0, lowest - 1), highest + 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_xlabel("LLM calls per question")
        ax.set_ylabel("answer F1")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    return fig


def plot_f1_vs_calls(answered: Answered, colors: Mapping[str, str], path: Path) -> Path:
    return save_figure(f1_vs_calls_figure(answered, colors), path)


@dataclass(frozen=True)
class Interval:
    """One row of an intervals panel: a difference in points (0-1 scale, drawn x100) with its 95% interval;
    `pooled` rows are drawn large and black-edged, as the result the rows above them add up to."""

    label: str
    mean: float
    low: float
    high: float
    color: str
    pooled: bool = False


def intervals_figure(panels: Mapping[str, Sequence[Interval]], empty: str = "nothing to compare") -> Figure:
    """One panel per title, side by side, each a column of differences with their intervals (first row on
    top) and a line at zero: which differences clear the noise, at a glance."""
    rows = max((len(panel) for panel in panels.values()), default=0)
    longest = max((len(row.label) for panel in panels.values() for row in panel), default=0)
    width = max(2 * _PANEL, len(panels) * (2.4 + 0.055 * longest))  # the row labels' room (7 pt text)
    fig, axes = _figure(1, max(len(panels), 1), width, 1.0 + 0.5 * max(rows, 1))
    for ax, (title, intervals) in zip(axes[0], panels.items(), strict=False):
        ax.set_title(_literal(title), fontsize=10)
        if not intervals:
            _empty(ax, empty)
            continue
        for y, row in enumerate(intervals):
            ax.errorbar(
                100 * row.mean,
                y,
                xerr=[[100 * (row.mean - row.low)], [100 * (row.high - row.mean)]],
                fmt="D" if row.pooled else "o",
                markersize=7 if row.pooled else 4,
                capsize=3 if row.pooled else 2,
                color=row.color,
                alpha=None if row.pooled else 0.6,
                markeredgecolor="black" if row.pooled else row.color,
            )
        ax.set_yticks(range(len(intervals)), [_literal(row.label) for row in intervals], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0, color="0.3", linewidth=0.8)
        ax.grid(axis="x", alpha=0.3)
    return fig


def forest_figure(
    answered: Answered, pooled_rows: Sequence[Pooled], baseline: str, colors: Mapping[str, str]
) -> Figure:
    """Paired differences against `baseline` (EM and F1 panels): per method a row of points, one per
    dataset (small) and the pooled one (`pooled_rows`, large, black-edged), each with its 95% interval."""
    pooled = {(row.method, row.metric): row for row in pooled_rows}
    methods = list(dict.fromkeys(method for method, _ in pooled))
    panels: dict[str, list[Interval]] = {}
    for key, name, _ in POOLED_METRICS:
        rows = panels.setdefault(f"{name}: method − {baseline} (points)", [])
        for method in methods:
            for dataset, (xs, ys) in per_dataset_difference(answered, method, baseline, key).items():
                rows.append(Interval(f"{method} · {dataset}", *paired_difference(xs, ys), colors[method]))
            row = pooled[(method, name)]
            label = f"{method} · pooled (n={row.n})"
            rows.append(Interval(label, row.mean, row.low, row.high, colors[method], pooled=True))
    return intervals_figure(panels, empty=f"no method to compare with {baseline}")


def plot_forest(
    answered: Answered, pooled_rows: Sequence[Pooled], baseline: str, colors: Mapping[str, str], path: Path
) -> Path:
    return save_figure(forest_figure(answered, pooled_rows, baseline, colors), path)


def error_attribution_figure(answered: Answered) -> Figure:
    """One horizontal bar per dataset and method, stacked by error-attribution cell, in % of its answered
    questions, the cells in ERROR_CELLS order and colours (right ones green, lost ones red/orange)."""
    counts = error_counts(answered)
    bars = [
        (_literal(f"{method} · {dataset}"), c)
        for dataset, by_method in counts.items()
        for method, c in by_method.items()
    ]
    fig, axes = _figure(1, 1, 2.4 * _PANEL, 1.6 + 0.32 * max(len(bars), 1))
    ax = axes[0][0]
    if not bars:
        _empty(ax, "no answered questions")
        return fig
    palette = ["#1a9850", "#91cf60", "#d9ef8b", "#fdae61", "#f46d43", "#d73027", "#74add1", "#4575b4"]
    left = np.zeros(len(bars))
    for (cell, _), color in zip(ERROR_CELLS, palette, strict=True):
        shares = np.array([100 * c[cell] / max(sum(c.values()), 1) for _, c in bars])
        ax.barh(range(len(bars)), shares, left=left, color=color, label=cell, height=0.7)
        left += shares
    ax.set_yticks(range(len(bars)), [label for label, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of answered questions")
    fig.legend(fontsize=7, loc="outside lower center", ncol=4)
    return fig


def plot_error_attribution(answered: Answered, path: Path) -> Path:
    return save_figure(error_attribution_figure(answered), path)


def write_plots(
    answered: Answered, hops: HopTables, pooled: Sequence[Pooled], out_dir: str | Path, baseline: str
) -> list[Path]:
    """Draw every figure into `out_dir` from the answered results, their hop tables and the pooled
    differences against `baseline` (evals.leaderboard.pooled_differences); returns the files."""
    out_dir = Path(out_dir)
    colors = _colors(answered)
    return [
        plot_hop_curves(hops, colors, out_dir / HOP_CURVES),
        plot_f1_vs_calls(answered, colors, out_dir / F1_VS_CALLS),
        plot_forest(answered, pooled, baseline, colors, out_dir / FOREST),
        plot_error_attribution(answered, out_dir / ERRORS),
    ]


def budget_bars_figure(
    rows: Mapping[str, Mapping[str, float]], title: str, xlabel: str = "share of gold facts found"
) -> Figure:
    """Horizontal bars, one group per retriever and one bar per column, on a 0-1 scale: how much of the
    gold each retriever finds when every one may show the reader the same amount of text (or any other
    retrieval scores side by side, such as precision / recall / F1)."""
    names = list(rows)
    budgets = list(dict.fromkeys(column for row in rows.values() for column in row))
    bars_per_group = max(len(budgets), 1)
    height = 0.8 / bars_per_group
    fig, axes = _figure(1, 1, 2 * _PANEL, 0.6 + 0.225 * len(names) * bars_per_group)
    ax = axes[0][0]
    cycle = colormaps["tab10"].colors
    positions = np.arange(len(names))
    for i, budget in enumerate(budgets):
        values = [rows[name].get(budget, np.nan) for name in names]
        bars = ax.barh(
            positions + i * height, values, height, label=_literal(budget), color=cycle[i % len(cycle)]
        )
        ax.bar_label(bars, fmt="%.3f", fontsize=7, padding=2)
    ax.set_yticks(positions + height * (len(budgets) - 1) / 2, [_literal(name) for name in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def plot_budget_bars(
    rows: Mapping[str, Mapping[str, float]],
    title: str,
    path: Path,
    xlabel: str = "share of gold facts found",
) -> Path:
    return save_figure(budget_bars_figure(rows, title, xlabel), path)
