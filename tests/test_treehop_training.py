"""TreeHop's trainer: a few steps on a tiny synthetic set reduce the loss, the record and the float16
checkpoint are written as the JSON says; then the command itself on a small subset of the dev data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evals.datasets import DATASETS, QAExample, load_benchmark
from evals.gold import GoldEvidence
from graphs.treehop.model import load_checkpoint
from graphs.treehop.training import HopPath, Recipe, TrainingData, TrainingRecord, train
from hopgraph import Settings, services_for
from hopgraph.cli import main
from hopgraph.evaluate import index_name
from hopgraph.treehop_data import TRAINING_FILES, dataset_paths, gold_chunk_rows, hop_order, is_held_out
from stores.chunking import Chunk
from tests.conftest import SHARED_DATA

DIMENSION = 16


def unit_rows(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def synthetic_data(paths: int = 60) -> TrainingData:
    """Two-hop paths whose second chunk is a fixed linear function of the first: learnable by the gate,
    not by the delta rule alone."""
    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(DIMENSION, DIMENSION))
    queries = unit_rows(rng.normal(size=(paths, DIMENSION)))
    first = unit_rows(queries + 0.3 * rng.normal(size=(paths, DIMENSION)))
    second = unit_rows(first @ mixing)
    pool = np.concatenate([first, second])
    made = [
        HopPath(
            dataset="synthetic",
            question=f"q{i}",
            query=queries[i],
            chunks=np.stack([first[i], second[i]]),
            negatives=unit_rows(rng.normal(size=(1, 5, DIMENSION))),
            pool_rows=(i, paths + i),
            held_out=i % 10 == 0,
        )
        for i in range(paths)
    ]
    return TrainingData(made, {"synthetic": pool}, {"synthetic": {"paths": paths}})


def train_command(out: Path, data: Path = SHARED_DATA) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hopgraph",
        "train",
        "treehop",
        "--data",
        str(data),
        "--out",
        str(out),
    ]


MUSIQUE = SHARED_DATA / "musique"
SUBSET_LINES = 50  # of musique_dev_200.jsonl: 100 paragraphs to index instead of 400


def musique_subset(folder: Path) -> Path:
    """A --data folder whose musique training file is the first SUBSET_LINES of the dev data's (three of them
    among the 50 questions the harness evaluates), beside a copy of the file those 50 are read from."""
    (folder / "musique").mkdir(parents=True)
    lines = (MUSIQUE / TRAINING_FILES["musique"]).read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "musique" / TRAINING_FILES["musique"]).write_text("".join(lines[:SUBSET_LINES]), "utf-8")
    shutil.copyfile(MUSIQUE / DATASETS["musique"], folder / "musique" / DATASETS["musique"])
    return folder


def empty_record() -> TrainingRecord:
    return TrainingRecord("test", "synthetic", ["synthetic"], {}, {}, 54, 6)


@pytest.mark.parametrize("variant", ["simple", "full"])
def test_a_few_steps_reduce_the_loss_and_the_record_says_so(tmp_path: Path, variant: str) -> None:
    out = tmp_path / "treehop.pt"
    recipe = Recipe(variant=variant, epochs=8, batch_size=16, learning_rate=3e-3, recall_k=5)
    record = train(synthetic_data(), recipe, out, empty_record(), "test-embedder", report=lambda _: None)

    losses = [epoch.train_loss for epoch in record.epochs]
    assert losses[-1] < 0.8 * losses[0], losses
    saved = json.loads(out.with_suffix(".json").read_text())
    assert [epoch["train_loss"] for epoch in saved["epochs"]] == losses
    assert saved["recipe"]["variant"] == variant and saved["checkpoint_bytes"] == out.stat().st_size
    best = record.epochs[record.best_epoch - 1].held_out_recall
    assert best == max(epoch.held_out_recall for epoch in record.epochs)
    assert abs(record.float16_held_out_recall - best) <= 0.1  # float16 keeps the held-out numbers
    assert load_checkpoint(out, "test-embedder", DIMENSION).card.variant == variant


def test_the_command_trains_on_a_small_subset_of_the_dev_data(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = tmp_path / "subset.pt"
    data = musique_subset(tmp_path / "data")
    options = ["--dataset", "musique", "--limit", "40", "--epochs", "4", "--learning-rate", "1e-3"]
    command = [*train_command(out, data), *options]
    done = subprocess.run(command, env=cli_env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr

    record = json.loads(out.with_suffix(".json").read_text())
    # the questions of the subset that are among the 50 the harness evaluates are never trained on
    trained_from = data / "musique" / TRAINING_FILES["musique"]
    subset = {json.loads(line)["question"] for line in trained_from.read_text(encoding="utf-8").splitlines()}
    first_50 = (MUSIQUE / DATASETS["musique"]).read_text(encoding="utf-8").splitlines()[:50]
    evaluated = {json.loads(line)["question"] for line in first_50}
    assert record["counts"]["musique"]["evaluated"] == len(subset & evaluated) == 3
    assert record["train_paths"] + record["held_out_paths"] == 40 and record["held_out_paths"] > 0
    losses = [epoch["train_loss"] for epoch in record["epochs"]]
    assert losses[-1] < losses[0], losses
    assert "held-out Recall@5" in done.stderr + done.stdout


def test_an_unknown_dataset_is_refused_with_the_known_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the command's own entry point in this process: the refusal comes before any work."""
    out = str(tmp_path / "x.pt")
    args = ["train", "treehop", "--data", str(SHARED_DATA), "--out", out, "--dataset", "squad"]
    monkeypatch.setattr(sys, "argv", ["hopgraph", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "squad" in stderr and "multihop_rag" in stderr


def example_with(evidence: list[GoldEvidence]) -> QAExample:
    return QAExample("q1", "hotpotqa", "Q?", ("a",), tuple(evidence), "bridge", 2, (), True)


def test_each_gold_document_gives_the_chunk_holding_its_first_evidence_in_evidence_order() -> None:
    def chunk(doc: str, start: int, end: int) -> Chunk:
        return Chunk(id=f"{doc}#{start}", doc_id=doc, title=doc, text="x" * (end - start), position=0,
                     char_start=start, char_end=end)  # fmt: skip

    rows_of_doc = {"B": [(0, chunk("B", 0, 100)), (1, chunk("B", 90, 200))], "A": [(2, chunk("A", 0, 50))]}
    evidence = [
        GoldEvidence("B", "B", "fact", 150, 160),  # in B's second chunk only
        GoldEvidence("B", "B", "other", 10, 20),  # B's later evidence: B is already on the path
        GoldEvidence("A", "A", "fact", None, None),  # not located: A's first chunk
        GoldEvidence("Z", "Z", "unindexed", 0, 5),  # a document the index does not hold
    ]
    assert gold_chunk_rows(example_with(evidence), rows_of_doc) == [1, 2]


def test_unordered_datasets_start_the_path_at_the_gold_chunk_nearest_the_question() -> None:
    pool = np.eye(3, dtype=np.float32)
    query = np.array([0.1, 0.2, 0.9], dtype=np.float32)
    assert hop_order("hotpotqa", [0, 1, 2], query, pool) == [2, 0, 1]
    assert hop_order("musique", [0, 1, 2], query, pool) == [0, 1, 2]  # its decomposition's order


def test_the_held_out_tenth_depends_on_dataset_and_question_only() -> None:
    held = [is_held_out("hotpotqa", f"question {i}") for i in range(2000)]
    assert 150 < sum(held) < 250
    assert held == [is_held_out("hotpotqa", f"question {i}") for i in range(2000)]


def test_no_training_path_touches_a_document_an_evaluated_question_uses(
    tmp_path: Path, settings: Settings
) -> None:
    """Issue 39 item 1: on or beside the path. The documents the 50 evaluated MuSiQue questions use are read
    here from their file, not from the trainer. The training file is cut to the questions that use one of
    them (questions of their own, not among the 50) and 20 that do not, so the rule has cases to exclude;
    `shared_articles` (the earlier setting) keeps them."""
    evaluated = load_benchmark("musique", MUSIQUE / DATASETS["musique"], 50)
    used = {gold.doc_id for example in evaluated.examples for gold in example.evidence}
    asked = {example.question for example in evaluated.examples}
    lines = (MUSIQUE / TRAINING_FILES["musique"]).read_text(encoding="utf-8").splitlines(keepends=True)
    every = load_benchmark("musique", MUSIQUE / TRAINING_FILES["musique"]).examples
    assert len(every) == len(lines)
    overlapping = [
        line
        for line, example in zip(lines, every, strict=True)
        if example.question not in asked and {gold.doc_id for gold in example.evidence} & used
    ]
    others = [line for line, example in zip(lines, every, strict=True) if line not in overlapping][:20]
    data = tmp_path / "data" / "musique"
    data.mkdir(parents=True)
    (data / TRAINING_FILES["musique"]).write_text("".join(overlapping + others), "utf-8")
    shutil.copyfile(MUSIQUE / DATASETS["musique"], data / DATASETS["musique"])

    paths, pool, counts = dataset_paths("musique", data, settings, np.random.default_rng(0))
    assert paths and counts["uses_an_evaluated_article"] >= len(overlapping) > 0
    assert not any(set(path.articles) & used for path in paths)
    trained_on = load_benchmark("musique", data / TRAINING_FILES["musique"])
    chunks = services_for(settings).indexes.open(index_name(trained_on, settings)).all_chunks()
    used_rows = pool[[row for row, chunk in enumerate(chunks) if chunk.doc_id in used]]
    negatives = np.concatenate([path.negatives.reshape(-1, pool.shape[1]) for path in paths])
    assert len(used_rows) and not (negatives[:, None, :] == used_rows[None, :, :]).all(axis=-1).any()

    shared, _, shared_counts = dataset_paths(
        "musique", data, settings, np.random.default_rng(0), shared_articles=True
    )
    assert shared_counts["uses_an_evaluated_article"] == 0
    assert any(set(path.articles) & used for path in shared) and len(shared) > len(paths)
