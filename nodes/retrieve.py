"""Retrieve: search an index with the question and add the hits to the evidence."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.protocols import IndexProvider
from nodes.state import QAState, evidence_from


class Retrieve:
    """Single-shot retrieval for the question (NaiveRAG's only retrieval step)."""

    def __init__(self, indexes: IndexProvider) -> None:
        self.indexes = indexes

    def __call__(self, state: QAState, runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, RetrievalContext)
        hits = self.indexes.open(ctx.index).search(state["question"], ctx.top_k, mode=ctx.retrieval_mode)
        return {"evidence": [evidence_from(hit.chunk, hit.score, hop=1) for hit in hits]}
