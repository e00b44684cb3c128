"""hopgraph: multi-hop question answering over your own corpus, one LangGraph state machine per method.

The names below load on first use (PEP 562), not with the package: `hopgraph methods` or `--help` then
starts without importing torch, chromadb and every graph, which `from hopgraph import build_graph` still
brings in as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and editors: the names as they load
    from hopgraph.api import build_graph as build_graph
    from hopgraph.api import checkpointer_for as checkpointer_for
    from hopgraph.api import index_corpus as index_corpus
    from hopgraph.api import methods as methods
    from hopgraph.api import services_for as services_for
    from hopgraph.settings import RoleSettings as RoleSettings
    from hopgraph.settings import Settings as Settings

_HOMES = {
    "RoleSettings": "hopgraph.settings",
    "Settings": "hopgraph.settings",
    "build_graph": "hopgraph.api",
    "checkpointer_for": "hopgraph.api",
    "index_corpus": "hopgraph.api",
    "methods": "hopgraph.api",
    "services_for": "hopgraph.api",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'hopgraph' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
