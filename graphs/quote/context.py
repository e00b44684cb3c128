"""QuOTE's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    RetrievalContext,
    RetrievalMode,
    parameter,
)


@dataclass(kw_only=True)
class QuoteContext(RetrievalContext):
    """QuOTE's parameters: top-k chunks found through their hypothetical questions (the index's
    `questions` extra), over-retrieving k x M question entries to find k distinct chunks."""

    top_k: int = parameter(
        5,
        "k: distinct passages found through their questions and read by the answer.",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "QuOTE searches the embedded question entries, which only dense search can do; other modes are "
        "not used.",
    )
    over_retrieve: int = parameter(
        10,
        "M: question entries searched per passage wanted (k x M). Each chunk has up to 10 questions (the "
        "index default), so a chunk whose every question outranks the next chunk's still leaves room for "
        "k distinct chunks; when fewer turn up, the search is widened until k are found.",
        minimum=1,
        maximum=100,
    )
