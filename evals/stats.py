"""Confidence intervals and significance tests for per-question scores.

Dev slices here are small (40 to 1,757 questions), so a difference of a few points between two methods
can be noise. Every reported mean carries a bootstrap interval, and every difference between two methods
carries the paired bootstrap interval over the questions both answered, which removes the variance due to
question difficulty. These intervals are effect sizes, not the decision that two methods differ: a
percentile bootstrap on 20 paired questions marks 4 wins against 0 losses as a difference (only 1.2% of
resamples draw none of the wins, so the 95% interval excludes 0), while the sign test gives p = 0.125.
The "differs" decision therefore uses exact McNemar for binary metrics (EM, Full@k, Hits@k) and a paired
permutation test for continuous ones (F1, Recall, coverage), Holm-corrected over the comparisons a report
makes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Resampled means are computed this many elements at a time, so memory stays bounded for large inputs.
_BATCH_ELEMENTS = 4_000_000
# Up to this many nonzero paired differences, the permutation test enumerates all 2**m sign flips (65,536
# at 16) and its p-value is exact; beyond it, random sign flips estimate the p-value.
_EXACT_MAX_NONZERO = 16
# Resampled statistics within this of the observed one count as ties, so floating-point rounding in a sum
# of the same differences in another order does not decide whether a flip is as extreme as the data.
_TIE_TOLERANCE = 1e-12


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
    diffs = [x - y for x, y in _pairs(a, b)]
    return bootstrap_ci(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)


def mcnemar_exact(a: Sequence[float | None], b: Sequence[float | None]) -> float:
    """Two-sided exact McNemar p-value for paired binary scores (EM, Full@k, Hits@k: 0.0 or 1.0 each).

    Only the discordant questions, those one method gets right and the other wrong, carry evidence; under
    the null hypothesis each is equally likely to go either way, so the smaller count is a Binomial(n, 1/2)
    tail with n discordant pairs. The tail is summed in exact integers, so n in the thousands neither
    overflows nor loses precision. A pair with None on either side is dropped; no discordant pair gives 1.0.
    """
    b01 = b10 = 0
    for x, y in _pairs(a, b):
        for value in (x, y):
            if value not in (0.0, 1.0):
                raise ValueError(
                    f"McNemar's test needs binary scores (0.0 or 1.0), got {value!r}; "
                    "use paired_permutation for continuous scores"
                )
        if x < y:
            b01 += 1
        elif x > y:
            b10 += 1
    n = b01 + b10
    if n == 0:
        return 1.0
    term = total = 1  # C(n, 0), then C(n, i) built up term by term
    for i in range(1, min(b01, b10) + 1):
        term = term * (n - i + 1) // i
        total += term
    return min(1.0, 2 * total / 2**n)


def paired_permutation(
    a: Sequence[float | None], b: Sequence[float | None], n_resamples: int = 10000, seed: int = 0
) -> float:
    """Two-sided paired permutation (sign-flip) p-value for continuous paired scores (F1, Recall, coverage).

    Under the null hypothesis the two methods are exchangeable on each question, so each difference
    a - b is as likely to have either sign; the statistic is |mean difference|. With at most 16 nonzero
    differences all sign assignments are enumerated and the p-value is exact (zero differences flip to
    themselves). Otherwise `n_resamples` random flips from `seed` estimate it as (1 + as extreme) /
    (1 + n_resamples), which is never 0 and stays a valid p-value. A pair with None on either side is
    dropped; no pair, or no nonzero difference, gives 1.0.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    diffs = np.asarray([x - y for x, y in _pairs(a, b)], dtype=np.float64)
    nonzero = diffs[diffs != 0.0]
    m = nonzero.size
    if m == 0:
        return 1.0
    n = diffs.size
    threshold = abs(float(nonzero.sum())) / n - _TIE_TOLERANCE
    if m <= _EXACT_MAX_NONZERO:
        flips = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
        means = (1.0 - 2.0 * flips) @ nonzero / n
        return int(np.count_nonzero(np.abs(means) >= threshold)) / 2**m
    rng = np.random.default_rng(seed)
    rows_per_batch = max(1, _BATCH_ELEMENTS // m)
    extreme = 0
    for start in range(0, n_resamples, rows_per_batch):
        rows = min(rows_per_batch, n_resamples - start)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, m))
        extreme += int(np.count_nonzero(np.abs(signs @ nonzero / n) >= threshold))
    return (1 + extreme) / (1 + n_resamples)


def paired_test(a: Sequence[float | None], b: Sequence[float | None], binary: bool) -> float:
    """The p-value of the test that fits the metric: exact McNemar if binary, else the permutation test."""
    return mcnemar_exact(a, b) if binary else paired_permutation(a, b)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order.

    A report compares many method pairs on many metrics, and at 5% each, some comparisons would differ by
    chance alone; Holm's step-down keeps the chance of any false "differs" at the nominal level, and is
    uniformly more powerful than plain Bonferroni. The i-th smallest of m p-values (from 0) is multiplied
    by m - i, made non-decreasing in that order and capped at 1. A NaN (a comparison that could not be
    made) stays NaN and does not count in m.
    """
    for p in p_values:
        if not (math.isnan(p) or 0.0 <= p <= 1.0):
            raise ValueError(f"p-values must be between 0 and 1, got {p}")
    order = sorted((i for i, p in enumerate(p_values) if not math.isnan(p)), key=lambda i: p_values[i])
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _pairs(a: Sequence[float | None], b: Sequence[float | None]) -> list[tuple[float, float]]:
    """The (a, b) score pairs of the questions scored on both sides, as paired_difference keeps them."""
    if len(a) != len(b):
        raise ValueError(f"paired scores must be aligned: {len(a)} values against {len(b)}")
    return [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]


def pooled_paired_difference(
    strata: Sequence[tuple[Sequence[float | None], Sequence[float | None]]],
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean of a - b over every pair of every stratum, low, high) by a bootstrap resampled within strata.

    A stratum is one dataset's aligned per-question scores of two methods (pairs with None dropped, as in
    `paired_difference`). Resampling within each stratum keeps every dataset's share of the pairs fixed, so
    four 50-question sets weigh as 200 paired questions and no resample is made mostly of one dataset.
    With no pair at all the result is (nan, nan, nan).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    diffs = [np.asarray([x - y for x, y in _pairs(a, b)], dtype=np.float64) for a, b in strata]
    diffs = [d for d in diffs if d.size]
    total = sum(d.size for d in diffs)
    if not total:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    sums = np.zeros(n_resamples, dtype=np.float64)
    for d in diffs:
        rows_per_batch = max(1, _BATCH_ELEMENTS // d.size)
        for start in range(0, n_resamples, rows_per_batch):
            rows = min(rows_per_batch, n_resamples - start)
            sums[start : start + rows] += d[rng.integers(0, d.size, size=(rows, d.size))].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(sums / total, [tail, 1.0 - tail])
    return float(sum(d.sum() for d in diffs) / total), float(low), float(high)
