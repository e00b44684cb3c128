"""Answer the current sub-question from its gathered evidence, file it, and move to the next one."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.llm import LLMGateway
from nodes.state import ChainRAGState, SubAnswer
from prompts import answer, reader


class AnswerSubQuestion:
    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: ChainRAGState, runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, RetrievalContext)
        step, gathered = state.get("step", 0), state.get("gathered", [])
        reply = self.llm.complete(
            "generator",
            reader.answer_messages(gathered, state["query"], state.get("notes", "")),
            max_tokens=ctx.max_answer_tokens,
            guard=reader.ANSWER_GUARD,
        )
        text = answer.clean(reply.text)
        solved = SubAnswer(
            asked=state["sub_questions"][step],
            question=state["query"],
            answer=text,
            answered=not answer.is_refusal(text),
        )
        return {"solved": [solved], "evidence": gathered, "step": step + 1, "usage": [reply.usage]}
