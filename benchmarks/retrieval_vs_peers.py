"""Retrieval quality of hopgraph's chunk index against the plain dense and BM25 peers, on MultiHop-RAG.

Same corpus, same non-null dev queries and the peers' own evidence-matching rule (evals.metrics), so the
numbers sit beside ../shared/peers/README.md; with --peers the two peer scripts run in this same command
and their numbers are printed beside ours.

    .venv/bin/python -m benchmarks.retrieval_vs_peers [--limit N] [--peers]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from evals.datasets import load_benchmark
from evals.metrics import RetrievedSpan, full_at_k, hits_at_k
from hopgraph import Settings, index_corpus, services_for

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multihop_rag"
PEERS = DATA.parents[1] / "peers"
KS = (4, 10, 20)
FULL_KS = (5, 20)


def run_peer(script: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(PEERS / script), str(DATA / "corpus.json"), str(DATA / "MultiHopRAG.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N non-null queries")
    parser.add_argument("--peers", action="store_true", help="also run the peer scripts now")
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    started = time.perf_counter()
    build = index_corpus(bench.corpus, "bench-multihop-rag", settings)
    print(f"index: {build.status}, {build.manifest.chunks} chunks, {time.perf_counter() - started:.0f} s")
    index = services_for(settings).indexes.open("bench-multihop-rag")
    questions = [q for q in bench.examples if q.evidence][: args.limit]

    rows: dict[str, dict[str, float]] = {}
    for mode in ("dense", "bm25", "hybrid"):
        totals = dict.fromkeys([f"hits@{k}" for k in KS] + [f"full@{k}" for k in FULL_KS], 0.0)
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
        per_query_ms = 1000 * (time.perf_counter() - started) / len(questions)
        rows[f"hopgraph {mode}"] = {key: value / len(questions) for key, value in totals.items()}
        rows[f"hopgraph {mode}"]["ms/query"] = per_query_ms
    if args.peers:
        for name, script in (("peer dense", "plain_rag_peer.py"), ("peer BM25", "bm25_peer.py")):
            measured = run_peer(script)
            rows[name] = {key: measured.get(key, float("nan")) for key in next(iter(rows.values()))}

    columns = list(next(iter(rows.values())))
    print(f"\nMultiHop-RAG, {len(questions)} non-null dev queries\n")
    print("| retriever | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, row in rows.items():
        print(
            f"| {name} | "
            + " | ".join(f"{row[c]:.3f}" if c != "ms/query" else f"{row[c]:.1f}" for c in columns)
            + " |"
        )
    if args.peers:
        for mode in ("dense", "bm25", "hybrid"):
            ours = rows[f"hopgraph {mode}"]
            ratios = ", ".join(
                f"{c} x{ours[c] / max(rows['peer dense'][c], rows['peer BM25'][c]):.2f}"
                for c in columns
                if c != "ms/query"
            )
            print(f"hopgraph {mode} / best peer: {ratios}")


if __name__ == "__main__":
    main()
