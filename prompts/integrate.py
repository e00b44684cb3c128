"""Answer integration from sub-answers (ChainRAG AnsInt): the original question answered from the
sub-questions and their answers alone, without passages.

A sub-question that went unanswered is listed with "?" as its answer: showing the reader's no-answer phrase
there had the model copy it as the final answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import CUE, INSTRUCTION
from prompts.echo import EchoGuard

SYSTEM = (
    "You answer a question from the answers to its sub-questions. Combine them step by step in your "
    "head; write only the final answer."
)

GUARD = EchoGuard(own_text=(SYSTEM, INSTRUCTION, CUE), allowed=frozenset({"yes", "no"}))


def messages(question: str, steps: Sequence[tuple[str, str | None]]) -> list[BaseMessage]:
    """`steps` are (sub-question, answer) pairs; answer None for a sub-question that went unanswered."""
    facts = "\n".join(f"{i}. {q} -> {a if a else '?'}" for i, (q, a) in enumerate(steps, 1))
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Sub-questions and answers:\n{facts}\n\nQuestion: {question}\n{INSTRUCTION}\n{CUE}"),
    ]
