"""BiQOG (bipartite question-oriented graph, seed 002): retrieve by walking a graph of the hypothetical
questions written for each chunk at index time, linked to every chunk the LLM judged to answer them, then
answer with the shared reader, over the final rerank's top k, best first.

START -> retrieve -> generate -> END

Needs the index's `question_graph` extra, which is built on its `questions` extra
(`hopgraph index PATH --name NAME --method biqog` builds both).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.biqog.context import BiqogContext
from graphs.biqog.state import BiqogOutput, BiqogState
from graphs.biqog.steps import BiqogRetrieve
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.state import QuestionInput


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        BiqogState, context_schema=BiqogContext, input_schema=QuestionInput, output_schema=BiqogOutput
    )
    graph.add_node("retrieve", BiqogRetrieve(services.indexes, services.embedder, services.reranker))
    graph.add_node("generate", Generate(services.llm, passages="ranked"))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph
