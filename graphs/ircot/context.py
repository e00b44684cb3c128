"""IR-CoT's parameters: its LangGraph `context_schema`, each field with the description Studio shows."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import (
    ChainOfThoughtContext,
    ChainReader,
    RetrievalMode,
    parameter,
)


@dataclass(kw_only=True)
class IRCoTContext(ChainOfThoughtContext):
    """IR-CoT's parameters, with the defaults of the original code (StonyBrookNLP/ircot) and seed 004 §2.3.

    The 350-word cut and the 600-word drop are the original's rules for Wikipedia paragraphs; with the
    default 256-token chunks no chunk reaches either, so they matter only for indexes built with larger
    chunks.
    """

    top_k: int = parameter(
        6,
        "Paragraphs retrieved per step: for the question, then for each chain-of-thought sentence (the "
        "original searched 2-8 and defaults to 6; seed 004's best run used 10).",
        minimum=1,
        maximum=100,
    )
    retrieval_mode: RetrievalMode = parameter(
        "bm25",
        "How paragraphs are searched: bm25 (the original's retriever, default), dense (Chroma), or hybrid "
        "(reciprocal-rank fusion of both).",
    )
    max_iterations: int = parameter(
        8,
        "Cap on reasoning steps (chain-of-thought sentences, at least 1) before the reader answers.",
        minimum=1,
        maximum=20,
    )
    paragraph_budget: int = parameter(
        15,
        "Most paragraphs kept: the first ones found, in the order found (each round's best first); "
        "once the budget is full, later rounds add none.",
        minimum=1,
        maximum=100,
    )
    reader: ChainReader = parameter(
        "direct",
        "How the final answer is read from the kept paragraphs: direct (a short answer, as NaiveRAG "
        'reads) or cot (a chain of thought, the answer taken after "answer is"; it offers no "cannot '
        'answer" phrase, so use direct with unanswerable).',
    )
    long_paragraph_words: int = parameter(
        600,
        "A retrieved paragraph of more words than this is dropped, as the original does.",
        minimum=1,
        maximum=10000,
    )
