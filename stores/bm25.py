"""A persisted BM25 index over chunk texts (IR-CoT retrieves with it; hybrid search fuses it with Chroma).

Scoring is bm25s's: its term-by-document score matrix is sparse, so a query costs the postings of its own
words (a bm25 search of MultiHop-RAG's 6,532 chunks takes 1.9 ms against 128 ms with rank-bm25, which
scores every document in Python; benchmarks/retrieval_overhead.py). Indexing stays per-document Python,
and on a hundred texts (the hybrid reranker's candidates) it is slower than rank-bm25's, 12 ms against 7,
so `scores_among` scores such a handful with bm25s's own formula functions over a count table instead.
Its "robertson" variant is the Okapi formula rank-bm25's BM25Okapi computes, up to the constant factor
k1 + 1, so rankings are the same except for words found in more than half of the texts: rank-bm25 floors
their negative idf at a quarter of the average idf, bm25s at zero.

Only the tokenized corpus and the ids are saved, as gzip JSON: the statistics are cheap to recompute on
load, and JSON (unlike pickle) is safe to open from an untrusted index folder and does not break when the
library changes its internals (files written while rank-bm25 did the scoring load unchanged).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import TypeVar

import bm25s
import numpy as np
from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

from stores.files import write_atomic

_FORMAT_VERSION = 1
RRF_K = 60
K1, B = 1.5, 0.75  # rank-bm25's BM25Okapi defaults, kept so rankings did not move
METHOD = "robertson"  # bm25s's variant that is the Okapi formula
_IDF, _TF = _select_idf_scorer(METHOD), _select_tfc_scorer(METHOD)
Item = TypeVar("Item", bound=Hashable)
_WORD = re.compile(r"[^\W_]+")
# fmt: off
STOPWORDS = frozenset({
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further",
    "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my",
    "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
    "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
    "yourself", "yourselves"
})
# fmt: on


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Item]]) -> dict[Item, float]:
    """Reciprocal-rank fusion (k = 60): sum of 1 / (60 + rank) over the rankings an item appears in.

    Fuses a lexical and a dense ranking without calibrating their scores against each other; items keep
    the order they were first seen in, so ties go to the first ranking.
    """
    fused: dict[Item, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric words minus common English stopwords, which only add noise to BM25 scores."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


def top_positive(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Positions of the `k` best positive scores, best first, ties in position order.

    A score of zero means no query word was found, so such texts are never a lexical hit; `mask` (one bool
    per score) drops positions before the top k are taken.
    """
    keep = scores > 0
    if mask is not None:
        keep &= mask
    candidates = np.flatnonzero(keep)
    if candidates.size > k:
        # argpartition finds the k-th best score in linear time; everything tied with it is kept so the
        # final sort can break ties by position instead of argpartition's arbitrary choice.
        kth = scores[candidates[np.argpartition(-scores[candidates], k - 1)[k - 1]]]
        candidates = candidates[scores[candidates] >= kth]
    return candidates[np.lexsort((candidates, -scores[candidates]))[:k]]


def scores_among(query: str, tokens: Sequence[Sequence[str]]) -> np.ndarray:
    """BM25 scores of a few tokenized texts for `query` with the statistics of these texts alone.

    Bit for bit what `BM25Index(ids, texts).scores(query)` gives (tested), for a hybrid reranker's hundred
    candidates in a fifth of the time (benchmarks/retrieval_overhead.py). A text's score depends only on
    how often each query word is in it, how many of the texts hold each, and the texts' lengths, so this
    counts just those (one pass over the tokens) where bm25s's indexing builds statistics for every word
    of every text in a per-text Python loop. The formula stays bm25s's: its own idf and term-frequency
    functions for METHOD, combined as its index does (idf x tf part per word, rounded to its float32
    score, summed over the query's words in their order in float32).
    """
    words = tokenize(query)
    if not words or not tokens:
        return np.zeros(len(tokens))
    column: dict[str, int] = {}
    for word in words:
        column.setdefault(word, len(column))
    width = len(column)
    found = [
        row * width + position
        for row, text in enumerate(tokens)
        for word in text
        if (position := column.get(word)) is not None
    ]
    counts = np.bincount(found, minlength=len(tokens) * width).reshape(len(tokens), width).astype(np.float32)
    lengths = np.array([len(text) for text in tokens])
    holding = np.count_nonzero(counts, axis=0).tolist()
    idf = np.array([_IDF(held, N=len(tokens)) if held else 0.0 for held in holding], dtype=np.float32)
    # texts without one indexable word (all stopwords) make the average length 0: no word to score then
    with np.errstate(invalid="ignore", divide="ignore"):
        frequency = _TF(tf_array=counts, l_d=lengths[:, None], l_avg=lengths.mean(), k1=K1, b=B, delta=None)
    parts = np.where(counts > 0, idf * frequency, 0.0).astype(np.float32)
    total = np.zeros(len(tokens), dtype=np.float32)
    for word in words:
        total += parts[:, column[word]]
    return total.astype(np.float64)


class BM25Index:
    """BM25 (Okapi) over a fixed list of texts, each known by an id."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Tokenize and index `texts`; `ids[i]` names `texts[i]`."""
        if len(ids) != len(texts):
            raise ValueError(f"got {len(ids)} ids for {len(texts)} texts")
        self._setup(list(ids), [tokenize(text) for text in texts])

    def _setup(self, ids: list[str], tokens: list[list[str]]) -> None:
        if not ids:
            raise ValueError("a BM25 index needs at least one text")
        self.ids = ids
        self._tokens = tokens
        self._bm25 = bm25s.BM25(k1=K1, b=B, method=METHOD)
        # No empty-token column: a query with no indexed word is answered before bm25s is asked (`search`).
        # Texts without one indexable word (all stopwords) have average length 0, which bm25s divides by
        # without consequence: such an index has no word to score.
        with np.errstate(invalid="ignore", divide="ignore"):
            self._bm25.index(tokens, create_empty_token=False, show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: str) -> np.ndarray:
        """Every text's BM25 score for `query`, in index order; zero for texts sharing no indexed word."""
        words = self._bm25.get_tokens_ids(tokenize(query))
        if not words:
            return np.zeros(len(self.ids))
        return self._bm25.get_scores_from_ids(words).astype(np.float64)

    def search(self, query: str, k: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Return up to `k` (id, score) pairs, best first, ties in index order; only positive scores.

        `mask` (one bool per indexed text) restricts the search before the top k are taken, so a
        metadata filter never leaves fewer than k results when more matching texts exist.
        """
        if k <= 0:
            return []
        scores = self.scores(query)
        return [(self.ids[i], float(scores[i])) for i in top_positive(scores, k, mask).tolist()]

    def save(self, path: str | Path) -> None:
        """Write ids and tokens as gzip JSON."""
        payload = {"version": _FORMAT_VERSION, "ids": self.ids, "tokens": self._tokens}
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        write_atomic(Path(path), lambda handle: handle.write(gzip.compress(data)))

    @classmethod
    def load(cls, path: str | Path) -> BM25Index:
        """Read a file written by `save` and rebuild the BM25 statistics."""
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            payload = json.load(handle)
        if payload.get("version") != _FORMAT_VERSION:
            raise ValueError(
                f"{path}: unsupported BM25 index format {payload.get('version')!r} (this hopgraph reads "
                f"format {_FORMAT_VERSION}); rebuild the index with `hopgraph index PATH --name NAME`"
            )
        index = cls.__new__(cls)
        index._setup(payload["ids"], payload["tokens"])
        return index
