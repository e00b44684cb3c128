"""benchmarks.retrieval_modes over a small HotpotQA folder: each group of questions indexed over its own
paragraphs (real Chroma, BM25 and MiniLM), every mode scored by the gold it reads, the paired table and the
figure written. The questions are built so that the scores are known: a one-fact question whose paragraph
is the only one about its subject, and a two-fact question, of which one paragraph fits in the top 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import SHARED_DATA
from benchmarks.retrieval_modes import groups, main
from evals.datasets import DATASETS
from hopgraph import Settings
from tests.session_settings import session_env

PARAGRAPHS = {
    "Quellbrook": "Quellbrook is a river town where the Quell river meets the Marrow canal.",
    "Harnwick Orchestra": "The Harnwick Orchestra toured Japan with three concerts in Osaka last spring.",
    "Tessaly Glacier": "The Tessaly glacier in the northern Alps lost more ice than in any recorded year.",
    "Veridian Telescope": "The Veridian telescope in the Karoo desert mapped a distant spiral galaxy.",
    "Ostrava Bridge": "Engineers closed the Ostrava railway bridge after finding cracks in a stone pier.",
    "Pellham Harvest": "Farmers around Pellham began the rice harvest two weeks early after a dry spring.",
}


def record(qid: str, question: str, supporting: list[str], context: list[str]) -> dict:
    return {
        "_id": qid,
        "question": question,
        "answer": "x",
        "type": "bridge",
        "supporting_facts": [[title, 0] for title in supporting],
        "context": [[title, [PARAGRAPHS[title]]] for title in context],
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Two evaluated questions over three paragraphs, then two disjoint ones over the other three."""
    folder = tmp_path / "hotpotqa"
    folder.mkdir()
    first = ["Quellbrook", "Harnwick Orchestra", "Tessaly Glacier"]
    rest = ["Veridian Telescope", "Ostrava Bridge", "Pellham Harvest"]
    records = [
        record("a", "Which river meets the Marrow canal at Quellbrook?", ["Quellbrook"], first),
        record("b", "Where did the Harnwick Orchestra tour?", ["Harnwick Orchestra"], first),
        record("c", "What did the Veridian telescope in the Karoo desert map?", ["Veridian Telescope"], rest),
        record(
            "d",
            "Which Ostrava bridge pier cracked, and when did the Pellham rice harvest begin?",
            ["Ostrava Bridge", "Pellham Harvest"],
            rest,
        ),
    ]
    (folder / DATASETS["hotpotqa"]).write_text(json.dumps(records))
    return tmp_path


def test_each_group_is_searched_over_its_own_paragraphs_and_scored_by_its_gold(
    settings: Settings, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for key, value in {
        "HOPGRAPH_DATA_DIR": str(settings.data_dir),
        "HOPGRAPH_CONFIG": "",
        **session_env(),
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOPGRAPH_MODEL_DIR", str(settings.model_dir))
    plot = tmp_path / "modes.png"
    main(["--datasets", "hotpotqa", "--data", str(data), "--evaluated", "2", "--k", "1", "--plot", str(plot)])
    captured = capsys.readouterr()
    out = captured.out
    assert "embed 3/3" in captured.err  # each group's build shows its progress

    # each group's index holds its own three paragraphs, not the slice's six
    assert re.search(r"hotpotqa, evaluated \(2\): index modes-hotpotqa-evaluated built, 3 chunks", out)
    assert re.search(r"hotpotqa, disjoint \(2\): index modes-hotpotqa-disjoint built, 3 chunks", out)
    rows = {
        (group, mode): [float(cell) for cell in cells.split(" | ")]
        for group, mode, cells in re.findall(r"^\| hotpotqa, (\w+) \(2\) \| (\w+) \| (.+) \|$", out, re.M)
    }
    for mode in ("dense", "bm25", "hybrid"):
        # Recall@1, Full@1, Recall@2: the evaluated questions' one fact each is found first
        assert rows[("evaluated", mode)] == [100.0, 100.0, 100.0]
        # c's one fact first; d's two facts need two paragraphs: half of them in the top 1, all in the top 2
        assert rows[("disjoint", mode)] == [75.0, 50.0, 100.0]
    assert "| hotpotqa, disjoint (2): hybrid − dense | +0.0 | [+0.0, +0.0] |" in out
    assert plot.stat().st_size > 0


def test_unknown_dataset_is_named(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--datasets", "hotpotqa,squad"])
    assert "unknown dataset(s) squad" in capsys.readouterr().err


def test_musique_disjoint_group_is_the_other_file_less_the_evaluated_questions() -> None:
    """MuSiQue's slice is all evaluated, so its disjoint group is the FlashRAG file's 200 questions less
    the 10 it shares with the slice (read from ../shared/data, as the command reads it)."""
    evaluated, disjoint = groups("musique", SHARED_DATA / "musique", 50)
    asked = {question.question.casefold() for question in evaluated.questions}
    assert len(evaluated.questions) == 50
    assert len(disjoint.questions) == 190
    assert not asked & {question.question.casefold() for question in disjoint.questions}
    # each kept question's gold paragraphs are in the group's own corpus: the file carries no distractors
    corpus = {document.id for document in disjoint.bench.corpus}
    assert all({span.doc_id for span in question.evidence} <= corpus for question in disjoint.questions)
