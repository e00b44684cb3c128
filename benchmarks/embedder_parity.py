"""Retrieval and speed of the onnx embedding backends against sentence-transformers' torch fp32, on the full
MultiHop-RAG corpus with all 1,550 non-null queries.

The corpus is chunked as an index of the default settings chunks it (chunk_size, chunk_overlap,
embed_metadata; the same token spans for every backend), and each backend embeds every chunk's indexed
text; each query's top 20 are the chunks of highest cosine, as the index's exact dense search ranks them at
this size. Building three Chroma indexes would only add the same writes to each. The chunks are embedded
in blocks with the backends taking turns (the order rotating per block), so a change in the machine's load
falls on all of them alike.

Printed per backend: dense Recall@10, Hits@10 (MultiHop-RAG's official) and Full@20 with their difference
from torch fp32 in points, the mean share of the top 10 that torch fp32 also ranks in its top 10, the
cosine of each chunk's vector to torch fp32's (min / mean), chunks embedded a second and the speed ratio to
torch fp32, and the p50 time to embed one question on its own (a query's cost).

    HOPGRAPH_MODEL_DIR=~/.local/share/hopgraph/models .venv/bin/python -m benchmarks.embedder_parity
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.retrieval_vs_peers import DATA, at_k_row
from evals.datasets import load_benchmark
from evals.metrics import RetrievedSpan
from hopgraph.providers import OnnxEmbedder, SentenceTransformerEmbedder
from hopgraph.settings import Settings
from stores.chunking import Chunk, chunk_document
from stores.index import IndexParams
from stores.protocols import Embedder

REFERENCE = "sentence-transformers"
COLUMNS = {"recall@10": "Recall@10", "hits@10": "Hits@10", "full@20": "Full@20"}
BLOCK = 512  # chunks per turn
DEPTH = 20


def top(queries: np.ndarray, chunks: np.ndarray, k: int) -> np.ndarray:
    """Each query's k chunks of highest cosine, best first (ties by position, as a stable sort keeps them)."""
    scores = queries @ chunks.T
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-docs", type=int, default=None, help="first N documents (a quick look)")
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    docs = bench.corpus[: args.limit_docs]
    params = IndexParams(
        settings.chunk_size, settings.chunk_overlap, list(settings.embed_metadata)
    ).carried_by(docs)
    embedders: dict[str, Embedder] = {
        REFERENCE: SentenceTransformerEmbedder(settings.embedding_model),
        "onnx": OnnxEmbedder(settings.embedding_model, "onnx", settings.models_path),
        "onnx-int8": OnnxEmbedder(settings.embedding_model, "onnx-int8", settings.models_path),
    }
    for embedder in embedders.values():
        embedder.embed(["warm up: load the model, export it first if need be"])
    chunks: list[Chunk] = [
        chunk
        for doc in docs
        for chunk in chunk_document(
            doc, embedders[REFERENCE].token_spans, params.chunk_size, params.chunk_overlap
        )
    ]
    texts = [params.indexed_text(chunk) for chunk in chunks]
    documents = {chunk.doc_id for chunk in chunks}
    questions = [
        q for q in bench.examples if q.evidence and all(fact.doc_id in documents for fact in q.evidence)
    ]
    load = os.getloadavg()
    print(
        f"{len(docs)} documents, {len(chunks)} chunks (chunk {params.chunk_size}/{params.chunk_overlap} "
        f"tokens, metadata {params.embed_metadata or 'none'}), {len(questions)} non-null queries; "
        f"{os.cpu_count()} cores, load average {load[0]:.2f} at the start"
    )

    names = list(embedders)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    seconds = dict.fromkeys(names, 0.0)
    for turn, start in enumerate(range(0, len(texts), BLOCK)):
        block = texts[start : start + BLOCK]
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            began = time.perf_counter()
            parts[name].append(embedders[name].embed(block))
            seconds[name] += time.perf_counter() - began
    vectors = {name: np.concatenate(parts[name]) for name in names}

    query_texts = [q.question for q in questions]
    single_ms: dict[str, float] = {}
    for name in names:
        times = []
        for text in query_texts[:100]:
            began = time.perf_counter()
            embedders[name].embed([text])
            times.append(1000 * (time.perf_counter() - began))
        single_ms[name] = statistics.median(times)
    rankings = {name: top(embedders[name].embed(query_texts), vectors[name], DEPTH) for name in names}

    rows = {}
    for name in names:
        scored = [
            (
                q.evidence,
                [
                    RetrievedSpan(chunks[i].doc_id, chunks[i].char_start, chunks[i].char_end, chunks[i].text)
                    for i in ranked
                ],
            )
            for q, ranked in zip(questions, rankings[name], strict=True)
        ]
        rows[name] = at_k_row(scored)

    reference = rows[REFERENCE]
    print(
        "\n| backend | "
        + " | ".join(f"{title} (Δ pts)" for title in COLUMNS.values())
        + " | top-10 overlap | cosine min / mean | chunks/s | speed vs fp32 | query p50 ms |"
    )
    print("|---" * (len(COLUMNS) + 6) + "|")
    for name in names:
        cells = [
            f"{rows[name][key]:.3f} ({100 * (rows[name][key] - reference[key]):+.1f})" for key in COLUMNS
        ]
        overlap = np.mean(
            [
                len(set(a[:10]) & set(b[:10])) / 10
                for a, b in zip(rankings[name], rankings[REFERENCE], strict=True)
            ]
        )
        cosine = np.sum(vectors[name] * vectors[REFERENCE], axis=1)
        rate = len(texts) / seconds[name]
        cells += [
            f"{overlap:.3f}",
            f"{cosine.min():.4f} / {cosine.mean():.4f}",
            f"{rate:.1f}",
            f"{seconds[REFERENCE] / seconds[name]:.2f}x",
            f"{single_ms[name]:.1f}",
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    worst = {
        name: max(abs(100 * (rows[name][key] - reference[key])) for key in COLUMNS) for name in names[1:]
    }
    print(
        "\nlargest |Δ| in points: "
        + ", ".join(
            f"{name} {delta:.2f} ({'within' if delta <= 0.5 else 'OVER'} 0.5)"
            for name, delta in worst.items()
        )
        + f"; load average {os.getloadavg()[0]:.2f} at the end"
    )
    print(f"export folder: {Path(settings.models_path) / 'onnx'}")


if __name__ == "__main__":
    main()
