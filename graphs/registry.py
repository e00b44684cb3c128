"""Method name -> graph builder. A builder takes the process's services and returns an uncompiled graph."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.graph import StateGraph

from graphs import chainrag, naive
from nodes.protocols import GraphServices
from stores.errors import HopgraphError

Builder = Callable[[GraphServices], StateGraph]

METHODS: dict[str, Builder] = {
    "naive": naive.build,
    "chainrag": chainrag.build,
}

# Methods whose index needs a sentence graph as well as chunks (`hopgraph index ... --method NAME`).
SENTENCE_GRAPH_METHODS = frozenset({"chainrag"})


class UnknownMethodError(HopgraphError):
    """A method name that no graph is registered under."""


def builder(method: str) -> Builder:
    try:
        return METHODS[method]
    except KeyError:
        raise UnknownMethodError(
            f"Unknown method {method!r}; available: {', '.join(sorted(METHODS))}."
        ) from None
