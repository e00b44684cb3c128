"""ChainRAG's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    DecompositionContext,
    IntegrationMode,
    parameter,
)


@dataclass(kw_only=True)
class ChainRAGContext(DecompositionContext):
    """ChainRAG's parameters, paper defaults (k=3 seeds, 100 candidates, 3000-word limit) and ablations."""

    top_k: int = parameter(
        3,
        "Seed sentences per sub-question (the paper's k); chunks per sub-question when use_graph is off.",
        minimum=1,
        maximum=100,
    )
    candidates: int = parameter(
        100, "Sentences kept by the embedding pre-filter before reranking.", minimum=1, maximum=1000
    )
    word_limit: int = parameter(
        3000, "Expansion stops once the gathered sentences reach this many words.", minimum=1, maximum=20000
    )
    integration: IntegrationMode = parameter(
        "answers",
        "answers = AnsInt (sub-questions and their answers); contexts = CxtInt (every gathered sentence, "
        "reranked, as many as the reader's context window holds).",
    )
    rewrite: bool = parameter(True, "Ablation switch: rewrite sub-questions that refer to earlier answers.")
    ec_edges: bool = parameter(True, "Ablation switch: entity co-occurrence (EC) edges.")
    ss_edges: bool = parameter(True, "Ablation switch: semantic similarity (SS) edges.")
    sa_edges: bool = parameter(True, "Ablation switch: structural adjacency (SA) edges.")
    use_graph: bool = parameter(
        True, "Ablation switch: off retrieves chunks (as NaiveRAG) instead of sentences, with no expansion."
    )

    def integration_word_limit(self) -> int | None:
        """None: the word limit bounds each sub-question's expansion, not what CxtInt reads; the paper and
        its authors' code read every deduplicated sentence of every sub-question (nodes.integrate)."""
        return None
