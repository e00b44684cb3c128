"""BiQOG's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    RetrievalContext,
    RetrievalMode,
    parameter,
)


@dataclass(kw_only=True)
class BiqogContext(RetrievalContext):
    """BiQOG's traversal of the question-chunk graph (the index's `question_graph` extra). Seed 002 names
    these parameters but not the values it used, so the defaults are this implementation's (README, BiQOG)."""

    top_k: int = parameter(
        5,
        "k: chunks of all the traversal saw, best by the final rerank, read by the answer (seed 002 reports "
        "k = 5 and 20).",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "BiQOG finds its seed questions by searching the embedded questions, which only dense search can "
        "do; other modes are not used.",
    )
    seeds: int = parameter(
        5,
        "Questions nearest to the query that the traversal starts from: as many as the passages read, so "
        "each needed fact has a chance of a question of its own.",
        minimum=1,
        maximum=100,
    )
    hops: int = parameter(
        2,
        "Hops: each collects the chunks adjacent to the current questions and moves to the questions "
        "adjacent to the kept ones (at least 1; 2 reaches the chunks that share a question with a chunk of "
        "the seeds': one link beyond what the seeds alone find).",
        minimum=1,
        maximum=10,
    )
    width: int = parameter(
        5,
        "Chunks kept per hop by the reranker, whose questions the next hop starts from: a hop's frontier "
        "stays the size of what the answer reads, so the reranker's calls grow linearly with the hops.",
        minimum=1,
        maximum=1000,
    )
