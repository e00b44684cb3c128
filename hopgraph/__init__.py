"""hopgraph: multi-hop question answering over your own corpus, one LangGraph state machine per method."""

from hopgraph.api import build_graph, checkpointer_for, index_corpus, methods, services_for
from hopgraph.settings import RoleSettings, Settings

__all__ = [
    "RoleSettings",
    "Settings",
    "build_graph",
    "checkpointer_for",
    "index_corpus",
    "methods",
    "services_for",
]
