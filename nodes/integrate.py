"""Integrate sub-question results into the final answer (ChainRAG §3.4; NaiveRAG w/ QD, its baseline, too).

answers (AnsInt): the original question from the sub-questions and their answers only.
contexts (CxtInt): every gathered passage, deduplicated, reranked against the original question and cut
to the word limit, answered like NaiveRAG.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from langgraph.runtime import Runtime

from nodes.context import IntegrationMode, context_of
from nodes.generate import answered, final_answer
from nodes.llm import LLMGateway
from nodes.protocols import Reranker
from nodes.state import SubQuestionsState
from prompts import answer, integrate
from stores.evidence import Evidence, passage_text


def word_count(evidence: Sequence[Evidence]) -> int:
    """Words of the passages' text: what the word limits of ChainRAG and its baseline count."""
    return sum(len(item["text"].split()) for item in evidence)


def rerank(
    reranker: Reranker,
    question: str,
    evidence: Sequence[Evidence],
    vectors: np.ndarray | None = None,
) -> list[Evidence]:
    """The evidence in the reranker's order for `question`, best first; of equal scores (rank fusion
    ties) the later-gathered comes first, the order every measured run used. `vectors`, the evidence's
    stored embeddings row for row, spare an embedding reranker from embedding the passages again."""
    scores = reranker.score(question, [passage_text(item) for item in evidence], vectors)
    order = sorted(range(len(evidence)), key=lambda i: (scores[i], i), reverse=True)
    return [evidence[i] for i in order]


def rerank_within(
    reranker: Reranker, question: str, evidence: list[Evidence], word_limit: int
) -> list[Evidence]:
    """CxtInt's reading: the reranked evidence, cut where the next item would pass the word limit."""
    kept: list[Evidence] = []
    for item in rerank(reranker, question, evidence):
        if kept and word_count([*kept, item]) > word_limit:
            break
        kept.append(item)
    return kept


class IntegrationParameters(Protocol):
    """What integration reads of a run's context (ChainRAG's and NaiveRAG w/ QD's)."""

    integration: IntegrationMode
    word_limit: int
    max_answer_tokens: int
    unanswerable: bool
    refusal_check: bool


class Integrate:
    """AnsInt or CxtInt. An AnsInt answer that refuses (its sub-questions went unanswered) is not final
    while there is evidence: the question is answered from the contexts instead, as CxtInt reads them.
    Where refusals are kept on purpose (`unanswerable`) it is final, unless `refusal_check` is on: then
    the contexts are read and a refusal there is checked fact by fact (nodes.generate.checked_refusal).

    `context` is the method's context schema, whose defaults apply when a run passes no context.
    Reads `question`, `solved` (AnsInt) and `evidence` (CxtInt, and AnsInt's fallback); writes `answer`,
    `answer_outcome`, `read` (CxtInt), `usage`, `fallbacks`.
    """

    def __init__(
        self,
        llm: LLMGateway,
        reranker: Reranker,
        context: type[IntegrationParameters],
    ) -> None:
        self.llm = llm
        self.reranker = reranker
        self.context = context

    def __call__(self, state: SubQuestionsState, runtime: Runtime[IntegrationParameters]) -> dict:
        ctx = context_of(runtime.context, self.context)
        question, usage, fallbacks = state["question"], [], []
        if ctx.integration == "answers":
            steps = [
                (sub["question"], sub["answer"] if sub["answered"] else None)
                for sub in state.get("solved", [])
            ]
            asked = integrate.messages(question, steps)
            reply = self.llm.complete(
                "generator", asked, max_tokens=ctx.max_answer_tokens, guard=integrate.GUARD
            )
            text = answer.clean(reply.text)
            if answer.is_refusal(text) and ctx.unanswerable and not ctx.refusal_check:
                return {"answer": text, "answer_outcome": "unanswerable", "usage": [reply.usage]}
            if not answer.is_refusal(text):
                return answered(self.llm, question, asked, reply, text)
            usage.append(reply.usage)
            fallbacks.append("integrate: the sub-answers gave no answer; answered from the contexts")
        passages = rerank_within(self.reranker, question, state.get("evidence", []), ctx.word_limit)
        update = final_answer(
            self.llm,
            question,
            answer.messages(question, passages, unanswerable=ctx.unanswerable),
            max_tokens=ctx.max_answer_tokens,
            guard=answer.GUARD,
            has_evidence=bool(passages),
            unanswerable=ctx.unanswerable,
            check_refusal=ctx.refusal_check,
        )
        return {
            **update,
            "usage": usage + update["usage"],
            "fallbacks": fallbacks + update.get("fallbacks", []),
        }
