"""benchmarks/peer_summary.py (no LLM, no peer run): two slices' peer answers and evaluation folders written
as answer_peer and the evaluation write them, read back into the table and the figure the command makes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks.answer_peer import PEER_FILE, answerers
from benchmarks.peer_summary import Slice, chosen, figure
from tests.test_answer_peer_benchmark import PEER_ROWS, line, row_cells, write_run
from tests.test_evals_plots import ytick_labels

REPO = Path(__file__).resolve().parents[1]


def answered(dataset: str, method: str, question: str, prediction: str) -> dict:
    return {**line(question, prediction), "dataset": dataset, "method": method}


def slices(tmp_path: Path) -> list[str]:
    """HotpotQA: the peer right on q1 and q3; NaiveRAG right on all three in the first folder, and
    Iter-RetGen at its old defaults there, then with the direct reader in a later folder. MuSiQue: the same
    peer answers, NaiveRAG alone, wrong on q1."""
    first = write_run(
        tmp_path / "first",
        [
            *(
                answered("hotpotqa", "naive", q, a)
                for q, a in (("q1", "Paris"), ("q2", "Rome"), ("q3", "Oslo"))
            ),
            *(answered("hotpotqa", "iter_retgen", q, "Lyon") for q in ("q1", "q2", "q3")),
        ],
    )
    (first / PEER_FILE).write_text("".join(json.dumps(row) + "\n" for row in PEER_ROWS))
    later = write_run(
        tmp_path / "later",
        [
            answered("hotpotqa", "iter_retgen+reader=direct", q, a)
            for q, a in (("q1", "Paris"), ("q3", "Oslo"))
        ],
    )
    musique = write_run(
        tmp_path / "musique",
        [answered("musique", "naive", q, a) for q, a in (("q1", "Lyon"), ("q2", "Milan"), ("q3", "Oslo"))],
    )
    (musique / PEER_FILE).write_text("".join(json.dumps(row) + "\n" for row in PEER_ROWS))
    return ["--slice", "hotpotqa", str(first), str(later), "--slice", "musique", str(musique)]


def test_the_command_prints_a_method_per_row_and_a_slice_per_column_and_draws_them(tmp_path: Path) -> None:
    plot = tmp_path / "summary.png"
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.peer_summary", *slices(tmp_path), "--plot", str(plot)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    table = out.split("\n\n")[0]
    assert row_cells(table, "peer") == ["66.7", "66.7"]  # the same peer answers on both slices
    # NaiveRAG: HotpotQA all right, +1 question over the peer (q2) with no loss; MuSiQue q1 lost
    assert row_cells(table, "naive") == ["100.0 (+33.3, 1.000)", "33.3 (-33.3, 1.000)"]
    # Iter-RetGen: the later folder's direct reader, not the first folder's old run (all wrong)
    assert row_cells(table, "iter_retgen") == ["100.0 (+0.0, 1.000)", "–"]
    assert "iter_retgen+reader=direct (later)" in out and "iter_retgen (first)" not in out
    assert plot.stat().st_size > 0


def test_a_slice_without_the_peers_answers_names_the_command_that_makes_them(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [answered("hotpotqa", "naive", "q1", "Paris")])
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.peer_summary", "--slice", "hotpotqa", str(run)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert f"{run / PEER_FILE} does not exist" in done.stderr
    assert f"benchmarks.answer_peer DATASET --run {run}" in done.stderr


def test_the_figure_keeps_each_method_on_its_row_in_every_panel(tmp_path: Path) -> None:
    args = slices(tmp_path)
    hotpot = [Path(args[2]), Path(args[3])]
    fig = figure(
        [
            Slice("hotpotqa", PEER_ROWS, chosen(answerers(hotpot, "hotpotqa", PEER_ROWS))),
            Slice("musique", PEER_ROWS, chosen(answerers([Path(args[6])], "musique", PEER_ROWS))),
        ]
    )
    hotpotqa, musique = fig.axes
    assert hotpotqa.get_title() == "HotpotQA (3): EM − peer, points"
    assert ytick_labels(hotpotqa) == ["naive, p 1.000", "iter_retgen, p 1.000"]
    assert ytick_labels(musique) == ["naive, p 1.000", "iter_retgen: not run"]
    drawn = [c for c in musique.containers if isinstance(c, ErrorbarContainer)]
    x, _ = drawn[0].lines[0].get_xydata()[0]
    assert x == pytest.approx(-100 / 3)  # q1 lost, the other two level
