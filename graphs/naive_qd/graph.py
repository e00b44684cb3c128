"""NaiveRAG with question decomposition, ChainRAG's baseline (paper 000, Table 1 "NaiveRAG w/ QD").

START -> decompose -> prepare -> retrieve -> answer_sub -> integrate -> END
answer_sub -> prepare      while sub-questions remain, else -> integrate

- decompose: the shared decomposer, by default with ChainRAG's own prompt (context `count`), cut at N.
- prepare: the next sub-question exactly as decomposed (never rewritten, unlike ChainRAG's `prepare`),
  with the earlier answers as notes only when `earlier_answers` is on (off, as the paper runs it).
- retrieve: that sub-question's own top-k chunks (dense by default, as the paper's baselines retrieve),
  recorded at hop = its 1-based position.
- answer_sub: the sub-question answered from its own chunks (ChainRAG's sub-question reader).
- integrate: the final answer from the sub-questions and their answers (AnsInt; a refusal falls back to
  the gathered chunks reranked against the question), or from those chunks (`integration` = contexts).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.naive_qd.context import NaiveQDContext
from nodes.integrate import Integrate
from nodes.protocols import GraphServices
from nodes.retrieve import Retrieve
from nodes.state import AnswerOutput, QuestionInput, SubQuestionCursorState
from nodes.subanswer import (
    AnswerSubQuestion,
    DecomposeInTurn,
    NextSubQuestion,
    after_sub_answer,
    current_position,
)


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        SubQuestionCursorState,
        context_schema=NaiveQDContext,
        input_schema=QuestionInput,
        output_schema=AnswerOutput,
    )
    graph.add_node("decompose", DecomposeInTurn(services.llm, NaiveQDContext))
    graph.add_node("prepare", NextSubQuestion(NaiveQDContext))
    graph.add_node(
        "retrieve",
        Retrieve(
            services.indexes, query="query", hop=current_position, into="gathered", context=NaiveQDContext
        ),
    )
    graph.add_node("answer_sub", AnswerSubQuestion(services.llm))
    graph.add_node("integrate", Integrate(services.llm, services.reranker, NaiveQDContext))
    graph.add_edge(START, "decompose")
    graph.add_edge("decompose", "prepare")
    graph.add_edge("prepare", "retrieve")
    graph.add_edge("retrieve", "answer_sub")
    graph.add_conditional_edges("answer_sub", after_sub_answer, ["prepare", "integrate"])
    graph.add_edge("integrate", END)
    return graph
