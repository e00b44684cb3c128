"""What nodes are handed: interfaces of the heavy objects hopgraph/ builds once per process."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from nodes.llm import LLMGateway
from stores.index import ChunkIndex
from stores.protocols import Embedder


class IndexProvider(Protocol):
    """Opens a named index (cached by the provider), already bound to the right embedder."""

    def open(self, name: str) -> ChunkIndex: ...


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant.

    `vectors` are the passages' stored embeddings (rows L2-normalised, by the index's embedder) when the
    caller has them: a reranker that works from embeddings scores with those instead of embedding the
    passages again; a cross-encoder reads the text and ignores them. `lexical` are the passages' BM25 scores
    for the query, among the passages alone, when the caller has their tokens at hand (a sentence graph
    keeps them): a reranker with a lexical part uses those instead of tokenizing the passages again; the
    others ignore them.
    """

    def score(
        self,
        query: str,
        passages: list[str],
        vectors: np.ndarray | None = None,
        lexical: np.ndarray | None = None,
    ) -> list[float]: ...


class GraphServices(Protocol):
    """Everything a graph builder may hand its nodes."""

    @property
    def llm(self) -> LLMGateway: ...

    @property
    def indexes(self) -> IndexProvider: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def reranker(self) -> Reranker: ...

    @property
    def nlp(self) -> Any: ...
