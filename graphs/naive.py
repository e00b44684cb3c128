"""NaiveRAG: retrieve the top-k passages for the question, then answer from them.

START -> retrieve -> generate -> END
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from nodes.context import RetrievalContext
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import AnswerOutput, QAState, QuestionInput


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        QAState, context_schema=RetrievalContext, input_schema=QuestionInput, output_schema=AnswerOutput
    )
    graph.add_node("retrieve", Retrieve(services.indexes))
    graph.add_node("generate", Generate(services.llm))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph
