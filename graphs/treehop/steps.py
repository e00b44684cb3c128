"""TreeHop's search (seed 004 §2.1): multi-hop retrieval in embedding space, branching as a tree, no LLM
between hops.

Hop 1 retrieves the K chunks nearest the question's embedding. Every kept (query, chunk) pair gives the next
hop a query embedding of its own (graphs.treehop.model), so the search branches. Two rules keep it from
growing as K^hops:

- redundancy pruning: a chunk already in the tree (kept at an earlier hop, or found by a better-scoring
  branch of the same hop) is neither kept again nor expanded;
- layer-wise top-K pruning: of a hop's new chunks, only the K that score highest against their parent
  query are kept and expanded. A true top-K: the public code's single argsort read as ranks keeps the
  wrong ones whenever the candidates do not arrive sorted.

All of a hop's branches search in one vector query through the shared index (`search_by_vectors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from langgraph.runtime import Runtime

from graphs.treehop.context import TreeHopContext
from graphs.treehop.model import ModelCard, TreeHopUpdate
from graphs.treehop.state import Branch, TreeHopState, TreeNode
from nodes.context import context_of
from nodes.generate import Generate
from nodes.llm import LLMGateway
from nodes.protocols import IndexProvider
from nodes.state import next_round
from stores.evidence import Evidence
from stores.index import Hit
from stores.protocols import Embedder

EXPANDED = "expanded"
LAST_HOP = "last_hop"
REDUNDANT = "redundant"
LAYER_TOP_K = "layer_top_k"

ModelProvider = Callable[[], TreeHopUpdate]
"""The trained update of the configured checkpoint, loaded once per process."""


def top_k_positions(scores: Sequence[float], k: int) -> list[int]:
    """Positions of the `k` highest scores, best first; ties keep the earlier position (a stable sort)."""
    return sorted(range(len(scores)), key=lambda position: -scores[position])[:k]


def prune_layer(
    candidates: Sequence[tuple[str, Hit]], seen: set[str], k: int, hop: int, last_hop: bool
) -> list[tuple[TreeNode, Hit]]:
    """One hop's candidates (parent node id, hit), each as a tree node whose status says what pruning did.

    Candidates are judged best score first, so when two branches find the same new chunk the better one
    keeps it and the other is redundant. Of the chunks left, the K best are kept ("expanded", or
    "last_hop" when no hop follows); the rest are cut by layer-wise top-K.
    """
    order = top_k_positions([hit.score for _, hit in candidates], len(candidates))
    claimed = set(seen)
    fresh: list[int] = []
    for position in order:
        chunk_id = candidates[position][1].chunk.id
        if chunk_id not in claimed:
            claimed.add(chunk_id)
            fresh.append(position)
    kept = {fresh[i] for i in top_k_positions([candidates[p][1].score for p in fresh], k)}
    rank_under_parent: dict[str, int] = {}
    nodes: list[tuple[TreeNode, Hit]] = []
    for position, (parent, hit) in enumerate(candidates):
        rank_under_parent[parent] = rank_under_parent.get(parent, 0) + 1
        if position in kept:
            status = LAST_HOP if last_hop else EXPANDED
        else:
            status = LAYER_TOP_K if position in fresh else REDUNDANT
        node = TreeNode(
            id=f"{parent}.{rank_under_parent[parent]}" if parent else str(rank_under_parent[parent]),
            parent=parent,
            hop=hop,
            chunk_id=hit.chunk.id,
            title=hit.chunk.title,
            score=round(hit.score, 6),
            status=status,
        )
        nodes.append((node, hit))
    return nodes


def next_queries(update: TreeHopUpdate, parents: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """The next hop's query embeddings, one per (parent query, kept chunk) row pair."""
    with torch.inference_mode():
        moved = update(torch.from_numpy(parents), torch.from_numpy(chunks))
    return moved.numpy()


class EmbedQuestion:
    """The root of the tree: the question's embedding, hop 1's only query."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, state: TreeHopState) -> dict:
        vector = self.embedder.embed([state["question"]])[0]
        return {"frontier": [Branch(node="", vector=vector.tolist())], "rounds": 0}


class Hop:
    """One hop of the tree search: every frontier query searches top-K in one vector query; pruning picks
    the kept chunks, which join `evidence` at this hop; each kept chunk's updated query joins the new
    frontier unless this was the last hop.

    `models` gives the trained update of the configured checkpoint; the `delta` ablation needs none.
    """

    def __init__(self, indexes: IndexProvider, embedder: Embedder, models: ModelProvider) -> None:
        self.indexes = indexes
        self.embedder = embedder
        self.models = models

    def update_rule(self, ctx: TreeHopContext) -> TreeHopUpdate:
        if ctx.update == "delta":
            return TreeHopUpdate(ModelCard("delta", self.embedder.name, self.embedder.dimension))
        return self.models()

    def __call__(self, state: TreeHopState, runtime: Runtime[TreeHopContext]) -> dict:
        ctx = context_of(runtime.context, TreeHopContext)
        if ctx.hops < 1 or ctx.top_k < 1:
            raise ValueError(
                f"treehop needs context hops >= 1 and top_k >= 1; got hops={ctx.hops}, top_k={ctx.top_k}"
            )
        hop = next_round(state)
        frontier = state["frontier"]
        queries = np.asarray([branch["vector"] for branch in frontier], dtype=np.float32)
        last_hop = hop >= ctx.hops
        # the chunks' embeddings only feed the next hop's queries: the last hop does without them (Chroma
        # takes about 1 ms to return those of 25 hits)
        index = self.indexes.open(ctx.index)
        hits = index.search_by_vectors(queries, ctx.top_k, with_vectors=not last_hop)
        candidates = [
            (branch["node"], hit) for branch, found in zip(frontier, hits, strict=True) for hit in found
        ]
        seen = {item["id"] for item in state.get("evidence", [])}
        nodes = prune_layer(candidates, seen, ctx.top_k, hop, last_hop)
        kept = [(node, hit) for node, hit in nodes if node["status"] in (EXPANDED, LAST_HOP)]
        update: dict[str, Any] = {
            "tree": [node for node, _ in nodes],
            "evidence": [index.evidence(hit.chunk, hit.score, hop) for _, hit in kept],
            "rounds": hop,
            "stats": {"retrieval_rounds": float(hop)},
            "frontier": [],
        }
        expanding = [(node, hit) for node, hit in kept if node["status"] == EXPANDED]
        if expanding:
            parent_vector = {branch["node"]: branch["vector"] for branch in frontier}
            parents = np.asarray([parent_vector[node["parent"]] for node, _ in expanding], dtype=np.float32)
            chunks = np.stack([hit.vector for _, hit in expanding]).astype(np.float32)
            moved = next_queries(self.update_rule(ctx), parents, chunks)
            update["frontier"] = [
                Branch(node=node["id"], vector=row.tolist())
                for (node, _), row in zip(expanding, moved, strict=True)
            ]
        return update


def answer_passages(evidence: Sequence[Evidence], k: int, order: str) -> list[Evidence]:
    """The kept chunks the answer reads: by hop then score, or by score alone, the first `k`."""
    if order == "score":
        ranked = sorted(evidence, key=lambda item: -item["score"])
    else:
        ranked = sorted(evidence, key=lambda item: (item["hop"], -item["score"]))
    return ranked[:k]


class GenerateFromTree:
    """The shared reader over the tree's kept chunks, ordered and cut as the context says (`gathered`)."""

    def __init__(self, llm: LLMGateway) -> None:
        self.read = Generate(llm, passages="gathered")

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[TreeHopContext]) -> dict:
        ctx = context_of(runtime.context, TreeHopContext)
        gathered = answer_passages(state.get("evidence", []), ctx.answer_k, ctx.answer_order)
        return {"gathered": gathered, **self.read({**state, "gathered": gathered}, runtime)}
