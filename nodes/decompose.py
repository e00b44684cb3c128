"""Decompose: split the question into sub-questions (JSON array) and start at the first one."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import DecompositionContext, context_of
from nodes.llm import LLMGateway
from nodes.state import SubQuestionsState
from prompts import decompose


class Decompose:
    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: SubQuestionsState, runtime: Runtime[DecompositionContext]) -> dict:
        ctx = context_of(runtime.context, DecompositionContext)
        reply = self.llm.complete(
            "decomposer", decompose.messages(state["question"]), max_tokens=160, guard=decompose.GUARD
        )
        subs, fallback = decompose.parse(reply.text, state["question"], ctx.max_sub_questions)
        update = {"sub_questions": subs, "step": 0, "usage": [reply.usage]}
        return {**update, "fallbacks": [f"decompose: {fallback}"]} if fallback else update
