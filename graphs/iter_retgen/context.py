"""Iter-RetGen's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    ChainOfThoughtContext,
    ChainReader,
    RetrievalMode,
    parameter,
)


@dataclass(kw_only=True)
class IterRetGenContext(ChainOfThoughtContext):
    """Iter-RetGen's parameters (Shao et al. 2023, as ChainRAG's and ReSP's papers run it): T = 3 iterations
    of top-5 dense retrieval, each with the question and the previous iteration's chain of thought, the
    worked examples its generations are shown (`demonstrations`, IR-CoT's) and how much of each passage they
    read (`paragraph_words`)."""

    top_k: int = parameter(
        5,
        "Passages retrieved in each iteration (the question joined with the previous generation).",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How passages are searched: dense (Chroma; default, as the papers that run Iter-RetGen retrieve: "
        "ChainRAG's embedder, ReSP's E5), bm25, or hybrid (reciprocal-rank fusion of both).",
    )
    iterations: int = parameter(
        3,
        "T, the number of retrieve-then-generate iterations (at least 1). They end sooner only when the "
        "next query would be this iteration's again (its chain of thought the previous one's), which fixes "
        "every later one.",
        minimum=1,
        maximum=10,
    )
    reader: ChainReader = parameter(
        "direct",
        "How the answer is read: direct (default: the shared reader's short answer over the last "
        "iteration's passages; that iteration then writes no chain, which nothing would read) or cot (the "
        'original\'s: what follows "answer is" in the last chain of thought, the direct reader when it has '
        "none). With the 1.5B model the chains' own answers were the weaker (docs/methods/iter_retgen.md).",
    )
