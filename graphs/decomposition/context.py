"""Query decomposition's parameters (seed 004 §2.4)."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import CountedDecompositionContext, CountMode, RetrievalMode, parameter


@dataclass(kw_only=True)
class QueryDecompositionContext(CountedDecompositionContext):
    """Query decomposition (seed 004 §2.4): N sub-queries, top-K passages each, answered from them all.

    Defaults are the seed's best setting: N = 3 (it tests 3, 4 and 5, F1 falling as N grows), top-5 per
    sub-query by dense search, and exactly N, since the seed fixes N (its Table 1 is measured at each N).
    """

    top_k: int = parameter(
        5, "Passages retrieved for each sub-question (seed 004: top-5 per sub-query).", minimum=1, maximum=100
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How each sub-question's passages are searched: dense (Chroma; default, as seed 004 retrieves by "
        "vector similarity), bm25, or hybrid (reciprocal-rank fusion of both).",
    )
    max_sub_questions: int = parameter(
        3,
        "N, the number of sub-questions (seed 004 tests 3, 4 and 5); a longer list is cut to its first N.",
        minimum=1,
        maximum=10,
    )
    count: CountMode = parameter(
        "exactly",
        "exactly = the decomposer is asked for exactly N sub-questions, as the seed fixes N (fewer distinct "
        "ones given are kept, and recorded); up_to = at most N (fewer when the question needs fewer); "
        "as_needed = ChainRAG's own prompt, stating no count (usually two), cut at N.",
    )
