"""Generate: answer the question from the gathered evidence, never with a refusal when there is evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.llm import LLMGateway
from prompts import answer
from prompts.echo import EchoGuard

# answered: the reply answered; unanswerable: a refusal kept on purpose (context `unanswerable`);
# best_span: a refusal replaced by the reply to one nudge for the best answer from the evidence;
# refused: a refusal with no evidence to answer from, or a second refusal (the answer is then empty).
AnswerOutcome = Literal["answered", "unanswerable", "best_span", "refused"]


def final_answer(
    llm: LLMGateway,
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    guard: EchoGuard,
    has_evidence: bool,
    unanswerable: bool,
) -> dict:
    """Ask the generator for the final answer; a partial state update with the answer and its outcome.

    A refusal ("Insufficient information.") scores as a miss even when the evidence holds the answer, so
    unless the method keeps refusals on purpose it is asked once more, reply and nudge appended (the KV
    prefix is reused), for its best answer; a second refusal leaves the answer empty and says so.
    """
    reply = llm.complete("generator", messages, max_tokens=max_tokens, guard=guard)
    text, usage = answer.clean(reply.text), [reply.usage]
    outcome: AnswerOutcome = "answered"
    if answer.is_refusal(text):
        outcome = "unanswerable" if unanswerable else "refused"
        if not unanswerable and has_evidence:
            nudged = [*messages, AIMessage(reply.text), HumanMessage(answer.REFUSAL_NUDGE)]
            retry = llm.complete("generator", nudged, max_tokens=max_tokens, guard=guard)
            usage.append(retry.usage)
            text = answer.clean(retry.text)
            outcome = "refused" if answer.is_refusal(text) else "best_span"
        if outcome == "refused":
            text = ""
    return {"answer": text, "answer_outcome": outcome, "usage": usage}


class Generate:
    """The reader: one LLM call over the passages in `passages` (all evidence by default; Multi-Meta-RAG
    reads the best few of its reranked evidence, kept in `gathered`, BiQOG its final rerank, kept in
    `ranked`), role "generator"; it records the ids it read, in order, as `read`. Reads `question` and
    the passages' key; writes `answer`, `answer_outcome`, `read`, `usage`, `fallbacks`.

    The state is annotated as a plain Mapping, as in `nodes.retrieve.Retrieve`: LangGraph hands a node
    annotated with a TypedDict only that TypedDict's keys, and the key it reads is the graph's choice."""

    def __init__(self, llm: LLMGateway, passages: str = "evidence") -> None:
        self.llm = llm
        self.passages = passages

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, RetrievalContext)
        evidence = state.get(self.passages, [])
        answered = final_answer(
            self.llm,
            answer.messages(state["question"], evidence, unanswerable=ctx.unanswerable),
            max_tokens=ctx.max_answer_tokens,
            guard=answer.GUARD,
            has_evidence=bool(evidence),
            unanswerable=ctx.unanswerable,
        )
        return {**answered, "read": [item["id"] for item in evidence]}
