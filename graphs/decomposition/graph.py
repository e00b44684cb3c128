"""Query decomposition (seed 004 §2.4): split the question into N sub-queries, retrieve the top-K passages
for each in parallel, answer from all of them together.

START -> decompose -> retrieve (one Send branch per sub-question, in parallel) -> aggregate -> generate -> END

- decompose: the shared decomposer, asked for exactly N sub-questions by default (context `count`,
  `max_sub_questions`; every malformed reply has a recorded outcome, see nodes.decompose).
- retrieve: branch i searches with sub-question i (dense by default, as the seed retrieves) and records
  its hits at hop i. Branches only retrieve, so LangGraph runs them at the same time in its thread pool
  (one opened index serves them all).
- aggregate: the branches' hits are one list by then, merged by the state's reducer: each passage once,
  at the smallest hop that found it, ordered by hop and within a hop by rank, whichever branch finished
  first; the node records how many distinct passages it holds (`stats.passages`).
- generate: the shared reader, over the aggregate in that order (sub-question 1's passages first).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from graphs.decomposition.context import QueryDecompositionContext
from graphs.decomposition.state import BranchedSubQuestionsState, SubQuestionBranch
from nodes.decompose import Decompose
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve, count_passages
from nodes.state import AnswerOutput, QuestionInput


def fan_out(state: BranchedSubQuestionsState) -> list[Send]:
    """One retrieval branch per sub-question, at its 1-based position (the hop its hits record)."""
    return [
        Send("retrieve", SubQuestionBranch(sub_question=sub, position=position))
        for position, sub in enumerate(state["sub_questions"], start=1)
    ]


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        BranchedSubQuestionsState,
        context_schema=QueryDecompositionContext,
        input_schema=QuestionInput,
        output_schema=AnswerOutput,
    )
    graph.add_node("decompose", Decompose(services.llm, QueryDecompositionContext))
    graph.add_node(
        "retrieve",
        Retrieve(services.indexes, query="sub_question", hop="position", context=QueryDecompositionContext),
    )
    graph.add_node("aggregate", count_passages)
    graph.add_node("generate", Generate(services.llm))
    graph.add_edge(START, "decompose")
    graph.add_conditional_edges("decompose", fan_out, ["retrieve"])
    graph.add_edge("retrieve", "aggregate")
    graph.add_edge("aggregate", "generate")
    graph.add_edge("generate", END)
    return graph
