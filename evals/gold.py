"""Gold evidence: the shape `datasets` produces and `metrics` scores, in a module both can import.

It lives apart from both so that neither imports the other for it: `datasets` locates gold evidence with
`metrics.locate_span`, and `metrics` only reads the located items.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GoldEvidence:
    """One gold evidence item, located in the corpus.

    A MultiHop-RAG fact, a HotpotQA / 2Wiki supporting sentence, or a MuSiQue supporting paragraph.
    `char_start:char_end` is where `text` sits in document `doc_id` (None when it cannot be located).
    `key_start:key_end`, for a MuSiQue paragraph, is the sentence of it holding its sub-question's answer
    (None elsewhere, or when the answer is not written in the paragraph): reading that sentence finds the
    paragraph, as reading half of it does (evals.metrics.evidence_found).
    """

    doc_id: str
    title: str
    text: str
    char_start: int | None
    char_end: int | None
    key_start: int | None = None
    key_end: int | None = None
