"""What nodes are handed: interfaces of the heavy objects hopgraph/ builds once per process."""

from __future__ import annotations

from typing import Any, Protocol

from nodes.llm import LLMGateway
from stores.index import ChunkIndex
from stores.protocols import Embedder


class IndexProvider(Protocol):
    """Opens a named index (cached by the provider), already bound to the right embedder."""

    def open(self, name: str) -> ChunkIndex: ...


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    def score(self, query: str, passages: list[str]) -> list[float]: ...


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
