"""ReSP's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nodes.context import (
    RetrievalContext,
    RetrievalMode,
    parameter,
)

LocalPathwayReads = Literal["documents", "memories"]


@dataclass(kw_only=True)
class ReSPContext(RetrievalContext):
    """ReSP's parameters, the paper's defaults (paper 001 §5.2): top-5 dense retrieval, at most 3
    iterations, 200 output tokens for the intermediate calls."""

    top_k: int = parameter(
        5,
        "Passages retrieved each round: for the question on the first, then for the sub-question the "
        "reasoner planned (the paper's top-5).",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How passages are searched: dense (Chroma; the paper's vector retriever, default), bm25, or "
        "hybrid (reciprocal-rank fusion of both).",
    )
    max_iterations: int = parameter(
        3,
        "Most retrieval rounds (the paper's 3, at least 1); after the last one the generator answers from "
        "the memories without asking the reasoner.",
        minimum=1,
        maximum=20,
    )
    step_tokens: int = parameter(
        200,
        "Output-token cap of the summarizer's and the planner's calls (the paper's 200); the judge's "
        "verdict is its first word, so it gets a few tokens.",
        minimum=1,
        maximum=1024,
    )
    local_pathway_reads: LocalPathwayReads = parameter(
        "documents",
        "What the summarizer answers the current sub-question from: documents = the round's retrieved "
        "passages (the paper's §4.1, default); memories = the two memory queues (the paper's Table 1 "
        "prompt), this round's global evidence included.",
    )
