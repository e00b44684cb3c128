"""Iter-RetGen's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from nodes.state import (
    AnswerOutput,
    QAState,
)
from stores.evidence import Evidence


class IterRetGenState(QAState, total=False):
    """Iter-RetGen's iterations.

    `gathered` is the current iteration's retrieved passages, which its generation reads (that iteration's
    alone, as the original and FlashRAG do); each is also merged into `evidence` at hop = its iteration.
    `generations` holds every iteration's chain of thought in order, as the next query joins it to the
    question (the trace of how the query evolved; with `reader = "cot"` the answer is read from the last),
    and `rounds` counts the iterations done. `stop` says why they ended: "iterations" (all T ran) or
    "converged" (the next query would have been this iteration's again, so every later iteration would
    repeat this one).
    """

    gathered: list[Evidence]
    generations: Annotated[list[str], operator.add]
    rounds: int
    stop: str


class IterRetGenOutput(AnswerOutput, total=False):
    """What an Iter-RetGen run returns: the answer, its evidence and every iteration's chain of thought."""

    generations: list[str]
