"""Integrate sub-question results into the final answer (ChainRAG §3.4).

answers (AnsInt): the original question from the sub-questions and their answers only.
contexts (CxtInt): every gathered passage, deduplicated, reranked against the original question and cut
to the word limit, answered like NaiveRAG.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import ChainRAGContext, context_of
from nodes.generate import first_line
from nodes.llm import LLMGateway
from nodes.protocols import Reranker
from nodes.sentence_retrieval import word_count
from nodes.state import Evidence, SubQuestionState
from prompts import answer, integrate


def rerank_within(
    reranker: Reranker, question: str, evidence: list[Evidence], word_limit: int
) -> list[Evidence]:
    scores = reranker.score(question, [item["text"] for item in evidence])
    ranked = [
        item for _, _, item in sorted(zip(scores, range(len(evidence)), evidence, strict=True), reverse=True)
    ]
    kept: list[Evidence] = []
    for item in ranked:
        if kept and word_count([*kept, item]) > word_limit:
            break
        kept.append(item)
    return kept


class Integrate:
    def __init__(self, llm: LLMGateway, reranker: Reranker) -> None:
        self.llm = llm
        self.reranker = reranker

    def __call__(self, state: SubQuestionState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        if ctx.integration == "answers":
            steps = [(sub["question"], sub["answer"]) for sub in state.get("solved", [])]
            messages = integrate.messages(state["question"], steps)
        else:
            passages = rerank_within(
                self.reranker, state["question"], state.get("evidence", []), ctx.word_limit
            )
            messages = answer.messages(state["question"], passages)
        reply = self.llm.complete("generator", messages, max_tokens=ctx.max_answer_tokens)
        return {"answer": first_line(reply.text), "usage": [reply.usage]}
