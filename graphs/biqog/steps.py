"""BiQOG's retrieval: walk the bipartite question-chunk graph from the questions nearest to the query.

The query is embedded and the `seeds` stored questions nearest to it are the first hop's questions. Each
hop collects the chunks adjacent to its questions that no earlier hop collected, reranks them against the
query with the shared reranker, keeps `width`, and moves to the questions adjacent to the kept chunks (those
not visited yet). After the last hop every chunk collected is scored once more, all together, against the
query (the paper's final rerank) and the top k, each at the hop that collected it, are the evidence the
shared reader answers from, read best first (`ranked`: the state's `evidence` keeps hop order). A hop's
scores cannot stand in for that final rerank: the offline hybrid reranker fuses ranks within the chunks
it is given, so each hop's best chunk scores alike whatever its relevance, and a top k taken from hop
scores alternates hops by rank (issue 39).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from graphs.biqog.context import BiqogContext
from graphs.biqog.state import TraversalHop
from nodes.context import context_of
from nodes.protocols import IndexProvider, Reranker
from nodes.state import question_hits
from stores.chunking import Chunk
from stores.evidence import passage_text
from stores.protocols import Embedder
from stores.question_graph import QuestionGraph, QuestionGraphExtra
from stores.questions import entry_id

SEED_HOP = 1


@dataclass
class Traversal:
    """What a walk found: every chunk collected with its hop's rerank score and its hop, the path it took,
    and every collected chunk's score in the final rerank."""

    scores: dict[str, float] = field(default_factory=dict)
    hops: dict[str, int] = field(default_factory=dict)
    path: list[TraversalHop] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)

    def best(self, k: int) -> list[str]:
        """The `k` collected chunks with the highest final-rerank scores, best first (ties in the order
        they were collected)."""
        return sorted(self.final, key=lambda chunk_id: self.final[chunk_id], reverse=True)[:k]


def traverse(
    graph: QuestionGraph,
    seeds: Sequence[str],
    score: Callable[[list[str]], list[float]],
    hops: int,
    width: int,
) -> Traversal:
    """Walk `hops` hops from the question ids `seeds`, then rerank all it collected together;
    `score(chunk_ids)` gives the reranker's scores of those chunks, judged among themselves."""
    walk = Traversal()
    questions = list(seeds)
    visited = set(questions)
    for hop in range(1, hops + 1):
        collected = [chunk_id for chunk_id in graph.chunks_of(questions) if chunk_id not in walk.scores]
        scored = dict(zip(collected, score(collected), strict=True))
        ranked = sorted(collected, key=lambda chunk_id: scored[chunk_id], reverse=True)
        kept = ranked[:width]
        walk.scores.update(scored)
        walk.hops.update((chunk_id, hop) for chunk_id in collected)
        walk.path.append(
            TraversalHop(
                hop=hop,
                questions=[graph.question(q) for q in questions],
                chunks=ranked,
                scores=[scored[chunk_id] for chunk_id in ranked],
                kept=kept,
            )
        )
        questions = [question for question in graph.questions_of(kept) if question not in visited]
        visited.update(questions)
        if not questions:
            break
    collected = list(walk.scores)
    walk.final = dict(zip(collected, score(collected), strict=True))
    return walk


class BiqogRetrieve:
    """The `retrieve` node of `biqog`: seed questions -> graph walk -> the top-k chunks as `evidence` (and,
    best first, as `ranked`), the seeds as `question_hits` and the path as `traversal`."""

    def __init__(self, indexes: IndexProvider, embedder: Embedder, reranker: Reranker) -> None:
        self.indexes = indexes
        self.embedder = embedder
        self.reranker = reranker

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[BiqogContext]) -> dict:
        ctx = context_of(runtime.context, BiqogContext)
        index = self.indexes.open(ctx.index)
        graph = index.extra(QuestionGraphExtra)
        query = state["question"]
        seeds = graph.questions.nearest_questions(self.embedder.embed([query])[0], ctx.seeds)
        chunks: dict[str, Chunk] = {}

        def score(chunk_ids: list[str]) -> list[float]:
            """The reranker's scores of `chunk_ids` among themselves (each chunk fetched once, kept for
            reading)."""
            if not chunk_ids:
                return []
            missing = [chunk_id for chunk_id in chunk_ids if chunk_id not in chunks]
            if missing:
                chunks.update((chunk.id, chunk) for chunk in index.get(missing))
            return self.reranker.score(
                query, [passage_text(index.evidence(chunks[i], 0.0, 0)) for i in chunk_ids]
            )

        walk = traverse(
            graph, [entry_id(seed.chunk_id, seed.number) for seed in seeds], score, ctx.hops, ctx.width
        )
        hits = question_hits(seeds, SEED_HOP)
        evidence = [
            index.evidence(chunks[chunk_id], walk.final[chunk_id], walk.hops[chunk_id])
            for chunk_id in walk.best(ctx.top_k)
        ]
        return {"evidence": evidence, "ranked": evidence, "question_hits": hits, "traversal": walk.path}
