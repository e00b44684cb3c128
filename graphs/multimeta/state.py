"""Multi-Meta-RAG's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from nodes.state import (
    MetadataFilterState,
)
from stores.evidence import Evidence


class MultiMetaState(MetadataFilterState, total=False):
    """Multi-Meta-RAG's state: `gathered` holds the passages the answer reads (the first K' of the reranked
    candidates), while `evidence` keeps the top_k the retrieval metrics score."""

    gathered: list[Evidence]
