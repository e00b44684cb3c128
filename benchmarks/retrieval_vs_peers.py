"""Retrieval quality of hopgraph against the plain dense and BM25 peers, on MultiHop-RAG.

Same corpus, same non-null dev queries and the peers' evidence-matching rule (evals.metrics), so the
numbers sit beside ../shared/peers/README.md; with --peers the two peer scripts run in this same command
on the same queries and their numbers are printed beside ours.

Two kinds of retrieval score: Recall@k (and Full@k) is the mean share of a query's gold facts found in
its top k (all of them), by evals.metrics' matching rules. Hits@4 / Hits@10 (official) is the share of
queries with at least one gold fact in the top 4 / 10, and MAP@10 / MRR@10 (official) their ranking
scores, as MultiHop-RAG's own retrieval_evaluate.py computes them (evals.metrics.multihop_rag_official):
the numbers MultiHop-RAG's paper publishes and the peers print beside their Recall@k.

    .venv/bin/python -m benchmarks.retrieval_vs_peers [--limit N] [--peers]
    .venv/bin/python -m benchmarks.retrieval_vs_peers --run runs/chainrag-multihop-50 \
        --methods naive,chainrag --peers

With --run, the queries are those an evaluation run on multihop_rag answered with every one of --methods,
and the evidence those methods stored is scored too. Methods that gather sentences hold far less text in
their top k than a chunk retriever, so a second table compares everything at equal reading budgets:
Recall within 4,000 / 10,000 characters, the share of gold facts found in the first 4,000 / 10,000
characters read, the text the peers' 1,000-character chunks give at Recall@4 / Recall@10.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import SHARED_DATA
from benchmarks.peer_scripts import END_OF_PEER
from evals.datasets import DATASETS, MULTIHOP_RAG_CORPUS, QAExample, load_benchmark
from evals.gold import GoldEvidence
from evals.metrics import (
    RetrievedSpan,
    dedupe_spans,
    full_at_k,
    multihop_rag_official,
    recall_at_k,
    recall_within_chars,
)
from evals.plots import plot_budget_bars
from evals.runner import Record, evidence_spans, latest_results, read_records, results_path, stored_gold
from hopgraph import Settings, index_corpus, services_for
from nodes.integrate import rerank
from stores.index import Hit

DATA = SHARED_DATA / "multihop_rag"
KS = (4, 10, 20)
FULL_KS = (5, 20)
# MultiHop-RAG's own metrics, under the keys evals.metrics.multihop_rag_official and the peers give them,
# and their column headers.
OFFICIAL = {
    "hits@4": "Hits@4 (official)",
    "hits@10": "Hits@10 (official)",
    "map@10": "MAP@10 (official)",
    "mrr@10": "MRR@10 (official)",
}
# Reading budgets in characters, each the text of that many of the peers' 1,000-character chunks: the
# peers' Recall@k there is their recall within that budget.
BUDGETS = {4_000: "recall@4", 10_000: "recall@10"}


def run_peers(scripts: Sequence[str], corpus: Path, queries: Path) -> list[dict[str, float]]:
    """Each peer script's result (the JSON its last line prints), in the order of `scripts`, all run in one
    interpreter (benchmarks.peer_scripts)."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.peer_scripts", str(corpus), str(queries), *scripts],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    results, printed = [], []
    for line in out.stdout.splitlines():
        if line.startswith(END_OF_PEER):
            results.append(json.loads(printed[-1]))
            printed = []
        else:
            printed.append(line)
    if len(results) != len(scripts):
        raise RuntimeError(f"the peers {scripts} printed {len(results)} results: {out.stdout[-2000:]}")
    return results


def peer_rows(
    questions: Sequence[QAExample], workdir: Path, data: Path = DATA
) -> dict[str, dict[str, float]]:
    """Both peers on exactly `questions` over the corpus of `data` (a MultiHop-RAG folder: the full set, or
    a subset such as benchmarks.question_retrieval writes): its queries file cut down to them, in its own
    format."""
    wanted = {q.question for q in questions}
    queries = [q for q in json.loads((data / DATASETS["multihop_rag"]).read_text()) if q["query"] in wanted]
    path = workdir / "queries.json"
    path.write_text(json.dumps(queries))
    corpus = data / MULTIHOP_RAG_CORPUS
    dense, bm25 = run_peers(["plain_rag_peer.py", "bm25_peer.py"], corpus, path)
    return {"peer dense": dense, "peer BM25": bm25}


def stored_evidence(run_dir: Path, methods: Sequence[str]) -> dict[str, dict[str, Record]]:
    """method -> question -> its result line, on the multihop_rag questions every method answered."""
    results = latest_results(read_records(results_path(run_dir)))
    by_method = {
        m: {r["question"]: r for (d, method, _), r in results.items() if d == "multihop_rag" and method == m}
        for m in methods
    }
    missing = [m for m, lines in by_method.items() if not lines]
    if missing:
        raise SystemExit(f"{run_dir}: no multihop_rag results for {', '.join(missing)}; check --methods")
    answered = set.intersection(
        *(
            {q for q, r in lines.items() if r["error"] is None and r["gold_evidence"]}
            for lines in by_method.values()
        )
    )
    return {m: {q: r for q, r in lines.items() if q in answered} for m, lines in by_method.items()}


def chunk_spans(hits: Sequence[Hit]) -> list[RetrievedSpan]:
    """The chunks of a search, in its ranking, as spans to score."""
    return [RetrievedSpan(h.chunk.doc_id, h.chunk.char_start, h.chunk.char_end, h.chunk.text) for h in hits]


def budget_key(chars: int) -> str:
    """The budget table's column for `chars`."""
    return f"Recall within {chars:,} chars"


def at_k_row(scored: Sequence[tuple[Sequence[GoldEvidence], list[RetrievedSpan]]]) -> dict[str, float]:
    """Mean Recall@k and Full@k over the queries, and MultiHop-RAG's own metrics of the ranked units averaged
    over the queries with gold facts, as its script averages them."""
    row = {
        f"recall@{k}": sum(recall_at_k(g, spans, k) or 0.0 for g, spans in scored) / len(scored) for k in KS
    }
    for k in FULL_KS:
        row[f"full@{k}"] = sum(full_at_k(g, spans, k) or 0.0 for g, spans in scored) / len(scored)
    official = [
        multihop_rag_official([fact.text for fact in g], [span.text for span in dedupe_spans(spans)])
        for g, spans in scored
    ]
    with_gold = [measured for measured in official if measured is not None]
    for key in OFFICIAL:
        row[key] = sum(measured[key] for measured in with_gold) / len(with_gold)
    return row


def budget_row(scored: Sequence[tuple[Sequence[GoldEvidence], list[RetrievedSpan]]]) -> dict[str, float]:
    """Mean share of gold facts found within each reading budget, and the mean text retrieved in all."""
    row = {
        budget_key(chars): sum(recall_within_chars(g, spans, chars) or 0.0 for g, spans in scored)
        / len(scored)
        for chars in BUDGETS
    }
    row["chars"] = sum(sum(len(s.text) for s in spans) for _, spans in scored) / len(scored)
    return row


def print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    columns = list(next(iter(rows.values())))
    print(f"\n{title}\n")
    print("| retriever | " + " | ".join(OFFICIAL.get(c, c) for c in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, row in rows.items():
        cells = (f"{row[c]:.1f}" if c in ("ms/query", "chars") else f"{row[c]:.3f}" for c in columns)
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_ratios(rows: dict[str, dict[str, float]], ours: Sequence[str]) -> None:
    for name in ours:
        ratios = ", ".join(
            f"{OFFICIAL.get(c, c)} x{rows[name][c] / max(rows['peer dense'][c], rows['peer BM25'][c]):.2f}"
            for c in rows[name]
            if c not in ("ms/query", "chars")
        )
        print(f"{name} / best peer: {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N non-null queries")
    parser.add_argument("--peers", action="store_true", help="also run the peer scripts now")
    parser.add_argument("--run", type=Path, default=None, help="an evaluation run folder on multihop_rag")
    parser.add_argument("--methods", default="", help="with --run: comma-separated methods of that run")
    parser.add_argument(
        "--plot", type=Path, default=None, help="bar chart of the budget table (default: in --run, or here)"
    )
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    if bool(args.run) != bool(methods):
        parser.error("--run and --methods go together")

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    started = time.perf_counter()
    build = index_corpus(bench.corpus, "bench-multihop-rag", settings)
    print(f"index: {build.status}, {build.manifest.chunks} chunks, {time.perf_counter() - started:.0f} s")
    services = services_for(settings)
    index = services.indexes.open("bench-multihop-rag")
    stored = stored_evidence(args.run, methods) if args.run else {}
    questions = [q for q in bench.examples if q.evidence]
    if stored:
        questions = [q for q in questions if q.question in next(iter(stored.values()))]
    questions = questions[: args.limit]

    at_k: dict[str, dict[str, float]] = {}
    at_budget: dict[str, dict[str, float]] = {}
    for mode in ("dense", "bm25", "hybrid"):
        started = time.perf_counter()  # the searches alone: scoring them is not the retriever's time
        ranked = [index.search(question.question, max(KS), mode=mode) for question in questions]
        per_query_ms = 1000 * (time.perf_counter() - started) / len(questions)
        scored = [(q.evidence, chunk_spans(hits)) for q, hits in zip(questions, ranked, strict=True)]
        at_k[f"hopgraph {mode}"] = {**at_k_row(scored), "ms/query": per_query_ms}
        at_budget[f"hopgraph {mode}"] = budget_row(scored)
    for method, lines in stored.items():
        records = [lines[q.question] for q in questions]
        at_budget[method] = budget_row([(stored_gold(r), evidence_spans(r["evidence"])) for r in records])
        at_budget[f"{method}, reranked ({settings.reranker})"] = budget_row(
            [
                (stored_gold(r), evidence_spans(rerank(services.reranker, r["question"], r["evidence"])))
                for r in records
            ]
        )
    if args.peers:
        with tempfile.TemporaryDirectory() as workdir:
            for name, measured in peer_rows(questions, Path(workdir)).items():
                at_k[name] = {key: measured.get(key, float("nan")) for key in at_k["hopgraph dense"]}
                at_budget[name] = {budget_key(c): measured[key] for c, key in BUDGETS.items()}
                at_budget[name]["chars"] = float("nan")

    print_table(f"MultiHop-RAG, {len(questions)} non-null dev queries, at k units", at_k)
    print_table(
        "At equal reading budgets (peers: Recall@4 / Recall@10 of their 1,000-character chunks;"
        " chars = mean text a method gathered in all)",
        at_budget,
    )
    plot = args.plot or (args.run or Path(".")) / "retrieval_vs_peers.png"
    budgets_only = {name: {c: v for c, v in row.items() if c != "chars"} for name, row in at_budget.items()}
    plot_budget_bars(
        budgets_only, f"MultiHop-RAG, {len(questions)} queries: gold found at equal budgets", plot
    )
    print(f"\nplot: {plot}")
    if args.peers:
        print_ratios(at_k, [f"hopgraph {mode}" for mode in ("dense", "bm25", "hybrid")])
        print_ratios(at_budget, [name for name in at_budget if not name.startswith("peer ")])


if __name__ == "__main__":
    main()
