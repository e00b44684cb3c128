"""A retrieved passage as every layer above the stores sees it: prompts format it, nodes gather it, the
evaluation scores it. It lives here, beside the spans it is made from, so prompts and evals can read it
without importing the steps that produce it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import NotRequired

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from stores.documents import Scalar, Span

_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")


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
    about: NotRequired[str]
    """The passage's document metadata as one line (`about_line`): its source and date on MultiHop-RAG.
    Absent when the index shows none, so passages of corpora without metadata are as they always were."""
    sentence: NotRequired[bool]
    """True for a single sentence (ChainRAG's sentence graph): a reader is shown the sentences of one
    document together under one heading (`prompts.passages.format_passages`). Absent for chunks."""


def evidence_from(span: Span, score: float, hop: int, about: str = "") -> Evidence:
    """Evidence for a retrieved chunk or sentence, keeping its corpus ids and character span, and its
    document's metadata line when there is one."""
    item = Evidence(
        id=span.id,
        doc_id=span.doc_id,
        title=span.title,
        text=span.text,
        score=round(float(score), 6),
        char_start=span.char_start,
        char_end=span.char_end,
        hop=hop,
    )
    if about:
        item["about"] = about
    return item


def about_line(metadata: Mapping[str, Scalar], fields: Sequence[str]) -> str:
    """The `fields` a document has, in that order, as one line: "source: TechCrunch · published_at:
    October 7, 2023 (2023-10-07)". A date is written as questions write it and as ISO, so a question
    naming "October 7, 2023" and one naming 2023-10-07 both find it in the indexed text."""
    return " · ".join(
        f"{name}: {_shown(metadata[name])}" for name in fields if metadata.get(name) not in (None, "")
    )


def passage_text(item: Evidence) -> str:
    """What a reranker scores of a passage: its metadata line, then its text (as the reader sees it)."""
    about = item.get("about", "")
    return f"{about}\n{item['text']}" if about else item["text"]


def _shown(value: Scalar) -> str:
    match = _ISO_DAY.match(str(value).strip())
    if not match:
        return str(value)
    try:
        day = date(*(int(part) for part in match.groups()))
    except ValueError:
        return str(value)
    return f"{day:%B} {day.day}, {day.year} ({day.isoformat()})"
