"""ReSP (paper 001), all in this package: graph.py (the wiring, read top to bottom), context.py (its
parameters), state.py (its state and output), steps.py (the steps only it runs)."""

from graphs.resp.graph import build

__all__ = ["build"]
