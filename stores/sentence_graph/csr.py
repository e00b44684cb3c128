"""Compressed sparse rows: how every edge list of the graph is stored and read back.

Hub entities sit in thousands of sentences, so edges are never materialised pair by pair; the build and
the reader share these two helpers for the CSR arrays they write and query.
"""

from __future__ import annotations

import numpy as np


def csr(rows: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of (row, value) pairs already grouped by row."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, values.astype(np.int32)


def union_rows(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The sorted union of the CSR rows `rows`."""
    if not len(rows):
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate([indices[indptr[row] : indptr[row + 1]] for row in rows.tolist()]))
