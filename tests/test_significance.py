"""Significance tests: exact McNemar, the paired permutation test and Holm's correction, against p-values
computed by hand or from the binomial formula written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals import stats
from evals.stats import holm, mcnemar_exact, paired_difference, paired_permutation, paired_test


def binomial_two_sided(k: int, n: int) -> float:
    """2 * P(X <= k) for X ~ Binomial(n, 1/2), capped at 1: the sign-test p-value, written out."""
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def discordant(wins_b: int, wins_a: int, ties: int = 0) -> tuple[list[float], list[float]]:
    """Paired binary scores with `wins_b` questions only b answers, `wins_a` only a answers, `ties` both."""
    a = [0.0] * wins_b + [1.0] * wins_a + [1.0] * ties
    b = [1.0] * wins_b + [0.0] * wins_a + [1.0] * ties
    return a, b


def test_mcnemar_known_values() -> None:
    # 4 against 0: 2 * (1/2)**4
    assert mcnemar_exact(*discordant(0, 4, ties=16)) == 0.125
    assert mcnemar_exact(*discordant(4, 0)) == 0.125
    # one discordant pair: 2 * 1/2, capped at 1
    assert mcnemar_exact([1.0], [0.0]) == 1.0
    # 7 against 17: 2 * P(X <= 7 | n = 24) = 2 * 536155 / 2**24
    assert mcnemar_exact(*discordant(7, 17)) == pytest.approx(0.0639, abs=5e-4)
    assert mcnemar_exact(*discordant(17, 7)) == pytest.approx(2 * 536155 / 2**24, rel=1e-12)
    # 0 against 20
    assert mcnemar_exact(*discordant(0, 20)) == pytest.approx(2 * 0.5**20, rel=1e-12)
    # equal counts: the tail reaches past the middle, so the doubled probability is capped at 1
    assert mcnemar_exact(*discordant(5, 5)) == 1.0


def test_mcnemar_large_counts_do_not_overflow() -> None:
    # 1,400 against 1,600 discordant: 2**3000 is far beyond a float, the exact integer tail is not
    p = mcnemar_exact(*discordant(1400, 1600))
    assert p == pytest.approx(binomial_two_sided(1400, 3000), rel=1e-12)
    # normal approximation: z = 100 / sqrt(3000 / 4) = 3.65, two-sided p about 2.6e-4
    assert 2e-4 < p < 3.5e-4
    # so lopsided the tail underflows: still a probability, not an error
    assert mcnemar_exact(*discordant(0, 3000)) == 0.0


def test_mcnemar_ignores_ties_and_drops_missing_pairs() -> None:
    assert mcnemar_exact([1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]) == 1.0
    assert mcnemar_exact([], []) == 1.0
    # the None pairs would otherwise add two discordant pairs in a's favour
    a = [1.0, 1.0, 1.0, 1.0, 1.0, None]
    b = [0.0, 0.0, 0.0, 0.0, None, 0.0]
    assert mcnemar_exact(a, b) == 0.125


def test_mcnemar_rejects_misaligned_and_non_binary_scores() -> None:
    with pytest.raises(ValueError, match="aligned"):
        mcnemar_exact([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"0\.5.*paired_permutation"):
        mcnemar_exact([1.0, 0.5], [0.0, 1.0])


def test_permutation_exact_known_values() -> None:
    # 4 differences of +1 among 20: only the all-plus and all-minus of the 2**4 flips are as extreme
    assert paired_permutation([1.0] * 4 + [0.0] * 16, [0.0] * 20) == 0.125
    assert paired_permutation([0.3], [0.0]) == 1.0
    # differences 0.3, 0.1, -0.2 (observed sum 0.2): flip sums ±0.6, ±0.2, ±0.4, 0, 0, so 6 of 8
    assert paired_permutation([0.3, 0.1, -0.2], [0.0, 0.0, 0.0]) == 0.75
    # 16 differences of +1: 2 of 2**16
    assert paired_permutation([1.0] * 16, [0.0] * 16) == 2 / 2**16
    # differences of equal size reduce to the sign test: 12 up, 4 down gives 2 * P(X <= 4 | n = 16)
    a, b = discordant(4, 12, ties=4)
    assert paired_permutation(a, b) == pytest.approx(binomial_two_sided(4, 16), rel=1e-12)
    assert binomial_two_sided(4, 16) == 2 * 2517 / 2**16


def test_permutation_rounding_does_not_break_ties() -> None:
    # differences 0.1, 0.2, -0.1 (observed sum 0.2): flip sums ±0.2, ±0.4, ±0.2, 0, 0, so 6 of 8; in
    # floating point the observed sum is 0.20000000000000004 but 0.1 - 0.2 - 0.1 is -0.2 exactly, so
    # without a tolerance that tie would be missed and the p-value would be 0.5
    assert paired_permutation([0.1, 0.2, -0.1], [0.0, 0.0, 0.0]) == 0.75


def test_permutation_without_differences() -> None:
    assert paired_permutation([], []) == 1.0
    assert paired_permutation([0.4, 0.7], [0.4, 0.7]) == 1.0
    assert paired_permutation([0.4, None], [None, 0.7]) == 1.0


def test_permutation_monte_carlo_beyond_sixteen_differences() -> None:
    # 17 differences of +1: exactly 2 / 2**17 = 1.5e-5, but the estimate can be no lower than 1 / 10,001
    p = paired_permutation([1.0] * 17, [0.0] * 17)
    assert 1 / 10_001 <= p < 0.001
    assert p > 2 / 2**17


def test_permutation_detects_a_large_real_difference() -> None:
    rng = np.random.default_rng(2)
    b = rng.random(50)
    a = b + 0.3 + rng.normal(0.0, 0.02, 50)
    assert (a > b).all()
    assert paired_permutation(a.tolist(), b.tolist()) < 0.001


def test_permutation_monte_carlo_is_reproducible() -> None:
    rng = np.random.default_rng(4)
    b = rng.random(40)
    a = b + rng.normal(0.03, 0.15, 40)
    p = paired_permutation(a.tolist(), b.tolist(), seed=3)
    assert p == paired_permutation(a.tolist(), b.tolist(), seed=3)
    assert p != paired_permutation(a.tolist(), b.tolist(), seed=4)
    assert 0.0 < p < 1.0


def test_permutation_monte_carlo_agrees_with_the_exact_p_value(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = discordant(4, 12, ties=4)
    exact = binomial_two_sided(4, 16)  # 0.0768
    monkeypatch.setattr(stats, "_EXACT_MAX_NONZERO", 0)  # the same 16 differences, by random flips
    assert paired_permutation(a, b) == pytest.approx(exact, abs=0.02)
    # with 10,001 resamples spread over many batches: same estimate, bounded memory
    monkeypatch.setattr(stats, "_BATCH_ELEMENTS", 1000)
    assert paired_permutation(a, b, n_resamples=10_001) == pytest.approx(exact, abs=0.02)


def test_permutation_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="aligned"):
        paired_permutation([0.5], [0.5, 0.2])
    with pytest.raises(ValueError, match="n_resamples"):
        paired_permutation([0.5], [0.2], n_resamples=0)


def test_bootstrap_interval_excludes_zero_where_the_sign_test_does_not() -> None:
    # why the decision uses a test: 4 wins, 0 losses in 20 questions
    a, b = discordant(0, 4, ties=16)
    diff, low, _ = paired_difference(a, b)
    assert diff == 0.2
    assert low > 0.0  # only (16/20)**20 = 1.2% of resamples miss every win
    assert mcnemar_exact(a, b) == 0.125
    assert paired_test(a, b, binary=True) == 0.125
    assert paired_test(a, b, binary=False) == 0.125


def test_paired_test_chooses_by_metric_kind() -> None:
    with pytest.raises(ValueError, match="paired_permutation"):
        paired_test([0.3, 0.1, -0.2], [0.0, 0.0, 0.0], binary=True)
    assert paired_test([0.3, 0.1, -0.2], [0.0, 0.0, 0.0], binary=False) == 0.75


def test_holm_known_values() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> cumulative max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.03]) == [0.03]
    assert holm([]) == []
    # capped at 1: 0.4 * 3 = 1.2
    assert holm([0.4, 0.9, 0.6]) == [1.0, 1.0, 1.0]
    # ties: 0.01 * 2 = 0.02 for the first, then max(0.02, 0.01)
    assert holm([0.01, 0.01]) == pytest.approx([0.02, 0.02])


def test_holm_keeps_nan_out_of_the_count() -> None:
    adjusted = holm([0.01, math.nan, 0.04])
    assert adjusted[0] == pytest.approx(0.02)  # m = 2, not 3
    assert math.isnan(adjusted[1])
    assert adjusted[2] == pytest.approx(0.04)
    assert all(math.isnan(p) for p in holm([math.nan, math.nan]))


def test_holm_rejects_values_that_are_not_probabilities() -> None:
    with pytest.raises(ValueError):
        holm([0.2, 1.5])
    with pytest.raises(ValueError):
        holm([-0.1])
