"""Retrieval quality of hopgraph against the plain dense and BM25 peers, on MultiHop-RAG.

Same corpus, same non-null dev queries and the peers' evidence-matching rule (evals.metrics), so the
numbers sit beside ../shared/peers/README.md; with --peers the two peer scripts run in this same command
on the same queries and their numbers are printed beside ours.

    .venv/bin/python -m benchmarks.retrieval_vs_peers [--limit N] [--peers]
    .venv/bin/python -m benchmarks.retrieval_vs_peers --run runs/chainrag-multihop-50 \
        --methods naive,chainrag --peers

With --run, the queries are those an evaluation run on multihop_rag answered with every one of --methods,
and the evidence those methods stored is scored too. Methods that gather sentences hold far less text in
their top k than a chunk retriever, so a second table compares everything at equal reading budgets:
the gold facts found in the leading units totalling at most 4,000 / 10,000 characters, the text the
peers' 1,000-character chunks give at Hits@4 / Hits@10.
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

from evals.datasets import DATASETS, MULTIHOP_RAG_CORPUS, GoldEvidence, QAExample, load_benchmark
from evals.metrics import RetrievedSpan, full_at_k, hits_at_k, recall_within_chars
from evals.plots import plot_budget_bars
from evals.runner import Record, evidence_spans, latest_results, read_records, results_path, stored_gold
from hopgraph import Settings, index_corpus, services_for
from nodes.integrate import rerank

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multihop_rag"
PEERS = DATA.parents[1] / "peers"
KS = (4, 10, 20)
FULL_KS = (5, 20)
# Reading budgets in characters, each the text of that many of the peers' 1,000-character chunks.
BUDGETS = {4_000: "hits@4", 10_000: "hits@10"}


def run_peer(script: str, corpus: Path, queries: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(PEERS / script), str(corpus), str(queries)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    return {
        "peer dense": run_peer("plain_rag_peer.py", corpus, path),
        "peer BM25": run_peer("bm25_peer.py", corpus, path),
    }


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


def budget_row(scored: Sequence[tuple[Sequence[GoldEvidence], list[RetrievedSpan]]]) -> dict[str, float]:
    """Mean share of gold facts found within each reading budget, and the mean text retrieved in all."""
    row = {
        f"hits@{chars:,} chars": sum(recall_within_chars(g, spans, chars) or 0.0 for g, spans in scored)
        / len(scored)
        for chars in BUDGETS
    }
    row["chars"] = sum(sum(len(s.text) for s in spans) for _, spans in scored) / len(scored)
    return row


def print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    columns = list(next(iter(rows.values())))
    print(f"\n{title}\n")
    print("| retriever | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, row in rows.items():
        cells = (f"{row[c]:.1f}" if c in ("ms/query", "chars") else f"{row[c]:.3f}" for c in columns)
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_ratios(rows: dict[str, dict[str, float]], ours: Sequence[str]) -> None:
    for name in ours:
        ratios = ", ".join(
            f"{c} x{rows[name][c] / max(rows['peer dense'][c], rows['peer BM25'][c]):.2f}"
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
        totals = dict.fromkeys([f"hits@{k}" for k in KS] + [f"full@{k}" for k in FULL_KS], 0.0)
        scored = []
        started = time.perf_counter()
        for question in questions:
            hits = index.search(question.question, max(KS), mode=mode)
            spans = [
                RetrievedSpan(h.chunk.doc_id, h.chunk.char_start, h.chunk.char_end, h.chunk.text)
                for h in hits
            ]
            for k in KS:
                totals[f"hits@{k}"] += hits_at_k(question.evidence, spans, k) or 0.0
            for k in FULL_KS:
                totals[f"full@{k}"] += full_at_k(question.evidence, spans, k) or 0.0
            scored.append((question.evidence, spans))
        per_query_ms = 1000 * (time.perf_counter() - started) / len(questions)
        at_k[f"hopgraph {mode}"] = {key: value / len(questions) for key, value in totals.items()}
        at_k[f"hopgraph {mode}"]["ms/query"] = per_query_ms
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
                at_budget[name] = {f"hits@{c:,} chars": measured[key] for c, key in BUDGETS.items()}
                at_budget[name]["chars"] = float("nan")

    print_table(f"MultiHop-RAG, {len(questions)} non-null dev queries, at k units", at_k)
    print_table(
        "At equal reading budgets (peers: Hits@4 / Hits@10 of their 1,000-character chunks;"
        " chars = mean text a method gathered in all)",
        at_budget,
    )
    plot = args.plot or (args.run or Path(".")) / "retrieval_vs_peers.png"
    budgets_only = {name: {c: v for c, v in row.items() if c != "chars"} for name, row in at_budget.items()}
    plot_budget_bars(budgets_only, f"MultiHop-RAG, {len(questions)} queries: gold found within", plot)
    print(f"\nplot: {plot}")
    if args.peers:
        print_ratios(at_k, [f"hopgraph {mode}" for mode in ("dense", "bm25", "hybrid")])
        print_ratios(at_budget, [name for name in at_budget if not name.startswith("peer ")])


if __name__ == "__main__":
    main()
