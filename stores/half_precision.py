"""Exact top-n by dot product over a large float32 matrix, reading a float16 copy first.

ChainRAG's seed pre-filter scores every sentence of the graph against the query; this makes that product
read half the bytes and still return exactly the rows the float32 matrix ranks highest. torch is imported
where a product is made: every `hopgraph` command would otherwise pay its ~1.7 s import to start.
"""

from __future__ import annotations

import numpy as np

HALF_UNIT_ROUNDOFF = 2.0**-11
"""float16 keeps 11 significant bits: rounding a number to it changes it by at most this fraction."""
FLOAT32_UNIT_ROUNDOFF = 2.0**-24


def half_product_error(dimension: int, query_norm: float, row_norm: float) -> float:
    """An upper bound on |q . v - (q . v in float16)| for vectors of these norms, as torch computes it.

    Rounding q and v to float16 moves each product q_i v_i by at most (2u + u^2)|q_i v_i| (u = 2^-11),
    and sum |q_i v_i| <= |q| |v| (Cauchy-Schwarz); torch accumulates float16 products in float32 on the
    CPU (tests/test_stores_half_precision.py checks it), adding at most dimension x 2^-24 of that sum,
    and rounds the result to float16 (u |q . v| more). Components below float16's smallest normal
    number lose absolute, not relative, precision: at most 2^-25 each, so 2^-25 x sum(|q_i| + |v_i|),
    which is at most 2^-25 x sqrt(dimension) x (|q| + |v|).
    """
    scale = query_norm * row_norm
    unit = HALF_UNIT_ROUNDOFF
    relative = (3 * unit + unit * unit + dimension * FLOAT32_UNIT_ROUNDOFF) * scale
    subnormal = 2.0**-25 * np.sqrt(dimension) * (query_norm + row_norm)
    return float(relative + subnormal)


class HalfPrecisionTop:
    """The exact top `n` rows of a float32 matrix by dot product with a query, reading half its bytes.

    A matrix-vector product over tens of thousands of rows is bound by memory bandwidth: ChainRAG's
    pre-filter read all 49,885 sentence vectors of MultiHop-RAG (77 MB of float32) for every query. A
    float16 copy of the matrix halves what is read. Its scores are off by at most `half_product_error`
    (e), so the true top n all score, in float16, within 2e of the n-th best float16 score (if the true
    n-th best is T, that score is at most T + e and each of them at least T - e). Those few rows (a
    shortlist a little longer than n) are scored again in float64, and the n best of those are the
    result. Scores are defined by that float64 sum,
    row by row, so they do not depend on which rows were shortlisted, and equal scores rank the lower
    row first: the same rows, in the same order, in every process.

    The float16 copy costs 2 bytes per dimension per row (38 MB on that graph), beside the float32
    matrix, which stays the one callers read vectors from.
    """

    def __init__(self, matrix: np.ndarray) -> None:
        import torch

        self._matrix = np.asarray(matrix, dtype=np.float32)
        self._half = torch.from_numpy(np.ascontiguousarray(self._matrix)).to(torch.float16)
        norms = np.linalg.norm(self._matrix, axis=1)
        self._max_norm = float(norms.max()) if len(norms) else 0.0

    def top(self, query: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the `n` highest dot products with `query`, best first (ties: lower row first), and
        those products (float64). Fewer than `n` rows give all of them."""
        query = np.asarray(query, dtype=np.float32)
        n = min(n, len(self._matrix))
        if n <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        import torch

        approximate = torch.mv(self._half, torch.from_numpy(query).to(torch.float16)).float()
        nth = float(torch.topk(approximate, n).values[-1])
        margin = 2 * half_product_error(len(query), float(np.linalg.norm(query)), self._max_norm)
        # rounded down to float32, the comparison's type, so no row within the margin is left out
        threshold = float(np.nextafter(np.float32(nth - margin), np.float32(-np.inf)))
        shortlist = torch.nonzero(approximate >= threshold).flatten().numpy()
        # Each row's own sum, not a BLAS product: a BLAS kernel's blocking depends on how many rows it is
        # given, and gave two identical sentence vectors different float64 scores, which reordered ties.
        exact = (self._matrix[shortlist].astype(np.float64) * query.astype(np.float64)).sum(axis=1)
        order = np.lexsort((shortlist, -exact))[:n]
        return shortlist[order], exact[order]
