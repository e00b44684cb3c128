"""benchmarks/answer_peer.py's comparison (no LLM, no peer run): the peer's replies and two evaluation folders
written as the evaluation writes them, read back into the table the command prints and the figure it draws."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks.answer_peer import compare, differences_figure
from evals.runner import results_path
from tests.test_evals_plots import xy, ytick_labels

PEER_ROWS = [
    {"question": "q1", "gold_answers": ["Paris"], "rag": "Paris", "closed_book": "Lyon"},
    {"question": "q2", "gold_answers": ["Rome"], "rag": "Milan", "closed_book": "Rome"},
    {"question": "q3", "gold_answers": ["Oslo"], "rag": "Oslo", "closed_book": "Bergen"},
]


def line(question: str, prediction: str | None, echoes: int = 0) -> dict:
    """A result line: answered with `prediction`, or failed (None: an error, no prediction or metrics)."""
    return {
        "type": "result", "dataset": "hotpotqa", "method": "naive", "question_id": question,
        "question": question, "prediction": prediction, "error": None if prediction else "TimeoutError",
        "metrics": {"em": 0.0} if prediction else None, "llm": {"echoes": echoes} if prediction else None,
    }  # fmt: skip


def write_run(folder: Path, lines: list[dict]) -> Path:
    folder.mkdir()
    results_path(folder).write_text("".join(json.dumps(record) + "\n" for record in lines))
    return folder


def row_cells(table: str, name: str) -> list[str]:
    row = next(text for text in table.splitlines() if text.startswith(f"| {name} |"))
    return row.strip("| \n").split(" | ")[1:]


def test_each_run_is_scored_against_the_peer_on_the_questions_it_answered(tmp_path: Path) -> None:
    # before: right twice, and once right but too long for EM (the gold answer inside), with an echo
    before = write_run(
        tmp_path / "before",
        [line("q1", "Paris"), line("q2", "Rome"), line("q3", "the city of Oslo in Norway today", echoes=1)],
    )
    # after: q2 failed on its first try and again (left out), q3 now the span
    after = write_run(
        tmp_path / "after", [line("q1", "Paris"), line("q2", None), line("q2", None), line("q3", "Oslo")]
    )
    table = compare([before, after], "hotpotqa", PEER_ROWS)

    peer = row_cells(table, "peer (rag)")
    assert peer[0] == "3" and peer[1].startswith("66.7 [")  # Paris and Oslo right, Milan wrong
    first = row_cells(table, "naive (before)")
    assert first[0] == "3" and first[1].startswith("66.7 [") and first[3].startswith("0.0 [")
    # words 1, 1, 7: mean 3.0, one answer in three longer than its gold by more than 3 words; the peer got
    # q3 right and this run did not, with "Oslo" inside the answer
    assert first[6:9] == ["3.0", "33%", "1 of 1"] and first[9] == "1"
    second = row_cells(table, "naive (after)")
    assert second[0] == "2" and second[1].startswith("100.0 [") and second[9] == "0"
    # paired on q1 and q3, the questions both runs answered: 1 - 1 and 1 - 0
    assert "naive, after - before on the questions both answered: EM 50.0 [" in table


def test_the_plot_draws_each_runs_paired_difference_against_the_peer(tmp_path: Path) -> None:
    before = write_run(tmp_path / "before", [line("q1", "Paris"), line("q2", "Rome"), line("q3", "Bergen")])
    after = write_run(tmp_path / "after", [line("q1", "Lyon"), line("q2", None), line("q3", "Oslo")])
    fig = differences_figure([before, after], "hotpotqa", PEER_ROWS)
    em, f1 = fig.axes
    assert em.get_title() == "EM − peer, hotpotqa (3 questions, points)"
    # EM: before right on q1, q2, the peer on q1, q3: one won, one lost, so 0 and McNemar's p 1; after (q2
    # failed) wrong on q1 and right on q3 where the peer was right on both: -50 points on two questions
    assert ytick_labels(em) == ["naive (before), p 1.000", "naive (after), p 1.000"]
    assert ytick_labels(f1) == ["naive (before)", "naive (after)"]
    first, second = [c for c in em.containers if isinstance(c, ErrorbarContainer)]
    assert xy(first.lines[0]) == pytest.approx(np.array([[0.0, 0]]))
    assert xy(second.lines[0]) == pytest.approx(np.array([[-50.0, 1]]))
    [segment] = second.lines[2][0].get_segments()
    assert sorted(segment[:, 0]) == pytest.approx([-100.0, 0.0])  # the bootstrap's two outcomes: -1 or 0
