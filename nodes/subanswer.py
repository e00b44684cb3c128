"""Answer the current sub-question from its gathered evidence, file it, and move to the next one."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, context_of
from nodes.generate import first_line
from nodes.llm import LLMGateway
from nodes.state import ChainRAGState, SubAnswer
from prompts import reader


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
        )
        answer = first_line(reply.text)
        solved = SubAnswer(
            asked=state["sub_questions"][step],
            question=state["query"],
            answer=answer,
            answered=not reader.is_no_answer(answer),
        )
        return {"solved": [solved], "evidence": gathered, "step": step + 1, "usage": [reply.usage]}
