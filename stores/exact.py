"""Exact dense search over an index build's stored vectors, held in memory.

Chroma's HNSW is approximate, and not reproducible: it answered the same query vectors differently in two
processes (39 of 258 TreeHop hop queries on the 6,532-chunk MultiHop-RAG index). For an index small enough
to hold, one matrix product over all stored vectors gives the true nearest chunks, the same in every
process, and answers many query rows at once (TreeHop asks 1, then 5, then 25 per hop).

The chunks' texts and metadata are held too, because a hit needs them and fetching them from Chroma costs
about as much as the search saves. Measured on that index (2-core machine under load, minimum / p10 of 100
calls): Chroma's `get` of the hits of one TreeHop hop took 1.1 / 1.3 ms for 5 ids, 2.4 / 5.4 ms for 25 and
9.5 / 10.4 ms for 125 (hop 3's 25 rows x 5), against TreeHop's goal of 10 ms for all 3 hops. Held as
`Chunk`s, a hit costs a list lookup. The price is memory: 4 bytes per dimension per chunk for the vectors
(10 MB at 6,532 x 384; about 150 MB at the default limit of 100,000 chunks), plus the texts (7 MB on that
index) and their metadata as Python objects.

Stores know nothing of settings: the limit is passed in (hopgraph's `exact_search_max_chunks`). The
settings read this module's default, so chromadb is imported where a read needs it: at the top it would
cost every `hopgraph` command, even `--help`, a second of start-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stores.chunking import Chunk
from stores.files import batches

EXACT_SEARCH_MAX_CHUNKS = 100_000
"""Default: indexes of at most this many chunks are searched exactly in memory (about 150 MB of vectors at
384 dimensions); larger ones, or any with the limit 0, through Chroma's HNSW."""

ChunkFromChroma = Callable[[str, str, dict[str, Any]], Chunk]


@dataclass(frozen=True)
class _Held:
    matrix: np.ndarray  # (chunks, dimension) float32, the stored vectors as stored; read-only
    inverse_norms: np.ndarray  # (chunks,) float32: cosine = (unit query . row) * inverse norm
    chunks: list[Chunk]  # in index order, shared by every hit (do not mutate)


class ExactVectors:
    """The stored vectors and chunks of one build in index order, loaded from its Chroma collection on first
    use (once, whichever thread comes first), then searched with a matrix product.

    `ids` is the build's chunk order (BM25's, i.e. corpus order); row i of everything is chunk `ids[i]`, and
    equal scores rank the earlier row first, so a search returns the same chunks in the same order in every
    process. The stored vectors are kept as stored (a hit's vector equals Chroma's); cosine similarity
    divides by their norms, so vectors stored unnormalised rank as Chroma's cosine space ranks them.
    """

    def __init__(
        self,
        collection: Any,
        ids: Sequence[str],
        row: Mapping[str, int],
        dimension: int,
        to_chunk: ChunkFromChroma,
    ) -> None:
        self.ids = ids
        self.row = row  # chunk id -> its row in `ids`: the index's own map, shared, not rebuilt
        self._collection = collection
        self._dimension = dimension
        self._to_chunk = to_chunk
        self._held: _Held | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def loaded(self) -> bool:
        return self._held is not None

    def _load(self) -> _Held:
        held = self._held
        if held is not None:
            return held
        with self._lock:
            if self._held is None:
                self._held = self._read()
            return self._held

    def _read(self) -> _Held:
        """Every chunk's vector, text and metadata, in batches Chroma accepts, placed by row."""
        from stores.chroma import GET_BATCH

        matrix = np.empty((len(self.ids), self._dimension), dtype=np.float32)
        chunks: list[Chunk | None] = [None] * len(self.ids)
        for batch in batches(self.ids, GET_BATCH):
            result = self._collection.get(ids=list(batch), include=["embeddings", "documents", "metadatas"])
            rows = [self.row[chunk_id] for chunk_id in result["ids"]]
            if rows:
                matrix[rows] = np.asarray(result["embeddings"], dtype=np.float32).reshape(len(rows), -1)
            for row, chunk_id, text, meta in zip(
                rows, result["ids"], result["documents"], result["metadatas"], strict=True
            ):
                chunks[row] = self._to_chunk(chunk_id, text, dict(meta))
        missing = [self.ids[row] for row, chunk in enumerate(chunks) if chunk is None]
        if missing:
            raise KeyError(f"the Chroma collection lacks {len(missing)} indexed chunk(s), e.g. {missing[:5]}")
        # Column-major, so the search's product reads `matrix.T` as a C-contiguous (dimension, chunks)
        # operand: OpenBLAS took 1.3 ms for 5 query rows x 6,532 chunks with the row-major matrix
        # transposed, 0.5 ms this way (same float32 products, no second copy held).
        matrix = np.asfortranarray(matrix)
        matrix.flags.writeable = False  # hits hand out views of its rows
        norms = np.linalg.norm(matrix, axis=1)
        inverse = (1.0 / np.maximum(norms, 1e-12)).astype(np.float32)
        return _Held(matrix, inverse, [chunk for chunk in chunks if chunk is not None])

    def chunk(self, row: int) -> Chunk:
        return self._load().chunks[row]

    def vector(self, row: int) -> np.ndarray:
        """The stored vector of `row` (a read-only view)."""
        return self._load().matrix[row]

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The stored vectors of `rows`, a new float32 matrix."""
        return self._load().matrix[list(rows)]

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The `k` rows nearest (cosine) to each query row, as (row, similarity), best first.

        `mask` (one bool per chunk) keeps only the chunks it marks; fewer than `k` marked give fewer hits.
        Equal similarities rank the lower row first: the result depends on the vectors only.
        """
        held = self._load()
        queries = np.asarray(queries, dtype=np.float32)
        units = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        scores = (units @ held.matrix.T) * held.inverse_norms
        available = len(self.ids)
        if mask is not None:
            scores[:, ~mask] = -np.inf
            available = int(np.count_nonzero(mask))
        k = min(k, available)
        if k <= 0:
            return [[] for _ in range(len(queries))]
        # The k-th best similarity of each row; every row scoring at least that is a candidate (k of them,
        # more only on ties), then candidates are ordered by similarity, ties by row. np.partition finds the
        # same value as torch's top-k, faster with numpy 2.4 (0.05 against 0.07 ms for 5 x 6,532, 0.6
        # against 1.2 ms for 25 rows), and a first query no longer pays torch's import.
        kth = np.partition(scores, -k, axis=1)[:, -k]
        found = []
        for row_scores, threshold in zip(scores, kth, strict=True):
            candidates = np.flatnonzero(row_scores >= threshold)
            order = candidates[np.lexsort((candidates, -row_scores[candidates]))][:k]
            found.append([(int(row), float(row_scores[row])) for row in order])
        return found
