"""ChainRAG's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from nodes.state import (
    SubQuestionCursorState,
)


class ChainRAGState(SubQuestionCursorState, total=False):
    """ChainRAG's cursor over its sub-questions, and its graph expansion: `expansions` counts graph
    expansions of the current sub-question and `stop` says why gathering ended."""

    expansions: int
    stop: str
