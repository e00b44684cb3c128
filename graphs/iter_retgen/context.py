"""Iter-RetGen's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    RetrievalContext,
    parameter,
)


@dataclass(kw_only=True)
class IterRetGenContext(RetrievalContext):
    """Iter-RetGen's parameters (Shao et al. 2023, as ChainRAG's and ReSP's papers run it): T = 3 iterations
    of top-5 retrieval, each with the question and the previous iteration's generation."""

    top_k: int = parameter(
        5,
        "Passages retrieved in each iteration (the question joined with the previous generation).",
        minimum=1,
        maximum=100,
    )
    iterations: int = parameter(
        3,
        "T, the number of retrieve-then-generate iterations (at least 1; 1 is NaiveRAG). They end sooner "
        "only when an iteration's generation repeats the previous one, which fixes every later one.",
        minimum=1,
        maximum=10,
    )
