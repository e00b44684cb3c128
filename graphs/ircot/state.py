"""IR-CoT's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from nodes.state import (
    AnswerOutput,
    QAState,
)


class IRCoTState(QAState, total=False):
    """IR-CoT's reasoning trace and loop position.

    `reasoning` is the chain of thought, one sentence per reasoning step, in order: the trace Studio, the
    streamed updates and `history` show. `rounds` counts retrieval rounds so far (the next one records its
    paragraphs at hop rounds + 1). `stop` says why reasoning ended: "answer" (a sentence said "answer
    is"), "cap" (max_iterations reached) or "fallback" (a reply with no usable sentence, see `fallbacks`);
    empty while it goes on.
    """

    reasoning: Annotated[list[str], operator.add]
    rounds: int
    stop: str


class IRCoTOutput(AnswerOutput, total=False):
    """What an IR-CoT run returns: the answer and its evidence, and the chain of thought behind them."""

    reasoning: list[str]
