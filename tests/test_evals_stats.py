"""Bootstrap confidence intervals: values, determinism and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals.stats import bootstrap_ci, paired_difference


def test_interval_contains_the_mean_and_is_deterministic() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.25, 1.0]
    mean, low, high = bootstrap_ci(values)
    assert mean == pytest.approx(sum(values) / len(values))
    assert low < mean < high
    assert bootstrap_ci(values) == (mean, low, high)
    assert bootstrap_ci(values, seed=1) != (mean, low, high)


def test_interval_width_matches_the_normal_approximation() -> None:
    values = np.random.default_rng(7).normal(0.0, 1.0, 400).tolist()
    mean, low, high = bootstrap_ci(values)
    # 95% normal interval: 2 * 1.96 / sqrt(400) = 0.196
    assert 0.16 < high - low < 0.23
    assert low < mean < high


def test_large_inputs_resample_in_batches_with_the_same_result() -> None:
    values = np.random.default_rng(3).random(5000).tolist()  # 2000 x 5000 draws: several batches
    first = bootstrap_ci(values, seed=11)
    assert first == bootstrap_ci(values, seed=11)
    assert first[1] < first[0] < first[2]


def test_none_dropped_empty_and_constant() -> None:
    assert bootstrap_ci([1.0, None, 3.0])[0] == 2.0
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([None, None]))
    assert bootstrap_ci([0.7, 0.7, 0.7]) == pytest.approx((0.7, 0.7, 0.7))
    assert bootstrap_ci([2.0]) == (2.0, 2.0, 2.0)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], confidence=1.0)


def test_paired_difference() -> None:
    a = [0.1, 0.5, 0.9, 1.0, 0.0]
    assert paired_difference(a, list(a)) == (0.0, 0.0, 0.0)
    shifted = paired_difference([x + 0.25 for x in a], a)
    assert shifted == pytest.approx((0.25, 0.25, 0.25))
    # pairs with a None on either side are dropped: differences 1 and 2
    assert paired_difference([1.0, None, 3.0, 4.0], [0.0, 5.0, 1.0, None])[0] == 1.5
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 2.0])


def test_paired_interval_is_narrower_than_unpaired_when_questions_vary() -> None:
    rng = np.random.default_rng(5)
    difficulty = rng.random(200)
    a = (difficulty + 0.05 + rng.normal(0, 0.02, 200)).tolist()
    b = difficulty.tolist()
    diff, low, high = paired_difference(a, b)
    assert low < diff < high
    assert low > 0.0  # the consistent 0.05 gain is detected despite the spread in difficulty
    _, a_low, a_high = bootstrap_ci(a)
    assert high - low < (a_high - a_low) / 4
