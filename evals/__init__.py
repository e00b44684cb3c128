"""Measuring hopgraph's methods on public multi-hop benchmarks.

`datasets` reads each benchmark in its original format into one shape (questions, gold answers, gold
evidence located in the corpus); `metrics` scores answers and retrieved evidence; `stats` puts bootstrap
confidence intervals on per-question scores, because dev slices are small enough for noise to matter;
`runner` runs methods over a benchmark into a resumable results.jsonl. `evals.report.write_report`
turns that file into report.md and plots; it is not re-exported here because it imports matplotlib.
"""

from evals.datasets import (
    DATASETS,
    Benchmark,
    DatasetError,
    GoldEvidence,
    QAExample,
    load_benchmark,
)
from evals.metrics import (
    RetrievedSpan,
    evidence_found,
    exact_match,
    full_at_k,
    hits_at_k,
    hop_prf,
    macro_by_hop,
    normalize_answer,
    recall_at_k,
    token_f1,
)
from evals.runner import MethodScore, ResultsError, run, score
from evals.stats import bootstrap_ci, paired_difference

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
    "hits_at_k",
    "hop_prf",
    "load_benchmark",
    "macro_by_hop",
    "normalize_answer",
    "paired_difference",
    "recall_at_k",
    "run",
    "score",
    "token_f1",
]
