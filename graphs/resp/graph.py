"""ReSP (paper 001, "Retrieve, Summarize, Plan"): iterative retrieval whose passages are condensed into two
memory queues, the global evidence memory and the local pathway memory, which alone the reasoner judges
and plans from and the generator answers from.

START -> retrieve -> summarize -> judge
retrieve  top_k passages: for the question on round 1, then for the planned sub-question (hop = round)
summarize global evidence for the question -> global memory; from round 2, the sub-question's answer or
          "not answered" -> local memory (round 1's sub-question is the question itself: no local call)
judge -> generate   the reasoner says the memories suffice, or max_iterations rounds ran (no call then)
judge -> plan       otherwise
plan -> retrieve    a new sub-question (one already searched is asked again once, naming it)
plan -> generate    no usable sub-question, or a second repeat
generate -> END     the answer from the memories
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from graphs.resp.context import ReSPContext
from graphs.resp.state import ReSPOutput, ReSPState
from graphs.resp.steps import AnswerFromMemories, JudgeMemories, PlanNext, Summarize
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import QuestionInput, next_round


def current_query(state: ReSPState) -> str:
    """Round 1 searches for the question itself, later rounds for the sub-question the reasoner planned."""
    return state.get("sub_question") or state["question"]


def after_judge(state: ReSPState) -> Literal["generate", "plan"]:
    return "generate" if state.get("stop") else "plan"


def after_plan(state: ReSPState) -> Literal["generate", "retrieve"]:
    return "generate" if state.get("stop") else "retrieve"


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        ReSPState, context_schema=ReSPContext, input_schema=QuestionInput, output_schema=ReSPOutput
    )
    graph.add_node(
        "retrieve",
        Retrieve(services.indexes, query=current_query, hop=next_round, into="gathered", context=ReSPContext),
    )
    graph.add_node("summarize", Summarize(services.llm, services.nlp))
    graph.add_node("judge", JudgeMemories(services.llm))
    graph.add_node("plan", PlanNext(services.llm))
    graph.add_node("generate", AnswerFromMemories(services.llm))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "summarize")
    graph.add_edge("summarize", "judge")
    graph.add_conditional_edges("judge", after_judge, ["plan", "generate"])
    graph.add_conditional_edges("plan", after_plan, ["retrieve", "generate"])
    graph.add_edge("generate", END)
    return graph
