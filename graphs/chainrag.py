"""ChainRAG (paper 000): progressive sentence-graph retrieval with sub-question rewriting.

START -> decompose -> prepare -> seed -> expand -> judge -> answer_sub -> integrate -> END
seed      -> answer_sub      when the graph is ablated (chunks are the whole context)
expand    -> answer_sub      at the word limit or when nothing new is reachable, else -> judge
judge     -> answer_sub      when the evidence suffices, else -> expand (the next order of neighbours)
answer_sub -> prepare        while sub-questions remain, else -> integrate
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from nodes.context import ChainRAGContext
from nodes.integrate import Integrate
from nodes.judge import JudgeSufficiency
from nodes.protocols import GraphServices
from nodes.rewrite import PrepareSubQuestion
from nodes.sentence_retrieval import STOP_SUFFICIENT, ExpandSentences, SeedSentences
from nodes.state import AnswerOutput, ChainRAGState, QuestionInput
from nodes.subanswer import AnswerSubQuestion, DecomposeInTurn


def after_seed(state: ChainRAGState) -> str:
    return "answer_sub" if state.get("stop") else "expand"


def after_expand(state: ChainRAGState) -> str:
    return "answer_sub" if state.get("stop") else "judge"


def after_judge(state: ChainRAGState) -> str:
    return "answer_sub" if state.get("stop") == STOP_SUFFICIENT else "expand"


def after_answer(state: ChainRAGState) -> str:
    return "prepare" if state["step"] < len(state["sub_questions"]) else "integrate"


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
    graph.add_node("judge", JudgeSufficiency(services.llm))
    graph.add_node("answer_sub", AnswerSubQuestion(services.llm))
    graph.add_node("integrate", Integrate(services.llm, services.reranker))
    graph.add_edge(START, "decompose")
    graph.add_edge("decompose", "prepare")
    graph.add_edge("prepare", "seed")
    graph.add_conditional_edges("seed", after_seed, ["expand", "answer_sub"])
    graph.add_conditional_edges("expand", after_expand, ["judge", "answer_sub"])
    graph.add_conditional_edges("judge", after_judge, ["expand", "answer_sub"])
    graph.add_conditional_edges("answer_sub", after_answer, ["prepare", "integrate"])
    graph.add_edge("integrate", END)
    return graph
