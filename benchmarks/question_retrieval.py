"""The BiQOG paper's Table I on a MultiHop-RAG subset the local LLM can index: Full@5 / Full@20 / Recall@5 /
Recall@20 of NaiveRAG (dense), QuOTE and BiQOG, beside the paper's row and the two peers of ../shared/peers,
with paired intervals of QuOTE and BiQOG against NaiveRAG.

    .venv/bin/python -m benchmarks.question_retrieval --dry-run      # the subset, and what indexing it costs
    .venv/bin/python -m benchmarks.question_retrieval [--queries 100] [--out runs/table1-multihop-rag-q100]
    .venv/bin/python -m benchmarks.question_retrieval --max-chunks 20   # a trial: the cost per chunk only
    .venv/bin/python -m benchmarks.question_retrieval --dataset hotpotqa --queries 50 --questions-per-chunk 3

The subset (issue 14): the first `--queries` (100) non-null MultiHop-RAG dev queries, the articles they cite
as evidence, and as many distractor articles, drawn from the rest of the corpus by `random.Random(SEED)`
(SEED = 14, the issue's number), so every run of the command picks the same ones. The whole corpus cannot
be indexed: BiQOG asks the LLM for ten questions a chunk and judges each against five chunks, about 50
calls a chunk, and the local model takes about a minute a chunk. The subset is written to `--out` as a
MultiHop-RAG folder (corpus.json: the articles as the original holds them, one a line; MultiHopRAG.json:
the queries), which `evals.datasets.load_benchmark`, `hopgraph index`, `hopgraph eval --data` and the peer
scripts all read, and its composition is printed.

`--dataset` hotpotqa, 2wikimultihopqa or musique measures the same table on the first `--queries` questions
of that dev slice over their own paragraphs (gold and the dataset's distractors): the corpus and index
`hopgraph eval --dataset D --limit N` uses. Their paragraphs are short, hence `--questions-per-chunk`.
`--out` then gets the same corpus and questions in MultiHop-RAG form for the peers only (a paragraph an
article, its supporting sentences the facts); the paper's rows are not printed (Table I is MultiHop-RAG).

--dry-run prints the LLM calls of the index build (hopgraph.api.question_cost, without its warm-up calls,
so no LLM runs) and a time estimate from README's measured per-call times. Otherwise the subset is indexed
with method biqog (resumable: a killed run continues where it stopped, every LLM call journaled; the index
is the one `hopgraph eval` uses on the same data, so EM / F1 can follow on it), each
query runs each method's own graph up to its reader (interrupted before `generate`: no LLM at query time)
at k = 5 and at k = 20, and the peers run on the same subset and queries. Recall@k is the share of a
query's gold facts in its top k (evals.metrics.recall_at_k, by the peers' matching rule), Full@k whether all
of them are; all numbers are percentages, as the paper prints them. NaiveRAG is dense retrieval, the
paper's naive baseline. The peers print only their means, so the paired intervals
(evals.stats.paired_difference, over the same queries) compare hopgraph's rows. One more row, "BiQOG, hop
scores (before)", takes the top k of the same walks by each hop's own rerank scores, as BiQOG did before
issue 39 added the final rerank (every collected chunk scored once more, together): BiQOG's row is paired
against it too, the final rerank's before / after with no further run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from benchmarks.retrieval_vs_peers import DATA, peer_rows
from evals.datasets import DATASETS, MULTIHOP_RAG_CORPUS, Benchmark, DatasetName, QAExample, load_benchmark
from evals.metrics import RetrievedSpan, full_at_k, recall_at_k
from evals.runner import evidence_spans
from evals.stats import paired_difference
from graphs.biqog.state import TraversalHop
from graphs.registry import builder
from hopgraph import Settings, services_for
from hopgraph.api import QuestionCost, question_cost, question_params
from hopgraph.cli import _index
from hopgraph.evaluate import index_name
from stores.documents import Document
from stores.index import ChunkIndex
from stores.question_graph import QUESTION_GRAPH
from stores.questions import QUESTIONS

SEED = 14
KS = (5, 20)
COLUMNS = ("full@5", "full@20", "recall@5", "recall@20")
HEADERS = ("Full@5", "Full@20", "Recall@5", "Recall@20")
# Each row: the method's graph and its context beyond index and k. The paper's naive baseline is dense.
NAIVE = "NaiveRAG (dense)"
ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    NAIVE: ("naive", {"retrieval_mode": "dense"}),
    "QuOTE": ("quote", {}),
    "BiQOG": ("biqog", {}),
}
# BiQOG's top k taken by each hop's own rerank scores, as before issue 39 scored the collected chunks once
# more together: the final rerank's before / after on the same walks.
HOP_SCORES = "BiQOG, hop scores (before)"
# The BiQOG paper (seed 002), Table I, in the order of COLUMNS.
PAPER = {
    "NaiveRAG (dense)": (5.0, 21.0, 27.1, 51.5),
    "QuOTE": (8.0, 29.0, 32.4, 59.0),
    "BiQOG": (9.0, 32.0, 31.9, 60.3),
}
# README's measured per-call times of the embedded 1.5B model on 2 cores (QuOTE, BiQOG): the dry run's
# estimate, since measuring them now would run the LLM.
WRITER_SECONDS = 7.5
JUDGE_SECONDS = 1.2


@dataclass(frozen=True)
class Subset:
    """The subset as loaded from its folder: its queries and corpus, the articles the queries cite (in order
    of first citation) and the distractors (corpus order)."""

    path: Path
    benchmark: Benchmark
    cited: list[Document]
    distractors: list[Document]
    drawn: str = f"random.Random({SEED})"  # where the distractors come from

    @property
    def questions(self) -> list[QAExample]:
        """The queries scored: those with gold evidence (a null query has nothing to retrieve)."""
        return [q for q in self.benchmark.examples if q.evidence]


def make_subset(source: Path, out: Path, queries: int, seed: int = SEED) -> Subset:
    """Write the subset of the MultiHop-RAG folder `source` to the folder `out` (module docstring) and
    return it as loaded back from there, so what is scored is what the files hold."""
    full = load_benchmark("multihop_rag", source)
    chosen = [q for q in full.examples if q.evidence][:queries]
    cited_ids = list(dict.fromkeys(gold.doc_id for q in chosen for gold in q.evidence))
    cited = set(cited_ids)
    rest = [doc.id for doc in full.corpus if doc.id not in cited]  # corpus order: the draw is reproducible
    if len(rest) < len(cited_ids):
        raise SystemExit(
            f"{len(cited_ids)} cited articles but only {len(rest)} others to draw distractors from"
        )
    kept = cited | set(random.Random(seed).sample(rest, len(cited_ids)))
    articles = [a for a in json.loads((source / MULTIHOP_RAG_CORPUS).read_text()) if a["url"] in kept]
    wanted = {q.question for q in chosen}
    records = [q for q in json.loads((source / DATASETS["multihop_rag"]).read_text()) if q["query"] in wanted]
    out.mkdir(parents=True, exist_ok=True)
    # One article a line inside a JSON list: the format of the original, which the peers json.load.
    lines = ",\n".join(json.dumps(article, ensure_ascii=False) for article in articles)
    (out / MULTIHOP_RAG_CORPUS).write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    (out / DATASETS["multihop_rag"]).write_text(json.dumps(records, indent=1), encoding="utf-8")
    subset = load_benchmark("multihop_rag", out)
    docs = {doc.id: doc for doc in subset.corpus}
    return Subset(
        out,
        subset,
        [docs[doc_id] for doc_id in cited_ids],
        [doc for doc in subset.corpus if doc.id not in cited],
    )


def paragraph_subset(dataset: DatasetName, source: Path, out: Path, queries: int) -> Subset:
    """The first `queries` questions of a paragraph dataset over their own paragraphs (as `hopgraph eval
    --limit` loads them), also written to `out` in MultiHop-RAG form for the peers: a paragraph an article
    (url = its id), each question's gold sentences its facts."""
    benchmark = load_benchmark(dataset, source, queries)
    articles = [
        {"title": doc.title, "body": doc.text, "source": dataset, "url": doc.id} for doc in benchmark.corpus
    ]
    records = [
        {
            "query": q.question,
            "answer": q.answers[0],
            "question_type": dataset,  # anything but null_query: the peers score every one
            "evidence_list": [{"title": g.title, "url": g.doc_id, "fact": g.text} for g in q.evidence],
        }
        for q in benchmark.examples
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / MULTIHOP_RAG_CORPUS).write_text(json.dumps(articles, ensure_ascii=False), encoding="utf-8")
    (out / DATASETS["multihop_rag"]).write_text(json.dumps(records, indent=1), encoding="utf-8")
    cited = {g.doc_id for q in benchmark.examples for g in q.evidence}
    return Subset(
        out,
        benchmark,
        [doc for doc in benchmark.corpus if doc.id in cited],
        [doc for doc in benchmark.corpus if doc.id not in cited],
        drawn=f"{dataset}'s own",
    )


def build_cost(subset: Subset, name: str, settings: Settings, params: Mapping[str, Any]) -> QuestionCost:
    """The LLM calls a biqog build of the subset still needs with `params`, counted without calling it."""
    return question_cost(
        subset.benchmark.corpus, name, settings, method="biqog", extra_params=params, warmup=0
    )


def print_composition(subset: Subset, cost: QuestionCost) -> None:
    """What was measured on: the subset's exact size, chunks counted as the index build cuts them."""
    print(
        f"subset {subset.path}: {len(subset.questions)} non-null dev queries, {len(subset.cited)} articles "
        f"they cite, {len(subset.distractors)} distractors ({subset.drawn}), "
        f"{len(subset.cited) + len(subset.distractors)} articles, {cost.chunks} chunks"
    )


def print_cost(cost: QuestionCost) -> None:
    """The build's LLM calls still to make and README's per-call estimate of their time."""
    assert cost.edges is not None  # method biqog builds the question graph
    writer_hours = cost.calls * WRITER_SECONDS / 3600
    judge_hours = cost.edges.calls * JUDGE_SECONDS / 3600
    print(
        f"index build (biqog, {cost.params.per_chunk} questions a chunk, {cost.edges.params.candidates} "
        f"candidates): {cost.reused} of {cost.chunks} chunks already written; question writer {cost.calls} "
        f"calls (up to {cost.calls * cost.params.per_chunk} questions), edge judge at most "
        f"{cost.edges.calls} calls ({cost.edges.questions} questions x {1 + cost.edges.params.candidates} "
        f"chunks, less {cost.edges.held} verdicts held)"
    )
    print(
        f"estimate from README's measured times (not measured now): writer ~{WRITER_SECONDS} s a chunk, "
        f"judge ~{JUDGE_SECONDS} s a call warm -> {writer_hours:.1f} h + {judge_hours:.1f} h = "
        f"{writer_hours + judge_hours:.1f} h, one call at a time"
    )


def print_spent(name: str, settings: Settings) -> None:
    """The index cost per chunk: calls from the manifest, tokens and seconds per call from this run's calls.
    The journals keep results, not costs: when a role made no call this run (its work journaled by an
    earlier run), the manifest's phase times of the build's last run are shown instead."""
    services = services_for(settings)
    manifest = services.indexes.store.current_manifest(name)
    assert manifest is not None  # the build just finished
    questions, graph = manifest.extras[QUESTIONS.name], manifest.extras[QUESTION_GRAPH.name]
    judge_calls = graph.pairs / questions.chunks
    print(
        f"index cost per chunk: 1 question writer call, {questions.questions / questions.chunks:.1f} "
        f"questions, {judge_calls:.1f} judge calls, {graph.edges / questions.chunks:.1f} edges"
    )
    spent = {
        "question writer": (services.question_writer.spent, 1.0),
        "edge judge": (services.edge_judge.spent, judge_calls),
    }
    chunk = dict.fromkeys(("sent", "evaluated", "seconds"), 0.0)
    for role, (usage, per_chunk) in spent.items():
        if not usage["calls"]:
            print(f"  {role}: no calls this run")
            continue
        per_call = {
            "sent": usage["prompt_tokens"] / usage["calls"],
            "evaluated": (usage["prompt_tokens"] - usage["cached_tokens"]) / usage["calls"],
            "seconds": usage["seconds"] / usage["calls"],
        }
        print(
            f"  {role}: {usage['calls']} calls this run; a call {per_call['sent']:.0f} prompt tokens sent, "
            f"{per_call['evaluated']:.0f} evaluated, {per_call['seconds']:.2f} s"
        )
        for key, value in per_call.items():
            chunk[key] += per_chunk * value
    if all(usage["calls"] for usage, _ in spent.values()):
        print(
            f"  a chunk: {chunk['sent']:.0f} prompt tokens sent, {chunk['evaluated']:.0f} evaluated, "
            f"{chunk['seconds']:.1f} s"
        )
    else:
        print(f"  the build's last run took: questions {questions.seconds} s, graph {graph.seconds} s")


def state_before_reader(graph: Any, thread: str, question: str, context: Any) -> dict[str, Any]:
    """The state of one run of `graph` (compiled to stop before `generate`): its `evidence` is what the
    reader would read."""
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"question": question}, config, context=context)
    return graph.get_state(config).values


def by_hop_scores(traversal: Sequence[TraversalHop], k: int) -> list[tuple[str, float, int]]:
    """(chunk id, score, hop) of the top `k` as BiQOG took them before issue 39: every collected chunk by
    the score its own hop's rerank gave it, ties in the order collected (each hop's `chunks` are its
    collection order sorted by score, and the sort is stable)."""
    collected = [
        (chunk_id, score, hop["hop"])
        for hop in traversal
        for chunk_id, score in zip(hop["chunks"], hop["scores"], strict=True)
    ]
    return sorted(collected, key=lambda item: item[1], reverse=True)[:k]


def hop_score_spans(index: ChunkIndex, traversal: Sequence[TraversalHop], k: int) -> list[RetrievedSpan]:
    """The spans of `by_hop_scores`' top `k`, fetched from `index` (not all need be in the run's evidence)."""
    top = by_hop_scores(traversal, k)
    chunks = {chunk.id: chunk for chunk in index.get([chunk_id for chunk_id, _, _ in top])}
    return evidence_spans([index.evidence(chunks[chunk_id], score, hop) for chunk_id, score, hop in top])


def per_query(
    questions: Sequence[QAExample], retrieved_at: Mapping[int, Sequence[Sequence[RetrievedSpan]]]
) -> dict[str, list[float]]:
    """Each query's Full@k and Recall@k in percent, k in KS, each from the run at that k
    (`retrieved_at[k]`, one list of spans per question)."""
    values: dict[str, list[float]] = {}
    for k in KS:
        pairs = list(zip(questions, retrieved_at[k], strict=True))
        values[f"full@{k}"] = [100 * (full_at_k(q.evidence, spans, k) or 0.0) for q, spans in pairs]
        values[f"recall@{k}"] = [100 * (recall_at_k(q.evidence, spans, k) or 0.0) for q, spans in pairs]
    return {column: values[column] for column in COLUMNS}


def scores(
    questions: Sequence[QAExample], retrieved_at: Mapping[int, Sequence[Sequence[RetrievedSpan]]]
) -> dict[str, float]:
    """The table's row: each column's mean over the queries."""
    return means(per_query(questions, retrieved_at))


def means(by_column: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """A row of per-query values as the table prints it: each column's mean."""
    return {column: statistics.fmean(values) for column, values in by_column.items()}


def method_rows(
    questions: Sequence[QAExample], index: str, settings: Settings
) -> dict[str, dict[str, list[float]]]:
    """Each row of ROWS, per query: its graph, interrupted before the reader, run on every query at each k;
    and HOP_SCORES, BiQOG's walks ranked as before issue 39 (no further run: the same traversals)."""
    services = services_for(settings)
    rows: dict[str, dict[str, list[float]]] = {}
    for row, (method, options) in ROWS.items():
        graph = builder(method)(services).compile(checkpointer=InMemorySaver(), interrupt_before=["generate"])
        schema = graph.builder.context_schema
        states = {
            k: [
                state_before_reader(graph, f"{k}-{q.id}", q.question, schema(index=index, top_k=k, **options))
                for q in questions
            ]
            for k in KS
        }
        rows[row] = per_query(questions, {k: [evidence_spans(s["evidence"]) for s in states[k]] for k in KS})
        if method == "biqog":
            opened = services.indexes.open(index)
            rows[HOP_SCORES] = per_query(
                questions, {k: [hop_score_spans(opened, s["traversal"], k) for s in states[k]] for k in KS}
            )
    return rows


def print_paired(rows: Mapping[str, Mapping[str, Sequence[float]]], baseline: str = NAIVE) -> None:
    """Each row minus `baseline` per query, with its 95% paired-bootstrap interval (points): whether a
    difference is beyond the noise of this many queries."""
    print(f"\npaired differences against {baseline}, points [95% interval], * = interval excludes 0\n")
    print("| retriever | " + " | ".join(HEADERS) + " |")
    print("|---" * (len(HEADERS) + 1) + "|")
    for name, row in rows.items():
        if name == baseline:
            continue
        cells = []
        for column in COLUMNS:
            mean, low, high = paired_difference(row[column], rows[baseline][column])
            clear = "*" if low > 0 or high < 0 else ""
            cells.append(f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]{clear}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_table(subset: Subset, rows: Mapping[str, Mapping[str, float]]) -> None:
    print(
        f"\n{subset.benchmark.name} subset: {len(subset.questions)} queries, "
        f"{len(subset.cited) + len(subset.distractors)} articles (%)\n"
    )
    print("| retriever | " + " | ".join(HEADERS) + " |")
    print("|---" * (len(HEADERS) + 1) + "|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{row[c]:.1f}" for c in COLUMNS) + " |")
        if name in PAPER and subset.benchmark.name == "multihop_rag":
            print("| - paper (full corpus) | " + " | ".join(f"{v:g}" for v in PAPER[name]) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=list(DATASETS), default="multihop_rag", help="the dev slice")
    parser.add_argument("--queries", type=int, default=100, help="the first N non-null dev queries")
    parser.add_argument(
        "--source", type=Path, default=None, help="the dataset's folder (default ../shared/data/DATASET)"
    )
    parser.add_argument("--out", type=Path, default=None, help="subset folder (runs/table1-DATASET-qN)")
    parser.add_argument("--dry-run", action="store_true", help="the subset and the build's cost; no LLM")
    parser.add_argument(
        "--max-chunks",
        type=int,
        default=0,
        help="a trial: questions and edges for the first N chunks only, the index cost per chunk, no table "
        "(the full build later reuses them; 0 = all)",
    )
    parser.add_argument(
        "--questions-per-chunk", type=int, default=None, help="questions the LLM writes a chunk (default 10)"
    )
    args = parser.parse_args(argv)

    settings = Settings()
    source = args.source or DATA.parent / args.dataset
    out = args.out or Path("runs") / f"table1-{args.dataset.replace('_', '-')}-q{args.queries}"
    if args.dataset == "multihop_rag":
        subset = make_subset(source, out, args.queries)
    else:
        subset = paragraph_subset(args.dataset, source, out, args.queries)
    name = index_name(subset.benchmark, settings)
    params = question_params(args.questions_per_chunk, args.max_chunks)
    cost = build_cost(subset, name, settings, params)
    print_composition(subset, cost)
    print(f"index: {name}")
    print_cost(cost)
    if args.dry_run:
        return
    _index(subset.benchmark.corpus, name, settings, "biqog", extra_params=params)
    print_spent(name, settings)
    if args.max_chunks:
        print(f"a trial of {args.max_chunks} chunks: most chunks have no questions yet, so no table")
        return
    per_query_rows = method_rows(subset.questions, name, settings)
    rows = {row: means(by_column) for row, by_column in per_query_rows.items()}
    with tempfile.TemporaryDirectory() as workdir:
        for peer, measured in peer_rows(subset.questions, Path(workdir), out).items():
            rows[peer] = {column: 100 * measured[column] for column in COLUMNS}
    print_table(subset, rows)
    print_paired(per_query_rows)
    print_paired({row: per_query_rows[row] for row in ("BiQOG", HOP_SCORES)}, baseline=HOP_SCORES)


if __name__ == "__main__":
    main()
