"""Embedders for store tests: the production MiniLM embedder of the default backend, and a wrapper that
counts or fails calls."""

from __future__ import annotations

import numpy as np

from hopgraph.providers import OnnxEmbedder as MiniLM
from tests.conftest import MODEL_DIR


def minilm() -> MiniLM:
    """A new embedder like the session's (`embedding_backend`'s default): a build one makes, the other
    resumes."""
    return MiniLM("all-MiniLM-L6-v2", "onnx", MODEL_DIR)


class Counting:
    """Counts the texts an embedder embeds; raises once `fail_after` calls have run (a simulated crash)."""

    def __init__(self, inner: MiniLM, name: str | None = None, fail_after: int | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.backend = inner.backend
        self.dimension = inner.dimension
        self.fail_after = fail_after
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("simulated crash while embedding")
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.inner.token_spans(text)
