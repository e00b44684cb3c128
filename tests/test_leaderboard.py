"""The leaderboard across datasets: pooled paired differences, error attribution, and `hopgraph report` over
several run folders. Hand-made scores checked against values worked out by hand; the run folders come from
the scripted runner of test_evals_runner (a scripted graph, named as such: this tests the report, not a
method)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import typer
from langgraph.checkpoint.sqlite import SqliteSaver
from test_evals_runner import Script, run_scripted, saver  # noqa: F401  (saver is a fixture)
from typer.testing import CliRunner

from evals.leaderboard import ERROR_CELLS, error_cell, pooled_differences
from evals.runner import read_records
from evals.stats import pooled_paired_difference
from hopgraph.cli_eval import register


def scored(
    em: float, recall: float | None = None, full: float | None = None, f1: float = 0.0
) -> dict[str, Any]:
    return {"metrics": {"em": em, "f1": f1, "recall@read": recall, "full@read": full}}


def test_every_question_falls_in_exactly_one_error_cell() -> None:
    cases = {
        "right, all evidence read": scored(1.0, 1.0, 1.0),
        "right, part read": scored(1.0, 0.5, 0.0),
        "right without the evidence": scored(1.0, 0.0, 0.0),
        "lost in reading": scored(0.0, 1.0, 1.0),
        "lost in retrieval, partly": scored(0.0, 0.5, 0.0),
        "lost in retrieval": scored(0.0, 0.0, 0.0),
        "no gold evidence, right": scored(1.0),
        "no gold evidence, wrong": scored(0.0),
    }
    assert [error_cell(record) for record in cases.values()] == list(cases)
    assert list(cases) == [name for name, _ in ERROR_CELLS]


def test_pooled_interval_resamples_within_each_dataset() -> None:
    """Two datasets of 50 pairs, differences all 1 in one and all 0 in the other: the pooled mean is 0.5
    and, with each dataset's share fixed, every resample has it too (an unstratified bootstrap would not)."""
    ones, zeros = ([1.0] * 50, [0.0] * 50), ([0.0] * 50, [0.0] * 50)
    assert pooled_paired_difference([ones, zeros]) == (0.5, 0.5, 0.5)
    mean, low, high = pooled_paired_difference([([1.0, 0.0, None], [0.0, 0.0, 1.0]), ([], [])])
    assert mean == 0.5 and 0.0 <= low <= 0.5 <= high <= 1.0  # the None pair is dropped
    assert all(math.isnan(v) for v in pooled_paired_difference([([], [])]))
    with pytest.raises(ValueError, match="aligned"):
        pooled_paired_difference([([1.0], [])])


def records(dataset: str, em: list[float]) -> list[dict[str, Any]]:
    return [{"question_id": f"{dataset}-{i}", "metrics": {"em": v, "f1": v}} for i, v in enumerate(em)]


def test_pooled_differences_are_tested_over_all_datasets_and_holm_corrected() -> None:
    """3 wins and 0 losses in each of two datasets: alone p = 2 / 2**3 = 0.25 each, pooled 6 - 0 gives
    McNemar p = 2 / 2**6; F1 (equal to EM here) by exact sign flips of six +1s, p = 2 / 2**6 too; Holm over
    the two metrics doubles both."""
    answered = {
        "a": {"base": records("a", [0.0] * 10), "new": records("a", [1.0] * 3 + [0.0] * 7)},
        "b": {"base": records("b", [0.0] * 10), "new": records("b", [1.0] * 3 + [0.0] * 7)},
    }
    em, f1 = pooled_differences(answered, "base")
    assert (em.method, em.metric, em.n, f1.metric) == ("new", "EM", 20, "F1")
    assert em.mean == pytest.approx(0.3) and em.p == pytest.approx(2 / 2**6)
    assert f1.p == pytest.approx(2 / 2**6) and em.p_holm == f1.p_holm == pytest.approx(4 / 2**6)
    assert pooled_differences(answered, "absent") == []


def as_dataset(source: Path, target: Path, dataset: str) -> Path:
    """A copy of a run folder's results whose every line says it was run on `dataset`."""
    target.mkdir()
    lines = [{**record, "dataset": dataset} for record in read_records(source / "results.jsonl")]
    (target / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return target


def test_report_pools_run_folders_of_different_datasets(tmp_path: Path, saver: SqliteSaver) -> None:  # noqa: F811
    ran = tmp_path / "toy"
    run_scripted(ran, {"one": Script(), "two": Script(fail_once=frozenset({"question q4?"}))}, saver)
    other = as_dataset(ran, tmp_path / "toy2", "toy2")
    app = typer.Typer()
    register(app)
    refused = CliRunner().invoke(app, ["report", str(ran), str(other)])
    assert refused.exit_code != 0 and "--out" in refused.output

    pooled = CliRunner().invoke(
        app, ["report", str(ran), str(other), "--out", str(tmp_path / "all"), "--baseline", "two"]
    )
    assert pooled.exit_code == 0, pooled.output
    text = (tmp_path / "all" / "report.md").read_text(encoding="utf-8")
    board = text.split("## Leaderboard", 1)[1].split("\n## ", 1)[0]
    assert "| Method | toy EM | toy F1 | toy R@2k ch | toy Full@2k ch | toy2 EM |" in board
    assert "pooled ΔEM vs two" in board
    # one and two answer alike on the 3 questions both answered in each dataset (two failed q4): 0 of 6
    one = next(line for line in board.splitlines() if line.startswith("| one |"))
    assert "| +0.0 [+0.0, +0.0] | 1.000 | +0.0 [+0.0, +0.0] | 1.000 |" in one
    errors = board.split("### Where answers are lost", 1)[1]
    assert "| toy | one | 3 |" in errors and "| toy2 | two | 3 |" in errors
    assert "## toy\n" in text and "## toy2\n" in text
    for png in ("pooled_differences.png", "error_attribution.png", "hop_curves.png", "f1_vs_calls.png"):
        assert (tmp_path / "all" / png).stat().st_size > 10_000
