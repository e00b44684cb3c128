"""Graphs exported for LangGraph Studio / `langgraph dev` (langgraph.json points here).

One module attribute per method of graphs.registry.METHODS, named after it (`naive`, `chainrag`, ...), so a
method added to the registry is exported here without being listed twice; tests/test_registry.py checks
that langgraph.json names the same methods. Compiled without a checkpointer: the server brings its own.
Settings come from hopgraph.toml and HOPGRAPH_* variables of the server's environment; models load on the
first run, not at import.
"""

from __future__ import annotations

from graphs.registry import METHODS
from hopgraph.api import build_graph
from hopgraph.settings import Settings

_settings = Settings()

globals().update({name: build_graph(name, _settings, checkpointer=False) for name in METHODS})
__all__ = list(METHODS)
