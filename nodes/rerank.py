"""Rerank: order retrieved candidates with the configured reranker, keep the best as evidence and the best
few as what the answer reads (Multi-Meta-RAG: 20 candidates, 10 kept, 6 read)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import MultiMetaContext, context_of
from nodes.integrate import rerank
from nodes.protocols import Reranker
from nodes.state import MultiMetaState


class RerankCandidates:
    """Reranks `gathered` against the question; writes the first `top_k` to `evidence` (in reranked order,
    which retrieval metrics read as the ranking) and the first `answer_k` back to `gathered` for the reader.
    """

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker

    def __call__(self, state: MultiMetaState, runtime: Runtime[MultiMetaContext]) -> dict:
        ctx = context_of(runtime.context, MultiMetaContext)
        ranked = rerank(self.reranker, state["question"], state.get("gathered", []))
        return {"evidence": ranked[: ctx.top_k], "gathered": ranked[: ctx.answer_k]}
