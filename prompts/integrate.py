"""Answer integration from sub-answers (ChainRAG AnsInt): the original question answered from the
sub-questions and their answers alone, without passages.

A sub-question that went unanswered is listed with "?" as its answer: showing the reader's no-answer phrase
there had the model copy it as the final answer. Where refusals are kept on purpose (`unanswerable`, as for
MultiHop-RAG's null queries) the integrator may say the sub-answers do not answer, in the reader's words:
without that option it made an answer up from the "?"s (a letter, a name) for every null query.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import CUE, INSTRUCTION, UNANSWERABLE
from prompts.echo import EchoGuard, normalise

SYSTEM = (
    "You answer a question from the answers to its sub-questions. Combine them step by step in your "
    "head; write only the final answer."
)

UNANSWERABLE_INSTRUCTION = f"If the sub-answers do not answer the question, reply: {UNANSWERABLE}"

GUARD = EchoGuard(
    own_text=(SYSTEM, INSTRUCTION, UNANSWERABLE_INSTRUCTION, CUE),
    allowed=frozenset({"yes", "no", normalise(UNANSWERABLE)}),
)


def messages(
    question: str, steps: Sequence[tuple[str, str | None]], *, unanswerable: bool = False
) -> list[BaseMessage]:
    """`steps` are (sub-question, answer) pairs; answer None for a sub-question that went unanswered."""
    facts = "\n".join(f"{i}. {q} -> {a if a else '?'}" for i, (q, a) in enumerate(steps, 1))
    instruction = f"{INSTRUCTION} {UNANSWERABLE_INSTRUCTION}" if unanswerable else INSTRUCTION
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Sub-questions and answers:\n{facts}\n\nQuestion: {question}\n{instruction}\n{CUE}"),
    ]
