"""Method name -> graph builder. A builder takes the process's services and returns an uncompiled graph."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from stores.errors import HopgraphError

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

    from nodes.protocols import GraphServices

Builder = Callable[["GraphServices"], "StateGraph"]

# Each method's package under graphs/, imported when its graph is built: importing all eleven (and the
# stores and models they use) would cost `hopgraph methods` or `--help` seconds of start-up.
METHODS: dict[str, str] = {
    "naive": "graphs.naive",
    "chainrag": "graphs.chainrag",
    "decomposition": "graphs.decomposition",
    "naive_qd": "graphs.naive_qd",
    "ircot": "graphs.ircot",
    "iter_retgen": "graphs.iter_retgen",
    "resp": "graphs.resp",
    "multimeta": "graphs.multimeta",
    "treehop": "graphs.treehop",
    "quote": "graphs.quote",
    "biqog": "graphs.biqog",
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


def _package(method: str) -> str:
    try:
        return METHODS[method]
    except KeyError:
        raise UnknownMethodError(
            f"Unknown method {method!r}; available: {', '.join(sorted(METHODS))}."
        ) from None


def builder(method: str) -> Builder:
    build: Builder = importlib.import_module(_package(method)).build
    return build


def extras_for(method: str) -> tuple[str, ...]:
    """The index extras `method` needs; an unknown method is an error, not an index without extras."""
    _package(method)
    return METHOD_EXTRAS.get(method, ())
