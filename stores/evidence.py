"""A retrieved passage as every layer above the stores sees it: prompts format it, nodes gather it, the
evaluation scores it. It lives here, beside the spans it is made from, so prompts and evals can read it
without importing the steps that produce it."""

from __future__ import annotations

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from stores.documents import Span


class Evidence(TypedDict):
    """One retrieved passage, traceable to the corpus.

    `hop` means the same for every method: the retrieval round that first found the passage, 1 being the
    first retrieval for the question. Iterative methods (IR-CoT, Iter-RetGen, ReSP, TreeHop) count their
    rounds. Methods that split the question count a sub-question's retrieval as the round of its 1-based
    position, whether the sub-questions run one after another (ChainRAG: the seeds and every graph
    expansion of sub-question i are hop i) or in parallel `Send` branches (query decomposition). Found
    again later, a passage keeps its smallest hop (`merge_evidence`). Hop-conditioned metrics read it.

    No method needs a separate per-sub-question field yet: where sub-question and round coincide, hop is
    the grouping (ChainRAG's rewrite step finds an unanswered sub-question's evidence by its hop). A method
    with several retrieval rounds per sub-question would add one.
    """

    id: str
    doc_id: str
    title: str
    text: str
    score: float
    char_start: int | None
    char_end: int | None
    hop: int


def evidence_from(span: Span, score: float, hop: int) -> Evidence:
    """Evidence for a retrieved chunk or sentence, keeping its corpus ids and character span."""
    return Evidence(
        id=span.id,
        doc_id=span.doc_id,
        title=span.title,
        text=span.text,
        score=round(float(score), 6),
        char_start=span.char_start,
        char_end=span.char_end,
        hop=hop,
    )
