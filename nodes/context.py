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


@dataclass(kw_only=True)
class DecompositionContext(RetrievalContext):
    """Methods that first split the question into sub-questions."""

    max_sub_questions: int = 4
    """Cap on the decomposer's list (the paper's prompt asks for usually two)."""


IntegrationMode = Literal["answers", "contexts"]


@dataclass(kw_only=True)
class ChainRAGContext(DecompositionContext):
    """ChainRAG's parameters, paper defaults (k=3 seeds, 100 candidates, 3000-word limit) and ablations."""

    top_k: int = 3
    """Seed sentences per sub-question (the paper's k)."""
    candidates: int = 100
    """Sentences kept by the embedding pre-filter before reranking."""
    word_limit: int = 3000
    """Expansion stops once the gathered sentences reach this many words."""
    integration: IntegrationMode = "answers"
    """answers = AnsInt (sub-questions and their answers); contexts = CxtInt (reranked sentences)."""
    rewrite: bool = True
    """Ablation switch: rewrite sub-questions that refer to earlier answers."""
    ec_edges: bool = True
    """Ablation switch: entity co-occurrence edges."""
    ss_edges: bool = True
    """Ablation switch: semantic similarity edges."""
    sa_edges: bool = True
    """Ablation switch: structural adjacency edges."""
    use_graph: bool = True
    """Ablation switch: False retrieves chunks (as NaiveRAG) instead of sentences, with no expansion."""
