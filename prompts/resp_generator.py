"""ReSP's generator (paper 001, Table 1 "Response Generation"): the final answer read from the two memory
queues, the answer only.

It asks what Table 1 asks (answer from the given reference, only the answer, no other words) with the
shared reader's measured wording (`prompts.answer`: the instruction and the "Answer:" cue), and like that
reader it offers a "cannot answer" phrase only when the method keeps refusals on purpose (`unanswerable`).
Its system text and known-information view are the reasoner's (`prompts.resp_reasoner`), so after the
judge's Yes the generator's prompt shares the judge's whole prefix up to its instruction.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import CUE, INSTRUCTION, REFUSAL_NUDGE, UNANSWERABLE
from prompts.echo import EchoGuard, normalise
from prompts.resp_reasoner import MEMORY_VIEW_TEXT, SYSTEM

UNANSWERABLE_INSTRUCTION = f"If the known information does not answer the question, reply: {UNANSWERABLE}"

GUARD = EchoGuard(
    own_text=(
        *MEMORY_VIEW_TEXT,
        INSTRUCTION,
        UNANSWERABLE_INSTRUCTION,
        REFUSAL_NUDGE,
        CUE,
    ),
    allowed=frozenset({"yes", "no", normalise(UNANSWERABLE)}),
)


def messages(known: str, question: str, *, unanswerable: bool = False) -> list[BaseMessage]:
    instruction = f"{INSTRUCTION} {UNANSWERABLE_INSTRUCTION}" if unanswerable else INSTRUCTION
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Known information:\n{known}\n\nQuestion: {question}\n{instruction}\n{CUE}"),
    ]
