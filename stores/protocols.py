"""Small protocols the stores are handed by their caller.

Stores never load models themselves: the front door (hopgraph/) builds an embedder once per process and
passes it in, so that the same loaded model serves indexing, retrieval and evaluation.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """A sentence embedder plus the tokenizer it truncates with.

    `name` identifies the model in index manifests (an index built with one model must not be queried
    with another). `token_spans` exposes the model's own tokenizer as character spans so that chunks are
    cut in the unit the model actually reads, and chunk boundaries map back to exact corpus offsets.
    """

    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the (start, end) character span of every token of `text`, no special tokens."""
        ...
