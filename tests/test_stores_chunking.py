"""Token-window chunking: exact character spans, honoured overlap, hand-computed counts."""

from __future__ import annotations

import itertools
import re

import pytest

from stores.chunking import chunk_corpus, chunk_document
from stores.documents import Document


def word_spans(text: str) -> list[tuple[int, int]]:
    """A stand-in tokenizer: one token per run of non-space characters."""
    return [match.span() for match in re.finditer(r"\S+", text)]


def synthetic(n_words: int, doc_id: str = "d") -> Document:
    return Document(doc_id, "Title", "  " + "  ".join(f"w{i}" for i in range(n_words)) + "\n", {"src": "s"})


def test_windows_counts_spans_and_overlap() -> None:
    # 25 tokens, size 10, overlap 3 -> stride 7: windows [0,10) [7,17) [14,24) [21,25) = 4 chunks.
    doc = synthetic(25)
    chunks = chunk_document(doc, word_spans, size=10, overlap=3)
    assert len(chunks) == 4
    assert [c.text.split()[0] for c in chunks] == ["w0", "w7", "w14", "w21"]
    assert [len(c.text.split()) for c in chunks] == [10, 10, 10, 4]
    for position, chunk in enumerate(chunks):
        assert chunk.text == doc.text[chunk.char_start : chunk.char_end]
        assert chunk.id == f"d#{position}" and chunk.position == position
        assert chunk.doc_id == "d" and chunk.title == "Title" and chunk.metadata == {"src": "s"}
    for left, right in itertools.pairwise(chunks):
        assert left.text.split()[-3:] == right.text.split()[:3]
    assert chunks[0].char_start == 2  # starts at the first token, not at leading whitespace
    assert chunks[-1].text.endswith("w24")
    assert chunks[0].indexed_text == "Title\n" + chunks[0].text


def test_exact_fit_gives_no_trailing_sliver() -> None:
    # 17 tokens, size 10, overlap 3: [0,10) [7,17) and the second window reaches the end.
    assert len(chunk_document(synthetic(17), word_spans, size=10, overlap=3)) == 2


def test_short_document_is_one_chunk() -> None:
    doc = synthetic(5)
    (chunk,) = chunk_document(doc, word_spans, size=10, overlap=3)
    assert chunk.text == "w0  w1  w2  w3  w4"


def test_whitespace_document_gives_no_chunks() -> None:
    assert chunk_document(Document("e", "E", " \n\t "), word_spans) == []


def test_zero_overlap() -> None:
    chunks = chunk_document(synthetic(20), word_spans, size=5, overlap=0)
    assert [c.text.split()[0] for c in chunks] == ["w0", "w5", "w10", "w15"]


@pytest.mark.parametrize(
    ("size", "overlap", "named"),
    [(0, 0, "size=0"), (-4, 0, "size=-4"), (10, 10, "overlap=10"), (10, -1, "overlap=-1")],
)
def test_invalid_parameters(size: int, overlap: int, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        chunk_document(synthetic(3), word_spans, size=size, overlap=overlap)


def test_chunk_corpus_keeps_corpus_order() -> None:
    docs = [synthetic(12, "b"), Document("empty", "E", ""), synthetic(3, "a")]
    chunks = chunk_corpus(docs, word_spans, size=10, overlap=2)
    assert [c.id for c in chunks] == ["b#0", "b#1", "a#0"]
