"""QuOTE (question-oriented text embeddings; the baseline of paper 002): retrieve chunks through the
hypothetical questions written for them at index time, then answer with the shared reader.

START -> retrieve -> generate -> END

Needs the index's `questions` extra (`hopgraph index PATH --name NAME --method quote`).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.quote.context import QuoteContext
from graphs.quote.steps import QuoteRetrieve
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.state import QuestionHitsOutput, QuestionHitsState, QuestionInput


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        QuestionHitsState,
        context_schema=QuoteContext,
        input_schema=QuestionInput,
        output_schema=QuestionHitsOutput,
    )
    graph.add_node("retrieve", QuoteRetrieve(services.indexes, services.embedder))
    graph.add_node("generate", Generate(services.llm))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph
