"""benchmarks/answer_peer.py's comparison (no LLM, no peer run): the peer's replies and two evaluation folders
written as the evaluation writes them, read back into the table the command prints and the figure it draws."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks import answer_peer
from benchmarks.answer_peer import answerers, compare, differences_figure, peer_reading
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
    table = compare(answerers([before, after], "hotpotqa", PEER_ROWS), "hotpotqa", PEER_ROWS)

    peer = row_cells(table, "peer (rag)")
    assert peer[0] == "3" and peer[1].startswith("66.7 [")  # Paris and Oslo right, Milan wrong
    first = row_cells(table, "naive (before)")
    assert first[0] == "3" and first[1].startswith("66.7 [") and first[3].startswith("0.0 [")
    # words 1, 1, 7: mean 3.0, one answer in three longer than its gold by more than 3 words; the peer got
    # q3 right and this run did not, with "Oslo" inside the answer
    assert first[6:9] == ["3.0", "33%", "1 of 1"] and first[9] == "1"
    second = row_cells(table, "naive (after)")
    assert second[0] == "2" and second[1].startswith("100.0 [") and second[9] == "0"
    # paired on q1 and q3, the questions both runs answered: 1 - 1 and 1 - 0; "Paris" twice, q3 changed
    assert "naive, after - before on the questions both answered: EM 50.0 [" in table
    assert table.endswith("the same prediction on 1 of 2")


def test_the_plot_draws_each_runs_paired_difference_against_the_peer(tmp_path: Path) -> None:
    before = write_run(tmp_path / "before", [line("q1", "Paris"), line("q2", "Rome"), line("q3", "Bergen")])
    after = write_run(tmp_path / "after", [line("q1", "Lyon"), line("q2", None), line("q3", "Oslo")])
    fig = differences_figure(answerers([before, after], "hotpotqa", PEER_ROWS), "hotpotqa", PEER_ROWS)
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


QUESTIONS = [  # the first two HotpotQA dev questions, as the peer loads them
    "Were Scott Derrickson and Ed Wood of the same nationality?",
    "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?",
]


def item(id_: str, title: str, text: str) -> dict:
    return {"id": id_, "doc_id": id_.split("#")[0], "title": title, "text": text}


class StubLlama:
    """Stands in for llama.cpp in the peer's own code: keeps each prompt, replies "reply N" and a second
    line (the peer keeps the first)."""

    prompts: ClassVar[list[str]] = []

    def __init__(self, model_path: str, **_: object) -> None:
        self.model_path = model_path

    def create_chat_completion(self, messages: list[dict], **_: object) -> dict:
        StubLlama.prompts.append(messages[0]["content"])
        return {"choices": [{"message": {"content": f"reply {len(StubLlama.prompts)}\nmore"}}]}


@pytest.fixture
def stub_llm_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The peer's own code with llama.cpp replaced by StubLlama (its prompts emptied) and no GGUF needed."""
    real_load = answer_peer.load

    def peer_with_stub_llm(name: str) -> ModuleType:
        peer = real_load(name)
        peer.Llama = StubLlama
        return peer

    monkeypatch.setattr(answer_peer, "load", peer_with_stub_llm)
    monkeypatch.setattr(answer_peer, "ensure_gguf", lambda _: Path("unused.gguf"))
    monkeypatch.setattr(StubLlama, "prompts", [])


@pytest.mark.usefixtures("stub_llm_peer")
def test_the_peers_reader_answers_over_exactly_the_passages_a_method_read(tmp_path: Path) -> None:
    """The peer's own code runs with its retrieval routed to what the method read: each question's prompt
    holds its read passages, in the order read, written as the peer writes paragraphs; a passage two
    questions read and one found but not read go where they belong."""
    shared = item("wood#0", "Ed Wood", "Ed Wood was an American filmmaker.")
    scott, temple = (
        item("scott#0", "Scott Derrickson", "He is American."),
        item("temple#0", "Shirley Temple", "An actress."),
    )
    unread = item("unread#0", "Unread", "Never read.")
    records = [
        {**line(QUESTIONS[0], "yes"), "evidence": [scott, shared], "read": ["wood#0", "scott#0"]},
        {
            **line(QUESTIONS[1], "Diplomat"),
            "evidence": [shared, temple, unread],
            "read": ["temple#0", "wood#0"],
        },
    ]
    run = write_run(tmp_path / "run", records)
    passages = answer_peer.read_passages(run, "hotpotqa", "naive")
    rows, summary = answer_peer.run_peer("hotpotqa", 2, 2, passages)

    first, closed, second, _ = StubLlama.prompts
    assert first.startswith(
        "Passages:\nEd Wood. Ed Wood was an American filmmaker.\n\nScott Derrickson. He is American.\n\n"
        f"Question: {QUESTIONS[0]}\n"
    )
    assert second.startswith(
        "Passages:\nShirley Temple. An actress.\n\nEd Wood. Ed Wood was an American filmmaker.\n\n"
        f"Question: {QUESTIONS[1]}\n"
    )
    assert closed.startswith(f"Question: {QUESTIONS[0]}\n")  # the peer's closed-book call, unchanged
    assert [(row["rag"], row["closed_book"]) for row in rows] == [
        ("reply 1", "reply 2"),
        ("reply 3", "reply 4"),
    ]
    assert summary["questions"] == 2 and summary["paragraphs"] == 3


def test_the_peers_reader_needs_k_passages_for_every_question(tmp_path: Path) -> None:
    """With fewer than k, the peer's top k would take other questions' passages: refused, naming it."""
    passages = {QUESTIONS[0]: ["A. a", "B. b"], QUESTIONS[1]: ["C. c"]}
    with pytest.raises(SystemExit, match="1 distinct passages for 'What government position"):
        answer_peer.passages_for(passages, QUESTIONS[1], 2)
    assert answer_peer.passages_for(passages, QUESTIONS[0], 2) == ["A. a", "B. b"]


def test_a_method_is_set_against_the_peers_reader_over_its_own_passages(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [line("q1", "Paris"), line("q2", "Rome"), line("q3", "Bergen")])
    over = [{"question": q, "rag": a} for q, a in (("q1", "Paris"), ("q2", "Milan"), ("q3", "Oslo"))]
    found = [*answerers([run], "hotpotqa", PEER_ROWS), peer_reading("naive", "run", over, PEER_ROWS)]
    table = compare(found, "hotpotqa", PEER_ROWS)
    # the peer's reader over naive's passages answers as the peer did (Paris, Oslo right): level with it
    reader = row_cells(table, "peer reader on naive's passages (run)")
    assert reader[0] == "3" and reader[1].startswith("66.7 [") and reader[3].startswith("0.0 [")
    # naive right on q1 and q2, the peer's reader on q1 and q3 over the same passages: one each way, so
    # differences 0, +1, -1; a resample of three all +1 (or all -1) has chance 1/27 > 2.5%: the bounds
    assert (
        "naive (run) - peer reader on naive's passages (run), the same passages read by two readers: "
        "EM 0.0 [-100.0, 100.0] (p 1.000)"
    ) in table


@pytest.mark.usefixtures("stub_llm_peer")
def test_the_peer_asks_a_flashrag_file_over_the_corpus_hopgraph_indexes_for_it() -> None:
    """`--data`: MuSiQue's FlashRAG file (the layout of the disjoint questions), which the peer's own loader
    cannot read, reaches the peer through hopgraph's loader: its first two questions, their gold answers,
    and a corpus of exactly their support paragraphs, read from the file here, the peer's retrieval (the
    real MiniLM) choosing the k it reads among them."""
    flashrag = Path(__file__).parents[2] / "shared" / "data" / "musique" / "musique_dev_200.jsonl"
    records = [json.loads(text) for text in flashrag.read_text(encoding="utf-8").splitlines()[:2]]
    supports = {
        f"{step['support_paragraph']['title']}. {step['support_paragraph']['paragraph_text']}"
        for record in records
        for step in record["metadata"]["question_decomposition"]
    }
    rows, summary = answer_peer.run_peer("musique", 2, 2, data=flashrag)

    assert [(row["question"], row["gold_answers"]) for row in rows] == [
        (record["question"], record["golden_answers"]) for record in records
    ]
    assert summary["questions"] == 2 and summary["paragraphs"] == len(supports)
    for record, prompt in zip(records, StubLlama.prompts[::2], strict=True):
        shown, question = prompt.removeprefix("Passages:\n").split("\n\nQuestion: ")
        assert question.startswith(record["question"] + "\n")
        assert len(shown.split("\n\n")) == 2 and set(shown.split("\n\n")) <= supports
