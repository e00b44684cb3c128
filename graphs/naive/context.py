"""NaiveRAG's parameters: its `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import MetadataFilterContext, parameter


@dataclass(kw_only=True)
class NaiveContext(MetadataFilterContext):
    """NaiveRAG's parameters: the shared retrieval's, the metadata filter's switches, and ten passages read.

    Ten, not five: on questions the evaluation tables do not answer (70 MuSiQue, 40 HotpotQA dev, written by
    `benchmarks.disjoint_questions`), the embedded 1.5B reader answered more of them from ten passages than
    from five (EM +7.1 and +12.5 points, F1 +7.7 and +12.5), for about twice the prompt tokens
    (docs/evaluation.md, "How many passages NaiveRAG reads"). A multi-hop question's second paragraph is
    often past the fifth; ChainRAG's paper sets a 3,000-word limit in all its experiments, and ten
    256-token chunks are about 2,000."""

    top_k: int = parameter(
        10,
        "Passages retrieved for the question and read by the answer (10: about 2,000 words of 256-token "
        "chunks; 5 is the plain dense peer's).",
        minimum=1,
        maximum=100,
    )
