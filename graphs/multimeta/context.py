"""Multi-Meta-RAG's parameters: its `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    MetadataFilterContext,
    parameter,
)


@dataclass(kw_only=True)
class MultiMetaContext(MetadataFilterContext):
    """Multi-Meta-RAG's parameters, seed 004's: K = 20 filtered candidates, reranked, the top 10 kept as
    the retrieval result and the top K' = 6 read by the answer."""

    metadata_filter: bool = parameter(
        True,
        "Search only the sources and dates the question names (off: rerank unfiltered candidates, an "
        "ablation). When the filter leaves fewer than answer_k candidates, unfiltered search adds the rest.",
    )
    candidates: int = parameter(20, "K: candidates retrieved through the filter and reranked (seed 004: 20).")
    top_k: int = parameter(10, "Reranked passages kept as the run's evidence, which retrieval metrics score.")
    answer_k: int = parameter(6, "K': the best reranked passages the answer is read from (seed 004: 6).")
