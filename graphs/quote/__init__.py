"""QuOTE (seed 002's baseline), all in this package: graph.py (the wiring, read top to bottom), context.py
(its parameters), steps.py (the steps only it runs)."""

from graphs.quote.graph import build

__all__ = ["build"]
