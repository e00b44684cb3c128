"""Reader roles over gathered sentences: the sufficiency judge and the sub-question answerer.

Both put the same system text and the same numbered sentences first and the varying question and
instruction last, so that a judge call and the answer call that follows it share their whole prefix
(llama.cpp re-evaluates only the tail; providers with prompt caching bill it as cached).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from nodes.state import Evidence
from prompts.answer import INSTRUCTION
from prompts.passages import format_passages

NO_ANSWER = "Insufficient information."

SYSTEM = "You read numbered passages and answer about them. Use only what the passages say."

JUDGE_INSTRUCTION = (
    "Do these passages contain enough information to answer the question? Reply with Yes or No only."
)

ANSWER_INSTRUCTION = f"{INSTRUCTION} If the passages do not contain the answer, reply: {NO_ANSWER}"


def _messages(evidence: Sequence[Evidence], notes: str, question: str, instruction: str) -> list[BaseMessage]:
    notes_block = f"Notes from earlier steps:\n{notes}\n\n" if notes else ""
    return [
        SystemMessage(SYSTEM),
        HumanMessage(
            f"Passages:\n{format_passages(evidence)}\n\n{notes_block}Question: {question}\n{instruction}"
        ),
    ]


def judge_messages(evidence: Sequence[Evidence], question: str, notes: str = "") -> list[BaseMessage]:
    return _messages(evidence, notes, question, JUDGE_INSTRUCTION)


def answer_messages(evidence: Sequence[Evidence], question: str, notes: str = "") -> list[BaseMessage]:
    return _messages(evidence, notes, question, ANSWER_INSTRUCTION)


def is_no_answer(answer: str) -> bool:
    """True for an empty reply or the no-answer phrase (with or without its full stop)."""
    text = answer.strip().lower()
    return not text or text.startswith(NO_ANSWER.lower().rstrip("."))


def is_yes(reply: str) -> bool:
    return reply.strip().lower().lstrip("*\"' ").startswith("yes")
