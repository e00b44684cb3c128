"""SS edges: each sentence's most similar others by embedding, computed block by block.

The all-pairs similarity is the build's largest computation; it lives alone so its memory bound and its
tie-breaking (which make the graph independent of partition order) are stated in one place.
"""

from __future__ import annotations

import numpy as np

from stores.protocols import Progress
from stores.sentence_graph.csr import csr

# Bytes of one block of the similarity matrix (rows x all sentences, float32); partition copies it once.
_SIMILARITY_BLOCK_BYTES = 1 << 27


def similar_sentences(vectors: np.ndarray, m: int, report: Progress) -> tuple[np.ndarray, np.ndarray]:
    """SS edges as symmetric CSR: each sentence's top-m most similar others, in either direction.

    The similarity matrix is computed a block of rows at a time (never all pairs in memory, never a Python
    loop over pairs). Per row, `np.partition` finds the m-th best score and a comparison picks everything
    at least that good, which is cheaper than `argpartition`'s index shuffling; ties are then cut to m,
    best first and lower sentence number first, so the graph does not depend on partition order.
    """
    n = len(vectors)
    m = min(m, n - 1)
    if m <= 0:
        return np.zeros(n + 1, dtype=np.int64), np.empty(0, dtype=np.int32)
    block = max(1, _SIMILARITY_BLOCK_BYTES // (4 * n))
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for start in range(0, n, block):
        scores = vectors[start : start + block] @ vectors.T
        local = np.arange(len(scores))
        scores[local, start + local] = -np.inf
        kth = np.partition(scores, n - m, axis=1)[:, n - m]
        rows, cols = np.nonzero(scores >= kth[:, None])
        order = np.lexsort((cols, -scores[rows, cols], rows))
        rows, cols = rows[order], cols[order]
        first = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=len(scores)))[:-1]))
        keep = np.arange(len(rows)) - first[rows] < m
        sources.append(rows[keep] + start)
        targets.append(cols[keep])
        report("similarity", min(start + block, n), n)
    return _symmetric_csr(np.concatenate(sources), np.concatenate(targets), n)


def _symmetric_csr(sources: np.ndarray, targets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, sorted indices per row) of the undirected union of the directed pairs given."""
    keys = np.unique(
        np.concatenate((sources.astype(np.int64) * n + targets, targets.astype(np.int64) * n + sources))
    )
    return csr(keys // n, keys % n, n)
