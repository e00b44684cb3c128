"""Confidence intervals for per-question scores.

Dev slices here are small (40 to 1,757 questions), so a difference of a few points between two methods
can be noise; every reported mean carries a bootstrap interval, and comparisons between methods use the
paired bootstrap over the questions both answered, which removes the variance due to question difficulty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Resampled means are computed this many elements at a time, so memory stays bounded for large inputs.
_BATCH_ELEMENTS = 4_000_000


def bootstrap_ci(
    values: Sequence[float | None], n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(mean, low, high): the sample mean and its percentile-bootstrap confidence interval.

    None values (questions a metric does not apply to) are dropped; with nothing left the result is
    (nan, nan, nan). The same seed gives the same interval, so reports are reproducible.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    data = np.asarray([v for v in values if v is not None], dtype=np.float64)
    n = data.size
    if n == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    rows_per_batch = max(1, _BATCH_ELEMENTS // n)
    means = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows_per_batch):
        rows = min(rows_per_batch, n_resamples - start)
        means[start : start + rows] = data[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(data.mean()), float(low), float(high)


def paired_difference(
    a: Sequence[float | None],
    b: Sequence[float | None],
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean of a - b, low, high) over the questions scored in both, by the paired bootstrap.

    `a` and `b` are aligned per question; a pair with None on either side is dropped, so each method is
    compared only where both have a score. Resampling whole pairs (equivalently, the per-question
    differences) keeps each question's difficulty on both sides of the difference.
    """
    if len(a) != len(b):
        raise ValueError(f"paired scores must be aligned: {len(a)} values against {len(b)}")
    diffs = [x - y for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return bootstrap_ci(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)
