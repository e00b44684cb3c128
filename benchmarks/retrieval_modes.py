"""Which search mode reads the most gold on each dataset, on the questions an evaluation answers and on
questions disjoint from them (issue 42: the retrieval half of NaiveRAG's gap to the plain peer, no LLM).

    .venv/bin/python -m benchmarks.retrieval_modes [--evaluated 50] [--k 5] [--plot FILE] \
        [--datasets hotpotqa,2wikimultihopqa,musique,multihop_rag]

Each dataset is read from ../shared/data as `hopgraph eval` reads it, in two groups of questions:
"evaluated", the first `--evaluated` (the questions the evaluation tables answer), and "disjoint", the
rest of the slice (HotpotQA 250, 2Wiki 50, MultiHop-RAG 1,500 non-null). MuSiQue's slice holds only its 50
questions with their distractor paragraphs, so its disjoint group comes from the other file of its folder
(`DISJOINT_FILES`: the first 200 dev questions in FlashRAG's layout, which carry their supporting
paragraphs only), less the questions it shares with the evaluated ones: there each question's distractors
are the other questions' paragraphs. A choice of search mode for a kind of
corpus can be made on the disjoint group and then checked on the evaluated one, rather than made from the
evaluated questions themselves. Each group is searched over its own corpus, the one `hopgraph eval
--limit N` indexes for those questions (their paragraphs, gold and distractors; MultiHop-RAG's full corpus
for both groups), indexed with the default chunking and embedder.

Printed per dataset, group and mode (dense, bm25, hybrid: the modes of `retrieval_mode`): Recall@k and
Full@k of the gold evidence (evals.metrics, the peers' matching rule; percent) at `--k` (NaiveRAG's top
k, 5) and at twice it; then hybrid and bm25 against dense, paired per question (bootstrap 95% interval,
evals.stats.paired_difference). The Recall@k differences are drawn, a row per group and mode, into `--plot`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from rich.console import Console

from benchmarks import SHARED_DATA
from benchmarks.retrieval_vs_peers import chunk_spans
from evals.datasets import DATASETS, Benchmark, QAExample, load_benchmark
from evals.metrics import full_at_k, recall_at_k
from evals.plots import Interval, intervals_figure, method_colors, save_figure
from evals.stats import paired_difference
from hopgraph import Settings, index_corpus, services_for
from hopgraph.progress import stage_reporter, stages_bar
from stores.index import ChunkIndex, SearchMode

MODES: tuple[SearchMode, ...] = get_args(SearchMode)  # dense, bm25, hybrid
BASELINE = "dense"
DISJOINT_FILES = {"musique": "musique_dev_200.jsonl"}
"""Datasets whose disjoint questions are another file of their folder, not the rest of the slice."""
PLOT_FILE = Path("retrieval-modes.png")

Scores = dict[str, list[float]]  # column -> one score a question, in question order


@dataclass(frozen=True)
class Group:
    """Questions of one dataset searched together over one corpus."""

    dataset: str
    name: str  # "evaluated" or "disjoint"
    bench: Benchmark

    @property
    def label(self) -> str:
        return f"{self.dataset}, {self.name} ({len(self.questions)})"

    @property
    def questions(self) -> list[QAExample]:
        """The questions with gold evidence (MultiHop-RAG's null queries have none to find)."""
        return [q for q in self.bench.examples if q.evidence]


def groups(dataset: str, data: Path, evaluated: int) -> list[Group]:
    """The evaluated and the disjoint group of `dataset`; a group without a question with evidence is left
    out."""
    asked = load_benchmark(dataset, data, limit=evaluated)
    found = [Group(dataset, "evaluated", asked), Group(dataset, "disjoint", disjoint(dataset, data, asked))]
    return [group for group in found if group.questions]


def disjoint_file(dataset: str, data: Path) -> Path:
    """The questions file the disjoint group of `dataset` (its folder `data`) is read from."""
    return data / DISJOINT_FILES.get(dataset, DATASETS[dataset])


def disjoint(dataset: str, data: Path, asked: Benchmark) -> Benchmark:
    """The questions after the evaluated ones, or those of the dataset's other file that the evaluated ones
    do not ask (their corpus keeps every loaded paragraph: a shared question's are distractors too)."""
    if dataset not in DISJOINT_FILES:
        return load_benchmark(dataset, disjoint_file(dataset, data), skip=len(asked.examples))
    other = load_benchmark(dataset, disjoint_file(dataset, data))
    seen = {question.question.casefold() for question in asked.examples}
    kept = [question for question in other.examples if question.question.casefold() not in seen]
    return Benchmark(other.name, kept, other.corpus)


def searched(index: ChunkIndex, group: Group, k: int) -> dict[str, Scores]:
    """mode -> Recall@k, Full@k and Recall@2k of each question of `group`."""
    by_mode: dict[str, Scores] = {}
    for mode in MODES:
        columns: Scores = {f"Recall@{k}": [], f"Full@{k}": [], f"Recall@{2 * k}": []}
        for question in group.questions:
            spans = chunk_spans(index.search(question.question, 2 * k, mode=mode))
            columns[f"Recall@{k}"].append(recall_at_k(question.evidence, spans, k) or 0.0)
            columns[f"Full@{k}"].append(full_at_k(question.evidence, spans, k) or 0.0)
            columns[f"Recall@{2 * k}"].append(recall_at_k(question.evidence, spans, 2 * k) or 0.0)
        by_mode[mode] = columns
    return by_mode


def table(results: Mapping[str, Mapping[str, Scores]]) -> str:
    """Means per group and mode, in percent, as a Markdown table."""
    columns = list(next(iter(next(iter(results.values())).values())))
    lines = ["| questions | mode | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for label, by_mode in results.items():
        for mode, scores in by_mode.items():
            cells = (f"{100 * sum(values) / len(values):.1f}" for values in scores.values())
            lines.append(f"| {label} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def differences(results: Mapping[str, Mapping[str, Scores]], column: str) -> list[Interval]:
    """Each other mode against dense on `column`, paired per question, a row per group and mode."""
    colors = method_colors(MODES)
    return [
        Interval(
            f"{label}: {mode} − {BASELINE}",
            *paired_difference(by_mode[mode][column], by_mode[BASELINE][column]),
            colors[mode],
        )
        for label, by_mode in results.items()
        for mode in MODES
        if mode != BASELINE
    ]


def paired_table(intervals: Sequence[Interval], column: str) -> str:
    """The paired differences as a Markdown table, in points."""
    lines = [f"| questions: mode − {BASELINE} | {column} (points) | 95% interval |", "|---|---|---|"]
    lines += [
        f"| {row.label} | {100 * row.mean:+.1f} | [{100 * row.low:+.1f}, {100 * row.high:+.1f}] |"
        for row in intervals
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", default=",".join(DATASETS), help="comma-separated, of " + ", ".join(DATASETS)
    )
    parser.add_argument(
        "--data", type=Path, default=SHARED_DATA, help="the folder holding each dataset's folder"
    )
    parser.add_argument(
        "--evaluated", type=int, default=50, help="the first N questions: the evaluated group"
    )
    parser.add_argument("--k", type=int, default=5, help="the top k read (NaiveRAG's default 5)")
    parser.add_argument(
        "--plot", type=Path, default=PLOT_FILE, help=f"the figure's file (default {PLOT_FILE})"
    )
    args = parser.parse_args(argv)
    wanted = [name for name in args.datasets.split(",") if name]
    unknown = [name for name in wanted if name not in DATASETS]
    if unknown:
        parser.error(f"unknown dataset(s) {', '.join(unknown)}; use {', '.join(DATASETS)}")
    if args.evaluated < 1 or args.k < 1:
        parser.error("--evaluated and --k must be at least 1")

    settings = Settings()
    services = services_for(settings)
    results: dict[str, dict[str, Scores]] = {}
    for dataset in wanted:
        for group in groups(dataset, args.data / dataset, args.evaluated):
            # MultiHop-RAG's groups share the full corpus: one index serves both.
            name = f"modes-{dataset}" if dataset == "multihop_rag" else f"modes-{dataset}-{group.name}"
            with stages_bar(Console(stderr=True)) as bar:  # embedding a group takes minutes on a CPU
                build = index_corpus(group.bench.corpus, name, settings, progress=stage_reporter(bar))
            print(f"{group.label}: index {name} {build.status}, {build.manifest.chunks} chunks", flush=True)
            results[group.label] = searched(services.indexes.open(name), group, args.k)

    column = f"Recall@{args.k}"
    intervals = differences(results, column)
    print("\n" + table(results) + "\n\n" + paired_table(intervals, column))
    figure = intervals_figure({f"{column}, each mode − {BASELINE} (points)": intervals})
    print(f"\nplot: {save_figure(figure, args.plot)}")


if __name__ == "__main__":
    main()
