"""NaiveRAG w/ QD (paper 000's baseline), all in this package: graph.py (the wiring, read top to bottom),
context.py (its parameters)."""

from graphs.naive_qd.graph import build

__all__ = ["build"]
