"""QuOTE's retrieval: find chunks through the questions the LLM wrote for them at index time.

Each stored entry is a question embedded together with its chunk (stores.questions). The query is embedded,
the k x M nearest entries are searched, each entry stands for its chunk, and the first k distinct chunks
(each at its best entry's score) are the evidence the shared reader answers from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from graphs.quote.context import QuoteContext
from nodes.context import context_of
from nodes.protocols import IndexProvider
from nodes.state import question_hits
from stores.protocols import Embedder
from stores.questions import QuestionMatch, QuestionsExtra, QuestionStore

HOP = 1


def distinct_chunks(matches: list[QuestionMatch], k: int) -> list[QuestionMatch]:
    """The best entry of each chunk, best first, for the first `k` chunks the entries name."""
    best: dict[str, QuestionMatch] = {}
    for match in matches:
        if len(best) == k:
            break
        best.setdefault(match.chunk_id, match)
    return list(best.values())


def search_distinct(
    questions: QuestionStore, vector: Any, k: int, over_retrieve: int
) -> tuple[list[QuestionMatch], list[QuestionMatch]]:
    """(every entry searched, the best entry of each of the top-k distinct chunks).

    Searches k x M entries; while they name fewer than k chunks and more entries exist, twice as many."""
    depth = max(1, k * over_retrieve)
    while True:
        matches = questions.nearest_entries(vector, depth)
        kept = distinct_chunks(matches, k)
        if len(kept) >= k or depth >= questions.info.questions:
            return matches, kept
        depth *= 2


class QuoteRetrieve:
    """The `retrieve` node of `quote`: question entries -> distinct chunks -> `evidence` at hop 1, and the
    matched questions of the kept chunks -> `question_hits` (the trace of why each chunk came back)."""

    def __init__(self, indexes: IndexProvider, embedder: Embedder) -> None:
        self.indexes = indexes
        self.embedder = embedder

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[QuoteContext]) -> dict:
        ctx = context_of(runtime.context, QuoteContext)
        index = self.indexes.open(ctx.index)
        questions = index.extra(QuestionsExtra)
        vector = self.embedder.embed([state["question"]])[0]
        matches, kept = search_distinct(questions, vector, ctx.top_k, ctx.over_retrieve)
        chunks = index.get([match.chunk_id for match in kept])
        kept_ids = {match.chunk_id for match in kept}
        hits = [hit for hit in question_hits(matches, HOP) if hit["chunk_id"] in kept_ids]
        evidence = [
            index.evidence(chunk, match.score, HOP) for chunk, match in zip(chunks, kept, strict=True)
        ]
        return {"evidence": evidence, "question_hits": hits}
