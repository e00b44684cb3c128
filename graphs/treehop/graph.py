"""TreeHop (seed 004 §2.1; Li et al. 2025): multi-hop retrieval in embedding space, no LLM between hops.

START -> embed -> hop
hop -> hop        hops remain (context `hops`) and a branch survived pruning
hop -> generate   the last hop, or every branch pruned: the shared reader answers from the kept chunks

- embed: the question's embedding, the tree's root.
- hop: all frontier queries search top-K at once (shared retrieval, by vector); redundancy and layer-wise
  top-K pruning; kept chunks join `evidence` at this hop; each kept chunk's updated query (the trained
  checkpoint's, or `update` = delta) joins the frontier. Every node, kept or pruned, joins `tree`.
- generate: the kept chunks, ordered and cut by `answer_order` / `answer_k`, read by the shared generator.
"""

from __future__ import annotations

from typing import Literal, Protocol

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.treehop.context import TreeHopContext
from graphs.treehop.model import TreeHopUpdate
from graphs.treehop.state import TreeHopOutput, TreeHopState
from graphs.treehop.steps import EmbedQuestion, GenerateFromTree, Hop
from nodes.context import context_of
from nodes.protocols import GraphServices
from nodes.state import QuestionInput


def after_hop(state: TreeHopState, runtime: Runtime[TreeHopContext]) -> Literal["hop", "generate"]:
    """Search again while hops remain and some branch survived pruning; then answer."""
    ctx = context_of(runtime.context, TreeHopContext)
    return "hop" if state.get("frontier") and state.get("rounds", 0) < ctx.hops else "generate"


class TreeHopServices(GraphServices, Protocol):
    """The shared services and TreeHop's trained query update, which the front door loads."""

    def treehop_model(self) -> TreeHopUpdate:
        """TreeHop's trained query update from the configured checkpoint (a setting, never a run's
        parameter: a run's caller, such as a Studio page, chooses no file to load), loaded once and checked
        against the embedder."""
        ...


def build(services: TreeHopServices) -> StateGraph:
    graph = StateGraph(
        TreeHopState,
        context_schema=TreeHopContext,
        input_schema=QuestionInput,
        output_schema=TreeHopOutput,
    )
    graph.add_node("embed", EmbedQuestion(services.embedder))
    graph.add_node("hop", Hop(services.indexes, services.embedder, services.treehop_model))
    graph.add_node("generate", GenerateFromTree(services.llm))
    graph.add_edge(START, "embed")
    graph.add_edge("embed", "hop")
    graph.add_conditional_edges("hop", after_hop, ["hop", "generate"])
    graph.add_edge("generate", END)
    return graph
