"""Answer integration from sub-answers (ChainRAG AnsInt): the original question answered from the
sub-questions and their answers alone, without passages."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import INSTRUCTION

SYSTEM = (
    "You answer a question from the answers to its sub-questions. Combine them step by step in your "
    "head; write only the final answer."
)


def messages(question: str, steps: Sequence[tuple[str, str]]) -> list[BaseMessage]:
    facts = "\n".join(f"{i}. {q} -> {a}" for i, (q, a) in enumerate(steps, 1))
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Sub-questions and answers:\n{facts}\n\nQuestion: {question}\n{INSTRUCTION}"),
    ]
