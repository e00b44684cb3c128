"""Multi-Meta-RAG's parameters: its `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import MetadataFilterContext, RetrievalMode, parameter


@dataclass(kw_only=True)
class MultiMetaContext(MetadataFilterContext):
    """Multi-Meta-RAG's parameters, seed 004's and its code's: K = 20 candidates by dense search through the
    filter, reranked, the top 10 kept as the retrieval result and the top K' = 6 read by the answer; what
    the filter leaves is all there is (no unfiltered top-up), as in the original."""

    metadata_filter: bool = parameter(
        True,
        "Search only the sources and dates the question names (off: rerank unfiltered candidates, an "
        "ablation).",
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How candidates are searched: dense (the original's vector search, default), hybrid "
        "(reciprocal-rank fusion with BM25) or bm25.",
    )
    refill: bool = parameter(
        False,
        "When the filter leaves fewer than answer_k candidates, add the rest from unfiltered search (off, "
        "as in the original: an empty filtered result is recorded in `fallbacks` and the answer reads "
        "nothing).",
    )
    candidates: int = parameter(
        20, "K: candidates retrieved through the filter and reranked (seed 004: 20).", minimum=1, maximum=1000
    )
    top_k: int = parameter(
        10,
        "Reranked passages kept as the run's evidence, which retrieval metrics score.",
        minimum=1,
        maximum=100,
    )
    answer_k: int = parameter(
        6, "K': the best reranked passages the answer is read from (seed 004: 6).", minimum=1, maximum=100
    )

    @property
    def refill_below(self) -> int:
        """The filtered candidates below which unfiltered search tops them up: answer_k with `refill`, else
        none (`nodes.retrieve.Retrieve`'s `filled_below`)."""
        return self.answer_k if self.refill else 0
