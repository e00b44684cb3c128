"""The report's figures read back: each plotted series, label and title against the input it was drawn from.

A PNG of some size only shows that something was drawn; these tests open the matplotlib Figure each
`plot_*` saves (its `*_figure` builder) and check what is on it: which points, in which order, with which
labels, so a series drawn from the wrong column, method or dataset fails.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer, ErrorbarContainer

from evals.leaderboard import ERROR_CELLS, Pooled
from evals.plots import (
    budget_bars_figure,
    error_attribution_figure,
    f1_vs_calls_figure,
    forest_figure,
    hop_curves_figure,
)
from evals.stats import bootstrap_ci

COLORS = {"one": "#1f77b4", "two": "#ff7f0e"}
HOPS = {
    "toy": {
        "one": [(1, 0.5, 0.25, 1 / 3), (2, 0.4, 0.5, 4 / 9)],
        "two": [(1, 1.0, 0.75, 6 / 7)],
    },
    "other": {"one": [], "two": []},  # no gold evidence: nothing to draw
}


def record(qid: str, calls: int, em: float, f1: float, recall: float | None, full: float | None) -> dict:
    """A scored answered result, with only what the figures read."""
    metrics = {"em": em, "f1": f1, "recall@read": recall, "full@read": full}
    return {"question_id": qid, "llm": {"calls": calls}, "metrics": metrics}


ANSWERED: dict[str, dict[str, list[dict]]] = {
    "toy": {
        "one": [
            record("q1", 1, 1.0, 1.0, 1.0, 1.0),  # right, all evidence read
            record("q2", 1, 0.0, 0.5, 0.0, 0.0),  # lost in retrieval
            record("q3", 1, 0.0, 0.0, 0.5, 0.0),  # lost in retrieval, partly
            record("q4", 1, 1.0, 1.0, 0.5, 0.0),  # right, part read
        ],
        "two": [
            record("q1", 3, 1.0, 1.0, 1.0, 1.0),
            record("q2", 5, 1.0, 1.0, 1.0, 1.0),
            record("q3", 4, 0.0, 0.2, 1.0, 1.0),  # lost in reading
        ],
    }
}


def xy(line: Any) -> np.ndarray:
    """A line's points as an (n, 2) array of (x, y)."""
    return np.asarray(line.get_xydata(), dtype=float)


def ytick_labels(ax: Axes) -> list[str]:
    return [label.get_text() for label in ax.get_yticklabels()]


def test_hop_curves_draw_each_methods_precision_recall_and_f1_by_hop() -> None:
    fig = hop_curves_figure(HOPS, COLORS)
    axes = np.array(fig.axes).reshape(2, 3)  # a row per dataset, a column per measure
    for col, name in enumerate(("Precision", "Recall", "F1")):
        ax = axes[0][col]
        assert ax.get_title() == f"toy: {name}$_r$"
        assert [line.get_label() for line in ax.lines] == ["one", "two"]
        for line, method in zip(ax.lines, ("one", "two"), strict=True):
            expected = np.array([(r, values[col]) for r, *values in HOPS["toy"][method]])
            assert xy(line) == pytest.approx(expected)
            assert line.get_color() == COLORS[method]
        assert ax.get_xticks().tolist() == [1, 2]  # the longest curve's hops
    assert [t.get_text() for t in axes[0][0].get_legend().get_texts()] == ["one", "two"]
    for ax in axes[1]:  # the dataset without gold evidence says so instead of drawing an empty grid
        assert len(ax.lines) == 0 and [t.get_text() for t in ax.texts] == ["no gold evidence"]


def test_f1_against_calls_draws_each_methods_mean_with_its_intervals_over_its_questions() -> None:
    fig = f1_vs_calls_figure(ANSWERED, COLORS)
    [ax] = fig.axes
    assert ax.get_title() == "toy" and ax.get_xlabel() == "LLM calls per question"
    means = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in means] == ["one (n=4)", "two (n=3)"]
    # two methods are shifted apart by 0.3 calls so their intervals stay visible
    for container, method, offset in zip(means, ("one", "two"), (-0.15, 0.15), strict=True):
        calls = [r["llm"]["calls"] for r in ANSWERED["toy"][method]]
        f1 = [r["metrics"]["f1"] for r in ANSWERED["toy"][method]]
        data_line, _, (xbar, ybar) = container.lines
        assert xy(data_line) == pytest.approx(np.array([[np.mean(calls) + offset, np.mean(f1)]]))
        _, x_low, x_high = bootstrap_ci(calls)
        _, y_low, y_high = bootstrap_ci(f1)
        [x_segment] = xbar.get_segments()
        [y_segment] = ybar.get_segments()
        assert sorted(x_segment[:, 0]) == pytest.approx([x_low + offset, x_high + offset])
        assert sorted(y_segment[:, 1]) == pytest.approx([y_low, y_high])
        assert data_line.get_color() == COLORS[method]
    # the faint points: every question's F1 as given, its calls jittered by at most 0.04 around the shift
    points = [c for c in ax.collections if isinstance(c, PathCollection)]
    for scatter, method, offset in zip(points, ("one", "two"), (-0.15, 0.15), strict=True):
        records = ANSWERED["toy"][method]
        offsets = scatter.get_offsets()
        assert offsets[:, 1].tolist() == [r["metrics"]["f1"] for r in records]
        shifted = np.array([r["llm"]["calls"] + offset for r in records])
        assert np.all(np.abs(offsets[:, 0] - shifted) <= 0.04)
    assert ax.get_xlim() == (0.0, 6.0)  # from one call less than the fewest to one more than the most


def test_the_forest_plot_puts_each_datasets_difference_and_the_pooled_one_on_its_row() -> None:
    pooled = [Pooled("two", "EM", 0.25, -0.1, 0.6, 3, 0.5), Pooled("two", "F1", 0.1, 0.0, 0.3, 3, 0.4)]
    fig = forest_figure(ANSWERED, pooled, "one", COLORS)
    em, f1 = fig.axes
    assert em.get_title() == "EM: method − one (points)" and f1.get_title() == "F1: method − one (points)"
    for ax, key, row in ((em, "em", pooled[0]), (f1, "f1", pooled[1])):
        assert ytick_labels(ax) == ["two · toy", "two · pooled (n=3)"]
        per_dataset, pooled_point = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        # two's score minus one's on the three questions both answered, in points
        two = {r["question_id"]: r["metrics"][key] for r in ANSWERED["toy"]["two"]}
        one = {r["question_id"]: r["metrics"][key] for r in ANSWERED["toy"]["one"]}
        difference = np.mean([two[q] - one[q] for q in two])
        assert xy(per_dataset.lines[0]) == pytest.approx(np.array([[100 * difference, 0]]))
        assert xy(pooled_point.lines[0]) == pytest.approx(np.array([[100 * row.mean, 1]]))
        [segment] = pooled_point.lines[2][0].get_segments()
        assert sorted(segment[:, 0]) == pytest.approx([100 * row.low, 100 * row.high])


def test_error_attribution_stacks_each_methods_share_of_questions_per_cell() -> None:
    fig = error_attribution_figure(ANSWERED)
    [ax] = fig.axes
    assert ytick_labels(ax) == ["one · toy", "two · toy"]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars] == [cell for cell, _ in ERROR_CELLS]
    shares = {c.get_label(): [patch.get_width() for patch in c.patches] for c in bars}
    # one: q1 right with all read, q4 right with part, q3 lost partly, q2 lost in retrieval (25% each);
    # two: q1 and q2 right with all read, q3 lost in reading
    expected = {cell: [0.0, 0.0] for cell, _ in ERROR_CELLS}
    expected["right, all evidence read"] = [25.0, 200 / 3]
    expected["right, part read"] = [25.0, 0.0]
    expected["lost in retrieval, partly"] = [25.0, 0.0]
    expected["lost in retrieval"] = [25.0, 0.0]
    expected["lost in reading"] = [0.0, 100 / 3]
    assert shares.keys() == expected.keys()
    for cell, widths in expected.items():
        assert shares[cell] == pytest.approx(widths), cell
    # stacked: each cell's bar starts where the cells before it end
    starts = np.array([[patch.get_x() for patch in c.patches] for c in bars])
    widths = np.array([[patch.get_width() for patch in c.patches] for c in bars])
    assert starts == pytest.approx(np.vstack([np.zeros(2), np.cumsum(widths, axis=0)[:-1]]))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [cell for cell, _ in ERROR_CELLS]


def test_budget_bars_draw_each_retrievers_value_per_budget_and_label_it() -> None:
    rows = {"peer BM25": {"4,000 chars": 0.4, "10,000 chars": 0.5}, "chainrag": {"4,000 chars": 0.625}}
    fig = budget_bars_figure(rows, "HotpotQA", xlabel="recall")
    [ax] = fig.axes
    assert ax.get_title() == "HotpotQA" and ax.get_xlabel() == "recall"
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars] == ["4,000 chars", "10,000 chars"]
    assert [p.get_width() for p in bars[0].patches] == [0.4, 0.625]
    widths = [p.get_width() for p in bars[1].patches]
    assert widths[0] == 0.5 and np.isnan(widths[1])  # chainrag has no 10,000-character value: no bar
    assert ytick_labels(ax) == ["peer BM25", "chainrag"]
    assert [t.get_text() for t in ax.texts] == ["0.400", "0.625", "0.500", ""]  # each bar's value


def test_an_empty_run_draws_panels_that_say_so() -> None:
    [hop_ax, *_] = hop_curves_figure({}, {}).axes
    assert hop_ax.get_title() == "no results: Precision$_r$"
    assert [t.get_text() for t in hop_ax.texts] == ["no gold evidence"]
    [calls_ax] = f1_vs_calls_figure({}, {}).axes
    assert [t.get_text() for t in calls_ax.texts] == ["no answered questions"]
    [errors_ax] = error_attribution_figure({}).axes
    assert [t.get_text() for t in errors_ax.texts] == ["no answered questions"]
    assert len(errors_ax.patches) == 0
