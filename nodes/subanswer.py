"""Sub-questions taken one at a time (ChainRAG, NaiveRAG w/ QD): start the cursor after decomposing, put
each sub-question up as decomposed, answer it from its gathered evidence, file it, and move to the next."""

from __future__ import annotations

from typing import Literal, Protocol

from langgraph.runtime import Runtime

from nodes.context import DecompositionContext, RetrievalContext, context_of
from nodes.decompose import Decompose
from nodes.llm import LLMGateway
from nodes.state import QAState, SubAnswer, SubQuestionCursorState
from prompts import answer, reader


class DecomposeInTurn(Decompose):
    """The decomposer, then the cursor `step` on the first sub-question: a method that takes the
    sub-questions in turn starts there even when its thread ran before. (The decomposer itself only writes
    the sub-questions: parallel methods have no cursor.)"""

    def __call__(self, state: QAState, runtime: Runtime[DecompositionContext]) -> dict:
        return {**super().__call__(state, runtime), "step": 0}


class EarlierAnswersSwitch(Protocol):
    """What `NextSubQuestion` reads of a run's context."""

    earlier_answers: bool


class NextSubQuestion:
    """Put the current sub-question up exactly as decomposed, never rewritten: that is NaiveRAG w/ QD, whose
    sub-question with a pronoun is retrieved with the pronoun (ChainRAG's "lost in retrieval").

    With `earlier_answers` the reader is told the answered earlier sub-questions, in the notes format of
    ChainRAG's readers ("On 'sub-question': answer"); off (the paper's baseline) the notes stay empty and the
    reader's prompt is the plain passages-and-question one.
    """

    def __init__(self, context: type[EarlierAnswersSwitch]) -> None:
        self.context = context

    def __call__(self, state: SubQuestionCursorState, runtime: Runtime[EarlierAnswersSwitch]) -> dict:
        ctx = context_of(runtime.context, self.context)
        solved = state.get("solved", []) if ctx.earlier_answers else []
        notes = "\n".join(f"On '{sub['question']}': {sub['answer']}" for sub in solved if sub["answered"])
        return {"query": state["sub_questions"][state.get("step", 0)], "notes": notes}


class AnswerSubQuestion:
    """Answer the current sub-question from its gathered evidence (role "generator"; the reader may say the
    passages do not answer it), file it in `solved`, move its evidence into `evidence` and advance `step`."""

    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: SubQuestionCursorState, runtime: Runtime[RetrievalContext]) -> dict:
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
            read=[item["id"] for item in gathered],
        )
        return {"solved": [solved], "evidence": gathered, "step": step + 1, "usage": [reply.usage]}


def current_position(state: SubQuestionCursorState) -> int:
    """The current sub-question's 1-based position: the hop its retrieval records."""
    return state.get("step", 0) + 1


def after_sub_answer(state: SubQuestionCursorState) -> Literal["prepare", "integrate"]:
    """Router after `AnswerSubQuestion`: the next sub-question's `prepare` node while any remain, else the
    graph's `integrate` node."""
    return "prepare" if state["step"] < len(state["sub_questions"]) else "integrate"
