"""QuOTE (question-oriented text embeddings; the baseline of paper 002): retrieve chunks through the
hypothetical questions written for them at index time, then answer with the shared reader.

START -> retrieve -> generate -> END

Needs the index's `questions` extra (`hopgraph index PATH --name NAME --method quote`).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from nodes.context import QuoteContext
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.quote import QuoteRetrieve
from nodes.state import QuestionInput, QuoteOutput, QuoteState


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        QuoteState, context_schema=QuoteContext, input_schema=QuestionInput, output_schema=QuoteOutput
    )
    graph.add_node("retrieve", QuoteRetrieve(services.indexes, services.embedder))
    graph.add_node("generate", Generate(services.llm))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph
