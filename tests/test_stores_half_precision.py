"""HalfPrecisionTop: a float16 pass and a float64 shortlist give exactly the float64 top n."""

from __future__ import annotations

import numpy as np
import torch

from stores.half_precision import HalfPrecisionTop, half_product_error


def exact_top(matrix: np.ndarray, query: np.ndarray, n: int) -> list[int]:
    scores = (matrix.astype(np.float64) * query.astype(np.float64)).sum(axis=1)
    return np.lexsort((np.arange(len(scores)), -scores))[:n].tolist()


def unit_rows(rows: int, dimension: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_torch_accumulates_half_products_in_float32() -> None:
    """The error bound assumes it: summed in float16, 4,096 ones would stop at 2,048 (2,048 + 1 rounds
    back to 2,048), in float32 they reach 4,096, which float16 holds exactly."""
    ones = torch.ones(3, 4096, dtype=torch.float16)
    assert torch.mv(ones, torch.ones(4096, dtype=torch.float16)).tolist() == [4096.0] * 3


def test_the_error_bound_holds_for_every_row() -> None:
    matrix, queries = unit_rows(20_000, 384, seed=1), unit_rows(20, 384, seed=2)
    half = torch.from_numpy(matrix).to(torch.float16)
    bound = half_product_error(384, 1.0, 1.0)
    for query in queries:
        approximate = torch.mv(half, torch.from_numpy(query).to(torch.float16)).double().numpy()
        exact = matrix.astype(np.float64) @ query.astype(np.float64)
        assert np.abs(approximate - exact).max() <= bound
    assert bound < 0.002  # a margin of a few thousandths: a shortlist barely longer than n


def test_top_rows_are_the_exact_float64_top_rows_where_float16_cannot_tell() -> None:
    """Rows closer to each other than float16 resolves (a cluster around the query) still come out in
    their float64 order, and duplicated rows in row order."""
    rng = np.random.default_rng(3)
    query = unit_rows(1, 64, seed=4)[0]
    noise = unit_rows(5_000, 64, seed=5)
    close = query + 1e-4 * rng.standard_normal((300, 64)).astype(np.float32)
    matrix = np.concatenate([noise, close, close[:50]])  # the last 50 repeat rows 5,000..5,049
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    half_scores = torch.mv(torch.from_numpy(matrix).half(), torch.from_numpy(query).half()).numpy()
    assert len(np.unique(half_scores[5_000:])) < 50  # float16 alone cannot order the cluster
    top = HalfPrecisionTop(matrix)
    for n in (1, 10, 100, 349, 350):
        rows, scores = top.top(query, n)
        assert rows.tolist() == exact_top(matrix, query, n)
        assert scores.tolist() == sorted(scores.tolist(), reverse=True)
        duplicated = [row for row in rows.tolist() if row >= 5_300]
        assert all(row - 5_300 + 5_000 in rows.tolist() for row in duplicated)
    for query in unit_rows(10, 64, seed=6):
        assert top.top(query, 20)[0].tolist() == exact_top(matrix, query, 20)


def test_asking_for_more_rows_than_held_or_none() -> None:
    matrix = unit_rows(7, 16, seed=7)
    query = matrix[2]
    rows, scores = HalfPrecisionTop(matrix).top(query, 100)
    assert rows.tolist() == exact_top(matrix, query, 7) and rows[0] == 2
    assert abs(scores[0] - 1.0) < 1e-6  # a unit row with itself
    assert HalfPrecisionTop(matrix).top(query, 0)[0].size == 0
    assert HalfPrecisionTop(np.empty((0, 16), dtype=np.float32)).top(query, 5)[0].size == 0
