"""`hopgraph train treehop`: TreeHop's training examples, from the dev slices in ../shared/data, never
from evaluated questions, handed to `graphs.treehop.training.train`.

Each example is a retrieval path: the question's embedding, then the chunk of each gold evidence document in
the order the hops should find it (the root first), with negatives for every next hop. Vectors come from an
index of the dataset's corpus built the way every evaluation builds it (same name, so an existing one is
reused), so the model learns on exactly the chunk vectors it will search.

- Path order: MuSiQue follows its gold decomposition, 2WikiMultihopQA its supporting facts (which follow the
  evidence chain); HotpotQA and MultiHop-RAG state no order, so the root is the gold chunk nearest the
  question and the rest keep the dataset's order. Comparison questions are left out, as the original
  leaves them out (both sides are found from the question; there is no hop between them), and so are
  MultiHop-RAG's null queries (no evidence).
- Negatives: 5 per hop, drawn (seeded) from the 30 chunks of the dataset's index nearest the question
  that are not on the gold path: the distractors a retriever actually meets. The original draws them from
  the question's own other paragraphs, which our loaders do not keep per question.
- Evaluated questions: the first `EVALUATED[dataset]` questions of the file the harness evaluates by default
  (`hopgraph eval --limit N` reads the first N) are excluded by question text, whichever file they appear
  in (MuSiQue's training file is the FlashRAG copy of 200 dev questions, 10 of which are among the 50 the
  harness evaluates).
- Evaluated articles: by default no path touches a document that any evaluated question's evidence uses,
  neither on the path nor among its negatives. MultiHop-RAG's questions share one corpus of 609 articles:
  with only the questions excluded, 85 of the 86 inference queries the TreeHop benchmark measures had a
  pair of gold articles that some training path also joined, so the gate could learn which chunk follows
  which there and its gain did not show what a user's own, never-seen corpus gets. Article-disjoint, 81
  of MultiHop-RAG's 817 paths remain (HotpotQA, 2Wiki and MuSiQue lose 0, 1 and 10). `shared_articles`
  keeps the earlier, question-disjoint set, to measure what the overlap was worth.
- Held-out split: a question is held out when the SHA-256 of "dataset:question" falls in the first tenth,
  so the split never depends on file order or on which datasets a run uses.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from evals.datasets import DATASETS, Benchmark, DatasetName, QAExample, load_benchmark
from graphs.treehop.training import HopPath, Progress, Recipe, TrainingData, TrainingRecord, train
from hopgraph.api import index_corpus, services_for
from hopgraph.evaluate import index_name
from hopgraph.settings import Settings
from stores.chunking import Chunk
from stores.errors import HopgraphError

#: Questions the harness evaluates by default, per dataset: the first N of its default file, never trained on.
EVALUATED: dict[str, int] = {"multihop_rag": 300, "hotpotqa": 100, "2wikimultihopqa": 50, "musique": 50}
#: The file each dataset's training questions come from (MuSiQue: the 200-question FlashRAG copy; those of
#: its questions the harness evaluates are excluded by text).
TRAINING_FILES: dict[str, str] = {**DATASETS, "musique": "musique_dev_200.jsonl"}
ORDERED_BY_DATASET = {"musique", "2wikimultihopqa"}
COMPARISON_TYPES = {"comparison", "comparison_query", "null_query"}
NEGATIVES = 5
NEGATIVE_CANDIDATES = 30
HELD_OUT_TENTHS = 1


class TrainingDataError(HopgraphError):
    """Training data that cannot be assembled: a missing dataset folder, or too few usable questions."""


def is_held_out(dataset: str, question: str) -> bool:
    digest = hashlib.sha256(f"{dataset}:{question}".encode()).digest()
    return digest[0] * 10 < 256 * HELD_OUT_TENTHS


def evaluated_questions(dataset: DatasetName, folder: Path) -> tuple[set[str], set[str]]:
    """The questions `hopgraph eval` evaluates by default for `dataset` (the first EVALUATED ones), and the
    documents their gold evidence uses."""
    benchmark = load_benchmark(dataset, folder / DATASETS[dataset], EVALUATED[dataset])
    articles = {gold.doc_id for example in benchmark.examples for gold in example.evidence}
    return {example.question for example in benchmark.examples}, articles


def gold_chunk_rows(example: QAExample, rows_of_doc: dict[str, list[tuple[int, Chunk]]]) -> list[int]:
    """Pool rows of the chunk holding each gold document's first located evidence, one per document, in
    evidence order (MuSiQue's is its decomposition's)."""
    rows: dict[str, int] = {}
    for gold in example.evidence:
        if gold.doc_id in rows or gold.doc_id not in rows_of_doc:
            continue
        chunks = rows_of_doc[gold.doc_id]
        start = gold.char_start if gold.char_start is not None else 0
        holding = [row for row, chunk in chunks if chunk.char_start <= start < chunk.char_end]
        rows[gold.doc_id] = holding[0] if holding else chunks[0][0]
    return list(rows.values())


def hop_order(dataset: str, rows: list[int], query: np.ndarray, pool: np.ndarray) -> list[int]:
    """Gold chunk rows in the order the hops should find them: the dataset's own where it states one, else
    the chunk nearest the question first (the one a first retrieval finds) and the rest as given."""
    if dataset in ORDERED_BY_DATASET:
        return rows
    root = max(rows, key=lambda row: float(pool[row] @ query))
    return [root, *(row for row in rows if row != root)]


def dataset_paths(
    dataset: DatasetName,
    folder: Path,
    settings: Settings,
    rng: np.random.Generator,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    shared_articles: bool = False,
) -> tuple[list[HopPath], np.ndarray, dict[str, int]]:
    """The training paths of one dataset, its pool of chunk vectors, and how many questions each rule kept;
    with `shared_articles`, paths may use the evaluated questions' documents (module docstring)."""
    path = folder / TRAINING_FILES[dataset]
    if not path.is_file():
        raise TrainingDataError(
            f"{path}: no such file; point --data at the folder holding the {dataset} slice."
        )
    benchmark: Benchmark = load_benchmark(dataset, path)
    evaluated, evaluated_articles = evaluated_questions(dataset, folder)
    if shared_articles:
        evaluated_articles = set()
    name = index_name(benchmark, settings)
    index_corpus(benchmark.corpus, name, settings, progress=progress)
    index = services_for(settings).indexes.open(name)
    chunks = index.all_chunks()
    pool = index.embeddings([chunk.id for chunk in chunks])
    rows_of_doc: dict[str, list[tuple[int, Chunk]]] = {}
    for row, chunk in enumerate(chunks):
        rows_of_doc.setdefault(chunk.doc_id, []).append((row, chunk))
    counts = {
        "questions": len(benchmark.examples),
        "evaluated": 0,
        "comparison_or_null": 0,
        "one_hop": 0,
        "uses_an_evaluated_article": 0,
    }
    usable: list[tuple[QAExample, list[int]]] = []
    for example in benchmark.examples:
        rows = gold_chunk_rows(example, rows_of_doc)
        if example.question in evaluated:
            counts["evaluated"] += 1
        elif example.question_type in COMPARISON_TYPES:
            counts["comparison_or_null"] += 1
        elif len(rows) < 2:
            counts["one_hop"] += 1
        elif {gold.doc_id for gold in example.evidence} & evaluated_articles:
            counts["uses_an_evaluated_article"] += 1
        else:
            usable.append((example, rows))
    unseen = np.array([row for row, chunk in enumerate(chunks) if chunk.doc_id not in evaluated_articles])
    usable = usable[:limit]
    embedder = services_for(settings).embedder
    queries = embedder.embed([example.question for example, _ in usable]) if usable else np.zeros((0, 0))
    paths = []
    for (example, rows), query in zip(usable, queries, strict=True):
        ordered = hop_order(dataset, rows, query, pool)
        nearest = [int(row) for row in unseen[np.argsort(-(pool[unseen] @ query))] if row not in ordered]
        nearest = nearest[:NEGATIVE_CANDIDATES]
        negatives = [rng.choice(nearest, size=NEGATIVES, replace=False) for _ in ordered[1:]]
        paths.append(
            HopPath(
                dataset=dataset,
                question=example.question,
                query=query.astype(np.float32),
                chunks=pool[ordered],
                negatives=np.stack([pool[rows] for rows in negatives]),
                pool_rows=tuple(ordered),
                held_out=is_held_out(dataset, example.question),
                articles=tuple(chunks[row].doc_id for row in ordered),
            )
        )
    counts["paths"] = len(paths)
    counts["held_out"] = sum(path.held_out for path in paths)
    counts["hop_pairs"] = sum(len(path.chunks) - 1 for path in paths)
    return paths, pool, counts


def training_data(
    folder: Path,
    datasets: list[DatasetName],
    settings: Settings,
    seed: int,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    shared_articles: bool = False,
) -> TrainingData:
    """Every dataset's paths (at most `limit` each), pools and counts; negatives drawn with `seed`."""
    rng = np.random.default_rng(seed)
    data = TrainingData([], {}, {})
    for dataset in datasets:
        paths, pool, counts = dataset_paths(
            dataset, folder / dataset, settings, rng, limit, progress, shared_articles
        )
        data.paths.extend(paths)
        data.pools[dataset] = pool
        data.counts[dataset] = counts
    if not data.split(held_out=False) or not data.split(held_out=True):
        raise TrainingDataError(
            f"{folder}: the datasets {datasets} gave {len(data.paths)} usable paths, too few to train and "
            "hold out a tenth; use more datasets or a larger --limit."
        )
    return data


def train_treehop(
    data_folder: Path,
    datasets: list[DatasetName],
    recipe: Recipe,
    out: Path,
    settings: Settings,
    limit: int | None = None,
    progress: Progress | None = None,
    report: Callable[[str], None] = print,
    shared_articles: bool = False,
) -> TrainingRecord:
    """The whole command: assemble the data (building the datasets' indexes if missing), then train."""
    torch.set_num_threads(1)  # the CPU is shared: minutes on one core, never all of them
    data = training_data(data_folder, datasets, settings, recipe.seed, limit, progress, shared_articles)
    for dataset, counts in data.counts.items():
        report(f"{dataset}: " + ", ".join(f"{name} {value}" for name, value in counts.items()))
    record = TrainingRecord(
        command="hopgraph " + " ".join(sys.argv[1:]),
        data=str(data_folder),
        datasets=list(datasets),
        evaluated_questions_excluded={dataset: EVALUATED[dataset] for dataset in datasets},
        evaluated_articles_excluded=not shared_articles,
        counts=data.counts,
        train_paths=len(data.split(held_out=False)),
        held_out_paths=len(data.split(held_out=True)),
    )
    return train(data, recipe, out, record, services_for(settings).embedder.space, progress, report)
