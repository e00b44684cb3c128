"""Query decomposition (seed 004 §2.4), all in this package: graph.py (the wiring, read top to bottom),
context.py (its parameters), state.py (its state and output)."""

from graphs.decomposition.graph import build

__all__ = ["build"]
