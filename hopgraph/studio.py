"""Graphs exported for LangGraph Studio / `langgraph dev` (langgraph.json points here).

Compiled without a checkpointer: the server brings its own. Settings come from hopgraph.toml and HOPGRAPH_*
variables of the server's environment; models load on the first run, not at import.
"""

from __future__ import annotations

from hopgraph.api import build_graph
from hopgraph.settings import Settings

_settings = Settings()

naive = build_graph("naive", _settings, checkpointer=False)
chainrag = build_graph("chainrag", _settings, checkpointer=False)
decomposition = build_graph("decomposition", _settings, checkpointer=False)
naive_qd = build_graph("naive_qd", _settings, checkpointer=False)
ircot = build_graph("ircot", _settings, checkpointer=False)
iter_retgen = build_graph("iter_retgen", _settings, checkpointer=False)
resp = build_graph("resp", _settings, checkpointer=False)
multimeta = build_graph("multimeta", _settings, checkpointer=False)
treehop = build_graph("treehop", _settings, checkpointer=False)
quote = build_graph("quote", _settings, checkpointer=False)
biqog = build_graph("biqog", _settings, checkpointer=False)
