"""benchmarks/structured_output.py's comparison (no LLM): two evaluation folders, structured output off and
on, written as the evaluation writes them, read back into the table the command prints and the figure it
draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks.structured_output import figure, index_table, table
from prompts.structured import UNREAD
from stores.index import IndexStore
from stores.question_graph import QUESTION_GRAPH
from stores.questions import QUESTIONS
from tests.test_answer_peer_benchmark import row_cells, write_run
from tests.test_biqog_edges import build, scripted_models
from tests.test_evals_plots import xy, ytick_labels
from tests.test_quote import DOCS


def line(method: str, question: str, em: float, f1: float, seconds: float, fallbacks: list[str]) -> dict:
    """An answered result line with its scores, its seconds and its LLM counts (two calls)."""
    return {
        "type": "result", "dataset": "hotpotqa", "method": method, "question_id": question,
        "question": question, "prediction": "an answer", "error": None, "seconds": seconds,
        "metrics": {"em": em, "f1": f1}, "fallbacks": fallbacks,
        "llm": {"calls": 2, "echoes": 0, "structured_refused": 0},
    }  # fmt: skip


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """Off: decomposition right on q1 and q2, a repaired list once; on: right on q1 only, one reply not of its
    shape. ReSP answered on the off side only (its on side not run yet)."""
    off = [
        line("decomposition", "q1", 1.0, 1.0, 10.0, ["decompose: 2 of 3 sub-questions: kept"]),
        line("decomposition", "q2", 1.0, 1.0, 12.0, []),
        line("decomposition", "q3", 0.0, 0.5, 14.0, []),
        line("resp", "q1", 1.0, 1.0, 5.0, []),
    ]
    on = [
        line("decomposition", "q1", 1.0, 1.0, 9.0, []),
        line("decomposition", "q2", 0.0, 0.5, 11.0, [f"decompose: {UNREAD}: repaired"]),
        line("decomposition", "q3", 0.0, 0.5, 13.0, []),
    ]
    return {"off": write_run(tmp_path / "off", off), "on": write_run(tmp_path / "on", on)}


def test_the_table_counts_each_side_and_pairs_the_questions_both_answered(runs: dict[str, Path]) -> None:
    text = table(runs)
    rows = [row.strip("| ").split(" | ") for row in text.splitlines() if row.startswith("| decomposition |")]
    off, on, difference = rows
    # per side: questions, calls a question, fallbacks and unread structured replies per 100 calls
    assert off[1:6] == ["off", "3", "2.0", "16.7", "0.0"]
    assert on[1:6] == ["on", "3", "2.0", "16.7", "16.7"]
    assert off[8].startswith("66.7 [") and on[8].startswith("33.3 [")
    # on - off over q1..q3: EM -1/3 (q2 lost, none gained: McNemar p 1.0), F1 -1/6, one second faster each
    assert difference[1] == "3" and difference[2].startswith("-33.3 [") and difference[3] == "1.000"
    assert difference[4].startswith("-16.7 [") and difference[5] == "-1.0 [-1.0, -1.0]"
    assert row_cells(text, "resp")[:2] == ["off", "1"]  # its side is shown, and it has no paired row
    assert not any(row.startswith("| resp | 1 |") for row in text.splitlines())


def test_the_figure_draws_each_methods_paired_difference(runs: dict[str, Path]) -> None:
    em, f1 = figure(runs, "hotpotqa").axes
    assert em.get_title() == "EM, structured on − off, hotpotqa"
    assert ytick_labels(em) == ["decomposition (3), p 1.000"] and ytick_labels(f1) == ["decomposition (3)"]
    [drawn] = [c for c in em.containers if isinstance(c, ErrorbarContainer)]
    assert xy(drawn.lines[0]) == pytest.approx(np.array([[-100 / 3, 0]]))
    [drawn] = [c for c in f1.containers if isinstance(c, ErrorbarContainer)]
    assert xy(drawn.lines[0]) == pytest.approx(np.array([[-50 / 3, 0]]))


def test_the_index_table_reads_each_sides_question_writer_and_edge_judge_from_its_manifest(
    tmp_path: Path, minilm: Any
) -> None:
    """The off side's index built by the scripted writer and judge (the real parser and graph build; the
    judge's Sourdough verdicts malformed), the on side without one: one row, the manifest's counts."""
    store = IndexStore(tmp_path / "off" / "data" / "indexes")
    build(store, minilm, scripted_models()[0], DOCS)
    manifest = store.current_manifest("tiny")
    assert manifest is not None
    questions, graph = manifest.extras[QUESTIONS.name], manifest.extras[QUESTION_GRAPH.name]
    text = index_table({"off": tmp_path / "off" / "run", "on": tmp_path / "on" / "run"})
    [off] = [row.strip("| ").split(" | ") for row in text.splitlines()[2:]]
    assert off[:3] == ["off", str(questions.chunks), str(questions.questions)]
    assert off[7:10] == [
        str(graph.pairs),
        f"{100 * graph.verdicts['yes'] / graph.pairs:.0f}%",
        f"{100 * graph.verdicts['malformed'] / graph.pairs:.1f}",
    ]
    assert graph.verdicts["malformed"] > 0 and float(off[6]) >= 0 and float(off[10]) >= 0  # timed: not "–"
    assert index_table({"on": tmp_path / "on" / "run"}) == ""  # no index: no table
