"""Sentence-graph retrieval for one sub-question (ChainRAG §3.2): seed sentences, then graph expansion.

Seeds: the embedding pre-filter keeps the `candidates` most similar sentences, the reranker scores them
against the sub-question (with their stored vectors and their BM25 scores among themselves from the
graph's tokens, for a reranker that uses either) and the best `top_k` become seeds. Expansion: every step
adds the neighbours of everything gathered so far (the first step is all 1-hop neighbours of the seeds,
later steps reach higher orders), best first by similarity to the sub-question, until the word limit.
With the graph ablated (`use_graph=False`) the seeds are chunks from the chunk index and nothing is expanded.
"""

from __future__ import annotations

import numpy as np
from langgraph.runtime import Runtime

from nodes.context import ChainRAGContext, context_of
from nodes.protocols import IndexProvider, Reranker
from nodes.state import ChainRAGState, Evidence, evidence_from
from stores.protocols import Embedder

STOP_SUFFICIENT, STOP_WORD_LIMIT, STOP_EXHAUSTED, STOP_NO_GRAPH = (
    "sufficient",
    "word_limit",
    "exhausted",
    "no_graph",
)


def word_count(evidence: list[Evidence]) -> int:
    return sum(len(item["text"].split()) for item in evidence)


def enabled_edges(ctx: ChainRAGContext) -> frozenset[str]:
    switches = {"EC": ctx.ec_edges, "SS": ctx.ss_edges, "SA": ctx.sa_edges}
    return frozenset(kind for kind, on in switches.items() if on)


class SeedSentences:
    def __init__(self, indexes: IndexProvider, reranker: Reranker) -> None:
        self.indexes = indexes
        self.reranker = reranker

    def __call__(self, state: ChainRAGState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        hop = state.get("step", 0) + 1
        index = self.indexes.open(ctx.index)
        if not ctx.use_graph:
            hits = index.search(state["query"], ctx.top_k, mode=ctx.retrieval_mode)
            gathered = [evidence_from(hit.chunk, hit.score, hop) for hit in hits]
            return {"gathered": gathered, "stop": STOP_NO_GRAPH}
        graph = index.extra("sentence_graph")
        ids = [sentence_id for sentence_id, _ in graph.candidates(state["query"], ctx.candidates)]
        lexical = graph.lexical_scores(state["query"], ids)
        scores = self.reranker.score(state["query"], graph.texts(ids), graph.embeddings(ids), lexical)
        best = sorted(zip(scores, range(len(ids)), strict=True), reverse=True)[: ctx.top_k]
        seeds = graph.spans([ids[i] for _, i in best])
        return {
            "gathered": [
                evidence_from(seed, score, hop) for seed, (score, _) in zip(seeds, best, strict=True)
            ]
        }


class ExpandSentences:
    def __init__(self, indexes: IndexProvider, embedder: Embedder) -> None:
        self.indexes = indexes
        self.embedder = embedder

    def __call__(self, state: ChainRAGState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        graph = self.indexes.open(ctx.index).extra("sentence_graph")
        gathered = list(state.get("gathered", []))
        expansions = state.get("expansions", 0) + 1
        neighbours = graph.neighbors([item["id"] for item in gathered], enabled_edges(ctx))
        if not neighbours:
            return {"expansions": expansions, "stop": STOP_EXHAUSTED}
        similarity = graph.embeddings(neighbours) @ self.embedder.embed([state["query"]])[0]
        order = np.argsort(-similarity, kind="stable")
        best_first = [neighbours[i] for i in order]
        # Best first until the next sentence would pass the word limit: the longest prefix whose running
        # total fits (counts are never negative, so the totals only grow).
        totals = word_count(gathered) + np.cumsum(graph.word_counts(best_first))
        fits = int(np.searchsorted(totals, ctx.word_limit, side="right"))
        hop, kept = state.get("step", 0) + 1, graph.spans(best_first[:fits])
        gathered += [
            evidence_from(sentence, float(similarity[i]), hop)
            for sentence, i in zip(kept, order[:fits], strict=True)
        ]
        stop = STOP_WORD_LIMIT if fits < len(best_first) else ""
        return {"gathered": gathered, "expansions": expansions, "stop": stop}
