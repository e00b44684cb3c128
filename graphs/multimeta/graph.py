"""Multi-Meta-RAG (seed 004 §2.2): filter the search by the sources and dates the question names, rerank.

START -> extract_metadata -> retrieve -> rerank -> generate -> END
START -> retrieve               with context `metadata_filter` off (an ablation: reranked unfiltered search)

- extract_metadata: a few-shot LLM call reads {sources, from, to} from the question, the index's sources
  listed in its prompt; checked against the index (unknown sources dropped, dates parsed); the
  deterministic source-name matcher stands in when the reply is unusable. An index without metadata gives
  no filter, and the method is NaiveRAG with a reranker.
- retrieve: the shared retrieval node, K = `candidates` (20) by dense search through the filter's Chroma
  `where`; what the filter leaves is all there is, an empty result recorded in `fallbacks` (with `refill`,
  fewer than K' = `answer_k` are topped up from the unfiltered search, as hopgraph did before).
- rerank: the configured reranker orders the candidates; the top `top_k` (10) are the run's evidence,
  which retrieval metrics score, and the top K' (6) what the answer reads.
- generate: the shared reader over those K' passages.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.multimeta.context import MultiMetaContext
from graphs.multimeta.state import MultiMetaState
from graphs.multimeta.steps import RerankCandidates
from nodes.generate import Generate
from nodes.metadata import ExtractMetadata, filter_switch
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import MetadataFilterOutput, QuestionInput


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        MultiMetaState,
        context_schema=MultiMetaContext,
        input_schema=QuestionInput,
        output_schema=MetadataFilterOutput,
    )
    graph.add_node("extract_metadata", ExtractMetadata(services.llm, services.indexes, MultiMetaContext))
    graph.add_node(
        "retrieve",
        Retrieve(
            services.indexes,
            where=lambda state: state.get("metadata_where"),
            into="gathered",
            context=MultiMetaContext,
            depth="candidates",
            filled_below="refill_below",
        ),
    )
    graph.add_node("rerank", RerankCandidates(services.reranker, services.indexes))
    graph.add_node("generate", Generate(services.llm, passages="gathered"))
    graph.add_conditional_edges(START, filter_switch(MultiMetaContext), ["extract_metadata", "retrieve"])
    graph.add_edge("extract_metadata", "retrieve")
    graph.add_edge("retrieve", "rerank")
    graph.add_edge("rerank", "generate")
    graph.add_edge("generate", END)
    return graph
