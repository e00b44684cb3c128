"""Per-run parameters (LangGraph `context_schema`): what Studio shows and lets you edit for a run.

Only plain values live here; loaded models and opened indexes are handed to nodes when the graph is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

RetrievalMode = Literal["dense", "bm25", "hybrid"]
C = TypeVar("C")


@dataclass(kw_only=True)
class RetrievalContext:
    """Parameters every retrieve-then-answer method shares."""

    index: str = "default"
    """Name of the index to search (built by `hopgraph index PATH --name NAME`)."""
    top_k: int = 5
    """How many passages a retrieval step keeps."""
    retrieval_mode: RetrievalMode = "hybrid"
    """dense (Chroma), bm25, or hybrid (reciprocal-rank fusion of both)."""
    max_answer_tokens: int = 32
    """Token budget of the final answer: benchmark answers are short spans."""


def context_of(runtime_context: C | None, schema: type[C]) -> C:
    """The run's context, or the schema's defaults when the caller passed none (plain `graph.invoke(...)`)."""
    return runtime_context if runtime_context is not None else schema()
