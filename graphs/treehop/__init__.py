"""TreeHop (seed 004 §2.1), all in this package: graph.py (the wiring, read top to bottom), context.py (its
parameters), state.py (its state and output), steps.py (the steps only it runs), model.py and
training.py (its trained query update)."""

from graphs.treehop.graph import build

__all__ = ["build"]
