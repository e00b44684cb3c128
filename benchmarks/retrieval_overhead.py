"""Retrieval overhead per query, everything but the LLM and the encoder, at full MultiHop-RAG scale.

Each retrieval method is timed on the same queries, interleaved query by query so that the load of the
machine falls on all of them alike: dense, bm25 and hybrid search over the chunks (the Retrieve node,
NaiveRAG's top 5), and ChainRAG's seed step (embedding pre-filter, hybrid rerank, top 3) followed by one
expansion step over the sentence graph of the whole corpus (the SeedSentences and ExpandSentences nodes).
Query vectors are computed before the clock starts and handed out by a lookup in place of the encoder, so
the times hold Chroma, BM25, the graph and the nodes' own work and nothing else.

In the same loop rank-bm25, the library BM25 was scored with until bm25s replaced it, ranks the chunks
with the same tokenisation: its time is the "before" row of bm25, and its top k is compared with bm25s's
(overlap@k, and Recall@k of both, the share of gold facts in the top k, on the non-null queries).

    .venv/bin/python -m benchmarks.retrieval_overhead [--limit N] [--word-limit W]

Uses the evaluation index of the corpus (`hopgraph eval --dataset multihop_rag` builds and names it),
adding the sentence graph to it if it lacks one: about 10 minutes on 2 cores the first time.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized
from langgraph.runtime import Runtime
from rank_bm25 import BM25Okapi

from benchmarks import SHARED_DATA
from evals.datasets import load_benchmark
from evals.metrics import RetrievedSpan, recall_at_k
from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.steps import ExpandSentences, SeedSentences
from hopgraph import Settings, index_corpus, services_for
from hopgraph.evaluate import index_name
from hopgraph.providers import BoundIndexes, HybridReranker, index_store
from nodes.context import RetrievalContext, RetrievalMode
from nodes.retrieve import Retrieve
from stores.bm25 import K1, METHOD, B, tokenize
from stores.chunking import Chunk
from stores.index import ChunkIndex, IndexParams
from stores.protocols import Embedder
from stores.sentence_graph.extra import SentenceGraphExtra

DATA = SHARED_DATA / "multihop_rag"
TOP_K = RetrievalContext.top_k  # NaiveRAG's 5
KS = (4, 10)
GOAL_MS = 5.0


class PrecomputedQueries:
    """Stands in for the encoder: the vectors of the benchmark's queries, embedded before any timing.

    An unknown text is an error rather than a silent model call, which would be timed as retrieval.
    """

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self.name = embedder.name
        self.backend = embedder.backend
        self.dimension = embedder.dimension
        unique = list(dict.fromkeys(texts))
        vectors = np.asarray(embedder.embed(unique), dtype=np.float32)
        self._vectors = dict(zip(unique, vectors, strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [text for text in texts if text not in self._vectors]
        if missing:
            raise KeyError(f"query not embedded before timing: {missing[0]!r}")
        return np.stack([self._vectors[text] for text in texts])

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError("the benchmark only queries an index; it never chunks")


def rank_bm25_top(okapi: BM25Okapi, ids: Sequence[str], query: str, k: int) -> list[str]:
    """rank-bm25's top k as BM25Index.search ranked it: positive scores only, ties in index order."""
    words = tokenize(query)
    if not words:
        return []
    scores = okapi.get_scores(words)
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return [ids[i] for i in order if scores[i] > 0]


def float32_prefilter(vectors: np.ndarray, queries: Embedder, query: str, n: int) -> list[int]:
    """The seed pre-filter as it was before `HalfPrecisionTop`: one float32 product over all sentences,
    the top n by argpartition, sorted (ties by row)."""
    scores = vectors @ queries.embed([query])[0]
    top = np.argpartition(-scores, n - 1)[:n]
    return top[np.lexsort((top, -scores[top]))].tolist()


def bm25s_indexed_among(query: str, tokens: Sequence[Sequence[str]]) -> np.ndarray:
    """`stores.bm25.scores_among` as it was before it counted the query's words itself: bm25s indexing the
    texts with every word the query lacks as one placeholder (a per-text Python loop in bm25s)."""
    words = tokenize(query)
    if not words or not tokens:
        return np.zeros(len(tokens))
    vocab = {"": 0}
    for word in words:
        vocab.setdefault(word, len(vocab))
    ids = [[vocab.get(word, 0) for word in text] for text in tokens]
    bm25 = bm25s.BM25(k1=K1, b=B, method=METHOD)
    with np.errstate(invalid="ignore", divide="ignore"):
        bm25.index(Tokenized(ids=ids, vocab=vocab), create_empty_token=False, show_progress=False)
    return bm25.get_scores_from_ids([vocab[word] for word in words]).astype(np.float64)


def float64_prefilter(exact: np.ndarray, queries: Embedder, query: str, n: int) -> list[int]:
    """The exact top n: float64 products over all sentences, summed row by row as `HalfPrecisionTop`
    defines its scores, ties by row."""
    scores = (exact * queries.embed([query])[0].astype(np.float64)).sum(axis=1)
    return np.lexsort((np.arange(len(scores)), -scores))[:n].tolist()


def timed(call: Callable[[str], object], query: str) -> float:
    """Milliseconds `call(query)` takes."""
    started = time.perf_counter()
    call(query)
    return (time.perf_counter() - started) * 1000


def spans(chunks: Sequence[Chunk]) -> list[RetrievedSpan]:
    return [RetrievedSpan(c.doc_id, c.char_start, c.char_end, c.text) for c in chunks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=500, help="first N dev queries (default 500)")
    parser.add_argument(
        "--word-limit", type=int, default=ChainRAGContext.word_limit, help="ChainRAG's expansion limit"
    )
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    name = index_name(bench, settings)
    started = time.perf_counter()
    built = index_corpus(bench.corpus, name, settings, extras=["sentence_graph"])
    print(f"index {name}: {built.status}, {time.perf_counter() - started:.0f} s")
    examples = bench.examples[: args.limit]
    questions = [example.question for example in examples]

    started = time.perf_counter()
    queries = PrecomputedQueries(services_for(settings).embedder, questions)
    print(f"{len(questions)} queries embedded beforehand in {time.perf_counter() - started:.1f} s (untimed)")
    indexes = BoundIndexes(index_store(settings), queries)
    index: ChunkIndex = indexes.open(name)
    graph = index.extra(SentenceGraphExtra)
    print(f"{index.manifest.chunks:,} chunks, {len(graph):,} sentences")

    chunks = index.all_chunks()
    chunk_ids = [chunk.id for chunk in chunks]
    by_id = {chunk.id: chunk for chunk in chunks}
    params: IndexParams = index.manifest.params
    started = time.perf_counter()
    okapi = BM25Okapi([tokenize(params.indexed_text(chunk)) for chunk in chunks])
    print(f"rank-bm25 index of the chunks: {time.perf_counter() - started:.1f} s")

    reranker = HybridReranker(queries)  # type: ignore[arg-type]
    seed, expand = SeedSentences(indexes, reranker), ExpandSentences(indexes, queries)
    chain = ChainRAGContext(index=name, word_limit=args.word_limit)
    runtime = Runtime(context=chain)
    # The seed step's two costly parts are also timed alone; the rerank's candidates are looked up first,
    # and it is timed as the node calls it, BM25 scores from the graph's tokens included.
    pooled: dict[str, tuple[list[str], list[str], np.ndarray, list[list[str]]]] = {}
    for question in questions:
        ids = [sentence_id for sentence_id, _ in graph.candidates(question, chain.candidates)]
        texts = [s.text for s in graph.spans(ids)]
        pooled[question] = (ids, texts, graph.embeddings(ids), [tokenize(text) for text in texts])

    def rerank(question: str) -> object:
        ids, texts, vectors, _ = pooled[question]
        return reranker.score(question, texts, vectors, graph.lexical_scores(question, ids))

    def rerank_before(question: str) -> object:
        _, texts, vectors, tokens = pooled[question]
        return reranker.score(question, texts, vectors, bm25s_indexed_among(question, tokens))

    def chainrag(question: str) -> object:
        state = {"query": question, "step": 0}
        return expand({**state, **seed(state, runtime)}, runtime)

    def chunks_by(mode: RetrievalMode) -> Callable[[str], object]:
        node, context = Retrieve(indexes), Runtime(context=RetrievalContext(index=name, retrieval_mode=mode))
        return lambda question: node({"question": question}, context)

    vectors = graph.embeddings(graph.ids)  # the float32 matrix the pre-filter read before, for its row
    methods: dict[str, Callable[[str], object]] = {
        "dense": chunks_by("dense"),
        "bm25 (bm25s)": chunks_by("bm25"),
        "hybrid": chunks_by("hybrid"),
        "ChainRAG seed + expansion": chainrag,
        "- of which the pre-filter (cosine, all sentences)": lambda q: graph.candidates(q, chain.candidates),
        "- of which the hybrid rerank (BM25 over the 100)": rerank,
        "- the hybrid rerank, bm25s indexing the 100 (before)": rerank_before,
        "- the pre-filter in float32 (before)": lambda q: float32_prefilter(
            vectors, queries, q, chain.candidates
        ),
        "bm25 (rank-bm25, before)": lambda q: index.get(rank_bm25_top(okapi, chunk_ids, q, TOP_K)),
    }
    for method in methods.values():  # warm-up: first-use costs (graph load, caches) are not per query
        method(questions[0])

    times: dict[str, list[float]] = {method: [] for method in methods}
    depth = max(KS)
    overlap: dict[int, list[float]] = {k: [] for k in KS}
    recall: dict[str, dict[int, list[float]]] = {lib: {k: [] for k in KS} for lib in ("bm25s", "rank-bm25")}
    shuffle = np.random.default_rng(0)
    row = {sentence_id: number for number, sentence_id in enumerate(graph.ids)}
    exact = vectors.astype(np.float64)
    same_as_float32: list[bool] = []
    same_as_float64: list[bool] = []
    same_bm25_among: list[bool] = []
    for example in examples:
        # In a fresh order for every query: a call's time depends on what ran just before it (whether the
        # BLAS threads were still awake, what is in the caches), so no method always follows the same one.
        for method in shuffle.permutation(list(methods)).tolist():
            times[method].append(timed(methods[method], example.question))
        # the quality comparison, untimed: both libraries' top 10 over the same chunks
        new = [hit.chunk.id for hit in index.search(example.question, depth, mode="bm25")]
        old = rank_bm25_top(okapi, chunk_ids, example.question, depth)
        for k in KS:
            overlap[k].append(len(set(new[:k]) & set(old[:k])) / k)
        # the pre-filter's result, untimed: against float32 (before) and float64 over all sentences
        rows = [row[sentence_id] for sentence_id, _ in graph.candidates(example.question, chain.candidates)]
        same_as_float32.append(
            rows == float32_prefilter(vectors, queries, example.question, chain.candidates)
        )
        same_as_float64.append(rows == float64_prefilter(exact, queries, example.question, chain.candidates))
        ids, _, _, tokens = pooled[example.question]
        before = bm25s_indexed_among(example.question, tokens)
        same_bm25_among.append(np.array_equal(graph.lexical_scores(example.question, ids), before))
        if example.evidence:
            for lib, ranked in (("bm25s", new), ("rank-bm25", old)):
                retrieved = spans([by_id[chunk_id] for chunk_id in ranked])
                for k in KS:
                    recall[lib][k].append(recall_at_k(example.evidence, retrieved, k) or 0.0)

    print(
        f"\nMultiHop-RAG, {len(examples)} queries, {index.manifest.chunks:,} chunks (top {TOP_K}), "
        f"{len(graph):,} sentences (word_limit {args.word_limit}); encoder excluded\n"
    )
    print(f"| method | median ms / query | p90 ms / query | median / {GOAL_MS:g} ms goal |")
    print("|---|---|---|---|")
    medians = {method: float(np.median(values)) for method, values in times.items()}
    for method, values in times.items():
        p90 = float(np.percentile(values, 90))
        print(f"| {method} | {medians[method]:.2f} | {p90:.2f} | x{medians[method] / GOAL_MS:.2f} |")
    speedup = medians["bm25 (rank-bm25, before)"] / medians["bm25 (bm25s)"]
    print(f"\nbm25: rank-bm25 / bm25s = x{speedup:.1f} (medians, same run)")
    among = medians["- of which the hybrid rerank (BM25 over the 100)"]
    among_before = medians["- the hybrid rerank, bm25s indexing the 100 (before)"]
    print(f"hybrid rerank: counted / bm25s indexing = x{among / among_before:.2f} (medians, same run)")
    print(
        f"pre-filter top {chain.candidates}, rows in order: the same as float32's (before) on "
        f"{sum(same_as_float32)} of {len(examples)} queries, as float64's over all sentences on "
        f"{sum(same_as_float64)}"
    )

    print(
        f"BM25 among the 100 candidates: the same scores, bit for bit, as bm25s indexing them (before) on "
        f"{sum(same_bm25_among)} of {len(examples)} queries"
    )

    scored = len(recall["bm25s"][KS[0]])
    print(f"\n| BM25 library ({len(examples)} queries; Recall@k on the {scored} non-null) | ", end="")
    print(" | ".join(f"overlap@{k} with rank-bm25 | Recall@{k}" for k in KS) + " |")
    print("|---|" + "---|" * (2 * len(KS)))
    for lib in ("rank-bm25", "bm25s"):
        cells = []
        for k in KS:
            agree = 1.0 if lib == "rank-bm25" else float(np.mean(overlap[k]))
            cells += [f"{agree:.3f}", f"{np.mean(recall[lib][k]):.3f}"]
        print(f"| {lib} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
