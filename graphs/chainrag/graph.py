"""ChainRAG (paper 000): progressive sentence-graph retrieval with sub-question rewriting.

START -> decompose -> prepare -> seed -> expand -> judge -> answer_sub -> integrate -> END
seed      -> answer_sub      when the graph is ablated (chunks are the whole context)
expand    -> answer_sub      at the word limit or when nothing new is reachable, else -> judge
judge     -> answer_sub      when the evidence suffices, else -> expand (the next order of neighbours)
answer_sub -> prepare        while sub-questions remain, else -> integrate
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.state import ChainRAGState
from graphs.chainrag.steps import ExpandSentences, JudgeGathered, PrepareSubQuestion, SeedSentences
from nodes.integrate import Integrate
from nodes.judge import STOP_SUFFICIENT
from nodes.protocols import GraphServices
from nodes.state import AnswerOutput, QuestionInput
from nodes.subanswer import AnswerSubQuestion, DecomposeInTurn, after_sub_answer


def after_seed(state: ChainRAGState) -> Literal["answer_sub", "expand"]:
    return "answer_sub" if state.get("stop") else "expand"


def after_expand(state: ChainRAGState) -> Literal["answer_sub", "judge"]:
    return "answer_sub" if state.get("stop") else "judge"


def after_judge(state: ChainRAGState) -> Literal["answer_sub", "expand"]:
    return "answer_sub" if state.get("stop") == STOP_SUFFICIENT else "expand"


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        ChainRAGState,
        context_schema=ChainRAGContext,
        input_schema=QuestionInput,
        output_schema=AnswerOutput,
    )
    graph.add_node("decompose", DecomposeInTurn(services.llm))
    graph.add_node("prepare", PrepareSubQuestion(services.llm))
    graph.add_node("seed", SeedSentences(services.indexes, services.reranker))
    graph.add_node("expand", ExpandSentences(services.indexes, services.embedder))
    graph.add_node("judge", JudgeGathered(services.llm))
    graph.add_node("answer_sub", AnswerSubQuestion(services.llm))
    graph.add_node("integrate", Integrate(services.llm, services.reranker, ChainRAGContext))
    graph.add_edge(START, "decompose")
    graph.add_edge("decompose", "prepare")
    graph.add_edge("prepare", "seed")
    graph.add_conditional_edges("seed", after_seed, ["expand", "answer_sub"])
    graph.add_conditional_edges("expand", after_expand, ["judge", "answer_sub"])
    graph.add_conditional_edges("judge", after_judge, ["expand", "answer_sub"])
    graph.add_conditional_edges("answer_sub", after_sub_answer, ["prepare", "integrate"])
    graph.add_edge("integrate", END)
    return graph
