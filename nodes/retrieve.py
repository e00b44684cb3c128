"""Retrieve: search an index with the question and add the hits to the evidence."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.protocols import IndexProvider
from nodes.state import Evidence, QAState
from stores.index import Hit


def hit_to_evidence(hit: Hit, hop: int) -> Evidence:
    chunk = hit.chunk
    return Evidence(
        id=chunk.id,
        doc_id=chunk.doc_id,
        title=chunk.title,
        text=chunk.text,
        score=round(float(hit.score), 6),
        char_start=chunk.char_start,
        char_end=chunk.char_end,
        hop=hop,
    )


class Retrieve:
    """Single-shot retrieval for the question (NaiveRAG's only retrieval step)."""

    def __init__(self, indexes: IndexProvider) -> None:
        self.indexes = indexes

    def __call__(self, state: QAState, runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, RetrievalContext)
        hits = self.indexes.open(ctx.index).search(state["question"], ctx.top_k, mode=ctx.retrieval_mode)
        return {"evidence": [hit_to_evidence(hit, hop=1) for hit in hits]}
