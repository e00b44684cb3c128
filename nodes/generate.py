"""Generate: answer the question from the gathered evidence."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.llm import LLMGateway
from nodes.state import QAState
from prompts import answer


def first_line(text: str) -> str:
    """Small models often run on after the answer; the answer is the first non-empty line."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


class Generate:
    """The reader: one LLM call over all evidence, role "generator"."""

    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: QAState, runtime: Runtime[RetrievalContext]) -> dict:
        reply = self.llm.complete(
            "generator",
            answer.messages(state["question"], state.get("evidence", [])),
            max_tokens=context_of(runtime.context, RetrievalContext).max_answer_tokens,
        )
        return {"answer": first_line(reply.text), "usage": [reply.usage]}
