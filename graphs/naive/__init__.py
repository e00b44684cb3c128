"""NaiveRAG, all in this package: graph.py (the wiring, read top to bottom)."""

from graphs.naive.graph import build

__all__ = ["build"]
