"""State shared by every method's graph.

Evidence items keep the corpus ids they came from (document, chunk or sentence id, character span) and
the hop that found them, so retrieval metrics are computed from the final state and never re-derived.
LLM accounting lives in state too, which puts it into every checkpoint and therefore into `history`.
"""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from stores.documents import Span


class Evidence(TypedDict):
    """One retrieved passage, traceable to the corpus."""

    id: str
    doc_id: str
    title: str
    text: str
    score: float
    char_start: int | None
    char_end: int | None
    hop: int


class LLMUsage(TypedDict):
    """What one node spent on LLM calls in one step.

    Calls and token counts are the method's logical cost, the same whether the response cache answered or
    not (so a resumed evaluation reports what the method costs). `cached_tokens` are prompt tokens the
    model did not have to evaluate (llama.cpp's reused KV prefix, or a provider's prompt cache);
    `cache_hits` are calls answered from hopgraph's own response cache.
    """

    node: str
    role: str
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    seconds: float
    cache_hits: int


def evidence_from(span: Span, score: float, hop: int) -> Evidence:
    """Evidence for a retrieved chunk or sentence, keeping its corpus ids and character span."""
    return Evidence(
        id=span.id,
        doc_id=span.doc_id,
        title=span.title,
        text=span.text,
        score=round(float(score), 6),
        char_start=span.char_start,
        char_end=span.char_end,
        hop=hop,
    )


def merge_evidence(existing: list[Evidence], new: list[Evidence]) -> list[Evidence]:
    """Append new evidence, keeping the first (earliest-hop) copy of any id seen twice."""
    seen = {item["id"] for item in existing}
    merged = list(existing)
    for item in new:
        if item["id"] not in seen:
            seen.add(item["id"])
            merged.append(item)
    return merged


class QuestionInput(TypedDict):
    """What a caller (or Studio's input form) provides."""

    question: str


class AnswerOutput(TypedDict, total=False):
    """What a run returns: the answer and the evidence that supported it."""

    answer: str
    evidence: list[Evidence]
    usage: list[LLMUsage]


class QAState(TypedDict, total=False):
    """The state every method shares; method graphs extend it with their own keys."""

    question: str
    evidence: Annotated[list[Evidence], merge_evidence]
    answer: str
    usage: Annotated[list[LLMUsage], operator.add]


class SubAnswer(TypedDict):
    """One finished sub-question: as decomposed, as retrieved with (after rewriting), and its answer."""

    asked: str
    question: str
    answer: str
    answered: bool


class SubQuestionState(QAState, total=False):
    """State of methods that work through sub-questions one at a time (ChainRAG, decomposition RAG).

    `gathered` is the working set of the current sub-question, in the order it was gathered (which is the
    order the prompts show it, so each expansion only appends to the prompt). When a sub-question is
    finished its gathered evidence moves into `evidence` with hop = its 1-based position.
    """

    sub_questions: list[str]
    step: int
    query: str
    notes: str
    gathered: list[Evidence]
    expansions: int
    stop: str
    solved: Annotated[list[SubAnswer], operator.add]
