"""Iter-RetGen (Shao et al. 2023; the baseline of ChainRAG's and ReSP's tables): T iterations of retrieval
and generation, each retrieval searching with the question and the previous iteration's chain of thought.

START -> retrieve -> generate
generate -> retrieve   iterations remain (T, context `iterations`) and the next query differs from this one
generate -> END        the T-th iteration, or a chain that repeats the previous query: the answer

- retrieve: the shared retrieval node, top-k for the question (iteration 1), then for the question joined
  with the previous chain of thought, dense by default; the hits are this iteration's passages
  (`gathered`), at hop = iteration.
- generate: a chain of thought over this iteration's passages alone (the shared chain-of-thought reader,
  IR-CoT's prompt and worked examples); the passages join `evidence` (each at the first iteration that
  found it) and the chain joins `generations`. In the last iteration the direct reader answers from its
  passages, and the T-th writes no chain (`reader = "direct"`, the default); with `reader = "cot"` the
  last chain's answer ("So the answer is: ...", cut to its span; the direct reader's when it gives none)
  is the answer, as the original reads it.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from graphs.iter_retgen.context import IterRetGenContext
from graphs.iter_retgen.state import IterRetGenOutput, IterRetGenState
from graphs.iter_retgen.steps import GenerateIteration, iteration_query
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import QuestionInput, next_round


def after_generate(state: IterRetGenState) -> Literal["__end__", "retrieve"]:
    return END if state["stop"] else "retrieve"


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        IterRetGenState,
        context_schema=IterRetGenContext,
        input_schema=QuestionInput,
        output_schema=IterRetGenOutput,
    )
    graph.add_node(
        "retrieve",
        Retrieve(
            services.indexes,
            query=iteration_query,
            hop=next_round,
            into="gathered",
            context=IterRetGenContext,
        ),
    )
    graph.add_node("generate", GenerateIteration(services.llm, services.nlp))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_conditional_edges("generate", after_generate, ["retrieve", END])
    return graph
