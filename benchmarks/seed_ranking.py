"""How the offline rerankers order ChainRAG's seed candidates, on MultiHop-RAG, without any LLM.

For each non-null dev query, the sentence graph's embedding pre-filter keeps the 100 most similar
sentences (ChainRAG's seed step); each offline reranker then orders them, and the share of gold facts in
the leading sentences totalling at most 4,000 characters is measured (the text of the peers' Recall@4; see
benchmarks/retrieval_vs_peers.py). The pre-filter's own ceiling (every fact anywhere in the 100) is
printed beside them. The queries are whole questions, not sub-questions: this isolates the ranking step.

    .venv/bin/python -m benchmarks.seed_ranking [--limit N] [--index NAME]

Builds (or reuses) the sentence-graph index of the full corpus, `bench-sentence-graph-609` (the one
benchmarks.sentence_graph_build builds): about 8 minutes on 2 cores the first time. `--index` names an
existing index of the same corpus with a sentence graph instead (the evaluation's, for instance).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks import SHARED_DATA
from evals.datasets import load_benchmark
from evals.metrics import RetrievedSpan, recall_within_chars
from hopgraph import Settings, index_corpus, services_for
from hopgraph.providers import EmbeddingSimilarityReranker, HybridReranker
from stores.sentence_graph.extra import SentenceGraphExtra

DATA = SHARED_DATA / "multihop_rag"
INDEX = "bench-sentence-graph-609"
CANDIDATES = 100
BUDGET = 4_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N non-null queries")
    parser.add_argument("--index", default=None, help="an existing index of the corpus with a sentence graph")
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    if args.index is None:
        started = time.perf_counter()
        build = index_corpus(bench.corpus, INDEX, settings, method="chainrag")
        print(f"index: {build.status}, {time.perf_counter() - started:.0f} s")
    services = services_for(settings)
    graph = services.indexes.open(args.index or INDEX).extra(SentenceGraphExtra)
    rerankers = {
        "embedding (cosine)": EmbeddingSimilarityReranker(services.embedder),
        "hybrid (cosine + BM25, RRF)": HybridReranker(services.embedder),
    }
    questions = [q for q in bench.examples if q.evidence][: args.limit]

    found: dict[str, list[float]] = {name: [] for name in [*rerankers, "all 100 candidates (ceiling)"]}
    for question in questions:
        ids = [sentence_id for sentence_id, _ in graph.candidates(question.question, CANDIDATES)]
        sentences = graph.sentences(ids)
        spans = [RetrievedSpan(s.doc_id, s.char_start, s.char_end, s.text) for s in sentences]
        for name, reranker in rerankers.items():
            scores = reranker.score(question.question, [s.text for s in sentences], graph.embeddings(ids))
            ordered = [spans[i] for i in np.argsort(-np.asarray(scores), kind="stable")]
            found[name].append(recall_within_chars(question.evidence, ordered, BUDGET) or 0.0)
        ceiling = recall_within_chars(question.evidence, spans, sum(len(s.text) for s in spans))
        found["all 100 candidates (ceiling)"].append(ceiling or 0.0)

    print(f"\nMultiHop-RAG, {len(questions)} non-null dev queries, {CANDIDATES} pre-filtered sentences\n")
    print(f"| seed ranking | gold facts within {BUDGET:,} characters |")
    print("|---|---|")
    for name, values in found.items():
        print(f"| {name} | {sum(values) / len(values):.3f} |")


if __name__ == "__main__":
    main()
