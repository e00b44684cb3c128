"""ChainRAG (paper 000), all in this package: graph.py (the wiring, read top to bottom), context.py (its
parameters), state.py (its state and output), steps.py (the steps only it runs)."""

from graphs.chainrag.graph import build

__all__ = ["build"]
