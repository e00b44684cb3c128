"""TreeHop's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nodes.context import (
    RetrievalContext,
    RetrievalMode,
    parameter,
)

TreeHopUpdateRule = Literal["learned", "delta"]


PassageOrder = Literal["hop", "score"]


@dataclass(kw_only=True)
class TreeHopContext(RetrievalContext):
    """TreeHop's parameters: the public code's K = 5 chunks per hop, 3 hops (seed 004 reports 1 to 5)."""

    top_k: int = parameter(
        5,
        "K: chunks retrieved per query embedding, and new branches kept per hop by layer-wise pruning.",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense", "TreeHop searches with query embeddings it computes, which only dense search can take."
    )
    hops: int = parameter(
        3, "Retrieval hops (at least 1; 1 is dense NaiveRAG; seed 004 reports 1 to 5).", minimum=1, maximum=10
    )
    update: TreeHopUpdateRule = parameter(
        "learned",
        "How a hop's query becomes the next: learned (the checkpoint's gate) or delta (q - c normalised, no "
        "learned gate: the ablation that shows what training adds).",
    )
    answer_k: int = parameter(
        8, "Kept chunks the answer reads, taken in answer_order.", minimum=1, maximum=100
    )
    answer_order: PassageOrder = parameter(
        "hop",
        "Order of the chunks the answer reads: hop (hop 1 first, best first within a hop) or score "
        "(by similarity to the query that retrieved them).",
    )
