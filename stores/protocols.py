"""Small protocols the stores are handed by their caller.

Stores never load models themselves: the front door (hopgraph/) builds an embedder once per process and
passes it in, so that the same loaded model serves indexing, retrieval and evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

# A build reports (stage, done, total) as it goes; the front door draws progress bars from it.
Progress = Callable[[str, int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """A sentence embedder plus the tokenizer it truncates with.

    `name` identifies the model and `backend` what computes its vectors (sentence-transformers, onnx ...)
    in index manifests: an index built with one model or backend must not be queried with another.
    `token_spans` exposes the model's own tokenizer as character spans so that chunks are cut in the unit
    the model actually reads, and chunk boundaries map back to exact corpus offsets.
    """

    name: str
    backend: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the (start, end) character span of every token of `text`, no special tokens."""
        ...


class NLPSpan(Protocol):
    """A sentence or entity span of a parsed text (spaCy's `Span`): token and character offsets."""

    @property
    def text(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def start_char(self) -> int: ...

    def __len__(self) -> int: ...


class NLPDoc(Protocol):
    """A parsed text (spaCy's `Doc`): its sentences and named entities, both in text order."""

    @property
    def sents(self) -> Iterator[NLPSpan]: ...

    @property
    def ents(self) -> tuple[NLPSpan, ...]: ...


@runtime_checkable
class NLPPipeline(Protocol):
    """A loaded spaCy pipeline that splits sentences and finds named entities (the sentence graph's NLP).

    `meta` names the model (lang, name, version) so an index records which model found its entities;
    `pipe` takes `disable` so a build can skip components whose output it never reads for one pass
    without changing the pipeline it was handed, which other callers share.
    """

    meta: dict[str, Any]
    max_length: int

    @property
    def pipe_names(self) -> list[str]: ...

    def pipe(
        self, texts: Iterable[str], *, batch_size: int | None = None, disable: Iterable[str] = ...
    ) -> Iterator[NLPDoc]: ...


@runtime_checkable
class QuestionWriter(Protocol):
    """Writes the questions a chunk answers (an LLM behind it, which the stores never see).

    `identity` names the model and prompt (another of either writes other questions, so it makes another
    index build); `concurrency` is how many chunks may be written at once (1 for an in-process model).
    `write` returns the questions kept from the reply and what the parser did with its lines, by rule.
    """

    identity: str
    concurrency: int

    def write(self, title: str, text: str, count: int) -> tuple[list[str], dict[str, int]]: ...


@runtime_checkable
class EdgeJudge(Protocol):
    """Judges whether a chunk answers a question (an LLM behind it, which the stores never see).

    `identity` names the model and prompt (another of either judges otherwise, so it makes another index
    build); `concurrency` is how many calls may run at once (1 for an in-process model). `judge` returns
    "yes", "no" or "malformed" (a reply that was neither; it makes no edge).
    """

    identity: str
    concurrency: int

    def judge(self, title: str, text: str, question: str) -> str: ...
