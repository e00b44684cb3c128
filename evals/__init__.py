"""Measuring hopgraph's methods on public multi-hop benchmarks.

`datasets` reads each benchmark in its original format into one shape (questions, gold answers, gold
evidence located in the corpus); `metrics` scores answers and retrieved evidence; `stats` puts bootstrap
confidence intervals and significance tests on per-question scores, because dev slices are small enough
for noise to matter; `runner` runs methods over a benchmark into a resumable results.jsonl.
`evals.report.write_report` turns that file into report.md and plots; it is not re-exported here because
it imports matplotlib.
"""

from evals.datasets import (
    DATASETS,
    Benchmark,
    DatasetError,
    QAExample,
    load_benchmark,
)
from evals.gold import GoldEvidence
from evals.metrics import (
    RetrievedSpan,
    evidence_found,
    exact_match,
    full_at_k,
    full_within_chars,
    gold_coverage,
    hop_prf,
    macro_by_hop,
    multihop_rag_official,
    normalize_answer,
    recall_at_k,
    recall_within_chars,
    token_f1,
)
from evals.runner import MethodScore, ResultsError, run, score
from evals.stats import bootstrap_ci, holm, mcnemar_exact, paired_difference, paired_permutation

__all__ = [
    "DATASETS",
    "Benchmark",
    "DatasetError",
    "GoldEvidence",
    "MethodScore",
    "QAExample",
    "ResultsError",
    "RetrievedSpan",
    "bootstrap_ci",
    "evidence_found",
    "exact_match",
    "full_at_k",
    "full_within_chars",
    "gold_coverage",
    "holm",
    "hop_prf",
    "load_benchmark",
    "macro_by_hop",
    "mcnemar_exact",
    "multihop_rag_official",
    "normalize_answer",
    "paired_difference",
    "paired_permutation",
    "recall_at_k",
    "recall_within_chars",
    "run",
    "score",
    "token_f1",
]
