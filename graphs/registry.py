"""Method name -> graph builder. A builder takes the process's services and returns an uncompiled graph."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.graph import StateGraph

from graphs import (
    biqog,
    chainrag,
    decomposition,
    ircot,
    iter_retgen,
    multimeta,
    naive,
    naive_qd,
    quote,
    resp,
    treehop,
)
from nodes.protocols import GraphServices
from stores.errors import HopgraphError

Builder = Callable[[GraphServices], StateGraph]

METHODS: dict[str, Builder] = {
    "naive": naive.build,
    "chainrag": chainrag.build,
    "decomposition": decomposition.build,
    "naive_qd": naive_qd.build,
    "ircot": ircot.build,
    "iter_retgen": iter_retgen.build,
    "resp": resp.build,
    "multimeta": multimeta.build,
    "treehop": treehop.build,
    "quote": quote.build,
    "biqog": biqog.build,
}

# The index extras (stores.extra_registry) each method retrieves from beyond chunks: `hopgraph index
# --method NAME` builds them, and an evaluation's index holds those of every method it runs.
METHOD_EXTRAS: dict[str, tuple[str, ...]] = {
    "chainrag": ("sentence_graph",),
    "multimeta": ("metadata",),
    "quote": ("questions",),
    "biqog": ("question_graph",),  # built on the questions extra, which comes with it
}


class UnknownMethodError(HopgraphError):
    """A method name that no graph is registered under."""


def builder(method: str) -> Builder:
    try:
        return METHODS[method]
    except KeyError:
        raise UnknownMethodError(
            f"Unknown method {method!r}; available: {', '.join(sorted(METHODS))}."
        ) from None


def extras_for(method: str) -> tuple[str, ...]:
    """The index extras `method` needs; an unknown method is an error, not an index without extras."""
    builder(method)
    return METHOD_EXTRAS.get(method, ())
