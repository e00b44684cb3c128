"""NaiveRAG: retrieve the top-k passages for the question, then answer from them.

START -> retrieve -> generate -> END
START -> extract_metadata -> retrieve   with context `metadata_filter` on: retrieval searches only the
                                        sources and dates the question names (Multi-Meta-RAG's filter)
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.naive.context import NaiveContext
from nodes.generate import Generate
from nodes.metadata import ExtractMetadata, filter_switch
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import MetadataFilterOutput, MetadataFilterState, QuestionInput


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        MetadataFilterState,
        context_schema=NaiveContext,
        input_schema=QuestionInput,
        output_schema=MetadataFilterOutput,
    )
    graph.add_node("extract_metadata", ExtractMetadata(services.llm, services.indexes))
    graph.add_node(
        "retrieve",
        Retrieve(services.indexes, where=lambda state: state.get("metadata_where"), context=NaiveContext),
    )
    graph.add_node("generate", Generate(services.llm))
    graph.add_conditional_edges(START, filter_switch(NaiveContext), ["extract_metadata", "retrieve"])
    graph.add_edge("extract_metadata", "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph
