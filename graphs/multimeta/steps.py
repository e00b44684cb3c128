"""Rerank: order retrieved candidates with the configured reranker, keep the best as evidence and the best
few as what the answer reads (Multi-Meta-RAG: 20 candidates, 10 kept, 6 read)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from graphs.multimeta.context import MultiMetaContext
from graphs.multimeta.state import MultiMetaState
from nodes.context import context_of
from nodes.integrate import rerank
from nodes.protocols import IndexProvider, Reranker


class RerankCandidates:
    """Reranks `gathered` against the question; writes the first `top_k` to `evidence` (in reranked order,
    which retrieval metrics read as the ranking) and the first `answer_k` back to `gathered` for the reader.

    The candidates are the index's chunks, so their stored vectors are handed to the reranker: embedding
    20 chunks again cost about 1 s a query on these 2 cores, a lookup a few milliseconds. The stored vectors
    embed what the index embeds (title, text and any `embed_metadata` lines), the text dense search ranked.
    """

    def __init__(self, reranker: Reranker, indexes: IndexProvider) -> None:
        self.reranker = reranker
        self.indexes = indexes

    def __call__(self, state: MultiMetaState, runtime: Runtime[MultiMetaContext]) -> dict:
        ctx = context_of(runtime.context, MultiMetaContext)
        candidates = state.get("gathered", [])
        vectors = self.indexes.open(ctx.index).embeddings([item["id"] for item in candidates])
        ranked = rerank(self.reranker, state["question"], candidates, vectors)
        return {"evidence": ranked[: ctx.top_k], "gathered": ranked[: ctx.answer_k]}
