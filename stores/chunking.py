"""Token-window chunking.

Chunks are cut in the embedding model's own tokens (via `Embedder.token_spans`) so a chunk of `size`
tokens is exactly what the model reads, and every chunk keeps the character span it came from, so
evidence shown to a user or scored by an evaluation maps back to the exact corpus text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from stores.documents import Document, Scalar, Span

TokenSpans = Callable[[str], list[tuple[int, int]]]
TOKENIZE_WINDOW = 100_000
"""Characters tokenised at once: a fast tokenizer's encoding of a whole 100 MB text took about 15 GB."""


@dataclass(frozen=True)
class Chunk(Span):
    """A token window of a document, carrying the document's metadata (for filtered search)."""

    metadata: dict[str, Scalar] = field(default_factory=dict)

    @property
    def indexed_text(self) -> str:
        """What is embedded and BM25-indexed: the title gives a chunk cut from mid-document its context."""
        return f"{self.title}\n{self.text}"


def chunk_id(doc_id: str, position: int) -> str:
    """A chunk's id: its document's id and its 0-based position in the document."""
    return f"{doc_id}#{position}"


def chunk_document(doc: Document, token_spans: TokenSpans, size: int = 256, overlap: int = 32) -> list[Chunk]:
    """Split `doc` into windows of `size` tokens, neighbours sharing `overlap` tokens.

    The overlap keeps a sentence that straddles a boundary whole in at least one chunk.
    """
    _check_params(size, overlap)
    if not doc.text.strip():
        return []
    spans = windowed_spans(doc.text, token_spans)
    stride = size - overlap
    chunks = []
    for first in range(0, len(spans), stride):
        last = min(first + size, len(spans)) - 1
        start, end = spans[first][0], spans[last][1]
        chunks.append(
            Chunk(
                id=chunk_id(doc.id, len(chunks)),
                doc_id=doc.id,
                title=doc.title,
                text=doc.text[start:end],
                position=len(chunks),
                char_start=start,
                char_end=end,
                metadata=dict(doc.metadata),
            )
        )
        if last == len(spans) - 1:
            break
    return chunks


def windowed_spans(
    text: str, token_spans: TokenSpans, window: int = TOKENIZE_WINDOW
) -> list[tuple[int, int]]:
    """The token spans of `text`, tokenised `window` characters at a time, each window cut after the last
    whitespace in it (or at `window` characters when it has none): tokenizers split words at whitespace,
    so the spans are those of the whole text, at a window's memory."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(start + window, len(text))
        if end < len(text):
            cut = max(text.rfind(space, start, end) for space in " \n\t\r")
            end = cut + 1 if cut > start else end
        spans.extend((start + first, start + last) for first, last in token_spans(text[start:end]))
        start = end
    return spans


def chunk_corpus(
    docs: list[Document], token_spans: TokenSpans, size: int = 256, overlap: int = 32
) -> list[Chunk]:
    """Chunk every document, in corpus order then position order."""
    _check_params(size, overlap)
    return [chunk for doc in docs for chunk in chunk_document(doc, token_spans, size, overlap)]


def _check_params(size: int, overlap: int) -> None:
    """Refuse windows that cannot advance (overlap >= size) before any tokenizing is done."""
    if size <= 0:
        raise ValueError(f"chunk size must be > 0, got size={size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must satisfy 0 <= overlap < size ({size}), got overlap={overlap}")
