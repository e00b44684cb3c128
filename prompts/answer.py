"""Answer generator: reads passages, answers the question in as few words as the answer needs.

A short-span answer is what EM / F1 on the benchmarks score; a long sentence around a right answer scores
poorly, so the instruction asks for the span only. It offers no "cannot answer" phrase: measured on
HotpotQA, the 1.5B embedded model took that way out for questions its passages did answer, and a guess
costs less than a certain miss. (Sub-question readers keep the phrase: an unanswered sub-question is a
signal ChainRAG acts on.)
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from nodes.state import Evidence
from prompts.passages import format_passages

SYSTEM = (
    "You answer questions from the passages you are given. Combine facts across passages when the "
    "question needs more than one step."
)

INSTRUCTION = (
    "Reply with the answer only: a name, date, number, yes/no, or short phrase - no full sentence, "
    "no explanation."
)


def messages(question: str, evidence: Sequence[Evidence]) -> list[BaseMessage]:
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Passages:\n{format_passages(evidence)}\n\nQuestion: {question}\n{INSTRUCTION}"),
    ]
