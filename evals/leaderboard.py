"""Across datasets: which method helps over a baseline, and where each method loses its answers.

Pure functions of scored result records grouped as dataset -> method -> records (evals.report.group_results),
so `hopgraph report` can pool run folders of different datasets into one comparison.

- The **pooled** difference of a method against the baseline is taken over the questions both answered in
  every dataset, as one set of paired questions (four 50-question sets weigh as 200), with a bootstrap
  interval resampled within each dataset and the test that fits the metric over all pairs (exact McNemar
  for EM, sign-flip permutation for F1), Holm-corrected over the leaderboard's comparisons.
- **Error attribution** puts every answered question in exactly one cell: answer right or wrong (EM) by
  how much of its gold evidence the method read before answering (all, part, none; evals.metrics' rules
  over everything read). Questions without gold evidence (MultiHop-RAG's null queries) have cells of their
  own rather than being dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.stats import holm, paired_test, pooled_paired_difference

Record = dict[str, Any]
Grouped = Mapping[str, Mapping[str, Sequence[Record]]]

#: The method every other is compared with in the pooled column (`--baseline`).
DEFAULT_BASELINE = "naive"
#: The cells of error attribution, in display order: (name, what it means).
ERROR_CELLS = (
    ("right, all evidence read", "answered right having read all its gold evidence"),
    ("right, part read", "answered right having read only part of its gold evidence"),
    ("right without the evidence", "answered right having read none of its gold evidence"),
    ("lost in reading", "all the gold evidence was read, the answer is still wrong"),
    ("lost in retrieval, partly", "part of the gold evidence was read, the answer is wrong"),
    ("lost in retrieval", "none of the gold evidence was read, the answer is wrong"),
    ("no gold evidence, right", "a question without gold evidence (a null query), answered right"),
    ("no gold evidence, wrong", "a question without gold evidence (a null query), answered wrong"),
)
#: Metrics of the pooled comparison: (key, name, binary).
POOLED_METRICS = (("em", "EM", True), ("f1", "F1", False))


def error_cell(record: Record) -> str:
    """The one error-attribution cell of a scored, answered record."""
    metrics = record["metrics"]
    right = metrics["em"] == 1.0
    if metrics["recall@read"] is None:
        return "no gold evidence, right" if right else "no gold evidence, wrong"
    if metrics["full@read"] == 1.0:
        return "right, all evidence read" if right else "lost in reading"
    if metrics["recall@read"] == 0.0:
        return "right without the evidence" if right else "lost in retrieval"
    return "right, part read" if right else "lost in retrieval, partly"


def error_counts(answered: Grouped) -> dict[str, dict[str, Counter[str]]]:
    """dataset -> method -> how many of its answered questions fall in each cell."""
    return {
        dataset: {method: Counter(error_cell(r) for r in records) for method, records in methods.items()}
        for dataset, methods in answered.items()
    }


@dataclass(frozen=True)
class Pooled:
    """A method against the baseline on one metric, over the questions both answered in every dataset."""

    method: str
    metric: str
    mean: float
    low: float
    high: float
    n: int
    p: float
    p_holm: float = float("nan")


def aligned_scores(a: Sequence[Record], b: Sequence[Record], key: str) -> tuple[list[Any], list[Any]]:
    """Two methods' `key` scores on the questions both answered, in a's order (the pairs every paired
    comparison is made on)."""
    by_id = {r["question_id"]: r for r in b}
    shared = [(r, by_id[r["question_id"]]) for r in a if r["question_id"] in by_id]
    return [x["metrics"][key] for x, _ in shared], [y["metrics"][key] for _, y in shared]


def per_dataset_difference(
    answered: Grouped, method: str, baseline: str, key: str
) -> dict[str, tuple[Sequence[Any], Sequence[Any]]]:
    """dataset -> (method's, baseline's) aligned scores, for the datasets where both ran."""
    return {
        dataset: aligned_scores(methods[method], methods[baseline], key)
        for dataset, methods in answered.items()
        if method in methods and baseline in methods
    }


def pooled_differences(answered: Grouped, baseline: str) -> list[Pooled]:
    """Every other method against `baseline` on each pooled metric, Holm-corrected together; [] when the
    baseline ran nowhere."""
    methods = list(dict.fromkeys(m for by_method in answered.values() for m in by_method))
    rows: list[Pooled] = []
    for method in (m for m in methods if m != baseline):
        for key, name, binary in POOLED_METRICS:
            strata = list(per_dataset_difference(answered, method, baseline, key).values())
            if not strata:
                continue
            xs = [x for a, _ in strata for x in a]
            ys = [y for _, b in strata for y in b]
            n = sum(x is not None and y is not None for x, y in zip(xs, ys, strict=True))
            mean, low, high = pooled_paired_difference(strata)
            p = paired_test(xs, ys, binary=binary) if n else float("nan")
            rows.append(Pooled(method, name, mean, low, high, n, p))
    adjusted = holm([row.p for row in rows])
    return [replace(row, p_holm=p) for row, p in zip(rows, adjusted, strict=True)]
