"""Write the questions an evaluation does not answer to a file of their own, so `hopgraph eval` can decide
a setting on them and leave the evaluated questions to measure it (issue 42: improve a method, never tune it
to the questions it is scored on).

    .venv/bin/python -m benchmarks.disjoint_questions musique --limit 70 --out runs/disjoint/musique.jsonl
    .venv/bin/hopgraph eval --dataset musique --data runs/disjoint/musique.jsonl \
        --methods naive,naive+top_k=10 --out runs/k-musique-disjoint

The questions are `benchmarks.retrieval_modes`' disjoint group, the first `--limit` of it: on HotpotQA and
2Wiki the slice's questions after the first `--evaluated` (50, the questions the tables answer); on MuSiQue
the first 200 dev questions of the folder's other file less those the slice asks. Each is written as its
source file holds it (one JSON object a line, the dataset's own layout), so `hopgraph eval` reads it as it
reads the slice, and indexes the written questions' own paragraphs, as `--limit` does for the slice.
MultiHop-RAG is not offered: its questions share one corpus, read from beside its questions file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks import SHARED_DATA
from benchmarks.retrieval_modes import disjoint, disjoint_file
from evals.datasets import dataset_records, load_benchmark
from stores.files import write_atomic

DATASETS = ("hotpotqa", "2wikimultihopqa", "musique")


def disjoint_records(dataset: str, data: Path, evaluated: int, limit: int | None) -> list[dict[str, Any]]:
    """The source records of the first `limit` disjoint questions of `dataset`, in their file's order,
    found by their id (HotpotQA's `_id`, the others' `id`)."""
    group = disjoint(dataset, data, load_benchmark(dataset, data, limit=evaluated))
    wanted = [question.id for question in group.examples][:limit]
    records = dataset_records(disjoint_file(dataset, data))
    by_id = {record.get("_id", record.get("id")): record for record in records}
    return [by_id[qid] for qid in wanted]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", choices=DATASETS)
    parser.add_argument("--data", type=Path, help="the dataset's folder (default: ../shared/data/DATASET)")
    parser.add_argument(
        "--evaluated", type=int, default=50, help="questions the evaluation answers (first N)"
    )
    parser.add_argument("--limit", type=int, help="disjoint questions to write (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON Lines file to write")
    args = parser.parse_args()
    records = disjoint_records(
        args.dataset, args.data or SHARED_DATA / args.dataset, args.evaluated, args.limit
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(record) + "\n" for record in records)
    write_atomic(args.out, lambda handle: handle.write(text.encode("utf-8")))
    print(f"{len(records)} {args.dataset} questions disjoint from the first {args.evaluated}: {args.out}")


if __name__ == "__main__":
    main()
