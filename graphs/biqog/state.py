"""BiQOG's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from nodes.state import (
    QuestionHitsOutput,
    QuestionHitsState,
)
from stores.evidence import Evidence


class TraversalHop(TypedDict):
    """One hop of BiQOG's traversal: the questions it started from (their texts), the chunks adjacent to
    them that no earlier hop collected (ids, reranked, best first) with the score this hop's rerank gave
    each (`scores`, in the order of `chunks`), and the `width` of those it kept, whose questions the next
    hop starts from."""

    hop: int
    questions: list[str]
    chunks: list[str]
    scores: list[float]
    kept: list[str]


class BiqogState(QuestionHitsState, total=False):
    """BiQOG's retrieval trace: `question_hits` are the seed questions (hop 1) and `traversal` the path from
    them, hop by hop (chunks collected and kept, the questions moved to). `ranked` is the final rerank's top
    k, best first, which the reader reads (`evidence` holds the same passages in hop order)."""

    traversal: list[TraversalHop]
    ranked: list[Evidence]


class BiqogOutput(QuestionHitsOutput, total=False):
    """What a BiQOG run returns: the answer and its evidence, the seed questions and the traversal."""

    traversal: list[TraversalHop]
