"""benchmarks.disjoint_questions writes the questions the tables do not answer in their own layout, so that
`hopgraph eval` loads them as it loads the slice (the real shared slices, read as the command reads them)."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks import SHARED_DATA
from benchmarks.disjoint_questions import main
from evals.datasets import load_benchmark


def written(monkeypatch, tmp_path, *args: str) -> list[dict]:
    out = tmp_path / "questions.jsonl"
    monkeypatch.setattr(sys, "argv", ["disjoint_questions", *args, "--out", str(out)])
    main()
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_musique_questions_come_from_the_other_file_and_none_is_evaluated(monkeypatch, tmp_path) -> None:
    records = written(monkeypatch, tmp_path, "musique", "--limit", "30")
    loaded = load_benchmark("musique", tmp_path / "questions.jsonl")
    slice_questions = {
        q.question.casefold() for q in load_benchmark("musique", SHARED_DATA / "musique").examples
    }
    assert len(records) == len(loaded.examples) == 30
    # the FlashRAG file's first 31 questions less dev_27, the first the slice asks too
    assert [q.id for q in loaded.examples] == [f"dev_{n}" for n in range(31) if n != 27]
    assert not slice_questions & {q.question.casefold() for q in loaded.examples}
    # the written questions are indexed over their own supporting paragraphs
    corpus = {document.id for document in loaded.corpus}
    assert all({span.doc_id for span in q.evidence} <= corpus for q in loaded.examples)


def test_hotpotqa_questions_are_those_after_the_evaluated_ones(monkeypatch, tmp_path) -> None:
    written(monkeypatch, tmp_path, "hotpotqa", "--evaluated", "50", "--limit", "4")
    loaded = load_benchmark("hotpotqa", tmp_path / "questions.jsonl")
    after = load_benchmark("hotpotqa", SHARED_DATA / "hotpotqa", limit=4, skip=50)
    assert [q.id for q in loaded.examples] == [q.id for q in after.examples]
    assert [q.answers for q in loaded.examples] == [q.answers for q in after.examples]
    assert {d.id for d in loaded.corpus} == {d.id for d in after.corpus}


def test_multihop_rag_is_refused_with_the_choices_named(monkeypatch, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        written(monkeypatch, tmp_path, "multihop_rag")
    assert "invalid choice: 'multihop_rag'" in capsys.readouterr().err
