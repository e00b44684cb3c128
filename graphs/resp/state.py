"""ReSP's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from nodes.state import (
    AnswerOutput,
    QAState,
)
from prompts.resp_reasoner import PathwayStep
from stores.evidence import Evidence


class ReSPState(QAState, total=False):
    """ReSP's two memory queues and its loop position (paper 001 §4).

    `global_memory` is the global evidence memory: per round, the summarizer's passage of what the round's
    passages say in support of the overarching question, in the order the rounds ran (a round whose summary
    was unusable adds none, see `fallbacks`). `local_memory` is the local pathway memory: each planned
    sub-question with its answer or "not answered", from round 2 on (round 1's sub-question is the
    question itself, which the summarizer does not answer). Together they are everything the reasoner and
    the generator read, so the trace, Studio and `history` show how the question was decomposed and what
    the answer rests on.

    `sub_question` is the planned sub-question the next round searches for (empty before the first plan:
    round 1 searches for the question); `gathered` is the current round's passages, which the summarizer
    reads and then files into `evidence` at hop = the round; `rounds` counts finished rounds. `stop` says
    why the loop ended: "sufficient" (the reasoner judged the memories enough), "cap" (max_iterations
    rounds ran), "repeat" (the planner repeated a searched sub-question twice) or "no_plan" (the planner
    gave no usable sub-question); empty while it goes on.
    """

    global_memory: Annotated[list[str], operator.add]
    local_memory: Annotated[list[PathwayStep], operator.add]
    sub_question: str
    gathered: list[Evidence]
    rounds: int
    stop: str


class ReSPOutput(AnswerOutput, total=False):
    """What a ReSP run returns: the answer and its evidence, and the two memories the answer was read from."""

    global_memory: list[str]
    local_memory: list[PathwayStep]
