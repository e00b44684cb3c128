"""Query decomposition's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from nodes.state import (
    QAState,
    SubAnswer,
)


class SubQuestionBranch(TypedDict):
    """What one parallel branch receives through `Send`: its sub-question and its 1-based position, which
    is also the hop its retrieval records."""

    sub_question: str
    position: int


class BranchAnswer(SubAnswer):
    """A sub-question answered in a parallel branch, with the position that orders it among the others."""

    position: int


def merge_by_position(existing: list[BranchAnswer], new: list[BranchAnswer]) -> list[BranchAnswer]:
    """Branch answers in position order, whichever branch finished first (one answer per position: a
    position answered again keeps the newer answer)."""
    by_position = {answer["position"]: answer for answer in [*existing, *new]}
    return [by_position[position] for position in sorted(by_position)]


class BranchedSubQuestionsState(QAState, total=False):
    """State of methods that fan out one `Send` branch per sub-question (query decomposition).

    The keys of `SubQuestionsState`, but branches finish in any order, so `solved` is merged by position;
    evidence from the branches merges by `merge_evidence`, each passage at the smallest hop that found it.
    """

    sub_questions: list[str]
    solved: Annotated[list[BranchAnswer], merge_by_position]
