"""The query side: a built sentence graph loaded into memory, with lookups and neighbours by edge kind.

ChainRAG's nodes use only this; it reads the build's files and needs neither spaCy nor Chroma.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stores.bm25 import scores_among, tokenize
from stores.documents import Span
from stores.half_precision import HalfPrecisionTop
from stores.protocols import Embedder
from stores.sentence_graph.csr import union_rows
from stores.sentence_graph.params import SentenceGraphParams
from stores.sentence_graph.records import (
    ENTITIES_FILE,
    GRAPH_FILE,
    RECORDS_FILE,
    DocRecord,
    flatten,
    read_json_gz,
)

EDGE_KINDS: frozenset[str] = frozenset({"EC", "SS", "SA"})


@dataclass(frozen=True)
class Sentence(Span):
    """One node of the graph: entities by display name in mention order, key entities most important
    first."""

    entities: tuple[str, ...]
    key_entities: tuple[str, ...]


class SentenceGraph:
    """A loaded sentence graph: sentence lookup, the embedding pre-filter, and neighbours by edge kind.

    Everything lives in memory as numpy arrays (about 2.4 KB per sentence with MiniLM, a float16 copy of
    the vectors included), so queries never touch Chroma or disk; instances are read-only once loaded and
    safe to share between threads.
    """

    def __init__(self, directory: Path, params: SentenceGraphParams, embedder: Embedder) -> None:
        self._embedder = embedder
        self._window = params.window
        records = [DocRecord(**doc) for doc in read_json_gz(directory / RECORDS_FILE)["docs"]]
        table = flatten(records)
        self._ids = table.ids
        self._row = {sentence_id: row for row, sentence_id in enumerate(self._ids)}
        self._texts = table.texts
        self._words = np.fromiter((len(text.split()) for text in self._texts), np.int64, len(self._texts))
        self._doc = table.doc
        self._doc_ids = table.doc_ids
        self._titles = table.titles
        self._position = table.position
        self._char_start = table.char_start
        self._char_end = table.char_end
        # Row of each document's first sentence: SA neighbours are rows within the window and the document.
        self._doc_start = np.concatenate(([0], np.cumsum(np.bincount(table.doc, minlength=len(records)))))
        self._display = read_json_gz(directory / ENTITIES_FILE)["display"]
        with np.load(directory / GRAPH_FILE) as graph:
            self._vectors = graph["embeddings"]
            self._prefilter = HalfPrecisionTop(self._vectors)
            self._entity_indptr = graph["entity_indptr"]
            self._entity_indices = graph["entity_indices"]
            self._key_indptr = graph["key_indptr"]
            self._key_indices = graph["key_indices"]
            self._ec_indptr = graph["ec_indptr"]
            self._ec_indices = graph["ec_indices"]
            self._ss_indptr = graph["ss_indptr"]
            self._ss_indices = graph["ss_indices"]
        self._tokens: list[list[str]] | None = None
        self._tokens_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        """Every sentence id, in corpus order (the order of the stored vectors); a copy."""
        return list(self._ids)

    def sentence(self, sentence_id: str) -> Sentence:
        """The sentence with this id; KeyError if the graph has none."""
        row = self._rows([sentence_id])[0]
        return Sentence(
            **self._span_fields(row),
            entities=self._names(self._entity_indptr, self._entity_indices, row),
            key_entities=self._names(self._key_indptr, self._key_indices, row),
        )

    def sentences(self, ids: Iterable[str]) -> list[Sentence]:
        """Sentences by id, in the order asked."""
        return [self.sentence(sentence_id) for sentence_id in ids]

    def spans(self, ids: Iterable[str]) -> list[Span]:
        """Sentences by id as retrieval records them (text and corpus position), without their entities.

        Seeding and expansion read a few hundred sentences per query and never their entities, whose names
        cost as much to look up as all the rest (benchmarks/retrieval_overhead.py).
        """
        return [Span(**self._span_fields(row)) for row in self._rows(ids)]

    def _span_fields(self, row: int) -> dict[str, str | int]:
        doc = self._doc[row]
        return {
            "id": self._ids[row],
            "doc_id": self._doc_ids[doc],
            "title": self._titles[doc],
            "text": self._texts[row],
            "position": int(self._position[row]),
            "char_start": int(self._char_start[row]),
            "char_end": int(self._char_end[row]),
        }

    def texts(self, ids: Iterable[str]) -> list[str]:
        """The texts of `ids`, in the order asked: all a reranker reads of a hundred candidates."""
        return [self._texts[row] for row in self._rows(ids)]

    def word_counts(self, ids: Iterable[str]) -> np.ndarray:
        """Whitespace-separated words of each sentence of `ids` (`len(text.split())`, what ChainRAG's word
        limit counts), counted once at load: expansion weighs hundreds of neighbours against the limit."""
        return self._words[self._rows(ids)]

    def embeddings(self, ids: Iterable[str]) -> np.ndarray:
        """The stored (L2-normalised, float32) vectors of `ids`, one row each, in the order asked."""
        return self._vectors[self._rows(ids)]

    def candidates(self, query: str, n: int = 100) -> list[tuple[str, float]]:
        """The `n` sentences most similar to `query` (cosine), best first: the paper's seed pre-filter.

        Exact (`HalfPrecisionTop`: a float16 pass over all sentences, then float64 over a shortlist), equal
        scores in corpus order, so the same query gives the same candidates in every process.
        """
        if n <= 0:
            return []
        rows, scores = self._prefilter.top(np.asarray(self._embedder.embed([query]), dtype=np.float32)[0], n)
        return [(self._ids[row], score) for row, score in zip(rows.tolist(), scores.tolist(), strict=True)]

    def lexical_scores(self, query: str, ids: Iterable[str]) -> np.ndarray:
        """BM25 scores of `ids` for `query` among `ids` alone, in the order asked: what a hybrid reranker
        computes from their texts, from tokens the graph keeps (tokenizing a hundred sentences per query
        cost about 1 ms of ChainRAG's seed step; benchmarks/retrieval_overhead.py).

        Tokens are made on first use, once for every sentence (under a second for 50k), and interned, so
        each distinct word is held once; graphs built before need no rebuild, and callers that never ask
        pay nothing.
        """
        with self._tokens_lock:
            if self._tokens is None:
                self._tokens = [[sys.intern(word) for word in tokenize(text)] for text in self._texts]
        return scores_among(query, [self._tokens[row] for row in self._rows(ids)])

    def neighbors(self, ids: Iterable[str], kinds: frozenset[str] = EDGE_KINDS) -> list[str]:
        """Every sentence adjacent to one of `ids` by an enabled edge kind (not `ids` themselves), in corpus
        order. Disabling kinds is ChainRAG's edge ablation; `edge` tells which kinds join two sentences.

        Rows stay numpy arrays until the ids are named: expansion asks this for a few hundred sentences per
        step (benchmarks/retrieval_overhead.py)."""
        unknown = set(kinds) - EDGE_KINDS
        if unknown:
            raise ValueError(f"unknown edge kind(s) {sorted(unknown)}; use {sorted(EDGE_KINDS)}")
        seeds = np.unique(np.asarray(self._rows(ids), dtype=np.int64))
        found = [np.empty(0, dtype=np.int64)]
        if "EC" in kinds:
            keys = union_rows(self._key_indptr, self._key_indices, seeds)
            found.append(union_rows(self._ec_indptr, self._ec_indices, keys))
        if "SS" in kinds:
            found.append(union_rows(self._ss_indptr, self._ss_indices, seeds))
        if "SA" in kinds:
            found.append(self._adjacent(seeds))
        rows = np.setdiff1d(np.concatenate(found), seeds)  # sorted and unique: corpus order
        return [self._ids[row] for row in rows.tolist()]

    def edge(self, a: str, b: str) -> dict[str, tuple[str, ...]]:
        """The kinds of edge between two sentences: EC with the display names of their shared key
        entities, SS and SA with an empty tuple; an empty dict when they are not adjacent."""
        i, j = self._rows([a, b])
        if i == j:
            return {}
        kinds: dict[str, tuple[str, ...]] = {}
        mine = self._key_indices[self._key_indptr[i] : self._key_indptr[i + 1]]
        theirs = set(self._key_indices[self._key_indptr[j] : self._key_indptr[j + 1]].tolist())
        shared = tuple(self._display[key] for key in mine.tolist() if key in theirs)
        if shared:
            kinds["EC"] = shared
        similar = self._ss_indices[self._ss_indptr[i] : self._ss_indptr[i + 1]]
        at = np.searchsorted(similar, j)
        if at < len(similar) and similar[at] == j:
            kinds["SS"] = ()
        if self._doc[i] == self._doc[j] and abs(i - j) <= self._window:
            kinds["SA"] = ()
        return kinds

    def _rows(self, ids: Iterable[str]) -> list[int]:
        if isinstance(ids, str):
            raise TypeError("pass a list of sentence ids, not one id string")
        try:
            return [self._row[sentence_id] for sentence_id in ids]
        except KeyError as exc:
            raise KeyError(f"the sentence graph has no sentence {exc.args[0]!r}") from None

    def _names(self, indptr: np.ndarray, indices: np.ndarray, row: int) -> tuple[str, ...]:
        return tuple(self._display[number] for number in indices[indptr[row] : indptr[row + 1]].tolist())

    def _adjacent(self, seeds: np.ndarray) -> np.ndarray:
        """Rows within the SA window of a seed, inside the seed's document."""
        spans = []
        for row in seeds.tolist():
            doc = self._doc[row]
            low = max(int(self._doc_start[doc]), row - self._window)
            high = min(int(self._doc_start[doc + 1]), row + self._window + 1)
            spans.append(np.arange(low, high))
        return np.unique(np.concatenate(spans)) if spans else np.empty(0, dtype=np.int64)
